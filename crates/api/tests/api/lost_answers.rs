//! Issue 32, items 1 and 2, over a real port and a real client: on both
//! surfaces of the API that answer tool calls — `tool-calls` and `mcp` — a
//! client that hangs up while the call's delay runs gives the harness error
//! `answer_lost` and the attempt cannot pass; a call whose delay is the
//! longest a definition may ask for (`delay_ms: 30000`) is answered under
//! the default configuration, on `mcp` as on `tool-calls`.

use crate::common::*;
use crate::hardening::{finish, start_slow, wait_for_harness_error};
use axum::http::StatusCode;
use serde_json::{Value, json};
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolmock_api::{ApiConfig, ServeLimits};

/// The app served on a real port, as `toolmock-api` serves it.
async fn listen(app: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(toolmock_api::serve_with(
        listener,
        app,
        std::future::pending(),
        ServeLimits::default(),
    ));
    address
}

/// The tool call `wait` of `attempt` as the body of `surface` (`tool-calls`
/// or `mcp`).
fn call_body(surface: &str) -> Value {
    if surface == "mcp" {
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": "wait", "arguments": {}}})
    } else {
        json!({"tool": "slow", "operation": "wait", "arguments": {}})
    }
}

/// One POST over its own TCP connection. With `hang_up`, the client closes
/// the connection that long after sending (it never reads the answer) and
/// `None` is returned; otherwise the status and body.
async fn post(
    address: SocketAddr,
    path: &str,
    bearer: &str,
    body: &Value,
    hang_up: Option<Duration>,
) -> Option<(u16, Value)> {
    let mut socket = tokio::net::TcpStream::connect(address).await.unwrap();
    let body = body.to_string();
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer {bearer}\r\n\
         content-type: application/json\r\naccept: application/json, text/event-stream\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    if let Some(after) = hang_up {
        tokio::time::sleep(after).await;
        drop(socket);
        return None;
    }
    let mut answer = Vec::new();
    socket.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let status: u16 = answer[9..12].parse().unwrap();
    let (_, body) = answer.split_once("\r\n\r\n").unwrap();
    Some((status, serde_json::from_str(body).unwrap_or(Value::Null)))
}

async fn hang_up_mid_delay(pool: &PgPool, surface: &str) {
    let app = app(pool);
    let address = listen(app.clone()).await;
    let (attempt, capability) = start_slow(&app, 3000).await;
    let path = format!("/api/attempts/{attempt}/{surface}");
    let body = call_body(surface);
    let hung = post(
        address,
        &path,
        &capability,
        &body,
        Some(Duration::from_millis(700)),
    )
    .await;
    assert!(hung.is_none());
    let codes = wait_for_harness_error(&app, &attempt, "answer_lost").await;
    assert_eq!(codes, ["answer_lost"], "{surface}");
    let finished = finish(&app, &attempt, &capability).await;
    assert_eq!(
        finished.json["outcome"], "harness_error",
        "{surface}: {}",
        finished.json
    );
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn an_mcp_client_hanging_up_mid_delay_loses_the_answer_and_the_attempt(pool: PgPool) {
    hang_up_mid_delay(&pool, "mcp").await;
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_tool_calls_client_hanging_up_mid_delay_loses_the_answer_and_the_attempt(pool: PgPool) {
    hang_up_mid_delay(&pool, "tool-calls").await;
}

/// `delay_ms: 30000` under the default configuration (whose request
/// time-out is 30 s): both surfaces answer, and both attempts pass.
///
/// The test makes its own pool: the harness's closes a connection idle for
/// a second, so after the 30-s wait the finishes opened new ones, and one
/// of them outlived the pool's close (PostgreSQL's connection log) and kept
/// sqlx from dropping the test's database.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_delay_at_the_documented_maximum_is_answered_on_both_surfaces(
    pool_options: PgPoolOptions,
    connect_options: PgConnectOptions,
) {
    let pool = pool_options
        .idle_timeout(None)
        .connect_with(connect_options)
        .await
        .unwrap();
    assert_eq!(toolmock_api::MAX_DEFINITION_DELAY, Duration::from_secs(30));
    let app = app_with(&pool, ApiConfig::default());
    let address = listen(app.clone()).await;
    let delay = u64::try_from(toolmock_api::MAX_DEFINITION_DELAY.as_millis()).unwrap();
    let mut calls = Vec::new();
    for surface in ["mcp", "tool-calls"] {
        let (attempt, capability) = start_slow(&app, delay).await;
        let path = format!("/api/attempts/{attempt}/{surface}");
        let bearer = capability.clone();
        let call =
            tokio::spawn(
                async move { post(address, &path, &bearer, &call_body(surface), None).await },
            );
        calls.push((surface, attempt, capability, call));
    }
    for (surface, attempt, capability, call) in calls {
        let (status, body) = call.await.unwrap().unwrap();
        assert_eq!(status, StatusCode::OK.as_u16(), "{surface}: {body}");
        let result = if surface == "mcp" {
            body["result"]["structuredContent"].clone()
        } else {
            body.clone()
        };
        assert_eq!(result, json!({"ok": true}), "{surface}: {body}");
        let finished = finish(&app, &attempt, &capability).await;
        assert_eq!(
            finished.json["outcome"], "passed",
            "{surface}: {}",
            finished.json
        );
    }
    // The server's task outlives the test and would keep the pool's
    // connections open.
    pool.close().await;
}
