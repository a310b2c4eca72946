//! The module graph of `crates/api/src`: built from every `crate::…`,
//! `super::…` and child-module path of the sources (tests excluded), it has
//! no cycle, and no module imports from a layer above its own. A new module
//! fails here until it is placed in [`LAYERS`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crate's layers, bottom first: a module may use its own layer and
/// those below. `jobs` uses no module of the crate at all (it is to move
/// into the worker binary), and one resource's routes never use another's.
const LAYERS: &[&[&str]] = &[
    // The one error type.
    &["error"],
    // Below the state: background jobs (runtime, simulation and store
    // only), the generator, the token verifier.
    &["jobs", "generator", "auth", "mcp_allow", "security_headers"],
    // What every handler shares.
    &["state"],
    // Request plumbing, response views, what the API reads back.
    &[
        "call_task",
        "extract",
        "limits",
        "middleware",
        "stored",
        "views",
        "views::simulations",
        "views::testing",
        "views::tools",
    ],
    // One module per resource, owning its paths.
    &[
        "routes::agents",
        "routes::attempts",
        "routes::health",
        "routes::simulations",
        "routes::testing",
        "routes::testing::cache",
        "routes::tools",
    ],
    // The route table (router, OpenAPI, matrices) and the UI's assets.
    &["routes", "ui"],
    // The crate root.
    &["crate"],
];

/// The module each source file is (`routes/testing/mod.rs` → `routes::testing`).
fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    if parts.is_empty() {
        "crate".to_owned()
    } else {
        parts.join("::")
    }
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a source file without its tests and comments.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap();
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_path_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == ':'
}

/// The leading path of `text` as its `::` segments.
fn segments(text: &str) -> Vec<&str> {
    let end = text.find(|c| !is_path_char(c)).unwrap_or(text.len());
    text[..end].split("::").filter(|s| !s.is_empty()).collect()
}

/// Every path that starts with `prefix` in `code`, as its `::` segments
/// (the modules, then the first item). A group (`crate::{a, b::c}`) gives
/// one path per member, so a `use` of several modules cannot hide them.
fn paths_after<'c>(code: &'c str, prefix: &str) -> Vec<Vec<&'c str>> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(is_path_char) {
            continue;
        }
        let Some(group) = rest.strip_prefix('{') else {
            found.push(segments(rest));
            continue;
        };
        let mut depth = 0usize;
        let mut start = 0;
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    found.push(segments(group[start..i].trim_start()));
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    found.push(segments(group[start..i].trim_start()));
                    start = i + 1;
                }
                _ => {}
            }
        }
    }
    found
}

/// The modules of the crate and, for each, the modules it uses.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let texts: BTreeMap<String, String> = files
        .iter()
        .map(|f| {
            (
                module_of(&src, f),
                code(&std::fs::read_to_string(f).unwrap()),
            )
        })
        .collect();
    let modules: BTreeSet<String> = texts.keys().cloned().collect();
    // Items the root re-exports live in the module they come from.
    let mut reexports = BTreeMap::new();
    for line in texts["crate"].lines() {
        let Some(rest) = line.trim().strip_prefix("pub use ") else {
            continue;
        };
        let rest = rest.trim_end_matches(';');
        let (module, items) = rest.split_once("::").unwrap();
        for item in items.trim_matches(|c| c == '{' || c == '}').split(',') {
            reexports.insert(item.trim().to_owned(), module.to_owned());
        }
    }
    let resolve = |segments: &[&str]| -> String {
        // The longest prefix that is a module; else a root item.
        for n in (1..=segments.len()).rev() {
            let candidate = segments[..n].join("::");
            if modules.contains(&candidate) {
                return candidate;
            }
        }
        segments
            .first()
            .and_then(|item| reexports.get(*item))
            .cloned()
            .unwrap_or_else(|| "crate".to_owned())
    };
    let mut graph = BTreeMap::new();
    for (module, text) in &texts {
        let mut uses = BTreeSet::new();
        for path in paths_after(text, "crate::") {
            uses.insert(resolve(&path));
        }
        let parent: Vec<&str> = if module == "crate" {
            Vec::new()
        } else {
            let mut p: Vec<&str> = module.split("::").collect();
            p.pop();
            p
        };
        for path in paths_after(text, "super::") {
            let full: Vec<&str> = parent.iter().copied().chain(path).collect();
            uses.insert(if full.is_empty() {
                "crate".to_owned()
            } else {
                resolve(&full)
            });
        }
        // A child module used by its bare name (`cache::testing_answer`).
        for child in modules.iter().filter(|m| {
            m.rsplit_once("::")
                .map_or(module == "crate", |(p, _)| p == module)
        }) {
            let name = child.rsplit("::").next().unwrap();
            if !paths_after(text, &format!("{name}::")).is_empty() {
                uses.insert(child.clone());
            }
        }
        uses.remove(module);
        graph.insert(module.clone(), uses);
    }
    graph
}

fn layer(module: &str) -> usize {
    LAYERS
        .iter()
        .position(|layer| layer.contains(&module))
        .unwrap_or_else(|| panic!("the module {module} is in no layer of this test"))
}

#[test]
fn no_module_uses_a_higher_layer() {
    let graph = graph();
    let mut upward = Vec::new();
    for (module, uses) in &graph {
        for used in uses {
            if layer(used) > layer(module) {
                upward.push(format!("{module} -> {used}"));
            }
        }
    }
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
    fn visit(
        module: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) {
        if let Some(at) = path.iter().position(|m| m == module) {
            panic!("an import cycle: {:?} -> {module}", &path[at..]);
        }
        if done.contains(module) {
            return;
        }
        path.push(module.to_owned());
        for used in graph.get(module).into_iter().flatten() {
            visit(used, graph, path, done);
        }
        path.pop();
        done.insert(module.to_owned());
    }
    let graph = graph();
    let mut done = BTreeSet::new();
    for module in graph.keys() {
        visit(module, &graph, &mut Vec::new(), &mut done);
    }
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
    let grouped = paths_after("use crate::{AppState, limits::{a, b}, x::y};", "crate::");
    assert_eq!(grouped, [vec!["AppState"], vec!["limits"], vec!["x", "y"]]);
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
