//! The module graphs of `toolmock-runtime` and `toolmock-simulation`, built
//! from their sources (`toolmock-module-graph`): no import cycle, no module
//! importing from a layer above its own, and no import from the runtime to
//! the simulation crate (the simulation crate is built on the runtime, never
//! the reverse). A new module fails here until it is placed in a layer.

#![allow(clippy::unwrap_used)] // a source that cannot be read fails the test

use std::path::{Path, PathBuf};
use toolmock_module_graph::{Graph, code, cycle, graph, sources, upward};

/// The runtime's layers, bottom first: a module may use its own layer and
/// those below (a module's submodules share its layer).
const RUNTIME: &[&[&str]] = &[
    // Every error and its typed code: nothing else of the crate.
    &["error"],
    // What is stored and passed, the workflow document included.
    &["model"],
    // The storage traits, the in-memory backend, the clock and sleeper.
    &["backend"],
    // The dispatcher: the start and the call pipeline.
    &["dispatcher"],
    // The behaviour suite every backend runs (feature `testkit`).
    &["testkit"],
    &["crate"],
];

/// The simulation crate's layers, bottom first.
const SIMULATION: &[&[&str]] = &[
    // The document, the loader's problems, typed references.
    &["document", "problem", "reference", "clock"],
    // Judging recorded calls, running workflows, loading a document; the
    // conversation's messages and the model boundary (`ChatModel`); the
    // simulated user's view of a conversation.
    &[
        "expect",
        "workflow",
        "load",
        "conversation",
        "simulated_user",
    ],
    // The results document and coverage; the scripted and model drivers and
    // the judging of conversations.
    &["results", "driver", "model_driver", "judge", "starting"],
    // The runner, one room per job, bottom first: its error and the
    // results document's assembly; installing, and concluding an attempt
    // (its expectations, the LLM judge, its finish); starting, and playing
    // an attempt; the suite of every attempt; the room list itself.
    &["runner::error", "runner::results"],
    &["runner::install", "runner::conclude"],
    &["runner::start", "runner::play"],
    &["runner::suite"],
    &["runner"],
    &["crate"],
];

fn src(krate: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(krate)
        .join("src")
}

/// The graph with every submodule folded into its top-level module (a
/// module file and its children are one unit: `model/mod.rs` declares the
/// types `model/fault.rs` builds).
fn top_level(graph: &Graph) -> Graph {
    let top = |m: &str| m.split("::").next().unwrap_or(m).to_owned();
    let mut folded = Graph::new();
    for (module, uses) in graph {
        let entry = folded.entry(top(module)).or_default();
        entry.extend(uses.iter().map(|u| top(u)).filter(|u| *u != top(module)));
    }
    folded
}

/// No cycle and no import from a lower layer to a higher one.
fn assert_layered(graph: &Graph, layers: &[&[&str]]) {
    assert_eq!(cycle(graph), None, "{graph:#?}");
    let up = upward(graph, layers);
    assert!(
        up.is_empty(),
        "imports from a lower layer to a higher one: {up:#?}"
    );
}

#[test]
fn the_runtime_has_no_cycle_and_no_upward_import() {
    assert_layered(&top_level(&graph(&src("runtime"))), RUNTIME);
}

#[test]
fn the_simulation_crate_has_no_cycle_and_no_upward_import() {
    assert_layered(&graph(&src("simulation")), SIMULATION);
}

#[test]
fn the_runtime_never_imports_the_simulation_crate() {
    let mut files = Vec::new();
    sources(&src("runtime"), &mut files);
    for file in files {
        let text = code(&std::fs::read_to_string(&file).unwrap());
        assert!(
            !text.contains("toolmock_simulation"),
            "{} imports the simulation crate",
            file.display()
        );
    }
    let manifest = std::fs::read_to_string(src("runtime").join("../Cargo.toml")).unwrap();
    assert!(!manifest.contains("toolmock-simulation"));
}

#[test]
fn the_graphs_see_the_imports_they_check() {
    let runtime = top_level(&graph(&src("runtime")));
    assert!(runtime["dispatcher"].contains("backend"), "{runtime:#?}");
    assert!(runtime["model"].contains("error"));
    let simulation = graph(&src("simulation"));
    assert!(
        simulation["runner::install"].contains("load"),
        "{simulation:#?}"
    );
    assert!(simulation["workflow"].contains("reference"));
    // An import the layers refuse is found: the runner's own modules
    // placed below the loader.
    assert!(
        !upward(
            &simulation,
            &[
                &["runner"],
                &["load"],
                &[
                    "document",
                    "problem",
                    "reference",
                    "expect",
                    "workflow",
                    "results",
                    "driver",
                    "conversation",
                    "simulated_user",
                    "model_driver",
                    "judge",
                    "clock",
                    "starting",
                    "crate"
                ]
            ]
        )
        .is_empty()
    );
}
