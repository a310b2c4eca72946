//! The data the runtime reads and writes: identifiers and capabilities,
//! catalog rows, agents and their reachable tools, pins, attempts, evidence
//! and error records.

mod capability;
mod fault;
mod ids;
mod rules;
mod workflow;

pub use capability::{Capability, TokenHash};
pub(crate) use fault::FaultCall;
pub(crate) use fault::{has_nul, sanitize, sanitize_text};
pub use ids::{AgentId, AttemptId, OperationId, SimulationId, TenantId, TestCaseId, ToolId};
pub use workflow::{Condition, EffectKind, NodeDoc, WorkflowDoc};

use crate::error::{HarnessCode, IncompleteStatus, ToolInputCode};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;
use toolmock_contract::{
    ContractHash, DefinitionHash, OperationContract, OperationIdentity, OperationSource,
};
use toolmock_evaluator::DomainError;

/// The kind of a library tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Platform operations (expanded runtime names `{tool}__{operation}`).
    Platform,
    /// Tools discovered from an MCP server.
    Mcp,
    /// Tools described by hand.
    Custom,
}

impl ToolKind {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolKind::Platform => "platform",
            ToolKind::Mcp => "mcp",
            ToolKind::Custom => "custom",
        }
    }

    /// Parses the stored name.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "platform" => Some(ToolKind::Platform),
            "mcp" => Some(ToolKind::Mcp),
            "custom" => Some(ToolKind::Custom),
            _ => None,
        }
    }
}

/// A library tool to create.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTool {
    /// Unique per tenant; the name agents call it by.
    pub name: String,
    /// Platform, MCP or custom.
    pub kind: ToolKind,
    /// Source configuration (server address, platform manifest, …); opaque here.
    pub source_config: Value,
    /// The fallback output schema for operations whose discovery gave none (docs/spec.md §9).
    pub output_schema: Option<Value>,
}

/// An operation to create or refresh on a library tool (from discovery or a manifest).
#[derive(Debug, Clone, PartialEq)]
pub struct NewOperation {
    /// Source and runtime name.
    pub operation: OperationIdentity,
    /// Description shown to the agent.
    pub description: String,
    /// The input schema.
    pub input_schema: Value,
    /// The discovered output schema, if any (the tool's fallback applies otherwise).
    pub output_schema: Option<Value>,
}

/// A normalized contract (a platform manifest's, a discovered one) as an
/// operation to create: its output schema is the discovered one.
impl From<OperationContract> for NewOperation {
    fn from(contract: OperationContract) -> Self {
        NewOperation {
            operation: contract.operation,
            description: contract.description,
            input_schema: contract.input_schema,
            output_schema: Some(contract.output_schema),
        }
    }
}

impl NewOperation {
    /// The operation's contract after the fallback of docs/spec.md §9 (the tool's
    /// `tool_output_schema`), or `None` when the operation has no output
    /// schema at all (`needs_output_schema`).
    pub fn effective_contract(
        &self,
        tool_output_schema: Option<&Value>,
    ) -> Option<OperationContract> {
        let output_schema = self.output_schema.as_ref().or(tool_output_schema)?.clone();
        Some(OperationContract {
            operation: self.operation.clone(),
            description: self.description.clone(),
            input_schema: self.input_schema.clone(),
            output_schema,
        })
    }
}

/// Where a revision came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "provenance", rename_all = "snake_case")]
pub enum Provenance {
    /// Written by a person.
    Authored,
    /// Produced by the generator, with the instructions it was given.
    Generated {
        /// The optional generation instructions.
        instructions: Option<String>,
    },
}

impl Provenance {
    /// `authored` or `generated`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Provenance::Authored => "authored",
            Provenance::Generated { .. } => "generated",
        }
    }

    /// The generation instructions, if any.
    pub fn instructions(&self) -> Option<&str> {
        match self {
            Provenance::Authored => None,
            Provenance::Generated { instructions } => instructions.as_deref(),
        }
    }
}

/// A save request (the API's `{"action": "save", …}`).
#[derive(Debug, Clone, PartialEq)]
pub struct SaveRevision {
    /// The contract hash the caller checked the definition against.
    pub contract_hash: ContractHash,
    /// The definition document.
    pub definition: Value,
    /// Who saves it.
    pub author: String,
    /// Authored or generated.
    pub provenance: Provenance,
}

/// One saved revision (append-only).
#[derive(Debug, Clone, PartialEq)]
pub struct RevisionRecord {
    /// The tool.
    pub tool: ToolId,
    /// The operation.
    pub operation: OperationId,
    /// 1, 2, 3… per operation.
    pub revision: u32,
    /// The contract hash it was saved against, forever.
    pub contract_hash: ContractHash,
    /// The definition document.
    pub definition: Value,
    /// The definition's own hash.
    pub definition_hash: DefinitionHash,
    /// Who saved it.
    pub author: String,
    /// Authored or generated.
    pub provenance: Provenance,
    /// When.
    pub created_at: DateTime<Utc>,
}

/// The testing status of an operation (docs/spec.md §2, §10): whether its latest
/// mock revision answers for its current contract. (Named apart from the
/// schema crate's `DiscoveryStatus`, which says how discovery went.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestingStatus {
    /// The latest revision was saved against the current contract.
    Current,
    /// The latest revision was saved against another contract.
    Stale,
    /// No revision yet.
    Missing,
    /// Neither discovery nor the tool gave an output schema.
    NeedsOutputSchema,
}

impl TestingStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TestingStatus::Current => "current",
            TestingStatus::Stale => "stale",
            TestingStatus::Missing => "missing",
            TestingStatus::NeedsOutputSchema => "needs_output_schema",
        }
    }

    /// Why an operation of this status cannot be pinned; `None` when it is current.
    pub fn incomplete(self) -> Option<IncompleteStatus> {
        match self {
            TestingStatus::Current => None,
            TestingStatus::Stale => Some(IncompleteStatus::Stale),
            TestingStatus::Missing => Some(IncompleteStatus::Missing),
            TestingStatus::NeedsOutputSchema => Some(IncompleteStatus::NeedsOutputSchema),
        }
    }
}

/// One operation of a library tool, with its current contract and latest revision.
#[derive(Debug, Clone, PartialEq)]
pub struct OperationView {
    /// Its id.
    pub id: OperationId,
    /// Its tool.
    pub tool: ToolId,
    /// Source and runtime name.
    pub operation: OperationIdentity,
    /// The current contract (`None`: needs an output schema).
    pub contract: Option<OperationContract>,
    /// The current contract's hash.
    pub contract_hash: Option<ContractHash>,
    /// The latest revision, if any.
    pub latest: Option<RevisionRecord>,
}

impl OperationView {
    /// Current, stale, missing or needs_output_schema.
    pub fn status(&self) -> TestingStatus {
        match (&self.contract_hash, &self.latest) {
            (None, _) => TestingStatus::NeedsOutputSchema,
            (Some(_), None) => TestingStatus::Missing,
            (Some(current), Some(latest)) if &latest.contract_hash == current => {
                TestingStatus::Current
            }
            (Some(_), Some(_)) => TestingStatus::Stale,
        }
    }
}

/// A library tool with its operations.
#[derive(Debug, Clone, PartialEq)]
pub struct LibraryTool {
    /// Its id.
    pub id: ToolId,
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: ToolKind,
    /// Source configuration.
    pub source_config: Value,
    /// Fallback output schema.
    pub output_schema: Option<Value>,
    /// Operations, by name.
    pub operations: Vec<OperationView>,
}

/// What an agent can reach: its tools and the workflows it can call.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// The tools the agent calls directly (a workflow called as a tool is one of them).
    #[serde(default)]
    pub tools: Vec<ToolRef>,
    /// The workflows of the agent, in the documented format
    /// (`docs/workflows.md`): what the workflow engine runs is what the start
    /// walks. A tool node names its tool like the agent's own calls do, so
    /// every tool a workflow calls is one of `tools`.
    #[serde(default)]
    pub workflows: Vec<WorkflowDoc>,
    /// Its system prompt: opaque text for whoever plays the agent (a worker
    /// driving a model); toolmock never interprets it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prompt: String,
    /// Prerequisite guards ("verify the member before discussing claims"):
    /// opaque text for drivers and judges.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guards: Vec<String>,
}

/// A reference to something callable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ToolRef {
    /// A library tool of the agent's tenant.
    Library {
        /// The tool's id.
        tool: ToolId,
    },
    /// An agent-local tool.
    Inline(InlineTool),
    /// A workflow of the agent, called as a tool.
    Workflow {
        /// The workflow's name.
        workflow: String,
    },
}

/// An agent-local tool: no row of its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InlineTool {
    /// The name agents call it by.
    pub name: String,
    /// Its operations.
    pub operations: Vec<InlineOperation>,
}

/// One operation of an inline tool, carrying its own output schema and mock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InlineOperation {
    /// Runtime name.
    pub name: String,
    /// Where it comes from.
    pub source: OperationSource,
    /// Description shown to the agent.
    #[serde(default)]
    pub description: String,
    /// Input schema.
    pub input_schema: Value,
    /// Output schema (`None`: not mockable).
    #[serde(default)]
    pub output_schema: Option<Value>,
    /// The `testing` mock definition, pinned by its hash.
    #[serde(default)]
    pub testing: Option<Value>,
}

impl InlineOperation {
    /// Its contract, or `None` without an output schema.
    pub fn contract(&self) -> Option<OperationContract> {
        Some(OperationContract {
            operation: OperationIdentity {
                source: self.source,
                name: self.name.clone(),
            },
            description: self.description.clone(),
            input_schema: self.input_schema.clone(),
            output_schema: self.output_schema.clone()?,
        })
    }
}

/// Sandbox (every tool mocked) or an explicit real-tools integration run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SimulationMode {
    /// Every call is answered by its pinned mock; effect nodes refuse the start.
    Sandbox,
    /// Pinned calls are executed by the real external handlers.
    RealTools,
}

impl SimulationMode {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            SimulationMode::Sandbox => "sandbox",
            SimulationMode::RealTools => "real_tools",
        }
    }

    /// Parses the stored name.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "sandbox" => Some(SimulationMode::Sandbox),
            "real_tools" => Some(SimulationMode::RealTools),
            _ => None,
        }
    }
}

/// A stored agent.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentRecord {
    /// Its id.
    pub id: AgentId,
    /// Its name.
    pub name: String,
    /// What it reaches.
    pub spec: AgentSpec,
}

/// A test case's choice of variant for one operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantChoice {
    /// Tool name.
    pub tool: String,
    /// Operation name.
    pub operation: String,
    /// Variant name (an unknown one is a harness error `unknown_variant` at the call).
    pub variant: String,
}

/// A test case to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestCaseSpec {
    /// Its name.
    pub name: String,
    /// Variants chosen for some operations; the others use their default variant.
    #[serde(default)]
    pub variants: Vec<VariantChoice>,
    /// Its attempts, when not the request's `attempts_per_case`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
}

/// Which definition answers calls to one operation of one simulation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PinRef {
    /// A library revision.
    Library {
        /// The tool.
        tool: ToolId,
        /// The operation.
        operation: OperationId,
        /// The revision number.
        revision: u32,
        /// Its definition's hash.
        definition_hash: DefinitionHash,
    },
    /// An inline tool's definition, by its hash.
    Inline {
        /// The definition's hash.
        definition_hash: DefinitionHash,
    },
    /// A workflow's effect node executed for real (real-tools runs only):
    /// the node itself, by the hash of its definition as the document
    /// states it. Its records name the workflow as the tool and the node's
    /// id as the operation.
    Effect {
        /// The node definition's hash.
        definition_hash: DefinitionHash,
    },
}

impl PinRef {
    /// The pinned definition's hash.
    pub fn definition_hash(&self) -> &DefinitionHash {
        match self {
            PinRef::Library {
                definition_hash, ..
            }
            | PinRef::Inline { definition_hash }
            | PinRef::Effect { definition_hash } => definition_hash,
        }
    }

    /// `library`, `inline` or `effect`.
    pub fn kind(&self) -> &'static str {
        match self {
            PinRef::Library { .. } => "library",
            PinRef::Inline { .. } => "inline",
            PinRef::Effect { .. } => "effect",
        }
    }

    /// The revision number, for library pins.
    pub fn revision(&self) -> Option<u32> {
        match self {
            PinRef::Library { revision, .. } => Some(*revision),
            PinRef::Inline { .. } | PinRef::Effect { .. } => None,
        }
    }
}

/// One pinned (or knowingly unpinned) operation of a simulation.
#[derive(Debug, Clone, PartialEq)]
pub struct PinRecord {
    /// Tool name, as the agent calls it.
    pub tool: String,
    /// Operation name.
    pub operation: String,
    /// The pin, or why there is none.
    pub pin: PinTarget,
}

/// A pinned definition or the reason an operation is unpinned.
#[derive(Debug, Clone, PartialEq)]
// Pins are built once per start and read once per simulation load, never
// moved in a hot loop: boxing the pinned variant would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum PinTarget {
    /// Pinned: the definition and the contract it was checked against.
    Pinned {
        /// Which definition.
        pin: PinRef,
        /// The contract at the start (a later schema correction does not change it).
        contract: OperationContract,
        /// The definition document.
        definition: Value,
    },
    /// Unpinned under `allow_incomplete`: calls fail closed (`missing_definition`).
    Unpinned {
        /// Why.
        reason: IncompleteStatus,
    },
}

/// Everything a simulation start writes, in one transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSimulation {
    /// Its id.
    pub id: SimulationId,
    /// The agent.
    pub agent: AgentId,
    /// Sandbox or real tools.
    pub mode: SimulationMode,
    /// Whether unpinned operations were accepted.
    pub allow_incomplete: bool,
    /// Every reachable operation.
    pub pins: Vec<PinRecord>,
    /// The test cases.
    pub test_cases: Vec<NewTestCase>,
    /// The attempts, with their capability hash.
    pub attempts: Vec<NewAttempt>,
    /// The initial fixture state of every attempt (the union of the pinned
    /// definitions' initial states): held once, each attempt's state row
    /// written from it by the backend.
    pub initial_state: Map<String, Value>,
    /// The sha256 of the shared fixtures' canonical JSON when the start gave
    /// any (they are then part of `initial_state`, which is every attempt's
    /// shared base; evidence then records each call's state as the
    /// attempt's changes to that base).
    pub fixtures_hash: Option<String>,
    /// When.
    pub created_at: DateTime<Utc>,
}

/// A test case to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTestCase {
    /// Its id.
    pub id: TestCaseId,
    /// Its position in the request.
    pub position: u32,
    /// The spec.
    pub spec: TestCaseSpec,
}

/// An attempt to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAttempt {
    /// Its id.
    pub id: AttemptId,
    /// Its test case.
    pub test_case: TestCaseId,
    /// 1, 2, … within the test case.
    pub number: u32,
    /// SHA-256 of the capability token.
    pub token_hash: TokenHash,
    /// Who holds the lease.
    pub lease_owner: String,
    /// Until when.
    pub lease_expires_at: DateTime<Utc>,
}

/// What the dispatcher knows of the attempt a capability is bound to. Immutable
/// for the attempt's life, so it may be cached; validity (lease, revocation)
/// is checked on every call under the state row lock.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptBinding {
    /// The tenant.
    pub tenant: TenantId,
    /// The attempt.
    pub attempt: AttemptId,
    /// Its simulation.
    pub simulation: SimulationId,
    /// Its test case's variant choices.
    pub variants: Vec<VariantChoice>,
}

impl AttemptBinding {
    /// The variant the test case chose for an operation.
    pub fn variant_for(&self, tool: &str, operation: &str) -> Option<&str> {
        self.variants
            .iter()
            .find(|c| c.tool == tool && c.operation == operation)
            .map(|c| c.variant.as_str())
    }
}

/// A capability resolved to its attempt, with whether it may be used now.
#[derive(Debug, Clone, PartialEq)]
pub struct CapabilityCheck {
    /// The attempt.
    pub binding: AttemptBinding,
    /// `true` while the attempt runs, its lease has not expired and the
    /// capability is not revoked.
    pub live: bool,
}

/// The pins of a simulation, as the dispatcher loads them.
#[derive(Debug, Clone, PartialEq)]
pub struct SimulationPins {
    /// Sandbox or real tools.
    pub mode: SimulationMode,
    /// Every reachable operation.
    pub pins: Vec<PinRecord>,
}

/// How the test code judged an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The agent behaved as expected.
    Passed,
    /// It did not.
    Failed,
}

impl Verdict {
    /// The verdict's own outcome, before harness errors are weighed
    /// ([`AttemptOutcome::decide`] weighs them).
    pub fn outcome(self) -> AttemptOutcome {
        match self {
            Verdict::Passed => AttemptOutcome::Passed,
            Verdict::Failed => AttemptOutcome::Failed,
        }
    }
}

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptOutcome {
    /// Passed, with no harness error.
    Passed,
    /// Failed, with no harness error.
    Failed,
    /// The harness was at fault: never a pass.
    HarnessError,
}

impl AttemptOutcome {
    /// The one decision of a finished attempt's outcome: `harness_error`
    /// whenever a harness error was recorded, whatever the verdict; else the
    /// verdict's. PostgreSQL makes the same decision in one function
    /// (`toolmock_attempt_outcome`, docs/data-model.md), which the finish
    /// and the harness-error trigger share.
    pub fn decide(verdict: Verdict, has_harness_error: bool) -> Self {
        if has_harness_error {
            AttemptOutcome::HarnessError
        } else {
            verdict.outcome()
        }
    }

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptOutcome::Passed => "passed",
            AttemptOutcome::Failed => "failed",
            AttemptOutcome::HarnessError => "harness_error",
        }
    }

    /// Parses the stored name.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "passed" => Some(AttemptOutcome::Passed),
            "failed" => Some(AttemptOutcome::Failed),
            "harness_error" => Some(AttemptOutcome::HarnessError),
            _ => None,
        }
    }
}

/// A stored attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptRecord {
    /// Its id.
    pub id: AttemptId,
    /// Its simulation.
    pub simulation: SimulationId,
    /// Its test case.
    pub test_case: TestCaseId,
    /// `None` while running.
    pub outcome: Option<AttemptOutcome>,
    /// Lease holder.
    pub lease_owner: String,
    /// Lease expiry.
    pub lease_expires_at: DateTime<Utc>,
    /// Whether any harness error was recorded.
    pub has_harness_error: bool,
}

/// The fixture state of an attempt and its version (0 before the first call).
#[derive(Debug, Clone, PartialEq)]
pub struct StateSnapshot {
    /// The state.
    pub state: Map<String, Value>,
    /// Incremented by every committed call.
    pub version: u64,
}

/// An attempt's state as its layers ([`FixtureStore::layered_state`](crate::backend::FixtureStore::layered_state)):
/// the base every attempt of its simulation starts from, shared and never
/// copied, and the attempt's own writes over it. What a reader keeps of an
/// attempt's state grows with what the attempt changed, not with the base;
/// [`LayeredSnapshot::whole`] builds the merged state when one is wanted.
#[derive(Debug, Clone)]
pub struct LayeredSnapshot {
    /// The shared initial state (the fixtures with the definitions'
    /// initial states), or, from a backend that keeps no layers, the
    /// attempt's whole state.
    pub base: Arc<Map<String, Value>>,
    /// The attempt's own writes over `base`.
    pub overlay: Arc<toolmock_evaluator::Overlay>,
    /// Whether `base` holds the simulation's shared fixtures (its
    /// evidence then records changes, not whole states).
    pub fixture_backed: bool,
    /// Incremented by every committed call.
    pub version: u64,
}

impl LayeredSnapshot {
    /// A whole state with no layers (a backend that keeps none).
    pub fn whole_state(snapshot: StateSnapshot) -> LayeredSnapshot {
        LayeredSnapshot {
            base: Arc::new(snapshot.state),
            overlay: Arc::new(toolmock_evaluator::Overlay::new()),
            fixture_backed: false,
            version: snapshot.version,
        }
    }

    /// The state read as one: the base with the writes over it.
    pub fn view(&self) -> toolmock_evaluator::StateView<'_> {
        toolmock_evaluator::StateView::layered(&self.base, &self.overlay)
    }

    /// The merged state, built (its size is the base's).
    pub fn whole(&self) -> Map<String, Value> {
        self.view().whole()
    }
}

/// Who answered a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Executor {
    /// The pinned mock.
    Mock,
    /// The operation's real handler (real-tools runs only). Stored and
    /// shown as `real`; not to be confused with the `external` driver (an
    /// agent outside toolmock), whose calls the pinned mocks answer.
    Real,
}

impl Executor {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Executor::Mock => "mock",
            Executor::Real => "real",
        }
    }

    /// Parses the stored name.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "mock" => Some(Executor::Mock),
            "real" => Some(Executor::Real),
            _ => None,
        }
    }
}

/// What executes an operation for real in a real-tools run (the executor of
/// its calls is then [`Executor::Real`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RealHandler {
    /// `tools/call` of the operation's name on this MCP server (streamable
    /// HTTP); the answer is the call's `structuredContent`.
    Mcp {
        /// The server's endpoint.
        url: String,
    },
    /// A `POST` of the call's arguments (as JSON) to this endpoint; the
    /// answer is the response's JSON body.
    Http {
        /// The endpoint.
        url: String,
    },
}

/// What a successful call hands the fixture store to commit: the state
/// updates and the call's evidence (the store adds the states and their
/// versions). Names and the pin are shared (`Arc`) with the dispatcher's
/// pin cache, so recording them allocates nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The new patch of each top-level state key written (a whole value for
    /// the object form of `set_state`).
    pub updates: Vec<(String, toolmock_evaluator::Patch)>,
    /// Tool name.
    pub tool: Arc<str>,
    /// Operation name.
    pub operation: Arc<str>,
    /// The pinned definition.
    pub pin: Arc<PinRef>,
    /// Mock or real.
    pub executor: Executor,
    /// The variant used.
    pub variant: Option<Arc<str>>,
    /// The matched rule.
    pub rule: Option<u32>,
    /// The arguments.
    pub arguments: Value,
    /// The rendered result, exactly as returned (`null` for a domain error).
    pub result: Value,
    /// (Version 2) the domain error the mock answered instead of a result:
    /// the evidence's status is then `domain_error` and `updates` is empty.
    pub error: Option<DomainError>,
    /// The simulated delay.
    pub delay_ms: u32,
    /// When the call arrived.
    pub started_at: DateTime<Utc>,
    /// Microseconds from arrival to the evaluated result.
    pub duration_us: u64,
}

/// What a committed call answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The rendered result.
    pub result: Value,
    /// (Version 2) the domain error answered instead of a result.
    pub error: Option<DomainError>,
    /// The state version before the call.
    pub version_before: u64,
    /// The state version after it.
    pub version_after: u64,
    /// The simulated delay to apply after the commit.
    pub delay_ms: u32,
}

/// One stored evidence row.
#[derive(Debug, Clone, PartialEq)]
pub struct EvidenceRecord {
    /// The attempt.
    pub attempt: AttemptId,
    /// Tool name.
    pub tool: String,
    /// Operation name.
    pub operation: String,
    /// The pinned definition.
    pub pin: PinRef,
    /// Mock or real.
    pub executor: Executor,
    /// The variant used.
    pub variant: Option<String>,
    /// The matched rule.
    pub rule: Option<u32>,
    /// The arguments.
    pub arguments: Value,
    /// The result returned (`null` for a domain error).
    pub result: Value,
    /// (Version 2) the domain error the call answered: the evidence's status
    /// is `domain_error` (else `ok`), and its states are equal.
    pub error: Option<DomainError>,
    /// Pre-call state.
    pub state_before: Map<String, Value>,
    /// Post-call state.
    pub state_after: Map<String, Value>,
    /// Version before.
    pub version_before: u64,
    /// Version after.
    pub version_after: u64,
    /// Simulated delay.
    pub delay_ms: u32,
    /// Arrival.
    pub started_at: DateTime<Utc>,
    /// Microseconds to the evaluated result.
    pub duration_us: u64,
}

/// A tool input error: the agent's fault, recoverable.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInputErrorRecord {
    /// The tenant.
    pub tenant: TenantId,
    /// The attempt.
    pub attempt: AttemptId,
    /// Tool name.
    pub tool: String,
    /// Operation name.
    pub operation: String,
    /// The pinned definition, when one was found.
    pub pin: Option<PinRef>,
    /// The arguments.
    pub arguments: Value,
    /// Which error.
    pub code: ToolInputCode,
    /// What is wrong.
    pub message: String,
    /// JSON pointer into the arguments.
    pub path: Option<String>,
    /// Every schema violation (`[]` for operand errors).
    pub violations: Value,
    /// When.
    pub at: DateTime<Utc>,
}

/// A harness error: the harness's fault; the attempt can never pass. Made
/// only inside this crate (`model/fault.rs`: every text cleaned of U+0000,
/// the time from an injected clock) and read back by the stores; recorded
/// through `Dispatcher::record_fault`.
#[derive(Debug, Clone, PartialEq)]
pub struct HarnessErrorRecord {
    /// The tenant.
    pub tenant: TenantId,
    /// The attempt.
    pub attempt: AttemptId,
    /// Tool name, when a call caused it.
    pub tool: Option<String>,
    /// Operation name, when a call caused it.
    pub operation: Option<String>,
    /// The pinned definition, when one was found.
    pub pin: Option<PinRef>,
    /// The arguments, when a call caused it.
    pub arguments: Option<Value>,
    /// Which fault.
    pub code: HarnessCode,
    /// What happened.
    pub message: String,
    /// JSON pointer, where one applies.
    pub path: Option<String>,
    /// Details (violations, …).
    pub detail: Value,
    /// When.
    pub at: DateTime<Utc>,
}
