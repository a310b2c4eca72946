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
        let contract = effective_contract(operation, fallback.output_schema.as_ref().map(|j| &j.0));
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
