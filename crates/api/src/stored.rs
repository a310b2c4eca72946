//! What the routes read back that the API itself stored: a simulation's
//! document.

use crate::error::ApiError;
use serde::Deserialize;
use serde_json::Value;
use toolmock_runtime::model::{SimulationId, TenantId};
use toolmock_simulation::document::SimulationDocument;
use toolmock_store::PgStore;

/// A stored simulation document, parsed (it was loaded before it was kept,
/// so a failure here is corruption, not the caller's fault).
pub(crate) fn parse_document(value: &Value) -> Result<SimulationDocument, ApiError> {
    SimulationDocument::deserialize(value).map_err(|e| {
        ApiError::Internal(format!("a stored simulation document does not parse: {e}"))
    })
}

/// The parsed document of a simulation, when it was started with one.
pub(crate) async fn document(
    store: &PgStore,
    tenant: TenantId,
    simulation: SimulationId,
) -> Result<Option<SimulationDocument>, ApiError> {
    store
        .simulation_document(tenant, simulation)
        .await?
        .as_ref()
        .map(parse_document)
        .transpose()
}
