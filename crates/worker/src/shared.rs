//! What the worker loop and its tasks share: the store, the dispatchers,
//! the configuration, the attempts held, the simulations loaded, the report
//! and the agents.

use crate::agents::Agents;
use crate::setup::{Report, WorkerConfig};
use crate::simulations::Simulations;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use toolmock_runtime::Dispatcher;
use toolmock_runtime::model::{AttemptId, TenantId};
use toolmock_store::{Fence, PgStore};

/// What the loop and its tasks share.
pub(crate) struct Shared {
    pub(crate) store: PgStore,
    pub(crate) dispatcher: Dispatcher<PgStore>,
    /// The reaper's and the shutdown's finishes: unfenced, since they end
    /// attempts whose lease is no longer anyone's.
    pub(crate) finisher: Arc<Dispatcher<PgStore>>,
    pub(crate) config: WorkerConfig,
    pub(crate) held: Mutex<HashMap<AttemptId, Held>>,
    pub(crate) simulations: Simulations,
    pub(crate) report: Mutex<Report>,
    /// What plays model and http cases.
    pub(crate) agents: Agents,
}

impl Shared {
    pub(crate) fn report(&self, f: impl FnOnce(&mut Report)) {
        f(&mut self.report.lock().unwrap_or_else(PoisonError::into_inner));
    }

    pub(crate) fn held(&self) -> std::sync::MutexGuard<'_, HashMap<AttemptId, Held>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Publishes the store's running count of fence refusals.
    pub(crate) fn count_fence_refusals(&self) {
        metrics::counter!(crate::telemetry::FENCE_REFUSALS).absolute(self.store.fence_refusals());
    }
}

/// An attempt this worker holds: its tenant and lease.
#[derive(Debug)]
pub(crate) struct Held {
    tenant: TenantId,
    fence: Fence,
}

impl Held {
    pub(crate) fn new(tenant: TenantId, fence: Fence) -> Self {
        Self { tenant, fence }
    }

    /// The tenant and the fence of the lease.
    pub(crate) fn lease(&self) -> (TenantId, Fence) {
        (self.tenant, self.fence.clone())
    }
}
