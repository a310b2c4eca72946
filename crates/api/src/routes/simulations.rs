//! Simulations: started from their document, listed, read, followed as
//! server-sent events, and their coverage.

use crate::AppState;
use crate::auth::{Authorized, RunSimulations};
use crate::error::{ApiCode, ApiError, Listed};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::jobs::SimulationFollower;
use crate::views::simulations::{
    CoverageView, SimulationEvent, SimulationPage, SimulationView, StartedAttemptView, StartedView,
    attempt_item, driver_name, pin_view, simulation_item, step_events,
};
use crate::views::usage::{ComparisonView, budget_view, comparison_view, run_usage};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::Value;
use std::convert::Infallible;
use toolmock_runtime::backend::PinStore;
use toolmock_runtime::error::StartError;
use toolmock_runtime::model::{SimulationId, VariantChoice};
use toolmock_simulation::document::SimulationDocument;
use toolmock_simulation::{
    CallReport, FileProblem, Files, RunError, coverage, install_inline, load_value, recorded_calls,
    start_problems, start_request, unknown_library_tools,
};
use toolmock_store::BudgetLimits;
use uuid::Uuid;

/// Loader and start problems as the API lists them, each at its pointer
/// into the request body.
fn listed(problems: &[FileProblem]) -> impl Iterator<Item = Listed> + '_ {
    problems
        .iter()
        .map(|p| Listed::new(p.code, p.path.clone(), p.message.clone()))
}

fn run_error(error: RunError, code: ApiCode) -> ApiError {
    match error {
        RunError::Problems(problems) => ApiError::unprocessable(
            code,
            format!(
                "the simulation cannot start ({} problem(s))",
                problems.len()
            ),
            listed(&problems),
        ),
        RunError::Storage(message) => ApiError::Internal(message),
        // Starting never finishes an attempt, and the API's documents give
        // fixtures only as values (a `file` is refused when parsed).
        other @ (RunError::AlreadyFinished | RunError::FixtureNotLoaded { .. }) => {
            ApiError::Internal(other.to_string())
        }
    }
}

/// Starts a simulation from its document (docs/simulations.md; library tools
/// by `{"from": "library", "id"}`, the document's other tools as inline tools
/// of its agent): pins every reachable operation (docs/spec.md §8), creates the
/// attempts with their fixture state and capabilities, and runs the scripted
/// cases' attempts in the background.
#[utoipa::path(post, path = "/api/simulations", tag = "simulations",
    params(StartQuery),
    request_body(content = Object, description = "The simulation document (version 1, docs/simulations.md); files are not read: every manifest, contract list and definition is inline. An optional member `cassette`, `{\"mode\": \"record\" | \"replay\" | \"auto\", \"exchanges\": [exchange, …]}` (docs/cassettes.md), is the model cassette the simulation's workers replay from and record into; it is not part of the stored document"),
    security(("bearer" = ["AIManager:RunSimulations"])),
    responses(
        (status = 201, description = "Started", body = StartedView),
        (status = 400, description = "`invalid_query`: a budget that is not a positive number", body = crate::ErrorEnvelope),
        (status = 422, description = "`invalid_cassette`: the `cassette` member is unusable (every problem with its pointer); `invalid_simulation`: the document does not load (every problem with its pointer, an unknown library tool included, and `duplicate_tool_name` for an agent's operation or workflow called `ask_user` where a case talks with a simulated user through the API); `start_refused`: every stale or missing operation, invalid definition, state conflict and effect node", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn start_simulation(
    auth: Authorized<RunSimulations>,
    State(state): State<AppState>,
    ApiQuery(budget): ApiQuery<StartQuery>,
    ApiJson(mut body): ApiJson<Value>,
) -> Result<(StatusCode, Json<StartedView>), ApiError> {
    let tenant = auth.principal.tenant;
    budget.check()?;
    let cassette = crate::cassette_upload::take_cassette(&mut body)?;
    let invalid = |problems: &[FileProblem]| {
        ApiError::unprocessable(
            ApiCode::InvalidSimulation,
            format!(
                "the simulation document is not valid ({} problem(s))",
                problems.len()
            ),
            listed(problems),
        )
    };
    let loaded = load_value(&body, "request", &Files::InlineOnly).map_err(|p| invalid(&p))?;
    let problems = unknown_library_tools(state.store(), tenant, &loaded, "request").await?;
    if !problems.is_empty() {
        return Err(invalid(&problems));
    }
    // What the attempts' MCP endpoint would serve, refused before anything
    // is started rather than at its first request.
    let clashes = crate::served_tools::ask_user_clashes(&state, tenant, &loaded, &body).await?;
    if !clashes.is_empty() {
        return Err(ApiError::unprocessable(
            ApiCode::InvalidSimulation,
            format!(
                "the simulation document is not valid ({} problem(s))",
                clashes.len()
            ),
            clashes,
        ));
    }
    state
        .ensure_tenant(tenant, &auth.principal.tenant_name)
        .await?;
    // Bounded: a start holds a connection for its writes.
    let _turn = state.start_permit().await;
    let dispatcher = state.dispatcher();
    let installed = install_inline(dispatcher, tenant, &loaded)
        .await
        .map_err(|e| run_error(e, ApiCode::InvalidSimulation))?;
    let mut request = start_request(&loaded.document, installed.agent)
        .map_err(|e| run_error(e, ApiCode::InvalidSimulation))?;
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
            return Err(ApiError::unprocessable(ApiCode::InvalidStart, message, []));
        }
        Err(StartError::TooLarge {
            limit,
            maximum,
            actual,
        }) => {
            return Err(ApiError::start_too_large(limit, maximum, actual));
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
    // Fixed before any attempt is queued: a worker reads it before its
    // first request.
    let default = state
        .store()
        .tenant_budget(tenant)
        .await?
        .unwrap_or_default();
    let limits = BudgetLimits {
        max_tokens: budget.max_tokens.or(default.max_tokens),
        max_cost: budget.max_cost.or(default.max_cost),
    };
    state
        .store()
        .record_simulation_budget(
            tenant,
            started.id,
            limits,
            (budget.max_tokens.is_none(), budget.max_cost.is_none()),
        )
        .await?;
    // Before any attempt is queued: a worker that claims one finds it.
    if let Some((mode, lines)) = &cassette {
        state
            .store()
            .record_simulation_cassette(tenant, started.id, mode.as_str(), lines)
            .await?;
    }
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
    // Every attempt but an external agent's goes to the workers' queue (its
    // start capability revoked: a worker's claim makes its own): scripted,
    // model-driven and agent-service cases.
    let queued: Vec<_> = started
        .attempts
        .iter()
        .filter(|a| driver_of(&a.test_case_name) != "external")
        .map(|a| a.id)
        .collect();
    if !queued.is_empty() {
        state.store().queue_attempts(tenant, &queued).await?;
    }
    Ok((StatusCode::CREATED, Json(view)))
}

/// `POST /api/simulations` query: the simulation's budget (docs/api.md,
/// "Budgets"). Each bound not given is the tenant's default, if its
/// operator set one.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(crate) struct StartQuery {
    /// The most model tokens (prompt plus completion) the simulation's
    /// requests may spend; then no new request is sent and the attempts
    /// that need one end `harness_error` (`budget_exhausted`).
    #[param(minimum = 1)]
    max_tokens: Option<u64>,
    /// The most they may cost, in the unit of the workers' `--price`.
    #[param(exclusive_minimum = 0)]
    max_cost: Option<f64>,
}

impl StartQuery {
    fn check(&self) -> Result<(), ApiError> {
        if let Some(max) = self.max_tokens
            && (max == 0 || i64::try_from(max).is_err())
        {
            return Err(ApiError::InvalidQuery {
                message: format!("max_tokens must be between 1 and {}, not {max}", i64::MAX),
            });
        }
        if let Some(max) = self.max_cost
            && !(max.is_finite() && max > 0.0)
        {
            return Err(ApiError::InvalidQuery {
                message: format!("max_cost must be a positive number, not {max}"),
            });
        }
        Ok(())
    }
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
    let parsed = raw
        .as_ref()
        .map(crate::stored::parse_document)
        .transpose()?;
    let attempts = store
        .simulation_attempts(tenant, simulation)
        .await?
        .into_iter()
        .map(|a| attempt_item(a, parsed.as_ref()))
        .collect();
    let budget = match store.budget_standing(tenant, simulation).await? {
        Some(standing) => Some(budget_view(
            standing,
            store.budget_refusals(tenant, simulation).await?,
        )),
        None => None,
    };
    Ok(Json(SimulationView {
        summary: simulation_item(summary),
        pins: pins.pins.iter().map(pin_view).collect(),
        attempts,
        document: raw,
        budget,
    }))
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
    let document = crate::stored::document(state.store(), tenant, simulation).await?;
    let mut counted: Vec<(Vec<CallReport>, Vec<VariantChoice>)> = Vec::new();
    for a in store.simulation_attempts(tenant, simulation).await? {
        if a.outcome.is_none() {
            continue;
        }
        let r = crate::stored::records(store, tenant, a.id).await?;
        let calls = recorded_calls(&r.evidence, &r.tool_input_errors, &r.harness_errors)
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

/// The results document of a finished simulation, exactly as `toolmock run
/// --json` writes it (`toolmock submit` prints its table from it): per case
/// its attempts with outcome, unmet expectations, errors and calls; the
/// summary; coverage.
#[utoipa::path(get, path = "/api/simulations/{id}/results", tag = "simulations",
    params(("id" = Uuid, Path, description = "The simulation's id")),
    security(("bearer" = ["AIManager:RunSimulations"])),
    responses(
        (status = 200, description = "The results document of `toolmock run --json` (docs/simulations.md, \"Reports\")", body = Object),
        (status = 404, description = "No such simulation for this tenant", body = crate::ErrorEnvelope),
        (status = 409, description = "`simulation_running` while an attempt has not finished; `no_simulation_document` for a simulation started without a document", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn get_results(
    auth: Authorized<RunSimulations>,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<Json<toolmock_simulation::RunResults>, ApiError> {
    results_of(state.store(), auth.principal.tenant, SimulationId(id))
        .await
        .map(Json)
}

/// A finished simulation's results document, built from PostgreSQL.
async fn results_of(
    store: &toolmock_store::PgStore,
    tenant: toolmock_runtime::model::TenantId,
    simulation: SimulationId,
) -> Result<toolmock_simulation::RunResults, ApiError> {
    let id = simulation.as_uuid();
    let summary = store.simulation(tenant, simulation).await?;
    let unfinished = summary.queued + summary.running;
    if unfinished > 0 {
        return Err(ApiError::StateConflict {
            code: ApiCode::SimulationRunning,
            message: format!(
                "{unfinished} of its {} attempts have not finished; follow /api/simulations/{id}/events",
                summary.attempts
            ),
        });
    }
    let Some(document) = crate::stored::document(store, tenant, simulation).await? else {
        return Err(ApiError::StateConflict {
            code: ApiCode::NoSimulationDocument,
            message: "it was started without a simulation document".into(),
        });
    };
    let pins = store.simulation_pins(tenant, simulation).await?;
    let mut per_case: Vec<Vec<toolmock_simulation::AttemptResult>> =
        vec![Vec::new(); document.cases.len()];
    for a in store.simulation_attempts(tenant, simulation).await? {
        let (Some(outcome), Some(case)) = (a.outcome, document.cases.get(a.case_position as usize))
        else {
            continue;
        };
        let unmet: Vec<toolmock_simulation::Unmet> = match a.unmet {
            Some(unmet) => serde_json::from_value(unmet).map_err(|e| {
                ApiError::Internal(format!("a stored judgement does not parse: {e}"))
            })?,
            None => Vec::new(),
        };
        let r = crate::stored::records(store, tenant, a.id).await?;
        let calls = recorded_calls(&r.evidence, &r.tool_input_errors, &r.harness_errors);
        // A model case's conversation and judge report, as `toolmock run`
        // reports them.
        let conversation = store
            .attempt_messages(tenant, a.id)
            .await?
            .into_iter()
            .map(|m| serde_json::from_value(m.message))
            .collect::<Result<Vec<toolmock_simulation::Message>, _>>()
            .map_err(|e| ApiError::Internal(format!("a stored message does not parse: {e}")))?;
        let judge = store
            .attempt_judge_report(tenant, a.id)
            .await?
            .map(serde_json::from_value)
            .transpose()
            .map_err(|e| {
                ApiError::Internal(format!("a stored judge report does not parse: {e}"))
            })?;
        let mut result = toolmock_simulation::attempt_result(
            case,
            (a.number, outcome),
            unmet,
            calls,
            (&r.evidence, &r.tool_input_errors, &r.harness_errors),
            conversation,
        );
        result.judge = judge;
        (result.model_requests, result.tokens) =
            run_usage(&store.attempt_usage(tenant, a.id).await?);
        per_case[a.case_position as usize].push(result);
    }
    let mut results = toolmock_simulation::assemble_results(
        &document,
        &pins.pins,
        document.cases.iter().zip(per_case).collect(),
        summary.fixtures_hash,
    );
    results.diverged_mocks = diverged_mocks(store, tenant, &pins.pins).await?;
    Ok(results)
}

/// Two finished simulations of one suite compared case by case (the
/// simulation of the path is BASE, `head` HEAD): per case the pass rate,
/// pass^k, tokens and cost on each side and the change, regressions first
/// — `toolmock compare` over their results documents.
#[utoipa::path(get, path = "/api/simulations/{id}/compare/{head}", tag = "simulations",
    params(("id" = Uuid, Path, description = "BASE: the simulation before the change"),
           ("head" = Uuid, Path, description = "HEAD: the simulation after it")),
    security(("bearer" = ["AIManager:RunSimulations"])),
    responses(
        (status = 200, description = "The comparison", body = ComparisonView),
        (status = 404, description = "No such simulation for this tenant (either)", body = crate::ErrorEnvelope),
        (status = 409, description = "`simulation_running` while an attempt of either has not finished; `no_simulation_document` for one started without a document", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn compare_simulations(
    auth: Authorized<RunSimulations>,
    State(state): State<AppState>,
    ApiPath((id, head)): ApiPath<(Uuid, Uuid)>,
) -> Result<Json<ComparisonView>, ApiError> {
    let tenant = auth.principal.tenant;
    let store = state.store();
    let (base_listing, base_summary, base_cases) =
        compared_side(store, tenant, SimulationId(id)).await?;
    let (head_listing, head_summary, head_cases) =
        compared_side(store, tenant, SimulationId(head)).await?;
    let rows = toolmock_simulation::compare::compare_cases(&base_cases, &head_cases);
    Ok(Json(comparison_view(
        (base_listing, &base_summary),
        (head_listing, &head_summary),
        rows,
    )))
}

/// One side of a comparison: the simulation, its results' summary and its
/// cases as the comparison reads them.
async fn compared_side(
    store: &toolmock_store::PgStore,
    tenant: toolmock_runtime::model::TenantId,
    simulation: SimulationId,
) -> Result<
    (
        toolmock_store::SimulationListing,
        toolmock_simulation::Summary,
        Vec<(String, Value)>,
    ),
    ApiError,
> {
    let listing = store.simulation(tenant, simulation).await?;
    let results = results_of(store, tenant, simulation).await?;
    let document = serde_json::to_value(&results).map_err(|e| ApiError::Internal(e.to_string()))?;
    let cases = toolmock_simulation::compare::results_cases(&document)
        .ok_or_else(|| ApiError::Internal("a results document without cases".into()))?;
    Ok((listing, results.summary, cases))
}

/// The pinned mocks whose latest verification diverged (docs/verify.md):
/// a simulation says so of the mocks it ran against.
async fn diverged_mocks(
    store: &toolmock_store::PgStore,
    tenant: toolmock_runtime::model::TenantId,
    pins: &[toolmock_runtime::model::PinRecord],
) -> Result<Vec<toolmock_simulation::DivergedMock>, ApiError> {
    let pinned: Vec<(&toolmock_runtime::model::PinRecord, String)> = pins
        .iter()
        .filter_map(|p| match &p.pin {
            toolmock_runtime::model::PinTarget::Pinned { pin, .. } => {
                Some((p, pin.definition_hash().to_string()))
            }
            _ => None,
        })
        .collect();
    if pinned.is_empty() {
        return Ok(Vec::new());
    }
    let hashes: Vec<String> = pinned.iter().map(|(_, h)| h.clone()).collect();
    let marks = store.diverged_definitions(tenant, &hashes).await?;
    Ok(pinned
        .iter()
        .filter_map(|(pin, hash)| {
            let mark = marks
                .iter()
                .find(|m| m.definition_hash.as_deref() == Some(hash))?;
            Some(toolmock_simulation::DivergedMock {
                tool: pin.tool.clone(),
                operation: pin.operation.clone(),
                definition_hash: hash.clone(),
                verification: mark.verification.to_string(),
                verified_at: mark.at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                divergences: u32::try_from(mark.divergences).unwrap_or(0),
            })
        })
        .collect())
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
    let document = crate::stored::document(state.store(), tenant, simulation).await?;
    let follower = SimulationFollower::new(state.store().clone(), tenant, simulation);
    Ok(events(follower, document))
}

/// The server-sent events of one followed simulation: each step of the
/// follower as the events the stream documents.
fn events(follower: SimulationFollower, document: Option<SimulationDocument>) -> Response {
    let stream = futures_util::stream::unfold(follower, |mut follower| async move {
        let steps = follower.next().await?;
        Some((steps, follower))
    })
    .flat_map(move |steps| {
        let events: Vec<Event> = steps
            .into_iter()
            .flat_map(|step| step_events(step, document.as_ref()))
            .collect();
        futures_util::stream::iter(events.into_iter().map(Ok::<_, Infallible>))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}
