//! What a verification found: per real tool, per operation, the contract
//! drift and every replayed check with its divergences; and the counts the
//! exit status is decided on. The shape of `toolmock verify --json` and of
//! a stored verification (docs/verify.md, "Reports").

use crate::SkipReason;
use crate::matchers::Divergence;
use crate::subject::Source;
use serde::Serialize;
use serde_json::Value;
use toolmock_schema::ContractDiff;

/// The report's format version.
pub const VERIFY_VERSION: u32 = 1;

/// An answer: the mock's or the real tool's.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// A result.
    Result(Value),
    /// The mock's error: a domain error it answers (version 2), or the
    /// tool input error or harness error its evaluation ends with.
    Error {
        /// `domain_error`, `tool_input_error` or `harness_error`.
        class: String,
        /// The code.
        code: String,
        /// In words.
        message: String,
    },
    /// The real tool's own refusal (an MCP `isError` result's text, or an
    /// HTTP status other than 2xx and the body's start).
    Refused(String),
    /// An MCP result without `structuredContent` (its text).
    Unstructured(String),
}

impl Answer {
    /// The result, when it is one.
    pub fn result(&self) -> Option<&Value> {
        match self {
            Answer::Result(value) => Some(value),
            _ => None,
        }
    }
}

/// How one check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// The real answer agrees with the mock's under the matchers, and
    /// passes the output schema.
    Agreed,
    /// It does not: see the divergences.
    Diverged,
    /// The real tool could not be called (unreachable, timed out, not JSON).
    Failed,
    /// Not called (see the reason).
    Skipped,
}

/// Which sequence a check is a step of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sequence {
    /// `chain` or `recording`.
    pub kind: &'static str,
    /// The chain's name, or the recording's folder.
    pub name: String,
    /// The step's position (0 is the first).
    pub step: usize,
}

/// One replayed call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckReport {
    /// The operation called (its report holds the check).
    #[serde(skip)]
    pub operation: String,
    /// `example N`, `recording FOLDER #N` or `chain NAME #N`.
    pub name: String,
    /// Where the call was written.
    pub source: Source,
    /// The step of a chain or recording, when it is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence: Option<Sequence>,
    /// The mock's variant for it (the default variant when `None`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// The arguments sent to the real tool (for a chain step, with the
    /// real side's references resolved).
    pub input: Value,
    /// How it ended.
    pub status: CheckStatus,
    /// Why it was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<SkipReason>,
    /// The mock's answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mock: Option<Answer>,
    /// The real tool's answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub real: Option<Answer>,
    /// Every difference, by JSON pointer into the answer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub divergences: Vec<Divergence>,
    /// Why it failed or was skipped, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// What became of an operation's contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DriftStatus {
    /// The real tool's current contract hashes as the pinned one.
    Unchanged,
    /// It changed (see the diff: why the mock is stale).
    Changed,
    /// The real tool no longer has the operation.
    Gone,
    /// Nothing says what the current contract is (no MCP server, no
    /// OpenAPI document).
    Unchecked,
    /// The real tool's schemas could not be read.
    Failed,
}

/// An operation's contract against the real tool's current one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Drift {
    /// What became of it.
    pub status: DriftStatus,
    /// Where the current contract came from: `mcp` (`tools/list`) or `openapi`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<&'static str>,
    /// The real tool's current contract hash, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub real_hash: Option<String>,
    /// What changed (`toolmock diff`'s report), when it changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<ContractDiff>,
    /// The failure's code, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// In words, when it failed, is gone or changed without a diff.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The current contract, when it changed (what a proposed draft is
    /// checked against).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub real_contract: Option<Value>,
}

impl Drift {
    pub(crate) fn of(status: DriftStatus) -> Self {
        Drift {
            status,
            from: None,
            real_hash: None,
            diff: None,
            code: None,
            message: None,
            real_contract: None,
        }
    }
}

/// An operation's verdict, for marking its mock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// A check diverged: the mock no longer tells the truth.
    Diverged,
    /// No check diverged, but the contract changed or is gone.
    Drifted,
    /// Something could not be checked (the real tool unreachable).
    Failed,
    /// Every replayed check agreed.
    Agreed,
    /// Nothing was replayed (not safe, no real handler) and the contract
    /// is unchanged or unchecked.
    Unverified,
}

impl Verdict {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Diverged => "diverged",
            Verdict::Drifted => "drifted",
            Verdict::Failed => "failed",
            Verdict::Agreed => "agreed",
            Verdict::Unverified => "unverified",
        }
    }
}

/// One operation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OperationReport {
    /// Its runtime name.
    pub operation: String,
    /// Whether it may be called for real.
    pub safe: bool,
    /// The pinned contract's hash.
    pub contract_hash: String,
    /// The mock's definition hash, when it has a mock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub definition_hash: Option<String>,
    /// The mock's library revision (the service).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<u32>,
    /// The verdict.
    pub verdict: Verdict,
    /// The contract against the real one.
    pub drift: Drift,
    /// Every replayed (or skipped) call of it: examples, recorded calls,
    /// chain steps, in that order.
    pub checks: Vec<CheckReport>,
}

impl OperationReport {
    /// How many of its checks ended `status`.
    pub fn count(&self, status: CheckStatus) -> usize {
        self.checks.iter().filter(|c| c.status == status).count()
    }
}

/// One real tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolReport {
    /// The tool's name.
    pub tool: String,
    /// Where the real tool is, in words (`mcp stdio: CMD`, `mcp URL`,
    /// `http endpoints`, `none`).
    pub real: String,
    /// Per operation, in the tool's order.
    pub operations: Vec<OperationReport>,
    /// Recorded calls that name no operation of the tool (skipped).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unmatched: Vec<CheckReport>,
}

/// Counts over the whole report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Real tools.
    pub tools: usize,
    /// Operations.
    pub operations: usize,
    /// Contracts unchanged.
    pub unchanged: usize,
    /// … changed.
    pub changed: usize,
    /// … gone.
    pub gone: usize,
    /// … unchecked.
    pub unchecked: usize,
    /// … whose real schemas could not be read.
    pub drift_failed: usize,
    /// Checks (replayed or skipped calls).
    pub checks: usize,
    /// … that agreed.
    pub agreed: usize,
    /// … that diverged.
    pub diverged: usize,
    /// … that could not be run.
    pub failed: usize,
    /// … that were not called.
    pub skipped: usize,
}

/// The whole verification.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// [`VERIFY_VERSION`].
    pub verify_version: u32,
    /// No drift, no divergence, nothing failed.
    pub ok: bool,
    /// Counts.
    pub summary: Summary,
    /// Per real tool, in the document's order.
    pub tools: Vec<ToolReport>,
}

impl Report {
    /// A report of `tools`, with its counts.
    pub fn new(tools: Vec<ToolReport>) -> Self {
        let mut s = Summary {
            tools: tools.len(),
            ..Summary::default()
        };
        for op in tools.iter().flat_map(|t| &t.operations) {
            s.operations += 1;
            match op.drift.status {
                DriftStatus::Unchanged => s.unchanged += 1,
                DriftStatus::Changed => s.changed += 1,
                DriftStatus::Gone => s.gone += 1,
                DriftStatus::Unchecked => s.unchecked += 1,
                DriftStatus::Failed => s.drift_failed += 1,
            }
        }
        let checks = tools.iter().flat_map(|t| {
            t.operations
                .iter()
                .flat_map(|o| &o.checks)
                .chain(&t.unmatched)
        });
        for check in checks {
            s.checks += 1;
            match check.status {
                CheckStatus::Agreed => s.agreed += 1,
                CheckStatus::Diverged => s.diverged += 1,
                CheckStatus::Failed => s.failed += 1,
                CheckStatus::Skipped => s.skipped += 1,
            }
        }
        Report {
            verify_version: VERIFY_VERSION,
            ok: s.changed + s.gone + s.drift_failed + s.diverged + s.failed == 0,
            summary: s,
            tools,
        }
    }

    /// Whether a contract changed or is gone.
    pub fn drifted(&self) -> bool {
        self.summary.changed + self.summary.gone > 0
    }

    /// Whether a check diverged.
    pub fn diverged(&self) -> bool {
        self.summary.diverged > 0
    }

    /// Whether something could not be checked (a real tool unreachable).
    pub fn failed(&self) -> bool {
        self.summary.failed + self.summary.drift_failed > 0
    }
}
