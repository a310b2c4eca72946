//! `FixtureStore`: a call's durable step, and the state it leaves.
//!
//! A call of an attempt whose state row this store wrote last (a worker's
//! own attempt, or an external agent's served by this API process) takes
//! the one-statement path: the step is evaluated on the store's copy of
//! the row (`held`), and one statement checks the capability, the lease
//! and the fence, writes the state only when the row still has the copy's
//! version and its copies of the attempt's status and epoch still allow
//! it, and records the evidence (which is also the call's begin mark) from
//! that write. It writes no other row and locks none: a finish, a reap or
//! a release changes the state row's copies, so it waits for a call
//! holding the row and a call after it writes nothing. That statement goes
//! out with those of other attempts' calls that arrive meanwhile
//! (`call_batches`), each row still checked and written on its own. Every
//! other call, and any call whose copy turns out stale (another process or
//! a concurrent call wrote the row), takes the locked path: lock the state
//! row, check, evaluate, write, commit — and its row becomes the copy.

use super::call_batches::{CallRow, Written, write_rows};
use super::gathering::json_text;
use super::held::{Copy, Held};
use super::{Db, PgStore, db, rollback};
use crate::rows::*;
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use sqlx::types::Json;
use std::sync::Arc;
use toolmock_evaluator::{CallError, Overlay, StateView};
use toolmock_runtime::backend::*;
use toolmock_runtime::error::*;
use toolmock_runtime::model::*;

/// A call's write: the state it was evaluated on and the state after it.
enum Next<'a> {
    /// A row of the whole state: it holds `after` next.
    Whole {
        previous: &'a Map<String, Value>,
        after: Map<String, Value>,
    },
    /// An overlay row: it holds `stored` next (the overlay's stored form);
    /// evidence records the overlay's changes before and after, never the
    /// base.
    Layered {
        base: Arc<Map<String, Value>>,
        overlay: Overlay,
        stored: Value,
        before: Value,
        after: Value,
    },
}

/// A document bound as `jsonb`, borrowed.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum Doc<'a> {
    Map(&'a Map<String, Value>),
    Value(&'a Value),
}

impl<'a> Next<'a> {
    /// Applies a step's updates to the state it was evaluated on (as the
    /// in-memory backend records them).
    fn of(held: &'a Held, updates: Vec<(String, toolmock_evaluator::Patch)>) -> Self {
        match held {
            Held::Whole(state) => {
                let mut after = state.clone();
                for (key, patch) in updates {
                    let value = patch.merged(after.get(&key));
                    after.insert(key, value);
                }
                Next::Whole {
                    previous: state,
                    after,
                }
            }
            Held::Layered { base, overlay } => {
                let mut next: Overlay = overlay.clone();
                for (key, patch) in updates {
                    next.set(&key, patch);
                }
                Next::Layered {
                    base: base.clone(),
                    stored: next.to_stored(),
                    before: Value::Object(overlay.changes()),
                    after: Value::Object(next.changes()),
                    overlay: next,
                }
            }
        }
    }

    /// What the row holds next.
    fn written(&self) -> Doc<'_> {
        match self {
            Next::Whole { after, .. } => Doc::Map(after),
            Next::Layered { stored, .. } => Doc::Value(stored),
        }
    }

    /// Evidence's `state_before`.
    fn before(&self) -> Doc<'_> {
        match self {
            Next::Whole { previous, .. } => Doc::Map(previous),
            Next::Layered { before, .. } => Doc::Value(before),
        }
    }

    /// Evidence's `state_after`.
    fn after(&self) -> Doc<'_> {
        match self {
            Next::Whole { after, .. } => Doc::Map(after),
            Next::Layered { after, .. } => Doc::Value(after),
        }
    }

    /// The state after the write, for the store's copy.
    fn into_held(self) -> Held {
        match self {
            Next::Whole { after, .. } => Held::Whole(after),
            Next::Layered { base, overlay, .. } => Held::Layered { base, overlay },
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
        let attempt = binding.attempt.as_uuid();
        let key = (binding.tenant.as_uuid(), attempt);
        if let Some(copy) = self.copies.get(key, epoch)
            && let Ok(evidence) = step(copy.held.view())
        {
            let found = self
                .write_call(None, site, &copy.held, copy.version, evidence)
                .await;
            match found {
                Ok(Found::Wrote(applied, next)) => {
                    self.copies.keep(key, next);
                    return Ok(applied);
                }
                Ok(Found::Refused(refusal)) => {
                    self.copies.forget_version(attempt, copy.version);
                    return Err(refusal);
                }
                // Someone else wrote the row (a call through another
                // process, or a concurrent call of this one): read it
                // again, under its lock, and evaluate the call again there.
                Ok(Found::Moved) => self.copies.forget_version(attempt, copy.version),
                Err(error) => {
                    self.copies.forget_version(attempt, copy.version);
                    return Err(error);
                }
            }
        }
        let mut tx = db(self.pool.begin().await)?;
        // The attempt's one state row, locked; the capability and the lease
        // are checked in the same statement.
        let locked: Option<LockedStateRow> = db(sqlx::query_as(
            "SELECT s.state, s.version, s.form, a.simulation_id, \
                 (s.attempt_status = 'running' AND c.revoked_at IS NULL \
                     AND a.lease_expires_at > CASE WHEN $5::text IS NULL THEN $4 \
                         ELSE clock_timestamp() END) AS live, \
                 ($5::text IS NULL OR (s.attempt_epoch = $6 AND a.lease_owner = $5 \
                     AND a.lease_expires_at > clock_timestamp())) AS holds \
             FROM attempt_state s \
             JOIN attempts a ON a.tenant_id = s.tenant_id AND a.id = s.attempt_id \
             JOIN attempt_capabilities c ON c.tenant_id = s.tenant_id AND c.attempt_id = s.attempt_id \
             WHERE s.tenant_id = $1 AND s.attempt_id = $2 AND c.token_hash = $3 \
             FOR UPDATE OF s",
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
        // The fence, on the state row locked to the commit: the reaper's or
        // a release's epoch change (which writes the row's copy) waits for
        // this call, and a call after it writes nothing.
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
            .write_call(Some(&mut *tx), site, &held, version, evidence)
            .await;
        match found {
            Ok(Found::Wrote(applied, copy)) => {
                db(tx.commit().await)?;
                self.copies.keep(key, copy);
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

    /// Yes: a sandbox call's mark is written in the statement that writes
    /// its evidence, and only with it. Nothing of a sandbox call before that
    /// commit is seen outside the process (the step is a pure evaluation),
    /// so a crash of the serving process before it leaves no trace of the
    /// call and gave no answer: for a worker's own attempt its lease then
    /// runs out (`lease_expired`); for an external agent's call it is a
    /// request that failed before anything happened, exactly as one lost on
    /// its way to the server (docs/data-model.md, "The begin mark").
    fn folds_begin_mark(&self, attempt: AttemptId) -> bool {
        let _ = attempt;
        true
    }

    async fn state(&self, tenant: TenantId, attempt: AttemptId) -> Db<StateSnapshot> {
        let (held, version) = self.read_held(tenant, attempt).await?;
        // Every reader that asks for the state (results, the API's attempt
        // view) gets the merged state, whichever form the row holds.
        let state = merged(held);
        Ok(StateSnapshot { state, version })
    }

    async fn layered_state(&self, tenant: TenantId, attempt: AttemptId) -> Db<LayeredSnapshot> {
        self.read_layered(tenant, attempt).await
    }
}

/// A held state as one map: the base with the overlay's changes.
pub(super) fn merged(held: Held) -> Map<String, Value> {
    match held {
        Held::Whole(state) => state,
        Held::Layered { base, overlay } => StateView::layered(&base, &overlay).whole(),
    }
}

/// The one row a statement of one call answered.
fn written_alone(written: Vec<Written>) -> Db<Written> {
    written
        .into_iter()
        .next()
        .ok_or_else(|| corrupt("call write", "no row for the call"))
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
    /// Whether the call's evidence row is also its begin mark
    /// (`evidence.begin_mark`).
    mark: bool,
}

impl PgStore {
    /// Writes one call in one statement: checks the capability, the lease
    /// and the fence as the locked read does, updates the state row only
    /// when they allow it, the row is still at `version` and its copies of
    /// the attempt's status and epoch are still running and this store's
    /// (in READ COMMITTED a row another transaction changed is read again
    /// once it commits, so a finish's, a reaper's or a release's change is
    /// seen), and inserts the evidence (with `site.mark`, flagged as the
    /// call's begin mark) from that update alone — so either all of it is
    /// written or none of it. In `tx` (the locked path) the statement holds
    /// this call alone; otherwise it goes out with the calls of other
    /// attempts gathered beside it (`call_batches`).
    async fn write_call(
        &self,
        tx: Option<&mut sqlx::PgConnection>,
        site: CallSite<'_>,
        held: &Held,
        version: i64,
        mut evidence: Step,
    ) -> Result<Found, ApplyError> {
        let updates = std::mem::take(&mut evidence.updates);
        let next = Next::of(held, updates);
        let version_before = to_u64(version, "state version")?;
        let version_after = version_before + 1;
        let pin = pin_columns(Some(&*evidence.pin))?;
        let binding = site.binding;
        let row = CallRow {
            tenant: binding.tenant.as_uuid(),
            attempt: binding.attempt.as_uuid(),
            state: json_text(&next.written())?,
            version: to_i64(version_after)?,
            tool: evidence.tool.to_string(),
            operation: evidence.operation.to_string(),
            pin_kind: pin.kind,
            pin_tool: pin.tool_id,
            pin_operation: pin.operation_id,
            pin_revision: pin.revision,
            pin_hash: pin.definition_hash,
            executor: evidence.executor.as_str(),
            variant: evidence.variant.as_deref().map(str::to_owned),
            rule: evidence.rule.map(to_i32).transpose()?,
            arguments: json_text(&evidence.arguments)?,
            result: json_text(&evidence.result)?,
            state_before: json_text(&next.before())?,
            state_after: json_text(&next.after())?,
            delay_ms: to_i32(evidence.delay_ms)?,
            started_at: evidence.started_at,
            duration_us: to_i64(evidence.duration_us)?,
            status: evidence_status(evidence.error.as_ref()),
            error: evidence
                .error
                .as_ref()
                .map(|e| json_text(&e.to_json()))
                .transpose()?,
            now: site.now,
            owner: site.fence.0.map(str::to_owned),
            epoch: site.fence.1,
            token: site.token.as_bytes().to_vec(),
            mark: site.mark,
        };
        let checks = self.checks_versions();
        let written = match tx {
            // Under the row's lock: this call alone, in the transaction.
            Some(conn) => written_alone(db(
                write_rows(conn, std::slice::from_ref(&row), checks).await
            )?)?,
            None => self.calls.write(&self.pool, checks, row).await?,
        };
        Ok(match written {
            Written { wrote: true, .. } => Found::Wrote(
                Applied {
                    result: evidence.result,
                    error: evidence.error,
                    version_before,
                    version_after,
                    delay_ms: evidence.delay_ms,
                },
                Copy {
                    epoch: site.fence.1,
                    version: version + 1,
                    held: next.into_held(),
                },
            ),
            Written { live: None, .. } => Found::Refused(ApplyError::CapabilityRejected),
            Written {
                holds: Some(false), ..
            } => Found::Refused(ApplyError::Store(self.fenced())),
            Written {
                live: Some(false), ..
            } => Found::Refused(ApplyError::LeaseExpired),
            Written {
                live: Some(true), ..
            } => Found::Moved,
        })
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
