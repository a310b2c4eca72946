//! What the tool testing routes answer: the testing view of a tool,
//! revisions, and inline checks.

use crate::error::ApiError;
use crate::generator::GenerateResult;
use serde::{Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;
use std::sync::Arc;
use toolmock_runtime::model::RevisionRecord;
use utoipa::ToSchema;
use uuid::Uuid;

/// A revision, without its definition.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RevisionSummary {
    /// 1, 2, 3… per operation.
    pub(crate) revision: u32,
    /// The contract hash it was saved against.
    pub(crate) contract_hash: String,
    /// The definition's hash.
    pub(crate) definition_hash: String,
    /// Who saved it (the token's subject).
    pub(crate) author: String,
    /// `authored` or `generated`.
    pub(crate) provenance: String,
    /// The generation instructions, for generated revisions.
    pub(crate) instructions: Option<String>,
    /// When.
    pub(crate) created_at: chrono::DateTime<chrono::Utc>,
}

/// A revision with its definition.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RevisionView {
    /// The tool.
    pub(crate) tool_id: Uuid,
    /// The operation.
    pub(crate) operation_id: Uuid,
    /// Number, hashes, author, time, provenance.
    #[serde(flatten)]
    pub(crate) summary: RevisionSummary,
    /// The definition document.
    #[schema(value_type = Object)]
    pub(crate) definition: Value,
}

/// One operation's testing view.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct OperationTesting {
    /// The operation's id (`operation_id` in requests).
    pub(crate) id: Uuid,
    /// Runtime name.
    pub(crate) name: String,
    /// `platform`, `mcp` or `custom`.
    pub(crate) source: String,
    /// `current`, `stale`, `missing` or `needs_output_schema`.
    pub(crate) status: String,
    /// The current contract (absent: needs an output schema).
    #[schema(value_type = Option<Object>)]
    pub(crate) contract: Option<Rendered>,
    /// Its hash.
    pub(crate) contract_hash: Option<String>,
    /// The latest revision.
    #[schema(value_type = Option<RevisionSummary>)]
    pub(crate) latest_revision: Option<Rendered>,
    /// For a stale operation: the contract diff (the schema crate's `diff`)
    /// from the contract the latest revision was saved against to the current one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub(crate) stale_diff: Option<Value>,
}

/// `GET /api/tools/{id}/testing`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ToolTesting {
    /// The tool.
    pub(crate) tool_id: Uuid,
    /// Its name.
    pub(crate) tool_name: String,
    /// Its operations.
    pub(crate) operations: Vec<OperationTesting>,
}

/// The outcome of `check`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct CheckResult {
    /// The definition passes.
    pub(crate) ok: bool,
    /// The contract checked against.
    pub(crate) contract_hash: String,
    /// Every problem: `{code, path, message}`.
    #[schema(value_type = Vec<Object>)]
    pub(crate) diagnostics: Value,
}

/// Either answer of `POST /api/tools/testing`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub(crate) enum InlineResult {
    /// For `check`.
    Check(CheckResult),
    /// For `generate`.
    Generate(GenerateResult),
}

pub(crate) fn revision_summary(record: &RevisionRecord) -> RevisionSummary {
    RevisionSummary {
        revision: record.revision,
        contract_hash: record.contract_hash.to_string(),
        definition_hash: record.definition_hash.to_string(),
        author: record.author.clone(),
        provenance: record.provenance.as_str().to_owned(),
        instructions: record.provenance.instructions().map(str::to_owned),
        created_at: record.created_at,
    }
}

pub(crate) fn revision_view(record: RevisionRecord) -> RevisionView {
    RevisionView {
        tool_id: record.tool.as_uuid(),
        operation_id: record.operation.as_uuid(),
        summary: revision_summary(&record),
        definition: record.definition,
    }
}

/// A piece of JSON rendered once and written as it is into every answer.
#[derive(Debug, Clone)]
pub(crate) struct Rendered(Arc<Box<RawValue>>);

impl Rendered {
    /// `value` serialized once.
    pub(crate) fn new<T: Serialize>(value: &T) -> Result<Self, ApiError> {
        let internal = |e: serde_json::Error| ApiError::Internal(e.to_string());
        let text = serde_json::to_string(value).map_err(internal)?;
        Ok(Self(Arc::new(
            RawValue::from_string(text).map_err(internal)?,
        )))
    }

    /// The JSON text.
    pub(crate) fn text(&self) -> &str {
        self.0.get()
    }
}

impl Serialize for Rendered {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}
