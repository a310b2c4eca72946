//! The HealthPlus parity vectors (`fixtures/conformance/healthplus/`): every
//! call of every HealthPlus attempt as an `eval` vector — the pinned
//! definition and contract, the attempt's state before the call, the call
//! (with its variant), and what it answered — so that another runtime can
//! prove it gives the same results. `conformance.rs` runs them through
//! `toolmock eval`, a path independent of the dispatcher that recorded them.
//!
//! This test re-derives the vectors from a fresh `toolmock run --evidence`
//! and fails when the committed files differ; `UPDATE_HEALTHPLUS_VECTORS=1`
//! rewrites them (review the diff: the simulation's own step expectations
//! pin the results independently).

use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every (tool, operation) → (contract, definition) of the HealthPlus document.
fn pinned(base: &Path, doc: &Value) -> BTreeMap<(String, String), (Value, Value)> {
    let mut out = BTreeMap::new();
    for tool in doc["tools"].as_array().expect("tools") {
        let name = tool["name"].as_str().expect("name").to_owned();
        let contracts: Vec<Value> = match tool["from"].as_str() {
            Some("manifest") => {
                let run = Command::new(env!("CARGO_BIN_EXE_toolmock"))
                    .arg("normalize")
                    .arg(base.join(tool["manifest"].as_str().expect("manifest path")))
                    .output()
                    .expect("normalize runs");
                assert!(run.status.success());
                let entries: Value = serde_json::from_slice(&run.stdout).expect("json");
                entries
                    .as_array()
                    .expect("array")
                    .iter()
                    .map(|e| e["contract"].clone())
                    .collect()
            }
            Some("contracts") => read_json(&base.join(tool["contracts"].as_str().expect("path")))
                .as_array()
                .expect("array")
                .iter()
                .map(|e| e["contract"].clone())
                .collect(),
            Some("custom") => tool["operations"]
                .as_array()
                .expect("operations")
                .iter()
                .map(|o| {
                    json!({"operation": {"source": "custom", "name": o["name"]},
                           "description": o.get("description").cloned().unwrap_or(json!("")),
                           "input_schema": o["input_schema"], "output_schema": o["output_schema"]})
                })
                .collect(),
            other => panic!("unexpected tool source {other:?}"),
        };
        for contract in contracts {
            let op = contract["operation"]["name"]
                .as_str()
                .expect("name")
                .to_owned();
            let definition = match &tool["definitions"][&op] {
                Value::String(path) => read_json(&base.join(path)),
                Value::Null => continue,
                inline => inline.clone(),
            };
            out.insert((name.clone(), op), (contract, definition));
        }
    }
    out
}

fn vectors() -> BTreeMap<String, Value> {
    let base = root().join("fixtures/healthplus");
    let doc = read_json(&base.join("simulation.json"));
    let pins = pinned(&base, &doc);
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("hp-vectors-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let run = Command::new(env!("CARGO_BIN_EXE_toolmock"))
        .arg("run")
        .arg(base.join("simulation.json"))
        .arg("--evidence")
        .arg(&dir)
        .arg("--jobs")
        .arg("1")
        .output()
        .expect("run");
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let mut out = BTreeMap::new();
    for (c, case) in doc["cases"].as_array().expect("cases").iter().enumerate() {
        let name = case["name"].as_str().expect("name");
        let choices: Vec<&Value> = case["variants"]
            .as_array()
            .map(|v| v.iter().collect())
            .unwrap_or_default();
        let file = dir
            .join(format!("{:02}-{name}", c + 1))
            .join("attempt-1.jsonl");
        let lines: Vec<Value> = std::fs::read_to_string(&file)
            .expect("evidence")
            .lines()
            .map(|l| serde_json::from_str(l).expect("line"))
            .collect();
        let final_state = lines.last().expect("final state")["state"].clone();
        let mut state = lines
            .iter()
            .find(|l| l["kind"] == "evidence")
            .map_or(final_state, |l| l["state_before"].clone());
        let mut n = 0;
        for line in &lines {
            let kind = line["kind"].as_str().expect("kind");
            if kind == "final_state" {
                continue;
            }
            let (Some(tool), Some(op)) = (line["tool"].as_str(), line["operation"].as_str()) else {
                continue;
            };
            let (contract, definition) =
                pins.get(&(tool.to_owned(), op.to_owned())).expect("pinned");
            let chosen = choices
                .iter()
                .find(|v| v["tool"] == tool && v["operation"] == op)
                .map(|v| v["variant"].clone());
            let (call, expect) = match kind {
                "evidence" => {
                    let call = json!({"input": line["arguments"], "variant": line["variant"]});
                    let ok = json!({"ok": {"variant": line["variant"], "rule": line["rule"], "result": line["result"],
                        "state": line["state_after"], "delay_ms": line["delay_ms"]}});
                    (call, ok)
                }
                _ => {
                    let mut call = Map::new();
                    call.insert("input".into(), line["arguments"].clone());
                    if let Some(v) = &chosen {
                        call.insert("variant".into(), v.clone());
                    }
                    (
                        Value::Object(call),
                        json!({"error": {"class": kind, "code": line["code"]}}),
                    )
                }
            };
            n += 1;
            let vector_name = format!("healthplus_{name}_{n:02}");
            out.insert(
                vector_name,
                json!({
                    "kind": "eval",
                    "description": format!("HealthPlus case {name}, call {n}: {tool}/{op}"),
                    "contract": contract,
                    "definition": definition,
                    "state": state,
                    "calls": [call],
                    "expect": [expect],
                }),
            );
            if kind == "evidence" {
                state = line["state_after"].clone();
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    out
}

#[test]
fn healthplus_vectors_match_a_fresh_run() {
    let folder = root().join("fixtures/conformance/healthplus");
    let fresh = vectors();
    assert!(fresh.len() >= 40, "only {} HealthPlus calls", fresh.len());
    if std::env::var_os("UPDATE_HEALTHPLUS_VECTORS").is_some() {
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).expect("folder");
        for (name, vector) in &fresh {
            let mut text = serde_json::to_string_pretty(vector).expect("json");
            text.push('\n');
            std::fs::write(folder.join(format!("{name}.json")), text).expect("write");
        }
    }
    let mut committed = BTreeMap::new();
    for entry in std::fs::read_dir(&folder).expect("fixtures/conformance/healthplus") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "json") {
            let name = path
                .file_stem()
                .expect("stem")
                .to_string_lossy()
                .into_owned();
            committed.insert(name, read_json(&path));
        }
    }
    let names = |m: &BTreeMap<String, Value>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        names(&committed),
        names(&fresh),
        "rerun with UPDATE_HEALTHPLUS_VECTORS=1"
    );
    for (name, vector) in &fresh {
        assert_eq!(
            &committed[name], vector,
            "{name} differs; rerun with UPDATE_HEALTHPLUS_VECTORS=1"
        );
    }
}
