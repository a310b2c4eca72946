//! Agents; simulations started from their document, listed, read, followed
//! as server-sent events and their coverage; what an attempt recorded.

use crate::AppState;
use crate::auth::{Authorized, RunSimulations};
use crate::error::{ApiCode, ApiError};
use crate::extract::ApiQuery;
use crate::extract::{ApiJson, ApiPath};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;
use toolmock_contract::pointer;
use toolmock_runtime::backend::{AttemptStore, Catalog, EvidenceSink, FixtureStore, PinStore};
use toolmock_runtime::error::StartError;
use toolmock_runtime::model::{
    AgentId, AgentSpec, AttemptId, PinRecord, PinRef, PinTarget, SimulationId, TenantId, ToolId,
    ToolRef, VariantChoice,
};
use toolmock_runtime::simulation::document::{DriverDoc, SimulationDocument};
use toolmock_runtime::simulation::expect::recorded_calls;
use toolmock_runtime::simulation::{
    CallReport, Files, Problem, RunError, coverage, install_inline, load_value, start_problems,
    start_request,
};
use toolmock_runtime::workflow::{NodeDoc, WorkflowDoc};
use toolmock_store::{AttemptListing, SimulationListing};
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
    /// Its system prompt, for whoever plays it (opaque to toolmock).
    #[serde(default)]
    prompt: String,
    /// Prerequisite guards, for drivers and judges (opaque to toolmock).
    #[serde(default)]
    guards: Vec<String>,
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
    /// Its system prompt.
    prompt: String,
    /// Its prerequisite guards.
    guards: Vec<String>,
}

fn agent_view(id: AgentId, name: String, spec: &AgentSpec) -> Result<AgentView, ApiError> {
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
    // The names the agent's calls can use: its tools' and its workflows'.
    let mut names: Vec<String> = Vec::new();
    let mut names_known = true;
    for (i, tool) in &tools {
        match tool {
            ToolRef::Library { tool } => match state.store().tool(tenant, *tool).await {
                Ok(found) => names.push(found.name),
                Err(e) if e.is_not_found() => {
                    names_known = false;
                    problems.push(
                        json!({"code": "unknown_tool", "path": format!("/tools/{i}/tool"),
                        "message": format!("the tenant has no library tool {tool}")}),
                    );
                }
                Err(e) => return Err(e.into()),
            },
            ToolRef::Inline(inline) => names.push(inline.name.clone()),
            ToolRef::Workflow { workflow } => names.push(workflow.clone()),
        }
    }
    // A workflow's tool node calls through the agent's own tools: one that
    // names a tool the agent lacks would only fail at call time. (With an
    // unknown library tool its name is unknown too: that one problem is enough.)
    for (w, workflow) in workflows.iter().enumerate().filter(|_| names_known) {
        let workflow: &WorkflowDoc = workflow;
        for (n, node) in workflow.nodes.iter().enumerate() {
            if let NodeDoc::Tool {
                tool: Some(tool), ..
            } = node
                && !names.contains(tool)
            {
                problems.push(json!({"code": "unknown_tool",
                    "path": format!("/workflows/{w}/nodes/{n}/tool"),
                    "message": format!("the agent has no tool {tool:?}; a workflow calls only the agent's tools")}));
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
        prompt: body.prompt,
        guards: body.guards,
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

/// One pin of a simulation.
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

fn pin_view(p: &PinRecord) -> PinView {
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
    /// `scripted` (run by the API right away) or `external` (played by the
    /// caller through the tool-call endpoint, then `finish`).
    driver: String,
    /// The capability an external agent (or a nested service it drives)
    /// calls `POST /api/attempts/{id}/tool-calls` and `finish` with. Shown
    /// only here, and only for an `external` attempt: a scripted attempt is
    /// toolmock's to play, so nobody else can inject calls into it (`null`).
    capability: Option<String>,
}

/// A started simulation.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct StartedView {
    /// Its id.
    id: Uuid,
    /// The document's name.
    name: String,
    /// The agent created for it.
    agent: Uuid,
    /// Every reachable operation and its pin.
    pins: Vec<PinView>,
    /// The attempts.
    attempts: Vec<StartedAttemptView>,
}

fn driver_name(driver: &DriverDoc) -> &'static str {
    match driver {
        DriverDoc::Scripted { .. } => "scripted",
        DriverDoc::External => "external",
    }
}

/// Loader and start problems as the API lists them: `{code, path, message}`,
/// the path a JSON pointer into the request body.
fn problem_list(problems: &[Problem]) -> Value {
    problems
        .iter()
        .map(|p| json!({"code": p.code, "path": p.path, "message": p.message}))
        .collect()
}

fn run_error(error: RunError, code: ApiCode) -> ApiError {
    match error {
        RunError::Problems(problems) => ApiError::Unprocessable {
            code,
            message: format!(
                "the simulation cannot start ({} problem(s))",
                problems.len()
            ),
            details: json!({ "problems": problem_list(&problems) }),
        },
        RunError::Storage(message) => ApiError::Internal(message),
    }
}

/// Starts a simulation from its document (docs/simulations.md; library tools
/// by `{"from": "library", "id"}`, the document's other tools as inline tools
/// of its agent): pins every reachable operation (SPEC §8), creates the
/// attempts with their fixture state and capabilities, and runs the scripted
/// cases' attempts in the background.
#[utoipa::path(post, path = "/api/simulations", tag = "simulations",
    request_body(content = Object, description = "The simulation document (version 1, docs/simulations.md); files are not read: every manifest, contract list and definition is inline"),
    security(("bearer" = ["AIManager:RunSimulations"])),
    responses(
        (status = 201, description = "Started", body = StartedView),
        (status = 422, description = "`invalid_simulation`: the document does not load (every problem with its pointer, an unknown library tool included); `start_refused`: every stale or missing operation, invalid definition, state conflict and effect node", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn start_simulation(
    auth: Authorized<RunSimulations>,
    State(state): State<AppState>,
    ApiJson(body): ApiJson<Value>,
) -> Result<(StatusCode, Json<StartedView>), ApiError> {
    let tenant = auth.principal.tenant;
    let invalid = |problems: &[Problem]| ApiError::Unprocessable {
        code: ApiCode::InvalidSimulation,
        message: format!(
            "the simulation document is not valid ({} problem(s))",
            problems.len()
        ),
        details: json!({ "problems": problem_list(problems) }),
    };
    let loaded = load_value(&body, "request", &Files::InlineOnly).map_err(|p| invalid(&p))?;
    let mut problems = Vec::new();
    for (index, tool) in loaded.document.tools.iter().enumerate() {
        let Some(id) = loaded.library.get(&tool.name) else {
            continue;
        };
        match state.store().tool(tenant, *id).await {
            Ok(_) => {}
            Err(e) if e.is_not_found() => problems.push(Problem::foreign(
                "request",
                pointer::push(&pointer::index("/tools", index), "id"),
                "unknown_tool",
                format!("the tenant has no library tool {id}"),
            )),
            Err(e) => return Err(e.into()),
        }
    }
    if !problems.is_empty() {
        return Err(invalid(&problems));
    }
    state.ensure_tenant(&auth.principal).await?;
    let dispatcher = state.dispatcher();
    let installed = install_inline(dispatcher, tenant, &loaded)
        .await
        .map_err(|e| run_error(e, ApiCode::InvalidSimulation))?;
    let mut request = start_request(&loaded.document, installed.agent);
    request.lease_owner = format!("api:{}", auth.principal.subject);
    request.lease = state.config().attempt_lease;
    let started = match dispatcher.start(tenant, &request).await {
        Ok(started) => started,
        Err(StartError::Refused { problems }) => {
            return Err(run_error(
                RunError::Problems(start_problems(&loaded, &problems)),
                ApiCode::StartRefused,
            ));
        }
        Err(StartError::InvalidRequest(message)) => {
            return Err(ApiError::Unprocessable {
                code: ApiCode::InvalidStart,
                message,
                details: json!({ "problems": [] }),
            });
        }
        Err(StartError::Store(e)) => return Err(e.into()),
    };
    state
        .store()
        .record_simulation_document(
            tenant,
            started.id,
            &loaded.document.name,
            &body,
            &auth.principal.subject,
        )
        .await?;
    let driver_of = |case: &str| {
        loaded
            .document
            .cases
            .iter()
            .find(|c| c.name == case)
            .map_or("scripted", |c| driver_name(&c.driver))
    };
    let view = StartedView {
        id: started.id.as_uuid(),
        name: loaded.document.name.clone(),
        agent: installed.agent.as_uuid(),
        pins: started.pins.iter().map(pin_view).collect(),
        attempts: started
            .attempts
            .iter()
            .map(|a| StartedAttemptView {
                id: a.id.as_uuid(),
                test_case: a.test_case_name.clone(),
                number: a.number,
                driver: driver_of(&a.test_case_name).to_owned(),
                capability: (driver_of(&a.test_case_name) == "external")
                    .then(|| a.capability.token().to_owned()),
            })
            .collect(),
    };
    crate::runner::spawn_scripted(state.clone(), tenant, Arc::new(loaded), started.attempts);
    Ok((StatusCode::CREATED, Json(view)))
}

/// `GET /api/simulations` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(crate) struct SimulationListQuery {
    /// The `next` of the previous page (a simulation id); absent for the first page.
    before: Option<Uuid>,
    /// Page size, 1 to 200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    limit: Option<u32>,
}

/// A simulation and how its attempts stand.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SimulationItem {
    /// Its id.
    id: Uuid,
    /// The document's name (absent for a simulation started without one).
    name: Option<String>,
    /// The agent under test.
    agent: Uuid,
    /// When it started.
    created_at: chrono::DateTime<chrono::Utc>,
    /// `running` until every attempt has finished, then `finished`.
    status: String,
    /// Attempts in all.
    attempts: u32,
    /// Attempts not finished yet.
    running: u32,
    /// Finished as passed.
    passed: u32,
    /// Finished as failed.
    failed: u32,
    /// Finished as harness_error.
    harness_error: u32,
}

pub(crate) fn simulation_item(s: SimulationListing) -> SimulationItem {
    SimulationItem {
        id: s.id.as_uuid(),
        name: s.name,
        agent: s.agent.as_uuid(),
        created_at: s.created_at,
        status: if s.running == 0 {
            "finished"
        } else {
            "running"
        }
        .to_owned(),
        attempts: s.attempts,
        running: s.running,
        passed: s.passed,
        failed: s.failed,
        harness_error: s.harness_error,
    }
}

/// A page of simulations.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SimulationPage {
    /// Newest first.
    simulations: Vec<SimulationItem>,
    /// Pass as `before` for the next page; absent on the last page.
    next: Option<Uuid>,
}

/// The tenant's simulations, newest first, a page at a time.
#[utoipa::path(get, path = "/api/simulations", tag = "simulations",
    params(SimulationListQuery),
    security(("bearer" = ["AIManager:RunSimulations"])),
    responses(
        (status = 200, description = "A page of simulations", body = SimulationPage),
        (status = 400, description = "`invalid_query`", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn list_simulations(
    auth: Authorized<RunSimulations>,
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<SimulationListQuery>,
) -> Result<Json<SimulationPage>, ApiError> {
    let limit = query.limit.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(ApiError::InvalidQuery {
            message: format!("limit must be between 1 and 200, not {limit}"),
        });
    }
    let mut rows = state
        .store()
        .list_simulations(
            auth.principal.tenant,
            query.before.map(SimulationId),
            limit + 1,
        )
        .await?;
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let next = more.then(|| rows.last().map(|s| s.id.as_uuid())).flatten();
    Ok(Json(SimulationPage {
        simulations: rows.into_iter().map(simulation_item).collect(),
        next,
    }))
}

/// One attempt as its simulation lists it.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub(crate) struct AttemptItem {
    /// Its id.
    pub(crate) id: Uuid,
    /// Its test case's name.
    test_case: String,
    /// 1, 2, … within its test case.
    number: u32,
    /// `scripted` or `external` (absent without a document).
    driver: Option<String>,
    /// `running` or `finished`.
    status: String,
    /// `passed`, `failed` or `harness_error` once finished.
    outcome: Option<String>,
    /// The outcome its case expects (default `passed`).
    expected_outcome: Option<String>,
    /// Whether the outcome is the expected one, once finished.
    as_expected: Option<bool>,
    /// Whether a harness error was recorded (it can then never pass).
    has_harness_error: bool,
    /// When it finished.
    finished_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Committed calls.
    calls: u32,
    /// Every expectation it did not meet (`[]`: all met), once judged.
    #[schema(value_type = Option<Vec<Object>>)]
    unmet: Option<Value>,
}

/// A stored simulation document, parsed (it was loaded before it was kept,
/// so a failure here is corruption, not the caller's fault).
pub(crate) fn parse_document(value: &Value) -> Result<SimulationDocument, ApiError> {
    SimulationDocument::deserialize(value).map_err(|e| {
        ApiError::Internal(format!("a stored simulation document does not parse: {e}"))
    })
}

/// The parsed document of a simulation, when it was started with one.
pub(crate) async fn document(
    state: &AppState,
    tenant: TenantId,
    simulation: SimulationId,
) -> Result<Option<SimulationDocument>, ApiError> {
    state
        .store()
        .simulation_document(tenant, simulation)
        .await?
        .as_ref()
        .map(parse_document)
        .transpose()
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
    }
}

/// A simulation with its pins and attempts.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SimulationView {
    /// How it stands.
    #[serde(flatten)]
    summary: SimulationItem,
    /// Every reachable operation and its pin, as fixed at the start.
    pins: Vec<PinView>,
    /// Its attempts, in document order.
    attempts: Vec<AttemptItem>,
    /// The document it was started with.
    #[schema(value_type = Option<Object>)]
    document: Option<Value>,
}

/// One simulation: its pins, its attempts and their outcomes.
#[utoipa::path(get, path = "/api/simulations/{id}", tag = "simulations",
    params(("id" = Uuid, Path, description = "The simulation's id")),
    security(("bearer" = ["AIManager:RunSimulations"])),
    responses(
        (status = 200, description = "The simulation", body = SimulationView),
        (status = 404, description = "No such simulation for this tenant", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn get_simulation(
    auth: Authorized<RunSimulations>,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<Json<SimulationView>, ApiError> {
    let tenant = auth.principal.tenant;
    let simulation = SimulationId(id);
    let store = state.store();
    let summary = store.simulation(tenant, simulation).await?;
    let pins = store.simulation_pins(tenant, simulation).await?;
    let raw = store.simulation_document(tenant, simulation).await?;
    let parsed = raw.as_ref().map(parse_document).transpose()?;
    let attempts = store
        .simulation_attempts(tenant, simulation)
        .await?
        .into_iter()
        .map(|a| attempt_item(a, parsed.as_ref()))
        .collect();
    Ok(Json(SimulationView {
        summary: simulation_item(summary),
        pins: pins.pins.iter().map(pin_view).collect(),
        attempts,
        document: raw,
    }))
}

/// The coverage report of a simulation.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct CoverageView {
    /// Finished attempts counted.
    attempts: u32,
    /// Per pinned operation: calls, per variant calls and rules used, and
    /// everything never exercised (`VARIANT`, `VARIANT/rules/N`, `VARIANT/own`).
    #[schema(value_type = Vec<Object>)]
    operations: Value,
}

/// Which variants and rules of each pinned definition the simulation's
/// finished attempts exercised, and which they never did.
#[utoipa::path(get, path = "/api/simulations/{id}/coverage", tag = "simulations",
    params(("id" = Uuid, Path, description = "The simulation's id")),
    security(("bearer" = ["AIManager:RunSimulations"])),
    responses(
        (status = 200, description = "The coverage report", body = CoverageView),
        (status = 404, description = "No such simulation for this tenant", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn get_coverage(
    auth: Authorized<RunSimulations>,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<Json<CoverageView>, ApiError> {
    let tenant = auth.principal.tenant;
    let simulation = SimulationId(id);
    let store = state.store();
    store.simulation(tenant, simulation).await?;
    let pins = store.simulation_pins(tenant, simulation).await?;
    let document = document(&state, tenant, simulation).await?;
    let mut counted: Vec<(Vec<CallReport>, Vec<VariantChoice>)> = Vec::new();
    for a in store.simulation_attempts(tenant, simulation).await? {
        if a.outcome.is_none() {
            continue;
        }
        let evidence = store.evidence(tenant, a.id).await?;
        let tool_input_errors = store.tool_input_errors(tenant, a.id).await?;
        let harness_errors = store.harness_errors(tenant, a.id).await?;
        let calls = recorded_calls(&evidence, &tool_input_errors, &harness_errors)
            .into_iter()
            .map(CallReport::from)
            .collect();
        let variants = document
            .as_ref()
            .and_then(|d| d.cases.get(a.case_position as usize))
            .map(|c| c.variants.clone())
            .unwrap_or_default();
        counted.push((calls, variants));
    }
    let operations = coverage(
        &pins.pins,
        counted
            .iter()
            .map(|(calls, variants)| (calls.as_slice(), variants.as_slice())),
    );
    Ok(Json(CoverageView {
        attempts: u32::try_from(counted.len()).unwrap_or(u32::MAX),
        operations: serde_json::to_value(operations)
            .map_err(|e| ApiError::Internal(e.to_string()))?,
    }))
}

/// One server-sent event of a simulation's stream.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SimulationEvent {
    /// `snapshot`, `attempt`, `finished` or `error`.
    #[schema(pattern = "^(snapshot|attempt|finished|error)$")]
    event: String,
    /// JSON: `snapshot` `{simulation, attempts}`; `attempt` an attempt as
    /// listed; `finished` the final counts; `error` `{code, message}`.
    data: String,
}

/// Follows a simulation as server-sent events: `snapshot` (the simulation
/// and every attempt), then `attempt` each time an attempt changes (its
/// outcome, its calls), then `finished` once every attempt has finished, and
/// the stream ends. It reads PostgreSQL, so it follows attempts run by any
/// process.
#[utoipa::path(get, path = "/api/simulations/{id}/events", tag = "simulations",
    params(("id" = Uuid, Path, description = "The simulation's id")),
    security(("bearer" = ["AIManager:RunSimulations"])),
    responses(
        (status = 200, description = "`text/event-stream`: `snapshot`, `attempt`…, `finished` (each event's data is JSON)", content_type = "text/event-stream", body = SimulationEvent),
        (status = 404, description = "No such simulation for this tenant", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn simulation_events(
    auth: Authorized<RunSimulations>,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<axum::response::Response, ApiError> {
    let tenant = auth.principal.tenant;
    let simulation = SimulationId(id);
    state.store().simulation(tenant, simulation).await?;
    let document = document(&state, tenant, simulation).await?;
    Ok(crate::runner::events(state, tenant, simulation, document))
}

/// What an attempt recorded.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AttemptView {
    /// The attempt as its simulation lists it.
    #[serde(flatten)]
    item: AttemptItem,
    /// Its simulation.
    simulation: Uuid,
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
    // Another tenant's attempt answers 404 like an absent one.
    let tenant = auth.principal.tenant;
    let attempt = AttemptId(id);
    let store = state.store();
    let record = store.attempt(tenant, attempt).await?;
    let listing = store.attempt_listing(tenant, attempt).await?;
    let document = document(&state, tenant, record.simulation).await?;
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
        item: attempt_item(listing, document.as_ref()),
        simulation: record.simulation.as_uuid(),
        lease_expires_at: record.lease_expires_at,
        state: json!({"state": snapshot.state, "version": snapshot.version}),
        evidence,
        tool_input_errors,
        harness_errors,
    }))
}
