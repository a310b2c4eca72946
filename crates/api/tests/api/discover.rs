//! MCP tools created from and re-read from a real MCP server (the project's
//! fixture server on the official Python SDK, over streamable HTTP):
//! `{"type": "mcp_server", "url"}` and `POST /api/tools/{id}/discover`,
//! with the staleness a changed server schema causes.

use crate::common::*;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use std::net::TcpListener;

/// `POST /api/tools/{id}/discover` with `body`.
async fn discover(app: &axum::Router, bearer: &str, id: &str, body: Value) -> Reply {
    send(
        app,
        Method::POST,
        &format!("/api/tools/{id}/discover"),
        Some(bearer),
        Some(&body),
    )
    .await
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_tool_discovered_from_its_server_and_read_again(pool: PgPool) {
    let server = FixtureServer::start();
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE]);
    let created = send(
        &app,
        Method::POST,
        "/api/tools",
        Some(&bearer),
        Some(&json!({"name": "clinic", "source": {"type": "mcp_server", "url": server.url}})),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.json);
    assert_eq!(created.json["kind"], "mcp");
    assert_eq!(created.json["operations"].as_array().unwrap().len(), 4);
    assert_eq!(
        operation(&created.json, "send_reminder")["status"],
        "needs_output_schema"
    );
    assert_eq!(
        operation(&created.json, "set_priority")["status"],
        "missing"
    );

    // Read again from the kept URL: the same contracts, nothing stale.
    let id = created.json["id"].as_str().unwrap();
    let again = discover(&app, &bearer, id, json!({})).await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.json);
    assert_eq!(again.json["stale"], json!([]));
    assert_eq!(again.json["unlisted"], json!([]));
    assert_eq!(
        operation(&again.json["tool"], "set_priority")["contract_hash"],
        operation(&created.json, "set_priority")["contract_hash"]
    );
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_changed_server_schema_makes_the_mock_stale(pool: PgPool) {
    let server = FixtureServer::start();
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE]);
    // The tool as the server described set_priority before it learned "urgent".
    let older = json!({
        "name": "set_priority",
        "description": "Change the priority of a support case",
        "inputSchema": {"type": "object", "properties": {
            "case_id": {"type": "string"},
            "priority": {"type": "string", "enum": ["low", "normal", "high"]},
            "level": {"type": "integer", "enum": [1, 2, 3]}},
            "required": ["case_id", "priority"]},
        "outputSchema": {"type": "object", "properties": {
            "status": {"const": "updated"},
            "priority": {"type": "string", "enum": ["low", "normal", "high", "urgent"]},
            "escalated": {"type": "boolean"}},
            "required": ["status", "priority"]}
    });
    let created = send(
        &app,
        Method::POST,
        "/api/tools",
        Some(&bearer),
        Some(&json!({"name": "support", "source": {"type": "mcp", "tools": [older]}})),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.json);
    let id = created.json["id"].as_str().unwrap().to_owned();
    let op = operation(&created.json, "set_priority").clone();
    let saved = send(
        &app,
        Method::POST,
        &format!("/api/tools/{id}/testing"),
        Some(&bearer),
        Some(&json!({"action": "save", "operation_id": op["id"], "contract_hash": op["contract_hash"],
            "definition": {"schema_version": 1, "default_variant": "ok",
                "variants": {"ok": {"result": {"status": "updated", "priority": {"$input": "priority"}}}},
                "examples": [{"variant": "ok", "input": {"case_id": "C-1", "priority": "high"},
                              "expected": {"status": "updated", "priority": "high"}}]}})),
    )
    .await;
    assert_eq!(saved.status, StatusCode::CREATED, "{}", saved.json);

    // Created from a tools list, the tool keeps no server: say which.
    let no_server = discover(&app, &bearer, &id, json!({})).await;
    assert_eq!(
        (no_server.status, no_server.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "no_mcp_server")
    );

    // The server now lists "urgent": the saved mock is stale, with the diff.
    let read = discover(&app, &bearer, &id, json!({"url": server.url})).await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.json);
    let stale = read.json["stale"].as_array().unwrap();
    assert_eq!(stale.len(), 1, "{}", read.json);
    assert_eq!(stale[0]["name"], "set_priority");
    assert!(
        stale[0]["diff"].to_string().contains("urgent"),
        "{}",
        stale[0]["diff"]
    );
    assert_eq!(
        operation(&read.json["tool"], "set_priority")["status"],
        "stale"
    );
    // The tools the server added are new operations of the tool.
    assert_eq!(read.json["tool"]["operations"].as_array().unwrap().len(), 4);
    let testing = send(
        &app,
        Method::GET,
        &format!("/api/tools/{id}/testing"),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(testing.status, StatusCode::OK);
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn an_unreachable_server_is_a_bad_gateway_in_plain_words(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE]);
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let reply = send(
        &app,
        Method::POST,
        "/api/tools",
        Some(&bearer),
        Some(&json!({"name": "gone", "source": {"type": "mcp_server", "url": format!("http://127.0.0.1:{port}/mcp")}})),
    )
    .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::BAD_GATEWAY, "discovery_failed"),
        "{}",
        reply.json
    );
    let message = reply.json["error"]["message"].as_str().unwrap();
    assert!(!message.contains("Worker"), "{message}");
    let reply = send(
        &app,
        Method::POST,
        "/api/tools",
        Some(&bearer),
        Some(&json!({"name": "ftp", "source": {"type": "mcp_server", "url": "ftp://example.com"}})),
    )
    .await;
    assert_eq!(
        (
            reply.status,
            reply.json["error"]["details"]["problems"][0]["path"].as_str()
        ),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("/source/url")),
        "{}",
        reply.json
    );
}
