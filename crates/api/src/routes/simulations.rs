//! Agents, simulation starts and what an attempt recorded.

use crate::AppState;
use crate::auth::{Authorized, RunSimulations};
use crate::error::{ApiCode, ApiError};
use crate::extract::{ApiJson, ApiPath};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::Duration;
use toolmock_runtime::StartRequest;
use toolmock_runtime::backend::{AttemptStore, Catalog, EvidenceSink, FixtureStore};
use toolmock_runtime::error::StartError;
use toolmock_runtime::model::{
    AgentId, AgentSpec, AttemptId, PinRef, PinTarget, SimulationMode, TestCaseSpec, ToolId, ToolRef,
};
use utoipa::ToSchema;
use uuid::Uuid;

/// `POST /api/agents`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateAgent {
    /// Its name.
    name: String,
    /// Library tools (`{"type": "library", "tool": id}`), inline tools
    /// (`{"type": "inline", "name", "operations"}`) and workflows called as
    /// tools (`{"type": "workflow", "workflow"}`).
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    tools: Vec<Value>,
    /// Workflows in the documented format (docs/workflows.md): `{name,
    /// start?, max_steps?, nodes}` with tool, branch, return and effect nodes.
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    workflows: Vec<Value>,
}

/// An agent.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AgentView {
    /// Its id.
    id: Uuid,
    /// Its name.
    name: String,
    /// What it reaches.
    #[schema(value_type = Vec<Object>)]
    tools: Value,
    /// Its workflows.
    #[schema(value_type = Vec<Object>)]
    workflows: Value,
}

fn agent_view(id: AgentId, name: String, spec: &AgentSpec) -> Result<AgentView, ApiError> {
    let internal = |e: serde_json::Error| ApiError::Internal(e.to_string());
    Ok(AgentView {
        id: id.as_uuid(),
        name,
        tools: serde_json::to_value(&spec.tools).map_err(internal)?,
        workflows: serde_json::to_value(&spec.workflows).map_err(internal)?,
    })
}

/// Creates an agent. Every library tool it names must be one of the tenant's.
#[utoipa::path(post, path = "/api/agents", tag = "simulations",
    request_body = CreateAgent,
    security(("bearer" = ["AIManager:RunSimulations"])),
    responses(
        (status = 201, description = "Created", body = AgentView),
        (status = 422, description = "`invalid_agent`: every problem with its pointer (an unknown library tool, a malformed tool or workflow)", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn create_agent(
    auth: Authorized<RunSimulations>,
    State(state): State<AppState>,
    ApiJson(body): ApiJson<CreateAgent>,
) -> Result<(StatusCode, Json<AgentView>), ApiError> {
    let tenant = auth.principal.tenant;
    let mut problems = Vec::new();
    if body.name.is_empty() {
        problems.push(
            json!({"code": "invalid_name", "path": "/name", "message": "the agent needs a name"}),
        );
    }
    let mut tools = Vec::new();
    for (i, value) in body.tools.iter().enumerate() {
        match serde_json::from_value::<ToolRef>(value.clone()) {
            Ok(tool) => tools.push((i, tool)),
            Err(e) => problems.push(json!({"code": "invalid_tool", "path": format!("/tools/{i}"), "message": e.to_string()})),
        }
    }
    let mut workflows = Vec::new();
    for (i, value) in body.workflows.iter().enumerate() {
        match serde_json::from_value(value.clone()) {
            Ok(workflow) => workflows.push(workflow),
            Err(e) => problems.push(json!({"code": "invalid_workflow", "path": format!("/workflows/{i}"), "message": e.to_string()})),
        }
    }
    for (i, tool) in &tools {
        if let ToolRef::Library { tool } = tool {
            match state.store().tool(tenant, *tool).await {
                Ok(_) => {}
                Err(e) if e.is_not_found() => problems.push(
                    json!({"code": "unknown_tool", "path": format!("/tools/{i}/tool"),
                    "message": format!("the tenant has no library tool {tool}")}),
                ),
                Err(e) => return Err(e.into()),
            }
        }
    }
    if !problems.is_empty() {
        return Err(ApiError::Unprocessable {
            code: ApiCode::InvalidAgent,
            message: "the agent is not valid".into(),
            details: json!({ "problems": problems }),
        });
    }
    let spec = AgentSpec {
        tools: tools.into_iter().map(|(_, t)| t).collect(),
        workflows,
    };
    state.ensure_tenant(&auth.principal).await?;
    let id = state
        .store()
        .create_agent(tenant, &body.name, &spec)
        .await?;
    Ok((StatusCode::CREATED, Json(agent_view(id, body.name, &spec)?)))
}

/// One agent.
#[utoipa::path(get, path = "/api/agents/{id}", tag = "simulations",
    params(("id" = Uuid, Path, description = "The agent's id")),
    security(("bearer" = ["AIManager:RunSimulations"])),
    responses(
        (status = 200, description = "The agent", body = AgentView),
        (status = 404, description = "No such agent for this tenant", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn get_agent(
    auth: Authorized<RunSimulations>,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<Json<AgentView>, ApiError> {
    let agent = state
        .store()
        .agent(auth.principal.tenant, AgentId(id))
        .await?;
    Ok(Json(agent_view(agent.id, agent.name, &agent.spec)?))
}

/// `POST /api/simulations`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StartSimulation {
    /// The agent under test.
    agent: Uuid,
    /// `sandbox` (default) or `real_tools`.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    mode: Option<SimulationMode>,
    /// Start although some operations are stale or missing (their calls fail closed).
    #[serde(default)]
    allow_incomplete: bool,
    /// The test cases: `{name, variants?: [{tool, operation, variant}]}`.
    #[schema(value_type = Vec<Object>)]
    test_cases: Vec<TestCaseSpec>,
    /// Attempts per test case (default 1).
    #[serde(default)]
    attempts_per_case: Option<u32>,
    /// How long the attempts' capabilities stay valid, in seconds (default 3600).
    #[serde(default)]
    lease_secs: Option<u64>,
}

/// One pin of a started simulation.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct PinView {
    /// Tool name.
    tool: String,
    /// Operation name.
    operation: String,
    /// `library`, `inline` or `unpinned`.
    kind: String,
    /// The library tool.
    tool_id: Option<Uuid>,
    /// The library revision.
    revision: Option<u32>,
    /// The pinned definition's hash.
    definition_hash: Option<String>,
    /// Why an operation is unpinned (`allow_incomplete`).
    unpinned_reason: Option<String>,
}

/// One attempt of a started simulation.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct StartedAttemptView {
    /// Its id.
    id: Uuid,
    /// Its test case's name.
    test_case: String,
    /// 1, 2, … within the test case.
    number: u32,
    /// The capability a nested service or external agent calls
    /// `POST /api/attempts/{id}/tool-calls` with. Shown only here.
    capability: String,
}

/// A started simulation.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct StartedView {
    /// Its id.
    id: Uuid,
    /// Every reachable operation and its pin.
    pins: Vec<PinView>,
    /// The attempts.
    attempts: Vec<StartedAttemptView>,
}

/// Starts a simulation: pins every reachable operation (SPEC §8) and creates
/// its attempts with their fixture state and capabilities.
#[utoipa::path(post, path = "/api/simulations", tag = "simulations",
    request_body = StartSimulation,
    security(("bearer" = ["AIManager:RunSimulations"])),
    responses(
        (status = 201, description = "Started", body = StartedView),
        (status = 404, description = "No such agent for this tenant", body = crate::ErrorEnvelope),
        (status = 422, description = "`start_refused` listing every stale or missing operation, state conflict and effect node in `details.problems`; `invalid_start` for an unusable request", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn start_simulation(
    auth: Authorized<RunSimulations>,
    State(state): State<AppState>,
    ApiJson(body): ApiJson<StartSimulation>,
) -> Result<(StatusCode, Json<StartedView>), ApiError> {
    let request = StartRequest {
        agent: AgentId(body.agent),
        mode: body.mode.unwrap_or(SimulationMode::Sandbox),
        allow_incomplete: body.allow_incomplete,
        test_cases: body.test_cases,
        attempts_per_case: body.attempts_per_case.unwrap_or(1),
        lease_owner: format!("api:{}", auth.principal.subject),
        lease: Duration::from_secs(body.lease_secs.unwrap_or(3600)),
    };
    let started = state
        .dispatcher()
        .start(auth.principal.tenant, &request)
        .await
        .map_err(|e| match e {
            StartError::Refused { problems } => ApiError::Unprocessable {
                code: ApiCode::StartRefused,
                message: format!(
                    "the simulation cannot start ({} problem(s))",
                    problems.len()
                ),
                details: json!({ "problems": problems }),
            },
            StartError::InvalidRequest(message) => ApiError::Unprocessable {
                code: ApiCode::InvalidStart,
                message,
                details: json!({ "problems": [] }),
            },
            StartError::Store(e) => e.into(),
        })?;
    let pins = started
        .pins
        .iter()
        .map(|p| {
            let (kind, tool_id, revision, hash, reason) = match &p.pin {
                PinTarget::Pinned { pin, .. } => {
                    let tool_id = match pin {
                        PinRef::Library { tool, .. } => Some(ToolId::as_uuid(tool)),
                        PinRef::Inline { .. } => None,
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
        })
        .collect();
    let attempts = started
        .attempts
        .iter()
        .map(|a| StartedAttemptView {
            id: a.id.as_uuid(),
            test_case: a.test_case_name.clone(),
            number: a.number,
            capability: a.capability.token().to_owned(),
        })
        .collect();
    Ok((
        StatusCode::CREATED,
        Json(StartedView {
            id: started.id.as_uuid(),
            pins,
            attempts,
        }),
    ))
}

/// What an attempt recorded.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AttemptView {
    /// Its id.
    id: Uuid,
    /// Its simulation.
    simulation: Uuid,
    /// `passed`, `failed`, `harness_error`, or absent while running.
    outcome: Option<String>,
    /// Whether any harness error was recorded (it can then never pass).
    has_harness_error: bool,
    /// Until when its capability is valid.
    lease_expires_at: chrono::DateTime<chrono::Utc>,
    /// The fixture state now, and its version.
    #[schema(value_type = Object)]
    state: Value,
    /// Every committed call in order, with the state before and after.
    #[schema(value_type = Vec<Object>)]
    evidence: Vec<Value>,
    /// The agent's recoverable argument errors.
    #[schema(value_type = Vec<Object>)]
    tool_input_errors: Vec<Value>,
    /// The harness's faults.
    #[schema(value_type = Vec<Object>)]
    harness_errors: Vec<Value>,
}

/// An attempt with its evidence timeline, tool input errors and harness errors.
#[utoipa::path(get, path = "/api/attempts/{id}", tag = "simulations",
    params(("id" = Uuid, Path, description = "The attempt's id")),
    security(("bearer" = ["AIManager:RunSimulations"])),
    responses(
        (status = 200, description = "The attempt", body = AttemptView),
        (status = 404, description = "No such attempt for this tenant", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn get_attempt(
    auth: Authorized<RunSimulations>,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<Json<AttemptView>, ApiError> {
    let tenant = auth.principal.tenant;
    let attempt = AttemptId(id);
    let store = state.store();
    let record = store.attempt(tenant, attempt).await?;
    let snapshot = store.state(tenant, attempt).await?;
    let evidence = store
        .evidence(tenant, attempt)
        .await?
        .into_iter()
        .map(|e| {
            json!({"tool": e.tool, "operation": e.operation, "pin": e.pin, "executor": e.executor,
                   "variant": e.variant, "rule": e.rule, "arguments": e.arguments, "result": e.result,
                   "state_before": e.state_before, "state_after": e.state_after,
                   "version_before": e.version_before, "version_after": e.version_after,
                   "delay_ms": e.delay_ms, "started_at": e.started_at, "duration_us": e.duration_us})
        })
        .collect();
    let tool_input_errors = store
        .tool_input_errors(tenant, attempt)
        .await?
        .into_iter()
        .map(|e| {
            json!({"tool": e.tool, "operation": e.operation, "pin": e.pin, "arguments": e.arguments,
                   "code": e.code, "message": e.message, "path": e.path, "violations": e.violations, "at": e.at})
        })
        .collect();
    let harness_errors = store
        .harness_errors(tenant, attempt)
        .await?
        .into_iter()
        .map(|e| {
            json!({"tool": e.tool, "operation": e.operation, "pin": e.pin, "arguments": e.arguments,
                   "code": e.code, "message": e.message, "path": e.path, "detail": e.detail, "at": e.at})
        })
        .collect();
    Ok(Json(AttemptView {
        id,
        simulation: record.simulation.as_uuid(),
        outcome: record.outcome.map(|o| o.as_str().to_owned()),
        has_harness_error: record.has_harness_error,
        lease_expires_at: record.lease_expires_at,
        state: json!({"state": snapshot.state, "version": snapshot.version}),
        evidence,
        tool_input_errors,
        harness_errors,
    }))
}
