//! The runtime's errors: storage, saving revisions, starting, dispatching,
//! and their stable codes ([`HarnessCode`], [`ToolInputCode`], …; every one
//! listed in the `toolmock-runtime` section of `docs/error-codes.md`).

mod codes;

pub use codes::{AgentCode, HarnessCode, IncompleteStatus, OperationsCode, ToolInputCode};

pub(crate) use codes::{
    CallFault, DispatchCode, FinishCode, SaveRevisionCode, StartCode, StartProblemCode, StoreCode,
};

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
    /// A write for an attempt was refused by its lease's fence: the writer's
    /// lease (owner and epoch) is no longer the attempt's, so a worker that
    /// lost its lease writes nothing.
    #[error("the write was refused: this worker's lease of the attempt is no longer current")]
    Fenced,
}

impl StoreError {
    /// The typed code.
    pub(crate) fn kind(&self) -> StoreCode {
        match self {
            StoreError::NotFound { .. } => StoreCode::NotFound,
            StoreError::AppendOnly { .. } => StoreCode::AppendOnly,
            StoreError::Conflict { .. } => StoreCode::Conflict,
            StoreError::Corrupt { .. } => StoreCode::CorruptRow,
            StoreError::Backend(_) => StoreCode::BackendFailed,
            StoreError::Fenced => StoreCode::Fenced,
        }
    }

    /// A stable, machine-readable code.
    pub fn code(&self) -> &'static str {
        self.kind().as_str()
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
        let code = match self {
            SaveRevisionError::ContractChanged { .. } => SaveRevisionCode::ContractChanged,
            SaveRevisionError::NeedsOutputSchema => SaveRevisionCode::NeedsOutputSchema,
            SaveRevisionError::InvalidDefinition(_) => SaveRevisionCode::InvalidDefinition,
            SaveRevisionError::UnusableContract(_) => SaveRevisionCode::UnusableContract,
            SaveRevisionError::UnhashableDefinition(_) => SaveRevisionCode::UnhashableDefinition,
            SaveRevisionError::Store(e) => return e.code(),
        };
        code.as_str()
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
        /// Why it cannot be pinned.
        status: IncompleteStatus,
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
    /// Workflows call each other in a cycle, so a run could never return.
    WorkflowCycle {
        /// The workflows along the cycle in call order, the first repeated
        /// at the end (`a`, `b`, `a`).
        cycle: Vec<String>,
    },
}

impl StartProblem {
    /// The typed code.
    pub(crate) fn kind(&self) -> StartProblemCode {
        match self {
            StartProblem::UnknownTool { .. } => StartProblemCode::UnknownTool,
            StartProblem::UnknownWorkflow { .. } => StartProblemCode::UnknownWorkflow,
            StartProblem::DuplicateTool { .. } => StartProblemCode::DuplicateTool,
            StartProblem::Incomplete { .. } => StartProblemCode::Incomplete,
            StartProblem::StateConflict { .. } => StartProblemCode::StateConflict,
            StartProblem::EffectNode { .. } => StartProblemCode::EffectNode,
            StartProblem::WorkflowCycle { .. } => StartProblemCode::WorkflowCycle,
        }
    }

    /// A stable, machine-readable code.
    pub fn code(&self) -> &'static str {
        self.kind().as_str()
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
    /// The start would create more than one start may: too many attempts,
    /// or too large an initial state (alone or once per attempt).
    #[error("the start is too large: {} is {actual}, at most {maximum}", limit.describe())]
    TooLarge {
        /// Which limit.
        limit: StartLimit,
        /// The limit.
        maximum: u64,
        /// What the start asked for.
        actual: u64,
    },
    /// Storage failed, or the agent does not exist for this tenant.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl StartError {
    /// A stable, machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            StartError::Refused { .. } => StartCode::StartRefused.as_str(),
            StartError::InvalidRequest(_) => StartCode::InvalidRequest.as_str(),
            StartError::TooLarge { .. } => StartCode::StartTooLarge.as_str(),
            StartError::Store(e) => e.code(),
        }
    }
}

/// A bound on what one start may create (docs/simulations.md, "Limits").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartLimit {
    /// Test cases × attempts per case.
    Attempts,
    /// Bytes of the initial fixture state (compact JSON).
    InitialStateBytes,
    /// Bytes of initial state over all attempts (attempts × its bytes).
    StartStateBytes,
    /// Bytes of the shared fixtures together (compact JSON).
    FixtureBytes,
}

impl StartLimit {
    /// The limit: at most 10,000 attempts (test cases × attempts per case),
    /// 256 KiB of initial fixture state (compact JSON), 64 MiB of initial
    /// state over all attempts (attempts × its bytes), 16 MiB of shared
    /// fixtures (compact JSON; shared by the attempts, so not counted per attempt).
    pub const fn maximum(self) -> u64 {
        match self {
            StartLimit::Attempts => 10_000,
            StartLimit::InitialStateBytes => 256 * 1024,
            StartLimit::StartStateBytes => 64 * 1024 * 1024,
            StartLimit::FixtureBytes => 16 * 1024 * 1024,
        }
    }

    /// Its name in an error's details.
    pub fn as_str(self) -> &'static str {
        match self {
            StartLimit::Attempts => "attempts",
            StartLimit::InitialStateBytes => "initial_state_bytes",
            StartLimit::StartStateBytes => "start_state_bytes",
            StartLimit::FixtureBytes => "fixture_bytes",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            StartLimit::Attempts => "the number of attempts (test cases × attempts)",
            StartLimit::InitialStateBytes => "the initial state's size in bytes",
            StartLimit::StartStateBytes => {
                "the initial state's bytes over all attempts (attempts × its size)"
            }
            StartLimit::FixtureBytes => "the shared fixtures' size in bytes (compact JSON)",
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
            StartProblem::WorkflowCycle { cycle } => {
                format!(
                    "workflows call each other in a cycle: {}",
                    cycle.join(" -> ")
                )
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A harness error a call produced (always recorded before it is returned).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("harness error {code}: {message}")]
pub struct HarnessFault {
    /// Which fault.
    pub code: HarnessCode,
    /// What happened.
    pub message: String,
    /// JSON pointer, where one applies.
    pub path: Option<String>,
}

/// A tool input error: what the agent receives as an ordinary, recoverable tool error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ToolInputFault {
    /// Which error.
    pub code: ToolInputCode,
    /// What is wrong, for the agent.
    pub message: String,
    /// JSON pointer into the arguments.
    pub path: Option<String>,
    /// Every schema violation, as JSON.
    pub violations: Value,
}

/// A fault of an attempt to record: the harness's or the agent's. What
/// `Dispatcher::record_fault`, the one way a fault reaches storage, takes
/// and returns.
#[derive(Debug, Clone, PartialEq)]
pub enum AttemptFault {
    /// A harness error: the attempt can never pass.
    Harness(HarnessFault),
    /// A tool input error: the agent can recover.
    ToolInput(ToolInputFault),
}

impl AttemptFault {
    /// Its stable code.
    pub fn code(&self) -> &'static str {
        match self {
            AttemptFault::Harness(f) => f.code.as_str(),
            AttemptFault::ToolInput(f) => f.code.as_str(),
        }
    }

    /// What happened.
    pub fn message(&self) -> &str {
        match self {
            AttemptFault::Harness(f) => &f.message,
            AttemptFault::ToolInput(f) => &f.message,
        }
    }
}

impl From<HarnessFault> for AttemptFault {
    fn from(fault: HarnessFault) -> Self {
        AttemptFault::Harness(fault)
    }
}

impl From<ToolInputFault> for AttemptFault {
    fn from(fault: ToolInputFault) -> Self {
        AttemptFault::ToolInput(fault)
    }
}

impl From<AttemptFault> for DispatchError {
    fn from(fault: AttemptFault) -> Self {
        match fault {
            AttemptFault::Harness(f) => DispatchError::Harness(f),
            AttemptFault::ToolInput(f) => DispatchError::ToolInput(f),
        }
    }
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
    /// (Version 2) the mock answered a domain error instead of a result
    /// (`order_not_found`): an ordinary answer of the operation, recorded as
    /// evidence with the status `domain_error`, with no state change. It is
    /// neither a tool input error nor a harness error, and never fails the
    /// attempt by itself; the agent receives it as a tool error.
    #[error("domain error {}: {}", .0.code, .0.message)]
    Domain(toolmock_evaluator::DomainError),
    /// The capability is unknown, or belongs to another tenant. Nothing is recorded:
    /// there is no attempt of this tenant to record it on.
    #[error("the capability is not valid")]
    CapabilityRejected,
    /// Storage failed and not even a `storage_failed` harness error could be
    /// written; the attempt's finish sees the unrecorded call and refuses a pass.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl DispatchError {
    /// A stable, machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            DispatchError::ToolInput(f) => f.code.as_str(),
            DispatchError::Harness(f) => f.code.as_str(),
            DispatchError::CapabilityRejected => DispatchCode::CapabilityRejected.as_str(),
            DispatchError::Store(e) => e.code(),
            DispatchError::Domain(_) => DispatchCode::DomainError.as_str(),
        }
    }

    /// `tool_input_error` or `harness_error` for the two recorded classes
    /// (`None` for a domain error: it is neither).
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
            ApplyError::LeaseExpired => HarnessCode::LeaseExpired.as_str(),
            ApplyError::CapabilityRejected => DispatchCode::CapabilityRejected.as_str(),
            ApplyError::Call(e) => CallFault::of(e).as_str(),
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
            FinishError::AlreadyFinished => FinishCode::AlreadyFinished.as_str(),
            FinishError::Store(e) => e.code(),
        }
    }
}

/// Why an agent was not accepted (`AgentSpec::check`).
#[derive(Debug, thiserror::Error)]
pub enum AgentRejected {
    /// The agent breaks its rules: every problem, each with a JSON pointer
    /// into the agent as described.
    #[error("the agent is not valid: {0}")]
    Invalid(toolmock_contract::Problems<AgentCode>),
    /// Its library tools could not be looked up.
    #[error(transparent)]
    Store(#[from] StoreError),
}
