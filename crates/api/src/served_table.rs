//! What the per-attempt MCP endpoint keeps between requests, one table per
//! [`AppState`](crate::state::AppState) (so two states in one process keep
//! their own, as two API processes do): by simulation, the tools it
//! serves, fixed at its start, and, by attempt, the case each attempt of a
//! simulation with a simulated user plays, fixed at the start too.
//! `served_tools` fills it from PostgreSQL.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use toolmock_mcp::ServedTools;
use toolmock_runtime::model::{AttemptId, SimulationId, TenantId, WorkflowDoc};

/// How many simulations' served tools a state keeps; past it they are all
/// dropped and read again on their next request (a simulation's pins never
/// change, so a kept entry is never stale, only memory).
const MAX_SERVED: usize = 1024;

/// A simulation's tools as its MCP endpoint serves them, handed to each
/// request's handler without a copy.
#[derive(Debug)]
pub(crate) struct Served {
    /// What `tools/list` answers and what each name calls.
    pub(crate) tools: Arc<ServedTools>,
    /// The agent's workflows, by name.
    pub(crate) workflows: Arc<HashMap<String, WorkflowDoc>>,
    /// By case position: whether the case talks with a simulated user.
    pub(crate) user_cases: Vec<bool>,
    /// When some case does: `tools` with the simulated user's `ask_user`,
    /// or why the agent's tools cannot serve it (one of its own is called
    /// `ask_user`: a simulation started before the start refused that).
    pub(crate) with_user: Option<Result<Arc<ServedTools>, String>>,
    /// The case position of each attempt read so far (only for a
    /// simulation with a simulated user; at most its attempts).
    positions: Mutex<HashMap<AttemptId, usize>>,
}

impl Served {
    /// A simulation's served tools, no attempt's position read yet.
    pub(crate) fn new(
        tools: ServedTools,
        workflows: HashMap<String, WorkflowDoc>,
        user_cases: Vec<bool>,
        with_user: Option<Result<ServedTools, String>>,
    ) -> Self {
        Self {
            tools: Arc::new(tools),
            workflows: Arc::new(workflows),
            user_cases,
            with_user: with_user.map(|w| w.map(Arc::new)),
            positions: Mutex::default(),
        }
    }

    /// The case position of `attempt`, if it was read before.
    pub(crate) fn position(&self, attempt: AttemptId) -> Option<usize> {
        self.positions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&attempt)
            .copied()
    }

    /// Keeps the case position of `attempt`, read from PostgreSQL.
    pub(crate) fn keep_position(&self, attempt: AttemptId, position: usize) {
        self.positions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(attempt, position);
    }
}

/// The served tools kept, by tenant and simulation.
#[derive(Debug, Default)]
pub(crate) struct ServedTable {
    kept: Mutex<HashMap<(TenantId, SimulationId), Arc<Served>>>,
}

impl ServedTable {
    /// The served tools of `simulation`, if kept.
    pub(crate) fn get(&self, tenant: TenantId, simulation: SimulationId) -> Option<Arc<Served>> {
        self.kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(tenant, simulation))
            .cloned()
    }

    /// Keeps `served` for `simulation` (the table emptied first when full).
    pub(crate) fn keep(&self, tenant: TenantId, simulation: SimulationId, served: Arc<Served>) {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() >= MAX_SERVED {
            kept.clear();
        }
        kept.insert((tenant, simulation), served);
    }

    /// How many simulations are kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served() -> Arc<Served> {
        let tools = ServedTools::new(&[], &[], &[]).unwrap();
        Arc::new(Served::new(tools, HashMap::new(), vec![true], None))
    }

    #[test]
    fn a_kept_simulation_is_found_and_a_full_table_starts_over() {
        let table = ServedTable::default();
        let tenant = TenantId::random();
        let first = SimulationId::random();
        assert!(table.get(tenant, first).is_none());
        let kept = served();
        table.keep(tenant, first, kept.clone());
        assert!(Arc::ptr_eq(&table.get(tenant, first).unwrap(), &kept));
        // Another tenant's id finds nothing.
        assert!(table.get(TenantId::random(), first).is_none());
        for _ in 1..MAX_SERVED {
            table.keep(tenant, SimulationId::random(), served());
        }
        assert_eq!(table.len(), MAX_SERVED);
        table.keep(tenant, SimulationId::random(), served());
        assert_eq!(table.len(), 1, "emptied, then the new one kept");
        assert!(table.get(tenant, first).is_none());
    }

    #[test]
    fn an_attempts_position_is_kept_once_read() {
        let served = served();
        let attempt = AttemptId::random();
        assert_eq!(served.position(attempt), None);
        served.keep_position(attempt, 3);
        assert_eq!(served.position(attempt), Some(3));
        assert_eq!(served.position(AttemptId::random()), None);
    }
}
