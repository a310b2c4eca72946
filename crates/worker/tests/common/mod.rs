//! What the worker's tests share: a simulation document started and its
//! attempts queued, as the API leaves them for workers to claim.

use serde_json::Value;
use std::time::Duration;
use toolmock_runtime::Dispatcher;
use toolmock_runtime::backend::Catalog;
use toolmock_runtime::model::{AttemptId, SimulationId};
use toolmock_simulation::{Files, install_inline, load_value, start_request};
use toolmock_store::PgStore;

/// Starts `doc` (an inline simulation document) for a new tenant, records
/// the document as the API does and queues every attempt; the simulation
/// and its attempts' ids.
pub(crate) async fn queue_simulation(
    store: &PgStore,
    doc: &Value,
) -> (SimulationId, Vec<AttemptId>) {
    let dispatcher = Dispatcher::new(store.clone());
    let tenant = store.create_tenant("acme").await.expect("tenant");
    let loaded = load_value(doc, "request", &Files::InlineOnly).expect("document loads");
    let installed = install_inline(&dispatcher, tenant, &loaded)
        .await
        .expect("tools install");
    let mut request = start_request(&loaded.document, installed.agent).expect("start request");
    request.lease_owner = "api:test".into();
    request.lease = Duration::from_secs(3600);
    let started = dispatcher.start(tenant, &request).await.expect("start");
    store
        .record_simulation_document(tenant, started.id, "notes", doc, "test")
        .await
        .expect("document recorded");
    let ids: Vec<AttemptId> = started.attempts.iter().map(|a| a.id).collect();
    store.queue_attempts(tenant, &ids).await.expect("queued");
    (started.id, ids)
}
