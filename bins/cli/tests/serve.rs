//! `toolmock serve` end to end, through the real binary and real MCP
//! clients: `toolmock discover` (rmcp's client) lists exactly the served
//! contracts; the official Python SDK client and the official TypeScript
//! SDK client (installed by scripts/install-mcp-servers.sh) play attempts
//! over stdio and streamable HTTP (scripts `fixtures/mcp/clients/`), and
//! the server's own results document is read back. `--max-calls` and
//! `--idle-timeout` end an attempt over stdio (driven over the pipes by
//! hand) and over HTTP.

mod serve_common;

use serde_json::{Value, json};
use serve_common::{
    Served, StdioServed, calendar, discover, post, read_results, rpc, scratch, text,
};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn hashes(discovered: &Value) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = discovered
        .as_array()
        .expect("an array")
        .iter()
        .filter(|t| t["status"] == "ready")
        .map(|t| {
            (
                t["contract"]["operation"]["name"]
                    .as_str()
                    .expect("name")
                    .to_owned(),
                t["contract_hash"].as_str().expect("hash").to_owned(),
            )
        })
        .collect();
    all.sort();
    all
}

/// `toolmock discover` of a served simulation gives back its contracts with
/// the same hashes: the calendar's custom operations are discovered as MCP
/// contracts; a simulation made of exactly those contracts (`from:
/// contracts`), served in its turn, is discovered with the same hashes —
/// description, inputSchema and outputSchema are served verbatim. The
/// workflow is listed as a tool without an output schema.
#[test]
fn discover_of_a_served_simulation_gives_back_its_contract_hashes() {
    let dir = scratch();
    let first = Served::start(&calendar(), &["--case", "books_a_day"]);
    let discovered = discover(&first.url(1));
    drop(first);
    let names: Vec<&str> = discovered
        .as_array()
        .expect("array")
        .iter()
        .map(|t| t["contract"]["operation"]["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["audit", "book", "booked_day", "book_and_confirm"]);
    let workflow = &discovered[3];
    assert_eq!(workflow["status"], "needs_output_schema");
    assert_eq!(
        workflow["contract"]["description"],
        "Book a day, then read back what is booked."
    );
    // The same operations as MCP contracts.
    let mut document: Value =
        serde_json::from_slice(&std::fs::read(calendar()).expect("fixture")).expect("JSON");
    let contracts: Vec<Value> = discovered
        .as_array()
        .expect("array")
        .iter()
        .filter(|t| t["status"] == "ready")
        .cloned()
        .collect();
    let tool = &mut document["tools"][0];
    tool["from"] = json!("contracts");
    tool["contracts"] = Value::Array(contracts);
    tool.as_object_mut().expect("tool").remove("operations");
    let path = dir.join("calendar-mcp.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&document).expect("json")).expect("write");
    let second = Served::start(&path, &["--case", "books_a_day"]);
    let again = discover(&second.url(1));
    assert_eq!(hashes(&again), hashes(&discovered));
    assert_eq!(hashes(&again).len(), 3);
    // Each discovered hash is the hash `toolmock hash` gives the contract
    // the simulation pinned.
    for entry in discovered.as_array().expect("array").iter().take(3) {
        let contract = dir.join("contract.json");
        std::fs::write(&contract, entry["contract"].to_string()).expect("write");
        let out = Command::new(env!("CARGO_BIN_EXE_toolmock"))
            .arg("hash")
            .arg(&contract)
            .output()
            .expect("hash runs");
        assert_eq!(
            text(&out.stdout).trim(),
            entry["contract_hash"].as_str().expect("hash"),
            "{}",
            text(&out.stderr)
        );
    }
}

/// Over plain JSON-RPC: an attempt's state is kept by its URL across
/// requests that share no session; another attempt's is its own; the
/// results document judges each attempt by the case's expectations.
#[test]
fn attempts_are_keyed_by_url_and_judged_when_the_server_stops() {
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
    let call = |n: u32, name: &str, arguments: Value| {
        rpc(
            &served.url(n),
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
    };
    let booked = call(1, "book", json!({"day": "2026-12-04"}));
    assert_eq!(
        booked["result"]["structuredContent"],
        json!({"reference": "TEST-742", "day": "2026-12-04"})
    );
    assert_eq!(booked["result"]["isError"], false);
    let text_block: Value = serde_json::from_str(
        booked["result"]["content"][0]["text"]
            .as_str()
            .expect("one text block"),
    )
    .expect("the text block is the same JSON");
    assert_eq!(text_block, booked["result"]["structuredContent"]);
    // Attempt 1 remembers; attempt 2 does not.
    assert_eq!(
        call(1, "booked_day", json!({}))["result"]["structuredContent"],
        json!({"day": "2026-12-04"})
    );
    assert_eq!(
        call(2, "booked_day", json!({}))["result"]["structuredContent"],
        json!({"day": ""})
    );
    // A tool input error is a tool result the agent can read.
    let refused = call(2, "book", json!({"day": "tomorrow"}));
    assert_eq!(refused["result"]["isError"], true);
    let error: Value = serde_json::from_str(
        refused["result"]["content"][0]["text"]
            .as_str()
            .expect("text"),
    )
    .expect("JSON");
    assert_eq!(error["error"]["code"], "invalid_arguments");
    assert_eq!(error["error"]["path"], "/day");
    // A harness error is a JSON-RPC error.
    let broken = call(3, "audit", json!({}));
    assert_eq!(broken["error"]["code"], -32603);
    assert_eq!(broken["error"]["data"]["class"], "harness_error");
    assert_eq!(broken["error"]["data"]["code"], "missing_reference");
    // A workflow called as a tool runs its nodes in the attempt.
    assert_eq!(
        call(4, "book_and_confirm", json!({"day": "2026-12-04"}))["result"]["structuredContent"],
        json!({"reference": "TEST-742", "confirmed": "2026-12-04"})
    );
    // An explicit finish answers the attempt's result; its URL then refuses calls.
    let (status, finished) = post(&format!("{}/attempts/4/finish", served.base), None);
    assert_eq!(status, 200);
    assert_eq!(finished["outcome"], "passed", "{finished}");
    let after = call(4, "booked_day", json!({}));
    assert_eq!(after["error"]["data"]["code"], "attempt_finished");
    let (status, handed) = post(&format!("{}/attempts", served.base), None);
    assert_eq!(status, 201);
    assert_eq!(handed, json!({"attempt": 5, "url": "/attempts/5/mcp"}));
    let (code, table) = served.stop();
    assert_eq!(code, 1, "not every attempt ends as expected: {table}");
    assert!(table.contains("books_a_day"), "{table}");
    let results: Value =
        serde_json::from_slice(&std::fs::read(&results).expect("results written")).expect("JSON");
    let attempts = &results["cases"][0]["attempts"];
    let outcomes: Vec<(u64, &str)> = attempts
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| {
            (
                a["number"].as_u64().expect("n"),
                a["outcome"].as_str().expect("o"),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            (1, "passed"),
            (2, "failed"),
            (3, "harness_error"),
            (4, "passed"),
            (5, "failed")
        ]
    );
    assert_eq!(results["summary"]["attempts"], 5);
    assert_eq!(results["ok"], false);
}

/// `--max-calls` ends an attempt after that many calls; `--attempts` stops
/// the server once that many have ended, and it exits 0 when each ended as
/// its case expects (`audit_breaks` expects `harness_error`).
#[test]
fn max_calls_ends_the_attempt_and_attempts_stops_the_server() {
    let dir = scratch();
    let results = dir.join("results.json");
    let junit = dir.join("junit.xml");
    let mut served = Served::start(
        &calendar(),
        &[
            "--case",
            "audit_breaks",
            "--max-calls",
            "1",
            "--attempts",
            "1",
            "--json",
            results.to_str().expect("utf-8"),
            "--junit",
            junit.to_str().expect("utf-8"),
        ],
    );
    let answer = rpc(
        &served.url(1),
        "tools/call",
        json!({"name": "audit", "arguments": {}}),
    );
    assert_eq!(answer["error"]["data"]["code"], "missing_reference");
    let began = Instant::now();
    let status = loop {
        if let Some(status) = served.child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "serve did not stop after its one attempt"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
    let results: Value =
        serde_json::from_slice(&std::fs::read(&results).expect("results written")).expect("JSON");
    assert_eq!(
        results["cases"][0]["attempts"][0]["outcome"],
        "harness_error"
    );
    assert_eq!(results["ok"], true);
    let xml = std::fs::read_to_string(&junit).expect("junit written");
    assert!(xml.contains("audit_breaks"), "{xml}");
}

/// Bad invocations: several cases and no --case, an unknown case.
#[test]
fn a_case_must_be_chosen_when_there_are_several() {
    let run = |args: &[&str]| -> Output {
        Command::new(env!("CARGO_BIN_EXE_toolmock"))
            .arg("serve")
            .arg(calendar())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("runs")
    };
    let out = run(&["--stdio"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("case_required"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["--stdio", "--case", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("unknown_case"),
        "{}",
        text(&out.stderr)
    );
}

/// `--stdio --max-calls 2`: the second call is answered, then the attempt
/// ends while the client still holds stdin open; the process judges it,
/// writes the report and exits (0: the case's expectations hold). A third
/// call sent after the second answer is never run: the stream closes
/// without its answer, or (when it was read before the session stopped)
/// it is refused `attempt_finished`.
#[test]
fn stdio_max_calls_ends_the_attempt_and_writes_the_report() {
    let dir = scratch();
    let results = dir.join("results.json");
    let mut served = StdioServed::start(&[
        "--max-calls",
        "2",
        "--json",
        results.to_str().expect("utf-8"),
    ]);
    let booked = served.call(1, "book", json!({"day": "2026-12-04"}));
    assert_eq!(
        booked["result"]["structuredContent"]["day"], "2026-12-04",
        "{booked}"
    );
    let read = served.call(2, "booked_day", json!({}));
    assert_eq!(
        read["result"]["structuredContent"],
        json!({"day": "2026-12-04"})
    );
    // The process may have exited already: a closed pipe is one outcome.
    let late = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                      "params": {"name": "book", "arguments": {"day": "2026-12-05"}}});
    let stdin = served.stdin.as_mut().expect("stdin open");
    let _ = std::io::Write::write_all(stdin, format!("{late}\n").as_bytes());
    let _ = std::io::Write::flush(stdin);
    for late in served.rest() {
        if late["id"] == 3 {
            assert_eq!(late["error"]["data"]["code"], "attempt_finished", "{late}");
        }
    }
    assert_eq!(served.exits_within(Duration::from_secs(20)), 0);
    let results = read_results(&results);
    let attempt = &results["cases"][0]["attempts"][0];
    assert_eq!(attempt["outcome"], "passed", "{results}");
    assert_eq!(attempt["calls"].as_array().expect("calls").len(), 2);
    assert_eq!(results["ok"], true);
}

/// `--stdio --idle-timeout 1`: after a call and a second without another,
/// the attempt ends with stdin still open; the report is written. A case
/// whose expectations are not met by then (nothing booked) exits 1.
#[test]
fn stdio_idle_timeout_ends_the_attempt_and_writes_the_report() {
    let dir = scratch();
    let results = dir.join("results.json");
    let junit = dir.join("junit.xml");
    let mut served = StdioServed::start(&[
        "--idle-timeout",
        "1",
        "--json",
        results.to_str().expect("utf-8"),
        "--junit",
        junit.to_str().expect("utf-8"),
    ]);
    let read = served.call(1, "booked_day", json!({}));
    assert_eq!(read["result"]["structuredContent"], json!({"day": ""}));
    let began = Instant::now();
    assert_eq!(served.exits_within(Duration::from_secs(20)), 1);
    assert!(
        began.elapsed() >= Duration::from_millis(900),
        "ended before the idle time: {:?}",
        began.elapsed()
    );
    let results = read_results(&results);
    let attempt = &results["cases"][0]["attempts"][0];
    assert_eq!(attempt["outcome"], "failed", "{results}");
    assert_eq!(attempt["calls"].as_array().expect("calls").len(), 1);
    let xml = std::fs::read_to_string(&junit).expect("junit written");
    assert!(xml.contains("books_a_day"), "{xml}");
}

/// `--http --idle-timeout 1`: an attempt with no call for a second ends
/// (a later call to its URL is refused, `attempt_finished`) while another
/// attempt started later is still open; both are in the report.
#[test]
fn http_idle_timeout_ends_an_attempt() {
    let dir = scratch();
    let results = dir.join("results.json");
    let served = Served::start(
        &calendar(),
        &[
            "--case",
            "books_a_day",
            "--idle-timeout",
            "1",
            "--json",
            results.to_str().expect("utf-8"),
        ],
    );
    let call = |n: u32, name: &str, arguments: Value| {
        rpc(
            &served.url(n),
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
    };
    let booked = call(1, "book", json!({"day": "2026-12-04"}));
    assert_eq!(booked["result"]["isError"], false, "{booked}");
    std::thread::sleep(Duration::from_millis(2500));
    let after = call(1, "booked_day", json!({}));
    assert_eq!(
        after["error"]["data"]["code"], "attempt_finished",
        "{after}"
    );
    // A fresh attempt still answers.
    let fresh = call(2, "booked_day", json!({}));
    assert_eq!(fresh["result"]["structuredContent"], json!({"day": ""}));
    let (code, table) = served.stop();
    assert_eq!(code, 1, "attempt 2 booked nothing: {table}");
    let results = read_results(&results);
    let outcomes: Vec<&str> = results["cases"][0]["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| a["outcome"].as_str().expect("outcome"))
        .collect();
    assert_eq!(outcomes, ["passed", "failed"]);
}
