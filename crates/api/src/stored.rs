//! What the routes read back that the API itself stored: a simulation's
//! document, and an attempt's records.

use crate::error::ApiError;
use serde::Deserialize;
use serde_json::Value;
use toolmock_runtime::backend::EvidenceSink;
use toolmock_runtime::model::{
    AttemptId, EvidenceRecord, HarnessErrorRecord, SimulationId, TenantId, ToolInputErrorRecord,
};
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

/// What an attempt recorded: its evidence, tool input errors and harness
/// errors, each in order.
pub(crate) struct Records {
    /// Evidence rows.
    pub(crate) evidence: Vec<EvidenceRecord>,
    /// Tool input errors.
    pub(crate) tool_input_errors: Vec<ToolInputErrorRecord>,
    /// Harness errors.
    pub(crate) harness_errors: Vec<HarnessErrorRecord>,
}

/// Reads an attempt's [`Records`].
pub(crate) async fn records(
    store: &PgStore,
    tenant: TenantId,
    attempt: AttemptId,
) -> Result<Records, ApiError> {
    Ok(Records {
        evidence: store.evidence(tenant, attempt).await?,
        tool_input_errors: store.tool_input_errors(tenant, attempt).await?,
        harness_errors: store.harness_errors(tenant, attempt).await?,
    })
}
