//! `Catalog`: tenants, library tools, operations, revisions, agents.

use super::{Db, PgStore, db};
use crate::rows::*;
use sqlx::types::Json;
use toolmock_contract::{DefinitionHash, OperationContract, OperationIdentity, OperationSource};
use toolmock_runtime::backend::*;
use toolmock_runtime::error::*;
use toolmock_runtime::model::*;
use uuid::Uuid;

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

impl PgStore {
    /// The tenant's agents of this name, oldest first (names are not unique:
    /// the seed reuses the oldest).
    pub async fn agents_named(&self, tenant: TenantId, name: &str) -> Db<Vec<AgentId>> {
        let ids: Vec<Uuid> = db(sqlx::query_scalar(
            "SELECT id FROM agents WHERE tenant_id = $1 AND name = $2 ORDER BY created_at, id",
        )
        .bind(tenant.as_uuid())
        .bind(name)
        .fetch_all(self.pool())
        .await)?;
        Ok(ids.into_iter().map(AgentId).collect())
    }

    /// Creates the tenant with this id unless it exists (tenants come from
    /// tokens, not from a sign-up step).
    pub async fn ensure_tenant(&self, tenant: TenantId, name: &str) -> Db<()> {
        db(sqlx::query(
            "INSERT INTO tenants (id, name) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING",
        )
        .bind(tenant.as_uuid())
        .bind(name)
        .execute(self.pool())
        .await)?;
        Ok(())
    }

    /// The view of an operation row without a revision (just written).
    async fn operation_view(&self, tenant: TenantId, row: OperationRow) -> Db<OperationView> {
        let latest = if row.latest_revision == 0 {
            None
        } else {
            let found: Option<RevisionRow> = db(sqlx::query_as(concat!(
                "SELECT ",
                revision_columns!(),
                " FROM tool_mock_revisions WHERE tenant_id = $1 AND operation_id = $2 AND revision = $3"
            ))
            .bind(tenant.as_uuid())
            .bind(row.id)
            .bind(row.latest_revision)
            .fetch_optional(&self.pool)
            .await)?;
            found.map(RevisionRow::into_record).transpose()?
        };
        operation_view(row, latest)
    }
}

fn operation_view(row: OperationRow, latest: Option<RevisionRecord>) -> Db<OperationView> {
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

/// An operation row with its latest revision, when it has one (one row of
/// the join that reads a tool's operations in one query).
#[derive(sqlx::FromRow)]
struct OperationWithLatestRow {
    #[sqlx(flatten)]
    operation: OperationRow,
    r_revision: Option<i32>,
    r_contract_hash: Option<String>,
    r_definition: Option<Json<serde_json::Value>>,
    r_definition_hash: Option<String>,
    r_author: Option<String>,
    r_provenance: Option<String>,
    r_instructions: Option<String>,
    r_created_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl OperationWithLatestRow {
    fn into_view(self) -> Db<OperationView> {
        let latest = match (
            self.r_revision,
            self.r_contract_hash,
            self.r_definition,
            self.r_definition_hash,
            self.r_author,
            self.r_provenance,
            self.r_created_at,
        ) {
            (
                Some(revision),
                Some(contract_hash),
                Some(definition),
                Some(definition_hash),
                Some(author),
                Some(provenance),
                Some(created_at),
            ) => Some(
                RevisionRow {
                    tool_id: self.operation.tool_id,
                    operation_id: self.operation.id,
                    revision,
                    contract_hash,
                    definition,
                    definition_hash,
                    author,
                    provenance,
                    instructions: self.r_instructions,
                    created_at,
                }
                .into_record()?,
            ),
            // No revision row joined (the columns are NOT NULL): none saved.
            _ => None,
        };
        operation_view(self.operation, latest)
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
        let fallback: Option<ToolFallbackRow> = db(sqlx::query_as(
            "SELECT output_schema FROM tools WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(tool.as_uuid())
        .fetch_optional(&self.pool)
        .await)?;
        let Some(fallback) = fallback else {
            return Err(StoreError::NotFound { entity: "tool" });
        };
        let contract = operation.effective_contract(fallback.output_schema.as_ref().map(|j| &j.0));
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
             WHERE tool_operations.tenant_id = $1 \
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
        // Every operation with its latest revision in one query (not one
        // query per operation).
        let operations: Vec<OperationWithLatestRow> = db(sqlx::query_as(
            "SELECT o.id, o.tool_id, o.source, o.name, o.contract, o.contract_hash, \
                 o.latest_revision, r.revision AS r_revision, r.contract_hash AS r_contract_hash, \
                 r.definition AS r_definition, r.definition_hash AS r_definition_hash, \
                 r.author AS r_author, r.provenance AS r_provenance, \
                 r.instructions AS r_instructions, r.created_at AS r_created_at \
             FROM tool_operations o \
             LEFT JOIN tool_mock_revisions r ON r.tenant_id = o.tenant_id \
                 AND r.operation_id = o.id AND r.revision = o.latest_revision \
             WHERE o.tenant_id = $1 AND o.tool_id = $2 ORDER BY o.name",
        )
        .bind(tenant.as_uuid())
        .bind(tool.as_uuid())
        .fetch_all(&self.pool)
        .await)?;
        let views = operations
            .into_iter()
            .map(OperationWithLatestRow::into_view)
            .collect::<Db<Vec<_>>>()?;
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
        let locked: Option<LockedOperationRow> = db(sqlx::query_as(
            "SELECT tool_id, contract, contract_hash, latest_revision FROM tool_operations \
             WHERE tenant_id = $1 AND id = $2 FOR UPDATE",
        )
        .bind(tenant.as_uuid())
        .bind(operation.as_uuid())
        .fetch_optional(&mut *tx)
        .await)?;
        let Some(LockedOperationRow {
            tool_id,
            contract: current_contract,
            contract_hash: current_hash,
            latest_revision: latest,
        }) = locked
        else {
            return Err(StoreError::NotFound {
                entity: "operation",
            }
            .into());
        };
        let current_contract = current_contract.map(|c| contract(c.0)).transpose()?;
        let current_hash = current_hash.map(contract_hash).transpose()?;
        let hash: DefinitionHash = save.check(current_contract.as_ref(), current_hash.as_ref())?;
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
        let row: Option<AgentRow> = db(sqlx::query_as(
            "SELECT name, spec FROM agents WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(agent.as_uuid())
        .fetch_optional(&self.pool)
        .await)?;
        let AgentRow { name, spec } = row.ok_or(StoreError::NotFound { entity: "agent" })?;
        Ok(AgentRecord {
            id: agent,
            name,
            spec: serde_json::from_value(spec.0).map_err(|e| corrupt("agent spec", e))?,
        })
    }
}
