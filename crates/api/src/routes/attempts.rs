//! Attempts: what an attempt recorded, and the dispatcher endpoint, where
//! nested services and external agents call tools of an attempt with the
//! attempt's capability and finish it.

use crate::AppState;
use crate::auth::bearer;
use crate::auth::{Authorized, RunSimulations};
use crate::error::{ApiCode, ApiError};
use crate::extract::{ApiJsonVerbatim, ApiPath};
use crate::user_talk::{UserAnswer, UserTalks};
use crate::views::simulations::{
    AttemptView, FinishedView, attempt_item, attempt_view, message_view,
};
use axum::Extension;
use axum::Json;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use toolmock_contract::pointer;
use toolmock_runtime::ToolCall;
use toolmock_runtime::backend::{AttemptStore, FixtureStore};
use toolmock_runtime::dispatcher::ResolvedCapability;
use toolmock_runtime::model::{AttemptId, Capability, TenantId};
use toolmock_simulation::document::{CaseDoc, DriverDoc, UserDoc};
use toolmock_simulation::{Actor, Message, RunError, Unmet, conclude_conversation};
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

/// `POST /api/attempts/{id}/ask-user`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AskUserRequest {
    /// What the agent says to the user; leave it out to only listen (the
    /// user's first message).
    #[serde(default)]
    message: Option<String>,
}

/// The agent of an `external` attempt says something to its case's
/// simulated user, and the user model's reply is the answer (docs/agents.md,
/// "An external agent meets a simulated user"): the HTTP form of the MCP
/// endpoint's `ask_user` tool. Both sides are kept as the attempt's
/// conversation, with their roles.
#[utoipa::path(post, path = "/api/attempts/{id}/ask-user", tag = "dispatcher",
    params(("id" = Uuid, Path, description = "The attempt's id")),
    request_body = AskUserRequest,
    security(("capability" = [])),
    responses(
        (status = 200, description = "The user's reply `{reply}`; `{reply, stop, ended: true}` when it ended the conversation with a stop marker; `{ended: true}` once the conversation is over (its turn limit reached: an unmet `turn_limit`)", body = UserAnswer),
        (status = 401, description = "`invalid_capability`: no attempt holds this capability, or its attempt has ended or its lease is over", body = crate::ErrorEnvelope),
        (status = 403, description = "`foreign_capability`: the capability belongs to another attempt", body = crate::ErrorEnvelope),
        (status = 409, description = "`no_simulated_user`: the attempt's case has no simulated user; `user_busy`: another ask of the attempt was answered meanwhile", body = crate::ErrorEnvelope),
        (status = 424, description = "A harness error (`class: harness_error`: `user_unavailable`, `user_failed`, `attempt_timeout`): recorded, the attempt can never pass", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn ask_user(
    capability: AttemptCapability,
    State(state): State<AppState>,
    Extension(talks): Extension<Arc<UserTalks>>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJsonVerbatim(body): ApiJsonVerbatim<AskUserRequest>,
) -> Result<Json<UserAnswer>, ApiError> {
    let capability = capability.for_attempt(id)?;
    let answer = crate::user_talk::ask(
        &state,
        &talks,
        (capability.tenant, capability.attempt, capability.capability),
        body.message,
    )
    .await?;
    Ok(Json(answer))
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
    Extension(talks): Extension<Arc<UserTalks>>,
    ApiPath(id): ApiPath<Uuid>,
    request: axum::extract::Request,
) -> Result<axum::response::Response, ApiError> {
    use tower::ServiceExt as _;
    let capability = capability.for_attempt(id)?;
    let (tenant, attempt) = (capability.tenant, capability.attempt);
    // An ended attempt's capability, or one whose lease is over, opens no
    // MCP session (the tool-call endpoint records such a call as
    // `lease_expired`; an MCP client is refused before it lists anything).
    // A capability just read says so itself; one this process has served
    // before is read again, except for a `tools/call`, whose lease the
    // dispatcher checks in the call's one statement (recording a call of
    // an ended attempt as `lease_expired`, as the tool-call endpoint does).
    let request = match capability.resolved.live() {
        Some(false) => return Err(ApiError::InvalidCapability),
        Some(true) => request,
        None => {
            let (call, request) = crate::served_tools::is_tool_call(&state, request).await?;
            if !call {
                let record = state.store().attempt(tenant, attempt).await?;
                if record.outcome.is_some() || record.lease_expires_at <= chrono::Utc::now() {
                    return Err(ApiError::InvalidCapability);
                }
            }
            request
        }
    };
    let served =
        crate::served_tools::served(&state, tenant, capability.resolved.simulation()).await?;
    // `ask_user` is served only to an attempt whose case has a simulated
    // user (its position read only when some case of the simulation has
    // one, and once per state: it is fixed at the start).
    let with_user = match &served.with_user {
        None => false,
        Some(_) => {
            let position = match served.position(attempt) {
                Some(position) => position,
                None => {
                    let listing = state.store().attempt_listing(tenant, attempt).await?;
                    let position = listing.case_position as usize;
                    served.keep_position(attempt, position);
                    position
                }
            };
            served.user_cases.get(position).copied().unwrap_or(false)
        }
    };
    let tools = match (&served.with_user, with_user) {
        (Some(Ok(tools)), true) => tools.clone(),
        // The agent's own `ask_user` would hide the user's: said, not
        // served half (the HTTP route still reaches the user). The start
        // refuses such a simulation (`served_tools::ask_user_clashes`);
        // one started before it did is still answered here.
        (Some(Err(e)), true) => {
            return Err(ApiError::StateConflict {
                code: ApiCode::Conflict,
                message: format!(
                    "{e}: this MCP endpoint cannot serve the simulated user's ask_user; \
                     use POST /api/attempts/{{id}}/ask-user"
                ),
            });
        }
        _ => served.tools.clone(),
    };
    let server = toolmock_mcp::ToolServer::new(
        state.shared_dispatcher(),
        tools,
        served.workflows.clone(),
        // The extractor's resolution, handed on: the call does not look the
        // capability up again.
        UserAttempt {
            fixed: toolmock_mcp::FixedAttempt::new(capability.resolved, capability.capability),
            talk: with_user.then(|| (state.clone(), talks)),
        },
        "toolmock",
    );
    // Behind the API, whose own host is whatever its clients use.
    let service = toolmock_mcp::stateless_service(server, true);
    match service.oneshot(request).await {
        Ok(response) => Ok(response.map(axum::body::Body::new)),
        Err(never) => match never {},
    }
}

/// The per-attempt MCP endpoint's attempt: the bearer capability's, and,
/// when its case has a simulated user, the conversation `ask_user` holds
/// with it (the same as `ask-user`'s).
struct UserAttempt {
    fixed: toolmock_mcp::FixedAttempt,
    talk: Option<(AppState, Arc<UserTalks>)>,
}

impl toolmock_mcp::Attempts for UserAttempt {
    type Ticket = ();

    async fn enter(
        &self,
        parts: Option<&Parts>,
    ) -> Result<toolmock_mcp::Entered<()>, toolmock_mcp::ErrorData> {
        self.fixed.enter(parts).await
    }

    async fn leave(&self, entered: toolmock_mcp::Entered<()>) {
        self.fixed.leave(entered).await;
    }

    async fn ask_user(
        &self,
        entered: &toolmock_mcp::Entered<()>,
        message: Option<String>,
    ) -> Result<toolmock_mcp::CallToolResult, toolmock_mcp::ErrorData> {
        let Some((state, talks)) = &self.talk else {
            return Err(toolmock_mcp::server_error(
                toolmock_mcp::McpCode::AskUserNotServed,
                "the attempt's case has no simulated user",
            ));
        };
        let who = (entered.tenant, entered.attempt, entered.capability.clone());
        match crate::user_talk::ask(state, talks, who, message).await {
            Ok(answer) => Ok(toolmock_mcp::success(
                serde_json::to_value(answer).unwrap_or_default(),
            )),
            Err(ApiError::Harness(fault)) => Err(toolmock_mcp::harness_error(
                fault.code.as_str(),
                &fault.message,
                fault.path.as_deref(),
            )),
            Err(other) => Err(toolmock_mcp::server_error(
                toolmock_mcp::McpCode::StorageFailed,
                other.to_string(),
            )),
        }
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
    let case_at = pointer::index("/cases", position);
    let talk = conversation_of(&state, (tenant, attempt), &case, &case_at).await?;
    let result = conclude_conversation(
        state.dispatcher(),
        tenant,
        (&case, &case_at),
        (attempt, listing.number),
        talk,
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
    Ok(Json(FinishedView {
        outcome: result.outcome.as_str().to_owned(),
        as_expected: result.as_expected,
        unmet,
    }))
}

/// What an external attempt said with its case's simulated user, as the
/// judge reads it: the unmet `turn_limit` when the user's turns were used
/// up without a stop marker, the messages and when each was added (all
/// empty for a case without a simulated user).
async fn conversation_of(
    state: &AppState,
    (tenant, attempt): (TenantId, AttemptId),
    case: &CaseDoc,
    case_at: &str,
) -> Result<(Vec<Unmet>, Vec<Message>, Vec<chrono::DateTime<chrono::Utc>>), ApiError> {
    let Some(UserDoc::Model { max_turns, .. }) = &case.user else {
        return Ok((Vec::new(), Vec::new(), Vec::new()));
    };
    let stored = state.store().attempt_messages(tenant, attempt).await?;
    let mut messages = Vec::with_capacity(stored.len());
    let mut times = Vec::with_capacity(stored.len());
    for kept in stored {
        messages.push(
            serde_json::from_value::<Message>(kept.message).map_err(|e| {
                ApiError::Internal(format!(
                    "a kept message of the conversation does not parse: {e}"
                ))
            })?,
        );
        times.push(kept.at);
    }
    let unmet = toolmock_simulation::user_turns_used_up(*max_turns, &messages, case_at)
        .into_iter()
        .collect();
    Ok((unmet, messages, times))
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
    view.model_requests = store
        .attempt_usage(tenant, attempt)
        .await?
        .into_iter()
        .map(crate::views::usage::model_request_view)
        .collect();
    // Every call says whose it is: a simulated user's own tools are the
    // user's (a tool belongs to one side), every other call the agent's.
    for call in view.evidence.iter_mut().chain(&mut view.tool_input_errors) {
        let tool = call.get("tool").and_then(Value::as_str).unwrap_or("");
        let actor = match case.as_ref().map(|c| c.actor_of(tool)) {
            Some(Actor::User) => "user",
            _ => "agent",
        };
        if let Value::Object(fields) = call {
            fields.insert("actor".into(), Value::from(actor));
        }
    }
    Ok(Json(view))
}
