//! A version-2 domain error served over MCP to the official Python SDK
//! client (docs/mcp.md): a tool result with `isError: true` whose text is
//! `{"error": {"class": "domain_error", "code", "message", "data"}}` — not
//! a JSON-RPC error — recorded as evidence with the status `domain_error`,
//! and an attempt that still passes.

mod serve_common;

use serde_json::{Value, json};
use serve_common::{Served, python, root, scratch, text};
use std::process::Command;

#[test]
fn python_sdk_receives_a_domain_error_as_an_is_error_result() {
    let dir = scratch();
    let results = dir.join("results.json");
    let served = Served::start(
        &root().join("fixtures/mcp/serve/orders.json"),
        &[
            "--case",
            "looks_up",
            "--json",
            results.to_str().expect("utf-8"),
        ],
    );
    let out = Command::new(python())
        .arg(root().join("fixtures/mcp/clients/domain_error_client.py"))
        .args(["--url", &served.url(1)])
        .output()
        .expect("the client runs");
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("the client's JSON");
    assert_eq!(report["missing"]["isError"], true, "{report:#}");
    assert!(
        report["missing"].get("structuredContent").is_none(),
        "{report:#}"
    );
    assert_eq!(
        report["missing_error"],
        json!({"error": {"class": "domain_error", "code": "order_not_found",
                         "message": "Order not found", "data": {"order_id": "#W9"}}})
    );
    assert_eq!(report["found"]["isError"], false, "{report:#}");
    assert_eq!(
        report["found"]["structuredContent"],
        json!({"status": "pending"})
    );
    assert_eq!(report["validated"], true);
    let (code, table) = served.stop();
    assert_eq!(code, 0, "{table}");
    let results: Value =
        serde_json::from_slice(&std::fs::read(&results).expect("results")).expect("JSON");
    let attempt = &results["cases"][0]["attempts"][0];
    assert_eq!(attempt["outcome"], "passed", "{attempt:#}");
    let calls = attempt["calls"].as_array().expect("calls");
    assert_eq!(calls[0]["status"], "domain_error");
    assert_eq!(calls[0]["code"], "order_not_found");
    assert_eq!(calls[1]["status"], "ok");
}
