//! `PinStore`: a simulation, its pins, test cases and attempts, written at once.

use super::{Db, PgStore, db};
use crate::rows::*;
use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{Postgres, Transaction};
use toolmock_contract::ProblemCode;
use toolmock_runtime::backend::*;
use toolmock_runtime::error::*;
use toolmock_runtime::model::*;

async fn insert_pin(
    tx: &mut Transaction<'static, Postgres>,
    tenant: TenantId,
    simulation: SimulationId,
    record: &PinRecord,
) -> Db<()> {
    let (kind, pin, contract, definition, reason) = match &record.pin {
        PinTarget::Pinned {
            pin,
            contract,
            definition,
        } => (
            pin.kind(),
            Some(pin),
            Some(contract),
            match pin {
                // An effect node is never a simulation's pin (the table's
                // kind CHECK refuses it); its definition is kept as an
                // inline one's would be.
                PinRef::Inline { .. } | PinRef::Effect { .. } => Some(definition),
                PinRef::Library { .. } => None,
            },
            None,
        ),
        PinTarget::Unpinned { reason } => ("unpinned", None, None, None, Some(reason.as_str())),
    };
    let columns = pin_columns(pin)?;
    db(sqlx::query(
        "INSERT INTO simulation_pins (tenant_id, simulation_id, tool_name, operation_name, kind, \
             tool_id, operation_id, revision, definition_hash, contract, definition, unpinned_reason) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(tenant.as_uuid())
    .bind(simulation.as_uuid())
    .bind(&record.tool)
    .bind(&record.operation)
    .bind(kind)
    .bind(columns.tool_id)
    .bind(columns.operation_id)
    .bind(columns.revision)
    .bind(columns.definition_hash)
    .bind(contract.map(Json))
    .bind(definition.map(Json))
    .bind(reason)
    .execute(&mut **tx)
    .await)?;
    Ok(())
}

impl PinStore for PgStore {
    async fn create_simulation(&self, tenant: TenantId, simulation: &NewSimulation) -> Db<()> {
        let mut tx = db(self.pool.begin().await)?;
        let inserted = sqlx::query(
            "INSERT INTO simulations (tenant_id, id, agent_id, mode, allow_incomplete, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(tenant.as_uuid())
        .bind(simulation.id.as_uuid())
        .bind(simulation.agent.as_uuid())
        .bind(simulation.mode.as_str())
        .bind(simulation.allow_incomplete)
        .bind(simulation.created_at)
        .execute(&mut *tx)
        .await;
        match db(inserted) {
            Ok(_) => {}
            Err(StoreError::NotFound { .. }) => {
                return Err(StoreError::NotFound { entity: "agent" });
            }
            Err(e) => return Err(e),
        }
        for record in &simulation.pins {
            insert_pin(&mut tx, tenant, simulation.id, record).await?;
        }
        for case in &simulation.test_cases {
            db(sqlx::query(
                "INSERT INTO test_cases (tenant_id, id, simulation_id, position, name, variants) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(tenant.as_uuid())
            .bind(case.id.as_uuid())
            .bind(simulation.id.as_uuid())
            .bind(to_i32(case.position)?)
            .bind(&case.spec.name)
            .bind(Json(&case.spec.variants))
            .execute(&mut *tx)
            .await)?;
        }
        // Three statements whatever the number of attempts, each reading
        // arrays: the state is sent once and copied by the server.
        let attempts = &simulation.attempts;
        let ids: Vec<uuid::Uuid> = attempts.iter().map(|a| a.id.as_uuid()).collect();
        let cases: Vec<uuid::Uuid> = attempts.iter().map(|a| a.test_case.as_uuid()).collect();
        let numbers = attempts
            .iter()
            .map(|a| to_i32(a.number))
            .collect::<Result<Vec<i32>, _>>()?;
        let owners: Vec<&str> = attempts.iter().map(|a| a.lease_owner.as_str()).collect();
        let expiries: Vec<DateTime<Utc>> = attempts.iter().map(|a| a.lease_expires_at).collect();
        let tokens: Vec<Vec<u8>> = attempts
            .iter()
            .map(|a| a.token_hash.as_bytes().to_vec())
            .collect();
        db(sqlx::query(
            "INSERT INTO attempts (tenant_id, id, simulation_id, test_case_id, number, \
                 lease_owner, lease_expires_at, created_at) \
             SELECT $1, a.id, $2, a.test_case_id, a.number, a.lease_owner, a.lease_expires_at, $3 \
             FROM unnest($4::uuid[], $5::uuid[], $6::int4[], $7::text[], $8::timestamptz[]) \
                 AS a (id, test_case_id, number, lease_owner, lease_expires_at)",
        )
        .bind(tenant.as_uuid())
        .bind(simulation.id.as_uuid())
        .bind(simulation.created_at)
        .bind(&ids)
        .bind(&cases)
        .bind(&numbers)
        .bind(&owners)
        .bind(&expiries)
        .execute(&mut *tx)
        .await)?;
        // With shared fixtures the base is written once, and each attempt's
        // row starts as an empty overlay over it; without, each row holds
        // the whole initial state, as it always did.
        let empty = serde_json::Map::new();
        let (first_state, form) = match &simulation.fixtures_hash {
            Some(hash) => {
                db(sqlx::query(
                    "INSERT INTO simulation_fixture_bases \
                         (tenant_id, simulation_id, fixtures_hash, base, created_at) \
                     VALUES ($1, $2, $3, $4, $5)",
                )
                .bind(tenant.as_uuid())
                .bind(simulation.id.as_uuid())
                .bind(hash)
                .bind(Json(&simulation.initial_state))
                .bind(simulation.created_at)
                .execute(&mut *tx)
                .await)?;
                (&empty, STATE_FORM_OVERLAY)
            }
            None => (&simulation.initial_state, STATE_FORM_WHOLE),
        };
        db(sqlx::query(
            "INSERT INTO attempt_state (attempt_id, tenant_id, state, version, updated_at, form) \
             SELECT a.id, $1, $2, 0, $3, $5 FROM unnest($4::uuid[]) AS a (id)",
        )
        .bind(tenant.as_uuid())
        .bind(Json(first_state))
        .bind(simulation.created_at)
        .bind(&ids)
        .bind(form)
        .execute(&mut *tx)
        .await)?;
        db(sqlx::query(
            "INSERT INTO attempt_capabilities (token_hash, tenant_id, attempt_id, created_at) \
             SELECT c.token_hash, $1, c.attempt_id, $2 \
             FROM unnest($3::bytea[], $4::uuid[]) AS c (token_hash, attempt_id)",
        )
        .bind(tenant.as_uuid())
        .bind(simulation.created_at)
        .bind(&tokens)
        .bind(&ids)
        .execute(&mut *tx)
        .await)?;
        db(tx.commit().await)
    }

    async fn simulation_pins(
        &self,
        tenant: TenantId,
        simulation: SimulationId,
    ) -> Db<SimulationPins> {
        let simulation_row: Option<SimulationRow> = db(sqlx::query_as(
            "SELECT mode FROM simulations WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(simulation.as_uuid())
        .fetch_optional(&self.pool)
        .await)?;
        let SimulationRow { mode } = simulation_row.ok_or(StoreError::NotFound {
            entity: "simulation",
        })?;
        let rows: Vec<SimulationPinRow> = db(sqlx::query_as(
            "SELECT p.tool_name, p.operation_name, p.kind AS pin_kind, p.tool_id, p.operation_id, \
                 p.revision, p.definition_hash, p.contract, p.definition, r.definition AS revision_definition, \
                 p.unpinned_reason \
             FROM simulation_pins p \
             LEFT JOIN tool_mock_revisions r ON r.tenant_id = p.tenant_id \
                 AND r.operation_id = p.operation_id AND r.revision = p.revision \
             WHERE p.tenant_id = $1 AND p.simulation_id = $2 \
             ORDER BY p.tool_name, p.operation_name",
        )
        .bind(tenant.as_uuid())
        .bind(simulation.as_uuid())
        .fetch_all(&self.pool)
        .await)?;
        let mut pins = Vec::with_capacity(rows.len());
        for row in rows {
            let pin = if row.pin.pin_kind.as_deref() == Some("unpinned") {
                let reason = row.unpinned_reason.unwrap_or_default();
                PinTarget::Unpinned {
                    reason: IncompleteStatus::parse(&reason)
                        .ok_or_else(|| corrupt("unpinned reason", &reason))?,
                }
            } else {
                let pin = row
                    .pin
                    .into_pin()?
                    .ok_or_else(|| corrupt("pin", "no pin"))?;
                let definition = row
                    .definition
                    .or(row.revision_definition)
                    .ok_or_else(|| corrupt("pin", "the pinned definition is missing"))?;
                PinTarget::Pinned {
                    pin,
                    contract: contract(
                        row.contract
                            .ok_or_else(|| corrupt("pin", "the pinned contract is missing"))?
                            .0,
                    )?,
                    definition: definition.0,
                }
            };
            pins.push(PinRecord {
                tool: row.tool_name,
                operation: row.operation_name,
                pin,
            });
        }
        Ok(SimulationPins {
            mode: SimulationMode::parse(&mode).ok_or_else(|| corrupt("mode", &mode))?,
            pins,
        })
    }
}
