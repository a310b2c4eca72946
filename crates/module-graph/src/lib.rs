//! A crate's module graph read from its sources: every `crate::…`,
//! `super::…` and bare child-module path of the code (tests and comments
//! excluded), resolved to the module it names, and the two checks the
//! workspace's layer tests make of it — [`cycle`] (an import loop) and
//! [`upward`] (an import from a lower layer to a higher one).
//!
//! This is a development-only crate (never published, a dev-dependency
//! only): the module tests of `toolmock-evaluator`, `toolmock-runtime`,
//! `toolmock-simulation` and `toolmock-api` share it. It reads names, not
//! types: a method called on a value is not an import, so a layer test
//! states which module each file is, and this crate checks the paths the
//! code writes. It is not a Rust parser: a path inside a string literal
//! counts, a path written through a `use` alias of another module does not.
//!
//! ```
//! use toolmock_module_graph::{cycle, graph, upward};
//!
//! let src = std::env::temp_dir().join(format!("module-graph-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&src)?;
//! std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\n")?;
//! std::fs::write(src.join("a.rs"), "use crate::b::B;\npub struct A(B);\n")?;
//! std::fs::write(src.join("b.rs"), "pub struct B;\n")?;
//! let modules = graph(&src);
//! assert!(modules["a"].contains("b"));
//! assert_eq!(cycle(&modules), None);
//! // `b` placed below `a` is fine; above it, `a`'s import is upward.
//! assert!(upward(&modules, &[&["b"], &["a"], &["crate"]]).is_empty());
//! assert_eq!(upward(&modules, &[&["a"], &["b"], &["crate"]]), ["a -> b"]);
//!
//! std::fs::write(src.join("b.rs"), "pub struct B(Box<crate::a::A>);\n")?;
//! assert_eq!(cycle(&graph(&src)), Some(vec!["a".to_owned(), "b".to_owned(), "a".to_owned()]));
//! std::fs::remove_dir_all(&src)?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! Every function panics on a source it cannot read: it serves tests, where
//! a panic is the failure.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
// A source that cannot be read fails the test that reads it.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The modules of a crate and, for each, the modules of the crate it uses.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

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

/// Every `.rs` file under `dir`.
pub fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
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
pub fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap();
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path that starts with `prefix` in `code`, as its `::` segments
/// (lower-case segments only: the modules, then the first item). A group
/// (`crate::{a, b::c}`) gives one path per member.
pub fn paths_after<'c>(code: &'c str, prefix: &str) -> Vec<Vec<&'c str>> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + prefix.len()..];
        // Part of a longer path, or a macro's `$crate::` (the crate that
        // expands it, not a module of this one).
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '$') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for member in group[..end].split(',') {
                let member = member.trim().trim_start_matches('{');
                let name = member
                    .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                    .map_or(member, |stop| &member[..stop]);
                let segments: Vec<&str> = name.split("::").filter(|s| !s.is_empty()).collect();
                if !segments.is_empty() {
                    found.push(segments);
                }
            }
            continue;
        }
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        found.push(rest[..end].split("::").filter(|s| !s.is_empty()).collect());
    }
    found
}

/// The graph of the crate whose sources are in `src`.
pub fn graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    sources(src, &mut files);
    let texts: BTreeMap<String, String> = files
        .iter()
        .map(|f| {
            (
                module_of(src, f),
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
        let Some((module, items)) = rest.split_once("::") else {
            continue;
        };
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

/// The layer `module` is in: the first of `layers` (bottom first) that
/// lists it or, for a module no layer lists, its parent.
pub fn layer(layers: &[&[&str]], module: &str) -> usize {
    let mut name = module;
    loop {
        if let Some(at) = layers.iter().position(|layer| layer.contains(&name)) {
            return at;
        }
        match name.rsplit_once("::") {
            Some((parent, _)) => name = parent,
            None => panic!("the module {module} is in no layer of this test"),
        }
    }
}

/// Every import from a module to one in a higher layer, as `from -> to`.
pub fn upward(graph: &Graph, layers: &[&[&str]]) -> Vec<String> {
    let mut found = Vec::new();
    for (module, uses) in graph {
        for used in uses {
            if layer(layers, used) > layer(layers, module) {
                found.push(format!("{module} -> {used}"));
            }
        }
    }
    found
}

/// The first import cycle found, as the modules along it.
pub fn cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        module: &str,
        graph: &Graph,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|m| m == module) {
            let mut cycle = path[at..].to_vec();
            cycle.push(module.to_owned());
            return Some(cycle);
        }
        if done.contains(module) {
            return None;
        }
        path.push(module.to_owned());
        for used in graph.get(module).into_iter().flatten() {
            if let Some(cycle) = visit(used, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(module.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|module| visit(module, graph, &mut Vec::new(), &mut done))
}
