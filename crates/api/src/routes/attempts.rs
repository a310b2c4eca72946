//! The dispatcher endpoint: nested services and external agents call tools
//! of an attempt with the attempt's capability.

use crate::AppState;
use crate::auth::bearer;
use crate::error::ApiError;
use crate::extract::{ApiJsonVerbatim, ApiPath};
use axum::Json;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use serde::Deserialize;
use serde_json::Value;
use toolmock_runtime::ToolCall;
use toolmock_runtime::model::{AttemptId, Capability, TenantId};
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

/// The bearer capability of a request, resolved to its tenant and attempt.
#[derive(Debug)]
pub(crate) struct AttemptCapability {
    capability: Capability,
    tenant: TenantId,
    attempt: AttemptId,
}

impl FromRequestParts<AppState> for AttemptCapability {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let capability = Capability::from_token(bearer(parts)?);
        // The token names no tenant: its hash is the key that finds it —
        // in the dispatcher's bindings once it has served the capability,
        // else in storage.
        let hash = capability.hash();
        let owner = match state.dispatcher().bound_owner(&hash) {
            Some(owner) => Some(owner),
            None => state.store().capability_owner(&hash).await?,
        };
        let (tenant, attempt) = owner.ok_or(ApiError::InvalidCapability)?;
        Ok(Self {
            capability,
            tenant,
            attempt,
        })
    }
}

/// Runs one tool call through the dispatcher (SPEC §8). A success's body is
/// exactly the rendered result, with no wrapper.
#[utoipa::path(post, path = "/api/attempts/{id}/tool-calls", tag = "dispatcher",
    params(("id" = Uuid, Path, description = "The attempt's id")),
    request_body = ToolCallRequest,
    security(("capability" = [])),
    responses(
        (status = 200, description = "Exactly the rendered result of the pinned mock", body = Object),
        (status = 401, description = "`invalid_capability`: no attempt holds this capability", body = crate::ErrorEnvelope),
        (status = 403, description = "`foreign_capability`: the capability belongs to another attempt", body = crate::ErrorEnvelope),
        (status = 422, description = "A tool input error (`class: tool_input_error`, e.g. `invalid_arguments` with `path`): recorded, the agent can recover", body = crate::ErrorEnvelope),
        (status = 424, description = "A harness error (`class: harness_error`: `lease_expired`, `missing_definition`, `unknown_tool`, `output_schema_violation`, …): recorded, the attempt can never pass", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn tool_call(
    capability: AttemptCapability,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJsonVerbatim(body): ApiJsonVerbatim<ToolCallRequest>,
) -> Result<Json<Value>, ApiError> {
    if capability.attempt.as_uuid() != id {
        return Err(ApiError::ForeignCapability);
    }
    let result = state
        .dispatcher()
        .call(
            capability.tenant,
            &capability.capability,
            &ToolCall::new(body.tool, body.operation, body.arguments),
        )
        .await?;
    Ok(Json(result))
}
