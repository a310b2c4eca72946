//! Reading an attempt's state row as it is held: whole, or the simulation's
//! shared base (from the per-process cache) with the attempt's overlay.
//! [`FixtureStore::state`](toolmock_runtime::backend::FixtureStore::state)
//! merges the two; `layered_state` keeps them apart, so that a reader that
//! keeps an attempt's state (a worker's judgement) holds what the attempt
//! changed, never a copy of the base.

use super::held::Held;
use super::{Db, PgStore, db};
use crate::rows::*;
use sqlx::types::Json;
use std::sync::Arc;
use toolmock_evaluator::Overlay;
use toolmock_runtime::error::StoreError;
use toolmock_runtime::model::{AttemptId, LayeredSnapshot, TenantId};

impl PgStore {
    /// The attempt's state row as held, and its version.
    pub(super) async fn read_held(&self, tenant: TenantId, attempt: AttemptId) -> Db<(Held, u64)> {
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
        let held = self
            .held_state(&self.pool, tenant, simulation_id, &form, state)
            .await?;
        Ok((held, to_u64(version, "state version")?))
    }

    /// The attempt's state as its layers: the cached base shared, never
    /// copied; a whole row as a base with no writes over it.
    pub(super) async fn read_layered(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Db<LayeredSnapshot> {
        let (held, version) = self.read_held(tenant, attempt).await?;
        Ok(layered(held, version))
    }
}

/// A held state as its layers, at `version`: the base shared, never copied.
pub(super) fn layered(held: Held, version: u64) -> LayeredSnapshot {
    match held {
        Held::Whole(state) => LayeredSnapshot {
            base: Arc::new(state),
            overlay: Arc::new(Overlay::new()),
            fixture_backed: false,
            version,
        },
        Held::Layered { base, overlay } => LayeredSnapshot {
            base,
            overlay: Arc::new(overlay),
            fixture_backed: true,
            version,
        },
    }
}
