//! The worker queue: scripted attempts queued by the API, claimed by
//! workers (`FOR UPDATE SKIP LOCKED`), held under a short lease renewed by
//! heartbeat and fenced by (owner, epoch), released on shutdown, and reaped
//! when their lease runs out.
//!
//! Leases are timed by PostgreSQL's clock (`clock_timestamp()`), so workers
//! on several machines agree on when a lease ends. Every claim, release and
//! expiry adds one to the attempt's `lease_epoch`, and the history of each
//! is kept in `attempt_leases` (append-only).

use super::{Db, PgStore, db, rollback};
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{PoisonError, RwLock};
use std::time::Duration;
use toolmock_runtime::error::StoreError;
use toolmock_runtime::model::{
    AttemptBinding, AttemptId, CapabilityCheck, SimulationId, TenantId, TestCaseId, TokenHash,
    VariantChoice,
};
use uuid::Uuid;

/// The `LISTEN`/`NOTIFY` channel on which queueing an attempt wakes idle
/// workers (the payload is empty; workers still poll as a fallback).
pub const QUEUE_CHANNEL: &str = "toolmock_attempts_queued";

/// A worker's lease of one attempt: its owner name and the epoch its claim
/// gave it. Writes under a fence are refused once the attempt's lease is no
/// longer exactly this (expired, reaped, released or claimed again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    /// The worker's owner name (unique per worker process).
    pub owner: String,
    /// The epoch of the claim.
    pub epoch: i64,
}

impl Claimed {
    /// What looking the claim's capability up would answer: its attempt,
    /// live (the claim just granted the lease). A dispatcher adopts it
    /// (`Dispatcher::adopt_capability`) so that the attempt's first call
    /// does not read it again.
    pub fn capability_check(&self) -> CapabilityCheck {
        CapabilityCheck {
            binding: AttemptBinding {
                tenant: self.tenant,
                attempt: self.attempt,
                simulation: self.simulation,
                variants: self.variants.clone(),
            },
            live: true,
        }
    }
}

/// The fences a store holds, and how many writes they refused.
#[derive(Debug, Default)]
pub(super) struct Fences {
    held: RwLock<HashMap<Uuid, Fence>>,
    refusals: AtomicU64,
}

/// An attempt a worker claimed.
#[derive(Debug, Clone)]
pub struct Claimed {
    /// Its tenant.
    pub tenant: TenantId,
    /// The attempt.
    pub attempt: AttemptId,
    /// Its simulation.
    pub simulation: SimulationId,
    /// Its test case.
    pub test_case: TestCaseId,
    /// The test case's name.
    pub test_case_name: String,
    /// 1, 2, … within its test case.
    pub number: u32,
    /// The lease this claim holds.
    pub fence: Fence,
    /// Its test case's variant choices: with the above, what the claim's
    /// capability is bound to, so a dispatcher can adopt the capability
    /// without looking it up (`Claimed::capability_check`).
    pub variants: Vec<VariantChoice>,
    /// When it was queued.
    pub queued_at: DateTime<Utc>,
}

/// An attempt whose lease the reaper took back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reaped {
    /// Its tenant.
    pub tenant: TenantId,
    /// The attempt.
    pub attempt: AttemptId,
    /// Who held the lease that ran out.
    pub owner: String,
}

/// What releasing a held attempt did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Released {
    /// No call of it had begun: it is queued again for another worker.
    Queued,
    /// Calls had begun, so it cannot be replayed faithfully: its lease is
    /// taken back and its capabilities revoked; the caller finishes it (as
    /// `harness_error`, `lease_expired`).
    Abandoned,
}

fn interval(lease: Duration) -> f64 {
    lease.as_secs_f64()
}

impl PgStore {
    /// Holds `fence` for `attempt`: from now on every write of this store
    /// (and its clones) for the attempt is fenced by it.
    pub fn hold(&self, attempt: AttemptId, fence: Fence) {
        self.fences
            .held
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(attempt.as_uuid(), fence);
    }

    /// Stops holding `attempt`'s fence.
    pub fn let_go(&self, attempt: AttemptId) {
        self.copies.forget(attempt.as_uuid());
        self.fences
            .held
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&attempt.as_uuid());
    }

    /// How many writes this store's fences have refused so far.
    pub fn fence_refusals(&self) -> u64 {
        self.fences.refusals.load(Ordering::Relaxed)
    }

    /// The fence held for `attempt`, as two binds (both NULL when none).
    pub(super) fn fence_of(&self, attempt: AttemptId) -> (Option<String>, Option<i64>) {
        match self
            .fences
            .held
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&attempt.as_uuid())
        {
            Some(fence) => (Some(fence.owner.clone()), Some(fence.epoch)),
            None => (None, None),
        }
    }

    /// Counts a refusal and returns its error.
    pub(super) fn fenced(&self) -> StoreError {
        self.fences.refusals.fetch_add(1, Ordering::Relaxed);
        StoreError::Fenced
    }

    /// Queues `attempts` (running, just started) for the workers, in one
    /// transaction: their start capabilities are revoked (a worker's claim
    /// gives it a capability of its own), each is marked `queued` with its
    /// history, and idle workers are woken on [`QUEUE_CHANNEL`]. Returns
    /// how many were queued.
    pub async fn queue_attempts(&self, tenant: TenantId, attempts: &[AttemptId]) -> Db<u64> {
        let ids: Vec<Uuid> = attempts.iter().map(|a| a.as_uuid()).collect();
        let mut tx = db(self.pool.begin().await)?;
        let queued = db(sqlx::query(
            "WITH queued AS ( \
                 UPDATE attempts SET status = 'queued', lease_owner = '', \
                     lease_epoch = lease_epoch + 1, lease_expires_at = clock_timestamp(), \
                     queued_at = clock_timestamp() \
                 WHERE tenant_id = $1 AND id = ANY($2) AND status = 'running' \
                 RETURNING tenant_id, id, lease_epoch, queued_at) \
             INSERT INTO attempt_leases (tenant_id, attempt_id, event, owner, epoch, at) \
             SELECT tenant_id, id, 'queued', '', lease_epoch, queued_at FROM queued",
        )
        .bind(tenant.as_uuid())
        .bind(&ids)
        .execute(&mut *tx)
        .await)?
        .rows_affected();
        db(sqlx::query(
            "UPDATE attempt_capabilities SET revoked_at = clock_timestamp() \
             WHERE tenant_id = $1 AND attempt_id = ANY($2) AND revoked_at IS NULL",
        )
        .bind(tenant.as_uuid())
        .bind(&ids)
        .execute(&mut *tx)
        .await)?;
        notify(&mut tx).await?;
        db(tx.commit().await)?;
        Ok(queued)
    }

    /// Claims, in one statement, up to one queued attempt of any tenant
    /// per capability in `capabilities`, the oldest first, for `owner`,
    /// skipping attempts another worker is claiming (`FOR UPDATE SKIP
    /// LOCKED`): each becomes `running` under a lease of `lease` from now
    /// (PostgreSQL's clock) at its next epoch, is bound to its capability
    /// (the hash of a token the worker made: the first claimed the first,
    /// and so on), and the claim is kept in its history. Fewer (or none)
    /// when fewer are queued.
    pub async fn claim_attempts(
        &self,
        owner: &str,
        lease: Duration,
        capabilities: &[TokenHash],
    ) -> Db<Vec<Claimed>> {
        type Row = (
            Uuid,
            Uuid,
            Uuid,
            Uuid,
            i32,
            i64,
            Option<DateTime<Utc>>,
            String,
            sqlx::types::Json<serde_json::Map<String, serde_json::Value>>,
            i64,
            String,
            sqlx::types::Json<Vec<VariantChoice>>,
        );
        if capabilities.is_empty() {
            return Ok(Vec::new());
        }
        let tokens: Vec<&[u8]> = capabilities.iter().map(|c| &c.as_bytes()[..]).collect();
        let rows: Vec<Row> = db(sqlx::query_as(
            "WITH picked AS ( \
                 SELECT tenant_id, id, queued_at FROM attempts WHERE status = 'queued' \
                 ORDER BY queued_at, id LIMIT cardinality($3::bytea[]) FOR UPDATE SKIP LOCKED), \
             numbered AS ( \
                 SELECT tenant_id, id, row_number() OVER (ORDER BY queued_at, id) AS n \
                 FROM picked), \
             claimed AS ( \
                 UPDATE attempts a SET status = 'running', lease_owner = $1, \
                     lease_epoch = a.lease_epoch + 1, \
                     lease_expires_at = clock_timestamp() + make_interval(secs => $2) \
                 FROM numbered p WHERE a.tenant_id = p.tenant_id AND a.id = p.id \
                 RETURNING a.tenant_id, a.id, a.simulation_id, a.test_case_id, a.number, \
                     a.lease_epoch, a.queued_at, p.n), \
             bound AS ( \
                 INSERT INTO attempt_capabilities (token_hash, tenant_id, attempt_id, created_at) \
                 SELECT k.token, c.tenant_id, c.id, clock_timestamp() \
                 FROM claimed c JOIN unnest($3::bytea[]) WITH ORDINALITY AS k(token, n) \
                     ON k.n = c.n), \
             kept AS ( \
                 INSERT INTO attempt_leases (tenant_id, attempt_id, event, owner, epoch, at) \
                 SELECT tenant_id, id, 'claimed', $1, lease_epoch, clock_timestamp() FROM claimed) \
             SELECT c.tenant_id, c.id, c.simulation_id, c.test_case_id, c.number, c.lease_epoch, \
                 c.queued_at, t.name, s.state, s.version, s.form, t.variants \
             FROM claimed c JOIN test_cases t ON t.tenant_id = c.tenant_id AND t.id = c.test_case_id \
             JOIN attempt_state s ON s.tenant_id = c.tenant_id AND s.attempt_id = c.id \
             ORDER BY c.n",
        )
        .bind(owner)
        .bind(interval(lease))
        .bind(&tokens)
        .fetch_all(&self.pool)
        .await)?;
        let mut claims = Vec::with_capacity(rows.len());
        for (
            tenant,
            attempt,
            simulation,
            test_case,
            number,
            epoch,
            queued_at,
            name,
            state,
            version,
            form,
            variants,
        ) in rows
        {
            // The attempt's state row as the claim found it: its first call
            // then takes the one-statement path too (the write still checks
            // the version, so a row changed since is read again). A row that
            // cannot be read here is left to that call's locked read, which
            // reports it; the claim itself stands.
            if let Ok(held) = self
                .held_state(&self.pool, TenantId(tenant), simulation, &form, state.0)
                .await
            {
                let copy = super::held::Copy {
                    epoch: Some(epoch),
                    version,
                    held,
                };
                self.copies.keep((tenant, attempt), copy);
            }
            claims.push(Claimed {
                tenant: TenantId(tenant),
                attempt: AttemptId(attempt),
                simulation: SimulationId(simulation),
                test_case: TestCaseId(test_case),
                test_case_name: name,
                number: u32::try_from(number).map_err(|e| crate::rows::corrupt("number", e))?,
                fence: Fence {
                    owner: owner.to_owned(),
                    epoch,
                },
                variants: variants.0,
                queued_at: queued_at.unwrap_or_else(Utc::now),
            });
        }
        Ok(claims)
    }

    /// The heartbeat: renews, in one statement, the lease of every attempt
    /// in `held` that `owner` still holds at that epoch and whose lease has
    /// not run out, to `lease` from now. Returns the attempts renewed; the
    /// others' leases are lost.
    pub async fn renew_leases(
        &self,
        owner: &str,
        held: &[(AttemptId, i64)],
        lease: Duration,
    ) -> Db<Vec<AttemptId>> {
        let ids: Vec<Uuid> = held.iter().map(|(a, _)| a.as_uuid()).collect();
        let epochs: Vec<i64> = held.iter().map(|(_, e)| *e).collect();
        let renewed: Vec<Uuid> = db(sqlx::query_scalar(
            "UPDATE attempts a \
             SET lease_expires_at = clock_timestamp() + make_interval(secs => $2) \
             FROM unnest($3::uuid[], $4::bigint[]) AS h(id, epoch) \
             WHERE a.id = h.id AND a.lease_epoch = h.epoch AND a.lease_owner = $1 \
                 AND a.status = 'running' AND a.lease_expires_at > clock_timestamp() \
             RETURNING a.id",
        )
        .bind(owner)
        .bind(interval(lease))
        .bind(&ids)
        .bind(&epochs)
        .fetch_all(&self.pool)
        .await)?;
        Ok(renewed.into_iter().map(AttemptId).collect())
    }

    /// The reaper's first step: takes back, of any tenant, up to `limit`
    /// running attempts whose lease ran out (PostgreSQL's clock), skipping
    /// those another reaper is taking: each gets the next epoch (so its
    /// holder's writes are refused), every capability of it is revoked and
    /// the expiry is kept in its history. The caller then finishes each
    /// (the finish records `lease_expired`); an attempt whose finish never
    /// comes is taken again by a later sweep.
    pub async fn reap_expired(&self, limit: u32) -> Db<Vec<Reaped>> {
        let rows: Vec<(Uuid, Uuid, String)> = db(sqlx::query_as(
            "WITH expired AS ( \
                 SELECT tenant_id, id FROM attempts \
                 WHERE status = 'running' AND lease_expires_at <= clock_timestamp() \
                 ORDER BY lease_expires_at LIMIT $1 FOR UPDATE SKIP LOCKED), \
             bumped AS ( \
                 UPDATE attempts a SET lease_epoch = a.lease_epoch + 1 \
                 FROM expired e WHERE a.tenant_id = e.tenant_id AND a.id = e.id \
                 RETURNING a.tenant_id, a.id, a.lease_owner, a.lease_epoch), \
             revoked AS ( \
                 UPDATE attempt_capabilities c SET revoked_at = clock_timestamp() \
                 FROM bumped b WHERE c.tenant_id = b.tenant_id AND c.attempt_id = b.id \
                     AND c.revoked_at IS NULL), \
             kept AS ( \
                 INSERT INTO attempt_leases (tenant_id, attempt_id, event, owner, epoch, at) \
                 SELECT tenant_id, id, 'expired', lease_owner, lease_epoch, clock_timestamp() \
                 FROM bumped) \
             SELECT tenant_id, id, lease_owner FROM bumped",
        )
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await)?;
        Ok(rows
            .into_iter()
            .map(|(tenant, attempt, owner)| Reaped {
                tenant: TenantId(tenant),
                attempt: AttemptId(attempt),
                owner,
            })
            .collect())
    }

    /// Gives back a held attempt (a worker shutting down), under its fence:
    /// queued again when none of its calls began ([`Released::Queued`],
    /// idle workers woken), otherwise its lease is taken back and its
    /// capabilities revoked for the caller to finish it
    /// ([`Released::Abandoned`]). Either way the next epoch is taken and
    /// the event kept in its history; a fence that no longer holds is
    /// refused ([`StoreError::Fenced`]).
    pub async fn release_attempt(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        fence: &Fence,
    ) -> Db<Released> {
        let mut tx = db(self.pool.begin().await)?;
        // The state row's lock (as a call's update takes) waits for a call
        // in flight; the marks are counted by a statement after it, so that
        // such a call is counted.
        let holds: Option<bool> = db(sqlx::query_scalar(
            "SELECT (a.status = 'running' AND a.lease_owner = $3 AND a.lease_epoch = $4 \
                     AND a.lease_expires_at > clock_timestamp()) \
             FROM attempts a JOIN attempt_state s ON s.tenant_id = a.tenant_id AND s.attempt_id = a.id \
             WHERE a.tenant_id = $1 AND a.id = $2 FOR UPDATE OF a FOR NO KEY UPDATE OF s",
        )
        .bind(tenant.as_uuid())
        .bind(attempt.as_uuid())
        .bind(&fence.owner)
        .bind(fence.epoch)
        .fetch_optional(&mut *tx)
        .await)?;
        let Some(holds) = holds else {
            rollback(tx).await?;
            return Err(StoreError::NotFound { entity: "attempt" });
        };
        if !holds {
            rollback(tx).await?;
            return Err(self.fenced());
        }
        let begun: i64 = db(sqlx::query_scalar(
            "SELECT toolmock_calls_begun(tenant_id => $1, attempt_id => $2)",
        )
        .bind(tenant.as_uuid())
        .bind(attempt.as_uuid())
        .fetch_one(&mut *tx)
        .await)?;
        let (released, event) = if begun == 0 {
            (Released::Queued, "released")
        } else {
            (Released::Abandoned, "abandoned")
        };
        db(sqlx::query(
            "WITH changed AS ( \
                 UPDATE attempts SET lease_epoch = lease_epoch + 1, \
                     lease_expires_at = clock_timestamp(), \
                     status = CASE WHEN $3 = 'released' THEN 'queued' ELSE status END, \
                     lease_owner = CASE WHEN $3 = 'released' THEN '' ELSE lease_owner END \
                 WHERE tenant_id = $1 AND id = $2 RETURNING tenant_id, id, lease_epoch) \
             INSERT INTO attempt_leases (tenant_id, attempt_id, event, owner, epoch, at) \
             SELECT tenant_id, id, $3, $4, lease_epoch, clock_timestamp() FROM changed",
        )
        .bind(tenant.as_uuid())
        .bind(attempt.as_uuid())
        .bind(event)
        .bind(&fence.owner)
        .execute(&mut *tx)
        .await)?;
        db(sqlx::query(
            "UPDATE attempt_capabilities SET revoked_at = clock_timestamp() \
             WHERE tenant_id = $1 AND attempt_id = $2 AND revoked_at IS NULL",
        )
        .bind(tenant.as_uuid())
        .bind(attempt.as_uuid())
        .execute(&mut *tx)
        .await)?;
        if released == Released::Queued {
            notify(&mut tx).await?;
        }
        db(tx.commit().await)?;
        Ok(released)
    }

    /// An attempt's lease history, oldest first: `(event, owner, epoch)`
    /// with event `queued`, `claimed`, `released`, `expired` or `abandoned`.
    pub async fn lease_history(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Db<Vec<(String, String, i64)>> {
        db(sqlx::query_as(
            "SELECT event, owner, epoch FROM attempt_leases \
             WHERE tenant_id = $1 AND attempt_id = $2 ORDER BY id",
        )
        .bind(tenant.as_uuid())
        .bind(attempt.as_uuid())
        .fetch_all(&self.pool)
        .await)
    }
}

/// Wakes the workers listening on [`QUEUE_CHANNEL`] when `tx` commits.
async fn notify(tx: &mut sqlx::Transaction<'static, sqlx::Postgres>) -> Db<()> {
    db(sqlx::query("SELECT pg_notify($1, '')")
        .bind(QUEUE_CHANNEL)
        .execute(&mut **tx)
        .await)?;
    Ok(())
}
