//! One claimed attempt: its simulation's document (loaded once per
//! simulation and kept for a while), its run through the simulation
//! runner, and the recording of a run that failed.

use crate::Shared;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use toolmock_contract::pointer;
use toolmock_discovery::RealExecutor;
use toolmock_runtime::Dispatcher;
use toolmock_runtime::dispatcher::StartedAttempt;
use toolmock_runtime::error::{HarnessCode, HarnessFault};
use toolmock_runtime::model::{
    AttemptOutcome, Capability, SimulationId, SimulationMode, TenantId, Verdict, WorkflowDoc,
};
use toolmock_simulation::document::DriverDoc;
use toolmock_simulation::{
    Keeping, LoadedSimulation, Players, load_value, play_attempt, real_handlers,
};
use toolmock_store::{Claimed, Fence, PgStore};

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

/// A simulation as its attempts run: the loaded document, its workflows,
/// what plays its model cases, and a dispatcher of its own when it differs
/// from the worker's shared one: a `real_tools` simulation's has the real
/// handlers (the shared one has none: nothing else executes anything real),
/// and a simulation that asks for `real_delays` sleeps them for real.
pub(crate) struct Playable {
    pub(crate) loaded: LoadedSimulation,
    workflows: HashMap<String, WorkflowDoc>,
    own: Option<Own>,
    players: Players,
}

/// A simulation's own dispatcher, and its real handlers when it has some.
type Own = (Arc<Dispatcher<PgStore>>, Option<Arc<RealExecutor>>);

impl Drop for Playable {
    fn drop(&mut self) {
        // Its MCP sessions end with it (in the background: drop is not async).
        if let Some((_, Some(executor))) = self.own.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move { executor.close().await });
        }
    }
}

/// How long one real call of a real-tools run may take.
const REAL_CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Simulations kept between claims.
const KEPT_SIMULATIONS: usize = 32;

/// The simulations this worker has loaded, the most recent
/// [`KEPT_SIMULATIONS`] kept (a document never changes once started).
#[derive(Default)]
pub(crate) struct Simulations {
    kept: Mutex<VecDeque<(SimulationId, Arc<Playable>)>>,
}

impl Simulations {
    async fn get(
        &self,
        shared: &Shared,
        tenant: TenantId,
        simulation: SimulationId,
    ) -> Result<Arc<Playable>, String> {
        if let Some((_, found)) = self
            .kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|(id, _)| *id == simulation)
        {
            return Ok(found.clone());
        }
        let document = shared
            .store
            .simulation_document(tenant, simulation)
            .await
            .map_err(|e| format!("reading the simulation's document failed: {e}"))?
            .ok_or("the simulation was started without a document")?;
        let loaded = load_value(
            &document,
            "request",
            &toolmock_simulation::Files::InlineOnly,
        )
        .map_err(|problems| {
            format!(
                "the stored simulation document no longer loads ({} problem(s))",
                problems.len()
            )
        })?;
        let real_tools = loaded.document.mode == SimulationMode::RealTools;
        let real_delays = loaded.document.real_delays && !shared.config.real_delays;
        let own = (real_tools || real_delays).then(|| {
            let mut dispatcher = crate::dispatcher(
                shared.store.clone(),
                shared.config.real_delays || real_delays,
                shared.config.clock_offset,
            );
            let executor = real_tools.then(|| {
                Arc::new(
                    RealExecutor::new(real_handlers(&loaded).operations, REAL_CALL_TIMEOUT)
                        .with_targets(shared.agents.targets.clone())
                        .with_max_response_bytes(shared.agents.real_max_response_bytes),
                )
            });
            if let Some(executor) = &executor {
                dispatcher = dispatcher.with_executor(executor.clone());
            }
            (Arc::new(dispatcher), executor)
        });
        let playable = Arc::new(Playable {
            workflows: loaded.workflows(),
            players: Players::new(
                &loaded,
                shared.agents.model.clone(),
                shared.agents.judge.clone(),
            )
            .with_attempt_timeout(shared.agents.attempt_timeout),
            loaded,
            own,
        });
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.push_back((simulation, playable.clone()));
        if kept.len() > KEPT_SIMULATIONS
            && let Some((old, _)) = kept.pop_front()
        {
            shared.dispatcher.forget_simulation(old);
        }
        Ok(playable)
    }
}

/// Runs one claimed attempt to its finish and records its judgement; a run
/// that fails records a `storage_failed` harness error and finishes it, so
/// it ends `harness_error`. A write refused by the fence (the lease lost)
/// ends the run: nothing more is written.
pub(crate) async fn run_claimed(shared: &Shared, claimed: &Claimed, capability: Capability) {
    let tenant = claimed.tenant;
    let message = match run(shared, claimed, capability).await {
        Ok(outcome) => {
            shared.report(|r| r.finished += 1);
            metrics::counter!(crate::telemetry::FINISHED, "outcome" => outcome.as_str())
                .increment(1);
            return;
        }
        Err(message) => message,
    };
    tracing::error!(attempt = %claimed.attempt.as_uuid(), error = %message, "an attempt's run failed");
    let fault = HarnessFault {
        code: HarnessCode::StorageFailed,
        message: format!("the worker's runner failed: {message}"),
        path: None,
    };
    // Under the fence like every write: refused when the lease was lost
    // (the reaper or the next holder decides the outcome then).
    if let Err(e) = shared
        .dispatcher
        .record_harness_fault(tenant, claimed.attempt, None, fault, Value::Null)
        .await
    {
        tracing::warn!(attempt = %claimed.attempt.as_uuid(), error = %e,
            "the runner's failure could not be recorded; the lease will run out");
        return;
    }
    // Already finished (the failure came after the finish) is fine: the
    // harness error recorded above makes the outcome harness_error either way.
    if shared
        .dispatcher
        .finish_attempt(tenant, claimed.attempt, Verdict::Failed)
        .await
        .is_ok()
    {
        shared.report(|r| r.finished += 1);
        metrics::counter!(crate::telemetry::FINISHED, "outcome" => AttemptOutcome::HarnessError.as_str())
            .increment(1);
    }
}

async fn run(
    shared: &Shared,
    claimed: &Claimed,
    capability: Capability,
) -> Result<AttemptOutcome, String> {
    let tenant = claimed.tenant;
    let playable = shared
        .simulations
        .get(shared, tenant, claimed.simulation)
        .await?;
    let cases = &playable.loaded.document.cases;
    let position = cases
        .iter()
        .position(|c| c.name == claimed.test_case_name)
        .ok_or_else(|| format!("no case named {:?} in the document", claimed.test_case_name))?;
    let case = &cases[position];
    let case_at = pointer::index("/cases", position);
    let attempt = StartedAttempt {
        id: claimed.attempt,
        test_case: claimed.test_case,
        test_case_name: claimed.test_case_name.clone(),
        number: claimed.number,
        capability,
    };
    match &case.driver {
        DriverDoc::Scripted { .. } | DriverDoc::Model { .. } => {}
        DriverDoc::Http { .. } => {
            return crate::service::hand_over(shared, claimed, (case, position), &attempt).await;
        }
        DriverDoc::External => {
            return Err(format!(
                "the case {:?} is played by an external agent, not a worker",
                case.name
            ));
        }
    }
    let sink = crate::agents::PgSink {
        store: &shared.store,
        tenant,
        attempt: claimed.attempt,
    };
    let dispatcher = match &playable.own {
        Some((own, _)) => own.as_ref(),
        None => &shared.dispatcher,
    };
    let result = play_attempt(
        dispatcher,
        tenant,
        (&playable.workflows, &playable.players),
        case,
        &case_at,
        &attempt,
        Keeping {
            raw: false,
            sink: Some(&sink),
        },
    )
    .await
    .map_err(|e| e.to_string())?;
    let unmet = serde_json::to_value(&result.unmet).map_err(|e| e.to_string())?;
    let judge = result
        .judge
        .as_ref()
        .map(serde_json::to_value)
        .transpose()
        .map_err(|e| e.to_string())?;
    shared
        .store
        .record_judgement_with(tenant, claimed.attempt, &unmet, judge.as_ref())
        .await
        .map_err(|e| format!("recording the judgement failed: {e}"))?;
    Ok(result.outcome)
}
