//! `FixtureStore`: the locked step of a call, and the state it leaves.

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

impl FixtureStore for PgStore {
    async fn apply_call<F>(
        &self,
        binding: &AttemptBinding,
        token: &TokenHash,
        now: DateTime<Utc>,
        step: F,
    ) -> Result<Applied, ApplyError>
    where
        F: FnOnce(StateView<'_>) -> Result<Step, CallError> + Send,
    {
        let (owner, epoch) = self.fence_of(binding.attempt);
        let mut tx = db(self.pool.begin().await)?;
        // The attempt's one state row, locked; the capability and the lease
        // are checked in the same statement.
        let locked: Option<LockedStateRow> = db(sqlx::query_as(
            "SELECT s.state, s.version, s.form, a.simulation_id, \
                 (a.status = 'running' AND a.lease_expires_at > $4 AND c.revoked_at IS NULL) AS live, \
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
        .bind(owner)
        .bind(epoch)
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
        let view = match &held {
            Held::Whole(state) => StateView::plain(state),
            Held::Layered { base, overlay } => StateView::layered(base, overlay),
        };
        let mut evidence = match step(view) {
            Ok(step) => step,
            Err(error) => {
                rollback(tx).await?;
                return Err(ApplyError::Call(error));
            }
        };
        let updates = std::mem::take(&mut evidence.updates);
        // What the row holds next, and what evidence records before and
        // after: whole states for a row of the whole state; for an overlay
        // row, the overlay's stored form and its changes (as the in-memory
        // backend records them), never the base.
        let (written, state_before, state_after) = match held {
            Held::Whole(state) => {
                let mut after = state.clone();
                for (key, patch) in updates {
                    let value = patch.merged(after.get(&key));
                    after.insert(key, value);
                }
                // Evidence's `state_after` is the row written.
                (Value::Object(after), Value::Object(state), None)
            }
            Held::Layered { overlay, .. } => {
                let mut next = overlay.clone();
                for (key, patch) in updates {
                    next.set(&key, patch);
                }
                (
                    next.to_stored(),
                    Value::Object(overlay.changes()),
                    Some(Value::Object(next.changes())),
                )
            }
        };
        let version_before = to_u64(version, "state version")?;
        let version_after = version_before + 1;
        let pin = pin_columns(Some(&*evidence.pin))?;
        let written = db(sqlx::query(
            "WITH updated AS ( \
                 UPDATE attempt_state SET state = $3, version = $4, updated_at = now() \
                 WHERE tenant_id = $1 AND attempt_id = $2 AND version = $4 - 1 \
                 RETURNING attempt_id) \
             INSERT INTO evidence (tenant_id, attempt_id, tool_name, operation_name, pin_kind, \
                 tool_id, operation_id, revision, definition_hash, executor, variant, rule, \
                 arguments, result, state_before, state_after, state_version_before, \
                 state_version_after, delay_ms, started_at, duration_us, status, error) \
             SELECT $1, attempt_id, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, \
                 $17, $23, $4 - 1, $4, $18, $19, $20, $21, $22 FROM updated",
        )
        .bind(binding.tenant.as_uuid())
        .bind(binding.attempt.as_uuid())
        .bind(Json(&written))
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
        .bind(Json(&state_before))
        .bind(to_i32(evidence.delay_ms)?)
        .bind(evidence.started_at)
        .bind(to_i64(evidence.duration_us)?)
        .bind(evidence_status(evidence.error.as_ref()))
        .bind(evidence.error.as_ref().map(|e| Json(e.to_json())))
        .bind(Json(state_after.as_ref().unwrap_or(&written)))
        .execute(&mut *tx)
        .await)?;
        if written.rows_affected() != 1 {
            rollback(tx).await?;
            return Err(ApplyError::Store(StoreError::Conflict {
                what: "the attempt's state version moved under its lock".into(),
            }));
        }
        db(tx.commit().await)?;
        Ok(Applied {
            result: evidence.result,
            error: evidence.error,
            version_before,
            version_after,
            delay_ms: evidence.delay_ms,
        })
    }

    async fn state(&self, tenant: TenantId, attempt: AttemptId) -> Db<StateSnapshot> {
        let row: Option<StateRow> = db(sqlx::query_as(
            "SELECT s.state, s.version, s.form, a.simulation_id \
             FROM attempt_state s \
             JOIN attempts a ON a.tenant_id = s.tenant_id AND a.id = s.attempt_id \
             WHERE s.tenant_id = $1 AND s.attempt_id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(attempt.as_uuid())
        .fetch_optional(&self.pool)
        .await)?;
        let StateRow {
            state: Json(state),
            version,
            form,
            simulation_id,
        } = row.ok_or(StoreError::NotFound { entity: "attempt" })?;
        // Every reader (judging `final_state`, results, the API's attempt
        // view) gets the merged state, whichever form the row holds.
        let state = match self
            .held_state(&self.pool, tenant, simulation_id, &form, state)
            .await?
        {
            Held::Whole(state) => state,
            Held::Layered { base, overlay } => StateView::layered(&base, &overlay).whole(),
        };
        Ok(StateSnapshot {
            state,
            version: to_u64(version, "state version")?,
        })
    }
}

/// An attempt's state as its row holds it.
enum Held {
    /// The whole state (an attempt without shared fixtures).
    Whole(Map<String, Value>),
    /// The simulation's shared base and the attempt's own writes.
    Layered {
        base: Arc<Map<String, Value>>,
        overlay: Overlay,
    },
}

impl PgStore {
    /// Reads a state row's `state` in its `form`, loading the simulation's
    /// base (through `executor`, once per process) for an overlay row.
    async fn held_state<'c, E>(
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
