//! The round trips a worker's attempt waits on — its claim, its calls, its
//! judgement and its finish — counted statement by statement through a
//! relay in front of PostgreSQL (`toolmock_store::testkit`), so that they
//! cannot creep back: a scripted attempt of ten calls takes 13 — its
//! claim (which also binds its capability and reads its state row), ten
//! calls of one statement each, one read of what it recorded and its state
//! for the judgement, and the finish, which records the judgement — plus
//! what the worker does once whatever the number of attempts (listening, the
//! simulation's document and pins, the reaper's and the verifications'
//! first sweeps, a claim that finds the queue empty).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed expectation must panic

mod common;

use serde_json::{Value, json};
use sqlx::PgPool;
use std::time::{Duration, Instant};
use toolmock_runtime::model::Capability;
use toolmock_store::PgStore;
use toolmock_store::testkit::counted_app_pool;
use toolmock_worker::{WorkerConfig, run};

const ATTEMPTS: u64 = 20;
const CALLS: usize = 10;
/// Statements per attempt of ten calls.
const PER_ATTEMPT: u64 = 13;
/// Statements the worker makes once, whatever the number of attempts (15
/// measured); one more statement per attempt exceeds it.
const ONCE: u64 = 30;

/// The notes fixture: one scripted case of ten calls, `ATTEMPTS` attempts.
fn document() -> Value {
    let mut doc: Value =
        serde_json::from_str(include_str!("../../../fixtures/api/notes-simulation.json")).unwrap();
    doc["attempts"] = json!(ATTEMPTS);
    let steps: Vec<Value> = (0..CALLS)
        .map(|n| json!({"tool": "notes", "operation": "add", "arguments": {"text": format!("n{n}")}}))
        .collect();
    doc["cases"] = json!([{
        "name": "ten",
        "driver": {"type": "scripted", "steps": steps},
        "expect": {"final_state": {"exact": {"last": format!("n{}", CALLS - 1)}}}
    }]);
    doc
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_worker_s_attempt_takes_a_bounded_number_of_round_trips(pool: PgPool) {
    let (simulation, _) = common::queue_simulation(&PgStore::new(pool.clone()), &document()).await;

    let (counted, trips) = counted_app_pool(&pool, 8).await;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let mut config = WorkerConfig::new("counted");
    // Nothing periodic fires during the run: what is counted is the
    // attempts' own statements.
    (config.poll, config.heartbeat, config.reap_every) = (
        Duration::from_secs(600),
        Duration::from_secs(20),
        Duration::from_secs(600),
    );
    let worker = tokio::spawn(run(PgStore::new(counted), config, async {
        let _ = stopped.await;
    }));
    let began = Instant::now();
    loop {
        let finished: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM attempts WHERE simulation_id = $1 AND outcome = 'passed'",
        )
        .bind(simulation.as_uuid())
        .fetch_one(&pool)
        .await
        .unwrap();
        if finished == i64::try_from(ATTEMPTS).unwrap() {
            break;
        }
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "{finished} passed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = stop.send(());
    let report = worker.await.unwrap().unwrap();
    assert_eq!((report.claimed, report.finished), (ATTEMPTS, ATTEMPTS));
    let total = trips.count();
    println!(
        "{total} statements for {ATTEMPTS} attempts of {CALLS} calls: {:.2} per attempt",
        total as f64 / ATTEMPTS as f64
    );
    assert!(
        total <= PER_ATTEMPT * ATTEMPTS + ONCE,
        "{total} statements for {ATTEMPTS} attempts ({PER_ATTEMPT} each, {ONCE} once)"
    );
}

/// A worker's free places are claimed for in one statement: each claimed
/// attempt, the oldest first, bound to its own capability and kept in its
/// lease history; fewer when fewer are queued, none when none are.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn free_places_are_claimed_in_one_statement(pool: PgPool) {
    let (_, queued) = common::queue_simulation(&PgStore::new(pool.clone()), &document()).await;
    let (counted, trips) = counted_app_pool(&pool, 2).await;
    let store = PgStore::new(counted);
    let lease = Duration::from_secs(60);
    let capabilities: Vec<_> = (0..15).map(|_| Capability::generate()).collect();
    let hashes: Vec<_> = capabilities.iter().map(Capability::hash).collect();
    let before = trips.count();
    let first = store.claim_attempts("w", lease, &hashes).await.unwrap();
    assert_eq!(trips.count() - before, 1, "one statement for 15 claims");
    assert_eq!(first.len(), 15);
    let oldest: Vec<uuid::Uuid> = sqlx::query_scalar(
        "SELECT id FROM attempts WHERE id = ANY($1) ORDER BY queued_at, id LIMIT 15",
    )
    .bind(queued.iter().map(|a| a.as_uuid()).collect::<Vec<_>>())
    .fetch_all(&pool)
    .await
    .unwrap();
    let claimed: Vec<uuid::Uuid> = first.iter().map(|c| c.attempt.as_uuid()).collect();
    assert_eq!(claimed, oldest, "the oldest first, in order");
    for (claim, hash) in first.iter().zip(&hashes) {
        let bound: uuid::Uuid =
            sqlx::query_scalar("SELECT attempt_id FROM attempt_capabilities WHERE token_hash = $1")
                .bind(&hash.as_bytes()[..])
                .fetch_one(&pool)
                .await
                .unwrap();
        assert_eq!(bound, claim.attempt.as_uuid(), "its own capability");
        let (status, owner): (String, String) =
            sqlx::query_as("SELECT status, lease_owner FROM attempts WHERE id = $1")
                .bind(claim.attempt.as_uuid())
                .fetch_one(&pool)
                .await
                .unwrap();
        assert_eq!((status.as_str(), owner.as_str()), ("running", "w"));
    }
    let kept: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM attempt_leases WHERE event = 'claimed' AND owner = 'w'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(kept, 15);
    let more: Vec<_> = (0..10).map(|_| Capability::generate().hash()).collect();
    let rest = store.claim_attempts("w", lease, &more).await;
    assert_eq!(rest.unwrap().len(), ATTEMPTS as usize - 15, "fewer queued");
    let none: Vec<_> = (0..3).map(|_| Capability::generate().hash()).collect();
    assert!(
        store
            .claim_attempts("w", lease, &none)
            .await
            .unwrap()
            .is_empty()
    );
}
