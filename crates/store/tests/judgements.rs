//! An attempt's judgement is written by its finish: the statement that ends
//! a clean attempt, or the transaction that records a fault first and then
//! ends it, inserts the judgement too — both are written or neither, so no
//! reader sees an attempt finished and unjudged. Clean finishes that arrive
//! together go out in one statement, and each still ends (or is refused)
//! exactly as alone.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed expectation must panic

use serde_json::{Value, json};
use sqlx::PgPool;
use toolmock_runtime::ToolCall;
use toolmock_runtime::backend::AttemptStore;
use toolmock_runtime::dispatcher::StartedSimulation;
use toolmock_runtime::error::FinishError;
use toolmock_runtime::model::{AttemptId, AttemptOutcome, TenantId, Verdict};
use toolmock_runtime::testkit::{Rig, ledger_simulation};
use toolmock_store::PgStore;
use toolmock_store::testkit::{RoundTrips, counted_app_pool};

/// Two attempts of the ledger simulation, each with one call recorded, on
/// the application role's pool.
async fn two_attempts(pool: &PgPool) -> (Rig<PgStore>, TenantId, StartedSimulation) {
    let (rig, tenant, started, _) = attempts_with_a_call(pool, 2).await;
    (rig, tenant, started)
}

/// `n` attempts of the ledger simulation, each with one call recorded, on
/// the application role's pool, whose statements are counted.
async fn attempts_with_a_call(
    pool: &PgPool,
    n: u32,
) -> (Rig<PgStore>, TenantId, StartedSimulation, RoundTrips) {
    let (app, trips) = counted_app_pool(pool, 4).await;
    let rig = Rig::new(PgStore::new(app));
    let (tenant, started) = ledger_simulation(&rig, "acme", n).await;
    for attempt in &started.attempts {
        rig.dispatcher
            .call(
                tenant,
                &attempt.capability,
                &ToolCall::new("ledger", "append", json!({"id": "a"})),
            )
            .await
            .unwrap();
    }
    (rig, tenant, started, trips)
}

/// A judgement: its unmet expectations and the judge's report.
fn judgement() -> (Value, Value) {
    (
        json!([{"path": "/cases/0/expect/final_state", "code": "final_state"}]),
        json!({"verdict": "fail", "score": 0.25, "reasoning": "no"}),
    )
}

/// Finishes `attempt` with [`judgement`]; `unmarked` calls lost on their
/// way to storage send the finish down its transaction.
async fn finish_judged(
    store: &PgStore,
    (tenant, attempt): (TenantId, AttemptId),
    verdict: Verdict,
    unmarked: u64,
) -> Result<AttemptOutcome, FinishError> {
    let (unmet, judge) = judgement();
    store
        .finish_judged(
            tenant,
            attempt,
            verdict,
            (&unmet, Some(&judge)),
            chrono::Utc::now(),
            unmarked,
        )
        .await
}

/// Writes a judgement of `attempt` (no unmet expectations) ahead of its
/// finish, which that finish's judgement then cannot join.
async fn judged_already(pool: &PgPool, tenant: TenantId, attempt: AttemptId) {
    sqlx::query(
        "INSERT INTO attempt_judgements (tenant_id, attempt_id, unmet) VALUES ($1, $2, '[]')",
    )
    .bind(tenant.as_uuid())
    .bind(attempt.as_uuid())
    .execute(pool)
    .await
    .unwrap();
}

/// Finishes every attempt of `started` at once (passed, with
/// [`judgement`]): what each finish came to, in order.
async fn finish_all_at_once(
    store: &PgStore,
    tenant: TenantId,
    started: &StartedSimulation,
) -> Vec<Result<AttemptOutcome, FinishError>> {
    futures_util::future::join_all(
        started
            .attempts
            .iter()
            .map(|a| finish_judged(store, (tenant, a.id), Verdict::Passed, 0)),
    )
    .await
}

/// The attempt's status and outcome, and its judgement's row.
async fn written(pool: &PgPool, attempt: AttemptId) -> (String, Option<String>, Option<Value>) {
    let (status, outcome): (String, Option<String>) =
        sqlx::query_as("SELECT status, outcome FROM attempts WHERE id = $1")
            .bind(attempt.as_uuid())
            .fetch_one(pool)
            .await
            .unwrap();
    let judged: Option<Value> =
        sqlx::query_scalar("SELECT jsonb_build_object('unmet', unmet, 'judge', judge) FROM attempt_judgements WHERE attempt_id = $1")
            .bind(attempt.as_uuid())
            .fetch_optional(pool)
            .await
            .unwrap();
    (status, outcome, judged)
}

/// The clean finish (one statement) and the finish that records a lost
/// call first (a transaction: `unmarked` says one call never reached
/// storage) each write the judgement with the outcome.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn the_finish_writes_the_judgement_with_the_outcome(pool: PgPool) {
    let (rig, tenant, started) = two_attempts(&pool).await;
    let store = rig.dispatcher.backend();
    assert!(store.keeps_judgements());
    let (unmet, judge) = judgement();
    let expected = json!({"unmet": unmet, "judge": judge});
    for (attempt, unmarked, outcome) in [
        (started.attempts[0].id, 0, AttemptOutcome::Failed),
        (started.attempts[1].id, 1, AttemptOutcome::HarnessError),
    ] {
        let ended = finish_judged(store, (tenant, attempt), Verdict::Failed, unmarked)
            .await
            .unwrap();
        assert_eq!(ended, outcome);
        let (status, stored, judged) = written(&pool, attempt).await;
        assert_eq!(
            (status.as_str(), stored.as_deref()),
            ("finished", Some(outcome.as_str()))
        );
        assert_eq!(judged, Some(expected.clone()), "unmarked {unmarked}");
    }
    rig.dispatcher.backend().pool().close().await;
}

/// A judgement that cannot be written (here: one is there already) leaves
/// the attempt running and unchanged, on either path: neither is written.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_judgement_refused_leaves_the_attempt_unfinished(pool: PgPool) {
    let (rig, tenant, started) = two_attempts(&pool).await;
    let store = rig.dispatcher.backend();
    for (attempt, unmarked) in [(started.attempts[0].id, 0), (started.attempts[1].id, 1)] {
        judged_already(&pool, tenant, attempt).await;
        let refused = finish_judged(store, (tenant, attempt), Verdict::Passed, unmarked).await;
        assert!(matches!(refused, Err(FinishError::Store(_))), "{refused:?}");
        let (status, outcome, judged) = written(&pool, attempt).await;
        assert_eq!((status.as_str(), outcome), ("running", None));
        assert_eq!(judged, Some(json!({"unmet": [], "judge": null})));
        let faults: i64 =
            sqlx::query_scalar("SELECT count(*) FROM harness_errors WHERE attempt_id = $1")
                .bind(attempt.as_uuid())
                .fetch_one(&pool)
                .await
                .unwrap();
        assert_eq!(
            faults, 0,
            "the lost call's fault went with the refused finish"
        );
    }
    rig.dispatcher.backend().pool().close().await;
}

/// A plain finish (nothing to judge: `finish_attempt`) writes no judgement.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_finish_without_a_judgement_writes_none(pool: PgPool) {
    let (rig, tenant, started) = two_attempts(&pool).await;
    let attempt = started.attempts[0].id;
    rig.dispatcher
        .finish_attempt(tenant, attempt, Verdict::Passed)
        .await
        .unwrap();
    let (status, outcome, judged) = written(&pool, attempt).await;
    assert_eq!(
        (status.as_str(), outcome.as_deref()),
        ("finished", Some("passed"))
    );
    assert_eq!(judged, None);
    rig.dispatcher.backend().pool().close().await;
}

/// Clean finishes that arrive together go out in one statement, and each
/// ends its attempt with its judgement as alone.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn finishes_that_arrive_together_go_out_in_one_statement(pool: PgPool) {
    let (rig, tenant, started, trips) = attempts_with_a_call(&pool, 6).await;
    let store = rig.dispatcher.backend();
    let before = trips.count();
    let ended = finish_all_at_once(store, tenant, &started).await;
    assert_eq!(trips.count() - before, 1, "one statement for six finishes");
    let (unmet, judge) = judgement();
    for (attempt, ended) in started.attempts.iter().zip(ended) {
        assert_eq!(ended.unwrap(), AttemptOutcome::Passed);
        let (status, outcome, judged) = written(&pool, attempt.id).await;
        assert_eq!(
            (status.as_str(), outcome.as_deref()),
            ("finished", Some("passed"))
        );
        assert_eq!(judged, Some(json!({"unmet": unmet, "judge": judge})));
    }
    rig.dispatcher.backend().pool().close().await;
}

/// A gathered statement the database refuses (here: one of its finishes'
/// judgements is there already) rolls back whole; each finish is written
/// again alone, so the others end and only the refused one stays running.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_refused_gathered_statement_is_written_again_one_finish_at_a_time(pool: PgPool) {
    let (rig, tenant, started, trips) = attempts_with_a_call(&pool, 6).await;
    let store = rig.dispatcher.backend();
    let refused = started.attempts[2].id;
    judged_already(&pool, tenant, refused).await;
    let before = trips.count();
    let ended = finish_all_at_once(store, tenant, &started).await;
    assert_eq!(
        trips.count() - before,
        7,
        "the gathered statement, then six alone"
    );
    for (attempt, ended) in started.attempts.iter().zip(ended) {
        let (status, outcome, _) = written(&pool, attempt.id).await;
        if attempt.id == refused {
            assert!(matches!(ended, Err(FinishError::Store(_))), "{ended:?}");
            assert_eq!((status.as_str(), outcome), ("running", None));
        } else {
            assert_eq!(ended.unwrap(), AttemptOutcome::Passed);
            assert_eq!(
                (status.as_str(), outcome.as_deref()),
                ("finished", Some("passed"))
            );
        }
    }
    rig.dispatcher.backend().pool().close().await;
}
