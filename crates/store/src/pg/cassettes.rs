//! A simulation's model cassette (`simulation_cassettes`,
//! `cassette_exchanges`): the mode and the exchanges a start was given, and
//! the exchanges the workers recorded, one cassette line per row.

use super::{Db, PgStore, db};
use toolmock_runtime::model::{AttemptId, SimulationId, TenantId};

/// A simulation's cassette as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCassette {
    /// `record`, `replay` or `auto`.
    pub mode: String,
    /// The lines the start was given, in the order given.
    pub given: Vec<String>,
    /// The lines its attempts recorded, in the order recorded.
    pub recorded: Vec<String>,
}

impl PgStore {
    /// Keeps the cassette a simulation was started with: its mode and the
    /// lines it was given (before any of its attempts is queued).
    pub async fn record_simulation_cassette(
        &self,
        tenant: TenantId,
        simulation: SimulationId,
        mode: &str,
        lines: &[String],
    ) -> Db<()> {
        let mut tx = db(self.pool().begin().await)?;
        db(sqlx::query(
            "INSERT INTO simulation_cassettes (tenant_id, simulation_id, mode) VALUES ($1, $2, $3)",
        )
        .bind(tenant.as_uuid())
        .bind(simulation.as_uuid())
        .bind(mode)
        .execute(&mut *tx)
        .await)?;
        db(sqlx::query(
            "INSERT INTO cassette_exchanges (tenant_id, simulation_id, line) \
             SELECT $1, $2, l FROM unnest($3::text[]) WITH ORDINALITY AS u(l, n) ORDER BY n",
        )
        .bind(tenant.as_uuid())
        .bind(simulation.as_uuid())
        .bind(lines)
        .execute(&mut *tx)
        .await)?;
        db(tx.commit().await)
    }

    /// Keeps the lines attempt `attempt` of `simulation` recorded.
    pub async fn record_cassette_exchanges(
        &self,
        tenant: TenantId,
        simulation: SimulationId,
        attempt: AttemptId,
        lines: &[String],
    ) -> Db<()> {
        db(sqlx::query(
            "INSERT INTO cassette_exchanges (tenant_id, simulation_id, attempt_id, line) \
             SELECT $1, $2, $3, l FROM unnest($4::text[]) WITH ORDINALITY AS u(l, n) ORDER BY n",
        )
        .bind(tenant.as_uuid())
        .bind(simulation.as_uuid())
        .bind(attempt.as_uuid())
        .bind(lines)
        .execute(self.pool())
        .await)?;
        Ok(())
    }

    /// A simulation's cassette, if it was started with one (none for
    /// another tenant's simulation).
    pub async fn simulation_cassette(
        &self,
        tenant: TenantId,
        simulation: SimulationId,
    ) -> Db<Option<StoredCassette>> {
        let mode: Option<String> = db(sqlx::query_scalar(
            "SELECT mode FROM simulation_cassettes WHERE tenant_id = $1 AND simulation_id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(simulation.as_uuid())
        .fetch_optional(self.pool())
        .await)?;
        let Some(mode) = mode else {
            return Ok(None);
        };
        let rows: Vec<(bool, String)> = db(sqlx::query_as(
            "SELECT attempt_id IS NOT NULL, line FROM cassette_exchanges \
             WHERE tenant_id = $1 AND simulation_id = $2 ORDER BY id",
        )
        .bind(tenant.as_uuid())
        .bind(simulation.as_uuid())
        .fetch_all(self.pool())
        .await)?;
        let (recorded, given): (Vec<_>, Vec<_>) = rows.into_iter().partition(|(r, _)| *r);
        Ok(Some(StoredCassette {
            mode,
            given: given.into_iter().map(|(_, l)| l).collect(),
            recorded: recorded.into_iter().map(|(_, l)| l).collect(),
        }))
    }
}
