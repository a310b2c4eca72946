//! Verifications of library tools (docs/verify.md, "On the service"): an
//! operator sets a tool's settings and schedule; a verification is queued
//! here and run by a worker (`toolmock_worker`), which appends what it
//! found per operation; these routes read it back. No verification runs in
//! a request: the API only checks what it is given and reads PostgreSQL.

use crate::AppState;
use crate::auth::{Authorized, ManageTools};
use crate::error::{ApiCode, ApiError, Listed};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::views::verifications::{
    SettingsView, VerificationPage, VerificationView, result_view, settings_view, verification_view,
};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use std::collections::BTreeMap;
use toolmock_runtime::backend::Catalog;
use toolmock_runtime::model::{LibraryTool, TenantId, ToolId};
use toolmock_verify::ToolSettings;
use utoipa::ToSchema;
use uuid::Uuid;

/// `PUT /api/tools/{id}/verification`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SettingsBody {
    /// The tool's `verify` block (docs/verify.md): `safe` (`true` or a list
    /// of operations; default none), `variants`, `matchers`, `chains`, and
    /// `openapi` as an `http(s)://` URL. `server` and `recordings` are
    /// refused (`not_on_the_service`).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    verify: Option<serde_json::Value>,
    /// An MCP tool's staging copy, verified instead of the URL the tool was
    /// discovered from.
    #[serde(default)]
    sandbox_url: Option<String>,
    /// A custom tool's operations' HTTP endpoints, by operation name.
    #[serde(default)]
    endpoints: BTreeMap<String, String>,
    /// Queue a verification every so many seconds (300 to 2,592,000; absent:
    /// only on request).
    #[serde(default)]
    #[schema(minimum = 300, maximum = 2_592_000)]
    every_seconds: Option<i32>,
}

fn invalid(problems: Vec<Listed>) -> ApiError {
    ApiError::unprocessable(
        ApiCode::InvalidVerificationSettings,
        "the verification settings cannot be used for this tool",
        problems,
    )
}

/// The settings' problems for `tool`, and the URLs they would reach
/// outside the allow-list.
fn check(state: &AppState, tool: &LibraryTool, settings: &ToolSettings) -> Result<(), ApiError> {
    if let Err(problems) = settings.check(tool) {
        return Err(invalid(
            problems.iter().map(|p| Listed::under("", p)).collect(),
        ));
    }
    if !settings.reaches(tool) {
        return Err(invalid(vec![Listed::new(
            toolmock_verify::VerifyCode::NoRealTool.as_str(),
            "",
            format!(
                "{} names no real tool: an MCP tool discovered from a URL, a `sandbox_url`, `endpoints` or `verify.openapi`",
                tool.name
            ),
        )]));
    }
    let allow = &state.config().mcp_allow;
    let refused: Vec<Listed> = settings
        .urls(tool)
        .into_iter()
        .filter(|(_, url)| !allow.permits(url))
        .map(|(at, url)| {
            Listed::new(
                ApiCode::McpUrlNotAllowed.as_str(),
                at,
                format!("{url} is not allowed (--mcp-allow {allow})"),
            )
        })
        .collect();
    if refused.is_empty() {
        Ok(())
    } else {
        Err(ApiError::unprocessable(
            ApiCode::McpUrlNotAllowed,
            "a URL the verification would reach is not on this server's allow-list",
            refused,
        ))
    }
}

/// The tool's settings, or the defaults (nothing marked safe) when none
/// were set.
async fn stored(
    state: &AppState,
    tenant: TenantId,
    tool: &LibraryTool,
) -> Result<ToolSettings, ApiError> {
    match state.store().verification_settings(tenant, tool.id).await? {
        Some(row) => serde_json::from_value(row.settings).map_err(|e| {
            ApiError::Internal(format!("stored verification settings do not parse: {e}"))
        }),
        None => Ok(ToolSettings::default()),
    }
}

/// Sets a tool's verification settings and schedule, replacing any.
#[utoipa::path(put, path = "/api/tools/{id}/verification", tag = "verifications",
    params(("id" = Uuid, Path, description = "The tool's id")),
    request_body = SettingsBody,
    security(("bearer" = ["AIManager:ManageTools"])),
    responses(
        (status = 200, description = "Set", body = SettingsView),
        (status = 404, description = "No such tool for this tenant", body = crate::ErrorEnvelope),
        (status = 422, description = "`invalid_verification_settings` (every problem listed, with `toolmock-verify` codes) or `mcp_url_not_allowed`", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn put_settings(
    auth: Authorized<ManageTools>,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<SettingsBody>,
) -> Result<Json<SettingsView>, ApiError> {
    let tenant = auth.principal.tenant;
    let tool = state.store().tool(tenant, ToolId(id)).await?;
    let verify = serde_json::from_value(body.verify.unwrap_or_else(|| serde_json::json!({})))
        .map_err(|e| {
            invalid(vec![Listed::new(
                ApiCode::InvalidBody.as_str(),
                "/verify",
                format!("not a verify block: {e}"),
            )])
        })?;
    if let Some(every) = body.every_seconds
        && !(300..=2_592_000).contains(&every)
    {
        return Err(invalid(vec![Listed::new(
            ApiCode::InvalidBody.as_str(),
            "/every_seconds",
            format!("the schedule is 300 to 2592000 seconds (5 minutes to 30 days), not {every}"),
        )]));
    }
    let settings = ToolSettings {
        verify,
        sandbox_url: body.sandbox_url,
        endpoints: body.endpoints,
    };
    check(&state, &tool, &settings)?;
    let value = serde_json::to_value(&settings).map_err(|e| ApiError::Internal(e.to_string()))?;
    let saved = state
        .store()
        .put_verification_settings(
            tenant,
            tool.id,
            &value,
            body.every_seconds,
            &auth.principal.subject,
        )
        .await?;
    Ok(Json(settings_view(id, Some(saved))))
}

/// A tool's verification settings and schedule (the defaults — nothing
/// marked safe, no schedule — when none were set).
#[utoipa::path(get, path = "/api/tools/{id}/verification", tag = "verifications",
    params(("id" = Uuid, Path, description = "The tool's id")),
    security(("bearer" = ["AIManager:ManageTools"])),
    responses(
        (status = 200, description = "The settings", body = SettingsView),
        (status = 404, description = "No such tool for this tenant", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn get_settings(
    auth: Authorized<ManageTools>,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<Json<SettingsView>, ApiError> {
    let tenant = auth.principal.tenant;
    let tool = state.store().tool(tenant, ToolId(id)).await?;
    let found = state.store().verification_settings(tenant, tool.id).await?;
    Ok(Json(settings_view(id, found)))
}

/// `POST /api/tools/{id}/verifications`: no member (the tool's settings apply).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct QueueBody {}

/// Queues a verification of the tool with its current settings; a worker
/// runs it (follow it with `GET …/verifications/{verification_id}`).
#[utoipa::path(post, path = "/api/tools/{id}/verifications", tag = "verifications",
    params(("id" = Uuid, Path, description = "The tool's id")),
    request_body = QueueBody,
    security(("bearer" = ["AIManager:ManageTools"])),
    responses(
        (status = 202, description = "Queued", body = VerificationView),
        (status = 404, description = "No such tool for this tenant", body = crate::ErrorEnvelope),
        (status = 422, description = "`invalid_verification_settings`: the tool names no real tool, or its settings no longer fit it; `mcp_url_not_allowed`", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn queue_verification(
    auth: Authorized<ManageTools>,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(_body): ApiJson<QueueBody>,
) -> Result<(StatusCode, Json<VerificationView>), ApiError> {
    let tenant = auth.principal.tenant;
    let store = state.store();
    let tool = store.tool(tenant, ToolId(id)).await?;
    let settings = stored(&state, tenant, &tool).await?;
    check(&state, &tool, &settings)?;
    let value = serde_json::to_value(&settings).map_err(|e| ApiError::Internal(e.to_string()))?;
    let queued = store
        .queue_verification(tenant, tool.id, &auth.principal.subject, &value)
        .await?;
    Ok((StatusCode::ACCEPTED, Json(verification_view(queued))))
}

/// `GET /api/tools/{id}/verifications` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListQuery {
    /// How many, the latest first: 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u32>,
}

/// A tool's verifications, the latest first.
#[utoipa::path(get, path = "/api/tools/{id}/verifications", tag = "verifications",
    params(("id" = Uuid, Path, description = "The tool's id"), ListQuery),
    security(("bearer" = ["AIManager:ManageTools"])),
    responses(
        (status = 200, description = "The verifications", body = VerificationPage),
        (status = 400, description = "`invalid_query`", body = crate::ErrorEnvelope),
        (status = 404, description = "No such tool for this tenant", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn list_verifications(
    auth: Authorized<ManageTools>,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<VerificationPage>, ApiError> {
    let limit = query.limit.unwrap_or(20);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::InvalidQuery {
            message: format!("limit must be between 1 and 100, not {limit}"),
        });
    }
    let tenant = auth.principal.tenant;
    let tool = state.store().tool(tenant, ToolId(id)).await?;
    let found = state.store().verifications(tenant, tool.id, limit).await?;
    Ok(Json(VerificationPage {
        verifications: found.into_iter().map(verification_view).collect(),
    }))
}

/// One verification with what it found per operation: the drift, every
/// replayed call and each divergence by JSON pointer.
#[utoipa::path(get, path = "/api/tools/{id}/verifications/{verification_id}", tag = "verifications",
    params(
        ("id" = Uuid, Path, description = "The tool's id"),
        ("verification_id" = Uuid, Path, description = "The verification's id"),
    ),
    security(("bearer" = ["AIManager:ManageTools"])),
    responses(
        (status = 200, description = "The verification", body = VerificationView),
        (status = 404, description = "No such tool or verification for this tenant", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn get_verification(
    auth: Authorized<ManageTools>,
    State(state): State<AppState>,
    ApiPath((id, verification_id)): ApiPath<(Uuid, Uuid)>,
) -> Result<Json<VerificationView>, ApiError> {
    let tenant = auth.principal.tenant;
    let tool = state.store().tool(tenant, ToolId(id)).await?;
    let (record, results) = state
        .store()
        .verification(tenant, tool.id, verification_id)
        .await?;
    let mut view = verification_view(record);
    view.results = Some(results.into_iter().map(|r| result_view(&tool, r)).collect());
    Ok(Json(view))
}
