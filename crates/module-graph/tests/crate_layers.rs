//! The workspace's crates are layered (ARCHITECTURE.md, "Bird's-eye view"),
//! checked on `cargo metadata`: a crate depends (normally or to build) only
//! on crates of the rows above its own, or on crates listed before it in its
//! own row — the rows and their order below are ARCHITECTURE.md's table.
//! A new workspace crate fails here until it is placed.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed expectation must panic

use serde_json::Value;
use std::collections::BTreeMap;

/// ARCHITECTURE.md's rows, top first, each in the order its crates may use
/// one another.
const ROWS: &[&[&str]] = &[
    // data
    &["toolmock-contract"],
    // pure logic
    &["toolmock-evaluator", "toolmock-schema"],
    // orchestration
    &["toolmock-runtime", "toolmock-simulation"],
    // adapters
    &[
        "toolmock-discovery",
        "toolmock-store",
        "toolmock-agent",
        "toolmock-mcp",
        "toolmock-verify",
        "toolmock-worker",
        "toolmock-api",
    ],
    // binaries
    &["toolmock-cli", "toolmock-api-bin", "toolmock-worker-bin"],
    // bindings
    &["toolmock-python"],
];

/// Test tooling: a dev-dependency only, of any crate.
const DEV_ONLY: &[&str] = &["toolmock-module-graph", "toolmock-real-tools-fixture"];

fn metadata() -> Value {
    let output = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Each workspace crate's workspace dependencies (normal and build).
fn dependencies() -> BTreeMap<String, Vec<String>> {
    let metadata = metadata();
    let packages = metadata["packages"].as_array().unwrap();
    let names: Vec<&str> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    packages
        .iter()
        .map(|p| {
            let uses = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].as_str() != Some("dev"))
                .map(|d| d["name"].as_str().unwrap())
                .filter(|d| names.contains(d))
                .map(str::to_owned)
                .collect();
            (p["name"].as_str().unwrap().to_owned(), uses)
        })
        .collect()
}

#[test]
fn crates_depend_only_on_the_rows_above_or_earlier_in_their_own() {
    let order: Vec<&str> = ROWS.iter().flat_map(|row| row.iter().copied()).collect();
    let position = |name: &str| order.iter().position(|n| *n == name);
    let dependencies = dependencies();
    assert!(dependencies.len() > 10, "{dependencies:#?}");
    let mut wrong = Vec::new();
    for (name, uses) in &dependencies {
        if DEV_ONLY.contains(&name.as_str()) {
            assert!(uses.is_empty(), "{name} uses {uses:?}");
            continue;
        }
        let Some(at) = position(name) else {
            wrong.push(format!("{name} is in no row of ARCHITECTURE.md's table"));
            continue;
        };
        for used in uses {
            match position(used) {
                Some(u) if u < at => {}
                _ => wrong.push(format!("{name} -> {used}")),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "dependencies against the layers: {wrong:#?}"
    );
}
