//! The module graph of `crates/api/src`: built from every `crate::…`,
//! `super::…` and child-module path of the sources (tests excluded), it has
//! no cycle, and no module imports from a layer above its own. A new module
//! fails here until it is placed in [`LAYERS`].

use std::path::Path;
use toolmock_module_graph::{self as module_graph, Graph, code, cycle, sources, upward};

/// The crate's layers, bottom first: a module may use its own layer and
/// those below. `jobs` uses no module of the crate at all (it is to move
/// into the worker binary), and one resource's routes never use another's.
const LAYERS: &[&[&str]] = &[
    // The one error type.
    &["error"],
    // Below the state: background jobs (runtime, simulation and store
    // only), the generator, the token verifier, the MCP endpoint's table.
    &[
        "jobs",
        "generator",
        "auth",
        "mcp_allow",
        "security_headers",
        "served_table",
    ],
    // What every handler shares.
    &["state"],
    // Request plumbing, response views, what the API reads back.
    &[
        "call_task",
        "cassette_upload",
        "served_tools",
        "extract",
        "user_talk",
        "limits",
        "middleware",
        "served_tools",
        "stored",
        "views",
        "views::simulations",
        "views::testing",
        "views::tools",
        "views::usage",
        "views::verifications",
    ],
    // One module per resource, owning its paths.
    &[
        "routes::agents",
        "routes::attempts",
        "routes::cassettes",
        "routes::health",
        "routes::simulations",
        "routes::testing",
        "routes::testing::cache",
        "routes::tools",
        "routes::verifications",
    ],
    // The route table (router, OpenAPI, matrices) and the UI's assets.
    &["routes", "ui"],
    // The crate root.
    &["crate"],
    // A client of the whole router, in-process.
    &["seed"],
];

/// The module graph of `crates/api/src`.
fn graph() -> Graph {
    module_graph::graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

#[test]
fn no_module_uses_a_higher_layer() {
    let graph = graph();
    let upward = upward(&graph, LAYERS);
    assert!(
        upward.is_empty(),
        "imports from a lower layer to a higher one: {upward:#?}"
    );
    assert!(
        graph["jobs"].is_empty(),
        "the background jobs use the HTTP layer: {:?}",
        graph["jobs"]
    );
    let resource = |m: &str| {
        m.strip_prefix("routes::")
            .map(|r| r.split("::").next().unwrap().to_owned())
    };
    for (module, uses) in &graph {
        for used in uses {
            if let (Some(a), Some(b)) = (resource(module), resource(used)) {
                assert_eq!(a, b, "{module} uses another resource's routes: {used}");
            }
        }
    }
}

#[test]
fn the_module_graph_has_no_cycle() {
    let graph = graph();
    assert_eq!(cycle(&graph), None, "an import cycle");
}

#[test]
fn the_graph_sees_the_imports_it_checks() {
    // What the other tests rely on: paths through the root's re-exports,
    // `super::` and bare child modules are all followed.
    let graph = graph();
    assert!(
        graph["routes::tools"].contains("state"),
        "{:?}",
        graph["routes::tools"]
    );
    assert!(graph["routes::tools"].contains("error"));
    assert!(graph["routes::testing"].contains("routes::testing::cache"));
    assert!(graph["crate"].contains("routes"));
    assert!(graph["views::simulations"].contains("jobs"));
}

#[test]
fn handlers_build_no_problem_by_hand() {
    // A problem's JSON is written in one place (`ApiError::unprocessable`);
    // the rules that find problems are the libraries', with typed codes.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/routes");
    let mut files = Vec::new();
    sources(&src, &mut files);
    for file in files {
        let text = code(&std::fs::read_to_string(&file).unwrap());
        let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        assert!(
            !squeezed.contains("json!({\"code\"")
                && !squeezed.contains("\"problems\":")
                && !squeezed.contains("Problem::"),
            "{} builds a problem by hand",
            file.display()
        );
    }
}

/// The route table is the API's only router: no module of the crate adds a
/// route, nests or merges a router, except the table's own module (which
/// builds the router from the table and adds the OpenAPI document's route),
/// the UI's (its asset routes, which are not API routes and not in the
/// OpenAPI document) and the crate root, which merges those two.
#[test]
fn the_route_table_is_the_only_router() {
    const ALLOWED: &[(&str, &str)] = &[
        ("routes/mod.rs", "the table, and /api/openapi.json"),
        ("ui.rs", "the UI's assets"),
        ("lib.rs", "merges the table's router and the UI's"),
    ];
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut found = Vec::new();
    for file in files {
        let relative = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = code(&std::fs::read_to_string(&file).unwrap());
        let routes = [
            ".route(",
            ".nest(",
            ".merge(",
            "Router::new(",
            ".route_service(",
        ]
        .iter()
        .any(|needle| text.contains(needle));
        if routes && !ALLOWED.iter().any(|(path, _)| relative == *path) {
            found.push(relative);
        }
    }
    assert!(
        found.is_empty(),
        "routes outside the route table: {found:?}"
    );
    // The table's module builds the router from the table alone: one
    // `.route(` — the OpenAPI document's.
    let table = code(&std::fs::read_to_string(src.join("routes/mod.rs")).unwrap());
    assert_eq!(table.matches(".route(").count(), 1, "routes/mod.rs");
}
