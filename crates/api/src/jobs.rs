//! The work the API does besides answering requests: it follows a
//! simulation's attempts in PostgreSQL for the events stream. (Scripted
//! attempts are queued for the workers, `toolmock_worker`, which also
//! reap expired leases.)
//!
//! It reads through the PostgreSQL store alone and imports nothing from
//! the HTTP layer (no state, route or view type; a test in
//! `tests/api/modules.rs` holds it to that), so any process can follow
//! attempts another process runs.

use std::collections::HashMap;
use std::time::Duration;
use toolmock_runtime::error::StoreError;
use toolmock_runtime::model::{SimulationId, TenantId};
use toolmock_store::{AttemptListing, PgStore, SimulationListing};

/// How often the events stream reads the simulation's attempts.
const EVENTS_POLL: Duration = Duration::from_millis(200);

/// What one look at a followed simulation found.
#[derive(Debug)]
pub(crate) enum FollowStep {
    /// The first look: the simulation and every attempt.
    Snapshot(SimulationListing, Vec<AttemptListing>),
    /// A later look: the attempts that changed since the one before.
    Changed(Vec<AttemptListing>),
    /// No attempt is running any more (after a snapshot or changes): the last step.
    Finished(SimulationListing),
    /// The simulation could not be read: the last step.
    Failed(StoreError),
}

/// Follows one simulation's attempts in PostgreSQL, a look every
/// [`EVENTS_POLL`], until none is running.
pub(crate) struct SimulationFollower {
    store: PgStore,
    tenant: TenantId,
    simulation: SimulationId,
    seen: HashMap<uuid::Uuid, AttemptListing>,
    started: bool,
    done: bool,
}

impl SimulationFollower {
    /// A follower of `simulation`; its first look is taken at once.
    pub(crate) fn new(store: PgStore, tenant: TenantId, simulation: SimulationId) -> Self {
        Self {
            store,
            tenant,
            simulation,
            seen: HashMap::new(),
            started: false,
            done: false,
        }
    }

    /// The next look's steps (a snapshot or the changes, then `Finished`
    /// once none is running), or `None` after the last step.
    pub(crate) async fn next(&mut self) -> Option<Vec<FollowStep>> {
        if self.done {
            return None;
        }
        if self.started {
            tokio::time::sleep(EVENTS_POLL).await;
        }
        let read = async {
            let summary = self.store.simulation(self.tenant, self.simulation).await?;
            let attempts = self
                .store
                .simulation_attempts(self.tenant, self.simulation)
                .await?;
            Ok::<_, StoreError>((summary, attempts))
        };
        let (summary, attempts) = match read.await {
            Ok(read) => read,
            Err(e) => {
                self.done = true;
                tracing::error!(simulation = %self.simulation.as_uuid(), error = %e, "the events stream cannot read the simulation");
                return Some(vec![FollowStep::Failed(e)]);
            }
        };
        let mut steps = Vec::new();
        if !self.started {
            self.started = true;
            steps.push(FollowStep::Snapshot(summary.clone(), attempts.clone()));
        } else {
            let changed: Vec<AttemptListing> = attempts
                .iter()
                .filter(|a| self.seen.get(&a.id.as_uuid()) != Some(*a))
                .cloned()
                .collect();
            if !changed.is_empty() {
                steps.push(FollowStep::Changed(changed));
            }
        }
        self.seen = attempts.into_iter().map(|a| (a.id.as_uuid(), a)).collect();
        if summary.running == 0 && summary.queued == 0 {
            self.done = true;
            steps.push(FollowStep::Finished(summary));
        }
        Some(steps)
    }
}
