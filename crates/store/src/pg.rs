//! [`PgStore`]: the runtime's storage traits on PostgreSQL.
//!
//! Lock order (see docs/data-model.md): a call locks only its attempt's
//! `attempt_state` row; a revision save only its `tool_operations` row;
//! finishing an attempt and recording a harness error lock the `attempts`
//! row first. No transaction takes two of these, so none can deadlock.

use crate::error::map_sqlx_error;
use crate::rows::{
    EvidenceRow, HarnessErrorRow, PinRow, RevisionRow, ToolInputErrorRow, contract, contract_hash,
    corrupt, pin_columns, to_i32, to_i64, to_u64,
};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use sqlx::postgres::PgPool;
use sqlx::types::Json;
use sqlx::{Postgres, Transaction};
use toolmock_contract::{DefinitionHash, OperationContract, OperationIdentity, OperationSource};
use toolmock_evaluator::CallError;
use toolmock_runtime::{
    AgentId, AgentRecord, AgentSpec, Applied, ApplyError, AttemptBinding, AttemptId,
    AttemptOutcome, AttemptRecord, AttemptStore, CapabilityCheck, Catalog, EvidenceRecord,
    EvidenceSink, FinishError, FixtureStore, HarnessErrorRecord, LibraryTool, NewOperation,
    NewSimulation, NewTool, OperationId, OperationView, PinRecord, PinStore, PinTarget,
    RevisionRecord, SaveRevision, SaveRevisionError, SimulationId, SimulationMode, SimulationPins,
    StateSnapshot, Step, StoreError, TenantId, TestCaseId, TokenHash, ToolId, ToolInputErrorRecord,
    ToolKind, VariantChoice, Verdict, check_revision, effective_contract,
};
use uuid::Uuid;

/// The PostgreSQL backend. Cloning shares the pool.
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
}

impl PgStore {
    /// A store over a migrated pool.
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    /// The pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

type Db<T> = Result<T, StoreError>;

/// `tool_id, contract, contract_hash, latest_revision` of a locked operation.
type LockedOperation = (Uuid, Option<Json<Value>>, Option<String>, i32);
/// `state, version, live` of a locked state row.
type LockedState = (Json<Map<String, Value>>, i64, bool);
/// `simulation_id, test_case_id, outcome, lease_owner, lease_expires_at, has_harness_error`.
type AttemptRow = (Uuid, Uuid, Option<String>, String, DateTime<Utc>, bool);

fn db<T>(result: Result<T, sqlx::Error>) -> Db<T> {
    result.map_err(map_sqlx_error)
}

fn source(text: &str) -> Db<OperationSource> {
    match text {
        "platform" => Ok(OperationSource::Platform),
        "mcp" => Ok(OperationSource::Mcp),
        "custom" => Ok(OperationSource::Custom),
        other => Err(corrupt("operation source", other)),
    }
}

macro_rules! revision_columns {
    () => {
        "tool_id, operation_id, revision, contract_hash, definition, definition_hash, author, \
         provenance, instructions, created_at"
    };
}

#[derive(sqlx::FromRow)]
struct OperationRow {
    id: Uuid,
    tool_id: Uuid,
    source: String,
    name: String,
    contract: Option<Json<Value>>,
    contract_hash: Option<String>,
    latest_revision: i32,
}

impl PgStore {
    async fn latest_revision(
        &self,
        tenant: TenantId,
        operation: Uuid,
        latest: i32,
    ) -> Db<Option<RevisionRecord>> {
        if latest == 0 {
            return Ok(None);
        }
        let row: Option<RevisionRow> = db(sqlx::query_as(concat!(
            "SELECT ",
            revision_columns!(),
            " FROM tool_mock_revisions WHERE tenant_id = $1 AND operation_id = $2 AND revision = $3"
        ))
        .bind(tenant.as_uuid())
        .bind(operation)
        .bind(latest)
        .fetch_optional(&self.pool)
        .await)?;
        row.map(RevisionRow::into_record).transpose()
    }

    async fn operation_view(&self, tenant: TenantId, row: OperationRow) -> Db<OperationView> {
        let latest = self
            .latest_revision(tenant, row.id, row.latest_revision)
            .await?;
        Ok(OperationView {
            id: OperationId(row.id),
            tool: ToolId(row.tool_id),
            operation: OperationIdentity {
                source: source(&row.source)?,
                name: row.name,
            },
            contract: row.contract.map(|c| contract(c.0)).transpose()?,
            contract_hash: row.contract_hash.map(contract_hash).transpose()?,
            latest,
        })
    }
}

impl Catalog for PgStore {
    async fn create_tenant(&self, name: &str) -> Db<TenantId> {
        let id = TenantId::random();
        db(
            sqlx::query("INSERT INTO tenants (id, name) VALUES ($1, $2)")
                .bind(id.as_uuid())
                .bind(name)
                .execute(&self.pool)
                .await,
        )?;
        Ok(id)
    }

    async fn create_tool(&self, tenant: TenantId, tool: &NewTool) -> Db<ToolId> {
        let id = ToolId::random();
        let result = sqlx::query(
            "INSERT INTO tools (tenant_id, id, name, kind, source_config, output_schema) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(tenant.as_uuid())
        .bind(id.as_uuid())
        .bind(&tool.name)
        .bind(tool.kind.as_str())
        .bind(Json(&tool.source_config))
        .bind(tool.output_schema.as_ref().map(Json))
        .execute(&self.pool)
        .await;
        match db(result) {
            Ok(_) => Ok(id),
            Err(StoreError::NotFound { .. }) => Err(StoreError::NotFound { entity: "tenant" }),
            Err(e) => Err(e),
        }
    }

    async fn upsert_operation(
        &self,
        tenant: TenantId,
        tool: ToolId,
        operation: &NewOperation,
    ) -> Db<OperationView> {
        let fallback: Option<(Option<Json<Value>>,)> = db(sqlx::query_as(
            "SELECT output_schema FROM tools WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(tool.as_uuid())
        .fetch_optional(&self.pool)
        .await)?;
        let Some((fallback,)) = fallback else {
            return Err(StoreError::NotFound { entity: "tool" });
        };
        let contract = effective_contract(operation, fallback.as_ref().map(|j| &j.0));
        let hash = contract
            .as_ref()
            .map(OperationContract::hash)
            .transpose()
            .map_err(|e| corrupt("contract", e))?;
        let row: OperationRow = db(sqlx::query_as(
            "INSERT INTO tool_operations (tenant_id, id, tool_id, source, name, description, \
                 input_schema, output_schema, contract, contract_hash) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
             ON CONFLICT (tool_id, name) DO UPDATE SET source = EXCLUDED.source, \
                 description = EXCLUDED.description, input_schema = EXCLUDED.input_schema, \
                 output_schema = EXCLUDED.output_schema, contract = EXCLUDED.contract, \
                 contract_hash = EXCLUDED.contract_hash, updated_at = now() \
             WHERE tool_operations.tenant_id = EXCLUDED.tenant_id \
             RETURNING id, tool_id, source, name, contract, contract_hash, latest_revision",
        )
        .bind(tenant.as_uuid())
        .bind(Uuid::new_v4())
        .bind(tool.as_uuid())
        .bind(operation.operation.source.as_str())
        .bind(&operation.operation.name)
        .bind(&operation.description)
        .bind(Json(&operation.input_schema))
        .bind(operation.output_schema.as_ref().map(Json))
        .bind(contract.as_ref().map(Json))
        .bind(hash.as_ref().map(|h| h.as_str().to_owned()))
        .fetch_one(&self.pool)
        .await)?;
        self.operation_view(tenant, row).await
    }

    async fn tool(&self, tenant: TenantId, tool: ToolId) -> Db<LibraryTool> {
        #[derive(sqlx::FromRow)]
        struct ToolRow {
            name: String,
            kind: String,
            source_config: Json<Value>,
            output_schema: Option<Json<Value>>,
        }
        let row: Option<ToolRow> = db(sqlx::query_as(
            "SELECT name, kind, source_config, output_schema FROM tools \
             WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(tool.as_uuid())
        .fetch_optional(&self.pool)
        .await)?;
        let Some(row) = row else {
            return Err(StoreError::NotFound { entity: "tool" });
        };
        let operations: Vec<OperationRow> = db(sqlx::query_as(
            "SELECT id, tool_id, source, name, contract, contract_hash, latest_revision \
             FROM tool_operations WHERE tenant_id = $1 AND tool_id = $2 ORDER BY name",
        )
        .bind(tenant.as_uuid())
        .bind(tool.as_uuid())
        .fetch_all(&self.pool)
        .await)?;
        let mut views = Vec::with_capacity(operations.len());
        for op in operations {
            views.push(self.operation_view(tenant, op).await?);
        }
        Ok(LibraryTool {
            id: tool,
            name: row.name,
            kind: ToolKind::parse(&row.kind).ok_or_else(|| corrupt("tool kind", &row.kind))?,
            source_config: row.source_config.0,
            output_schema: row.output_schema.map(|j| j.0),
            operations: views,
        })
    }

    async fn save_revision(
        &self,
        tenant: TenantId,
        operation: OperationId,
        save: &SaveRevision,
    ) -> Result<RevisionRecord, SaveRevisionError> {
        let mut tx = db(self.pool.begin().await)?;
        // The operation row lock serializes saves of this operation: the
        // hash comparison and the numbering below see no concurrent save.
        let locked: Option<LockedOperation> = db(sqlx::query_as(
            "SELECT tool_id, contract, contract_hash, latest_revision FROM tool_operations \
             WHERE tenant_id = $1 AND id = $2 FOR UPDATE",
        )
        .bind(tenant.as_uuid())
        .bind(operation.as_uuid())
        .fetch_optional(&mut *tx)
        .await)?;
        let Some((tool_id, current_contract, current_hash, latest)) = locked else {
            return Err(StoreError::NotFound {
                entity: "operation",
            }
            .into());
        };
        let current_contract = current_contract.map(|c| contract(c.0)).transpose()?;
        let current_hash = current_hash.map(contract_hash).transpose()?;
        let hash: DefinitionHash =
            check_revision(current_contract.as_ref(), current_hash.as_ref(), save)?;
        let row: RevisionRow = db(sqlx::query_as(concat!(
            "INSERT INTO tool_mock_revisions (tenant_id, tool_id, operation_id, revision, \
                 contract_hash, definition, definition_hash, author, provenance, instructions) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING ",
            revision_columns!()
        ))
        .bind(tenant.as_uuid())
        .bind(tool_id)
        .bind(operation.as_uuid())
        .bind(latest + 1)
        .bind(save.contract_hash.as_str())
        .bind(Json(&save.definition))
        .bind(hash.as_str())
        .bind(&save.author)
        .bind(save.provenance.as_str())
        .bind(save.provenance.instructions())
        .fetch_one(&mut *tx)
        .await)?;
        db(tx.commit().await)?;
        Ok(row.into_record()?)
    }

    async fn revision(
        &self,
        tenant: TenantId,
        operation: OperationId,
        revision: u32,
    ) -> Db<RevisionRecord> {
        let row: Option<RevisionRow> = db(sqlx::query_as(concat!(
            "SELECT ",
            revision_columns!(),
            " FROM tool_mock_revisions WHERE tenant_id = $1 AND operation_id = $2 AND revision = $3"
        ))
        .bind(tenant.as_uuid())
        .bind(operation.as_uuid())
        .bind(to_i32(revision)?)
        .fetch_optional(&self.pool)
        .await)?;
        row.ok_or(StoreError::NotFound { entity: "revision" })?
            .into_record()
    }

    async fn create_agent(&self, tenant: TenantId, name: &str, spec: &AgentSpec) -> Db<AgentId> {
        let id = AgentId::random();
        let result =
            sqlx::query("INSERT INTO agents (tenant_id, id, name, spec) VALUES ($1, $2, $3, $4)")
                .bind(tenant.as_uuid())
                .bind(id.as_uuid())
                .bind(name)
                .bind(Json(spec))
                .execute(&self.pool)
                .await;
        match db(result) {
            Ok(_) => Ok(id),
            Err(StoreError::NotFound { .. }) => Err(StoreError::NotFound { entity: "tenant" }),
            Err(e) => Err(e),
        }
    }

    async fn agent(&self, tenant: TenantId, agent: AgentId) -> Db<AgentRecord> {
        let row: Option<(String, Json<Value>)> = db(sqlx::query_as(
            "SELECT name, spec FROM agents WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(agent.as_uuid())
        .fetch_optional(&self.pool)
        .await)?;
        let (name, spec) = row.ok_or(StoreError::NotFound { entity: "agent" })?;
        Ok(AgentRecord {
            id: agent,
            name,
            spec: serde_json::from_value(spec.0).map_err(|e| corrupt("agent spec", e))?,
        })
    }
}

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
                toolmock_runtime::PinRef::Inline { .. } => Some(definition),
                toolmock_runtime::PinRef::Library { .. } => None,
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
        for attempt in &simulation.attempts {
            db(sqlx::query(
                "INSERT INTO attempts (tenant_id, id, simulation_id, test_case_id, number, \
                     lease_owner, lease_expires_at, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind(tenant.as_uuid())
            .bind(attempt.id.as_uuid())
            .bind(simulation.id.as_uuid())
            .bind(attempt.test_case.as_uuid())
            .bind(to_i32(attempt.number)?)
            .bind(&attempt.lease_owner)
            .bind(attempt.lease_expires_at)
            .bind(simulation.created_at)
            .execute(&mut *tx)
            .await)?;
            db(sqlx::query(
                "INSERT INTO attempt_state (attempt_id, tenant_id, state, version, updated_at) \
                 VALUES ($1, $2, $3, 0, $4)",
            )
            .bind(attempt.id.as_uuid())
            .bind(tenant.as_uuid())
            .bind(Json(&attempt.initial_state))
            .bind(simulation.created_at)
            .execute(&mut *tx)
            .await)?;
            db(sqlx::query(
                "INSERT INTO attempt_capabilities (token_hash, tenant_id, attempt_id, created_at) \
                 VALUES ($1, $2, $3, $4)",
            )
            .bind(&attempt.token_hash.as_bytes()[..])
            .bind(tenant.as_uuid())
            .bind(attempt.id.as_uuid())
            .bind(simulation.created_at)
            .execute(&mut *tx)
            .await)?;
        }
        db(tx.commit().await)
    }

    async fn simulation_pins(
        &self,
        tenant: TenantId,
        simulation: SimulationId,
    ) -> Db<SimulationPins> {
        let mode: Option<(String,)> = db(sqlx::query_as(
            "SELECT mode FROM simulations WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(simulation.as_uuid())
        .fetch_optional(&self.pool)
        .await)?;
        let (mode,) = mode.ok_or(StoreError::NotFound {
            entity: "simulation",
        })?;
        #[derive(sqlx::FromRow)]
        struct SimulationPinRow {
            tool_name: String,
            operation_name: String,
            #[sqlx(flatten)]
            pin: PinRow,
            contract: Option<Json<Value>>,
            definition: Option<Json<Value>>,
            revision_definition: Option<Json<Value>>,
            unpinned_reason: Option<String>,
        }
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
                PinTarget::Unpinned {
                    reason: row.unpinned_reason.unwrap_or_default(),
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

async fn rollback(tx: Transaction<'static, Postgres>) -> Db<()> {
    db(tx.rollback().await)
}

impl FixtureStore for PgStore {
    async fn apply_call<F>(
        &self,
        binding: &AttemptBinding,
        token: &TokenHash,
        now: DateTime<Utc>,
        step: F,
    ) -> Result<Applied, ApplyError>
    where
        F: FnOnce(&Map<String, Value>) -> Result<Step, CallError> + Send,
    {
        let mut tx = db(self.pool.begin().await)?;
        // The attempt's one state row, locked; the capability and the lease
        // are checked in the same statement.
        let locked: Option<LockedState> = db(sqlx::query_as(
            "SELECT s.state, s.version, \
                 (a.status = 'running' AND a.lease_expires_at > $4 AND c.revoked_at IS NULL) \
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
        .fetch_optional(&mut *tx)
        .await)?;
        let Some((Json(state), version, live)) = locked else {
            rollback(tx).await?;
            return Err(ApplyError::CapabilityRejected);
        };
        if !live {
            rollback(tx).await?;
            return Err(ApplyError::LeaseExpired);
        }
        let Step { updates, evidence } = match step(&state) {
            Ok(step) => step,
            Err(error) => {
                rollback(tx).await?;
                return Err(ApplyError::Call(error));
            }
        };
        let mut after = state.clone();
        for (key, value) in updates {
            after.insert(key, value);
        }
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
                 state_version_after, delay_ms, started_at, duration_us) \
             SELECT $1, attempt_id, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, \
                 $17, $3, $4 - 1, $4, $18, $19, $20 FROM updated",
        )
        .bind(binding.tenant.as_uuid())
        .bind(binding.attempt.as_uuid())
        .bind(Json(&after))
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
        .bind(Json(&state))
        .bind(to_i32(evidence.delay_ms)?)
        .bind(evidence.started_at)
        .bind(to_i64(evidence.duration_us)?)
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
            version_before,
            version_after,
            delay_ms: evidence.delay_ms,
        })
    }

    async fn state(&self, tenant: TenantId, attempt: AttemptId) -> Db<StateSnapshot> {
        let row: Option<(Json<Map<String, Value>>, i64)> = db(sqlx::query_as(
            "SELECT state, version FROM attempt_state WHERE tenant_id = $1 AND attempt_id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(attempt.as_uuid())
        .fetch_optional(&self.pool)
        .await)?;
        let (state, version) = row.ok_or(StoreError::NotFound { entity: "attempt" })?;
        Ok(StateSnapshot {
            state: state.0,
            version: to_u64(version, "state version")?,
        })
    }
}

impl EvidenceSink for PgStore {
    async fn record_tool_input_error(&self, record: &ToolInputErrorRecord) -> Db<()> {
        let pin = pin_columns(record.pin.as_ref())?;
        let result = sqlx::query(
            "INSERT INTO tool_input_errors (tenant_id, attempt_id, tool_name, operation_name, \
                 pin_kind, tool_id, operation_id, revision, definition_hash, arguments, code, \
                 message, path, violations, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
        )
        .bind(record.tenant.as_uuid())
        .bind(record.attempt.as_uuid())
        .bind(&record.tool)
        .bind(&record.operation)
        .bind(pin.kind)
        .bind(pin.tool_id)
        .bind(pin.operation_id)
        .bind(pin.revision)
        .bind(pin.definition_hash)
        .bind(Json(&record.arguments))
        .bind(&record.code)
        .bind(&record.message)
        .bind(record.path.as_deref())
        .bind(Json(&record.violations))
        .bind(record.at)
        .execute(&self.pool)
        .await;
        match db(result) {
            Ok(_) => Ok(()),
            Err(StoreError::NotFound { .. }) => Err(StoreError::NotFound { entity: "attempt" }),
            Err(e) => Err(e),
        }
    }

    async fn record_harness_error(&self, record: &HarnessErrorRecord) -> Db<()> {
        let pin = pin_columns(record.pin.as_ref())?;
        let mut tx = db(self.pool.begin().await)?;
        // The attempts row first (the lock finish_attempt takes), then the
        // insert, whose trigger marks the attempt in this transaction.
        let exists: Option<(Uuid,)> = db(sqlx::query_as(
            "SELECT id FROM attempts WHERE tenant_id = $1 AND id = $2 FOR NO KEY UPDATE",
        )
        .bind(record.tenant.as_uuid())
        .bind(record.attempt.as_uuid())
        .fetch_optional(&mut *tx)
        .await)?;
        if exists.is_none() {
            rollback(tx).await?;
            return Err(StoreError::NotFound { entity: "attempt" });
        }
        db(sqlx::query(
            "INSERT INTO harness_errors (tenant_id, attempt_id, tool_name, operation_name, \
                 pin_kind, tool_id, operation_id, revision, definition_hash, arguments, code, \
                 message, path, detail, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
        )
        .bind(record.tenant.as_uuid())
        .bind(record.attempt.as_uuid())
        .bind(record.tool.as_deref())
        .bind(record.operation.as_deref())
        .bind(pin.kind)
        .bind(pin.tool_id)
        .bind(pin.operation_id)
        .bind(pin.revision)
        .bind(pin.definition_hash)
        .bind(record.arguments.as_ref().map(Json))
        .bind(&record.code)
        .bind(&record.message)
        .bind(record.path.as_deref())
        .bind(Json(&record.detail))
        .bind(record.at)
        .execute(&mut *tx)
        .await)?;
        db(tx.commit().await)
    }

    async fn evidence(&self, tenant: TenantId, attempt: AttemptId) -> Db<Vec<EvidenceRecord>> {
        let rows: Vec<EvidenceRow> = self
            .attempt_rows(
                "SELECT attempt_id, tool_name, operation_name, pin_kind, tool_id, operation_id, \
                     revision, definition_hash, executor, variant, rule, arguments, result, \
                     state_before, state_after, state_version_before, state_version_after, \
                     delay_ms, started_at, duration_us \
                 FROM evidence WHERE tenant_id = $1 AND attempt_id = $2 \
                 ORDER BY state_version_after",
                tenant,
                attempt,
            )
            .await?;
        rows.into_iter().map(EvidenceRow::into_record).collect()
    }

    async fn tool_input_errors(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Db<Vec<ToolInputErrorRecord>> {
        let rows: Vec<ToolInputErrorRow> = self
            .attempt_rows(
                "SELECT tenant_id, attempt_id, tool_name, operation_name, pin_kind, tool_id, \
                     operation_id, revision, definition_hash, arguments, code, message, path, \
                     violations, created_at \
                 FROM tool_input_errors WHERE tenant_id = $1 AND attempt_id = $2 ORDER BY id",
                tenant,
                attempt,
            )
            .await?;
        rows.into_iter()
            .map(ToolInputErrorRow::into_record)
            .collect()
    }

    async fn harness_errors(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Db<Vec<HarnessErrorRecord>> {
        let rows: Vec<HarnessErrorRow> = self
            .attempt_rows(
                "SELECT tenant_id, attempt_id, tool_name, operation_name, pin_kind, tool_id, \
                     operation_id, revision, definition_hash, arguments, code, message, path, \
                     detail, created_at \
                 FROM harness_errors WHERE tenant_id = $1 AND attempt_id = $2 ORDER BY id",
                tenant,
                attempt,
            )
            .await?;
        rows.into_iter().map(HarnessErrorRow::into_record).collect()
    }
}

impl PgStore {
    /// The rows of one of an attempt's listings (`sql` binds the tenant as
    /// `$1` and the attempt as `$2`); "not found" when there are none because
    /// the attempt is not this tenant's.
    async fn attempt_rows<R>(
        &self,
        sql: &'static str,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Db<Vec<R>>
    where
        R: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin,
    {
        let rows: Vec<R> = db(sqlx::query_as(sql)
            .bind(tenant.as_uuid())
            .bind(attempt.as_uuid())
            .fetch_all(&self.pool)
            .await)?;
        self.require_attempt(tenant, attempt, rows.is_empty())
            .await?;
        Ok(rows)
    }

    /// An empty listing is "not found" when the attempt is not this tenant's.
    async fn require_attempt(&self, tenant: TenantId, attempt: AttemptId, empty: bool) -> Db<()> {
        if !empty {
            return Ok(());
        }
        let found: Option<(Uuid,)> = db(sqlx::query_as(
            "SELECT id FROM attempts WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(attempt.as_uuid())
        .fetch_optional(&self.pool)
        .await)?;
        found
            .map(|_| ())
            .ok_or(StoreError::NotFound { entity: "attempt" })
    }
}

impl AttemptStore for PgStore {
    async fn resolve_capability(
        &self,
        tenant: TenantId,
        token: &TokenHash,
        now: DateTime<Utc>,
    ) -> Db<CapabilityCheck> {
        let row: Option<(Uuid, Uuid, Json<Vec<VariantChoice>>, bool)> = db(sqlx::query_as(
            "SELECT a.id, a.simulation_id, t.variants, \
                 (a.status = 'running' AND a.lease_expires_at > $3 AND c.revoked_at IS NULL) \
             FROM attempt_capabilities c \
             JOIN attempts a ON a.tenant_id = c.tenant_id AND a.id = c.attempt_id \
             JOIN test_cases t ON t.tenant_id = a.tenant_id AND t.id = a.test_case_id \
             WHERE c.tenant_id = $1 AND c.token_hash = $2",
        )
        .bind(tenant.as_uuid())
        .bind(&token.as_bytes()[..])
        .bind(now)
        .fetch_optional(&self.pool)
        .await)?;
        let (attempt, simulation, variants, live) = row.ok_or(StoreError::NotFound {
            entity: "capability",
        })?;
        Ok(CapabilityCheck {
            binding: AttemptBinding {
                tenant,
                attempt: AttemptId(attempt),
                simulation: SimulationId(simulation),
                variants: variants.0,
            },
            live,
        })
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

    async fn finish_attempt(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        verdict: Verdict,
        at: DateTime<Utc>,
    ) -> Result<AttemptOutcome, FinishError> {
        let mut tx = db(self.pool.begin().await)?;
        let row: Option<(String, bool)> = db(sqlx::query_as(
            "SELECT status, has_harness_error FROM attempts \
             WHERE tenant_id = $1 AND id = $2 FOR UPDATE",
        )
        .bind(tenant.as_uuid())
        .bind(attempt.as_uuid())
        .fetch_optional(&mut *tx)
        .await)?;
        let Some((status, has_harness_error)) = row else {
            rollback(tx).await?;
            return Err(StoreError::NotFound { entity: "attempt" }.into());
        };
        if status != "running" {
            rollback(tx).await?;
            return Err(FinishError::AlreadyFinished);
        }
        let outcome = if has_harness_error {
            AttemptOutcome::HarnessError
        } else {
            verdict.outcome()
        };
        db(sqlx::query(
            "UPDATE attempts SET status = 'finished', finished_at = $3, \
                 outcome = CASE WHEN has_harness_error THEN 'harness_error' ELSE $4 END \
             WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(attempt.as_uuid())
        .bind(at)
        .bind(outcome.as_str())
        .execute(&mut *tx)
        .await)?;
        db(tx.commit().await)?;
        Ok(outcome)
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
        let (simulation, test_case, outcome, lease_owner, lease_expires_at, has_harness_error) =
            row.ok_or(StoreError::NotFound { entity: "attempt" })?;
        Ok(AttemptRecord {
            id: attempt,
            simulation: SimulationId(simulation),
            test_case: TestCaseId(test_case),
            outcome: outcome
                .map(|o| AttemptOutcome::parse(&o).ok_or_else(|| corrupt("outcome", &o)))
                .transpose()?,
            lease_owner,
            lease_expires_at,
            has_harness_error,
        })
    }
}
