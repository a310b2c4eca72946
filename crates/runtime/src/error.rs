//! The runtime's errors: storage, saving revisions, starting, dispatching.

use crate::model::OperationStatus;
use serde::Serialize;
use serde_json::Value;
use toolmock_contract::ContractHash;
use toolmock_evaluator::{CallError, Diagnostics, ErrorClass};

/// A storage failure, the same for every backend.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No such row for this tenant. A row of another tenant is reported exactly so.
    #[error("{entity} not found")]
    NotFound {
        /// What was looked for: `tool`, `operation`, `attempt`, …
        entity: &'static str,
    },
    /// The database refused to change or remove a row of an append-only table.
    #[error("{table} is append-only: {message}")]
    AppendOnly {
        /// The table, as the database named it.
        table: String,
        /// The database's message.
        message: String,
    },
    /// A uniqueness rule was broken, e.g. a tool name the tenant already uses.
    #[error("conflict: {what}")]
    Conflict {
        /// Which rule.
        what: String,
    },
    /// A stored value could not be read back (bad JSON, unknown enum text).
    #[error("stored {what} is unreadable: {message}")]
    Corrupt {
        /// Which value.
        what: &'static str,
        /// Why.
        message: String,
    },
    /// The backend itself failed (connection, I/O, SQL).
    #[error("storage backend failed: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl StoreError {
    /// A stable, machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::NotFound { .. } => "not_found",
            StoreError::AppendOnly { .. } => "append_only",
            StoreError::Conflict { .. } => "conflict",
            StoreError::Corrupt { .. } => "corrupt_row",
            StoreError::Backend(_) => "backend_failed",
        }
    }

    /// Whether this is [`StoreError::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, StoreError::NotFound { .. })
    }
}

/// Why a revision was not saved.
#[derive(Debug, thiserror::Error)]
pub enum SaveRevisionError {
    /// The operation's contract changed since the caller checked: the API's 409.
    #[error("the contract changed; the current hash is {current}")]
    ContractChanged {
        /// The operation's current contract hash.
        current: ContractHash,
    },
    /// The operation has no output schema, so it cannot be mocked.
    #[error("the operation has no output schema and cannot be mocked")]
    NeedsOutputSchema,
    /// The definition fails its check against the current contract: the API's 422.
    #[error("the definition fails its check ({} problem(s))", .0.len())]
    InvalidDefinition(Diagnostics),
    /// The operation's contract itself cannot be compiled.
    #[error("the operation's contract is unusable: {0}")]
    UnusableContract(String),
    /// The definition cannot be hashed reproducibly (e.g. an integer beyond ±2^53).
    #[error("the definition cannot be hashed: {0}")]
    UnhashableDefinition(String),
    /// Storage failed, or the operation does not exist for this tenant.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl SaveRevisionError {
    /// A stable, machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            SaveRevisionError::ContractChanged { .. } => "contract_changed",
            SaveRevisionError::NeedsOutputSchema => "needs_output_schema",
            SaveRevisionError::InvalidDefinition(_) => "invalid_definition",
            SaveRevisionError::UnusableContract(_) => "unusable_contract",
            SaveRevisionError::UnhashableDefinition(_) => "unhashable_definition",
            SaveRevisionError::Store(e) => e.code(),
        }
    }
}

/// One reason a simulation start is refused.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum StartProblem {
    /// A library tool the agent references does not exist for this tenant.
    UnknownTool {
        /// The referenced id.
        tool: String,
    },
    /// A workflow the agent references does not exist.
    UnknownWorkflow {
        /// Its name.
        workflow: String,
    },
    /// Two reachable tools share one name, so calls could not be routed.
    DuplicateTool {
        /// The name.
        tool: String,
    },
    /// An operation is stale, missing, needs an output schema, or its
    /// definition fails its check (refused unless `allow_incomplete`).
    Incomplete {
        /// Tool name.
        tool: String,
        /// Operation name.
        operation: String,
        /// `stale`, `missing`, `needs_output_schema` or `invalid_definition`.
        status: String,
        /// Details.
        message: String,
    },
    /// Two pinned definitions give one initial-state key different values.
    StateConflict {
        /// The key.
        key: String,
        /// The first definition (`tool/operation@pin`).
        first: String,
        /// The second.
        second: String,
    },
    /// A workflow node causes an effect without the dispatcher (sandbox only).
    EffectNode {
        /// The workflow.
        workflow: String,
        /// The node.
        node: String,
        /// The effect.
        effect: String,
    },
}

impl StartProblem {
    /// A stable, machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            StartProblem::UnknownTool { .. } => "unknown_tool",
            StartProblem::UnknownWorkflow { .. } => "unknown_workflow",
            StartProblem::DuplicateTool { .. } => "duplicate_tool",
            StartProblem::Incomplete { .. } => "incomplete",
            StartProblem::StateConflict { .. } => "state_conflict",
            StartProblem::EffectNode { .. } => "effect_node",
        }
    }

    pub(crate) fn incomplete(
        tool: &str,
        operation: &str,
        status: OperationStatus,
        message: String,
    ) -> Self {
        StartProblem::Incomplete {
            tool: tool.to_owned(),
            operation: operation.to_owned(),
            status: status.as_str().to_owned(),
            message,
        }
    }
}

/// Why a simulation did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The start is refused; every problem is listed.
    #[error("the simulation cannot start: {}", describe(.problems))]
    Refused {
        /// Every problem found.
        problems: Vec<StartProblem>,
    },
    /// The request itself is unusable (no test case, zero attempts, an empty lease owner).
    #[error("invalid start request: {0}")]
    InvalidRequest(String),
    /// Storage failed, or the agent does not exist for this tenant.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl StartError {
    /// A stable, machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            StartError::Refused { .. } => "start_refused",
            StartError::InvalidRequest(_) => "invalid_request",
            StartError::Store(e) => e.code(),
        }
    }
}

fn describe(problems: &[StartProblem]) -> String {
    problems
        .iter()
        .map(|p| match p {
            StartProblem::UnknownTool { tool } => format!("unknown tool {tool}"),
            StartProblem::UnknownWorkflow { workflow } => format!("unknown workflow {workflow}"),
            StartProblem::DuplicateTool { tool } => format!("duplicate tool name {tool}"),
            StartProblem::Incomplete {
                tool,
                operation,
                status,
                ..
            } => format!("{tool}/{operation} is {status}"),
            StartProblem::StateConflict { key, first, second } => {
                format!("state_conflict on {key:?} between {first} and {second}")
            }
            StartProblem::EffectNode {
                workflow,
                node,
                effect,
            } => {
                format!("node {workflow}/{node} causes an effect ({effect}) without the dispatcher")
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A harness error a call produced (always recorded before it is returned).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("harness error {code}: {message}")]
pub struct HarnessFault {
    /// `missing_definition`, `unknown_tool`, `missing_reference`, …
    pub code: String,
    /// What happened.
    pub message: String,
    /// JSON pointer, where one applies.
    pub path: Option<String>,
}

/// A tool input error: what the agent receives as an ordinary, recoverable tool error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ToolInputFault {
    /// `invalid_arguments`, `invalid_number`, `invalid_date`, …
    pub code: String,
    /// What is wrong, for the agent.
    pub message: String,
    /// JSON pointer into the arguments.
    pub path: Option<String>,
    /// Every schema violation, as JSON.
    pub violations: Value,
}

/// Why a call returned no result.
#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    /// The agent's arguments are wrong; recorded in `tool_input_errors`; no state changed.
    #[error("tool input error: {0}")]
    ToolInput(ToolInputFault),
    /// The harness is at fault; recorded in `harness_errors`; the attempt cannot pass.
    #[error(transparent)]
    Harness(HarnessFault),
    /// The capability is unknown, or belongs to another tenant. Nothing is recorded:
    /// there is no attempt of this tenant to record it on.
    #[error("the capability is not valid")]
    CapabilityRejected,
    /// The real external handler failed (real-tools runs only).
    #[error("the external tool failed: {0}")]
    External(String),
    /// Storage failed; the call may not have been recorded.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl DispatchError {
    /// A stable, machine-readable code.
    pub fn code(&self) -> &str {
        match self {
            DispatchError::ToolInput(f) => &f.code,
            DispatchError::Harness(f) => &f.code,
            DispatchError::CapabilityRejected => "capability_rejected",
            DispatchError::External(_) => "external_failed",
            DispatchError::Store(e) => e.code(),
        }
    }

    /// `tool_input_error` or `harness_error` for the two recorded classes.
    pub fn class(&self) -> Option<ErrorClass> {
        match self {
            DispatchError::ToolInput(_) => Some(ErrorClass::ToolInputError),
            DispatchError::Harness(_) => Some(ErrorClass::HarnessError),
            _ => None,
        }
    }
}

/// What a fixture store's locked call step can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The attempt is finished, its lease expired or the capability was revoked.
    #[error("the attempt's lease is not valid")]
    LeaseExpired,
    /// No attempt of this tenant holds this capability.
    #[error("the capability is not valid")]
    CapabilityRejected,
    /// The evaluation failed; nothing was written.
    #[error(transparent)]
    Call(#[from] CallError),
    /// Storage failed; nothing was written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ApplyError {
    /// A stable, machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            ApplyError::LeaseExpired => "lease_expired",
            ApplyError::CapabilityRejected => "capability_rejected",
            ApplyError::Call(e) => e.code(),
            ApplyError::Store(e) => e.code(),
        }
    }
}

/// Why an attempt could not be finished.
#[derive(Debug, thiserror::Error)]
pub enum FinishError {
    /// It was already finished.
    #[error("the attempt is already finished")]
    AlreadyFinished,
    /// Storage failed, or the attempt does not exist for this tenant.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl FinishError {
    /// A stable, machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            FinishError::AlreadyFinished => "already_finished",
            FinishError::Store(e) => e.code(),
        }
    }
}
