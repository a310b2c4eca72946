//! Agents: what an agent under test reaches (library, inline and workflow
//! tools), its workflows, prompt and guards.

use crate::AppState;
use crate::auth::{Authorized, RunSimulations};
use crate::error::{ApiCode, ApiError, Listed};
use crate::extract::{ApiJson, ApiPath};
use crate::views::simulations::{AgentView, agent_view};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::Value;
use toolmock_runtime::backend::Catalog;
use toolmock_runtime::error::AgentRejected;
use toolmock_runtime::model::{AgentId, AgentSpec};
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

/// Creates an agent. Every library tool it names must be one of the tenant's.
#[utoipa::path(post, path = "/api/agents", tag = "simulations",
    request_body = CreateAgent,
    security(("bearer" = ["AIManager:RunSimulations"])),
    responses(
        (status = 201, description = "Created", body = AgentView),
        (status = 422, description = "`invalid_agent`: every problem with its pointer (`invalid_name`, `malformed_tool`, `malformed_workflow`, `unknown_tool`: another tenant's or a missing library tool, or a workflow node calling a tool the agent lacks)", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn create_agent(
    auth: Authorized<RunSimulations>,
    State(state): State<AppState>,
    ApiJson(body): ApiJson<CreateAgent>,
) -> Result<(StatusCode, Json<AgentView>), ApiError> {
    let tenant = auth.principal.tenant;
    let checked = AgentSpec::check(
        state.store(),
        tenant,
        &body.name,
        &body.tools,
        &body.workflows,
    );
    let spec = match checked.await {
        Ok(spec) => AgentSpec {
            prompt: body.prompt,
            guards: body.guards,
            ..spec
        },
        Err(AgentRejected::Invalid(problems)) => {
            return Err(ApiError::unprocessable(
                ApiCode::InvalidAgent,
                "the agent is not valid",
                problems.iter().map(|p| Listed::under("", p)),
            ));
        }
        Err(AgentRejected::Store(e)) => return Err(e.into()),
    };
    state
        .ensure_tenant(tenant, &auth.principal.tenant_name)
        .await?;
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
