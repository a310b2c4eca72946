//! The work the API does besides answering requests: it runs the scripted
//! cases' attempts of a simulation it started, ends attempts whose lease ran
//! out, and follows a simulation's attempts in PostgreSQL for the events
//! stream.
//!
//! Each job works through the dispatcher over the PostgreSQL store alone:
//! it imports nothing from the HTTP layer (no state, route or view type; a
//! test in `tests/api/modules.rs` holds it to that), so it can move into a
//! worker binary as it is, and any process can follow attempts another
//! process runs.

use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use toolmock_contract::pointer;
use toolmock_runtime::Dispatcher;
use toolmock_runtime::dispatcher::StartedAttempt;
use toolmock_runtime::error::{FinishError, HarnessCode, HarnessFault, StoreError};
use toolmock_runtime::model::{SimulationId, TenantId, Verdict};
use toolmock_simulation::document::DriverDoc;
use toolmock_simulation::{LoadedSimulation, run_attempt};
use toolmock_store::{AttemptListing, PgStore, SimulationListing};

use futures_util::StreamExt;

/// Scripted attempts of one simulation run at once by the process that
/// started it: enough to overlap their database round trips, few enough
/// that one big simulation does not starve the API's pool.
const SCRIPTED_AT_ONCE: usize = 4;

/// Runs the scripted cases' attempts of a just-started simulation in the
/// background, [`SCRIPTED_AT_ONCE`] at a time, and records each one's
/// judgement. External cases' attempts are left to their agents.
///
/// A run that fails (storage, a capability the runner cannot use) records a
/// `storage_failed` harness error for its attempt and finishes it, so it
/// ends as `harness_error`, never as a pass, and never stays running; if
/// even that cannot be written, its lease runs out and the log says why.
pub(crate) fn spawn_scripted(
    dispatcher: Arc<Dispatcher<PgStore>>,
    tenant: TenantId,
    loaded: Arc<LoadedSimulation>,
    attempts: Vec<StartedAttempt>,
) {
    let positions: HashMap<String, usize> = loaded
        .document
        .cases
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.clone(), i))
        .collect();
    let scripted: Vec<(usize, StartedAttempt)> = attempts
        .into_iter()
        .filter_map(|a| {
            let position = *positions.get(&a.test_case_name)?;
            matches!(
                loaded.document.cases[position].driver,
                DriverDoc::Scripted { .. }
            )
            .then_some((position, a))
        })
        .collect();
    if scripted.is_empty() {
        return;
    }
    tokio::spawn(async move {
        let workflows = loaded.workflows();
        futures_util::stream::iter(scripted)
            .for_each_concurrent(SCRIPTED_AT_ONCE, |(position, attempt)| {
                let (dispatcher, loaded, workflows) = (&*dispatcher, &loaded, &workflows);
                async move {
                    run_one(dispatcher, tenant, loaded, workflows, position, &attempt).await;
                }
            })
            .await;
    });
}

async fn run_one(
    dispatcher: &Dispatcher<PgStore>,
    tenant: TenantId,
    loaded: &LoadedSimulation,
    workflows: &HashMap<String, toolmock_runtime::model::WorkflowDoc>,
    position: usize,
    attempt: &StartedAttempt,
) {
    let case = &loaded.document.cases[position];
    let ran = run_attempt(
        dispatcher,
        tenant,
        workflows,
        case,
        &pointer::index("/cases", position),
        attempt,
        false,
    )
    .await;
    let failure = match ran {
        Ok(result) => match serde_json::to_value(&result.unmet) {
            Ok(unmet) => dispatcher
                .backend()
                .record_judgement(tenant, attempt.id, &unmet)
                .await
                .err()
                .map(|e| format!("recording the judgement failed: {e}")),
            Err(e) => Some(e.to_string()),
        },
        Err(e) => Some(e.to_string()),
    };
    let Some(message) = failure else {
        return;
    };
    tracing::error!(attempt = %attempt.id.as_uuid(), error = %message, "a scripted attempt failed");
    let fault = HarnessFault {
        code: HarnessCode::StorageFailed,
        message: format!("the API's scripted runner failed: {message}"),
        path: None,
    };
    if let Err(e) = dispatcher
        .record_harness_fault(tenant, attempt.id, None, fault, Value::Null)
        .await
    {
        tracing::error!(attempt = %attempt.id.as_uuid(), error = %e, "the runner's failure could not be recorded");
        return;
    }
    // Already finished (the failure came after the finish) is fine: the
    // harness error recorded above makes the outcome harness_error either way.
    let _ = dispatcher
        .finish_attempt(tenant, attempt.id, Verdict::Failed)
        .await;
}

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
        if summary.running == 0 {
            self.done = true;
            steps.push(FollowStep::Finished(summary));
        }
        Some(steps)
    }
}

/// Attempts expired in one sweep at the most (the next sweep takes the rest).
const EXPIRED_PER_SWEEP: u32 = 500;

/// Ends every attempt still running after its lease ran out — its external
/// agent gone, or the process that ran its script dead — as `harness_error`:
/// a `lease_expired` harness error is recorded, then the attempt is
/// finished. Returns how many it ended. Safe to run from every process at
/// once: a second finish of the same attempt is refused and ignored.
pub(crate) async fn expire_abandoned(
    dispatcher: &Dispatcher<PgStore>,
) -> Result<usize, StoreError> {
    let store = dispatcher.backend();
    let now = chrono::Utc::now();
    let expired = store.expired_attempts(now, EXPIRED_PER_SWEEP).await?;
    let mut ended = 0;
    for (tenant, attempt) in expired {
        // The finish itself records `lease_expired`: the lease is over.
        // Another process may have finished it meanwhile: that is fine, its
        // finish recorded the same.
        match dispatcher
            .finish_attempt(tenant, attempt, Verdict::Failed)
            .await
        {
            Ok(_) => ended += 1,
            Err(FinishError::AlreadyFinished) => {}
            Err(FinishError::Store(e)) => return Err(e),
        }
    }
    Ok(ended)
}

/// How often the lease sweep runs.
const SWEEP_EVERY: Duration = Duration::from_secs(30);

/// Runs [`expire_abandoned`] every [`SWEEP_EVERY`] until aborted.
pub(crate) fn spawn_lease_sweeper(
    dispatcher: Arc<Dispatcher<PgStore>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(SWEEP_EVERY);
        loop {
            tick.tick().await;
            match expire_abandoned(&dispatcher).await {
                Ok(0) => {}
                Ok(n) => tracing::warn!(
                    attempts = n,
                    "attempts whose lease ran out ended as harness_error"
                ),
                Err(e) => tracing::error!(error = %e, "the lease sweeper cannot read the attempts"),
            }
        }
    })
}
