//! Stand-ins for the dispatcher's seams: a clock the test moves, a sleeper
//! that records instead of waiting, an external executor that counts.

use super::prelude::*;

/// A clock the test moves by hand.
#[derive(Debug)]
pub struct ManualClock(Mutex<DateTime<Utc>>);

impl ManualClock {
    /// Starts at the system's now.
    pub fn new() -> Self {
        Self(Mutex::new(Utc::now()))
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock().unwrap();
        *now += chrono::Duration::from_std(by).unwrap();
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap()
    }
}

/// A sleeper that records the delays instead of waiting.
#[derive(Debug, Default)]
pub struct RecordingSleeper(Mutex<Vec<Duration>>);

impl RecordingSleeper {
    /// The delays asked for, in order.
    pub fn delays(&self) -> Vec<Duration> {
        self.0.lock().unwrap().clone()
    }
}

impl Sleeper for RecordingSleeper {
    fn sleep(&self, delay: Duration) -> BoxFuture<'_, ()> {
        self.0.lock().unwrap().push(delay);
        Box::pin(async {})
    }
}

/// An external executor that echoes each call and counts them.
#[derive(Debug, Default)]
pub struct CountingExecutor(AtomicUsize);

impl CountingExecutor {
    /// How many calls it executed.
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl ExternalExecutor for CountingExecutor {
    fn execute<'a>(
        &'a self,
        tool: &'a str,
        operation: &'a str,
        input: &'a Value,
    ) -> BoxFuture<'a, Result<Value, String>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let result = json!({"executed": format!("{tool}/{operation}"), "echo": input});
        Box::pin(async move { Ok(result) })
    }
}
