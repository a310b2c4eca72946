//! Attempts: what an attempt recorded, and the dispatcher endpoint, where
//! nested services and external agents call tools of an attempt with the
//! attempt's capability and finish it.

use crate::AppState;
use crate::auth::bearer;
use crate::auth::{Authorized, RunSimulations};
use crate::error::{ApiCode, ApiError};
use crate::extract::{ApiJsonVerbatim, ApiPath};
use crate::views::simulations::{
    AttemptView, FinishedView, attempt_item, attempt_view, message_view,
};
use axum::Json;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use serde::Deserialize;
use serde_json::Value;
use toolmock_contract::pointer;
use toolmock_runtime::ToolCall;
use toolmock_runtime::backend::{AttemptStore, FixtureStore, PinStore};
use toolmock_runtime::dispatcher::ResolvedCapability;
use toolmock_runtime::model::{AttemptId, Capability, TenantId};
use toolmock_simulation::document::{CaseDoc, DriverDoc};
use toolmock_simulation::{Actor, RunError, conclude_attempt};
use utoipa::ToSchema;
use uuid::Uuid;

/// `POST /api/attempts/{id}/tool-calls`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ToolCallRequest {
    /// The tool's name, as the agent calls it.
    tool: String,
    /// The operation's runtime name.
    operation: String,
    /// The arguments.
    #[schema(value_type = Object)]
    arguments: Value,
}

/// The bearer capability of a request, resolved to its attempt (and so its
/// tenant) once: the dispatcher takes the resolution instead of looking the
/// capability up again.
#[derive(Debug)]
pub(crate) struct AttemptCapability {
    capability: Capability,
    resolved: ResolvedCapability,
    tenant: TenantId,
    attempt: AttemptId,
}

impl AttemptCapability {
    /// Refuses a capability used on another attempt's path.
    fn for_attempt(self, path_id: Uuid) -> Result<Self, ApiError> {
        if self.attempt.as_uuid() == path_id {
            Ok(self)
        } else {
            Err(ApiError::ForeignCapability)
        }
    }
}

impl FromRequestParts<AppState> for AttemptCapability {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let capability = Capability::from_token(bearer(parts)?);
        // The token names no tenant: its hash is the key that finds it —
        // in the dispatcher's bindings once it has served the capability,
        // else in storage, whose answer the dispatcher then keeps.
        let dispatcher = state.dispatcher();
        let resolved = match dispatcher.cached_capability(&capability) {
            Some(resolved) => resolved,
            None => {
                let check = state
                    .store()
                    .find_capability(&capability.hash(), dispatcher.now())
                    .await?
                    .ok_or(ApiError::InvalidCapability)?;
                dispatcher.adopt_capability(&capability, check)
            }
        };
        Ok(Self {
            capability,
            tenant: resolved.tenant(),
            attempt: resolved.attempt(),
            resolved,
        })
    }
}

/// Runs one tool call through the dispatcher (docs/spec.md §8). A success's body is
/// exactly the rendered result, with no wrapper.
#[utoipa::path(post, path = "/api/attempts/{id}/tool-calls", tag = "dispatcher",
    params(("id" = Uuid, Path, description = "The attempt's id")),
    request_body = ToolCallRequest,
    security(("capability" = [])),
    responses(
        (status = 200, description = "Exactly the rendered result of the pinned mock", body = Object),
        (status = 401, description = "`invalid_capability`: no attempt holds this capability", body = crate::ErrorEnvelope),
        (status = 403, description = "`foreign_capability`: the capability belongs to another attempt", body = crate::ErrorEnvelope),
        (status = 422, description = "A tool input error (`class: tool_input_error`, e.g. `invalid_arguments` with `path`): recorded, the agent can recover; or (version 2) a domain error the mock answered (`class: domain_error`, its own `code` and `message`, `details.data` when it gives data): recorded as evidence, no state change, the attempt can still pass", body = crate::ErrorEnvelope),
        (status = 424, description = "A harness error (`class: harness_error`: `lease_expired`, `missing_definition`, `unknown_tool`, `output_schema_violation`, …): recorded, the attempt can never pass", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn tool_call(
    capability: AttemptCapability,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJsonVerbatim(body): ApiJsonVerbatim<ToolCallRequest>,
) -> Result<Json<Value>, ApiError> {
    let capability = capability.for_attempt(id)?;
    let result = crate::call_task::call_to_its_end(
        &state,
        capability.resolved,
        ToolCall::new(body.tool, body.operation, body.arguments),
    )
    .await?;
    Ok(Json(result))
}

/// The attempt's tools over MCP (streamable HTTP, stateless, JSON answers):
/// one JSON-RPC message per request, authenticated by the attempt's
/// capability. `tools/list` lists the agent's operations with their pinned
/// contracts (and its workflows), and every `tools/call` goes through the
/// same dispatcher as `tool-calls`, so its evidence is the same. A tool input
/// error is a tool result with `isError`, a harness error a JSON-RPC error
/// (docs/mcp.md).
#[utoipa::path(post, path = "/api/attempts/{id}/mcp", tag = "dispatcher",
    params(("id" = Uuid, Path, description = "The attempt's id")),
    request_body(content = Object, description = "One JSON-RPC message (MCP streamable HTTP)"),
    security(("capability" = [])),
    responses(
        (status = 200, description = "The JSON-RPC answer (a tool result, or a JSON-RPC error for a harness error)", body = Object),
        (status = 202, description = "A notification, accepted"),
        (status = 400, description = "Not a JSON-RPC message of MCP"),
        (status = 401, description = "`invalid_capability`: no attempt holds this capability, or its attempt has ended or its lease is over", body = crate::ErrorEnvelope),
        (status = 403, description = "`foreign_capability`: the capability belongs to another attempt", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn mcp(
    capability: AttemptCapability,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    request: axum::extract::Request,
) -> Result<axum::response::Response, ApiError> {
    use tower::ServiceExt as _;
    let capability = capability.for_attempt(id)?;
    let (tenant, attempt) = (capability.tenant, capability.attempt);
    let store = state.store();
    let record = store.attempt(tenant, attempt).await?;
    // An ended attempt's capability, or one whose lease is over, opens no
    // MCP session (the tool-call endpoint records such a call as
    // `lease_expired`; an MCP client is refused before it lists anything).
    if record.outcome.is_some() || record.lease_expires_at <= chrono::Utc::now() {
        return Err(ApiError::InvalidCapability);
    }
    let pins = store.simulation_pins(tenant, record.simulation).await?;
    let document = crate::stored::document(store, tenant, record.simulation).await?;
    let (direct, workflows) = match document {
        Some(document) => (document.agent.tools, document.agent.workflows),
        None => {
            let mut direct: Vec<String> = Vec::new();
            for pin in &pins.pins {
                if !direct.contains(&pin.tool) {
                    direct.push(pin.tool.clone());
                }
            }
            (direct, Vec::new())
        }
    };
    let tools = toolmock_mcp::ServedTools::new(&direct, &pins.pins, &workflows)
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let server = toolmock_mcp::ToolServer::new(
        state.shared_dispatcher(),
        tools,
        workflows.into_iter().map(|w| (w.name.clone(), w)).collect(),
        // The extractor's resolution, handed on: the call does not look the
        // capability up again.
        toolmock_mcp::FixedAttempt::new(capability.resolved, capability.capability),
        "toolmock",
    );
    // Behind the API, whose own host is whatever its clients use.
    let service = toolmock_mcp::stateless_service(server, true);
    match service.oneshot(request).await {
        Ok(response) => Ok(response.map(axum::body::Body::new)),
        Err(never) => match never {},
    }
}

/// Ends an attempt whose case has an `external` driver (or an `http` one,
/// whose agent service the worker handed the attempt to): the case's
/// expectations are judged over what the attempt recorded (never over what
/// the caller says), the attempt finishes with that verdict and its
/// capability stops working.
#[utoipa::path(post, path = "/api/attempts/{id}/finish", tag = "dispatcher",
    params(("id" = Uuid, Path, description = "The attempt's id")),
    security(("capability" = [])),
    responses(
        (status = 200, description = "Finished and judged", body = FinishedView),
        (status = 401, description = "`invalid_capability`: no attempt holds this capability", body = crate::ErrorEnvelope),
        (status = 403, description = "`foreign_capability`: the capability belongs to another attempt", body = crate::ErrorEnvelope),
        (status = 409, description = "`attempt_finished`: already finished; `not_external`: its case is scripted, run by toolmock", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn finish_attempt(
    capability: AttemptCapability,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<Json<FinishedView>, ApiError> {
    let capability = capability.for_attempt(id)?;
    let (tenant, attempt) = (capability.tenant, capability.attempt);
    let store = state.store();
    let listing = store.attempt_listing(tenant, attempt).await?;
    if listing.outcome.is_some() {
        return Err(ApiError::StateConflict {
            code: ApiCode::AttemptFinished,
            message: "the attempt is already finished".into(),
        });
    }
    let record = store.attempt(tenant, attempt).await?;
    let document = crate::stored::document(state.store(), tenant, record.simulation).await?;
    let position = listing.case_position as usize;
    let case = match document.as_ref().and_then(|d| d.cases.get(position)) {
        // An agent service (`http`) finishes the attempt its worker handed it.
        Some(case) if matches!(case.driver, DriverDoc::External | DriverDoc::Http { .. }) => {
            case.clone()
        }
        Some(_) => {
            return Err(ApiError::StateConflict {
                code: ApiCode::NotExternal,
                message: "the attempt's case is scripted: toolmock runs and finishes it".into(),
            });
        }
        // A start without a document has no expectations: finishing judges
        // only what the dispatcher recorded (a harness error still decides).
        None => CaseDoc {
            name: listing.test_case.clone(),
            description: String::new(),
            data: serde_json::Map::new(),
            variants: Vec::new(),
            attempts: None,
            driver: DriverDoc::External,
            user: None,
            expect: Default::default(),
        },
    };
    let result = conclude_attempt(
        state.dispatcher(),
        tenant,
        &case,
        &pointer::index("/cases", position),
        (attempt, listing.number),
        Vec::new(),
        false,
    )
    .await
    .map_err(|e| match e {
        // A concurrent finish won the attempt's lock first.
        RunError::AlreadyFinished => ApiError::StateConflict {
            code: ApiCode::AttemptFinished,
            message: "the attempt is already finished".into(),
        },
        other => ApiError::Internal(other.to_string()),
    })?;
    let unmet =
        serde_json::to_value(&result.unmet).map_err(|e| ApiError::Internal(e.to_string()))?;
    store.record_judgement(tenant, attempt, &unmet).await?;
    Ok(Json(FinishedView {
        outcome: result.outcome.as_str().to_owned(),
        as_expected: result.as_expected,
        unmet,
    }))
}

/// An attempt with its evidence timeline, tool input errors and harness
/// errors, and a model-driven attempt's conversation.
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
    let document = crate::stored::document(state.store(), tenant, record.simulation).await?;
    let snapshot = store.layered_state(tenant, attempt).await?;
    let records = crate::stored::records(store, tenant, attempt).await?;
    let conversation = store.attempt_messages(tenant, attempt).await?;
    let case = document
        .as_ref()
        .and_then(|d| d.cases.get(listing.case_position as usize))
        .cloned();
    let mut view = attempt_view(
        attempt_item(listing, document.as_ref()),
        &record,
        snapshot,
        records.evidence,
        records.tool_input_errors,
        records.harness_errors,
    );
    view.conversation = conversation.into_iter().map(message_view).collect();
    // A simulated user's own calls say so (a tool belongs to one side).
    if let Some(case) = case {
        for call in view.evidence.iter_mut().chain(&mut view.tool_input_errors) {
            let tool = call.get("tool").and_then(Value::as_str).unwrap_or("");
            if let (Actor::User, Value::Object(fields)) = (case.actor_of(tool), &mut *call) {
                fields.insert("actor".into(), Value::from("user"));
            }
        }
    }
    Ok(Json(view))
}
