//! Shared fixtures in a simulation file (docs/simulations.md "Fixtures"):
//! read from a file or given inline, the base of every attempt's state,
//! written per attempt without one attempt seeing another's writes, judged
//! by `final_state`, hashed into the results; conflicts and the size limit
//! refused with their codes and paths.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolmock_runtime::backend::Catalog;
use toolmock_runtime::{Dispatcher, MemoryStore};
use toolmock_simulation::document::SimulationDocument;
use toolmock_simulation::{
    FileProblem, RunError, RunOptions, RunResults, VirtualSleeper, load_file, run, start_request,
};

/// A folder of its own under the target dir, removed when dropped.
struct Folder(PathBuf);

impl Folder {
    fn new(name: &str) -> Folder {
        let dir = std::env::temp_dir().join(format!(
            "toolmock-shared-fixtures-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        Folder(dir)
    }

    fn write(&self, name: &str, value: &Value) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, serde_json::to_vec(value).expect("json")).expect("written");
        path
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn orders(n: usize) -> Value {
    let orders: serde_json::Map<String, Value> = (0..n)
        .map(|i| {
            (
                format!("#W{i}"),
                json!({"status": "pending", "items": [{"id": i, "price": "10.00"}]}),
            )
        })
        .collect();
    json!({"orders": orders})
}

/// A retail-like tool: read one order by id, cancel one order by id.
fn document(fixtures: Value, initial_state: Value, attempts: u32) -> Value {
    let id = json!({"$input": "order_id"});
    json!({
        "simulation_version": 1,
        "name": "shared fixtures",
        "attempts": attempts,
        "fixtures": fixtures,
        "tools": [{
            "name": "shop", "from": "custom",
            "operations": [
                {"name": "get_order", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}},
                {"name": "cancel", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}}
            ],
            "definitions": {
                "get_order": {
                    "schema_version": 2, "default_variant": "ok", "initial_state": initial_state,
                    "variants": {"ok": {
                        "result": {"order": {"$state": ["orders", id]}},
                        "rules": [{"when": [{"source": "state", "path": ["orders", id], "op": "exists", "value": false}],
                                   "result": {"error": "not found"}}]
                    }},
                    "examples": [{"variant": "ok", "input": {"order_id": "#W9"}, "expected": {"error": "not found"}}]
                },
                "cancel": {
                    "schema_version": 2, "default_variant": "ok",
                    "variants": {"ok": {
                        "result": {"was": {"$state": ["orders", id, "status"]}},
                        "set_state": [{"path": ["orders", id, "status"], "value": "cancelled"}]
                    }},
                    "examples": [{"variant": "ok", "input": {"order_id": "#W1"}, "state": {"orders": {"#W1": {"status": "pending"}}},
                                  "expected": {"was": "pending"}}]
                }
            }
        }],
        "agent": {"name": "clerk", "tools": ["shop"]},
        "cases": [
            {"name": "cancels", "driver": {"type": "scripted", "steps": [
                {"tool": "shop", "operation": "get_order", "arguments": {"order_id": "#W1"},
                 "expect": {"result": {"order": {"status": "pending", "items": [{"id": 1, "price": "10.00"}]}}}},
                {"tool": "shop", "operation": "cancel", "arguments": {"order_id": "#W1"},
                 "expect": {"result": {"was": "pending"}}},
                {"tool": "shop", "operation": "get_order", "arguments": {"order_id": "#W1"},
                 "expect": {"result": {"order": {"status": "cancelled", "items": [{"id": 1, "price": "10.00"}]}}}}
             ]},
             "expect": {"final_state": {"subset": {"orders": {"#W1": {"status": "cancelled"}, "#W2": {"status": "pending"}}}}}},
            // Runs beside `cancels`: it never sees that case's write.
            {"name": "reads", "driver": {"type": "scripted", "steps": [
                {"tool": "shop", "operation": "get_order", "arguments": {"order_id": "#W1"},
                 "expect": {"result": {"order": {"status": "pending", "items": [{"id": 1, "price": "10.00"}]}}}}
             ]},
             "expect": {"final_state": {"subset": {"orders": {"#W1": {"status": "pending"}}}}}}
        ]
    })
}

async fn run_file(path: &Path) -> Result<RunResults, RunError> {
    let loaded = match load_file(path) {
        Ok(loaded) => loaded,
        Err(problems) => return Err(RunError::Problems(problems)),
    };
    let store = MemoryStore::new();
    let tenant = store.create_tenant("acme").await.expect("tenant");
    let dispatcher = Dispatcher::new(store).with_sleeper(Arc::new(VirtualSleeper));
    let options = RunOptions {
        jobs: 4,
        ..RunOptions::default()
    };
    run(
        Arc::new(dispatcher),
        tenant,
        Arc::new(loaded),
        &options,
        Arc::new(|| {}),
    )
    .await
}

fn problems(result: Result<RunResults, RunError>) -> Vec<FileProblem> {
    match result {
        Err(RunError::Problems(problems)) => problems,
        other => panic!("expected problems, got {other:?}"),
    }
}

#[tokio::test]
async fn a_file_fixture_is_every_attempts_base_and_writes_stay_apart() {
    let folder = Folder::new("file");
    folder.write("db.json", &orders(50));
    let path = folder.write(
        "sim.json",
        &document(json!([{"file": "db.json"}]), json!({"audit": []}), 3),
    );
    let results = run_file(&path).await.expect("runs");
    assert!(
        results.ok,
        "{}",
        serde_json::to_string(&results.cases).unwrap_or_default()
    );
    assert_eq!(results.summary.attempts, 6);
    // The hash pins the fixtures: sha256 of the canonical JSON of their array.
    let expected = toolmock_runtime::FixtureInput::hash_all(&[toolmock_runtime::FixtureInput {
        label: String::new(),
        members: orders(50).as_object().cloned().unwrap_or_default(),
    }]);
    assert!(expected.as_ref().is_some_and(|h| h.len() == 64));
    assert_eq!(results.fixtures_hash, expected);
    let shown = serde_json::to_value(&results).expect("json");
    assert_eq!(shown["fixtures_hash"], json!(expected));
}

#[tokio::test]
async fn an_inline_fixture_runs_as_the_file_does() {
    let folder = Folder::new("inline");
    let path = folder.write(
        "sim.json",
        &document(json!([{"value": orders(5)}]), json!({}), 2),
    );
    let results = run_file(&path).await.expect("runs");
    assert!(results.ok);
    assert_eq!(results.summary.attempts, 4);
}

#[tokio::test]
async fn no_fixtures_leave_the_results_as_they_were() {
    let folder = Folder::new("none");
    let mut doc = document(json!([]), orders(5), 1);
    if let Some(fields) = doc.as_object_mut() {
        fields.remove("fixtures");
    }
    let path = folder.write("sim.json", &doc);
    let results = run_file(&path).await.expect("runs");
    assert!(results.ok);
    assert_eq!(results.fixtures_hash, None);
    let shown = serde_json::to_value(&results).expect("json");
    assert!(shown.get("fixtures_hash").is_none());
}

#[tokio::test]
async fn a_key_given_twice_is_a_state_conflict_at_both() {
    let folder = Folder::new("conflict");
    folder.write("db.json", &orders(2));
    let path = folder.write(
        "sim.json",
        &document(
            json!([{"file": "db.json"}, {"value": {"orders": {}, "users": {}}}]),
            json!({"users": {}}),
            1,
        ),
    );
    let found = problems(run_file(&path).await);
    let shown: Vec<(&str, &str)> = found.iter().map(|p| (p.code, p.path.as_str())).collect();
    assert!(
        shown.contains(&("state_conflict", "/fixtures/1")),
        "{found:?}"
    );
    assert!(
        shown.contains(&(
            "state_conflict",
            "/tools/0/definitions/get_order/initial_state"
        )),
        "{found:?}"
    );
    let fixture_pair = found
        .iter()
        .find(|p| p.path == "/fixtures/1")
        .map(|p| p.message.as_str())
        .unwrap_or_default();
    assert!(
        fixture_pair.contains("/fixtures/0") && fixture_pair.contains("\"orders\""),
        "{fixture_pair}"
    );
}

#[tokio::test]
async fn a_fixture_that_is_not_an_object_or_not_there_is_refused() {
    let folder = Folder::new("bad");
    folder.write("list.json", &json!([1, 2]));
    let path = folder.write(
        "sim.json",
        &document(
            json!([{"file": "list.json"}, {"file": "absent.json"}]),
            json!({}),
            1,
        ),
    );
    let found = problems(run_file(&path).await);
    let shown: Vec<(&str, &str)> = found.iter().map(|p| (p.code, p.path.as_str())).collect();
    assert!(
        shown.contains(&("wrong_type", "/fixtures/0/file")),
        "{found:?}"
    );
    assert!(
        shown.contains(&("missing_file", "/fixtures/1")),
        "{found:?}"
    );
}

#[tokio::test]
async fn fixtures_over_16_mib_are_refused_with_the_limit() {
    let folder = Folder::new("large");
    // 17 MiB of one string: over the fixtures' own limit.
    let big = json!({"blob": "x".repeat(17 * 1024 * 1024)});
    folder.write("big.json", &big);
    let path = folder.write(
        "sim.json",
        &document(json!([{"file": "big.json"}]), json!({}), 1),
    );
    let found = problems(run_file(&path).await);
    let message = found.first().map(|p| p.message.clone()).unwrap_or_default();
    assert!(
        message.contains("shared fixtures") && message.contains("16777216"),
        "{found:?}"
    );
}

#[test]
fn a_document_whose_fixture_file_was_never_loaded_does_not_start() {
    // Parsed, not loaded: the fixture still names its file. Starting
    // without it would run every attempt on the wrong state.
    let document: SimulationDocument = serde_json::from_value(document(
        json!([{"value": orders(1)}, {"file": "db.json"}]),
        json!({}),
        1,
    ))
    .expect("a simulation document");
    let refused = start_request(&document, toolmock_runtime::model::AgentId::random());
    match refused {
        Err(error @ RunError::FixtureNotLoaded { index: 1 }) => {
            assert_eq!(error.code(), "fixture_not_loaded");
            assert!(error.to_string().contains("/fixtures/1"), "{error}");
        }
        other => panic!("expected FixtureNotLoaded, got {other:?}"),
    }
}

/// A version-3 removal in an attempt over shared fixtures: the order is
/// gone for that attempt (a read answers "not found", `final_state` is
/// judged on the merged state) and still there for the case beside it.
#[tokio::test]
async fn a_removal_takes_a_record_out_of_one_attempt_only() {
    let folder = Folder::new("removal");
    folder.write("db.json", &orders(20));
    let mut doc = document(json!([{"file": "db.json"}]), json!({"audit": []}), 2);
    let tool = &mut doc["tools"][0];
    if let Some(operations) = tool["operations"].as_array_mut() {
        operations.push(json!({"name": "delete", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}}));
    }
    tool["definitions"]["delete"] = json!({
        "schema_version": 3, "default_variant": "ok",
        "variants": {"ok": {
            "result": {"deleted": {"$input": "order_id"}},
            "set_state": [{"remove": ["orders", {"$input": "order_id"}]},
                          {"remove": "orders", "where": {"status": "cancelled"}}]
        }},
        "examples": [{"variant": "ok", "input": {"order_id": "#W1"},
                      "state": {"orders": {"#W1": {}, "#W2": {"status": "cancelled"}, "#W3": {"status": "pending"}}},
                      "expected": {"deleted": "#W1"},
                      "expected_state": {"orders": {"#W3": {"status": "pending"}}}}]
    });
    let step = |operation: &str, id: &str, result: Value| json!({"tool": "shop", "operation": operation, "arguments": {"order_id": id}, "expect": {"result": result}});
    doc["cases"] = json!([
        {"name": "deletes", "driver": {"type": "scripted", "steps": [
            step("cancel", "#W2", json!({"was": "pending"})),
            step("delete", "#W1", json!({"deleted": "#W1"})),
            step("get_order", "#W1", json!({"error": "not found"})),
            step("get_order", "#W2", json!({"error": "not found"})),
            step("delete", "#W1", json!({"deleted": "#W1"}))
        ]},
         "expect": {"final_state": {"subset": {"orders": {"#W3": {"status": "pending"}}}}}},
        {"name": "reads", "driver": {"type": "scripted", "steps": [
            step("get_order", "#W1", json!({"order": {"status": "pending", "items": [{"id": 1, "price": "10.00"}]}}))
        ]}}
    ]);
    let path = folder.write("sim.json", &doc);
    let results = run_file(&path).await.expect("runs");
    assert!(
        results.ok,
        "{}",
        serde_json::to_string(&results.cases).unwrap_or_default()
    );
    assert_eq!(results.summary.attempts, 4);
}
