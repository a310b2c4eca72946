//! Agents, simulation starts through the API (refusals listing every problem),
//! and an attempt's recorded evidence read back.

use crate::common::*;
use axum::http::{Method, StatusCode};
use serde_json::json;
use sqlx::PgPool;

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn start_call_and_read_the_attempt(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE, RUN]);
    let tool = create_calendar(&app, &bearer).await;
    let agent = send(
        &app,
        Method::POST,
        "/api/agents",
        Some(&bearer),
        Some(&json!({"name": "receptionist", "tools": [{"type": "library", "tool": tool.id}]})),
    )
    .await;
    assert_eq!(agent.status, StatusCode::CREATED, "{}", agent.json);
    let agent_id = agent.json["id"].as_str().unwrap().to_owned();
    let read = send(
        &app,
        Method::GET,
        &format!("/api/agents/{agent_id}"),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(read.json, agent.json);

    // Nothing saved yet: the start is refused, listing every operation.
    let start =
        json!({"agent": agent_id, "test_cases": [{"name": "books"}], "attempts_per_case": 2});
    let refused = send(
        &app,
        Method::POST,
        "/api/simulations",
        Some(&bearer),
        Some(&start),
    )
    .await;
    assert_eq!(
        (refused.status, refused.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "start_refused")
    );
    let problems = refused.json["error"]["details"]["problems"]
        .as_array()
        .unwrap();
    let statuses: Vec<_> = problems
        .iter()
        .map(|p| {
            (
                p["operation"].as_str().unwrap(),
                p["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(
        statuses.contains(&("book", "missing"))
            && statuses.contains(&("cancel", "needs_output_schema")),
        "{statuses:?}"
    );

    // With book saved and cancel knowingly unpinned, it starts.
    assert_eq!(
        save_booking(&app, &bearer, &tool).await.status,
        StatusCode::CREATED
    );
    let mut start = start;
    start["allow_incomplete"] = json!(true);
    let started = send(
        &app,
        Method::POST,
        "/api/simulations",
        Some(&bearer),
        Some(&start),
    )
    .await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.json);
    assert_eq!(started.json["attempts"].as_array().unwrap().len(), 2);
    let pins = started.json["pins"].as_array().unwrap();
    let book = pins.iter().find(|p| p["operation"] == "book").unwrap();
    assert_eq!(
        (book["kind"].as_str(), book["revision"].as_u64()),
        (Some("library"), Some(1))
    );
    let cancel = pins.iter().find(|p| p["operation"] == "cancel").unwrap();
    assert_eq!(cancel["kind"], "unpinned");

    let attempt = &started.json["attempts"][0];
    let (id, cap) = (
        attempt["id"].as_str().unwrap(),
        attempt["capability"].as_str().unwrap(),
    );
    let calls = format!("/api/attempts/{id}/tool-calls");
    let ok = send(
        &app,
        Method::POST,
        &calls,
        Some(cap),
        Some(&json!({"tool": "calendar", "operation": "book", "arguments": {"day": "2026-01-02"}})),
    )
    .await;
    assert_eq!(ok.json, json!({"reference": "TEST-742"}));
    let bad = send(
        &app,
        Method::POST,
        &calls,
        Some(cap),
        Some(&json!({"tool": "calendar", "operation": "book", "arguments": {}})),
    )
    .await;
    assert_eq!(bad.json["error"]["class"], "tool_input_error");
    let unpinned = send(
        &app,
        Method::POST,
        &calls,
        Some(cap),
        Some(&json!({"tool": "calendar", "operation": "cancel", "arguments": {}})),
    )
    .await;
    assert_eq!(
        (unpinned.status, unpinned.json["error"]["code"].as_str()),
        (StatusCode::FAILED_DEPENDENCY, Some("missing_definition"))
    );

    let read = send(
        &app,
        Method::GET,
        &format!("/api/attempts/{id}"),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.json);
    assert_eq!(read.json["has_harness_error"], true);
    let evidence = read.json["evidence"].as_array().unwrap();
    assert_eq!(evidence.len(), 1);
    assert_eq!(evidence[0]["result"], json!({"reference": "TEST-742"}));
    assert_eq!(
        evidence[0]["state_before"],
        json!({"reference": "TEST-742"})
    );
    assert_eq!(evidence[0]["pin"]["revision"], 1);
    assert_eq!(
        read.json["tool_input_errors"][0]["code"],
        "invalid_arguments"
    );
    assert_eq!(read.json["harness_errors"][0]["code"], "missing_definition");
    assert_eq!(read.json["state"]["version"], 1);
    // The capability is never shown again.
    assert!(!read.json.to_string().contains(cap));
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn agents_name_only_their_tenants_tools(pool: PgPool) {
    let app = app(&pool);
    let a = token("acme", &[MANAGE, RUN]);
    let tool = create_calendar(&app, &a).await;
    let b = token("globex", &[RUN]);
    let reply = send(
        &app,
        Method::POST,
        "/api/agents",
        Some(&b),
        Some(&json!({"name": "x",
        "tools": [{"type": "library", "tool": tool.id}, {"type": "telepathy"}],
        "workflows": [{"name": "w"}]})),
    )
    .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_agent")
    );
    let paths: Vec<_> = reply.json["error"]["details"]["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(paths, vec!["/tools/1", "/workflows/0", "/tools/0/tool"]);
    let reply = send(
        &app,
        Method::POST,
        "/api/simulations",
        Some(&b),
        Some(&json!({"agent": tool.id, "test_cases": []})),
    )
    .await;
    assert!(
        matches!(
            reply.status,
            StatusCode::NOT_FOUND | StatusCode::UNPROCESSABLE_ENTITY
        ),
        "{}",
        reply.json
    );
}
