//! `toolmock run --evidence` over shared fixtures writes what each attempt
//! changed, not its whole state, and `toolmock evidence state` gives the
//! whole state back (docs/simulations.md, "--evidence DIR"); through the
//! real binary.

mod common;

use common::toolmock;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Output;

fn scratch() -> PathBuf {
    common::scratch("evidence-state")
}

fn said(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `n` orders, all pending.
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

/// A shop over `fixtures`: `cancel` writes one order's status (a nested
/// write), `note` replaces a top-level member, `forget` removes an order.
fn document(fixtures: Value) -> Value {
    let id = json!({"$input": "order_id"});
    json!({
        "simulation_version": 1,
        "name": "evidence state",
        "fixtures": fixtures,
        "tools": [{
            "name": "shop", "from": "custom",
            "operations": [
                {"name": "cancel", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}},
                {"name": "note", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}}
            ],
            "definitions": {
                "cancel": {
                    "schema_version": 2, "default_variant": "ok", "initial_state": {"notes": []},
                    "variants": {"ok": {
                        "result": {"was": {"$state": ["orders", id, "status"]}},
                        "set_state": [{"path": ["orders", id, "status"], "value": "cancelled"}]
                    }},
                    "examples": [{"variant": "ok", "input": {"order_id": "#W1"}, "state": {"orders": {"#W1": {"status": "pending"}}},
                                  "expected": {"was": "pending"}}]
                },
                "note": {
                    "schema_version": 2, "default_variant": "ok",
                    "variants": {"ok": {"result": {"ok": true}, "set_state": {"notes": [{"$input": "text"}]}}},
                    "examples": [{"variant": "ok", "input": {"text": "hi"}, "expected": {"ok": true}}]
                }
            }
        }],
        "agent": {"name": "clerk", "tools": ["shop"]},
        "cases": [
            {"name": "cancels two", "driver": {"type": "scripted", "steps": [
                {"tool": "shop", "operation": "cancel", "arguments": {"order_id": "#W1"}, "expect": {"result": {"was": "pending"}}},
                {"tool": "shop", "operation": "cancel", "arguments": {"order_id": "#W3"}, "expect": {"result": {"was": "pending"}}},
                {"tool": "shop", "operation": "note", "arguments": {"text": "done"}, "expect": {"result": {"ok": true}}}
             ]},
             "expect": {"final_state": {"subset": {"orders": {"#W1": {"status": "cancelled"}, "#W2": {"status": "pending"}}}}}},
            {"name": "reads", "attempts": 2, "driver": {"type": "scripted", "steps": []}}
        ]
    })
}

fn final_line(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("evidence");
    let last = text.lines().last().expect("a line");
    serde_json::from_str(last).expect("json")
}

#[test]
fn evidence_over_fixtures_records_changes_and_gives_the_whole_state_on_demand() {
    let dir = scratch();
    let doc = document(json!([{"value": orders(200)}]));
    std::fs::write(dir.join("sim.json"), doc.to_string()).expect("written");
    let out = toolmock(&dir, &["run", "sim.json", "--json", "--evidence", "ev"]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let results: Value = serde_json::from_slice(&out.stdout).expect("results");
    let hash = results["fixtures_hash"].as_str().expect("a fixtures hash");

    // The base once, with the run's fixtures hash.
    let base: Value =
        serde_json::from_slice(&std::fs::read(dir.join("ev/base.json")).expect("base")).unwrap();
    assert_eq!(base["fixtures_hash"], hash);
    assert_eq!(base["state"]["orders"], orders(200)["orders"]);
    assert_eq!(base["state"]["notes"], json!([]));

    // Each attempt: only what it changed, in the stored form.
    let line = final_line(&dir.join("ev/01-cancels_two/attempt-1.jsonl"));
    assert_eq!(
        line,
        json!({"kind": "final_state", "fixtures_hash": hash, "overlay": {
            "notes": {"=": ["done"]},
            "orders": {"+": {"#W1": {"+": {"status": {"=": "cancelled"}}},
                             "#W3": {"+": {"status": {"=": "cancelled"}}}}}
        }})
    );
    let untouched = final_line(&dir.join("ev/02-reads/attempt-2.jsonl"));
    assert_eq!(untouched["overlay"], json!({}));
    let attempt = std::fs::metadata(dir.join("ev/01-cancels_two/attempt-1.jsonl"))
        .unwrap()
        .len();
    let whole = std::fs::metadata(dir.join("ev/base.json")).unwrap().len();
    assert!(
        attempt * 4 < whole,
        "an attempt's evidence ({attempt} bytes) holds the base ({whole} bytes)"
    );

    // The whole state on demand, by name, folder or position.
    let mut want = base["state"].clone();
    want["orders"]["#W1"]["status"] = json!("cancelled");
    want["orders"]["#W3"]["status"] = json!("cancelled");
    want["notes"] = json!(["done"]);
    for case in ["cancels two", "01-cancels_two", "1"] {
        let out = toolmock(&dir, &["evidence", "state", "ev", case, "1"]);
        assert_eq!(out.status.code(), Some(0), "{case}: {}", said(&out));
        let state: Value = serde_json::from_slice(&out.stdout).expect("a state");
        assert_eq!(state, want, "{case}");
    }
    let out = toolmock(&dir, &["evidence", "state", "ev", "reads", "2"]);
    let state: Value = serde_json::from_slice(&out.stdout).expect("a state");
    assert_eq!(state, base["state"]);
}

#[test]
fn evidence_state_refuses_what_it_cannot_find_or_read_with_codes() {
    let dir = scratch();
    let doc = document(json!([{"value": orders(5)}]));
    std::fs::write(dir.join("sim.json"), doc.to_string()).expect("written");
    let out = toolmock(&dir, &["run", "sim.json", "--evidence", "ev"]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));

    let missing = toolmock(&dir, &["evidence", "state", "ev", "nope", "1"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        said(&missing).contains("evidence_not_found"),
        "{}",
        said(&missing)
    );
    let no_attempt = toolmock(&dir, &["evidence", "state", "ev", "reads", "3"]);
    assert_eq!(no_attempt.status.code(), Some(1));
    assert!(said(&no_attempt).contains("evidence_not_found"));

    // A base of other fixtures is never merged with the attempt's changes.
    let path = dir.join("ev/base.json");
    let mut base: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    base["fixtures_hash"] = json!("0".repeat(64));
    std::fs::write(&path, base.to_string()).unwrap();
    let other = toolmock(&dir, &["evidence", "state", "ev", "cancels two", "1"]);
    assert_eq!(other.status.code(), Some(1));
    assert!(
        said(&other).contains("/fixtures_hash: evidence_invalid"),
        "{}",
        said(&other)
    );

    // An overlay of another form is named at its pointer.
    let attempt = dir.join("ev/01-cancels_two/attempt-1.jsonl");
    let text = std::fs::read_to_string(&attempt).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let last = lines.len() - 1;
    lines[last] =
        json!({"kind": "final_state", "fixtures_hash": "x", "overlay": {"orders": 1}}).to_string();
    std::fs::write(&attempt, lines.join("\n")).unwrap();
    let bad = toolmock(&dir, &["evidence", "state", "ev", "cancels two", "1"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        said(&bad).contains("/overlay: evidence_invalid"),
        "{}",
        said(&bad)
    );
}

/// Without fixtures the final state is small and written whole, as before.
#[test]
fn evidence_without_fixtures_keeps_the_whole_final_state() {
    let dir = scratch();
    let mut doc = document(json!([]));
    doc["tools"][0]["definitions"]["cancel"]["initial_state"] =
        json!({"notes": [], "orders": orders(4)["orders"]});
    std::fs::write(dir.join("sim.json"), doc.to_string()).expect("written");
    let out = toolmock(&dir, &["run", "sim.json", "--evidence", "ev"]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    assert!(!dir.join("ev/base.json").exists());
    let line = final_line(&dir.join("ev/02-reads/attempt-1.jsonl"));
    assert_eq!(line["state"]["orders"], orders(4)["orders"]);
    let out = toolmock(&dir, &["evidence", "state", "ev", "reads", "1"]);
    let state: Value = serde_json::from_slice(&out.stdout).expect("a state");
    assert_eq!(state, line["state"]);
}
