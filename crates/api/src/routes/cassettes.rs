//! A simulation's model cassette (docs/cassettes.md, "Through the API and
//! workers"): taken from a start's body, and downloaded once its workers
//! recorded into it.

use crate::AppState;
use crate::auth::{Authorized, RunSimulations};
use crate::error::{ApiCode, ApiError, Listed};
use crate::extract::ApiPath;
use axum::Json;
use axum::extract::State;
use serde::Serialize;
use serde_json::Value;
use toolmock_agent::CassetteMode;
use toolmock_agent::cassette::{Exchange, parse_exchange};
use toolmock_contract::pointer;
use toolmock_runtime::model::SimulationId;
use utoipa::ToSchema;
use uuid::Uuid;

/// The most exchanges one start may carry.
pub(crate) const MAX_EXCHANGES: usize = 100_000;

/// A start's `cassette` member, taken out of `body` (the rest is the
/// simulation document): its mode and its exchanges as cassette lines,
/// each checked (its format, and its key the hash of its request).
pub(crate) fn take_cassette(
    body: &mut Value,
) -> Result<Option<(CassetteMode, Vec<String>)>, ApiError> {
    let Some(cassette) = body.as_object_mut().and_then(|o| o.remove("cassette")) else {
        return Ok(None);
    };
    let mut problems = Vec::new();
    let problem = |path: String, message: String| Listed::new("cassette_invalid", path, message);
    let mode = match cassette.get("mode") {
        None => Some(CassetteMode::Replay),
        Some(Value::String(text)) => CassetteMode::parse(text),
        Some(_) => None,
    };
    if mode.is_none() {
        problems.push(problem(
            "/cassette/mode".into(),
            "the mode is \"record\", \"replay\" or \"auto\"".into(),
        ));
    }
    let exchanges = match cassette.get("exchanges") {
        None => &[][..],
        Some(Value::Array(items)) => items.as_slice(),
        Some(_) => {
            problems.push(problem(
                "/cassette/exchanges".into(),
                "the exchanges are an array of cassette exchanges".into(),
            ));
            &[][..]
        }
    };
    if exchanges.len() > MAX_EXCHANGES {
        problems.push(problem(
            "/cassette/exchanges".into(),
            format!(
                "{} exchanges: at most {MAX_EXCHANGES} travel with one start",
                exchanges.len()
            ),
        ));
    }
    match &cassette {
        Value::Object(members) => {
            let known = |k: &&String| matches!(k.as_str(), "mode" | "exchanges");
            if let Some(extra) = members.keys().find(|k| !known(k)) {
                problems.push(problem(
                    pointer::push("/cassette", extra),
                    "a cassette has only `mode` and `exchanges`".into(),
                ));
            }
        }
        _ => problems.push(problem(
            "/cassette".into(),
            "the cassette is an object: {\"mode\", \"exchanges\"}".into(),
        )),
    }
    let mut lines = Vec::with_capacity(exchanges.len());
    for (i, item) in exchanges.iter().enumerate().take(MAX_EXCHANGES) {
        let at = pointer::index("/cassette/exchanges", i);
        match checked(item) {
            Ok(exchange) => lines.push(exchange.line()),
            Err(message) => problems.push(problem(at, message)),
        }
    }
    if !problems.is_empty() {
        return Err(ApiError::unprocessable(
            ApiCode::InvalidCassette,
            format!("the cassette is not usable ({} problem(s))", problems.len()),
            problems,
        ));
    }
    Ok(mode.map(|mode| (mode, lines)))
}

/// One exchange of a start's cassette: of the current format, its key the
/// hash of its request (a line edited by hand is refused, as
/// `toolmock check-cassette` refuses it).
fn checked(item: &Value) -> Result<Exchange, String> {
    let exchange = parse_exchange(&item.to_string())?;
    let text = toolmock_contract::canonical_json(
        &serde_json::from_str::<Value>(exchange.request.get()).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let text = String::from_utf8(text).map_err(|e| e.to_string())?;
    if toolmock_agent::cassette::request_key(&text) != exchange.key {
        return Err("its key is not the sha256 of its request".into());
    }
    Ok(exchange)
}

/// A simulation's cassette as it is now.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct CassetteView {
    /// `record`, `replay` or `auto`.
    mode: String,
    /// How many exchanges its attempts recorded.
    recorded: u32,
    /// Every exchange it holds, in the order of a cassette folder's lines
    /// (docs/cassettes.md, "The files"): those it was given — in `record`
    /// less the cases its attempts recorded again — and those recorded.
    #[schema(value_type = Vec<Object>)]
    exchanges: Vec<Value>,
}

/// A simulation's model cassette: the exchanges it was started with and
/// those its workers recorded, merged as a cassette folder merges them
/// (`toolmock submit --cassette DIR` writes them into DIR).
#[utoipa::path(get, path = "/api/simulations/{id}/cassette", tag = "simulations",
    params(("id" = Uuid, Path, description = "The simulation's id")),
    security(("bearer" = ["AIManager:RunSimulations"])),
    responses(
        (status = 200, description = "The cassette (docs/cassettes.md, \"Through the API and workers\")", body = CassetteView),
        (status = 404, description = "No such simulation for this tenant", body = crate::ErrorEnvelope),
        (status = 409, description = "`no_cassette`: the simulation was started without a cassette", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn get_cassette(
    auth: Authorized<RunSimulations>,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<Json<CassetteView>, ApiError> {
    let tenant = auth.principal.tenant;
    let simulation = SimulationId(id);
    let store = state.store();
    // "Not found" for another tenant's simulation or none at all.
    store.simulation(tenant, simulation).await?;
    let Some(stored) = store.simulation_cassette(tenant, simulation).await? else {
        return Err(ApiError::StateConflict {
            code: ApiCode::NoCassette,
            message: "it was started without a cassette".into(),
        });
    };
    let mode = CassetteMode::parse(&stored.mode)
        .ok_or_else(|| ApiError::Internal(format!("a stored cassette mode {:?}", stored.mode)))?;
    let parse = |lines: &[String]| -> Result<Vec<Exchange>, ApiError> {
        lines
            .iter()
            .map(|l| {
                parse_exchange(l)
                    .map_err(|e| ApiError::Internal(format!("a stored cassette line: {e}")))
            })
            .collect()
    };
    let cassette = toolmock_agent::Cassette::of_exchanges(mode, parse(&stored.given)?);
    cassette.absorb(parse(&stored.recorded)?);
    let exchanges = cassette
        .held()
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(Json(CassetteView {
        mode: stored.mode,
        recorded: u32::try_from(stored.recorded.len()).unwrap_or(u32::MAX),
        exchanges,
    }))
}
