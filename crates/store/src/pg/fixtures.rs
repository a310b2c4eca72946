//! `FixtureStore`: the locked step of a call, and the state it leaves.
//!
//! A call of an attempt this store holds a fence for (a worker runs it
//! here) takes the one-statement path when the store has a copy of the
//! attempt's row from its previous write (`held`): the step is evaluated on
//! the copy, and one statement checks the capability, the lease and the
//! fence under the attempt row's share lock, writes the state only when the
//! row still has the copy's version, and records the evidence (and the
//! call's begin mark, when the dispatcher folds it) from that write. Every
//! other call, and any call whose copy turns out stale, takes the locked
//! path: lock the state row, check, evaluate, write, commit.

use super::held::{Copy, Held};
use super::{Db, PgStore, db, rollback};
use crate::rows::*;
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use sqlx::types::Json;
use toolmock_evaluator::{CallError, Overlay, StateView};
use toolmock_runtime::backend::*;
use toolmock_runtime::error::*;
use toolmock_runtime::model::*;

/// A call's write: the row's next content and what its evidence records.
struct Next {
    /// What the row holds next.
    written: Value,
    /// Evidence's `state_before`.
    before: Value,
    /// Evidence's `state_after` (`written` when `None`).
    after: Option<Value>,
    /// The state after the write, for the store's copy.
    held: Held,
}

impl Next {
    /// Applies a step's updates to the state it was evaluated on: whole
    /// states for a row of the whole state; for an overlay row, the
    /// overlay's stored form and its changes (as the in-memory backend
    /// records them), never the base.
    fn of(held: Held, updates: Vec<(String, toolmock_evaluator::Patch)>) -> Self {
        match held {
            Held::Whole(state) => {
                let mut after = state.clone();
                for (key, patch) in updates {
                    let value = patch.merged(after.get(&key));
                    after.insert(key, value);
                }
                Next {
                    written: Value::Object(after.clone()),
                    before: Value::Object(state),
                    after: None,
                    held: Held::Whole(after),
                }
            }
            Held::Layered { base, overlay } => {
                let mut next: Overlay = overlay.clone();
                for (key, patch) in updates {
                    next.set(&key, patch);
                }
                Next {
                    written: next.to_stored(),
                    before: Value::Object(overlay.changes()),
                    after: Some(Value::Object(next.changes())),
                    held: Held::Layered {
                        base,
                        overlay: next,
                    },
                }
            }
        }
    }
}

impl FixtureStore for PgStore {
    async fn apply_call<F>(
        &self,
        binding: &AttemptBinding,
        token: &TokenHash,
        now: DateTime<Utc>,
        mark: bool,
        step: F,
    ) -> Result<Applied, ApplyError>
    where
        F: Fn(StateView<'_>) -> Result<Step, CallError> + Send,
    {
        let (owner, epoch) = self.fence_of(binding.attempt);
        let site = CallSite {
            binding,
            token,
            now,
            fence: (owner.as_deref(), epoch),
            mark,
        };
        // The one-statement path, on the copy of the row this store wrote
        // last. A step that fails on the copy is evaluated again under the
        // lock: a failure is only reported on the row as it is, and after
        // the lease check.
        if let Some(epoch) = epoch
            && let Some(copy) = self.copies.take(binding.attempt.as_uuid(), epoch)
            && let Ok(evidence) = step(copy.held.view())
        {
            let found = self
                .write_call(&self.pool, site, copy.held, copy.version, evidence)
                .await?;
            match found {
                Found::Wrote(applied, copy) => {
                    self.keep_copy(site, copy);
                    return Ok(applied);
                }
                Found::Refused(refusal) => return Err(refusal),
                // Someone else wrote the row (a call through another
                // process): read it again, under its lock.
                Found::Moved => {}
            }
        }
        let mut tx = db(self.pool.begin().await)?;
        // The attempt's one state row, locked; the capability and the lease
        // are checked in the same statement.
        let locked: Option<LockedStateRow> = db(sqlx::query_as(
            "SELECT s.state, s.version, s.form, a.simulation_id, \
                 (a.status = 'running' AND c.revoked_at IS NULL \
                     AND a.lease_expires_at > CASE WHEN $5::text IS NULL THEN $4 \
                         ELSE clock_timestamp() END) AS live, \
                 ($5::text IS NULL OR (a.lease_owner = $5 AND a.lease_epoch = $6 \
                     AND a.lease_expires_at > clock_timestamp())) AS holds \
             FROM attempt_state s \
             JOIN attempts a ON a.tenant_id = s.tenant_id AND a.id = s.attempt_id \
             JOIN attempt_capabilities c ON c.tenant_id = s.tenant_id AND c.attempt_id = s.attempt_id \
             WHERE s.tenant_id = $1 AND s.attempt_id = $2 AND c.token_hash = $3 \
             FOR UPDATE OF s FOR SHARE OF a",
        )
        .bind(binding.tenant.as_uuid())
        .bind(binding.attempt.as_uuid())
        .bind(&token.as_bytes()[..])
        .bind(now)
        .bind(site.fence.0)
        .bind(site.fence.1)
        .fetch_optional(&mut *tx)
        .await)?;
        let Some(LockedStateRow {
            state: Json(state),
            version,
            form,
            simulation_id,
            live,
            holds,
        }) = locked
        else {
            rollback(tx).await?;
            return Err(ApplyError::CapabilityRejected);
        };
        // The fence, under the attempt row's share lock held to the commit:
        // the reaper's or a release's epoch change waits for this call, and
        // a call after it writes nothing.
        if !holds {
            rollback(tx).await?;
            return Err(ApplyError::Store(self.fenced()));
        }
        if !live {
            rollback(tx).await?;
            return Err(ApplyError::LeaseExpired);
        }
        let held = match self
            .held_state(&mut *tx, binding.tenant, simulation_id, &form, state)
            .await
        {
            Ok(held) => held,
            Err(error) => {
                rollback(tx).await?;
                return Err(ApplyError::Store(error));
            }
        };
        let evidence = match step(held.view()) {
            Ok(step) => step,
            Err(error) => {
                rollback(tx).await?;
                return Err(ApplyError::Call(error));
            }
        };
        // Under the row's lock the version cannot have moved: whatever the
        // statement refuses is an error.
        let found = self
            .write_call(&mut *tx, site, held, version, evidence)
            .await;
        match found {
            Ok(Found::Wrote(applied, copy)) => {
                db(tx.commit().await)?;
                self.keep_copy(site, copy);
                Ok(applied)
            }
            Ok(Found::Refused(refusal)) => {
                rollback(tx).await?;
                Err(refusal)
            }
            Ok(Found::Moved) => {
                rollback(tx).await?;
                Err(ApplyError::Store(StoreError::Conflict {
                    what: "the attempt's state version moved under its lock".into(),
                }))
            }
            Err(error) => {
                rollback(tx).await?;
                Err(error)
            }
        }
    }

    /// Yes for the attempts this store holds a fence for: their calls run
    /// here, one after another, and a crash of this process before a
    /// call's commit expires the lease (`lease_expired`), so the mark need
    /// not stand on its own; it is then written in the same statement as
    /// the evidence, saving a round trip per call.
    fn folds_begin_mark(&self, attempt: AttemptId) -> bool {
        self.fence_of(attempt).0.is_some()
    }

    async fn state(&self, tenant: TenantId, attempt: AttemptId) -> Db<StateSnapshot> {
        let (held, version) = self.read_held(tenant, attempt).await?;
        // Every reader that asks for the state (results, the API's attempt
        // view) gets the merged state, whichever form the row holds.
        let state = match held {
            Held::Whole(state) => state,
            Held::Layered { base, overlay } => StateView::layered(&base, &overlay).whole(),
        };
        Ok(StateSnapshot { state, version })
    }

    async fn layered_state(&self, tenant: TenantId, attempt: AttemptId) -> Db<LayeredSnapshot> {
        self.read_layered(tenant, attempt).await
    }
}

/// What a call's write statement found.
enum Found {
    /// It wrote the state and the evidence: the answer, and the row now.
    Wrote(Applied, Copy),
    /// The capability, the lease or the fence refused the write.
    Refused(ApplyError),
    /// The row was no longer at the version the step was evaluated on.
    Moved,
}

/// The call a write is for.
#[derive(Clone, Copy)]
struct CallSite<'a> {
    binding: &'a AttemptBinding,
    token: &'a TokenHash,
    now: DateTime<Utc>,
    /// This store's fence of the attempt (owner, epoch), if it holds one.
    fence: (Option<&'a str>, Option<i64>),
    /// Whether the call's begin mark is written with its evidence.
    mark: bool,
}

impl PgStore {
    /// Writes one call in one statement: under the attempt row's share
    /// lock (`FOR SHARE OF a`; in READ COMMITTED a row another transaction
    /// changed is read again once it commits, so a reaper's or a release's
    /// epoch change is seen), checks the capability, the lease and the
    /// fence exactly as the locked read does, updates the state row only
    /// when they allow it and the row is still at `version`, and inserts the
    /// evidence (and, with `site.mark`, the begin mark) from that update
    /// alone — so either all of it is written or none of it.
    async fn write_call<'c, E>(
        &self,
        executor: E,
        site: CallSite<'_>,
        held: Held,
        version: i64,
        mut evidence: Step,
    ) -> Result<Found, ApplyError>
    where
        E: sqlx::Executor<'c, Database = sqlx::Postgres>,
    {
        let updates = std::mem::take(&mut evidence.updates);
        let next = Next::of(held, updates);
        let version_before = to_u64(version, "state version")?;
        let version_after = version_before + 1;
        let pin = pin_columns(Some(&*evidence.pin))?;
        let binding = site.binding;
        let row: (Option<bool>, Option<bool>, bool) = db(sqlx::query_as(
            "WITH checked AS ( \
                 SELECT (a.status = 'running' AND c.revoked_at IS NULL \
                         AND a.lease_expires_at > CASE WHEN $25::text IS NULL THEN $24 \
                             ELSE clock_timestamp() END) AS live, \
                     ($25::text IS NULL OR (a.lease_owner = $25 AND a.lease_epoch = $26 \
                         AND a.lease_expires_at > clock_timestamp())) AS holds \
                 FROM attempts a \
                 JOIN attempt_capabilities c ON c.tenant_id = a.tenant_id AND c.attempt_id = a.id \
                 WHERE a.tenant_id = $1 AND a.id = $2 AND c.token_hash = $27 \
                 FOR SHARE OF a), \
             updated AS ( \
                 UPDATE attempt_state SET state = $3, version = $4, updated_at = now() \
                 WHERE tenant_id = $1 AND attempt_id = $2 AND version = $4 - 1 \
                     AND EXISTS (SELECT 1 FROM checked WHERE live AND holds) \
                 RETURNING attempt_id), \
             marked AS ( \
                 INSERT INTO calls_begun (tenant_id, attempt_id, begun_at) \
                 SELECT $1, attempt_id, $24 FROM updated WHERE $28), \
             recorded AS ( \
                 INSERT INTO evidence (tenant_id, attempt_id, tool_name, operation_name, \
                     pin_kind, tool_id, operation_id, revision, definition_hash, executor, \
                     variant, rule, arguments, result, state_before, state_after, \
                     state_version_before, state_version_after, delay_ms, started_at, \
                     duration_us, status, error) \
                 SELECT $1, attempt_id, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, \
                     $17, $23, $4 - 1, $4, $18, $19, $20, $21, $22 FROM updated) \
             SELECT (SELECT live FROM checked), (SELECT holds FROM checked), \
                 EXISTS (SELECT 1 FROM updated)",
        )
        .bind(binding.tenant.as_uuid())
        .bind(binding.attempt.as_uuid())
        .bind(Json(&next.written))
        .bind(to_i64(version_after)?)
        .bind(&*evidence.tool)
        .bind(&*evidence.operation)
        .bind(pin.kind)
        .bind(pin.tool_id)
        .bind(pin.operation_id)
        .bind(pin.revision)
        .bind(pin.definition_hash)
        .bind(evidence.executor.as_str())
        .bind(evidence.variant.as_deref())
        .bind(evidence.rule.map(to_i32).transpose()?)
        .bind(Json(&evidence.arguments))
        .bind(Json(&evidence.result))
        .bind(Json(&next.before))
        .bind(to_i32(evidence.delay_ms)?)
        .bind(evidence.started_at)
        .bind(to_i64(evidence.duration_us)?)
        .bind(evidence_status(evidence.error.as_ref()))
        .bind(evidence.error.as_ref().map(|e| Json(e.to_json())))
        .bind(Json(next.after.as_ref().unwrap_or(&next.written)))
        .bind(site.now)
        .bind(site.fence.0)
        .bind(site.fence.1)
        .bind(&site.token.as_bytes()[..])
        .bind(site.mark)
        .fetch_one(executor)
        .await)?;
        Ok(match row {
            (_, _, true) => Found::Wrote(
                Applied {
                    result: evidence.result,
                    error: evidence.error,
                    version_before,
                    version_after,
                    delay_ms: evidence.delay_ms,
                },
                Copy {
                    epoch: site.fence.1.unwrap_or_default(),
                    version: version + 1,
                    held: next.held,
                },
            ),
            (None, _, false) => Found::Refused(ApplyError::CapabilityRejected),
            (_, Some(false), false) => Found::Refused(ApplyError::Store(self.fenced())),
            (Some(false), _, false) => Found::Refused(ApplyError::LeaseExpired),
            (Some(true), _, false) => Found::Moved,
        })
    }

    /// Keeps the row a call wrote, when this store holds the attempt's
    /// fence (a worker's own attempt; for any other the copy would only go
    /// stale).
    fn keep_copy(&self, site: CallSite<'_>, copy: Copy) {
        if site.fence.0.is_some() {
            self.copies.keep(site.binding.attempt.as_uuid(), copy);
        }
    }

    /// Reads a state row's `state` in its `form`, loading the simulation's
    /// base (through `executor`, once per process) for an overlay row.
    pub(super) async fn held_state<'c, E>(
        &self,
        executor: E,
        tenant: TenantId,
        simulation: uuid::Uuid,
        form: &str,
        state: Map<String, Value>,
    ) -> Db<Held>
    where
        E: sqlx::Executor<'c, Database = sqlx::Postgres>,
    {
        match form {
            STATE_FORM_WHOLE => Ok(Held::Whole(state)),
            STATE_FORM_OVERLAY => {
                let overlay = Overlay::from_stored(&Value::Object(state))
                    .ok_or_else(|| corrupt("attempt overlay", "not an overlay's stored form"))?;
                let base = self
                    .fixture_base(executor, tenant.as_uuid(), simulation)
                    .await?;
                Ok(Held::Layered { base, overlay })
            }
            other => Err(corrupt("attempt state form", other)),
        }
    }
}
