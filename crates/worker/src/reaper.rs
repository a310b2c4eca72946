//! The reaper: ends every attempt whose lease ran out — its worker killed,
//! paused or partitioned, its external agent gone — as `harness_error`
//! (`lease_expired`), with its capabilities revoked. Safe in every worker
//! and API process at once: the store takes each expired lease back with
//! `FOR UPDATE SKIP LOCKED` and a new epoch (which fences its old holder
//! out), and a second finish of one attempt is refused and ignored.

use std::sync::Arc;
use std::time::Duration;
use toolmock_runtime::Dispatcher;
use toolmock_runtime::error::{FinishError, StoreError};
use toolmock_runtime::model::Verdict;
use toolmock_store::PgStore;

/// Expired leases taken back in one sweep at the most (the next sweep
/// takes the rest at once).
pub const REAP_BATCH: u32 = 500;

/// One sweep: takes back expired leases (a batch at a time, until none is
/// left) and finishes each attempt; the finish records `lease_expired`
/// because its capabilities are revoked. Returns how many it ended.
/// `finisher` must be a dispatcher over an unfenced store
/// (`PgStore::unfenced`).
pub async fn reap_expired(finisher: &Dispatcher<PgStore>) -> Result<usize, StoreError> {
    let mut ended = 0;
    loop {
        let reaped = finisher.backend().reap_expired(REAP_BATCH).await?;
        let batch = reaped.len();
        for taken in reaped {
            match finisher
                .finish_attempt(taken.tenant, taken.attempt, Verdict::Failed)
                .await
            {
                Ok(_) => {
                    ended += 1;
                    metrics::counter!(crate::telemetry::LEASE_EXPIRIES).increment(1);
                    tracing::warn!(attempt = %taken.attempt.as_uuid(), owner = %taken.owner,
                        "the lease ran out: ended as harness_error (lease_expired)");
                }
                Err(FinishError::AlreadyFinished) => {}
                Err(FinishError::Store(e)) => return Err(e),
            }
        }
        if batch < REAP_BATCH as usize {
            return Ok(ended);
        }
    }
}

/// Runs [`reap_expired`] every `every` until aborted.
pub fn spawn_reaper(
    finisher: Arc<Dispatcher<PgStore>>,
    every: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Err(e) = reap_expired(&finisher).await {
                tracing::error!(error = %e, "the reaper cannot take back expired leases");
            }
        }
    })
}
