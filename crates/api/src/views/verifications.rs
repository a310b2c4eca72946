//! What the verification routes answer: a tool's settings and schedule,
//! its verifications, and what one found per operation (docs/verify.md).

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use toolmock_runtime::model::LibraryTool;
use toolmock_store::{
    VerificationMark, VerificationRecord, VerificationResult, VerificationSettings,
};
use utoipa::ToSchema;
use uuid::Uuid;

/// A tool's verification settings and schedule.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SettingsView {
    /// The tool.
    pub(crate) tool_id: Uuid,
    /// Whether an operator set them (otherwise: the defaults, nothing safe).
    pub(crate) configured: bool,
    /// `{verify, sandbox_url?, endpoints?}` as set.
    #[schema(value_type = Object)]
    pub(crate) settings: Value,
    /// The schedule (absent: only on request).
    pub(crate) every_seconds: Option<i32>,
    /// When the schedule queues the next one.
    pub(crate) next_due_at: Option<DateTime<Utc>>,
    /// Who set them.
    pub(crate) updated_by: Option<String>,
    /// When.
    pub(crate) updated_at: Option<DateTime<Utc>>,
}

pub(crate) fn settings_view(tool: Uuid, found: Option<VerificationSettings>) -> SettingsView {
    match found {
        Some(s) => SettingsView {
            tool_id: tool,
            configured: true,
            settings: s.settings,
            every_seconds: s.every_seconds,
            next_due_at: s.next_due_at,
            updated_by: Some(s.updated_by),
            updated_at: Some(s.updated_at),
        },
        None => SettingsView {
            tool_id: tool,
            configured: false,
            settings: serde_json::json!({"verify": {}}),
            every_seconds: None,
            next_due_at: None,
            updated_by: None,
            updated_at: None,
        },
    }
}

/// What a verification found for one operation.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ResultView {
    /// The operation's id.
    pub(crate) operation_id: Uuid,
    /// Its runtime name.
    pub(crate) operation: String,
    /// The revision whose mock was checked (absent: no mock).
    pub(crate) revision: Option<i32>,
    /// Its definition hash.
    pub(crate) definition_hash: Option<String>,
    /// The contract it was checked against.
    pub(crate) contract_hash: String,
    /// `diverged`, `drifted`, `failed`, `agreed` or `unverified`.
    pub(crate) verdict: String,
    /// How many divergences its checks found.
    pub(crate) divergences: i32,
    /// The operation's report (`toolmock verify --json`'s
    /// `tools[].operations[]`): the drift and every check with its
    /// divergences by JSON pointer.
    #[schema(value_type = Object)]
    pub(crate) report: Value,
}

/// One verification.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct VerificationView {
    /// Its id.
    pub(crate) id: Uuid,
    /// The tool.
    pub(crate) tool_id: Uuid,
    /// Who asked (a token's subject), or `schedule`.
    pub(crate) requested_by: String,
    /// `queued`, `running`, `finished` or `failed`.
    pub(crate) status: String,
    /// When it was queued.
    pub(crate) queued_at: DateTime<Utc>,
    /// When a worker last claimed it.
    pub(crate) started_at: Option<DateTime<Utc>>,
    /// When it finished or failed.
    pub(crate) finished_at: Option<DateTime<Utc>>,
    /// Finished: nothing drifted, diverged or failed.
    pub(crate) ok: Option<bool>,
    /// Finished: the report's counts.
    #[schema(value_type = Option<Object>)]
    pub(crate) summary: Option<Value>,
    /// Failed: why it could not run.
    pub(crate) error: Option<String>,
    /// The settings it ran with.
    #[schema(value_type = Object)]
    pub(crate) settings: Value,
    /// Per operation (only in the answer of one verification).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) results: Option<Vec<ResultView>>,
}

pub(crate) fn verification_view(record: VerificationRecord) -> VerificationView {
    VerificationView {
        id: record.id,
        tool_id: record.tool.as_uuid(),
        requested_by: record.requested_by,
        status: record.status,
        queued_at: record.queued_at,
        started_at: record.started_at,
        finished_at: record.finished_at,
        ok: record.ok,
        summary: record.summary,
        error: record.error,
        settings: record.settings,
        results: None,
    }
}

pub(crate) fn result_view(tool: &LibraryTool, result: VerificationResult) -> ResultView {
    let operation = tool
        .operations
        .iter()
        .find(|o| o.id == result.operation)
        .map_or_else(String::new, |o| o.operation.name.clone());
    ResultView {
        operation_id: result.operation.as_uuid(),
        operation,
        revision: result.revision,
        definition_hash: result.definition_hash,
        contract_hash: result.contract_hash,
        verdict: result.verdict,
        divergences: result.divergences,
        report: result.report,
    }
}

/// A tool's verifications, the latest first.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct VerificationPage {
    /// The verifications.
    pub(crate) verifications: Vec<VerificationView>,
}

/// The latest verdict on an operation's mock.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct VerificationMarkView {
    /// The verification that gave it.
    pub(crate) verification_id: Uuid,
    /// `diverged`, `drifted`, `failed`, `agreed` or `unverified`.
    pub(crate) verdict: String,
    /// The revision checked (absent: the operation had no mock).
    pub(crate) revision: Option<i32>,
    /// How many divergences.
    pub(crate) divergences: i32,
    /// When.
    pub(crate) verified_at: DateTime<Utc>,
}

pub(crate) fn mark_view(mark: &VerificationMark) -> VerificationMarkView {
    VerificationMarkView {
        verification_id: mark.verification,
        verdict: mark.verdict.clone(),
        revision: mark.revision,
        divergences: mark.divergences,
        verified_at: mark.at,
    }
}
