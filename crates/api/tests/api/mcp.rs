//! `/api/attempts/{id}/mcp`: an attempt's tools over MCP, played by the
//! official Python SDK client (`fixtures/mcp/clients/python_api_client.py`,
//! installed by scripts/install-mcp-servers.sh) against the API served on a
//! real port, authenticated by the attempt's capability.

use crate::common::*;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python_client(url: &str, capability: &str, refused: bool) -> Value {
    let python = root().join(".cache/mcp-venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/install-mcp-servers.sh",
        python.display()
    );
    let mut command = std::process::Command::new(python);
    command
        .arg(root().join("fixtures/mcp/clients/python_api_client.py"))
        .args([url, capability]);
    if refused {
        command.arg("--refused");
    }
    let out = command.output().expect("the client runs");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the client prints JSON")
}

/// What the evidence of a call says, without ids and times.
fn calls(attempt: &Value) -> Value {
    let evidence: Vec<Value> = attempt["evidence"]
        .as_array()
        .expect("evidence")
        .iter()
        .map(|e| {
            json!({"tool": e["tool"], "operation": e["operation"], "arguments": e["arguments"],
                   "result": e["result"], "variant": e["variant"], "pin": e["pin"],
                   "state_before": e["state_before"], "state_after": e["state_after"]})
        })
        .collect();
    let errors: Vec<Value> = attempt["tool_input_errors"]
        .as_array()
        .expect("tool input errors")
        .iter()
        .map(|e| json!({"tool": e["tool"], "operation": e["operation"], "code": e["code"], "path": e["path"], "arguments": e["arguments"]}))
        .collect();
    json!({"evidence": evidence, "tool_input_errors": errors})
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn the_python_sdk_plays_an_attempt_over_the_api_mcp_endpoint(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE, RUN]);
    let tool = create_calendar(&app, &bearer).await;
    assert_eq!(
        save_booking(&app, &bearer, &tool).await.status,
        StatusCode::CREATED
    );
    let started = start(&app, &bearer, &calendar_simulation(&tool, 2)).await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.json);
    let attempt = |i: usize| {
        let a = &started.json["attempts"][i];
        (
            a["id"].as_str().unwrap().to_owned(),
            a["capability"].as_str().unwrap().to_owned(),
        )
    };
    let ((over_mcp, mcp_cap), (over_calls, calls_cap)) = (attempt(0), attempt(1));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let served = app.clone();
    tokio::spawn(async move { axum::serve(listener, served).await.unwrap() });
    let url = |id: &str| format!("http://{addr}/api/attempts/{id}/mcp");

    // The SDK client plays attempt 0 through MCP.
    let mcp_url = url(&over_mcp);
    let cap = mcp_cap.clone();
    let report = tokio::task::spawn_blocking(move || python_client(&mcp_url, &cap, false))
        .await
        .unwrap();
    let names: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["book", "cancel"]);
    let book = &report["tools"][0];
    assert_eq!(
        book["inputSchema"],
        calendar_tool("calendar")["source"]["operations"][0]["input_schema"]
    );
    assert_eq!(
        report["first"]["structuredContent"],
        json!({"reference": "TEST-742"})
    );
    assert_eq!(report["malformed"]["isError"], true);
    assert_eq!(
        report["second"]["structuredContent"],
        json!({"reference": "TEST-742"})
    );

    // The same calls through the tool-call endpoint on attempt 1.
    let endpoint = format!("/api/attempts/{over_calls}/tool-calls");
    for arguments in [
        json!({"day": "2026-01-02"}),
        json!({}),
        json!({"day": "2026-01-03"}),
    ] {
        send(
            &app,
            Method::POST,
            &endpoint,
            Some(&calls_cap),
            Some(&json!({"tool": "calendar", "operation": "book", "arguments": arguments})),
        )
        .await;
    }
    let read = |id: String| {
        let (app, bearer) = (app.clone(), bearer.clone());
        async move {
            let reply = send(
                &app,
                Method::GET,
                &format!("/api/attempts/{id}"),
                Some(&bearer),
                None,
            )
            .await;
            assert_eq!(reply.status, StatusCode::OK, "{}", reply.json);
            reply.json
        }
    };
    let (a, b) = (read(over_mcp.clone()).await, read(over_calls.clone()).await);
    assert_eq!(a["evidence"].as_array().unwrap().len(), 2);
    assert_eq!(a["tool_input_errors"].as_array().unwrap().len(), 1);
    assert_eq!(calls(&a), calls(&b));

    // Another attempt's capability is refused at this attempt's URL.
    let (foreign_url, cap) = (url(&over_mcp), calls_cap.clone());
    let refused = tokio::task::spawn_blocking(move || python_client(&foreign_url, &cap, true))
        .await
        .unwrap();
    assert_eq!(refused["refused"], true, "{refused}");
    // (The SDK reports an HTTP refusal without its status; the endpoint's
    // answer to the same request, read directly.)
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let mcp_path = format!("/api/attempts/{over_mcp}/mcp");
    let direct = send(&app, Method::POST, &mcp_path, Some(&calls_cap), Some(&list)).await;
    assert_eq!(
        (direct.status, direct.code()),
        (StatusCode::FORBIDDEN, "foreign_capability")
    );
    // A finished attempt's capability is refused.
    let finished = send(
        &app,
        Method::POST,
        &format!("/api/attempts/{over_mcp}/finish"),
        Some(&mcp_cap),
        None,
    )
    .await;
    assert_eq!(finished.status, StatusCode::OK, "{}", finished.json);
    let (late_url, cap) = (url(&over_mcp), mcp_cap.clone());
    let late = tokio::task::spawn_blocking(move || python_client(&late_url, &cap, true))
        .await
        .unwrap();
    assert_eq!(late["refused"], true, "{late}");
    let direct = send(&app, Method::POST, &mcp_path, Some(&mcp_cap), Some(&list)).await;
    assert_eq!(
        (direct.status, direct.code()),
        (StatusCode::UNAUTHORIZED, "invalid_capability")
    );
}
