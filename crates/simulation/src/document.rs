//! The simulation document (version 1), as written by hand or sent to
//! `POST /api/simulations`. Every struct refuses unknown fields.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use toolmock_runtime::model::WorkflowDoc;
use toolmock_runtime::model::{AttemptOutcome, SimulationMode, VariantChoice};

/// The whole document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimulationDocument {
    /// The schema's address, for editors; no meaning.
    #[serde(default, rename = "$schema", skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Exactly `1`.
    pub simulation_version: u32,
    /// A name for reports.
    pub name: String,
    /// No meaning.
    #[serde(default)]
    pub description: String,
    /// `sandbox` (default) or `real_tools`.
    #[serde(default = "sandbox")]
    pub mode: SimulationMode,
    /// Start even when operations are stale or missing; their calls fail closed.
    #[serde(default)]
    pub allow_incomplete: bool,
    /// Sleep each call's `delay_ms` for real instead of counting it on the
    /// virtual clock, wherever the simulation runs (as `toolmock run
    /// --real-delays` does for every simulation it runs).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub real_delays: bool,
    /// Attempts per test case (default 1).
    #[serde(default = "one")]
    pub attempts: u32,
    /// Shared fixtures: objects whose members become top-level keys of
    /// every attempt's initial state, shared by all attempts and never
    /// copied per attempt (docs/simulations.md "Fixtures").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fixtures: Vec<FixtureDoc>,
    /// The tools the agent and its workflows can reach.
    pub tools: Vec<ToolSpec>,
    /// The agent under test.
    pub agent: AgentDoc,
    /// The test cases.
    pub cases: Vec<CaseDoc>,
}

fn sandbox() -> SimulationMode {
    SimulationMode::Sandbox
}

fn one() -> u32 {
    1
}

/// Where a tool's operations come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolFrom {
    /// A platform manifest (docs/spec.md §9), in `manifest`.
    Manifest,
    /// The JSON array `toolmock normalize` / `toolmock discover` print, in `contracts`.
    Contracts,
    /// Hand-written operation contracts, in `operations`.
    Custom,
    /// An existing library tool, by `id` (the API; not the embedded run).
    Library,
}

impl ToolFrom {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolFrom::Manifest => "manifest",
            ToolFrom::Contracts => "contracts",
            ToolFrom::Custom => "custom",
            ToolFrom::Library => "library",
        }
    }
}

/// A JSON document given inline or by a path relative to the simulation file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Source {
    /// A path relative to the simulation file.
    Path(String),
    /// The document itself.
    Inline(Value),
}

/// One shared fixture: a JSON file or the object itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum FixtureDoc {
    /// A path relative to the simulation file (simulation files only;
    /// `toolmock submit` sends its content as `value`).
    File {
        /// The path.
        file: String,
    },
    /// The object itself.
    Value {
        /// The object.
        value: Map<String, Value>,
    },
}

/// One tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    /// The name agents call it by (unique).
    pub name: String,
    /// Where its operations come from.
    pub from: ToolFrom,
    /// `from: manifest`: the platform manifest.
    #[serde(default)]
    pub manifest: Option<Source>,
    /// `from: contracts`: the `normalize`/`discover` array.
    #[serde(default)]
    pub contracts: Option<Source>,
    /// `from: custom`: the operations.
    #[serde(default)]
    pub operations: Option<Vec<CustomOperation>>,
    /// `from: library`: the library tool's id.
    #[serde(default)]
    pub id: Option<String>,
    /// The tool's fallback output schema (docs/spec.md §9).
    #[serde(default)]
    pub output_schema: Option<Value>,
    /// `mode: real_tools`: the MCP server that executes this tool's
    /// operations by `tools/call` (ignored in a sandbox run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerDoc>,
    /// Each operation's mock definition, by runtime name.
    #[serde(default)]
    pub definitions: BTreeMap<String, Source>,
    /// How `toolmock verify` checks the mocks against the real tool
    /// (docs/verify.md); nothing else reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifyDoc>,
}

/// A tool's `verify` block (docs/verify.md): which operations `toolmock
/// verify` may call for real, where the real tool is when `server` does not
/// say, and how its answers are compared with the mock's.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyDoc {
    /// The operations that may be called for real: `true` (every one), a
    /// list of runtime names, or `false` (the default: none; only the
    /// contracts are compared).
    #[serde(default)]
    pub safe: SafeDoc,
    /// The real MCP server, when it is not the tool's `server` (a stdio
    /// command, or another URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<VerifyServerDoc>,
    /// An OpenAPI document (a path relative to the simulation file, or an
    /// `http(s)://` URL) whose operations give the custom operations'
    /// current schemas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openapi: Option<String>,
    /// `toolmock record` folders (relative to the simulation file) whose
    /// calls of this tool's operations are replayed, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recordings: Vec<String>,
    /// Variants whose examples are replayed besides the default variant's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<String>,
    /// How real answers are compared with the mock's (default: exactly).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matchers: Vec<MatcherDoc>,
    /// Ordered calls replayed as sequences, the mock carrying its state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chains: Vec<ChainDoc>,
}

/// Which operations `toolmock verify` may call for real.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SafeDoc {
    /// `true`: every operation of the tool; `false`: none.
    All(bool),
    /// These operations (runtime names).
    Operations(Vec<String>),
}

impl Default for SafeDoc {
    fn default() -> Self {
        SafeDoc::All(false)
    }
}

impl SafeDoc {
    /// Whether `operation` is marked safe to call.
    pub fn allows(&self, operation: &str) -> bool {
        match self {
            SafeDoc::All(all) => *all,
            SafeDoc::Operations(names) => names.iter().any(|n| n == operation),
        }
    }
}

/// The real MCP server of a `verify` block: exactly one of `url` and `command`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyServerDoc {
    /// A streamable HTTP endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A command that speaks MCP over stdio (split like a shell would,
    /// without expansion; run from the simulation file's folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

/// How one part of an answer is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchKind {
    /// Equal (numbers by value, key order free): the default.
    Exact,
    /// The same JSON kinds, recursively (values may differ).
    Type,
    /// Not compared at all.
    Ignore,
    /// Numbers within `tolerance` of each other.
    Number,
    /// Strings matching `pattern`, on both sides.
    Regex,
}

/// One matcher: how the answers are compared at `path` and below.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatcherDoc {
    /// Only this operation's answers (default: every operation's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// A JSON pointer into the answer; a segment `*` matches any member or element.
    pub path: String,
    /// How.
    #[serde(rename = "match")]
    pub kind: MatchKind,
    /// `number`: the largest difference that still agrees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<f64>,
    /// `regex`: the pattern (Rust `regex` syntax) both values must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
}

/// An ordered sequence of calls, replayed in order against the real tool
/// and the mock (which carries its state from call to call).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainDoc {
    /// Unique among the tool's chains.
    pub name: String,
    /// No meaning.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The calls.
    pub steps: Vec<ChainStepDoc>,
}

/// One call of a chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainStepDoc {
    /// Names the step for `{"$step": "ID.result.P"}` in later steps' input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The operation's runtime name.
    pub operation: String,
    /// The arguments; `{"$step": "ID.result.P"}` (or `ID.arguments.P`)
    /// reads an earlier step's, each side its own.
    #[serde(default = "empty_object")]
    pub input: Value,
    /// The mock's variant for this call (default: its default variant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

/// A hand-written operation contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustomOperation {
    /// Its runtime name.
    pub name: String,
    /// Shown to the agent.
    #[serde(default)]
    pub description: String,
    /// Input JSON Schema.
    pub input_schema: Value,
    /// Output JSON Schema (else the tool's `output_schema`).
    #[serde(default)]
    pub output_schema: Option<Value>,
    /// `mode: real_tools`: the HTTP endpoint that executes the operation,
    /// given the call's arguments as the body of a `POST` (ignored in a
    /// sandbox run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
}

/// The MCP server of a tool, for real-tools runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerDoc {
    /// Its streamable HTTP endpoint, e.g. `http://127.0.0.1:8765/mcp`.
    pub url: String,
}

/// The agent under test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentDoc {
    /// Its name.
    pub name: String,
    /// Its system prompt: opaque text for drivers that play a real agent.
    #[serde(default)]
    pub prompt: String,
    /// Prerequisite guards ("verify the member before discussing claims"):
    /// opaque text for drivers and judges.
    #[serde(default)]
    pub guards: Vec<String>,
    /// What it calls directly: tool names and workflow names.
    pub tools: Vec<String>,
    /// Its workflows.
    #[serde(default)]
    pub workflows: Vec<WorkflowDoc>,
}

/// One test case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseDoc {
    /// Unique.
    pub name: String,
    /// No meaning.
    #[serde(default)]
    pub description: String,
    /// The case's own data (`{"$case": P}` reads it).
    #[serde(default)]
    pub data: Map<String, Value>,
    /// Variant choices; other operations use their default variant.
    #[serde(default)]
    pub variants: Vec<VariantChoice>,
    /// Attempts of this case (default: the document's `attempts`): a
    /// nondeterministic agent is judged over several (pass^k, pass rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
    /// Who plays the agent.
    pub driver: DriverDoc,
    /// Who plays the user, when a model does (`docs/agents.md`, "A
    /// simulated user"); without it the user is the driver's `messages`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<UserDoc>,
    /// What must hold of the attempt.
    #[serde(default)]
    pub expect: CaseExpect,
}

impl CaseDoc {
    /// Who calls `tool` in this case: the simulated user when it is one of
    /// the user's tools (a tool belongs to one side), else the agent.
    pub fn actor_of(&self, tool: &str) -> Actor {
        match &self.user {
            Some(UserDoc::Model { tools, .. }) if tools.iter().any(|t| t == tool) => Actor::User,
            _ => Actor::Agent,
        }
    }
}

/// Who plays the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum DriverDoc {
    /// An ordered list of steps.
    Scripted {
        /// The steps.
        steps: Vec<StepDoc>,
    },
    /// An agent outside toolmock plays the case: it calls
    /// `POST /api/attempts/{id}/tool-calls` with the attempt's capability and
    /// ends the attempt with `POST /api/attempts/{id}/finish`, which judges
    /// the case's expectations over what was recorded. The API only: an
    /// embedded run has nobody to play it (`external_driver_not_embedded`).
    External,
    /// A model plays the agent (`docs/agents.md`): the agent's prompt and
    /// guards are its system message, `messages` the user's turns, and the
    /// operations and workflows the agent can reach its function tools.
    /// The endpoint is configured by whoever runs the case, never here.
    Model {
        /// The user's turns; each after the agent's final answer to the one
        /// before. With a simulated user (the case's `user`) they open the
        /// conversation and the user model goes on after them; without one
        /// there must be at least one.
        #[serde(default)]
        messages: Vec<String>,
        /// The bound on model requests over the whole conversation (default
        /// 10); reaching it fails the attempt (`turn_limit`).
        #[serde(default = "ten")]
        max_turns: u32,
    },
    /// An agent service plays the case (`docs/agents.md`): a worker POSTs the
    /// attempt (its id, capability, the tool-call and finish endpoints, the
    /// case's data and `messages`) to `url`, and the service plays it through
    /// the tool-call endpoint and ends it with `POST /api/attempts/{id}/finish`
    /// within the worker's time-out. The API only, like `external`.
    Http {
        /// The service's URL (`http://` or `https://`).
        url: String,
        /// The user's turns handed to the service.
        #[serde(default)]
        messages: Vec<String>,
    },
}

fn ten() -> u32 {
    10
}

/// Who plays the user of a case (`docs/agents.md`, "A simulated user").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum UserDoc {
    /// A model plays the user: the documented guidelines and these
    /// instructions are its system message, the agent's messages the other
    /// side of its conversation, and its replies the user's turns.
    Model {
        /// What the user wants and knows: the task, in the user's terms.
        instructions: String,
        /// How the user behaves (added to the system message when given).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        persona: String,
        /// Markers that end the conversation when a user message contains
        /// one (default `###STOP###`, `###TRANSFER###`, `###OUT-OF-SCOPE###`).
        #[serde(default = "stop_markers")]
        stop: Vec<String>,
        /// The most messages the user model writes (default 10); the agent
        /// still waiting for a user turn after them fails the attempt
        /// (`turn_limit` at `user/max_turns`).
        #[serde(default = "ten")]
        max_turns: u32,
        /// Tools the user calls on their own side (names of the document's
        /// tools, none of them the agent's): mocked and recorded like the
        /// agent's calls, in the attempt's state.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tools: Vec<String>,
    },
}

/// The stop markers of a simulated user without its own.
pub fn stop_markers() -> Vec<String> {
    ["###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"]
        .map(str::to_owned)
        .to_vec()
}

impl DriverDoc {
    /// The steps of a scripted driver; none for an external one.
    pub fn steps(&self) -> &[StepDoc] {
        match self {
            DriverDoc::Scripted { steps } => steps,
            DriverDoc::External | DriverDoc::Model { .. } | DriverDoc::Http { .. } => &[],
        }
    }
}

/// One scripted tool call (or workflow call).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepDoc {
    /// Names the step for `{"$step": "ID.…"}` (unique in its case).
    #[serde(default)]
    pub id: Option<String>,
    /// No meaning.
    #[serde(default)]
    pub description: String,
    /// The tool (with `operation`).
    #[serde(default)]
    pub tool: Option<String>,
    /// The operation's runtime name.
    #[serde(default)]
    pub operation: Option<String>,
    /// A workflow of the agent, called as a tool (instead of tool/operation).
    #[serde(default)]
    pub workflow: Option<String>,
    /// The arguments, with typed references.
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// Values added (top-level keys) when the call fails with
    /// `invalid_arguments` because required fields are missing.
    #[serde(default)]
    pub repair: Option<Map<String, Value>>,
    /// What the call must produce (default: any successful result).
    #[serde(default)]
    pub expect: Option<StepExpect>,
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// What one step must produce.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum StepExpect {
    /// Exactly this result (docs/spec.md §5 equality).
    Result(Value),
    /// A result containing this: objects by key, arrays by position.
    ResultSubset(Value),
    /// A tool input error with this code.
    ToolInputError(String),
    /// A harness error with this code (negative cases).
    HarnessError(String),
    /// (Version 2) a domain error with this code.
    DomainError(String),
}

/// What must hold of a whole attempt, for any driver.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseExpect {
    /// How the attempt must end (default `passed`).
    #[serde(default = "passed")]
    pub outcome: AttemptOutcome,
    /// The fixture state after the last call.
    #[serde(default)]
    pub final_state: Option<StateExpect>,
    /// Expectations over the recorded calls.
    #[serde(default)]
    pub trajectory: Vec<TrajectoryExpect>,
    /// Expectations over the agent's final answer (model-driven cases).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_answer: Option<FinalAnswerExpect>,
    /// A rubric graded by the judge model over the recorded conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeExpect>,
    /// What the agent must have told the user in any of its messages
    /// (model-driven cases).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_said: Option<AgentSaidExpect>,
}

/// Texts the agent must have said somewhere in the conversation: each must
/// occur in one of its messages, compared without regard to case and with
/// the message's commas left out (`1,000` is said as `1000`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSaidExpect {
    /// Each must occur in some assistant message.
    pub contains: Vec<String>,
}

impl Default for CaseExpect {
    fn default() -> Self {
        Self {
            outcome: AttemptOutcome::Passed,
            final_state: None,
            trajectory: Vec::new(),
            final_answer: None,
            judge: None,
            agent_said: None,
        }
    }
}

/// What the agent's final answer (the last assistant message without tool
/// calls) must hold. Every part must hold; text is compared as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinalAnswerExpect {
    /// Each of these must occur in it.
    #[serde(default)]
    pub contains: Vec<String>,
    /// None of these may occur in it.
    #[serde(default)]
    pub not_contains: Vec<String>,
    /// A regular expression (Rust `regex` syntax) that must match somewhere in it.
    #[serde(default)]
    pub matches: Option<String>,
}

/// A rubric for the judge model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeExpect {
    /// What a good conversation does, in plain words.
    pub rubric: String,
    /// The least score (0 to 1) that passes besides a `pass` verdict (default 0.5).
    #[serde(default = "half")]
    pub min_score: f64,
}

fn half() -> f64 {
    0.5
}

fn passed() -> AttemptOutcome {
    AttemptOutcome::Passed
}

/// The final fixture state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum StateExpect {
    /// Exactly this state.
    Exact(Map<String, Value>),
    /// A state containing this (objects by key, arrays by position).
    Subset(Map<String, Value>),
}

/// One expectation over the attempt's recorded calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TrajectoryExpect {
    /// At least one recorded call matches.
    Used {
        /// The call.
        call: CallMatcher,
    },
    /// No recorded call matches.
    NotUsed {
        /// The call.
        call: CallMatcher,
    },
    /// The recorded calls against a reference sequence.
    Sequence {
        /// `strict`, `unordered`, `subset` or `superset`.
        mode: SequenceMode,
        /// The reference calls.
        calls: Vec<CallMatcher>,
    },
    /// How many recorded calls match.
    Count {
        /// The call.
        call: CallMatcher,
        /// Exactly this many.
        #[serde(default)]
        exactly: Option<u32>,
        /// At least.
        #[serde(default)]
        at_least: Option<u32>,
        /// At most.
        #[serde(default)]
        at_most: Option<u32>,
    },
}

/// How a recorded sequence is compared with a reference sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SequenceMode {
    /// The same calls in the same order, nothing else.
    Strict,
    /// The same calls in any order, nothing else.
    Unordered,
    /// Every recorded call matches a distinct reference call (no extra calls).
    Subset,
    /// Every reference call matches a distinct recorded call (extra calls allowed).
    Superset,
}

/// A pattern for one recorded call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallMatcher {
    /// Tool name.
    pub tool: String,
    /// Operation name (any when absent).
    #[serde(default)]
    pub operation: Option<String>,
    /// The arguments (any when absent).
    #[serde(default)]
    pub arguments: Option<Value>,
    /// `subset` (default) or `exact`.
    #[serde(default)]
    pub arguments_match: ArgumentsMatch,
    /// `ok`, `tool_input_error`, `harness_error` or `domain_error` (any
    /// when absent).
    #[serde(default)]
    pub status: Option<CallStatus>,
    /// The code the call ended with — a tool input error's, a harness
    /// error's or a domain error's (any when absent; a call that returned
    /// a result has none, so never matches one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// How arguments are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArgumentsMatch {
    /// Objects by key, arrays by position.
    #[default]
    Subset,
    /// docs/spec.md §5 equality.
    Exact,
}

/// How a recorded call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// A result was returned.
    Ok,
    /// A tool input error.
    ToolInputError,
    /// A harness error.
    HarnessError,
    /// (Version 2) the mock answered a domain error
    /// (`error: {code, message, data?}`): an answer, neither the agent's
    /// fault nor the harness's.
    DomainError,
}

impl CallStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            CallStatus::Ok => "ok",
            CallStatus::ToolInputError => "tool_input_error",
            CallStatus::HarnessError => "harness_error",
            CallStatus::DomainError => "domain_error",
        }
    }
}

/// Who made a tool call: the agent, or a simulated user on their own side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    /// The agent under test.
    #[default]
    Agent,
    /// The simulated user.
    User,
}

impl Actor {
    /// Whether it is the agent (the default, left out when written).
    pub fn is_agent(&self) -> bool {
        *self == Actor::Agent
    }

    /// `agent` or `user`.
    pub fn as_str(self) -> &'static str {
        match self {
            Actor::Agent => "agent",
            Actor::User => "user",
        }
    }
}
