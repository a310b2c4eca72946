//! The module graph of `toolmock-evaluator`, built from its sources by
//! `toolmock-module-graph`: no import cycle, no module importing from a
//! layer above its own, the compiled form and the evaluation never reading
//! the syntax, no two source files sharing a name, no `#[path]` include and
//! no module named after a language version. A new module fails here until
//! it is placed in a layer.
//!
//! The graph follows the paths the code writes (`crate::…`), not method
//! calls: a room's check is a method of the checker and a room's rendering
//! a method of the expression, so the layers below are also the order in
//! which those methods call each other — a method is only ever called from
//! its own layer or one above.

#![allow(clippy::unwrap_used)] // a source that cannot be read fails the test

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use toolmock_module_graph::{Graph, code, cycle, graph, sources, upward};

/// The crate's layers, bottom first: a module may use its own layer and
/// those below.
const LAYERS: &[&[&str]] = &[
    // Errors, diagnostics, JSON values, the language's versions, contracts.
    &[
        "error",
        "json",
        "check::diagnostics",
        "nul",
        "language",
        "complexity",
        "contract",
    ],
    // What a call reads: paths, the state (whole or layered), the scope.
    &[
        "paths::dotted",
        "paths::steps",
        "state::overlay",
        "state::view",
        "state::merged",
        "scope",
    ],
    // The expression tree: references and the paths they follow, expressions.
    &["paths::reference", "expr::tree"],
    // What every room's check shares.
    &["check::context"],
    // Reading expressions: references and paths, the core compiler, templates.
    &["paths::parse", "expr::compiler", "render::template"],
    // Version 1's operator families.
    &["expr::numbers", "expr::dates"],
    // Rendering: as values, as JSON text, ahead of the state, into a caller's form.
    &[
        "render::value",
        "render::text",
        "render::ahead",
        "render::build",
    ],
    // The later operator families.
    &[
        "expr::decimals",
        "expr::collections",
        "expr::lists",
        "expr::find",
        "expr::strings",
        "expr::projection",
        "expr::naming",
        "expr::calc",
    ],
    // The rooms built on expressions: conditions, domain errors, writes.
    &[
        "conditions::condition",
        "conditions::want",
        "conditions::membership",
        "conditions::folding",
        "conditions::ordering",
        "conditions::equality",
        "expr::iteration",
        "expr::aggregates",
        "domain::answer",
        "state::removal",
        "state::writes",
    ],
    // Reading those rooms from a definition.
    &[
        "conditions::when",
        "conditions::choice",
        "domain::error_field",
        "state::set_state",
    ],
    // The compiled definition.
    &["rule_index", "definition"],
    // One call.
    &[
        "call::outcome",
        "call::select",
        "call::evaluate",
        "call::built",
        "call::prepared",
        "call::layered",
    ],
    // The check of a whole definition, its examples and its warnings.
    &[
        "check::examples",
        "check::variant",
        "check::document",
        "check::runs",
        "check::warnings",
    ],
    // The rooms' roots, the operators' public face, the crate.
    &[
        "call",
        "check",
        "conditions",
        "domain",
        "expr",
        "paths",
        "render",
        "state",
        "operators",
        "crate",
    ],
];

/// Modules that read the definition's syntax (and only that).
const SYNTAX: &[&str] = &[
    "language",
    "check::context",
    "paths::parse",
    "expr::compiler",
    "render::template",
    "conditions::when",
    "domain::error_field",
    "state::set_state",
    "check::examples",
    "check::variant",
    "check::document",
];

/// Modules of the compiled form and of the evaluation: none of them reads
/// syntax. (An operator family's room owns its syntax, its check and its
/// evaluation, and is neither; `check::runs` evaluates the examples.)
const FORM_AND_EVALUATION: &[&str] = &[
    "paths::dotted",
    "paths::steps",
    "paths::reference",
    "state::overlay",
    "state::view",
    "state::merged",
    "state::removal",
    "state::writes",
    "scope",
    "expr::tree",
    "render::value",
    "render::text",
    "render::ahead",
    "render::build",
    "conditions::condition",
    "domain::answer",
    "rule_index",
    "definition",
    "call::outcome",
    "call::select",
    "call::evaluate",
    "call::built",
    "call::prepared",
    "call::layered",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    sources(&src(), &mut files);
    files.sort();
    files
}

#[test]
fn no_cycle_and_no_upward_import() {
    let graph = graph(&src());
    assert_eq!(cycle(&graph), None, "{graph:#?}");
    let up = upward(&graph, LAYERS);
    assert!(
        up.is_empty(),
        "imports from a lower layer to a higher one: {up:#?}"
    );
    let listed: BTreeSet<&str> = LAYERS.iter().flat_map(|l| l.iter().copied()).collect();
    let unlisted: Vec<&String> = graph
        .keys()
        .filter(|m| !listed.contains(m.as_str()))
        .collect();
    assert!(unlisted.is_empty(), "modules in no layer: {unlisted:?}");
}

#[test]
fn the_compiled_form_and_the_evaluation_never_read_syntax() {
    let graph = graph(&src());
    for module in FORM_AND_EVALUATION {
        let uses = &graph[*module];
        let syntax: Vec<&String> = uses
            .iter()
            .filter(|u| SYNTAX.contains(&u.as_str()))
            .collect();
        assert!(syntax.is_empty(), "{module} reads syntax: {syntax:?}");
    }
}

#[test]
fn names_by_concept() {
    let mut seen = BTreeSet::new();
    for file in files() {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            seen.insert(name.clone()),
            "two source files are called {name}"
        );
        let stem = name.trim_end_matches(".rs");
        let versioned = stem.contains("version")
            || stem.split('_').any(|part| {
                part.len() > 1
                    && part.starts_with('v')
                    && part[1..].bytes().all(|b| b.is_ascii_digit())
            });
        assert!(
            !versioned,
            "{} is named after a language version",
            file.display()
        );
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            !code(&text).contains("#[path"),
            "{} includes a file with #[path]",
            file.display()
        );
    }
}

#[test]
fn the_graph_sees_the_imports_it_checks() {
    let graph: Graph = graph(&src());
    assert!(
        graph["expr::tree"].contains("paths::reference"),
        "{graph:#?}"
    );
    assert!(graph["call::select"].contains("conditions::condition"));
    assert!(graph["check"].contains("expr"));
    // An import the layers refuse is found: the tree placed below the paths.
    let mut swapped: Vec<&[&str]> = LAYERS.to_vec();
    swapped.insert(1, &["expr::tree"]);
    let mut without: Vec<Vec<&str>> = swapped.iter().map(|l| l.to_vec()).collect();
    without[3].retain(|m| *m != "expr::tree");
    let layers: Vec<&[&str]> = without.iter().map(Vec::as_slice).collect();
    assert!(!upward(&graph, &layers).is_empty());
}
