//! `toolmock run` of a `mode: real_tools` simulation, through the real
//! binary: MCP tools executed by `tools/call` on the project's fixture
//! server (the Python SDK over streamable HTTP), a custom operation by a
//! `POST` to a local HTTP server, an `http_request` effect node; a server
//! whose `structuredContent` breaks its own output schema ends the attempt
//! `harness_error`; operations without a real handler refuse the run.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed expectation must panic

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use toolmock_real_tools_fixture::{HttpFixture, McpFixture, clinic_contracts, document, root};

fn toolmock() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_toolmock"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("real-tools-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The fixture servers (alive while they are held) and the real-tools
/// document over them.
fn started() -> (McpFixture, HttpFixture, Value) {
    let mcp = McpFixture::start();
    let http = HttpFixture::start();
    let contracts = clinic_contracts(toolmock(), &mcp.url);
    let doc = document(contracts, &mcp.url, &http.url);
    (mcp, http, doc)
}

/// `doc` written as `simulation.json` in a scratch folder of its own.
fn written(name: &str, doc: &Value) -> PathBuf {
    let file = scratch(name).join("simulation.json");
    std::fs::write(&file, serde_json::to_vec(doc).unwrap()).unwrap();
    file
}

/// `toolmock run --json FILE`, which must exit 0: its results document.
fn passed(file: &Path) -> Value {
    let out = run(file);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn run(file: &Path) -> Output {
    Command::new(toolmock())
        .args(["run", "--json"])
        .arg(file)
        .output()
        .unwrap()
}

#[test]
fn a_real_tools_run_executes_mcp_tools_http_operations_and_effects_for_real() {
    let mcp = McpFixture::start();
    let http = HttpFixture::start();
    let contracts = clinic_contracts(toolmock(), &mcp.url);
    let dir = scratch("run");
    let file = dir.join("simulation.json");
    std::fs::write(
        &file,
        serde_json::to_vec(&document(contracts, &mcp.url, &http.url)).unwrap(),
    )
    .unwrap();
    let out = run(&file);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let results: Value = serde_json::from_slice(&out.stdout).unwrap();
    let case = |name: &str| {
        results["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()
            .clone()
    };

    // The real answers, each marked as a real handler's.
    let real = case("real");
    let attempt = &real["attempts"][0];
    assert_eq!(attempt["outcome"], "passed", "{attempt:#}");
    let calls = attempt["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 3, "{calls:#?}");
    assert_eq!(calls[0]["operation"], "lookup_patient");
    assert_eq!(calls[0]["executor"], "real");
    assert_eq!(
        calls[0]["result"]["first_name"], "Ada",
        "the server's, not the mock's"
    );
    assert_eq!(calls[1]["operation"], "add");
    assert_eq!(calls[1]["executor"], "real");
    assert_eq!(
        calls[1]["result"],
        json!({"saved": "hello", "previous": "real"})
    );
    assert_eq!(http.bodies("/notes"), [json!({"text": "hello"})]);
    // The effect node posted its rendered body, and its evidence is a real
    // call of the workflow (`notify`) at the node (`send`), with the
    // rendered configuration as its arguments and the answer as its result.
    assert_eq!(http.bodies("/hook"), [json!({"note": "sent"})]);
    assert_eq!(calls[2]["tool"], "notify");
    assert_eq!(calls[2]["operation"], "send");
    assert_eq!(calls[2]["executor"], "real");
    assert_eq!(calls[2]["arguments"]["body"], json!({"note": "sent"}));
    assert!(
        calls[2]["arguments"]["url"]
            .as_str()
            .unwrap()
            .ends_with("/hook")
    );
    assert_eq!(calls[2]["result"]["status"], 200);

    // structuredContent that breaks the tool's own output schema.
    let broken = case("broken");
    let attempt = &broken["attempts"][0];
    assert_eq!(attempt["outcome"], "harness_error", "{attempt:#}");
    let codes: Vec<&str> = attempt["harness_errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["output_schema_violation"], "{attempt:#}");
}

#[test]
fn a_sandbox_run_of_the_same_document_executes_nothing_real() {
    let (_mcp, http, mut doc) = started();
    doc["mode"] = json!("sandbox");
    // A sandbox start refuses effect nodes: leave the workflow out.
    doc["agent"]["tools"] = json!(["clinic", "notes"]);
    doc["agent"]["workflows"] = json!([]);
    doc["cases"][0]["driver"]["steps"]
        .as_array_mut()
        .unwrap()
        .pop();
    doc["cases"][1]["expect"] = json!({});
    let file = written("sandbox", &doc);
    let results = passed(&file);
    let calls = &results["cases"][0]["attempts"][0]["calls"];
    assert_eq!(calls[0]["result"]["first_name"], "Mock");
    assert!(calls[0].get("executor").is_none(), "the mock answered");
    assert!(http.received.lock().unwrap().is_empty());
}

#[test]
fn a_real_tools_run_refuses_operations_without_a_real_handler() {
    // HealthPlus as a real-tools run: its platform operations, its MCP
    // tools without a server and its custom operations without an endpoint
    // are each named; nothing runs.
    let source = root().join("fixtures/healthplus");
    let dir = scratch("refused");
    for part in ["tools", "capabilities"] {
        std::os::unix::fs::symlink(source.join(part), dir.join(part)).unwrap();
    }
    let mut doc: Value =
        serde_json::from_slice(&std::fs::read(source.join("simulation.json")).unwrap()).unwrap();
    doc["mode"] = json!("real_tools");
    let file = dir.join("simulation.json");
    std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
    let out = run(&file);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let refused: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains(": no_real_handler: "))
        .collect();
    for op in [
        "salesforce__query",
        "salesforce__get_record",
        "salesforce__create_record",
        "salesforce__publish_platform_event",
    ] {
        assert!(
            refused.iter().any(|l| l.contains(&format!(
                "/tools/0: no_real_handler: salesforce/{op} is a platform operation"
            ))),
            "{op}: {stderr}"
        );
    }
    // Exactly one line per operation (every one lacks a handler here).
    let operations: usize = doc["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["definitions"].as_object().map_or(0, |d| d.len()))
        .sum();
    assert_eq!(refused.len(), operations, "{stderr}");
    assert!(stderr.contains("simulation.json: "), "{stderr}");
}

/// A real-tools case played by an outside agent would have its calls come
/// through the API's attempt endpoints, which only mock: `toolmock run`
/// refuses the start naming the case (beside the embedded run's own
/// refusal of an external driver), and nothing real is reached.
#[test]
fn a_real_tools_case_played_through_the_api_refuses_the_run() {
    let (_mcp, http, mut doc) = started();
    let name = doc["cases"][1]["name"].as_str().unwrap().to_owned();
    doc["cases"][1]["driver"] = json!({"type": "external"});
    let file = written("outside", &doc);
    let out = run(&file);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "/cases/1/driver/type: real_tools_through_api: case {name:?} has an external driver"
        )),
        "{stderr}"
    );
    assert!(http.received.lock().unwrap().is_empty());
}

/// A real tool's answer past `--real-max-response-bytes` (issue 32, item
/// 4): the HTTP handler's answer (its echo of a 2,000-character text) is
/// longer than the 1 KiB limit, so the call fails `external_failed` with
/// `response_too_large` and only its attempt ends; the next attempt's
/// short answer is read whole, and the process exits normally. Without
/// the flag the same answer is read (the default is 16 MiB).
#[test]
fn a_real_answer_past_the_limit_is_response_too_large() {
    let (_mcp, _http, mut doc) = started();
    let add = |text: String| {
        json!({"type": "scripted", "steps": [
            {"tool": "notes", "operation": "add", "arguments": {"text": text}}
        ]})
    };
    doc["cases"] = json!([
        {"name": "long", "driver": add("x".repeat(2000))},
        {"name": "short", "driver": add("hello".into())}
    ]);
    let file = written("too-large", &doc);
    // Each case's (one) attempt.
    let outcomes = |out: &Output| -> Vec<Value> {
        let results: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
        });
        let cases = results["cases"].as_array().unwrap();
        cases.iter().map(|c| c["attempts"][0].clone()).collect()
    };

    let out = Command::new(toolmock())
        .args(["run", "--json", "--real-max-response-bytes", "1024"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let attempts = outcomes(&out);
    let long = &attempts[0];
    assert_eq!(long["outcome"], "harness_error", "{long:#}");
    let error = &long["harness_errors"][0];
    assert_eq!(error["code"], "external_failed", "{long:#}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("response_too_large") && message.contains("1024-byte limit"),
        "{message}"
    );
    assert_eq!(attempts[1]["outcome"], "passed", "{:#}", attempts[1]);

    // The same through the environment variable; and without a limit set
    // the long answer is read whole.
    let out = Command::new(toolmock())
        .args(["run", "--json"])
        .arg(&file)
        .env("TOOLMOCK_REAL_MAX_RESPONSE_BYTES", "1024")
        .output()
        .unwrap();
    assert_eq!(outcomes(&out)[0]["outcome"], "harness_error");
    let results = passed(&file);
    let cases = results["cases"].as_array().unwrap();
    assert!(
        cases
            .iter()
            .all(|c| c["attempts"][0]["outcome"] == "passed")
    );
}

/// The same limit on an MCP server's answer over streamable HTTP: the
/// fixture server pads its text content by 4 KiB, past a 2 KiB limit, so
/// the call fails `external_failed` with `response_too_large` and the
/// limit, never with what the server sent; without the flag it passes.
#[test]
fn a_real_mcp_answer_past_the_limit_is_response_too_large() {
    let mcp = McpFixture::start_padded(4096);
    let http = HttpFixture::start();
    let mut doc = document(clinic_contracts(toolmock(), &mcp.url), &mcp.url, &http.url);
    doc["cases"] = json!([{"name": "lookup", "driver": {"type": "scripted", "steps": [
        {"tool": "clinic", "operation": "lookup_patient", "arguments": {"member_id": "M1234567"}}
    ]}}]);
    let file = written("mcp-too-large", &doc);

    let out = Command::new(toolmock())
        .args(["run", "--json", "--real-max-response-bytes", "2048"])
        .arg(&file)
        .output()
        .unwrap();
    let results: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let attempt = &results["cases"][0]["attempts"][0];
    assert_eq!(attempt["outcome"], "harness_error", "{attempt:#}");
    let error = &attempt["harness_errors"][0];
    assert_eq!(error["code"], "external_failed", "{attempt:#}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("response_too_large") && message.contains("2048-byte limit"),
        "{message}"
    );
    assert!(!message.contains("Ada"), "the answer leaked: {message}");

    let results = passed(&file);
    assert_eq!(results["cases"][0]["attempts"][0]["outcome"], "passed");
}
