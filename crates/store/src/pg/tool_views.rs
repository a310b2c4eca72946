//! Read models of the tenant's tools beyond the runtime's traits: a page of
//! tools with their status counts, an operation's revision history in one
//! query, and the pieces of a tool's testing view (the fingerprint of its
//! index, the index, then only the contracts and revisions a caller has not
//! kept, each in one query for all operations). Every one filters by
//! tenant.

use super::{Db, PgStore, db};
use crate::rows::{RevisionRow, contract, contract_hash, corrupt, definition_hash, to_u32};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;
use toolmock_contract::{
    ContractHash, DefinitionHash, OperationContract, OperationIdentity, OperationSource,
};
use toolmock_runtime::error::StoreError;
use toolmock_runtime::model::{
    OperationId, Provenance, RevisionRecord, TenantId, ToolId, ToolKind,
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

/// A tool's testing index ([`PgStore::testing_index`]): what every
/// operation's testing view depends on, without the contracts and revisions
/// themselves, which an operation's id with these fields names exactly.
#[derive(Debug, Clone, PartialEq)]
pub struct TestingIndex {
    /// The tool's name.
    pub name: String,
    /// Its operations, by name.
    pub operations: Vec<IndexedOperation>,
    /// The index's fingerprint, read in the same statement: equal
    /// fingerprints, equal indexes ([`PgStore::testing_fingerprint`]).
    pub fingerprint: String,
}

/// One operation of a [`TestingIndex`].
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedOperation {
    /// Its id.
    pub id: OperationId,
    /// Source and runtime name.
    pub operation: OperationIdentity,
    /// The current contract's hash (`None`: needs an output schema).
    pub contract_hash: Option<ContractHash>,
    /// When the operation row's contract was last written: with the id and
    /// the hash, the key of the stored contract ([`PgStore::current_contracts`]).
    pub updated_at: DateTime<Utc>,
    /// Its latest revision's number, 0 when it has none. Revisions are
    /// append-only: (id, number) names one forever.
    pub latest_revision: u32,
}

/// An operation's current contract as stored ([`PgStore::current_contracts`]).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredContract {
    /// The operation.
    pub operation: OperationId,
    /// The hash (`None`: needs an output schema).
    pub contract_hash: Option<ContractHash>,
    /// As in [`IndexedOperation::updated_at`].
    pub updated_at: DateTime<Utc>,
    /// The contract.
    pub contract: Option<OperationContract>,
}

/// A revision without its definition ([`PgStore::revision_summaries`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RevisionSummary {
    /// The operation.
    pub operation: OperationId,
    /// 1, 2, 3… per operation.
    pub revision: u32,
    /// The contract hash it was saved against.
    pub contract_hash: ContractHash,
    /// The definition's hash.
    pub definition_hash: DefinitionHash,
    /// Who saved it.
    pub author: String,
    /// Authored or generated.
    pub provenance: Provenance,
    /// When.
    pub created_at: DateTime<Utc>,
}

/// A row of the testing index, read by position (a per-request query of
/// one row per operation: positions spare a lookup by name per column).
type IndexRow = (
    String,
    String,
    Option<Uuid>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<DateTime<Utc>>,
    Option<i32>,
);

/// The SQL of a tool's testing-index fingerprint (`$1` the tenant, `$2` the
/// tool; NULL when the tool is not the tenant's): the transaction ids that
/// wrote the tool's row and each of its operations' rows, in name order.
/// Every insert or update of a row gives it the writing transaction's id,
/// which no earlier committed version of the row holds (32-bit ids come
/// round again only after about four billion transactions, and then only
/// the one same id would collide), and a deleted or added operation changes
/// the list: equal fingerprints, equal indexes. It costs PostgreSQL little
/// more than reading the operations' keys (a short list of numbers, nothing
/// of the index's contents, nothing hashed).
macro_rules! testing_fingerprint {
    () => {
        "(SELECT t.xmin::text || ':' || coalesce(string_agg(o.xmin::text, ',' ORDER BY o.name), '') \
         FROM tools t \
         LEFT JOIN tool_operations o ON o.tenant_id = t.tenant_id AND o.tool_id = t.id \
         WHERE t.tenant_id = $1 AND t.id = $2 GROUP BY t.id)"
    };
}

/// An operation's id, contract hash, `updated_at` and contract.
type ContractRow = (Uuid, Option<String>, DateTime<Utc>, Option<Json<Value>>);

#[derive(sqlx::FromRow)]
struct SummaryRow {
    operation_id: Uuid,
    revision: i32,
    contract_hash: String,
    definition_hash: String,
    author: String,
    provenance: String,
    instructions: Option<String>,
    created_at: DateTime<Utc>,
}

fn operation_source(text: &str) -> Db<OperationSource> {
    match text {
        "platform" => Ok(OperationSource::Platform),
        "mcp" => Ok(OperationSource::Mcp),
        "custom" => Ok(OperationSource::Custom),
        other => Err(corrupt("operation source", other)),
    }
}

fn count(value: i64) -> Db<u32> {
    u32::try_from(value).map_err(|e| corrupt("count", e))
}

impl PgStore {
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

    /// A tool's testing index, in one query: not found when the tool is not
    /// this tenant's.
    pub async fn testing_index(&self, tenant: TenantId, tool: ToolId) -> Db<TestingIndex> {
        let rows: Vec<IndexRow> = db(sqlx::query_as(concat!(
            "SELECT t.name, ",
            testing_fingerprint!(),
            ", o.id, o.source, o.name, o.contract_hash, o.updated_at, o.latest_revision \
             FROM tools t \
             LEFT JOIN tool_operations o ON o.tenant_id = t.tenant_id AND o.tool_id = t.id \
             WHERE t.tenant_id = $1 AND t.id = $2 ORDER BY o.name",
        ))
        .bind(tenant.as_uuid())
        .bind(tool.as_uuid())
        .fetch_all(self.pool())
        .await)?;
        let (tool_name, fingerprint) = rows
            .first()
            .map(|row| (row.0.clone(), row.1.clone()))
            .ok_or(StoreError::NotFound { entity: "tool" })?;
        let mut operations = Vec::with_capacity(rows.len());
        for (_, _, id, source, name, hash, updated_at, latest) in rows {
            // A tool without operations is one row of NULLs.
            let (Some(id), Some(source), Some(name), Some(updated_at), Some(latest)) =
                (id, source, name, updated_at, latest)
            else {
                continue;
            };
            operations.push(IndexedOperation {
                id: OperationId(id),
                operation: OperationIdentity {
                    source: operation_source(&source)?,
                    name,
                },
                contract_hash: hash.map(contract_hash).transpose()?,
                updated_at,
                latest_revision: to_u32(latest, "revision")?,
            });
        }
        Ok(TestingIndex {
            name: tool_name,
            operations,
            fingerprint,
        })
    }

    /// The fingerprint of a tool's testing index alone (one row, whatever
    /// the number of operations): what tells a kept testing view from a
    /// stale one. Not found when the tool is not this tenant's.
    pub async fn testing_fingerprint(&self, tenant: TenantId, tool: ToolId) -> Db<String> {
        let fingerprint: Option<String> = db(sqlx::query_scalar(concat!(
            "SELECT ",
            testing_fingerprint!()
        ))
        .bind(tenant.as_uuid())
        .bind(tool.as_uuid())
        .fetch_one(self.pool())
        .await)?;
        fingerprint.ok_or(StoreError::NotFound { entity: "tool" })
    }

    /// The current contracts of these operations of the tenant, in one query.
    pub async fn current_contracts(
        &self,
        tenant: TenantId,
        operations: &[OperationId],
    ) -> Db<Vec<StoredContract>> {
        let ids: Vec<Uuid> = operations.iter().map(OperationId::as_uuid).collect();
        let rows: Vec<ContractRow> = db(sqlx::query_as(
            "SELECT id, contract_hash, updated_at, contract FROM tool_operations \
                 WHERE tenant_id = $1 AND id = ANY($2)",
        )
        .bind(tenant.as_uuid())
        .bind(&ids)
        .fetch_all(self.pool())
        .await)?;
        rows.into_iter()
            .map(|(id, hash, updated_at, contract)| {
                Ok(StoredContract {
                    operation: OperationId(id),
                    contract_hash: hash.map(contract_hash).transpose()?,
                    updated_at,
                    contract: contract.map(|c| crate::rows::contract(c.0)).transpose()?,
                })
            })
            .collect()
    }

    /// These revisions of the tenant's operations, without their
    /// definitions, in one query (absent ones are left out).
    pub async fn revision_summaries(
        &self,
        tenant: TenantId,
        revisions: &[(OperationId, u32)],
    ) -> Db<Vec<RevisionSummary>> {
        let ids: Vec<Uuid> = revisions.iter().map(|(id, _)| id.as_uuid()).collect();
        let numbers = revisions
            .iter()
            .map(|(_, n)| crate::rows::to_i32(*n))
            .collect::<Db<Vec<i32>>>()?;
        let rows: Vec<SummaryRow> = db(sqlx::query_as(
            "SELECT r.operation_id, r.revision, r.contract_hash, r.definition_hash, r.author, \
                 r.provenance, r.instructions, r.created_at \
             FROM unnest($2::uuid[], $3::integer[]) AS k (operation_id, revision) \
             JOIN tool_mock_revisions r ON r.tenant_id = $1 \
                 AND r.operation_id = k.operation_id AND r.revision = k.revision",
        )
        .bind(tenant.as_uuid())
        .bind(&ids)
        .bind(&numbers)
        .fetch_all(self.pool())
        .await)?;
        rows.into_iter()
            .map(|row| {
                Ok(RevisionSummary {
                    operation: OperationId(row.operation_id),
                    revision: to_u32(row.revision, "revision")?,
                    contract_hash: contract_hash(row.contract_hash)?,
                    definition_hash: definition_hash(row.definition_hash)?,
                    author: row.author,
                    provenance: match row.provenance.as_str() {
                        "authored" => Provenance::Authored,
                        "generated" => Provenance::Generated {
                            instructions: row.instructions,
                        },
                        other => return Err(corrupt("provenance", other)),
                    },
                    created_at: row.created_at,
                })
            })
            .collect()
    }

    /// For each (operation, hash), the contract the operation had when its
    /// hash was that one (see [`PgStore::contract_at`]), in one query; pairs
    /// the operation never had are left out.
    pub async fn contracts_at(
        &self,
        tenant: TenantId,
        pairs: &[(OperationId, ContractHash)],
    ) -> Db<Vec<(OperationId, ContractHash, OperationContract)>> {
        let ids: Vec<Uuid> = pairs.iter().map(|(id, _)| id.as_uuid()).collect();
        let hashes: Vec<&str> = pairs.iter().map(|(_, h)| h.as_str()).collect();
        let rows: Vec<(Uuid, String, Json<Value>)> = db(sqlx::query_as(
            "SELECT c.operation_id, c.contract_hash, c.contract \
             FROM unnest($2::uuid[], $3::text[]) AS k (operation_id, contract_hash) \
             JOIN operation_contracts c ON c.tenant_id = $1 \
                 AND c.operation_id = k.operation_id AND c.contract_hash = k.contract_hash",
        )
        .bind(tenant.as_uuid())
        .bind(&ids)
        .bind(&hashes)
        .fetch_all(self.pool())
        .await)?;
        rows.into_iter()
            .map(|(id, hash, json)| Ok((OperationId(id), contract_hash(hash)?, contract(json.0)?)))
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
            return Err(StoreError::NotFound {
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
