//! Version 2's domain errors through `toolmock run`, end to end with the
//! real binary: a step expecting one, trajectory matchers by status and
//! code, the results document's calls, and a step that expects a result
//! but gets a domain error (docs/mock-language.md, "Domain errors";
//! docs/simulations.md).

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("domain-errors-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// `toolmock run FILE --json`: the exit code and the results document.
fn run(dir: &Path, document: &Value) -> (i32, Value) {
    let file = dir.join("sim.json");
    std::fs::write(&file, serde_json::to_vec_pretty(document).expect("json")).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_toolmock"))
        .current_dir(dir)
        .args(["run", "sim.json", "--json"])
        .output()
        .expect("toolmock runs");
    let results = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().expect("exit code"), results)
}

/// An order lookup whose rule answers `order_not_found` for an unknown id.
fn document(cases: Value) -> Value {
    json!({
        "simulation_version": 1,
        "name": "orders",
        "tools": [{
            "name": "retail",
            "from": "custom",
            "operations": [{
                "name": "get_order",
                "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}},
                                 "required": ["order_id"]},
                "output_schema": {"type": "object", "required": ["status"]}
            }],
            "definitions": {"get_order": {
                "schema_version": 2,
                "default_variant": "default",
                "initial_state": {"orders": {"#W1": {"status": "pending"}}},
                "variants": {"default": {
                    "result": {"$state": ["orders", {"$input": "order_id"}]},
                    "rules": [{
                        "when": [{"source": "state", "path": ["orders", {"$input": "order_id"}],
                                  "op": "exists", "value": false}],
                        "error": {"code": "order_not_found", "message": "Order not found",
                                  "data": {"order_id": {"$input": "order_id"}}}
                    }]
                }},
                "examples": [
                    {"variant": "default", "input": {"order_id": "#W1"}, "expected": {"status": "pending"}},
                    {"variant": "default", "input": {"order_id": "#W9"},
                     "expected_error": {"code": "order_not_found", "message": "Order not found",
                                        "data": {"order_id": "#W9"}}}
                ]
            }}
        }],
        "agent": {"name": "clerk", "tools": ["retail"]},
        "cases": cases
    })
}

fn step(order_id: &str, expect: Option<Value>) -> Value {
    let mut step = json!({"tool": "retail", "operation": "get_order",
                          "arguments": {"order_id": order_id}});
    if let Some(expect) = expect {
        step["expect"] = expect;
    }
    step
}

#[test]
fn a_domain_error_is_an_answer_the_suite_can_expect_and_match() {
    let dir = scratch("passes");
    let cases = json!([{
        "name": "unknown then known",
        "driver": {"type": "scripted", "steps": [
            step("#W9", Some(json!({"domain_error": "order_not_found"}))),
            step("#W1", Some(json!({"result": {"status": "pending"}})))
        ]},
        "expect": {
            "final_state": {"exact": {"orders": {"#W1": {"status": "pending"}}}},
            "trajectory": [
                {"kind": "count", "call": {"tool": "retail", "status": "domain_error"}, "exactly": 1},
                {"kind": "used", "call": {"tool": "retail", "code": "order_not_found",
                                          "arguments": {"order_id": "#W9"}}},
                {"kind": "not_used", "call": {"tool": "retail", "code": "order_cancelled"}},
                {"kind": "sequence", "mode": "strict", "calls": [
                    {"tool": "retail", "status": "domain_error", "code": "order_not_found"},
                    {"tool": "retail", "status": "ok"}
                ]}
            ]
        }
    }]);
    let (code, results) = run(&dir, &document(cases));
    let case = &results["cases"][0];
    assert_eq!(code, 0, "{results:#}");
    let attempt = &case["attempts"][0];
    assert_eq!(attempt["outcome"], "passed", "{attempt:#}");
    assert_eq!(attempt["harness_errors"], json!([]));
    assert_eq!(attempt["tool_input_errors"], json!([]));
    let calls = attempt["calls"].as_array().expect("calls");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["status"], "domain_error");
    assert_eq!(calls[0]["code"], "order_not_found");
    assert_eq!(
        calls[0]["error"],
        json!({"code": "order_not_found", "message": "Order not found", "data": {"order_id": "#W9"}})
    );
    assert!(calls[0].get("result").is_none(), "{:#}", calls[0]);
    assert_eq!(
        (&calls[0]["variant"], &calls[0]["rule"]),
        (&json!("default"), &json!(0))
    );
    assert_eq!(calls[1]["status"], "ok");
    assert_eq!(calls[1]["result"], json!({"status": "pending"}));
}

#[test]
fn a_step_that_wanted_a_result_fails_on_a_domain_error_and_matchers_tell_it_apart() {
    let dir = scratch("fails");
    let cases = json!([
        {"name": "no expect", "driver": {"type": "scripted", "steps": [step("#W9", None)]}},
        {"name": "wrong code", "driver": {"type": "scripted", "steps": [
            step("#W9", Some(json!({"domain_error": "order_cancelled"})))]}},
        {"name": "not a tool input error", "driver": {"type": "scripted", "steps": [
            step("#W9", Some(json!({"tool_input_error": "order_not_found"})))]}},
        {"name": "matcher by code", "driver": {"type": "scripted", "steps": [
            step("#W9", Some(json!({"domain_error": "order_not_found"})))]},
         "expect": {"trajectory": [
             {"kind": "used", "call": {"tool": "retail", "status": "tool_input_error"}},
             {"kind": "used", "call": {"tool": "retail", "status": "ok", "code": "order_not_found"}}
         ]}}
    ]);
    let (code, results) = run(&dir, &document(cases));
    assert_eq!(code, 1, "{results:#}");
    let unmet = |name: &str| -> Vec<(String, String)> {
        let case = results["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no case {name}"));
        let attempt = &case["attempts"][0];
        // A domain error never fails an attempt as a harness error would.
        assert_eq!(attempt["outcome"], "failed", "{attempt:#}");
        assert_eq!(attempt["harness_errors"], json!([]));
        attempt["unmet"]
            .as_array()
            .expect("unmet")
            .iter()
            .map(|u| {
                (
                    u["code"].as_str().unwrap_or_default().to_owned(),
                    u["message"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    };
    let no_expect = unmet("no expect");
    assert_eq!(no_expect[0].0, "step_failed");
    assert!(
        no_expect[0]
            .1
            .contains("domain_error order_not_found (Order not found)"),
        "{no_expect:?}"
    );
    assert_eq!(unmet("wrong code")[0].0, "expected_domain_error");
    assert_eq!(
        unmet("not a tool input error")[0].0,
        "expected_tool_input_error"
    );
    let codes: Vec<String> = unmet("matcher by code")
        .into_iter()
        .map(|(c, _)| c)
        .collect();
    assert_eq!(codes.len(), 2, "{codes:?}");
}
