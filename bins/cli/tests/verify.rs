//! `toolmock verify` end to end, through the real binary, against real
//! servers the project did not write or that speak real protocols: the
//! Python MCP SDK fixture server (recorded through `toolmock record`, then
//! changed: `--changed`), `@modelcontextprotocol/server-everything`, and a
//! small HTTP service on Python's standard library
//! (`fixtures/verify/notes_server.py`) with its OpenAPI document. Each
//! server counts what it is called with, so the safety rule — an operation
//! not marked safe is never called — is checked by the server itself.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed expectation must panic

mod serve_common;

use serde_json::{Value, json};
use serve_common::{installed, python, root, scratch, text};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

fn toolmock(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolmock"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("toolmock runs")
}

fn report(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&out.stdout), text(&out.stderr)))
}

fn read(file: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(file).expect("read")).expect("JSON")
}

fn write(file: &Path, value: &Value) {
    std::fs::write(file, serde_json::to_vec_pretty(value).expect("JSON")).expect("write");
}

/// The report of `tool`/`operation`.
fn operation<'a>(report: &'a Value, tool: &str, name: &str) -> &'a Value {
    report["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter(|t| t["tool"] == tool)
        .flat_map(|t| t["operations"].as_array().expect("operations"))
        .find(|o| o["operation"] == name)
        .unwrap_or_else(|| panic!("{tool}/{name} not in {report:#}"))
}

/// A check as (name, status, [(pointer, kind)]).
type Check = (String, String, Vec<(String, String)>);

/// Each check of an operation.
fn checks(op: &Value) -> Vec<Check> {
    op["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| {
            let divergences = c["divergences"]
                .as_array()
                .map(|d| {
                    d.iter()
                        .map(|d| {
                            (
                                d["path"].as_str().unwrap().to_owned(),
                                d["kind"].as_str().unwrap().to_owned(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            (
                c["name"].as_str().unwrap().to_owned(),
                c["status"].as_str().unwrap().to_owned(),
                divergences,
            )
        })
        .collect()
}

fn changes(op: &Value, member: &str) -> Vec<(String, String)> {
    op["drift"]["diff"][member]
        .as_array()
        .expect("a diff")
        .iter()
        .map(|c| {
            (
                c["change"].as_str().unwrap().to_owned(),
                c["path"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn fixture_server(extra: &str) -> String {
    format!(
        "{} {} --record-tools{extra}",
        python().display(),
        installed(root().join("fixtures/mcp/fixture_server.py")).display()
    )
}

/// The Python SDK client replays `calls` through `toolmock record` in front
/// of `real`, into `out`.
fn record(dir: &Path, real: &str, out: &Path, calls: &Value) {
    let file = dir.join("client-calls.json");
    write(&file, calls);
    let exe = env!("CARGO_BIN_EXE_toolmock");
    let done = Command::new(python())
        .arg(installed(
            root().join("fixtures/mcp/clients/replay_client.py"),
        ))
        .arg(&file)
        .args(["--stdio", exe, "record", "--stdio", real, "--out"])
        .arg(out)
        .current_dir(root())
        .stdin(Stdio::null())
        .output()
        .expect("the client runs");
    assert!(done.status.success(), "{}", text(&done.stderr));
}

fn emit(dir: &Path, recording: &Path, mocks: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_toolmock"))
        .args(["record", "emit"])
        .arg(recording)
        .arg("--out")
        .arg(mocks)
        .current_dir(dir)
        .output()
        .expect("emit runs");
    assert!(
        mocks.join("simulation.json").exists(),
        "{}",
        text(&out.stderr)
    );
}

/// The rooms fixture: `book_room` three times (one `attic`, which is
/// full), `next_ticket` twice; recorded through the proxy, then emitted.
fn recorded_rooms(dir: &Path) -> (PathBuf, PathBuf) {
    let recording = dir.join("recording");
    let mocks = dir.join("mocks");
    let guest = |name: &str| json!({"name": name, "ssn": "000-00-0000"});
    record(
        dir,
        &fixture_server(""),
        &recording,
        &json!([
            {"tool": "book_room", "arguments": {"room": "blue", "day": "2026-01-02", "guest": guest("Ada")}},
            {"tool": "book_room", "arguments": {"room": "red", "day": "2026-01-03", "guest": guest("Bo")}},
            {"tool": "book_room", "arguments": {"room": "attic", "day": "2026-01-03", "guest": guest("Cy")}},
            {"tool": "next_ticket", "arguments": {}},
            {"tool": "next_ticket", "arguments": {}}
        ]),
    );
    emit(dir, &recording, &mocks);
    (recording, mocks)
}

fn called(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Recorded and emitted from the fixture server, then verified against the
/// same server after a release that changed `book_room` (`--changed`): the
/// contract drift names the new output member by its pointer, every
/// replayed `book_room` call — examples and recorded calls — diverges at
/// `/reference` and `/floor`, the attic call (full either way) agrees, and
/// `next_ticket`, not marked safe, is never called: the server's own log of
/// calls holds only `book_room`. Against the unchanged server everything
/// agrees (exit 0). `--propose` writes a draft that passes `toolmock check`.
#[test]
fn a_fixture_tool_changed_after_recording_drifts_and_diverges_with_pointers() {
    let dir = scratch();
    let (_, mocks) = recorded_rooms(&dir);
    let log = dir.join("calls.log");
    let simulation = mocks.join("simulation.json");
    let mut doc = read(&simulation);
    let verify_with = |extra: &str| {
        json!({
            "safe": ["book_room"],
            "server": {"command": fixture_server(&format!("{extra} --calls-log {}", log.display()))},
            "recordings": ["../recording"]
        })
    };

    // The same server: the mocks tell the truth.
    doc["tools"][0]["verify"] = verify_with("");
    write(&simulation, &doc);
    let out = toolmock(&dir, &["verify", "mocks", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let same = report(&out);
    assert_eq!(same["ok"], true, "{same:#}");
    let book = operation(&same, "recorded", "book_room");
    assert_eq!(book["drift"]["status"], "unchanged");
    assert_eq!(book["verdict"], "agreed");
    // 3 examples and the 3 recorded book_room calls.
    assert_eq!(
        checks(book).iter().filter(|c| c.1 == "agreed").count(),
        6,
        "{book:#}"
    );
    assert!(
        called(&log).iter().all(|c| c == "book_room"),
        "{:?}",
        called(&log)
    );
    assert_eq!(called(&log).len(), 6);

    // After the release.
    std::fs::remove_file(&log).expect("a log");
    doc["tools"][0]["verify"] = verify_with(" --changed");
    write(&simulation, &doc);
    let out = toolmock(&dir, &["verify", "mocks", "--json", "--propose", "drafts"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let changed = report(&out);
    assert_eq!(changed["ok"], false);
    let book = operation(&changed, "recorded", "book_room");
    assert_eq!(book["drift"]["status"], "changed");
    assert_eq!(book["drift"]["from"], "mcp");
    assert_eq!(
        changes(book, "output_schema"),
        [("added".to_owned(), "/properties/floor".to_owned())]
    );
    assert_eq!(book["verdict"], "diverged");
    let found = checks(book);
    let diverged_at = vec![
        ("/floor".to_owned(), "unexpected_member".to_owned()),
        ("/reference".to_owned(), "value_differs".to_owned()),
    ];
    for (name, status, divergences) in &found {
        if status == "diverged" {
            assert_eq!(divergences, &diverged_at, "{name}");
        }
    }
    let statuses: Vec<(&str, &str)> = found
        .iter()
        .map(|(n, s, _)| (n.as_str(), s.as_str()))
        .collect();
    // Examples in the emitted order (the attic call is full either way),
    // then the recording's calls in order, next_ticket's skipped.
    assert_eq!(
        statuses.iter().filter(|(_, s)| *s == "diverged").count(),
        4,
        "{statuses:?}"
    );
    assert_eq!(statuses.iter().filter(|(_, s)| *s == "agreed").count(), 2);
    assert!(statuses.contains(&("recording ../recording #0", "diverged")));
    assert!(statuses.contains(&("recording ../recording #2", "agreed")));
    let ticket = operation(&changed, "recorded", "next_ticket");
    assert_eq!(ticket["safe"], false);
    assert_eq!(ticket["drift"]["status"], "unchanged");
    assert!(
        checks(ticket).iter().all(|(_, s, _)| s == "skipped"),
        "{ticket:#}"
    );
    assert!(
        ticket["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["reason"] == "not_safe")
    );
    // The server saw book_room alone: next_ticket was never called.
    let log_lines = called(&log);
    assert_eq!(log_lines.len(), 6, "{log_lines:?}");
    assert!(log_lines.iter().all(|c| c == "book_room"), "{log_lines:?}");

    // The proposed draft passes `toolmock check` against the current contract.
    let proposals = read(&dir.join("drafts/proposals.json"));
    assert_eq!(proposals[0]["operation"], "book_room", "{proposals:#}");
    assert_eq!(proposals[0]["outcome"], "merged");
    let draft = dir
        .join("drafts")
        .join(proposals[0]["definition"].as_str().unwrap());
    let contract = dir
        .join("drafts")
        .join(proposals[0]["contract"].as_str().unwrap());
    assert!(read(&contract)["output_schema"]["properties"]["floor"].is_object());
    let checked = toolmock(
        &dir,
        &[
            "check",
            draft.to_str().unwrap(),
            "--contract",
            contract.to_str().unwrap(),
        ],
    );
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked.stdout));
    // Its examples are the real answers.
    let examples = read(&draft)["examples"].clone();
    assert!(
        examples
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["expected"]["reference"] == "BK-100" && e["expected"]["floor"] == 2),
        "{examples:#}"
    );

    // --fail-on: drift alone still fails, none does not.
    let out = toolmock(&dir, &["verify", "mocks", "--fail-on", "drift"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let out = toolmock(&dir, &["verify", "mocks", "--fail-on", "none"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(
        table.contains(" recorded/book_room    changed    2 agreed, 4 diverged  diverged"),
        "{table}"
    );
    assert!(
        table.contains("    output_schema: added /properties/floor: {\"type\":\"integer\"}"),
        "{table}"
    );
    assert!(
        table.contains(
            "    /reference: value_differs: the mock says \"R-100\", the real tool \"BK-100\""
        ),
        "{table}"
    );
}

fn everything() -> String {
    let entry = installed(
        root()
            .join(".cache/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
    );
    format!("node {} stdio", entry.display())
}

/// server-everything's `get-structured-content`, recorded for its three
/// cities and emitted; then the mock is changed as a tool changes between
/// record and verify — its contract gains a `maxLength` on `conditions`
/// and its Chicago answer a temperature of 30 — and verify reports the
/// drift and the divergence at their pointers. A `number` matcher with a
/// tolerance of 10 then accepts the temperature.
#[test]
fn server_everything_reports_a_changed_tool_by_pointer_and_matchers_accept_it() {
    let dir = scratch();
    let recording = dir.join("recording");
    let mocks = dir.join("mocks");
    record(
        &dir,
        &everything(),
        &recording,
        &json!([
            {"tool": "get-structured-content", "arguments": {"location": "New York"}},
            {"tool": "get-structured-content", "arguments": {"location": "Chicago"}},
            {"tool": "get-structured-content", "arguments": {"location": "Los Angeles"}}
        ]),
    );
    emit(&dir, &recording, &mocks);
    // The contract: conditions gains a maxLength (the hash entry goes: the
    // contract is no longer what the server listed).
    let contracts_file = mocks.join("contracts.json");
    let mut contracts = read(&contracts_file);
    contracts[0]["contract"]["output_schema"]["properties"]["conditions"]["maxLength"] = json!(100);
    contracts[0]
        .as_object_mut()
        .unwrap()
        .remove("contract_hash");
    write(&contracts_file, &contracts);
    // The mock: Chicago is 30 degrees, its rule and its example alike.
    let mock_file = mocks.join("get-structured-content.mock.json");
    let mut mock = read(&mock_file);
    for rule in mock["variants"]["recorded"]["rules"]
        .as_array_mut()
        .unwrap()
    {
        if rule["when"][0]["value"] == "Chicago" {
            rule["result"]["temperature"] = json!(30);
        }
    }
    for example in mock["examples"].as_array_mut().unwrap() {
        if example["input"]["location"] == "Chicago" {
            example["expected"]["temperature"] = json!(30);
        }
    }
    write(&mock_file, &mock);
    let simulation = mocks.join("simulation.json");
    let mut doc = read(&simulation);
    doc["tools"][0]["verify"] = json!({"safe": true, "server": {"command": everything()}});
    write(&simulation, &doc);

    let out = toolmock(&dir, &["verify", "mocks", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let found = report(&out);
    let weather = operation(&found, "recorded", "get-structured-content");
    assert_eq!(weather["drift"]["status"], "changed");
    assert_eq!(
        changes(weather, "output_schema"),
        [(
            "removed".to_owned(),
            "/properties/conditions/maxLength".to_owned()
        )]
    );
    let diverged: Vec<_> = checks(weather)
        .into_iter()
        .filter(|c| c.1 == "diverged")
        .collect();
    assert_eq!(diverged.len(), 1, "{weather:#}");
    assert_eq!(
        diverged[0].2,
        [("/temperature".to_owned(), "value_differs".to_owned())]
    );
    let check = weather["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["status"] == "diverged")
        .unwrap();
    assert_eq!(check["input"], json!({"location": "Chicago"}));
    assert_eq!(check["divergences"][0]["mock"], 30);
    assert_eq!(check["divergences"][0]["real"], 36);
    assert!(
        check["source"]["path"]
            .as_str()
            .unwrap()
            .starts_with("/examples/")
    );

    // A tolerance of 10 degrees: the temperatures agree; only the drift is left.
    doc["tools"][0]["verify"]["matchers"] =
        json!([{"path": "/temperature", "match": "number", "tolerance": 10}]);
    write(&simulation, &doc);
    let out = toolmock(
        &dir,
        &["verify", "mocks", "--json", "--fail-on", "divergence"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let tolerant = report(&out);
    let weather = operation(&tolerant, "recorded", "get-structured-content");
    assert_eq!(weather["verdict"], "drifted");
    assert!(
        checks(weather).iter().all(|c| c.1 == "agreed"),
        "{weather:#}"
    );
}

/// The notes service (`fixtures/verify/notes_server.py`) on a free port.
struct Notes {
    child: Child,
    url: String,
}

impl Notes {
    fn start(args: &[&str]) -> Self {
        let mut child = Command::new(python())
            .arg(root().join("fixtures/verify/notes_server.py"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the notes server starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("its port");
        let port: u16 = line.trim().parse().expect("a port");
        Notes {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }

    /// What it was called with: `{"calls": {path: n}, "max_in_flight": n}`.
    fn calls(&self) -> Value {
        self.get("/calls")
    }

    /// The JSON it answers a `GET` of `path` with.
    fn get(&self, path: &str) -> Value {
        let address = self.url.trim_start_matches("http://");
        let mut stream = TcpStream::connect(address).expect("connect");
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nhost: {address}\r\nconnection: close\r\n\r\n"
        )
        .expect("send");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("read");
        let body = answer.split("\r\n\r\n").nth(1).expect("a body");
        serde_json::from_str(body).expect("JSON")
    }
}

impl Drop for Notes {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn notes_simulation() -> PathBuf {
    root().join("fixtures/verify/notes/simulation.json")
}

/// HTTP endpoints with their OpenAPI document, a chain and the safety rule:
/// against the service as its mocks were written, every replayed call
/// agrees (ids and times by their matchers), the chain finds the note by
/// the id the service gave it, and `delete_note` — not marked safe — was
/// never called (the service counts zero). After the release that renamed
/// `text` to `body`, the OpenAPI drift and the divergences name the
/// pointers, and the report's JUnit file reads back in `junitparser`.
/// `--sandbox-url` points the tool at a staging copy: production is not
/// called at all.
#[test]
fn http_endpoints_openapi_drift_a_chain_and_the_safety_rule() {
    let dir = scratch();
    let staging = Notes::start(&[]);
    let production = Notes::start(&["--changed"]);
    let sandbox = format!("notes={}", staging.url);
    let file = notes_simulation();
    let out = toolmock(
        &dir,
        &[
            "verify",
            file.to_str().unwrap(),
            "--sandbox-url",
            &sandbox,
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let good = report(&out);
    for name in ["add_note", "get_note", "delete_note"] {
        let op = operation(&good, "notes", name);
        assert_eq!(op["drift"]["status"], "unchanged", "{op:#}");
        assert_eq!(op["drift"]["from"], "openapi");
    }
    let get = operation(&good, "notes", "get_note");
    let found = checks(get);
    assert_eq!(found[0].1, "agreed");
    assert_eq!(found[1].1, "skipped", "an example with a state of its own");
    assert_eq!(get["checks"][1]["reason"], "needs_state");
    assert_eq!(found[2].0, "chain add_then_get #1");
    assert_eq!(found[2].1, "agreed");
    // The chain sent the id the service gave the note, not the mock's.
    let chain_get = &get["checks"][2];
    assert_eq!(
        chain_get["input"]["id"],
        chain_get["real"]["result"]["note"]["id"]
    );
    assert_eq!(chain_get["mock"]["result"]["note"]["id"], "N-1");
    assert_eq!(
        chain_get["source"]["path"],
        "/tools/0/verify/chains/0/steps/1"
    );
    let delete = operation(&good, "notes", "delete_note");
    assert_eq!(delete["verdict"], "unverified");
    assert_eq!(delete["checks"][0]["reason"], "not_safe");
    let counted = staging.calls();
    assert_eq!(counted["calls"].get("/notes/delete"), None, "{counted}");
    assert_eq!(counted["calls"]["/notes/add"], 2, "{counted}");
    assert_eq!(counted["calls"]["/notes/get"], 2, "{counted}");
    assert_eq!(
        production.calls()["calls"],
        json!({}),
        "production untouched"
    );

    // The OpenAPI document as a file beside the simulation: the same drift.
    std::fs::write(
        dir.join("openapi.json"),
        staging.get("/openapi.json").to_string(),
    )
    .expect("write");
    let mut from_file = read(&file);
    from_file["tools"][0]["verify"]["openapi"] = json!("openapi.json");
    write(&dir.join("from-file.json"), &from_file);
    let out = toolmock(
        &dir,
        &[
            "verify",
            "from-file.json",
            "--sandbox-url",
            &sandbox,
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let filed = report(&out);
    let drift = &operation(&filed, "notes", "get_note")["drift"];
    assert_eq!(
        (&drift["status"], &drift["from"]),
        (&json!("unchanged"), &json!("openapi"))
    );

    // Production, after the release.
    let sandbox = format!("notes={}", production.url);
    let out = toolmock(
        &dir,
        &[
            "verify",
            file.to_str().unwrap(),
            "--sandbox-url",
            &sandbox,
            "--json",
            "--junit",
            "verify.xml",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let bad = report(&out);
    let add = operation(&bad, "notes", "add_note");
    assert_eq!(add["drift"]["status"], "changed");
    assert_eq!(
        changes(add, "output_schema"),
        [
            ("added".to_owned(), "/properties/body".to_owned()),
            ("removed".to_owned(), "/properties/text".to_owned()),
            ("changed".to_owned(), "/required/1".to_owned()),
        ]
    );
    let example = &checks(add)[0];
    assert_eq!(example.1, "diverged");
    assert_eq!(
        example.2,
        [
            ("".to_owned(), "output_schema_violation".to_owned()),
            ("/body".to_owned(), "unexpected_member".to_owned()),
            ("/text".to_owned(), "missing_member".to_owned()),
        ]
    );
    let get = operation(&bad, "notes", "get_note");
    let chain_step = checks(get)
        .into_iter()
        .find(|c| c.0 == "chain add_then_get #1")
        .unwrap();
    assert_eq!(
        chain_step.2,
        [
            ("/note".to_owned(), "output_schema_violation".to_owned()),
            ("/note/body".to_owned(), "unexpected_member".to_owned()),
            ("/note/text".to_owned(), "missing_member".to_owned()),
        ]
    );
    assert_eq!(production.calls()["calls"].get("/notes/delete"), None);

    // The JUnit file, read by a real consumer.
    let python = root().join(".cache/test-venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/install-test-tools.sh",
        python.display()
    );
    let script = r#"
import json, sys
from junitparser import JUnitXml
xml = JUnitXml.fromfile(sys.argv[1])
cases = []
for suite in xml:
    for case in suite:
        cases.append([case.classname, case.name, [type(r).__name__ for r in case.result]])
print(json.dumps({"tests": xml.tests, "failures": xml.failures, "skipped": xml.skipped, "cases": cases}))
"#;
    let parsed = Command::new(&python)
        .args(["-c", script, "verify.xml"])
        .current_dir(&dir)
        .output()
        .expect("python runs");
    assert!(parsed.status.success(), "{}", text(&parsed.stderr));
    let junit: Value = serde_json::from_slice(&parsed.stdout).expect("JSON");
    assert_eq!(junit["tests"], 9, "{junit:#}");
    // Two contracts changed, three calls diverged.
    assert_eq!(junit["failures"], 5, "{junit:#}");
    assert!(
        junit["cases"].as_array().unwrap().contains(&json!([
            "notes.delete_note",
            "example 0",
            ["Skipped"]
        ])),
        "{junit:#}"
    );
    assert!(junit["cases"].as_array().unwrap().contains(&json!([
        "notes.add_note",
        "contract",
        ["Failure"]
    ])));
}

/// `--concurrency N` bounds the real calls in flight per tool: twenty
/// independent examples against a service that holds each call 100 ms
/// never have more than N at once (the service counts), and do have N.
#[test]
fn concurrency_bounds_the_calls_in_flight_per_tool() {
    let dir = scratch();
    let service = Notes::start(&["--delay-ms", "100"]);
    let mut doc = read(&notes_simulation());
    let lookups: Vec<Value> = (0..20)
        .map(|i| json!({"variant": "lookup", "input": {"id": format!("N-{}", 900 + i)}, "expected": {"found": false}}))
        .collect();
    doc["tools"][0]["definitions"]["get_note"]["examples"] = Value::Array(lookups);
    doc["tools"][0]["verify"]["safe"] = json!(["get_note"]);
    doc["tools"][0]["verify"]["chains"] = json!([]);
    doc["tools"][0]["verify"]
        .as_object_mut()
        .unwrap()
        .remove("openapi");
    write(&dir.join("lookups.json"), &doc);
    let sandbox = format!("notes={}", service.url);
    let out = toolmock(
        &dir,
        &[
            "verify",
            "lookups.json",
            "--sandbox-url",
            &sandbox,
            "--concurrency",
            "3",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let counted = service.calls();
    assert_eq!(counted["calls"]["/notes/get"], 20, "{counted}");
    assert_eq!(counted["max_in_flight"], 3, "{counted}");
}

/// `--real-max-response-bytes` bounds the OpenAPI fetch (issue 32, item
/// 4): the notes service's document is longer than 1 KiB, so the drift
/// fails `openapi_unreachable` with `response_too_large`, while the
/// replayed calls' short answers are read and agree.
#[test]
fn an_openapi_document_past_the_limit_is_response_too_large() {
    let dir = scratch();
    let staging = Notes::start(&[]);
    assert!(staging.get("/openapi.json").to_string().len() > 1024);
    let sandbox = format!("notes={}", staging.url);
    let file = notes_simulation();
    let args = [
        "verify",
        file.to_str().unwrap(),
        "--sandbox-url",
        &sandbox,
        "--json",
        "--real-max-response-bytes",
        "1024",
    ];
    let out = toolmock(&dir, &args);
    // A drift that could not be read fails the verification (exit 2).
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let found = report(&out);
    let add = operation(&found, "notes", "add_note");
    assert_eq!(add["drift"]["status"], "failed", "{add:#}");
    assert_eq!(add["drift"]["code"], "openapi_unreachable");
    let message = add["drift"]["message"].as_str().unwrap();
    assert!(
        message.contains("response_too_large: the answer exceeded the 1024-byte limit"),
        "{message}"
    );
    assert_eq!(checks(add)[0].1, "agreed", "{add:#}");
}

/// A real tool that cannot be reached: every call and the drift failed,
/// exit 2, with the executor's and discovery's reasons.
#[test]
fn an_unreachable_tool_fails_the_verification_with_exit_2() {
    let dir = scratch();
    let file = notes_simulation();
    let out = toolmock(
        &dir,
        &[
            "verify",
            file.to_str().unwrap(),
            "--sandbox-url",
            "notes=http://127.0.0.1:9",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let found = report(&out);
    assert_eq!(found["summary"]["agreed"], 0);
    assert_eq!(found["summary"]["failed"], 3, "{found:#}");
    let add = operation(&found, "notes", "add_note");
    assert_eq!(add["drift"]["status"], "failed");
    assert_eq!(add["drift"]["code"], "openapi_unreachable");
    assert!(
        add["checks"][0]["message"]
            .as_str()
            .unwrap()
            .contains("POST http://127.0.0.1:9/notes/add failed"),
        "{add:#}"
    );
    // The chain's second step is not reached once its first failed.
    let get = operation(&found, "notes", "get_note");
    assert_eq!(get["checks"][2]["reason"], "step_not_reached", "{get:#}");
}

/// Bad input: every problem of a `verify` block at its pointer, flags that
/// cannot be used, a file with nothing to verify — exit 2, nothing called.
#[test]
fn bad_input_is_refused_with_codes_and_pointers() {
    let dir = scratch();
    let mut doc = read(&notes_simulation());
    doc["tools"][0]["verify"]["safe"] = json!(["add_note", "remove_note"]);
    doc["tools"][0]["verify"]["matchers"][0]["pattern"] = json!("(");
    doc["tools"][0]["verify"]["matchers"][1]["tolerance"] = json!(1);
    doc["tools"][0]["verify"]["chains"][0]["steps"][1]["input"]["id"] =
        json!({"$step": "nope.result.id"});
    doc["tools"][0]["verify"]["recordings"] = json!(["no-such-recording"]);
    write(&dir.join("bad.json"), &doc);
    let out = toolmock(&dir, &["verify", "bad.json"]);
    assert_eq!(out.status.code(), Some(2));
    insta::assert_snapshot!("verify_bad_block", text(&out.stderr));

    let out = toolmock(
        &dir,
        &[
            "verify",
            notes_simulation().to_str().unwrap(),
            "--sandbox-url",
            "staging",
            "--sandbox-url",
            "elsewhere=http://127.0.0.1:9",
            "--sandbox-url",
            "notes=ftp://x",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(": /sandbox-url/0: invalid_sandbox_url: \"staging\" is not TOOL=URL"),
        "{stderr}"
    );
    assert!(
        stderr.contains(": /sandbox-url/1: unknown_tool: "),
        "{stderr}"
    );
    assert!(
        stderr.contains(": /sandbox-url/2: invalid_sandbox_url: "),
        "{stderr}"
    );

    // A sandbox-only suite has nothing real to check.
    let out = toolmock(
        &dir,
        &[
            "verify",
            root()
                .join("fixtures/examples/check/sim.json")
                .to_str()
                .unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let out = toolmock(
        &dir,
        &[
            "verify",
            root().join("fixtures/healthplus").to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(": /tools: nothing_to_verify: "),
        "{}",
        text(&out.stderr)
    );
    let out = toolmock(&dir, &["verify", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("holds no simulation.json"));
}
