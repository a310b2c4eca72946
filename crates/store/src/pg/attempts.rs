//! `AttemptStore`: capabilities, leases, verdicts.

use super::evidence::insert_harness_error;
use super::finishes::{FinishRow, Finished};
use super::gathering::json_text;
use super::{Db, PgStore, db, rollback};
use crate::rows::*;
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;
use toolmock_runtime::backend::*;
use toolmock_runtime::error::*;
use toolmock_runtime::model::*;

/// A capability's attempt and whether its lease is live at `$1`, for the
/// two lookups below (by tenant and hash, or by the hash alone).
macro_rules! capability_select {
    () => {
        "SELECT c.tenant_id, a.id AS attempt_id, a.simulation_id, t.variants, \
         (a.status = 'running' AND a.lease_expires_at > $1 AND c.revoked_at IS NULL) AS live, \
         (a.status = 'running' AND a.lease_expires_at > clock_timestamp() \
             AND c.revoked_at IS NULL) AS live_by_database \
         FROM attempt_capabilities c \
         JOIN attempts a ON a.tenant_id = c.tenant_id AND a.id = c.attempt_id \
         JOIN test_cases t ON t.tenant_id = a.tenant_id AND t.id = a.test_case_id"
    };
}

impl PgStore {
    /// The attempt a capability hash belongs to, with its tenant, and
    /// whether its lease is live at `now` — what `resolve_capability`
    /// answers, found by the hash alone: a capability token names no
    /// tenant (the hash is unique, and only the token's holder knows it).
    /// The API's extractor hands the answer to the dispatcher
    /// (`Dispatcher::adopt_capability`), which then does not look it up
    /// again; the dispatcher records the refusal of a capability not live.
    pub async fn find_capability(
        &self,
        token: &TokenHash,
        now: DateTime<Utc>,
    ) -> Db<Option<CapabilityCheck>> {
        let row: Option<CapabilityRow> = db(sqlx::query_as(concat!(
            capability_select!(),
            " WHERE c.token_hash = $2"
        ))
        .bind(now)
        .bind(&token.as_bytes()[..])
        .fetch_optional(self.pool())
        .await)?;
        Ok(row.map(CapabilityRow::check))
    }
}

impl AttemptStore for PgStore {
    async fn resolve_capability(
        &self,
        tenant: TenantId,
        token: &TokenHash,
        now: DateTime<Utc>,
    ) -> Db<CapabilityCheck> {
        let row: Option<CapabilityRow> = db(sqlx::query_as(concat!(
            capability_select!(),
            " WHERE c.tenant_id = $2 AND c.token_hash = $3"
        ))
        .bind(now)
        .bind(tenant.as_uuid())
        .bind(&token.as_bytes()[..])
        .fetch_optional(&self.pool)
        .await)?;
        let row = row.ok_or(StoreError::NotFound {
            entity: "capability",
        })?;
        // An attempt this store holds (a worker's) is live by PostgreSQL's
        // clock alone, the clock its lease is granted, renewed and reaped
        // on: a worker whose own clock is off neither kills a live attempt
        // nor keeps a dead one.
        let held = self.fence_of(AttemptId(row.attempt_id)).0.is_some();
        let live_by_database = row.live_by_database;
        let mut check = row.check();
        if held {
            check.live = live_by_database;
        }
        Ok(check)
    }

    async fn renew_lease(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        owner: &str,
        until: DateTime<Utc>,
    ) -> Db<()> {
        let updated = db(sqlx::query(
            "UPDATE attempts SET lease_expires_at = $4 \
             WHERE tenant_id = $1 AND id = $2 AND lease_owner = $3 AND status = 'running'",
        )
        .bind(tenant.as_uuid())
        .bind(attempt.as_uuid())
        .bind(owner)
        .bind(until)
        .execute(&self.pool)
        .await)?;
        if updated.rows_affected() == 1 {
            Ok(())
        } else {
            Err(StoreError::NotFound {
                entity: "running attempt leased by this owner",
            })
        }
    }

    async fn revoke_capabilities(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        at: DateTime<Utc>,
    ) -> Db<()> {
        let (owner, epoch) = self.fence_of(attempt);
        if owner.is_some() {
            let holds: Option<bool> = db(sqlx::query_scalar(
                "SELECT lease_owner = $3 AND lease_epoch = $4 \
                     AND lease_expires_at > clock_timestamp() \
                 FROM attempts WHERE tenant_id = $1 AND id = $2",
            )
            .bind(tenant.as_uuid())
            .bind(attempt.as_uuid())
            .bind(&owner)
            .bind(epoch)
            .fetch_optional(&self.pool)
            .await)?;
            if holds == Some(false) {
                return Err(self.fenced());
            }
        }
        let updated = db(sqlx::query(
            "UPDATE attempt_capabilities SET revoked_at = $3 \
             WHERE tenant_id = $1 AND attempt_id = $2 AND revoked_at IS NULL",
        )
        .bind(tenant.as_uuid())
        .bind(attempt.as_uuid())
        .bind(at)
        .execute(&self.pool)
        .await)?;
        self.require_attempt(tenant, attempt, updated.rows_affected() == 0)
            .await
    }

    async fn begin_call(&self, tenant: TenantId, attempt: AttemptId, at: DateTime<Utc>) -> Db<()> {
        // Its own autocommitted statement: the mark stands whatever happens
        // to the call after it.
        // Fenced in the same statement when this store holds the attempt.
        let (owner, epoch) = self.fence_of(attempt);
        let written = db(sqlx::query(
            "INSERT INTO calls_begun (tenant_id, attempt_id, begun_at) SELECT $1, $2, $3 \
             WHERE $4::text IS NULL OR EXISTS (SELECT 1 FROM attempts f \
                 WHERE f.tenant_id = $1 AND f.id = $2 AND f.lease_owner = $4 \
                     AND f.lease_epoch = $5 AND f.lease_expires_at > clock_timestamp() FOR SHARE)",
        )
        .bind(tenant.as_uuid())
        .bind(attempt.as_uuid())
        .bind(at)
        .bind(owner)
        .bind(epoch)
        .execute(&self.pool)
        .await)?;
        if written.rows_affected() == 0 {
            return Err(self.fenced());
        }
        Ok(())
    }

    async fn finish_attempt(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        verdict: Verdict,
        at: DateTime<Utc>,
        unmarked: u64,
    ) -> Result<AttemptOutcome, FinishError> {
        self.finish(tenant, attempt, (verdict, None), at, unmarked)
            .await
    }

    fn keeps_judgements(&self) -> bool {
        true
    }

    async fn finish_judged(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        verdict: Verdict,
        judgement: (&Value, Option<&Value>),
        at: DateTime<Utc>,
        unmarked: u64,
    ) -> Result<AttemptOutcome, FinishError> {
        self.finish(tenant, attempt, (verdict, Some(judgement)), at, unmarked)
            .await
    }

    async fn attempt(&self, tenant: TenantId, attempt: AttemptId) -> Db<AttemptRecord> {
        let row: Option<AttemptRow> = db(sqlx::query_as(
            "SELECT simulation_id, test_case_id, outcome, lease_owner, lease_expires_at, \
                 has_harness_error FROM attempts WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(attempt.as_uuid())
        .fetch_optional(&self.pool)
        .await)?;
        let row = row.ok_or(StoreError::NotFound { entity: "attempt" })?;
        Ok(AttemptRecord {
            id: attempt,
            simulation: SimulationId(row.simulation_id),
            test_case: TestCaseId(row.test_case_id),
            outcome: row
                .outcome
                .map(|o| AttemptOutcome::parse(&o).ok_or_else(|| corrupt("outcome", &o)))
                .transpose()?,
            lease_owner: row.lease_owner,
            lease_expires_at: row.lease_expires_at,
            has_harness_error: row.has_harness_error,
        })
    }
}

impl PgStore {
    /// The finish of `AttemptStore::finish_attempt`, and with it, when
    /// given, the attempt's judgement: inserted by the statement or the
    /// transaction that ends the attempt, so both are written or neither.
    async fn finish(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        (verdict, judgement): (Verdict, Option<Judgement<'_>>),
        at: DateTime<Utc>,
        unmarked: u64,
    ) -> Result<AttemptOutcome, FinishError> {
        let (owner, epoch) = self.fence_of(attempt);
        let unmarked_i64 = to_i64(unmarked)?;
        // The clean finish in one round trip, gathered with other
        // attempts' (`finishes`): the same lock, the same counts after it,
        // the same end (`toolmock_finish_clean`). It ends nothing when
        // something must be recorded first; the transaction below does that.
        let row = FinishRow {
            tenant: tenant.as_uuid(),
            attempt: attempt.as_uuid(),
            at,
            verdict: verdict.outcome().as_str(),
            owner: owner.clone(),
            epoch,
            unmarked: unmarked_i64,
            unmet: judgement.map(|(unmet, _)| json_text(unmet)).transpose()?,
            judge: judgement
                .and_then(|(_, judge)| judge)
                .map(json_text)
                .transpose()?,
        };
        let Finished {
            found,
            holds,
            status,
            ended,
        } = self.finishes.write(&self.pool, (), row).await?;
        if !found {
            return Err(StoreError::NotFound { entity: "attempt" }.into());
        }
        if !holds {
            return Err(self.fenced().into());
        }
        if status.as_deref() != Some("running") {
            return Err(FinishError::AlreadyFinished);
        }
        if let Some(outcome) = ended {
            // Its calls are over: the copy of its state row is of no more use.
            self.copies.forget(attempt.as_uuid());
            return Ok(AttemptOutcome::parse(&outcome).ok_or_else(|| corrupt("outcome", &outcome))?);
        }
        let mut tx = db(self.pool.begin().await)?;
        // FOR UPDATE: excludes other finishes, harness-error writes (FOR NO
        // KEY UPDATE) and begin marks in flight (their foreign key's KEY
        // SHARE) of this attempt until the outcome is written; the state
        // row's lock (FOR NO KEY UPDATE, as a call's update) waits for a
        // call in flight, so that it is counted below.
        // The fence (when this store holds the attempt) is read under the
        // same row lock: a holder whose lease was reaped, released or ran
        // out finishes nothing.
        let held = owner.is_some();
        let row: Option<(String, DateTime<Utc>, bool)> = db(sqlx::query_as(
            "SELECT a.status, a.lease_expires_at, \
                 ($3::text IS NULL OR (a.lease_owner = $3 AND a.lease_epoch = $4 \
                     AND a.lease_expires_at > clock_timestamp())) \
             FROM attempts a JOIN attempt_state s ON s.tenant_id = a.tenant_id AND s.attempt_id = a.id \
             WHERE a.tenant_id = $1 AND a.id = $2 FOR UPDATE OF a FOR NO KEY UPDATE OF s",
        )
        .bind(tenant.as_uuid())
        .bind(attempt.as_uuid())
        .bind(owner)
        .bind(epoch)
        .fetch_optional(&mut *tx)
        .await)?;
        let Some((status, lease_expires_at, holds)) = row else {
            rollback(tx).await?;
            return Err(StoreError::NotFound { entity: "attempt" }.into());
        };
        if !holds {
            rollback(tx).await?;
            return Err(self.fenced().into());
        }
        if status != "running" {
            rollback(tx).await?;
            return Err(FinishError::AlreadyFinished);
        }
        // The counts, read by a statement after the lock (so every mark and
        // record committed before it is seen); when they are clean (every
        // call recorded, a capability unrevoked) and the lease ran past
        // `at`, the same statement ends the attempt — nothing is left to
        // record — saving the finish a round trip.
        // A held attempt's lease was just checked on PostgreSQL's clock
        // (`holds`); the caller's `at` decides only for the others.
        let clean_lease = held || lease_expires_at > at;
        let (recorded, begun, revoked, ended): (i64, i64, bool, Option<String>) =
            db(sqlx::query_as(
                "WITH counts AS ( \
                     SELECT (SELECT count(*) FROM evidence WHERE tenant_id = $1 AND attempt_id = $2) \
                          + (SELECT count(*) FROM tool_input_errors WHERE tenant_id = $1 AND attempt_id = $2) \
                          + (SELECT count(*) FROM harness_errors WHERE tenant_id = $1 AND attempt_id = $2) \
                              AS recorded, \
                            toolmock_calls_begun(tenant_id => $1, attempt_id => $2) AS begun, \
                            NOT EXISTS (SELECT 1 FROM attempt_capabilities \
                                WHERE tenant_id = $1 AND attempt_id = $2 AND revoked_at IS NULL) \
                              AS revoked), \
                 ended AS ( \
                     UPDATE attempts SET status = 'finished', finished_at = $3, \
                         outcome = toolmock_attempt_outcome($1, $2, $4) \
                     WHERE tenant_id = $1 AND id = $2 AND $5 \
                         AND (SELECT recorded >= begun + $6 AND NOT revoked FROM counts) \
                     RETURNING outcome) \
                 SELECT recorded, begun, revoked, (SELECT outcome FROM ended) FROM counts",
            )
            .bind(tenant.as_uuid())
            .bind(attempt.as_uuid())
            .bind(at)
            .bind(verdict.outcome().as_str())
            .bind(clean_lease)
            .bind(unmarked_i64)
            .fetch_one(&mut *tx)
            .await)?;
        // Its calls are over: the copy of its state row is of no more use.
        self.copies.forget(attempt.as_uuid());
        if let Some(outcome) = ended {
            insert_judgement(&mut tx, (tenant, attempt), judgement).await?;
            db(tx.commit().await)?;
            return Ok(AttemptOutcome::parse(&outcome).ok_or_else(|| corrupt("outcome", &outcome))?);
        }
        let recorded = u64::try_from(recorded).map_err(|e| corrupt("record count", e))?;
        let begun = u64::try_from(begun)
            .map_err(|e| corrupt("begun-call count", e))?
            .saturating_add(unmarked);
        if recorded < begun {
            insert_harness_error(
                &mut tx,
                &HarnessErrorRecord::ledger_gap(tenant, attempt, begun, recorded, at),
            )
            .await?;
        }
        if !clean_lease || revoked {
            let record = HarnessErrorRecord::finished_after_lease(
                tenant,
                attempt,
                lease_expires_at,
                revoked,
                at,
            );
            insert_harness_error(&mut tx, &record).await?;
        }
        // The outcome is the database's to decide, in its one function
        // (`toolmock_attempt_outcome`, shared with the harness-error trigger):
        // harness_error whenever a harness_errors row exists.
        let outcome: String = db(sqlx::query_scalar(
            "UPDATE attempts SET status = 'finished', finished_at = $3, \
                 outcome = toolmock_attempt_outcome($1, $2, $4) \
             WHERE tenant_id = $1 AND id = $2 RETURNING outcome",
        )
        .bind(tenant.as_uuid())
        .bind(attempt.as_uuid())
        .bind(at)
        .bind(verdict.outcome().as_str())
        .fetch_one(&mut *tx)
        .await)?;
        insert_judgement(&mut tx, (tenant, attempt), judgement).await?;
        db(tx.commit().await)?;
        Ok(AttemptOutcome::parse(&outcome).ok_or_else(|| corrupt("outcome", &outcome))?)
    }
}

/// An attempt's judgement as the finish writes it: its unmet expectations
/// and the judge's report.
type Judgement<'a> = (&'a Value, Option<&'a Value>);

/// Inserts `judgement`, when there is one, in `tx`, which has just ended
/// the attempt.
async fn insert_judgement(
    tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
    (tenant, attempt): (TenantId, AttemptId),
    judgement: Option<Judgement<'_>>,
) -> Db<()> {
    let Some((unmet, judge)) = judgement else {
        return Ok(());
    };
    db(sqlx::query(
        "INSERT INTO attempt_judgements (tenant_id, attempt_id, unmet, judge) \
         VALUES ($1, $2, $3, $4)",
    )
    .bind(tenant.as_uuid())
    .bind(attempt.as_uuid())
    .bind(Json(unmet))
    .bind(judge.map(Json))
    .execute(&mut **tx)
    .await)?;
    Ok(())
}
