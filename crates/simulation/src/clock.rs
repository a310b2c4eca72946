//! The clocks of a run: the sequence clock that orders an attempt's
//! records, and the virtual sleeper that counts mock delays without
//! sleeping.

use chrono::{DateTime, Utc};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;
use toolmock_runtime::backend::{Clock, Sleeper};

type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// A clock whose every reading is later than the one before, so that the
/// evidence and error records of one attempt sort into the order the calls
/// happened (the trajectory depends on it).
#[derive(Debug, Default)]
pub struct SequenceClock {
    last: AtomicI64,
}

impl Clock for SequenceClock {
    fn now(&self) -> DateTime<Utc> {
        let wall = Utc::now().timestamp_nanos_opt().unwrap_or(i64::MAX);
        let mut prev = self.last.load(Ordering::Relaxed);
        loop {
            let next = wall.max(prev + 1);
            match self
                .last
                .compare_exchange_weak(prev, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return DateTime::from_timestamp_nanos(next),
                Err(seen) => prev = seen,
            }
        }
    }
}

/// The virtual clock's sleeper: a `delay_ms` costs no wall time; the
/// attempt's simulated time is the sum of its evidence's `delay_ms`.
#[derive(Debug, Clone, Copy, Default)]
pub struct VirtualSleeper;

impl Sleeper for VirtualSleeper {
    fn sleep(&self, _delay: Duration) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
}
