//! What the per-attempt MCP endpoint keeps between requests: a
//! simulation's served tools (its pins and its agent's document, fixed
//! when it started), so that a `tools/call` reads nothing but its one
//! durable statement; and the look at a request's JSON-RPC method that
//! tells a `tools/call` (whose lease the dispatcher checks in that
//! statement) from the requests that open or list (checked here first).

use crate::error::ApiError;
use crate::state::AppState;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use toolmock_mcp::ServedTools;
use toolmock_runtime::backend::PinStore;
use toolmock_runtime::model::{SimulationId, TenantId, WorkflowDoc};

/// How many simulations' served tools a process keeps; past it they are
/// all dropped and read again on their next request (a simulation's pins
/// never change, so a kept entry is never stale, only memory).
const MAX_SERVED: usize = 1024;

/// A simulation's tools as its MCP endpoint serves them.
#[derive(Debug)]
pub(crate) struct Served {
    /// What `tools/list` answers and what each name calls.
    pub(crate) tools: ServedTools,
    /// The agent's workflows, by name.
    pub(crate) workflows: HashMap<String, WorkflowDoc>,
    /// By case position: whether the case talks with a simulated user.
    pub(crate) user_cases: Vec<bool>,
    /// When some case does: `tools` with the simulated user's `ask_user`,
    /// or why the agent's tools cannot serve it (one of its own is called
    /// `ask_user`).
    pub(crate) with_user: Option<Result<ServedTools, String>>,
}

/// By tenant and simulation: a simulation id is unique, and what it
/// serves was fixed at its start, so one table serves every state.
static SERVED: LazyLock<Mutex<HashMap<(TenantId, SimulationId), Arc<Served>>>> =
    LazyLock::new(Mutex::default);

/// The served tools of `simulation`, read once per process.
pub(crate) async fn served(
    state: &AppState,
    tenant: TenantId,
    simulation: SimulationId,
) -> Result<Arc<Served>, ApiError> {
    let key = (tenant, simulation);
    if let Some(found) = SERVED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&key)
    {
        return Ok(found.clone());
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
    let served = Arc::new(Served {
        tools,
        user_cases,
        with_user,
        workflows: workflows.into_iter().map(|w| (w.name.clone(), w)).collect(),
    });
    let mut kept = SERVED.lock().unwrap_or_else(PoisonError::into_inner);
    if kept.len() >= MAX_SERVED {
        kept.clear();
    }
    kept.insert(key, served.clone());
    Ok(served)
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
