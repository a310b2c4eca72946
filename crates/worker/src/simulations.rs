//! The simulations a worker has loaded: each document loaded once per
//! simulation and kept for a while, with what plays it and, when it needs
//! one, a dispatcher of its own.

use crate::agents::Agents;
use crate::metered::BudgetOf;
use crate::setup::dispatcher;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use toolmock_agent::{Cassette, CassetteMode, Models};
use toolmock_discovery::RealExecutor;
use toolmock_runtime::Dispatcher;
use toolmock_runtime::model::{SimulationId, SimulationMode, TenantId, WorkflowDoc};
use toolmock_simulation::{ChatModel, LoadedSimulation, Players, load_value, real_handlers};
use toolmock_store::PgStore;

/// A simulation as its attempts run: the loaded document, its workflows,
/// what plays its model cases, and a dispatcher of its own when it differs
/// from the worker's shared one: a `real_tools` simulation's has the real
/// handlers (the shared one has none: nothing else executes anything real),
/// and a simulation that asks for `real_delays` sleeps them for real.
pub(crate) struct Playable {
    pub(crate) loaded: LoadedSimulation,
    pub(crate) workflows: HashMap<String, WorkflowDoc>,
    pub(crate) own: Option<Own>,
    pub(crate) players: Players,
    /// The model cassette it was started with (docs/cassettes.md,
    /// "Through the API and workers"): its players answer through it.
    pub(crate) cassette: Option<Arc<Cassette>>,
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
    /// `simulation`'s playable form: kept, or loaded from `store`; a
    /// simulation dropped from the kept ones is forgotten by `shared` (the
    /// worker's dispatcher). `real_delays` is the worker's flag.
    pub(crate) async fn get(
        &self,
        (store, shared): (&PgStore, &Dispatcher<PgStore>),
        (real_delays_flag, clock_offset): (bool, chrono::TimeDelta),
        agents: &Agents,
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
        let document = store
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
        let real_delays = loaded.document.real_delays && !real_delays_flag;
        let own = (real_tools || real_delays).then(|| {
            let mut dispatcher =
                dispatcher(store.clone(), real_delays_flag || real_delays, clock_offset);
            let executor = real_tools.then(|| {
                Arc::new(
                    RealExecutor::new(real_handlers(&loaded).operations, REAL_CALL_TIMEOUT)
                        .with_targets(agents.targets.clone())
                        .with_max_response_bytes(agents.real_max_response_bytes),
                )
            });
            if let Some(executor) = &executor {
                dispatcher = dispatcher.with_executor(executor.clone());
            }
            (Arc::new(dispatcher), executor)
        });
        let cassette = cassette_of(store, tenant, simulation).await?;
        let budgeted = store
            .budget_standing(tenant, simulation)
            .await
            .map_err(|e| format!("reading the simulation's budget failed: {e}"))?
            .is_some();
        // A simulation with a token or cost budget (fixed when it started,
        // so read once here, not per attempt) has each live model's
        // requests checked against the spend before each is sent — under
        // its cassette, so a replayed answer is never refused or counted.
        let gate = |model: Option<Arc<dyn ChatModel>>, role, price| {
            let budget = BudgetOf {
                store: store.clone(),
                tenant,
                simulation,
            };
            model.map(|m| {
                if budgeted {
                    budget.gate(m, role, price)
                } else {
                    m
                }
            })
        };
        let prices = agents.prices;
        let models = Models {
            model: gate(agents.model.clone(), "agent", prices.agent),
            judge: gate(agents.judge.clone(), "judge", prices.judge),
            user: gate(
                agents.user.clone().or_else(|| agents.model.clone()),
                "user",
                prices.user,
            ),
            attempt_timeout: agents.attempt_timeout,
        };
        let models = match &cassette {
            Some(cassette) => cassette.tape(models),
            None => models,
        };
        let playable = Arc::new(Playable {
            workflows: loaded.workflows(),
            players: Players::new(&loaded, models.model, models.judge)
                .with_user(models.user)
                .with_attempt_timeout(agents.attempt_timeout),
            loaded,
            own,
            cassette,
        });
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.push_back((simulation, playable.clone()));
        if kept.len() > KEPT_SIMULATIONS
            && let Some((old, _)) = kept.pop_front()
        {
            shared.forget_simulation(old);
        }
        Ok(playable)
    }
}

/// The cassette `simulation` was started with, if any, as the exchanges it
/// was given: what its attempts replay (each attempt records its own).
async fn cassette_of(
    store: &PgStore,
    tenant: TenantId,
    simulation: SimulationId,
) -> Result<Option<Arc<Cassette>>, String> {
    let Some(stored) = store
        .simulation_cassette(tenant, simulation)
        .await
        .map_err(|e| format!("reading the simulation's cassette failed: {e}"))?
    else {
        return Ok(None);
    };
    let mode = CassetteMode::parse(&stored.mode)
        .ok_or_else(|| format!("the stored cassette mode {:?} is unknown", stored.mode))?;
    let exchanges = stored
        .given
        .iter()
        .map(|line| toolmock_agent::cassette::parse_exchange(line))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("a stored cassette line does not parse: {e}"))?;
    Ok(Some(Cassette::of_exchanges(mode, exchanges)))
}
