//! What the model-driven benchmarks share: a document run on one thread
//! against the in-memory backend on the virtual clock.

use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolmock_runtime::backend::Catalog;
use toolmock_runtime::{Dispatcher, MemoryStore};
use toolmock_simulation::{Files, RunOptions, SequenceClock, VirtualSleeper, load_value, run};

/// Runs `document` with `options` (its models) on one thread, every
/// attempt required to pass; its wall time, start and install included.
pub(crate) fn timed_on_one_thread(document: &Value, options: RunOptions) -> Duration {
    let loaded = Arc::new(load_value(document, "bench.json", &Files::InlineOnly).unwrap());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = MemoryStore::new();
        let tenant = store.create_tenant("bench").await.unwrap();
        let dispatcher = Arc::new(
            Dispatcher::new(store)
                .with_clock(Arc::new(SequenceClock::default()))
                .with_sleeper(Arc::new(VirtualSleeper)),
        );
        let began = Instant::now();
        let results = run(dispatcher, tenant, loaded, &options, Arc::new(|| {}))
            .await
            .unwrap();
        let elapsed = began.elapsed();
        assert!(results.ok, "every attempt passes");
        elapsed
    })
}
