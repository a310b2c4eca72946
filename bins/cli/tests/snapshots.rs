//! Snapshots of `toolmock check`'s human-readable diagnostics: one
//! `FILE: /json/pointer: code: message` line per problem, then a count; and
//! of its warnings (`FILE: /json/pointer: warning: code: message`).
//!
//! Review changes with `INSTA_UPDATE=always cargo test -p toolmock-cli --test
//! snapshots` and read the `.snap` diffs before keeping them.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Writes `definition` (and the contract) to a scratch folder, runs `check`
/// and returns exit status, stdout and stderr with the folder replaced by
/// `DIR`, so the snapshot does not depend on where the test ran.
fn check(name: &str, definition: &str, contract: &Value) -> String {
    check_with(name, definition, contract, &[])
}

/// [`check`] with more arguments (`--json`, `--deny-warnings`).
fn check_with(name: &str, definition: &str, contract: &Value, args: &[&str]) -> String {
    let dir: PathBuf = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("snapshots-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let d = dir.join(format!("{name}.mock.json"));
    let c = dir.join("contract.json");
    std::fs::write(&d, definition).expect("write definition");
    std::fs::write(&c, serde_json::to_vec(contract).expect("contract")).expect("write contract");
    let out = Command::new(env!("CARGO_BIN_EXE_toolmock"))
        .arg("check")
        .arg(&d)
        .arg("--contract")
        .arg(&c)
        .args(args)
        .output()
        .expect("run toolmock");
    let _ = std::fs::remove_dir_all(&dir);
    let stable =
        |bytes: &[u8]| String::from_utf8_lossy(bytes).replace(&*dir.to_string_lossy(), "DIR");
    let stderr = stable(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        out.status.code().map_or("signal".into(), |c| c.to_string()),
        stable(&out.stdout),
        stderr
    )
}

fn greet_contract() -> Value {
    json!({
        "operation": {"source": "mcp", "name": "greet"},
        "description": "greet a person",
        "input_schema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        "output_schema": {
            "type": "object",
            "properties": {"name": {"type": ["string", "null"]}, "greeting": {"type": "string"}},
            "required": ["name", "greeting"]
        }
    })
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).expect("serialize")
}

#[test]
fn unknown_fields_and_typos() {
    let doc = json!({
        "schema_version": 1,
        "default_varaint": "found",
        "variants": {"found": {
            "result": {"name": {"$input": "name"}, "greeting": "hello"},
            "delay": 100,
            "rules": [{"when": [{"source": "input", "path": "name", "op": "eq", "value": "x", "negate": true}]}]
        }},
        "examples": [{"variant": "found", "input": {"name": "Ada"}, "expect": {"name": "Ada", "greeting": "hello"}}]
    });
    insta::assert_snapshot!(check("typos", &pretty(&doc), &greet_contract()));
}

#[test]
fn operators_paths_and_conditions() {
    let doc = json!({
        "schema_version": 1,
        "default_variant": "found",
        "variants": {"found": {
            "result": {
                "name": {"$input": "name."},
                "greeting": {"$eval": "'hello ' + input.name"},
                "both": {"$input": "name", "$state": "x"}
            },
            "set_state": {"n": {"$number": {"$number": "5"}}},
            "rules": [{"when": [
                {"source": "output", "path": "name", "op": "eq", "value": "x"},
                {"source": "input", "path": "a..b", "op": "gt", "value": 1},
                {"source": "input", "path": "name", "op": "in", "value": "x"},
                {"source": "state", "path": "seen", "op": "exists", "value": "yes"}
            ]}]
        }},
        "examples": [{"variant": "found", "input": {"name": "Ada"}, "expected": {"name": "Ada", "greeting": "hello"}}]
    });
    insta::assert_snapshot!(check("operators", &pretty(&doc), &greet_contract()));
}

#[test]
fn invalid_literals() {
    let doc = json!({
        "schema_version": 1,
        "default_variant": "found",
        "variants": {"found": {
            "result": {
                "name": {"$number": "1e3"},
                "greeting": {"$dateAdd": {"value": "2026-02-30", "days": 7.5, "hours": 25}},
                "when": {"$dateAdd": {"value": "9999-12-31", "days": 1}},
                "plus": {"$number": "+5"}
            }
        }},
        "examples": [{"variant": "found", "input": {"name": "Ada"}, "expected": {}}]
    });
    insta::assert_snapshot!(check("literals", &pretty(&doc), &greet_contract()));
}

#[test]
fn iteration_and_calc() {
    let deep = json!({"$map": {"in": [1], "as": "a", "give": {"$map": {"in": [1], "as": "b", "give": {
        "$map": {"in": [1], "as": "c", "give": {"$map": {"in": [1], "as": "d", "give": 1}}}}}}}});
    let doc = json!({
        "schema_version": 3,
        "default_variant": "found",
        "variants": {"found": {
            "result": {
                "name": {"$map": {"in": {"$input": "xs"}, "as": "x", "give": {"$let": ["y", "id"]}}},
                "greeting": {"$calc": {"text": "(1 + 2", "places": 2}},
                "deep": deep,
                "pairs": {"$zip": [[1]]},
                "kept": {"$filter": {"in": 5, "as": "$x", "when": [{"source": "let", "path": "z", "op": "gt", "value": 1}]}}
            },
            "set_state": [{"update": "items", "value": 1}, {"update": "items.0"}]
        }},
        "examples": [{"variant": "found", "input": {"name": "Ada"}, "expected": {}}]
    });
    insta::assert_snapshot!(check("iteration", &pretty(&doc), &greet_contract()));
}

#[test]
fn limits_and_variants() {
    let rules: Vec<Value> = (0..101).map(|_| json!({"when": []})).collect();
    let doc = json!({
        "schema_version": 4,
        "default_variant": "missing",
        "variants": {
            "found": {"result": {"name": "a", "greeting": "b"}, "delay_ms": 30001, "rules": rules},
            "lonely": {"result": {"name": null, "greeting": "none"}},
            "": {"result": {"name": null, "greeting": "none"}}
        },
        "examples": [
            {"variant": "found", "input": {"name": "Ada"}, "expected": {"name": "a", "greeting": "b"}},
            {"variant": "ghost", "input": {"name": "Ada"}, "expected": {}}
        ]
    });
    insta::assert_snapshot!(check("limits", &pretty(&doc), &greet_contract()));
}

#[test]
fn failing_examples() {
    let doc = json!({
        "schema_version": 1,
        "default_variant": "found",
        "initial_state": {"greeting": "hello"},
        "variants": {
            "found": {
                "result": {"name": {"$input": "name"}, "greeting": {"$state": "greeting"}},
                "set_state": {"last": {"$input": "name"}}
            },
            "broken": {"result": {"name": 5, "greeting": {"$state": "nothing"}}},
            "bad_output": {"result": {"name": 5, "greeting": "x"}}
        },
        "examples": [
            {"variant": "found", "input": {"name": "Ada"}, "expected": {"name": "Ada", "greeting": "hi"}},
            {"variant": "found", "input": {"name": "Ada"}, "expected": {"name": "Ada", "greeting": "hello"},
             "expected_state": {"last": "Ada"}},
            {"variant": "found", "input": {"name": 7}, "expected": {"name": 7, "greeting": "hello"}},
            {"variant": "broken", "input": {"name": "Ada"}, "expected": {}},
            {"variant": "bad_output", "input": {"name": "Ada"}, "expected": {"name": 5, "greeting": "x"}}
        ]
    });
    insta::assert_snapshot!(check("examples", &pretty(&doc), &greet_contract()));
}

#[test]
fn wrong_types_and_invalid_json() {
    let doc = json!({
        "schema_version": "1",
        "default_variant": 1,
        "initial_state": [],
        "variants": {"found": {"result": 1, "set_state": [], "delay_ms": "5", "rules": {}}},
        "examples": [{"variant": "found", "input": "Ada", "expected": 1, "state": 5}]
    });
    let mut out = check("types", &pretty(&doc), &greet_contract());
    out.push_str("=== not JSON\n");
    out.push_str(&check(
        "truncated",
        "{\"schema_version\": 1, \"variants\": {",
        &greet_contract(),
    ));
    insta::assert_snapshot!(out);
}

/// `check --json` paths are JSON pointers into the definition, escaped as
/// RFC 6901 says (`~` → `~0`, `/` → `~1`), array indexes as decimal.
#[test]
fn json_report_paths_are_escaped_pointers() {
    let doc = json!({
        "schema_version": 1,
        "default_variant": "found",
        "variants": {
            "found": {"result": {"name": "a", "greeting": "b"}},
            "a/b~c": {
                "result": {"x/y": {"$input": "..."}},
                "rules": [{"when": [{"source": "input", "path": "ok", "op": "eq", "value": 1},
                                    {"source": "input", "path": "a.", "op": "exists", "value": true}]}]
            }
        },
        "examples": [{"variant": "found", "input": {"name": "Ada"}, "expected": {"name": "a", "greeting": "b"}, "~": 1}]
    });
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("snapshots-{}-json", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let d = dir.join("d.json");
    let c = dir.join("c.json");
    std::fs::write(&d, pretty(&doc)).expect("write");
    std::fs::write(&c, pretty(&greet_contract())).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_toolmock"))
        .arg("check")
        .arg(&d)
        .arg("--contract")
        .arg(&c)
        .arg("--json")
        .output()
        .expect("run toolmock");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).expect("the report is JSON");
    let lines: Vec<String> = report["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .map(|d| {
            format!(
                "{} {}",
                d["path"].as_str().unwrap_or("?"),
                d["code"].as_str().unwrap_or("?")
            )
        })
        .collect();
    assert_eq!(report["ok"], json!(false));
    insta::assert_snapshot!(lines.join("\n"));
}

/// Issue 11.3: a definition that passes but reads an input the contract
/// leaves optional (directly, inside `$number` and `$dateAdd`, under an
/// `anyOf` only one branch of which requires it), and a rule that an earlier
/// one always answers first. Guarded reads give no warning: a rule testing
/// `exists: true` or `eq`, and the variant's result after a rule whose only
/// condition is `exists: false` on the path.
fn warned_definition() -> (Value, Value) {
    let contract = json!({
        "operation": {"source": "mcp", "name": "book"},
        "input_schema": {
            "type": "object",
            "required": ["id", "when"],
            "properties": {
                "id": {"type": "string"}, "days": {"type": "integer"}, "note": {"type": "string"},
                "when": {"type": "object", "anyOf": [{"required": ["date"]}, {"required": ["date", "tz"]}]}
            }
        },
        "output_schema": {}
    });
    let doc = json!({
        "schema_version": 1,
        "default_variant": "ok",
        "variants": {"ok": {
            "result": {
                "id": {"$input": "id"},
                "note": {"$input": "note"},
                "at": {"$dateAdd": {"value": {"$input": "when.date"}, "days": {"$input": "days"}}},
                "tz": {"$input": "when.tz"},
                "n": {"$number": {"$input": "amount"}}
            },
            "rules": [
                {"when": [{"source": "input", "path": "amount", "op": "exists", "value": false}],
                 "result": {"days": {"$input": "days"}}},
                {"when": [{"source": "input", "path": "days", "op": "exists", "value": true}],
                 "result": {"days": {"$input": "days"}, "note": {"$input": "note"}}},
                {"when": [{"source": "input", "path": "days", "op": "exists", "value": true},
                          {"source": "input", "path": "id", "op": "eq", "value": "A"}],
                 "result": "never"}
            ]
        }},
        "examples": [{"variant": "ok", "input": {"id": "A", "when": {"date": "2026-01-01"}, "days": 2}, "expected": {"days": 2}}]
    });
    (doc, contract)
}

#[test]
fn warnings_do_not_fail_the_check() {
    let (doc, contract) = warned_definition();
    insta::assert_snapshot!(check("warned", &pretty(&doc), &contract));
}

#[test]
fn deny_warnings_fails_the_check() {
    let (doc, contract) = warned_definition();
    insta::assert_snapshot!(check_with(
        "denied",
        &pretty(&doc),
        &contract,
        &["--deny-warnings"]
    ));
}

#[test]
fn warnings_in_the_json_report_have_a_severity() {
    let (doc, contract) = warned_definition();
    insta::assert_snapshot!(check_with(
        "warned_json",
        &pretty(&doc),
        &contract,
        &["--json", "--deny-warnings"]
    ));
}
