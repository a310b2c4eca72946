//! Issue 32, item 11: one clock for leases. A worker whose own clock runs
//! five minutes ahead of PostgreSQL's, or five minutes behind, decides
//! whether the attempts it holds are live on PostgreSQL's clock alone (the
//! clock their leases are granted, renewed and reaped on): none of its
//! live attempts is ended `lease_expired`, and none passes after its lease.

use crate::agents::wait_finished;
use crate::common::*;
use axum::http::StatusCode;
use chrono::TimeDelta;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::time::Duration;
use uuid::Uuid;

/// A scripted case of two calls of `notes/add` (the second after
/// `delay_ms`, slept for real when `real_delays`), run `attempts` times.
fn document(attempts: u32, delay_ms: u64) -> Value {
    json!({
        "simulation_version": 1,
        "name": "clocks",
        "attempts": attempts,
        "real_delays": delay_ms > 0,
        "tools": [{
            "name": "notes", "from": "custom",
            "operations": [{"name": "add", "input_schema": {"type": "object"},
                            "output_schema": {"type": "object", "required": ["id"]}}],
            "definitions": {"add": {"schema_version": 1, "default_variant": "ok",
                "variants": {"ok": {"result": {"id": "n-1"}, "delay_ms": delay_ms}},
                "examples": [{"variant": "ok", "input": {}, "expected": {"id": "n-1"}}]}}
        }],
        "agent": {"name": "scribe", "tools": ["notes"]},
        "cases": [{"name": "adds", "driver": {"type": "scripted", "steps": [
            {"tool": "notes", "operation": "add", "arguments": {}},
            {"tool": "notes", "operation": "add", "arguments": {}}]}}]
    })
}

/// Starts `doc` and lets a worker whose clock is off by `offset` play it;
/// the attempts' outcomes and harness-error codes. `during` runs while the
/// worker plays.
async fn played_with_offset<F, Fut>(
    pool: &PgPool,
    doc: &Value,
    offset: TimeDelta,
    during: F,
) -> Vec<(String, Vec<String>)>
where
    F: FnOnce(Uuid) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let app = app(pool);
    let started = start(&app, &token("acme", &[RUN]), doc).await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.json);
    let simulation = Uuid::parse_str(started.json["id"].as_str().unwrap()).unwrap();
    let mut config = toolmock_worker::WorkerConfig::new(format!("skewed {offset}"));
    config.poll = Duration::from_millis(50);
    config.lease = Duration::from_secs(3);
    config.heartbeat = Duration::from_secs(1);
    config.reap_every = Duration::from_millis(200);
    config.clock_offset = offset;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = tokio::spawn(toolmock_worker::run_with(
        toolmock_store::PgStore::new(pool.clone()),
        config,
        toolmock_worker::Agents::none(),
        async {
            let _ = stopped.await;
        },
    ));
    during(simulation).await;
    wait_finished(pool, simulation, Duration::from_secs(60)).await;
    let _ = stop.send(());
    worker.await.unwrap().unwrap();
    let outcomes: Vec<(Uuid, String)> =
        sqlx::query_as("SELECT id, outcome FROM attempts WHERE simulation_id = $1 ORDER BY number")
            .bind(simulation)
            .fetch_all(pool)
            .await
            .unwrap();
    let mut played = Vec::new();
    for (id, outcome) in outcomes {
        let codes: Vec<String> =
            sqlx::query_scalar("SELECT code FROM harness_errors WHERE attempt_id = $1")
                .bind(id)
                .fetch_all(pool)
                .await
                .unwrap();
        played.push((outcome, codes));
    }
    played
}

/// Ahead (the case that failed: every call of a live attempt was refused
/// `lease_expired`) and behind: each attempt passes.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_worker_whose_clock_is_off_never_ends_a_live_attempt(pool: PgPool) {
    for minutes in [5, -5] {
        let played = played_with_offset(
            &pool,
            &document(3, 0),
            TimeDelta::minutes(minutes),
            |_| async {},
        )
        .await;
        assert_eq!(played.len(), 3);
        for (outcome, codes) in played {
            assert_eq!(outcome, "passed", "clock {minutes:+} min: {codes:?}");
        }
    }
}

/// Behind: while its attempt sleeps a 2 s delay, the lease is cut short in
/// PostgreSQL (as a reaper of a worker that lost it would see it). By the
/// worker's clock it still has five minutes; by PostgreSQL's it is over:
/// the attempt does not pass.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_worker_whose_clock_is_behind_never_passes_an_attempt_after_its_lease(pool: PgPool) {
    let cut = pool.clone();
    let played = played_with_offset(
        &pool,
        &document(1, 2000),
        TimeDelta::minutes(-5),
        |simulation| async move {
            // Once the attempt runs, end its lease by PostgreSQL's clock.
            loop {
                let cut_short = sqlx::query(
                    "UPDATE attempts SET lease_expires_at = clock_timestamp() - interval '1 second' \
                     WHERE simulation_id = $1 AND status = 'running'",
                )
                .bind(simulation)
                .execute(&cut)
                .await
                .unwrap();
                if cut_short.rows_affected() > 0 {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        },
    )
    .await;
    let (outcome, codes) = &played[0];
    assert_eq!(outcome, "harness_error", "{codes:?}");
    assert!(codes.iter().any(|c| c == "lease_expired"), "{codes:?}");
}
