//! toolmock's worker loop: it claims the attempts the API queued in
//! PostgreSQL (scripted, model-driven and agent-service cases), runs each
//! under a short lease that it renews by heartbeat and that fences every
//! write it makes for the attempt, and reaps attempts whose lease ran out.
//! The `toolmock-worker` binary runs it, and so does
//! `toolmock-api serve --workers N` inside the API process.
//!
//! It is not an HTTP server and holds no SQL of its own: the queue, the
//! lease, the fence and the reaper's statements are `toolmock_store`'s
//! (`PgStore::claim_attempts`, `renew_leases`, `reap_expired`,
//! `release_attempt`), and an attempt runs through
//! `toolmock_simulation::play_attempt` on a `toolmock_runtime::Dispatcher`,
//! exactly as `toolmock run` runs it (on the virtual clock unless
//! [`WorkerConfig::real_delays`]) — a model case with the model of its
//! [`Agents`], its conversation kept in PostgreSQL as it is played; an
//! `http` case is handed to its agent service, which finishes it through
//! the API. The model endpoint and the services come from the process's
//! flags ([`AgentFlags`]), never from the simulation. What it does is
//! counted as Prometheus metrics and its processes' logging is set up by
//! [`telemetry`]. See docs/operations.md and docs/agents.md.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use toolmock_worker::{WorkerConfig, run};
//! let pool = toolmock_store::connect("postgres://toolmock_app@localhost/toolmock", 8).await?;
//! let store = toolmock_store::PgStore::new(pool);
//! let config = WorkerConfig::new("worker-1");
//! // Runs for a minute, then stops claiming and lets what it holds finish
//! // (or gives it back) within the grace period.
//! let stop = tokio::time::sleep(std::time::Duration::from_secs(60));
//! let report = run(store, config, stop).await?;
//! println!("{} attempts run", report.finished);
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod agents;
mod attempt;
mod metered;
mod reaper;
mod service;
mod setup;
mod shared;
mod simulations;
pub mod telemetry;
mod verification;

pub use agents::{AgentFlags, Agents, PgSink, RolePrices};
pub use reaper::{REAP_BATCH, reap_expired, spawn_reaper};
pub use setup::{Report, WorkerConfig, WorkerError};

use setup::{check, dispatcher};
use shared::{Held, Shared};
use simulations::Simulations;

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinSet;
use toolmock_runtime::Dispatcher;
use toolmock_runtime::model::{AttemptId, Capability};
use toolmock_store::{PgStore, QUEUE_CHANNEL, Released};

/// Runs the worker loop on `store` until `shutdown` completes: claims
/// queued attempts (at most `concurrency` at once), runs each, renews their
/// leases, reaps expired ones, and wakes on the queue's `NOTIFY` (polling
/// every `poll` as well). At shutdown it stops claiming, lets what it holds
/// finish within `grace`, then gives back the rest: queued again when none
/// of its calls began, otherwise ended as `harness_error` (`lease_expired`).
pub async fn run(
    store: PgStore,
    config: WorkerConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<Report, WorkerError> {
    run_with(store, config, Agents::none(), shutdown).await
}

/// [`run`] with the players of agent-played cases: `agents.model` plays
/// `model` cases (and `agents.judge` grades their rubrics), agent services
/// play `http` cases (docs/agents.md). Without them such attempts end
/// `harness_error` (`model_not_configured`, `agent_service_unreachable`).
pub async fn run_with(
    store: PgStore,
    config: WorkerConfig,
    agents: Agents,
    shutdown: impl Future<Output = ()>,
) -> Result<Report, WorkerError> {
    check(&config)?;
    let dispatcher = dispatcher(store.clone(), config.real_delays, config.clock_offset);
    let shared = Arc::new(Shared {
        finisher: Arc::new(Dispatcher::new(store.unfenced())),
        dispatcher,
        store,
        config,
        held: Mutex::default(),
        simulations: Simulations::default(),
        report: Mutex::default(),
        agents,
    });
    let wake = Arc::new(Notify::new());
    let listener = tokio::spawn(listen(shared.store.pool().clone(), wake.clone()));
    let heartbeat = tokio::spawn(heartbeat(shared.clone()));
    let reaper = spawn_reaper(shared.finisher.clone(), shared.config.reap_every);
    // Verifications of library tools, one at a time beside the attempts;
    // one cut short by the shutdown is claimed again when its lease runs out.
    let verifications = tokio::spawn(verification::run(
        shared.store.unfenced(),
        shared.config.owner.clone(),
        (shared.config.poll, shared.config.verify_budget),
        (
            shared.agents.targets.clone(),
            shared.agents.real_max_response_bytes,
        ),
    ));
    let permits = Arc::new(Semaphore::new(shared.config.concurrency));
    let mut tasks = JoinSet::new();
    tokio::pin!(shutdown);
    'claiming: loop {
        let permit = tokio::select! {
            () = &mut shutdown => break 'claiming,
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break 'claiming,
            },
        };
        while tasks.try_join_next().is_some() {}
        // Every free place is claimed for in one statement: under load the
        // places freed while a claim is in flight are many, and one claim
        // each would make the claims a queue of their own.
        let mut permits_held = vec![permit];
        while permits_held.len() < MAX_CLAIMS_AT_ONCE {
            match permits.clone().try_acquire_owned() {
                Ok(permit) => permits_held.push(permit),
                Err(_) => break,
            }
        }
        let capabilities: Vec<Capability> = permits_held
            .iter()
            .map(|_| Capability::generate())
            .collect();
        let hashes: Vec<_> = capabilities.iter().map(Capability::hash).collect();
        match shared
            .store
            .claim_attempts(&shared.config.owner, shared.config.lease, &hashes)
            .await
        {
            Ok(claims) if !claims.is_empty() => {
                // Places not filled (fewer were queued) are given back.
                permits_held.truncate(claims.len());
                let places = claims.into_iter().zip(capabilities).zip(permits_held);
                for ((claimed, capability), permit) in places {
                    start_claimed(&shared, &mut tasks, claimed, capability, permit);
                }
            }
            Ok(_) => {
                drop(permits_held);
                tokio::select! {
                    () = &mut shutdown => break 'claiming,
                    () = wake.notified() => {}
                    () = tokio::time::sleep(shared.config.poll) => {}
                }
            }
            Err(e) => {
                drop(permits_held);
                tracing::error!(error = %e, "claiming a queued attempt failed");
                tokio::select! {
                    () = &mut shutdown => break 'claiming,
                    () = tokio::time::sleep(shared.config.poll) => {}
                }
            }
        }
    }
    tracing::info!(owner = %shared.config.owner, "stopping: no more claims; letting held attempts finish");
    let drained = tokio::time::timeout(shared.config.grace, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        give_back(&shared, &mut tasks).await;
    }
    listener.abort();
    heartbeat.abort();
    reaper.abort();
    verifications.abort();
    let report = *shared.report.lock().unwrap_or_else(PoisonError::into_inner);
    Ok(report)
}

/// The most attempts one claim statement takes (as many as there are free
/// places, up to this).
const MAX_CLAIMS_AT_ONCE: usize = 16;

/// Starts running a claimed attempt in a task of its own, holding its
/// place (`permit`) until it ends.
fn start_claimed(
    shared: &Arc<Shared>,
    tasks: &mut JoinSet<()>,
    claimed: toolmock_store::Claimed,
    capability: Capability,
    permit: tokio::sync::OwnedSemaphorePermit,
) {
    shared.store.hold(claimed.attempt, claimed.fence.clone());
    shared.report(|r| r.claimed += 1);
    metrics::counter!(telemetry::CLAIMED).increment(1);
    // The database's clock stamped the queueing; a worker on another
    // machine reads its own, so a skew shows here.
    let waited = (chrono::Utc::now() - claimed.queued_at)
        .to_std()
        .unwrap_or_default();
    metrics::histogram!(telemetry::DISPATCH_LATENCY).record(waited.as_secs_f64());
    metrics::gauge!(telemetry::HELD).increment(1.0);
    let attempt = claimed.attempt;
    shared
        .held()
        .insert(attempt, Held::new(claimed.tenant, claimed.fence.clone()));
    let task_shared = shared.clone();
    tasks.spawn(async move {
        let began = std::time::Instant::now();
        attempt::run_claimed(&task_shared, &claimed, capability).await;
        metrics::histogram!(telemetry::ATTEMPT_DURATION).record(began.elapsed().as_secs_f64());
        metrics::gauge!(telemetry::HELD).decrement(1.0);
        task_shared.held().remove(&claimed.attempt);
        task_shared.store.let_go(claimed.attempt);
        task_shared.count_fence_refusals();
        drop(permit);
    });
}

/// After the grace period: stops what still runs and gives each back.
async fn give_back(shared: &Arc<Shared>, tasks: &mut JoinSet<()>) {
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
    let held: Vec<(AttemptId, Held)> = shared.held().drain().collect();
    for (attempt, held) in held {
        let (tenant, fence) = held.lease();
        match shared.store.release_attempt(tenant, attempt, &fence).await {
            Ok(Released::Queued) => {
                shared.report(|r| r.released += 1);
                metrics::counter!(telemetry::GIVEN_BACK, "how" => "released").increment(1);
                tracing::info!(attempt = %attempt.as_uuid(), "given back to the queue");
            }
            Ok(Released::Abandoned) => {
                shared.report(|r| r.abandoned += 1);
                metrics::counter!(telemetry::GIVEN_BACK, "how" => "abandoned").increment(1);
                let finished = shared
                    .finisher
                    .finish_attempt(tenant, attempt, toolmock_runtime::model::Verdict::Failed)
                    .await;
                tracing::warn!(attempt = %attempt.as_uuid(), finished = ?finished,
                    "its calls had begun: ended as harness_error (lease_expired) at shutdown");
            }
            Err(e) => {
                tracing::warn!(attempt = %attempt.as_uuid(), error = %e,
                    "could not give back an attempt; its lease will run out and the reaper ends it");
            }
        }
        metrics::gauge!(telemetry::HELD).decrement(1.0);
        shared.store.let_go(attempt);
    }
    shared.count_fence_refusals();
}

/// Wakes the claim loop on every `NOTIFY` of the queue channel;
/// reconnects after a failure (polling covers the gap).
async fn listen(pool: sqlx::PgPool, wake: Arc<Notify>) {
    loop {
        let listened = async {
            let mut listener = sqlx::postgres::PgListener::connect_with(&pool).await?;
            listener.listen(QUEUE_CHANNEL).await?;
            loop {
                listener.recv().await?;
                wake.notify_one();
            }
            #[allow(unreachable_code)]
            Ok::<(), sqlx::Error>(())
        };
        if let Err(e) = listened.await {
            tracing::warn!(error = %e, "listening for queued attempts failed; polling meanwhile");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Renews every held lease each `heartbeat`; a lease not renewed is lost:
/// it is no longer renewed, and the fence refuses whatever its run still
/// writes.
async fn heartbeat(shared: Arc<Shared>) {
    let mut tick = tokio::time::interval(shared.config.heartbeat);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let leases: Vec<(AttemptId, i64)> = shared
            .held()
            .iter()
            .map(|(attempt, held)| (*attempt, held.lease().1.epoch))
            .collect();
        shared.count_fence_refusals();
        if leases.is_empty() {
            continue;
        }
        match shared
            .store
            .renew_leases(&shared.config.owner, &leases, shared.config.lease)
            .await
        {
            Ok(renewed) => {
                for (attempt, _) in leases {
                    if renewed.contains(&attempt) {
                        continue;
                    }
                    // Its run goes on to its end, but the fence refuses
                    // every write it makes from now on.
                    if shared.held().remove(&attempt).is_some() {
                        shared.report(|r| r.lost += 1);
                        metrics::counter!(telemetry::LEASES_LOST).increment(1);
                        tracing::warn!(attempt = %attempt.as_uuid(),
                            "the lease was lost: every further write of its run is refused by the fence");
                    }
                }
            }
            Err(e) => tracing::error!(error = %e, "renewing the leases failed"),
        }
    }
}

#[cfg(test)]
mod error_codes {
    use crate::setup::WorkerError;
    use crate::telemetry::TelemetryError;

    /// One error of each variant: a new variant fails to compile here
    /// until it is listed, and then fails the test until it is documented.
    fn every_code() -> Vec<&'static str> {
        let all = [
            WorkerError::Config(String::new()).code(),
            TelemetryError::Recorder(String::new()).code(),
            TelemetryError::Listen {
                address: String::new(),
                source: std::io::Error::other("x"),
            }
            .code(),
        ];
        // Exhaustive on purpose: a variant added without a line above stops
        // this match from compiling.
        let _ = |e: &WorkerError| match e {
            WorkerError::Config(_) => (),
        };
        let _ = |e: &TelemetryError| match e {
            TelemetryError::Recorder(_) | TelemetryError::Listen { .. } => (),
        };
        all.to_vec()
    }

    #[test]
    fn every_code_is_documented_and_every_documented_code_exists() {
        let doc = include_str!("../../../docs/error-codes.md");
        toolmock_contract::check_documented_codes(doc, "toolmock-worker", &every_code())
            .unwrap_or_else(|e| panic!("{e}"));
    }
}
