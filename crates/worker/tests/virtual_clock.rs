//! A worker plays an attempt on the virtual clock, as `toolmock run` does:
//! a mock's `delay_ms` is recorded in the evidence but costs no wall time.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed expectation must panic

mod common;

use serde_json::{Value, json};
use sqlx::PgPool;
use std::time::{Duration, Instant};
use toolmock_store::PgStore;
use toolmock_worker::{WorkerConfig, run};

/// The notes fixture with one scripted case of three calls of 30 s each.
fn document() -> Value {
    let mut doc: Value =
        serde_json::from_str(include_str!("../../../fixtures/api/notes-simulation.json")).unwrap();
    doc["attempts"] = json!(1);
    doc["tools"][0]["definitions"]["add"]["variants"]["ok"]["delay_ms"] = json!(30_000);
    doc["cases"] = json!([{
        "name": "slow",
        "driver": {"type": "scripted", "steps": [
            {"tool": "notes", "operation": "add", "arguments": {"text": "a"}},
            {"tool": "notes", "operation": "add", "arguments": {"text": "b"}},
            {"tool": "notes", "operation": "add", "arguments": {"text": "c"}}
        ]},
        "expect": {"final_state": {"exact": {"last": "c"}}}
    }]);
    doc
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_worker_counts_delays_on_the_virtual_clock(pool: PgPool) {
    let (_, ids) = common::queue_simulation(&PgStore::new(pool.clone()), &document()).await;

    let began = Instant::now();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let mut config = WorkerConfig::new("virtual");
    config.poll = Duration::from_millis(20);
    let worker = tokio::spawn(run(PgStore::new(pool.clone()), config, async {
        let _ = stopped.await;
    }));
    loop {
        let outcome: Option<String> =
            sqlx::query_scalar("SELECT outcome FROM attempts WHERE id = $1")
                .bind(ids[0].as_uuid())
                .fetch_one(&pool)
                .await
                .unwrap();
        if let Some(outcome) = outcome {
            assert_eq!(outcome, "passed");
            break;
        }
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "90 s of delays took real time"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = stop.send(());
    let report = worker.await.unwrap().unwrap();
    assert_eq!((report.claimed, report.finished), (1, 1));
    let delays: i64 =
        sqlx::query_scalar("SELECT sum(delay_ms)::bigint FROM evidence WHERE attempt_id = $1")
            .bind(ids[0].as_uuid())
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(delays, 90_000, "the simulated time is kept in the evidence");
    assert!(began.elapsed() < Duration::from_secs(20));
}
