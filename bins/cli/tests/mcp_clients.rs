//! `toolmock serve` played by MCP clients no one here wrote: the official
//! Python SDK client (`mcp`, .cache/mcp-venv) and the official TypeScript
//! SDK client (`@modelcontextprotocol/sdk`, .cache/npm), each over stdio and
//! streamable HTTP, and the MCP Inspector's CLI mode. The client scripts
//! (`fixtures/mcp/clients/`) play the steps and print what they saw; the
//! server's own results document says how each attempt ended.

mod serve_common;

use serde_json::{Value, json};
use serve_common::{Served, calendar, installed, python, root, scratch, text};
use std::path::{Path, PathBuf};
use std::process::Command;
use toolmock_contract::OperationContract;

fn npm() -> PathBuf {
    installed(root().join(".cache/npm"))
}

#[derive(Clone, Copy, Debug)]
enum Sdk {
    Python,
    TypeScript,
}

/// The client's command line, before its own arguments.
fn client(sdk: Sdk) -> Command {
    match sdk {
        Sdk::Python => {
            let mut c = Command::new(python());
            c.arg(root().join("fixtures/mcp/clients/python_client.py"));
            c
        }
        Sdk::TypeScript => {
            let mut c = Command::new("node");
            c.arg(root().join("fixtures/mcp/clients/ts_client.mjs"))
                .arg(npm());
            c
        }
    }
}

fn play(mut command: Command) -> Value {
    let out = command.output().expect("the client runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&out.stdout)))
}

fn over_http(sdk: Sdk, url: &str, harness: bool) -> Value {
    let mut command = client(sdk);
    command.args(["--url", url]);
    if harness {
        command.arg("--harness");
    }
    play(command)
}

fn over_stdio(sdk: Sdk, results: &Path, harness: bool) -> Value {
    let mut command = client(sdk);
    if harness {
        command.arg("--harness");
    }
    command
        .arg("--stdio")
        .arg(env!("CARGO_BIN_EXE_toolmock"))
        .arg("serve")
        .arg(calendar())
        .args(["--case", "books_a_day", "--stdio", "--json"])
        .arg(results);
    play(command)
}

/// The contract hashes of the listed tools (`name` → hash, as source
/// `custom`, the fixture's) equal those of the fixture's operations.
fn assert_listed_contracts(report: &Value) {
    let fixture: Value =
        serde_json::from_slice(&std::fs::read(calendar()).expect("fixture")).expect("JSON");
    let hash = |name: &str, description: &Value, input: &Value, output: &Value| {
        let contract = json!({
            "operation": {"name": name, "source": "custom"},
            "description": description.as_str().unwrap_or(""),
            "input_schema": input,
            "output_schema": output,
        });
        OperationContract::from_json_str(&contract.to_string())
            .expect("a contract")
            .hash()
            .expect("hashed")
            .to_string()
    };
    let mut expected: Vec<(String, String)> = fixture["tools"][0]["operations"]
        .as_array()
        .expect("operations")
        .iter()
        .map(|op| {
            let name = op["name"].as_str().expect("name");
            (
                name.to_owned(),
                hash(
                    name,
                    &op["description"],
                    &op["input_schema"],
                    &op["output_schema"],
                ),
            )
        })
        .collect();
    expected.sort();
    let mut listed: Vec<(String, String)> = report["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter(|t| t.get("outputSchema").is_some())
        .map(|t| {
            let name = t["name"].as_str().expect("name");
            (
                name.to_owned(),
                hash(
                    name,
                    &t["description"],
                    &t["inputSchema"],
                    &t["outputSchema"],
                ),
            )
        })
        .collect();
    listed.sort();
    assert_eq!(listed, expected);
    let workflow = report["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "book_and_confirm")
        .expect("the workflow is a tool");
    assert_eq!(workflow["inputSchema"], json!({"type": "object"}));
}

/// What every played attempt shows, whatever the client and transport.
fn assert_played(report: &Value, before: &str) {
    assert_listed_contracts(report);
    assert_eq!(
        report["before"]["structuredContent"],
        json!({"day": before})
    );
    assert_eq!(report["before"]["validated"], true);
    // A tool input error arrives as a result with isError, readable.
    assert_eq!(report["malformed"]["isError"], true);
    let error: Value = serde_json::from_str(
        report["malformed"]["content"][0]["text"]
            .as_str()
            .expect("a text block"),
    )
    .expect("JSON");
    assert_eq!(error["error"]["class"], "tool_input_error");
    assert_eq!(error["error"]["code"], "invalid_arguments");
    assert_eq!(error["error"]["path"], "/day");
    // The corrected call succeeds; structuredContent passed outputSchema.
    assert_eq!(
        report["corrected"]["structuredContent"],
        json!({"reference": "TEST-742", "day": "2026-12-04"})
    );
    assert_eq!(report["corrected"]["validated"], true);
    assert_eq!(
        report["corrected"]["content"][0]["text"]
            .as_str()
            .map(|t| serde_json::from_str::<Value>(t).expect("JSON")),
        Some(report["corrected"]["structuredContent"].clone())
    );
    // State carried over (over HTTP: from another session).
    assert_eq!(
        report["after"]["structuredContent"],
        json!({"day": "2026-12-04"})
    );
    assert_eq!(
        report["workflow"]["structuredContent"],
        json!({"reference": "TEST-742", "confirmed": "2026-12-04"})
    );
}

fn assert_harness_error(report: &Value) {
    let harness = &report["harness"];
    assert_eq!(harness["raised"], true, "{harness}");
    assert_eq!(harness["code"], -32603);
    assert_eq!(harness["data"]["class"], "harness_error");
    assert_eq!(harness["data"]["code"], "missing_reference");
}

fn outcomes(results: &Value) -> Vec<(u64, String)> {
    results["cases"][0]["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| {
            (
                a["number"].as_u64().expect("number"),
                a["outcome"].as_str().expect("outcome").to_owned(),
            )
        })
        .collect()
}

/// Two attempts over streamable HTTP, every step a new session: state is
/// shared within an attempt and isolated between them; the second's harness
/// error is a JSON-RPC error, recorded, and ends it `harness_error`.
fn streamable_http(sdk: Sdk) {
    let dir = scratch();
    let results = dir.join("results.json");
    let served = Served::start(
        &calendar(),
        &[
            "--case",
            "books_a_day",
            "--json",
            results.to_str().expect("utf-8"),
        ],
    );
    let first = over_http(sdk, &served.url(1), false);
    assert_played(&first, "");
    let second = over_http(sdk, &served.url(2), true);
    assert_played(&second, "");
    assert_harness_error(&second);
    let (code, table) = served.stop();
    assert_eq!(code, 1, "{table}");
    let results: Value =
        serde_json::from_slice(&std::fs::read(&results).expect("results")).expect("JSON");
    assert_eq!(
        outcomes(&results),
        [(1, "passed".to_owned()), (2, "harness_error".to_owned())]
    );
    let broken = &results["cases"][0]["attempts"][1]["harness_errors"][0];
    assert_eq!(broken["code"], "missing_reference", "{broken}");
}

/// One attempt for the stdio process: it ends when the client closes the
/// session, and is judged then.
fn stdio(sdk: Sdk) {
    let dir = scratch();
    let passed = dir.join("passed.json");
    let report = over_stdio(sdk, &passed, false);
    assert_played(&report, "");
    let broke = dir.join("broke.json");
    let report = over_stdio(sdk, &broke, true);
    assert_played(&report, "");
    assert_harness_error(&report);
    for (file, outcome) in [(passed, "passed"), (broke, "harness_error")] {
        // The server writes its results as the session closes; the client
        // may have returned first.
        let began = std::time::Instant::now();
        while !file.exists() && began.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let results: Value =
            serde_json::from_slice(&std::fs::read(&file).expect("results")).expect("JSON");
        assert_eq!(outcomes(&results), [(1, outcome.to_owned())]);
    }
}

#[test]
fn python_sdk_over_streamable_http() {
    streamable_http(Sdk::Python);
}

#[test]
fn python_sdk_over_stdio() {
    stdio(Sdk::Python);
}

#[test]
fn typescript_sdk_over_streamable_http() {
    streamable_http(Sdk::TypeScript);
}

#[test]
fn typescript_sdk_over_stdio() {
    stdio(Sdk::TypeScript);
}

/// The MCP Inspector's CLI mode lists and calls the served tools.
#[test]
fn mcp_inspector_cli_lists_and_calls() {
    let inspector = installed(npm().join("node_modules/.bin/mcp-inspector"));
    let served = Served::start(&calendar(), &["--case", "books_a_day"]);
    let inspect = |args: &[&str]| -> Value {
        let out = Command::new(&inspector)
            .arg("--cli")
            .arg(served.url(1))
            .args(["--transport", "http"])
            .args(args)
            .output()
            .expect("the inspector runs");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&out.stdout)))
    };
    let listed = inspect(&["--method", "tools/list"]);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["audit", "book", "booked_day", "book_and_confirm"]);
    let called = inspect(&[
        "--method",
        "tools/call",
        "--tool-name",
        "book",
        "--tool-arg",
        "day=2026-12-04",
    ]);
    assert_eq!(
        called["structuredContent"],
        json!({"reference": "TEST-742", "day": "2026-12-04"})
    );
    let read = inspect(&["--method", "tools/call", "--tool-name", "booked_day"]);
    assert_eq!(read["structuredContent"], json!({"day": "2026-12-04"}));
}
