//! What the agent, simulation and attempt routes answer.

use super::usage::{BudgetView, ModelRequestView, TokensView, tokens_view};
use crate::error::ApiError;
use crate::jobs::FollowStep;
use axum::response::sse::Event;
use serde::Serialize;
use serde_json::{Value, json};
use toolmock_runtime::model::{
    AgentId, AgentSpec, AttemptRecord, EvidenceRecord, HarnessErrorRecord, LayeredSnapshot,
    PinRecord, PinRef, PinTarget, ToolId, ToolInputErrorRecord,
};
use toolmock_simulation::document::{DriverDoc, SimulationDocument};
use toolmock_store::{AttemptListing, SimulationListing};
use utoipa::ToSchema;
use uuid::Uuid;

/// An agent.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AgentView {
    /// Its id.
    pub(crate) id: Uuid,
    /// Its name.
    pub(crate) name: String,
    /// What it reaches.
    #[schema(value_type = Vec<Object>)]
    pub(crate) tools: Value,
    /// Its workflows.
    #[schema(value_type = Vec<Object>)]
    pub(crate) workflows: Value,
    /// Its system prompt.
    pub(crate) prompt: String,
    /// Its prerequisite guards.
    pub(crate) guards: Vec<String>,
}

pub(crate) fn agent_view(
    id: AgentId,
    name: String,
    spec: &AgentSpec,
) -> Result<AgentView, ApiError> {
    let internal = |e: serde_json::Error| ApiError::Internal(e.to_string());
    Ok(AgentView {
        id: id.as_uuid(),
        name,
        tools: serde_json::to_value(&spec.tools).map_err(internal)?,
        workflows: serde_json::to_value(&spec.workflows).map_err(internal)?,
        prompt: spec.prompt.clone(),
        guards: spec.guards.clone(),
    })
}

/// One pin of a simulation.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct PinView {
    /// Tool name.
    pub(crate) tool: String,
    /// Operation name.
    pub(crate) operation: String,
    /// `library`, `inline` or `unpinned`.
    pub(crate) kind: String,
    /// The library tool.
    pub(crate) tool_id: Option<Uuid>,
    /// The library revision.
    pub(crate) revision: Option<u32>,
    /// The pinned definition's hash.
    pub(crate) definition_hash: Option<String>,
    /// Why an operation is unpinned (`allow_incomplete`).
    pub(crate) unpinned_reason: Option<String>,
}

pub(crate) fn pin_view(p: &PinRecord) -> PinView {
    let (kind, tool_id, revision, hash, reason) = match &p.pin {
        PinTarget::Pinned { pin, .. } => {
            let tool_id = match pin {
                PinRef::Library { tool, .. } => Some(ToolId::as_uuid(tool)),
                PinRef::Inline { .. } | PinRef::Effect { .. } => None,
            };
            (
                pin.kind(),
                tool_id,
                pin.revision(),
                Some(pin.definition_hash().to_string()),
                None,
            )
        }
        PinTarget::Unpinned { reason } => (
            "unpinned",
            None,
            None,
            None,
            Some(reason.as_str().to_owned()),
        ),
    };
    PinView {
        tool: p.tool.clone(),
        operation: p.operation.clone(),
        kind: kind.to_owned(),
        tool_id,
        revision,
        definition_hash: hash,
        unpinned_reason: reason,
    }
}

/// One attempt of a started simulation.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct StartedAttemptView {
    /// Its id.
    pub(crate) id: Uuid,
    /// Its test case's name.
    pub(crate) test_case: String,
    /// 1, 2, … within the test case.
    pub(crate) number: u32,
    /// `scripted`, `model` or `http` (queued for the workers: a script, a
    /// model, or an agent service the worker hands the attempt to) or
    /// `external` (played by the caller through the tool-call endpoint,
    /// then `finish`).
    pub(crate) driver: String,
    /// The capability an external agent (or a nested service it drives)
    /// calls `POST /api/attempts/{id}/tool-calls` and `finish` with. Shown
    /// only here, and only for an `external` attempt: a scripted attempt is
    /// toolmock's to play, so nobody else can inject calls into it (`null`).
    pub(crate) capability: Option<String>,
}

/// A started simulation.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct StartedView {
    /// Its id.
    pub(crate) id: Uuid,
    /// The document's name.
    pub(crate) name: String,
    /// The agent created for it.
    pub(crate) agent: Uuid,
    /// Every reachable operation and its pin.
    pub(crate) pins: Vec<PinView>,
    /// The attempts.
    pub(crate) attempts: Vec<StartedAttemptView>,
}

pub(crate) fn driver_name(driver: &DriverDoc) -> &'static str {
    match driver {
        DriverDoc::Scripted { .. } => "scripted",
        DriverDoc::External => "external",
        DriverDoc::Model { .. } => "model",
        DriverDoc::Http { .. } => "http",
    }
}

/// A simulation and how its attempts stand.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SimulationItem {
    /// Its id.
    pub(crate) id: Uuid,
    /// The document's name (absent for a simulation started without one).
    pub(crate) name: Option<String>,
    /// The agent under test.
    pub(crate) agent: Uuid,
    /// When it started.
    pub(crate) created_at: chrono::DateTime<chrono::Utc>,
    /// `queued` while every attempt waits in the queue for a worker,
    /// `running` once one is under way or finished, `finished` when every
    /// attempt has finished.
    pub(crate) status: String,
    /// Attempts in all (the detail view lists them under `attempts`).
    pub(crate) attempt_count: u32,
    /// Attempts waiting in the queue for a worker (not yet claimed).
    pub(crate) queued: u32,
    /// Attempts under way (claimed by a worker, or played by an external
    /// agent) and not finished yet.
    pub(crate) running: u32,
    /// Finished as passed.
    pub(crate) passed: u32,
    /// Finished as failed.
    pub(crate) failed: u32,
    /// Finished as harness_error.
    pub(crate) harness_error: u32,
    /// The sha256 of the canonical JSON of the shared fixtures it was
    /// started with (absent when it had none), as `toolmock run` reports it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fixtures_hash: Option<String>,
    /// Its attempts' model requests' usage, summed (absent: no answer
    /// reported usage).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tokens: Option<TokensView>,
}

pub(crate) fn simulation_item(s: SimulationListing) -> SimulationItem {
    SimulationItem {
        id: s.id.as_uuid(),
        name: s.name,
        agent: s.agent.as_uuid(),
        created_at: s.created_at,
        status: if s.running == 0 && s.queued == 0 {
            "finished"
        } else if s.running == 0 && s.queued == s.attempts {
            "queued"
        } else {
            "running"
        }
        .to_owned(),
        attempt_count: s.attempts,
        queued: s.queued,
        running: s.running,
        passed: s.passed,
        failed: s.failed,
        harness_error: s.harness_error,
        fixtures_hash: s.fixtures_hash,
        tokens: s.tokens.map(tokens_view),
    }
}

/// A page of simulations.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SimulationPage {
    /// Newest first.
    pub(crate) simulations: Vec<SimulationItem>,
    /// Pass as `before` for the next page; absent on the last page.
    pub(crate) next: Option<Uuid>,
}

/// One attempt as its simulation lists it.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub(crate) struct AttemptItem {
    /// Its id.
    pub(crate) id: Uuid,
    /// Its test case's name.
    pub(crate) test_case: String,
    /// 1, 2, … within its test case.
    pub(crate) number: u32,
    /// `scripted`, `external`, `model` or `http` (absent without a document).
    pub(crate) driver: Option<String>,
    /// `queued` (waiting for a worker), `running` or `finished`.
    pub(crate) status: String,
    /// `passed`, `failed` or `harness_error` once finished.
    pub(crate) outcome: Option<String>,
    /// The outcome its case expects (default `passed`).
    pub(crate) expected_outcome: Option<String>,
    /// Whether the outcome is the expected one, once finished.
    pub(crate) as_expected: Option<bool>,
    /// Whether a harness error was recorded (it can then never pass).
    pub(crate) has_harness_error: bool,
    /// When it finished.
    pub(crate) finished_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Every call it recorded: answered, refused as a tool input error, or
    /// ended by a harness error (the timeline's entries that name a tool).
    pub(crate) calls: u32,
    /// Every expectation it did not meet (`[]`: all met), once judged.
    #[schema(value_type = Option<Vec<Object>>)]
    pub(crate) unmet: Option<Value>,
    /// The judge's report of a case with a `judge` rubric, once graded.
    pub(crate) judge: Option<JudgeView>,
    /// Its model requests' usage, summed (absent: no answer reported
    /// usage); the attempt's page lists them one by one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tokens: Option<TokensView>,
}

/// What a judge model said of an attempt's recorded conversation.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, ToSchema)]
pub(crate) struct JudgeView {
    /// `pass` or `fail`.
    pub(crate) verdict: String,
    /// 0 to 1.
    pub(crate) score: f64,
    /// Why.
    pub(crate) reasoning: String,
}

/// One message of a model-driven attempt's conversation, in order.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct MessageView {
    /// 0 for the system message, then in the order they were added.
    pub(crate) position: u32,
    /// When it was added.
    pub(crate) at: chrono::DateTime<chrono::Utc>,
    /// `system`, `user`, `assistant` or `tool`.
    pub(crate) role: String,
    /// The text (an assistant that only calls tools has none; a tool
    /// message's is the result as JSON text, or `{"error": …}`).
    pub(crate) content: Option<String>,
    /// An assistant's tool calls, in the order the model gave them (or a
    /// simulated user's calls of its own tools).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_calls: Option<Vec<ToolCallView>>,
    /// A tool message: the call it answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_call_id: Option<String>,
    /// A simulated user's message that ended the conversation: the stop
    /// marker it contains.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) stop: Option<String>,
    /// A tool message: whose call it answers, `agent` or `user` (a
    /// simulated user's own call).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) actor: Option<String>,
}

/// One function call an assistant message asked for.
#[derive(Debug, Serialize, serde::Deserialize, ToSchema)]
pub(crate) struct ToolCallView {
    /// The model's id for it (the tool message's `tool_call_id`).
    pub(crate) id: String,
    /// The function name as the model wrote it.
    pub(crate) name: String,
    /// The arguments as the JSON text the model wrote.
    pub(crate) arguments: String,
}

/// A kept message as the attempt view shows it.
pub(crate) fn message_view(m: toolmock_store::StoredMessage) -> MessageView {
    let text = |key: &str| {
        m.message
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    MessageView {
        position: m.position,
        at: m.at,
        role: text("role").unwrap_or_default(),
        content: text("content"),
        tool_calls: m
            .message
            .get("tool_calls")
            .and_then(|c| serde_json::from_value(c.clone()).ok()),
        tool_call_id: text("tool_call_id"),
        stop: text("stop"),
        // Recorded only for the user's (`Actor::is_agent` is left out).
        actor: (m.message.get("role").and_then(Value::as_str) == Some("tool"))
            .then(|| text("actor").unwrap_or_else(|| "agent".to_owned())),
    }
}

pub(crate) fn attempt_item(
    a: AttemptListing,
    document: Option<&SimulationDocument>,
) -> AttemptItem {
    let case = document.and_then(|d| d.cases.get(a.case_position as usize));
    let expected = case.map(|c| c.expect.outcome);
    AttemptItem {
        id: a.id.as_uuid(),
        test_case: a.test_case,
        number: a.number,
        driver: case.map(|c| driver_name(&c.driver).to_owned()),
        status: if a.outcome.is_some() {
            "finished"
        } else if a.queued {
            "queued"
        } else {
            "running"
        }
        .to_owned(),
        outcome: a.outcome.map(|o| o.as_str().to_owned()),
        expected_outcome: expected.map(|o| o.as_str().to_owned()),
        as_expected: a.outcome.zip(expected).map(|(o, e)| o == e),
        has_harness_error: a.has_harness_error,
        finished_at: a.finished_at,
        calls: a.calls,
        unmet: a.unmet,
        judge: a.judge.and_then(|j| serde_json::from_value(j).ok()),
        tokens: a.tokens.map(tokens_view),
    }
}

/// A simulation with its pins and attempts.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SimulationView {
    /// How it stands.
    #[serde(flatten)]
    pub(crate) summary: SimulationItem,
    /// Every reachable operation and its pin, as fixed at the start.
    pub(crate) pins: Vec<PinView>,
    /// Its attempts, in document order.
    pub(crate) attempts: Vec<AttemptItem>,
    /// The document it was started with.
    #[schema(value_type = Option<Object>)]
    pub(crate) document: Option<Value>,
    /// Its budget and what its requests spent of it (absent: no budget).
    pub(crate) budget: Option<BudgetView>,
}

/// The coverage report of a simulation.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct CoverageView {
    /// Finished attempts counted.
    pub(crate) attempts: u32,
    /// Per pinned operation: calls, per variant calls and rules used, and
    /// everything never exercised (`VARIANT`, `VARIANT/rules/N`, `VARIANT/own`).
    #[schema(value_type = Vec<Object>)]
    pub(crate) operations: Value,
}

/// One server-sent event of a simulation's stream.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SimulationEvent {
    /// `snapshot`, `attempt`, `finished` or `error`.
    #[schema(pattern = "^(snapshot|attempt|finished|error)$")]
    pub(crate) event: String,
    /// JSON: `snapshot` `{simulation, attempts}`; `attempt` an attempt as
    /// listed; `finished` the final counts; `error` `{code, message}`.
    pub(crate) data: String,
}

/// An attempt's state, `{"state": {…}, "version": N}`, written from its
/// layers: the simulation's shared base and the attempt's writes are never
/// merged into a copy, so a view holds what the attempt changed and the
/// text it answers, not a second fixture database.
#[derive(Debug)]
pub(crate) struct AttemptState(pub(crate) LayeredSnapshot);

impl Serialize for AttemptState {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("state", &self.0.view())?;
        map.serialize_entry("version", &self.0.version)?;
        map.end()
    }
}

/// What an attempt recorded.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AttemptView {
    /// The attempt as its simulation lists it.
    #[serde(flatten)]
    pub(crate) item: AttemptItem,
    /// Its simulation.
    pub(crate) simulation: Uuid,
    /// Until when its capability is valid.
    pub(crate) lease_expires_at: chrono::DateTime<chrono::Utc>,
    /// The fixture state now, and its version.
    #[schema(value_type = Object)]
    pub(crate) state: AttemptState,
    /// Every committed call in order, with the state before and after and
    /// `actor`: whose call it was, `agent` or `user` (a simulated user's
    /// own tool).
    #[schema(value_type = Vec<Object>)]
    pub(crate) evidence: Vec<Value>,
    /// The recoverable argument errors, each with `actor` as `evidence`'s.
    #[schema(value_type = Vec<Object>)]
    pub(crate) tool_input_errors: Vec<Value>,
    /// The harness's faults.
    #[schema(value_type = Vec<Object>)]
    pub(crate) harness_errors: Vec<Value>,
    /// A model-driven attempt's conversation, in order, as it was played,
    /// or an external agent's with its case's simulated user (`ask-user`);
    /// empty otherwise. The model endpoint's configuration is never part of
    /// it.
    pub(crate) conversation: Vec<MessageView>,
    /// Every model request whose answer reported usage, in order (the
    /// agent's, a simulated user's and the judge's).
    pub(crate) model_requests: Vec<ModelRequestView>,
}

/// What finishing an external attempt decided.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct FinishedView {
    /// `passed`, `failed`, or `harness_error` (a recorded harness error
    /// decides it, whatever the expectations say).
    pub(crate) outcome: String,
    /// Whether that is the outcome the case expects.
    pub(crate) as_expected: bool,
    /// Every expectation of the case that did not hold over what the
    /// attempt recorded (`[]`: all held).
    #[schema(value_type = Vec<Object>)]
    pub(crate) unmet: Value,
}

/// An attempt with everything it recorded, as `GET /api/attempts/{id}`
/// answers it.
pub(crate) fn attempt_view(
    item: AttemptItem,
    record: &AttemptRecord,
    snapshot: LayeredSnapshot,
    evidence: Vec<EvidenceRecord>,
    tool_input_errors: Vec<ToolInputErrorRecord>,
    harness_errors: Vec<HarnessErrorRecord>,
) -> AttemptView {
    let evidence = evidence
        .into_iter()
        .map(|e| {
            json!({"tool": e.tool, "operation": e.operation, "pin": e.pin, "executor": e.executor,
                   "variant": e.variant, "rule": e.rule, "arguments": e.arguments, "result": e.result,
                   "status": if e.error.is_some() { "domain_error" } else { "ok" }, "error": e.error,
                   "state_before": e.state_before, "state_after": e.state_after,
                   "version_before": e.version_before, "version_after": e.version_after,
                   "delay_ms": e.delay_ms, "started_at": e.started_at, "duration_us": e.duration_us})
        })
        .collect();
    let tool_input_errors = tool_input_errors
        .into_iter()
        .map(|e| {
            json!({"tool": e.tool, "operation": e.operation, "pin": e.pin, "arguments": e.arguments,
                   "code": e.code, "message": e.message, "path": e.path, "violations": e.violations, "at": e.at})
        })
        .collect();
    let harness_errors = harness_errors
        .into_iter()
        .map(|e| {
            json!({"tool": e.tool, "operation": e.operation, "pin": e.pin, "arguments": e.arguments,
                   "code": e.code, "message": e.message, "path": e.path, "detail": e.detail, "at": e.at})
        })
        .collect();
    AttemptView {
        item,
        simulation: record.simulation.as_uuid(),
        lease_expires_at: record.lease_expires_at,
        state: AttemptState(snapshot),
        evidence,
        tool_input_errors,
        harness_errors,
        conversation: Vec::new(),
        model_requests: Vec::new(),
    }
}

/// The server-sent events of one step of a followed simulation (see
/// `GET /api/simulations/{id}/events`).
pub(crate) fn step_events(step: FollowStep, document: Option<&SimulationDocument>) -> Vec<Event> {
    let item = |a| attempt_item(a, document);
    match step {
        FollowStep::Snapshot(summary, attempts) => {
            let attempts: Vec<AttemptItem> = attempts.into_iter().map(item).collect();
            vec![event(
                "snapshot",
                &json!({"simulation": simulation_item(summary), "attempts": attempts}),
            )]
        }
        FollowStep::Changed(attempts) => attempts
            .into_iter()
            .map(|a| event("attempt", &item(a)))
            .collect(),
        FollowStep::Finished(summary) => vec![event("finished", &simulation_item(summary))],
        FollowStep::Failed(e) => vec![event(
            "error",
            &json!({"code": e.code(), "message": "the simulation cannot be read"}),
        )],
    }
}

fn event(name: &str, data: &impl Serialize) -> Event {
    Event::default()
        .event(name)
        .json_data(data)
        .unwrap_or_else(|_| Event::default().event("error").data("{}"))
}
