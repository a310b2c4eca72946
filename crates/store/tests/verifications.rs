//! Verifications on PostgreSQL, as the application role: settings and their
//! schedule, the queue (one claim per verification among concurrent
//! workers, a lease that runs out is claimed again and, past its claims,
//! ends failed), a finish under the lease only, results that are
//! append-only and tenant-scoped, and the marks read from them.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed expectation must panic

use serde_json::json;
use sqlx::PgPool;
use std::time::Duration;
use toolmock_runtime::backend::Catalog;
use toolmock_runtime::error::StoreError;
use toolmock_runtime::model::{OperationId, TenantId, ToolId};
use toolmock_runtime::testkit::{ledger_definition, library_ledger};
use toolmock_store::testkit::app_pool;
use toolmock_store::{MAX_VERIFICATION_CLAIMS, PgStore, VerificationResult};

async fn setup(pool: &PgPool) -> (PgStore, TenantId, ToolId, OperationId) {
    let store = PgStore::new(app_pool(pool).await);
    let tenant = store.create_tenant("acme").await.unwrap();
    let (tool, operation) = library_ledger(&store, tenant).await;
    (store, tenant, tool, operation)
}

fn result(operation: OperationId, verdict: &str, revision: Option<i32>) -> VerificationResult {
    let hash = toolmock_contract::DefinitionHash::of(&ledger_definition()).unwrap();
    VerificationResult {
        operation,
        revision,
        definition_hash: revision.map(|_| hash.to_string()),
        contract_hash: "a".repeat(64),
        verdict: verdict.into(),
        divergences: u8::from(verdict == "diverged").into(),
        report: json!({"operation": "append", "verdict": verdict}),
    }
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_verification_is_queued_claimed_once_and_finished_under_its_lease(pool: PgPool) {
    let (store, tenant, tool, operation) = setup(&pool).await;
    let settings = json!({"verify": {"safe": true}});
    let queued = store
        .queue_verification(tenant, tool, "ops@acme", &settings)
        .await
        .unwrap();
    assert_eq!(queued.status, "queued");
    assert_eq!(queued.settings, settings);
    // Two workers at once: one claims it, the other finds nothing.
    let (a, b) = tokio::join!(
        store.claim_verification("worker-a", Duration::from_secs(60)),
        store.claim_verification("worker-b", Duration::from_secs(60))
    );
    let claims: Vec<_> = [a.unwrap(), b.unwrap()].into_iter().flatten().collect();
    assert_eq!(claims.len(), 1);
    let claimed = &claims[0];
    assert_eq!(
        (claimed.tenant, claimed.tool, claimed.id),
        (tenant, tool, queued.id)
    );
    let owner = if store
        .finish_verification(tenant, queued.id, "worker-a", true, &json!({}), &[])
        .await
        .unwrap()
    {
        "worker-a"
    } else {
        // Not worker-a's lease: nothing was written; worker-b finishes.
        let (record, results) = store.verification(tenant, tool, queued.id).await.unwrap();
        assert_eq!(record.status, "running");
        assert!(results.is_empty());
        assert!(
            store
                .finish_verification(
                    tenant,
                    queued.id,
                    "worker-b",
                    false,
                    &json!({"diverged": 1}),
                    &[result(operation, "diverged", Some(1))]
                )
                .await
                .unwrap()
        );
        "worker-b"
    };
    let (record, results) = store.verification(tenant, tool, queued.id).await.unwrap();
    assert_eq!(record.status, "finished");
    assert!(record.finished_at.is_some());
    if owner == "worker-b" {
        assert_eq!(record.ok, Some(false));
        assert_eq!(results.len(), 1);
        assert_eq!(results[0].verdict, "diverged");
        assert_eq!(results[0].revision, Some(1));
    }
    // Finished: no second finish.
    assert!(
        !store
            .finish_verification(tenant, queued.id, owner, true, &json!({}), &[])
            .await
            .unwrap()
    );
    assert!(
        store
            .claim_verification("worker-c", Duration::from_secs(60))
            .await
            .unwrap()
            .is_none()
    );
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn results_are_append_only_and_mark_the_latest_verdict(pool: PgPool) {
    let (store, tenant, tool, operation) = setup(&pool).await;
    for verdict in ["agreed", "diverged"] {
        let queued = store
            .queue_verification(tenant, tool, "ops", &json!({}))
            .await
            .unwrap();
        store
            .claim_verification("w", Duration::from_secs(60))
            .await
            .unwrap()
            .unwrap();
        assert!(
            store
                .finish_verification(
                    tenant,
                    queued.id,
                    "w",
                    verdict == "agreed",
                    &json!({}),
                    &[result(operation, verdict, Some(1))]
                )
                .await
                .unwrap()
        );
    }
    let marks = store.latest_verdicts(tenant, tool).await.unwrap();
    assert_eq!(marks.len(), 1);
    assert_eq!(marks[0].verdict, "diverged");
    assert_eq!(marks[0].operation, operation);
    let hash = marks[0].definition_hash.clone().unwrap();
    let diverged = store
        .diverged_definitions(tenant, std::slice::from_ref(&hash))
        .await
        .unwrap();
    assert_eq!(diverged.len(), 1);
    assert_eq!(diverged[0].verification, marks[0].verification);
    // Another tenant sees none of it.
    let other = store.create_tenant("other").await.unwrap();
    assert!(
        store
            .diverged_definitions(other, std::slice::from_ref(&hash))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        store.verification(other, tool, marks[0].verification).await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(
        store
            .verifications(other, tool, 10)
            .await
            .unwrap()
            .is_empty()
    );
    // The results cannot be changed, by the application or the owner.
    for sql in [
        "UPDATE tool_verification_results SET verdict = 'agreed'",
        "DELETE FROM tool_verification_results",
        "TRUNCATE tool_verification_results",
    ] {
        let error = sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(store.pool())
            .await
            .expect_err(sql);
        let code = error.as_database_error().and_then(|e| e.code()).unwrap();
        assert_eq!(code, "42501", "the application role: {sql}");
        let error = sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&pool)
            .await
            .expect_err(sql);
        let code = error.as_database_error().and_then(|e| e.code()).unwrap();
        assert_eq!(code, "TM001", "the owner: {sql}");
    }
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_lease_that_runs_out_is_claimed_again_then_fails(pool: PgPool) {
    let (store, tenant, tool, _) = setup(&pool).await;
    let queued = store
        .queue_verification(tenant, tool, "ops", &json!({}))
        .await
        .unwrap();
    for claim in 1..=MAX_VERIFICATION_CLAIMS {
        let claimed = store
            .claim_verification(&format!("w{claim}"), Duration::from_millis(50))
            .await
            .unwrap();
        assert_eq!(claimed.map(|c| c.id), Some(queued.id), "claim {claim}");
        tokio::time::sleep(Duration::from_millis(120)).await;
    }
    // The last lease ran out too: failed, with why; nothing to claim.
    assert!(
        store
            .claim_verification("late", Duration::from_secs(60))
            .await
            .unwrap()
            .is_none()
    );
    let (record, _) = store.verification(tenant, tool, queued.id).await.unwrap();
    assert_eq!(record.status, "failed");
    assert!(record.error.unwrap().contains("lease ran out 3 times"));
    // Its last holder can no longer finish it.
    assert!(
        !store
            .finish_verification(tenant, queued.id, "w3", true, &json!({}), &[])
            .await
            .unwrap()
    );
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_schedule_queues_one_verification_when_due(pool: PgPool) {
    let (store, tenant, tool, _) = setup(&pool).await;
    let set = store
        .put_verification_settings(tenant, tool, &json!({"verify": {}}), Some(300), "ops")
        .await
        .unwrap();
    assert_eq!(set.every_seconds, Some(300));
    assert!(set.next_due_at.is_some());
    assert_eq!(
        store.queue_due_verifications().await.unwrap(),
        0,
        "not due yet"
    );
    // Make it due (the owner may; the application role sets it only through the schedule).
    sqlx::query("UPDATE tool_verification_settings SET next_due_at = now() - interval '1 second'")
        .execute(&pool)
        .await
        .unwrap();
    let (a, b) = tokio::join!(
        store.queue_due_verifications(),
        store.queue_due_verifications()
    );
    assert_eq!(a.unwrap() + b.unwrap(), 1, "one of two workers queues it");
    let list = store.verifications(tenant, tool, 10).await.unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].requested_by, "schedule");
    assert_eq!(list[0].settings, json!({"verify": {}}));
    let next = store
        .verification_settings(tenant, tool)
        .await
        .unwrap()
        .unwrap()
        .next_due_at
        .unwrap();
    assert!(next > chrono::Utc::now() + chrono::Duration::seconds(250));
    // Due again while one is still queued: the schedule moves on, nothing is queued twice.
    sqlx::query("UPDATE tool_verification_settings SET next_due_at = now() - interval '1 second'")
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(store.queue_due_verifications().await.unwrap(), 0);
    // Unscheduled: never due.
    let set = store
        .put_verification_settings(tenant, tool, &json!({}), None, "ops")
        .await
        .unwrap();
    assert_eq!((set.every_seconds, set.next_due_at), (None, None));
}
