//! The worker's set-up: its configuration and the check of it, what it
//! reports, why it cannot run, and the dispatcher it runs attempts on.

use std::sync::Arc;
use std::time::Duration;
use toolmock_runtime::Dispatcher;
use toolmock_simulation::{SequenceClock, VirtualSleeper};
use toolmock_store::PgStore;

/// How a worker runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerConfig {
    /// The lease owner name; unique per worker process (a lease is fenced
    /// by it and its epoch).
    pub owner: String,
    /// Attempts run at once.
    pub concurrency: usize,
    /// How long a claim's lease lasts without a heartbeat.
    pub lease: Duration,
    /// How often the held leases are renewed (well under `lease`).
    pub heartbeat: Duration,
    /// How often an idle worker looks at the queue when no `NOTIFY` came.
    pub poll: Duration,
    /// How often this worker's reaper sweeps expired leases.
    pub reap_every: Duration,
    /// After the shutdown signal: how long held attempts may take to
    /// finish before they are given back.
    pub grace: Duration,
    /// Sleep mock delays for real instead of counting them on the virtual
    /// clock (as `toolmock run --real-delays`), for every simulation; a
    /// simulation whose document says `"real_delays": true` gets them
    /// either way.
    pub real_delays: bool,
    /// How long one verification of a library tool may take (its lease
    /// lasts 30 s more); the worker runs one at a time beside its attempts
    /// (docs/verify.md).
    pub verify_budget: Duration,
    /// Added to this process's clock wherever the worker reads it (the
    /// times its records are stamped with): zero but in tests of a worker
    /// whose clock is wrong. Whether a lease is live is never read on it,
    /// only on PostgreSQL's clock.
    pub clock_offset: chrono::TimeDelta,
}

impl WorkerConfig {
    /// The defaults for `owner`: 4 at once, a 30 s lease renewed every
    /// 10 s, a 1 s poll, a reaper sweep every 5 s, 20 s of grace, virtual
    /// delays.
    pub fn new(owner: impl Into<String>) -> Self {
        Self {
            owner: owner.into(),
            concurrency: 4,
            lease: Duration::from_secs(30),
            heartbeat: Duration::from_secs(10),
            poll: Duration::from_secs(1),
            reap_every: Duration::from_secs(5),
            grace: Duration::from_secs(20),
            real_delays: false,
            verify_budget: Duration::from_secs(600),
            clock_offset: chrono::TimeDelta::zero(),
        }
    }
}

/// What a worker did before it stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Report {
    /// Attempts claimed.
    pub claimed: u64,
    /// Attempts run to their finish.
    pub finished: u64,
    /// Attempts given back to the queue at shutdown (no call had begun).
    pub released: u64,
    /// Attempts ended at shutdown after calls had begun (`lease_expired`).
    pub abandoned: u64,
    /// Leases lost while running (not renewed in time: reaped or expired).
    pub lost: u64,
}

/// Why a worker could not run.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The configuration cannot work (e.g. no concurrency, a heartbeat not
    /// shorter than the lease).
    #[error("invalid worker configuration: {0}")]
    Config(String),
}

impl WorkerError {
    /// A stable, machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            WorkerError::Config(_) => "invalid_worker_config",
        }
    }
}

/// A dispatcher as the worker runs attempts: delays on the virtual clock
/// unless `real_delays`, its clock this process's (moved by `offset`), and
/// no real handler.
pub(crate) fn dispatcher(
    store: PgStore,
    real_delays: bool,
    offset: chrono::TimeDelta,
) -> Dispatcher<PgStore> {
    let clock = OffsetClock {
        clock: SequenceClock::default(),
        offset,
    };
    let dispatcher = Dispatcher::new(store).with_clock(Arc::new(clock));
    if real_delays {
        dispatcher
    } else {
        dispatcher.with_sleeper(Arc::new(VirtualSleeper))
    }
}

/// This process's clock, moved by an offset.
struct OffsetClock {
    clock: SequenceClock,
    offset: chrono::TimeDelta,
}

impl toolmock_runtime::backend::Clock for OffsetClock {
    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now() + self.offset
    }
}

pub(crate) fn check(config: &WorkerConfig) -> Result<(), WorkerError> {
    if config.concurrency == 0 {
        return Err(WorkerError::Config("concurrency must be at least 1".into()));
    }
    if config.owner.is_empty() {
        return Err(WorkerError::Config("the owner name is empty".into()));
    }
    if config.heartbeat.is_zero() || config.heartbeat >= config.lease {
        return Err(WorkerError::Config(format!(
            "the heartbeat ({:?}) must be shorter than the lease ({:?})",
            config.heartbeat, config.lease
        )));
    }
    if config.verify_budget.is_zero() {
        return Err(WorkerError::Config(
            "the verification budget must be positive".into(),
        ));
    }
    if config.poll.is_zero() || config.reap_every.is_zero() {
        return Err(WorkerError::Config(
            "the poll and reaper intervals must be positive".into(),
        ));
    }
    Ok(())
}
