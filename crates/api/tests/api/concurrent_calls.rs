//! Calls of one attempt served by two API processes at once (two states,
//! each with its own pool, its own dispatcher and its own copies of the
//! attempt's state row, over one database), half through `tool-calls` and
//! half as MCP `tools/call`: 64 clients × 50 calls stay linearizable —
//! dense versions, each call's state before its predecessor's state after
//! — and the same run with the version check of the one-statement write
//! turned off fails, which shows the test can see what that check keeps
//! out.

use crate::common::*;
use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use serde_json::{Map, Value, json};
use sqlx::PgPool;
use std::collections::HashSet;
use toolmock_api::{ApiConfig, AppState, AuthConfig, router};
use toolmock_runtime::backend::{EvidenceSink, FixtureStore};
use toolmock_runtime::model::{AttemptId, TenantId};
use toolmock_runtime::testkit::{Rig, ledger_simulation};
use toolmock_store::PgStore;
use toolmock_store::testkit::app_pool;

const CLIENTS: usize = 64;
const CALLS: usize = 50;

/// An API process: its own pool and store over the test's database.
async fn process(pool: &PgPool, checked: bool) -> Router {
    let store = PgStore::new(app_pool(pool).await);
    let store = if checked {
        store
    } else {
        store.without_version_check()
    };
    let auth = AuthConfig::hs256(SECRET).unwrap();
    router(AppState::over_store(store, auth, ApiConfig::default()))
}

/// One `append` of `id`, through `tool-calls` or as an MCP `tools/call`;
/// the result, or what went wrong.
async fn append(
    app: &Router,
    attempt: AttemptId,
    cap: &str,
    id: &str,
    mcp: bool,
) -> Result<Value, String> {
    let arguments = json!({ "id": id });
    let (path, body) = if mcp {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": "append", "arguments": arguments}});
        (format!("/api/attempts/{attempt}/mcp"), call)
    } else {
        let call = json!({"tool": "ledger", "operation": "append", "arguments": arguments});
        (format!("/api/attempts/{attempt}/tool-calls"), call)
    };
    let request = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header(header::AUTHORIZATION, format!("Bearer {cap}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header(header::HOST, "localhost")
        .body(Body::from(serde_json::to_vec(&body).unwrap()))
        .unwrap();
    let reply = raw(app, request).await;
    if reply.status != StatusCode::OK {
        return Err(format!("{id}: {} {}", reply.status, reply.json));
    }
    if !mcp {
        return Ok(reply.json);
    }
    match &reply.json["result"] {
        result if result["isError"] != json!(true) && result["structuredContent"].is_object() => {
            Ok(result["structuredContent"].clone())
        }
        _ => Err(format!("{id}: {}", reply.json)),
    }
}

/// 64 clients × 50 calls on one attempt, the clients spread over `apps`
/// and over both surfaces; then whether the attempt's records are those of
/// the calls one after another.
async fn run(pool: &PgPool, apps: [Router; 2]) -> Result<(), String> {
    let rig = Rig::new(PgStore::new(pool.clone()));
    let (tenant, started) = ledger_simulation(&rig, "acme", 1).await;
    let attempt = started.attempts[0].clone();
    let mut clients = Vec::new();
    for client in 0..CLIENTS {
        let app = apps[client % 2].clone();
        let cap = attempt.capability.token().to_owned();
        let mcp = client % 4 >= 2;
        clients.push(tokio::spawn(async move {
            let mut failures = Vec::new();
            for call in 0..CALLS {
                let id = format!("c{client}-{call}");
                match append(&app, attempt.id, &cap, &id, mcp).await {
                    Ok(result) if result["id"] == json!(id) => {}
                    Ok(result) => failures.push(format!("{id}: answered {result}")),
                    Err(failure) => failures.push(failure),
                }
            }
            failures
        }));
    }
    let mut failures = Vec::new();
    for client in clients {
        failures.extend(client.await.unwrap());
    }
    if !failures.is_empty() {
        return Err(format!(
            "{} calls failed, first: {}",
            failures.len(),
            failures[0]
        ));
    }
    linearizable(&rig, tenant, attempt.id).await
}

/// The evidence's versions run 1…3200 with no gap and no repeat, each
/// call's state before is its predecessor's state after (and what it
/// answered), every call is there once, and the row holds the last state.
async fn linearizable(
    rig: &Rig<PgStore>,
    tenant: TenantId,
    attempt: AttemptId,
) -> Result<(), String> {
    let evidence = rig.backend().evidence(tenant, attempt).await.unwrap();
    let total = CLIENTS * CALLS;
    if evidence.len() != total {
        return Err(format!(
            "{} evidence rows for {total} calls",
            evidence.len()
        ));
    }
    let mut ids = HashSet::new();
    let mut previous: Option<&Map<String, Value>> = None;
    for (index, row) in evidence.iter().enumerate() {
        let version = u64::try_from(index + 1).unwrap();
        if (row.version_before, row.version_after) != (version - 1, version) {
            return Err(format!(
                "row {index}: versions {} → {}",
                row.version_before, row.version_after
            ));
        }
        let before_last = &row.state_before["last"];
        let expected = previous.map_or(json!("start"), |after| after["last"].clone());
        if *before_last != expected || row.result["previous"] != *before_last {
            return Err(format!(
                "version {version}: evaluated on {before_last}, answered {}, after {expected}",
                row.result["previous"]
            ));
        }
        if !ids.insert(row.arguments["id"].clone()) {
            return Err(format!("{} recorded twice", row.arguments["id"]));
        }
        previous = Some(&row.state_after);
    }
    let state = rig.backend().state(tenant, attempt).await.unwrap();
    if state.version != u64::try_from(total).unwrap() || Some(&state.state) != previous {
        return Err(format!("the row holds version {}", state.version));
    }
    Ok(())
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn calls_of_one_attempt_through_two_processes_are_linearizable(pool: PgPool) {
    let apps = [process(&pool, true).await, process(&pool, true).await];
    run(&pool, apps).await.unwrap();
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn without_the_version_check_the_same_calls_are_not(pool: PgPool) {
    let apps = [process(&pool, false).await, process(&pool, false).await];
    let failed = run(&pool, apps)
        .await
        .expect_err("the version check is what keeps them in order");
    println!("without the version check: {failed}");
}
