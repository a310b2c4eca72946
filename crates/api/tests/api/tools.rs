//! Creating tools from a platform manifest, MCP tools and custom contracts.

use crate::common::*;
use axum::http::{Method, StatusCode};
use serde_json::json;
use sqlx::PgPool;

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn tools_from_a_manifest_and_from_mcp(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE]);
    let manifest = json!({"manifest_version": 1, "tool": "salesforce", "operations": [{
        "name": "create_record", "required": ["object_type"],
        "parameters": [{"name": "object_type", "type": "string", "options": [{"value": "Case", "label": "Case"}]},
                       {"name": "fields", "type": "sfdc_field_mapping", "required": true}],
        "output": {"envelope": "salesforce", "status": 201, "data_schema": {"type": "object"}}}]});
    let reply = send(
        &app,
        Method::POST,
        "/api/tools",
        Some(&bearer),
        Some(&json!({
        "name": "salesforce", "source": {"type": "platform", "manifest": manifest}})),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.json);
    assert_eq!(reply.json["kind"], "platform");
    assert_eq!(
        reply.json["operations"][0]["name"],
        "salesforce__create_record"
    );
    assert_eq!(reply.json["operations"][0]["status"], "missing");

    // MCP: a tool without outputSchema takes the tool's fallback.
    let reply = send(&app, Method::POST, "/api/tools", Some(&bearer), Some(&json!({
        "name": "clinic", "output_schema": {"type": "object"},
        "source": {"type": "mcp", "tools": [
            {"name": "lookup_patient", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object", "required": ["id"]}},
            {"name": "ping", "inputSchema": {"type": "object"}}]}}))).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.json);
    let id = reply.json["id"].as_str().unwrap().to_owned();
    let ops = reply.json["operations"].as_array().unwrap();
    assert!(
        ops.iter()
            .all(|o| o["status"] == "missing" && o["source"] == "mcp"),
        "{ops:?}"
    );
    let read = send(
        &app,
        Method::GET,
        &format!("/api/tools/{id}"),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(read.json, reply.json);

    // A duplicate MCP tool name is refused with its pointer.
    let reply = send(&app, Method::POST, "/api/tools", Some(&bearer), Some(&json!({
        "name": "dupes", "source": {"type": "mcp", "tools": [
            {"name": "a", "inputSchema": {"type": "object"}}, {"name": "a", "inputSchema": {"type": "object"}}]}}))).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_mcp_tools")
    );
    assert_eq!(
        reply.json["error"]["details"]["problems"][0]["path"],
        "/source/tools/1/name"
    );

    // Updating from a source of another kind is refused.
    let reply = send(
        &app,
        Method::PUT,
        &format!("/api/tools/{id}"),
        Some(&bearer),
        Some(&json!({"source": calendar_tool("x")["source"]})),
    )
    .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "kind_mismatch")
    );
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn custom_operations_are_checked_together(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE]);
    let reply = send(&app, Method::POST, "/api/tools", Some(&bearer), Some(&json!({
        "name": "bad", "source": {"type": "custom", "operations": [
            {"name": "a", "input_schema": 3, "output_schema": {"type": "object"}},
            {"name": "a", "input_schema": {"type": "object"}, "output_schema": {"const": 9007199254740993u64}},
            {"name": "has space", "input_schema": {"type": "object"}}]}}))).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_operations")
    );
    let codes: Vec<&str> = reply
        .problems()
        .iter()
        .map(|p| p["code"].as_str().unwrap())
        .collect();
    for code in [
        "invalid_schema",
        "duplicate_operation",
        "inexact_number",
        "invalid_name",
    ] {
        assert!(codes.contains(&code), "{code} missing from {codes:?}");
    }
    let tools: i64 = sqlx::query_scalar("SELECT count(*) FROM tools")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(tools, 0);
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn tools_are_listed_a_page_at_a_time_with_their_status(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE]);
    let calendar = create_calendar(&app, &bearer).await;
    assert_eq!(
        save_booking(&app, &bearer, &calendar).await.status,
        StatusCode::CREATED
    );
    for name in ["billing", "directory"] {
        let reply = send(
            &app,
            Method::POST,
            "/api/tools",
            Some(&bearer),
            Some(&calendar_tool(name)),
        )
        .await;
        assert_eq!(reply.status, StatusCode::CREATED);
    }
    let first = send(&app, Method::GET, "/api/tools?limit=2", Some(&bearer), None).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.json);
    let names: Vec<_> = first.json["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert_eq!(names, vec![json!("billing"), json!("calendar")]);
    assert_eq!(first.json["next"], "calendar");
    let calendar_row = &first.json["tools"][1];
    assert_eq!(
        (
            calendar_row["current"].as_u64(),
            calendar_row["missing"].as_u64(),
            calendar_row["needs_output_schema"].as_u64(),
            calendar_row["stale"].as_u64()
        ),
        (Some(1), Some(0), Some(1), Some(0))
    );
    let second = send(
        &app,
        Method::GET,
        "/api/tools?limit=2&after=calendar",
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(second.json["tools"][0]["name"], "directory");
    assert!(second.json["next"].is_null());
    for bad in [
        "/api/tools?limit=0",
        "/api/tools?limit=201",
        "/api/tools?limit=many",
        "/api/tools?colour=red",
        // Found by schemathesis: U+0000 in a query once reached PostgreSQL (500).
        "/api/tools?after=a%00b",
    ] {
        let reply = send(&app, Method::GET, bad, Some(&bearer), None).await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::BAD_REQUEST, "invalid_query"),
            "{bad}"
        );
    }
    // Another tenant's list is its own.
    let other = send(
        &app,
        Method::GET,
        "/api/tools",
        Some(&token("globex", &[MANAGE])),
        None,
    )
    .await;
    assert_eq!(other.json["tools"], json!([]));
    // A revision history under another tool's id is absent.
    let elsewhere = send(
        &app,
        Method::GET,
        &format!(
            "/api/tools/{}/operations/{}/revisions",
            calendar.book, calendar.book
        ),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(elsewhere.status, StatusCode::NOT_FOUND);
}
