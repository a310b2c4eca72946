//! What the per-attempt MCP endpoint keeps between requests (in the
//! state's `served_table`): a simulation's served tools, read from its
//! pins and its agent's document (fixed when it started), so that a
//! `tools/call` reads nothing but its one durable statement; and the look
//! at a request's JSON-RPC method that tells a `tools/call` (whose lease
//! the dispatcher checks in that statement) from the requests that open
//! or list (checked here first).
//! A start is refused when what the endpoint would serve an attempt with
//! a simulated user has an `ask_user` of the agent's own
//! ([`ask_user_clashes`]).

use crate::error::{ApiError, Listed};
use crate::served_table::Served;
use crate::state::AppState;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use serde::Deserialize;
use std::sync::Arc;
use toolmock_contract::pointer;
use toolmock_mcp::{ASK_USER, ServedTools};
use toolmock_runtime::backend::{Catalog, PinStore};
use toolmock_runtime::model::{SimulationId, TenantId};
use toolmock_simulation::LoadedSimulation;

/// The served tools of `simulation`, read once per state.
pub(crate) async fn served(
    state: &AppState,
    tenant: TenantId,
    simulation: SimulationId,
) -> Result<Arc<Served>, ApiError> {
    if let Some(found) = state.served_table().get(tenant, simulation) {
        return Ok(found);
    }
    let store = state.store();
    let pins = store.simulation_pins(tenant, simulation).await?;
    let document = crate::stored::document(store, tenant, simulation).await?;
    let user_cases: Vec<bool> = document
        .as_ref()
        .map(|d| {
            d.cases
                .iter()
                .map(crate::user_talk::talks_with_a_user)
                .collect()
        })
        .unwrap_or_default();
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
    let tools = ServedTools::new(&direct, &pins.pins, &workflows)
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let with_user = user_cases
        .contains(&true)
        .then(|| tools.clone().with_ask_user().map_err(|e| e.to_string()));
    let workflows = workflows.into_iter().map(|w| (w.name.clone(), w)).collect();
    let served = Arc::new(Served::new(tools, workflows, user_cases, with_user));
    state
        .served_table()
        .keep(tenant, simulation, served.clone());
    Ok(served)
}

/// Each tool and workflow of the agent that the per-attempt MCP endpoint
/// would list as `ask_user` (an operation or a workflow of that name the
/// agent calls directly), when some case of `loaded` talks with a
/// simulated user there: its `ask_user` would hide the user's. Each is a
/// `duplicate_tool_name` at its pointer into the request body (`body`):
/// the operation's entry in the tool's `operations` when the document
/// lists them, else the tool (a library tool's operations are the
/// tenant's); a workflow's `name`.
pub(crate) async fn ask_user_clashes(
    state: &AppState,
    tenant: TenantId,
    loaded: &LoadedSimulation,
    body: &serde_json::Value,
) -> Result<Vec<Listed>, ApiError> {
    let document = &loaded.document;
    if !document
        .cases
        .iter()
        .any(crate::user_talk::talks_with_a_user)
    {
        return Ok(Vec::new());
    }
    let code = toolmock_mcp::McpCode::DuplicateToolName.as_str();
    let mut clashes = Vec::new();
    for name in &document.agent.tools {
        if let Some(k) = document
            .agent
            .workflows
            .iter()
            .position(|w| &w.name == name)
        {
            if name == ASK_USER {
                clashes.push(Listed::new(
                    code,
                    pointer::push(&pointer::index("/agent/workflows", k), "name"),
                    "the agent's workflow ask_user would hide the simulated user's ask_user on the \
                     attempt's MCP endpoint: rename it",
                ));
            }
            continue;
        }
        let Some(index) = document.tools.iter().position(|t| &t.name == name) else {
            continue;
        };
        let at = pointer::index("/tools", index);
        let operations: Vec<String> = match loaded.library.get(name) {
            Some(id) => state
                .store()
                .tool(tenant, *id)
                .await?
                .operations
                .into_iter()
                .map(|o| o.operation.name)
                .collect(),
            None => loaded
                .tools
                .iter()
                .filter(|t| &t.name == name)
                .flat_map(|t| t.operations.iter().map(|o| o.operation.name.clone()))
                .collect(),
        };
        if !operations.iter().any(|o| o == ASK_USER) {
            continue;
        }
        let listed = body
            .pointer(&pointer::push(&at, "operations"))
            .and_then(serde_json::Value::as_array)
            .and_then(|ops| {
                ops.iter().position(|o| {
                    o.get("name").and_then(serde_json::Value::as_str) == Some(ASK_USER)
                })
            });
        let at = match listed {
            Some(j) => pointer::push(
                &pointer::index(&pointer::push(&at, "operations"), j),
                "name",
            ),
            None => at,
        };
        clashes.push(Listed::new(
            code,
            at,
            format!(
                "tool {name:?}'s operation ask_user would hide the simulated user's ask_user on the \
                 attempt's MCP endpoint: rename it"
            ),
        ));
    }
    Ok(clashes)
}

/// A JSON-RPC message's method, and nothing else of it.
#[derive(Deserialize)]
struct Method<'a> {
    #[serde(borrow, default)]
    method: Option<std::borrow::Cow<'a, str>>,
}

/// Reads `request`'s body (at most the configured limit) and tells whether
/// it is a `tools/call`, giving the request back whole. A body that is not
/// a JSON-RPC message is not a `tools/call`; the MCP service answers it.
pub(crate) async fn is_tool_call(
    state: &AppState,
    request: Request,
) -> Result<(bool, Request), ApiError> {
    let (parts, body) = request.into_parts();
    let limit = state.config().body_limit;
    let bytes: Bytes = axum::body::to_bytes(body, limit)
        .await
        .map_err(|_| ApiError::BodyTooLarge { limit })?;
    let call = serde_json::from_slice::<Method<'_>>(&bytes)
        .ok()
        .and_then(|m| m.method)
        .is_some_and(|m| m == "tools/call");
    Ok((call, Request::from_parts(parts, Body::from(bytes))))
}
