//! The worker crate's module graph, built from its sources
//! (`toolmock-module-graph`): no import cycle — in particular none between
//! the crate root and its children (what the loop and its tasks share lives
//! in `shared`, the set-up in `setup`, not in `lib.rs`) — and no module
//! importing from a layer above its own. A new module fails here until it
//! is placed in a layer.

use std::path::Path;
use toolmock_module_graph::{cycle, graph, upward};

/// The worker's layers, bottom first: a module may use its own layer and
/// those below.
const WORKER: &[&[&str]] = &[
    // The configuration, its error, the report and the dispatcher it runs
    // attempts on; the metrics' names and the process's telemetry.
    &["setup", "telemetry"],
    // The agents (model, judge, services), the reaper, verifications.
    &["agents", "reaper", "verification"],
    // Each attempt's model requests metered: the budget and the usage.
    &["metered"],
    // The simulations loaded, then what the loop and its tasks share.
    &["simulations"],
    &["shared"],
    // One claimed attempt, and the hand-over to an agent service.
    &["attempt", "service"],
    // The loop.
    &["crate"],
];

#[test]
fn the_worker_has_no_cycle_and_no_upward_import() {
    let graph = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(graph["attempt"].contains("shared"), "{graph:#?}");
    assert!(graph["crate"].contains("attempt"), "{graph:#?}");
    assert_eq!(cycle(&graph), None, "{graph:#?}");
    let up = upward(&graph, WORKER);
    assert!(
        up.is_empty(),
        "imports from a lower layer to a higher one: {up:#?}"
    );
}
