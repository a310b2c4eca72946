//! Queries the HTTP API needs beyond the runtime's traits: tenants named by
//! tokens, the attempt a capability hash belongs to, a page of tools, and an
//! operation's revision history in one query. Every one filters by tenant
//! except `capability_owner`, whose token is the only key a caller has.

use super::{Db, PgStore, db};
use crate::rows::{RevisionRow, contract, corrupt};
use serde_json::Value;
use sqlx::types::Json;
use toolmock_contract::{ContractHash, OperationContract};
use toolmock_runtime::model::{
    AttemptId, OperationId, RevisionRecord, TenantId, TokenHash, ToolId, ToolKind,
};
use uuid::Uuid;

/// One tool of a listing, with how many of its operations are in each
/// testing status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolListing {
    /// Its id.
    pub id: ToolId,
    /// Its name (the listing's order).
    pub name: String,
    /// Platform, MCP or custom.
    pub kind: ToolKind,
    /// Operations whose latest revision is current.
    pub current: u32,
    /// Operations whose latest revision is stale.
    pub stale: u32,
    /// Operations without a revision.
    pub missing: u32,
    /// Operations without an output schema.
    pub needs_output_schema: u32,
}

#[derive(sqlx::FromRow)]
struct ListingRow {
    id: Uuid,
    name: String,
    kind: String,
    current: i64,
    stale: i64,
    missing: i64,
    needs_output_schema: i64,
}

fn count(value: i64) -> Db<u32> {
    u32::try_from(value).map_err(|e| corrupt("count", e))
}

impl PgStore {
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

    /// The tenant and attempt a capability hash belongs to, whatever its
    /// lease says (the dispatcher checks that and records the refusal).
    pub async fn capability_owner(&self, token: &TokenHash) -> Db<Option<(TenantId, AttemptId)>> {
        let row: Option<(Uuid, Uuid)> = db(sqlx::query_as(
            "SELECT tenant_id, attempt_id FROM attempt_capabilities WHERE token_hash = $1",
        )
        .bind(token.as_bytes().as_slice())
        .fetch_optional(self.pool())
        .await)?;
        Ok(row.map(|(tenant, attempt)| (TenantId(tenant), AttemptId(attempt))))
    }

    /// Up to `limit` tools of the tenant in name order, after the name
    /// `after` (keyset pagination: stable while tools are added).
    pub async fn list_tools(
        &self,
        tenant: TenantId,
        after: Option<&str>,
        limit: u32,
    ) -> Db<Vec<ToolListing>> {
        let rows: Vec<ListingRow> = db(sqlx::query_as(
            "SELECT t.id, t.name, t.kind, \
                 count(o.id) FILTER (WHERE o.contract_hash IS NOT NULL AND r.contract_hash = o.contract_hash) AS current, \
                 count(o.id) FILTER (WHERE o.contract_hash IS NOT NULL AND r.contract_hash <> o.contract_hash) AS stale, \
                 count(o.id) FILTER (WHERE o.contract_hash IS NOT NULL AND o.latest_revision = 0) AS missing, \
                 count(o.id) FILTER (WHERE o.contract_hash IS NULL) AS needs_output_schema \
             FROM tools t \
             LEFT JOIN tool_operations o ON o.tenant_id = t.tenant_id AND o.tool_id = t.id \
             LEFT JOIN tool_mock_revisions r ON r.operation_id = o.id AND r.revision = o.latest_revision \
             WHERE t.tenant_id = $1 AND ($2::text IS NULL OR t.name > $2) \
             GROUP BY t.id, t.name, t.kind ORDER BY t.name LIMIT $3",
        )
        .bind(tenant.as_uuid())
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await)?;
        rows.into_iter()
            .map(|row| {
                Ok(ToolListing {
                    id: ToolId(row.id),
                    kind: ToolKind::parse(&row.kind)
                        .ok_or_else(|| corrupt("tool kind", &row.kind))?,
                    name: row.name,
                    current: count(row.current)?,
                    stale: count(row.stale)?,
                    missing: count(row.missing)?,
                    needs_output_schema: count(row.needs_output_schema)?,
                })
            })
            .collect()
    }

    /// The contract an operation had when its hash was `hash` (kept by the
    /// `operation_contracts` trigger), if it ever had that hash.
    pub async fn contract_at(
        &self,
        tenant: TenantId,
        operation: OperationId,
        hash: &ContractHash,
    ) -> Db<Option<OperationContract>> {
        let row: Option<Json<Value>> = db(sqlx::query_scalar(
            "SELECT contract FROM operation_contracts \
             WHERE tenant_id = $1 AND operation_id = $2 AND contract_hash = $3",
        )
        .bind(tenant.as_uuid())
        .bind(operation.as_uuid())
        .bind(hash.as_str())
        .fetch_optional(self.pool())
        .await)?;
        row.map(|json| contract(json.0)).transpose()
    }

    /// Every revision of an operation of `tool`, newest first; not found
    /// when the operation is not this tenant's or not that tool's.
    pub async fn revisions(
        &self,
        tenant: TenantId,
        tool: ToolId,
        operation: OperationId,
    ) -> Db<Vec<RevisionRecord>> {
        let exists: Option<Uuid> = db(sqlx::query_scalar(
            "SELECT id FROM tool_operations WHERE tenant_id = $1 AND tool_id = $2 AND id = $3",
        )
        .bind(tenant.as_uuid())
        .bind(tool.as_uuid())
        .bind(operation.as_uuid())
        .fetch_optional(self.pool())
        .await)?;
        if exists.is_none() {
            return Err(toolmock_runtime::error::StoreError::NotFound {
                entity: "operation",
            });
        }
        let rows: Vec<RevisionRow> = db(sqlx::query_as(
            "SELECT tool_id, operation_id, revision, contract_hash, definition, definition_hash, \
                 author, provenance, instructions, created_at \
             FROM tool_mock_revisions WHERE tenant_id = $1 AND operation_id = $2 \
             ORDER BY revision DESC",
        )
        .bind(tenant.as_uuid())
        .bind(operation.as_uuid())
        .fetch_all(self.pool())
        .await)?;
        rows.into_iter().map(RevisionRow::into_record).collect()
    }
}
