//! What the tool routes answer: tools, their operations, pages of tools and
//! what an update changed.

use crate::error::ApiError;
use serde::Serialize;
use serde_json::Value;
use toolmock_contract::{OperationContract, OperationSource};
use toolmock_runtime::model::{LibraryTool, OperationView};
use utoipa::ToSchema;
use uuid::Uuid;

/// An operation of a tool, briefly.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct OperationSummary {
    /// The operation's id (`operation_id` in the testing requests).
    pub(crate) id: Uuid,
    /// Runtime name.
    pub(crate) name: String,
    /// `platform`, `mcp` or `custom`.
    pub(crate) source: String,
    /// `current`, `stale`, `missing` or `needs_output_schema`.
    pub(crate) status: String,
    /// The current contract hash (absent: needs an output schema).
    pub(crate) contract_hash: Option<String>,
    /// The latest revision's number.
    pub(crate) latest_revision: Option<u32>,
    /// The latest verification's verdict on this mock (its latest
    /// revision), when one checked it: `diverged` marks a mock that no
    /// longer tells the truth about the real tool (docs/verify.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) verification: Option<super::verifications::VerificationMarkView>,
}

/// A library tool.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ToolView {
    /// Its id.
    pub(crate) id: Uuid,
    /// Its name.
    pub(crate) name: String,
    /// `platform`, `mcp` or `custom`.
    pub(crate) kind: String,
    /// The fallback output schema.
    #[schema(value_type = Option<Object>)]
    pub(crate) output_schema: Option<Value>,
    /// Its operations, by name.
    pub(crate) operations: Vec<OperationSummary>,
}

/// An operation whose latest revision an update made stale.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct StaleOperation {
    /// The operation's id.
    pub(crate) operation_id: Uuid,
    /// Runtime name.
    pub(crate) name: String,
    /// The schema crate's contract diff (old → new).
    #[schema(value_type = Object)]
    pub(crate) diff: Value,
}

/// What an update did.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct UpdatedTool {
    /// The tool after the update.
    pub(crate) tool: ToolView,
    /// Operations that were current and are now stale.
    pub(crate) stale: Vec<StaleOperation>,
    /// Operations the source no longer lists (kept, with their revisions).
    pub(crate) unlisted: Vec<String>,
}

pub(crate) fn tool_view(tool: &LibraryTool) -> ToolView {
    ToolView {
        id: tool.id.as_uuid(),
        name: tool.name.clone(),
        kind: tool.kind.as_str().to_owned(),
        output_schema: tool.output_schema.clone(),
        operations: tool.operations.iter().map(summary).collect(),
    }
}

pub(crate) fn summary(op: &OperationView) -> OperationSummary {
    OperationSummary {
        id: op.id.as_uuid(),
        name: op.operation.name.clone(),
        source: source_name(op.operation.source).to_owned(),
        status: op.status().as_str().to_owned(),
        contract_hash: op.contract_hash.as_ref().map(ToString::to_string),
        latest_revision: op.latest.as_ref().map(|r| r.revision),
        verification: None,
    }
}

/// `view` with each operation's mark: the latest verdict, when it is about
/// the operation's latest revision (a verdict on an older mock is history).
pub(crate) fn marked(
    mut view: ToolView,
    tool: &LibraryTool,
    marks: &[toolmock_store::VerificationMark],
) -> ToolView {
    for (summary, op) in view.operations.iter_mut().zip(&tool.operations) {
        let latest = op
            .latest
            .as_ref()
            .and_then(|l| i32::try_from(l.revision).ok());
        summary.verification = marks
            .iter()
            .find(|m| m.operation == op.id && m.revision == latest)
            .map(super::verifications::mark_view);
    }
    view
}

pub(crate) fn source_name(source: OperationSource) -> &'static str {
    match source {
        OperationSource::Platform => "platform",
        OperationSource::Mcp => "mcp",
        OperationSource::Custom => "custom",
    }
}

/// One tool of a page.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ToolListItem {
    /// Its id.
    pub(crate) id: Uuid,
    /// Its name.
    pub(crate) name: String,
    /// `platform`, `mcp` or `custom`.
    pub(crate) kind: String,
    /// How many operations are in each testing status.
    pub(crate) current: u32,
    /// Stale operations (their latest revision answers an older contract).
    pub(crate) stale: u32,
    /// Operations without a revision.
    pub(crate) missing: u32,
    /// Operations without an output schema.
    pub(crate) needs_output_schema: u32,
}

/// A page of tools.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ToolPage {
    /// The tools, by name.
    pub(crate) tools: Vec<ToolListItem>,
    /// Pass as `after` for the next page; absent on the last page.
    pub(crate) next: Option<String>,
}

pub(crate) fn contract_diff(
    old: Option<&OperationContract>,
    new: Option<&OperationContract>,
) -> Result<Value, ApiError> {
    let (Some(old), Some(new)) = (old, new) else {
        return Ok(Value::Null);
    };
    let diff = toolmock_schema::diff(old, new).map_err(|e| ApiError::Internal(e.to_string()))?;
    serde_json::to_value(diff).map_err(|e| ApiError::Internal(e.to_string()))
}
