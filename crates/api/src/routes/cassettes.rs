//! A simulation's model cassette (docs/cassettes.md, "Through the API and
//! workers"), downloaded once its workers recorded into it (a start's body
//! hands it over: `crate::cassette_upload`).

use crate::AppState;
use crate::auth::{Authorized, RunSimulations};
use crate::error::{ApiCode, ApiError};
use crate::extract::ApiPath;
use axum::Json;
use axum::extract::State;
use serde::Serialize;
use serde_json::Value;
use toolmock_agent::CassetteMode;
use toolmock_agent::cassette::{Exchange, parse_exchange};
use toolmock_runtime::model::SimulationId;
use utoipa::ToSchema;
use uuid::Uuid;

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
