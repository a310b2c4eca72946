//! `toolmock record` and `toolmock record emit` end to end, with real
//! servers and a real client (installed by scripts/install-mcp-servers.sh):
//! the official Python SDK client (`fixtures/mcp/clients/replay_client.py`)
//! calls the project's Python fixture server (`--record-tools`) and
//! `@modelcontextprotocol/server-everything` through the recording proxy;
//! the emitted definitions pass `toolmock check`; `toolmock serve` of the
//! emitted simulation, driven by the same client with the recorded calls,
//! answers the recorded results; a redacted value is nowhere on disk.

mod serve_common;

use serde_json::{Value, json};
use serve_common::{installed, python, root, scratch, text};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn toolmock() -> Command {
    Command::new(env!("CARGO_BIN_EXE_toolmock"))
}

fn client_script() -> PathBuf {
    installed(root().join("fixtures/mcp/clients/replay_client.py"))
}

fn fixture_command() -> String {
    format!(
        "{} {} --record-tools",
        python().display(),
        installed(root().join("fixtures/mcp/fixture_server.py")).display()
    )
}

fn everything_command() -> String {
    let entry = installed(
        root()
            .join(".cache/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
    );
    format!("node {} stdio", entry.display())
}

/// Runs the Python SDK client with `calls` against the stdio server
/// `server` (a command and its arguments); its printed report.
fn client(dir: &Path, calls: &Value, server: &[&str]) -> Value {
    let file = dir.join(format!("calls-{}.json", std::process::id()));
    std::fs::write(&file, calls.to_string()).expect("write calls");
    let out = Command::new(python())
        .arg(client_script())
        .arg(&file)
        .arg("--stdio")
        .args(server)
        .current_dir(root())
        .stdin(Stdio::null())
        .output()
        .expect("the client runs");
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&out.stdout), text(&out.stderr)))
}

/// The client's calls through `toolmock record --stdio REAL --out DIR`.
fn record_through_proxy(
    dir: &Path,
    real: &str,
    out: &Path,
    redact: &[&str],
    calls: &Value,
) -> Value {
    let exe = env!("CARGO_BIN_EXE_toolmock");
    let out = out.to_str().expect("utf-8");
    let mut server = vec![exe, "record", "--stdio", real, "--out", out];
    for path in redact {
        server.extend(["--redact", path]);
    }
    client(dir, calls, &server)
}

fn emit(dir: &Path, out: &Path) -> (Output, Value) {
    let output = toolmock()
        .args(["record", "emit"])
        .arg(dir)
        .arg("--out")
        .arg(out)
        .output()
        .expect("emit runs");
    let report = std::fs::read(out.join("report.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    (output, report)
}

fn operation<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["operations"]
        .as_array()
        .expect("operations")
        .iter()
        .find(|o| o["operation"] == name)
        .unwrap_or_else(|| panic!("{name} not in {report}"))
}

/// `toolmock check` of every emitted definition against its contract.
fn check_all(mocks: &Path, report: &Value) {
    for op in report["operations"].as_array().expect("operations") {
        let Some(file) = op["definition"].as_str() else {
            continue;
        };
        let contract = file.replace(".mock.json", ".contract.json");
        let out = toolmock()
            .arg("check")
            .arg(mocks.join(file))
            .arg("--contract")
            .arg(mocks.join(&contract))
            .output()
            .expect("check runs");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{file}: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
    }
}

/// The calls as recorded (redacted), one per line of calls.jsonl.
fn recorded_calls(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("calls.jsonl"))
        .expect("calls.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// Serves the emitted simulation over stdio and replays `calls` (tool and
/// arguments as recorded) with the Python SDK client.
fn replay(dir: &Path, mocks: &Path, calls: &[&Value]) -> Value {
    let replayed: Vec<Value> = calls
        .iter()
        .map(|c| json!({"tool": c["tool"], "arguments": c["arguments"]}))
        .collect();
    let simulation = mocks.join("simulation.json");
    let exe = env!("CARGO_BIN_EXE_toolmock");
    client(
        dir,
        &Value::Array(replayed),
        &[exe, "serve", simulation.to_str().expect("utf-8"), "--stdio"],
    )
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            all.extend(files(&path));
        } else {
            all.push(path);
        }
    }
    all
}

fn assert_nowhere(dir: &Path, secrets: &[&str]) {
    for file in files(dir) {
        let bytes = std::fs::read(&file).expect("read");
        for secret in secrets {
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "{secret:?} is in {}",
                file.display()
            );
        }
    }
}

/// The Python fixture server through the proxy, driven by the Python SDK
/// client: results decided by one input (`room`) become an `eq` rule,
/// echoed inputs become `$input` references, the same input giving
/// different results becomes variants, a result that breaks its own output
/// schema is reported (`check_failed`, with the check's diagnostic), and
/// `guest.ssn` is redacted everywhere on disk — in the recording and in
/// what was emitted — while the client itself saw the real values.
#[test]
fn records_the_python_fixture_server_and_emits_checked_mocks() {
    let dir = scratch();
    let recording = dir.join("recording");
    let mocks = dir.join("mocks");
    let secrets = ["123-45-6789", "987-65-4321", "555-12-3456"];
    let calls = json!([
        {"tool": "book_room", "arguments": {"room": "101", "day": "2026-12-04", "guest": {"name": "Ada", "ssn": secrets[0]}}},
        {"tool": "book_room", "arguments": {"room": "202", "day": "2026-12-05", "guest": {"name": "Bo", "ssn": secrets[1]}}},
        {"tool": "book_room", "arguments": {"room": "attic", "day": "2026-12-04", "guest": {"name": "Ada", "ssn": secrets[2]}}},
        {"tool": "next_ticket", "arguments": {}},
        {"tool": "next_ticket", "arguments": {}},
        {"tool": "broken_total", "arguments": {"order": "O-1"}}
    ]);
    let seen = record_through_proxy(&dir, &fixture_command(), &recording, &["guest.ssn"], &calls);
    // The proxy serves the real server's tools and answers as it answers.
    assert_eq!(
        seen["tools"],
        json!(["book_room", "next_ticket", "broken_total"])
    );
    assert_eq!(
        seen["calls"][0]["result"]["structuredContent"]["guest"]["ssn"],
        secrets[0]
    );
    assert_eq!(
        seen["calls"][4]["result"]["structuredContent"],
        json!({"ticket": 2})
    );
    let recorded = recorded_calls(&recording);
    assert_eq!(recorded.len(), 6);
    assert_eq!(recorded[0]["arguments"]["guest"]["ssn"], "[redacted]");
    let (out, report) = emit(&recording, &mocks);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let listing = text(&out.stdout);
    assert!(
        listing.contains("broken_total: skipped: check_failed"),
        "{listing}"
    );
    // book_room: one variant, the full attic as a rule on `room`, echoes as $input.
    assert_eq!(operation(&report, "book_room")["status"], "emitted");
    let book: Value = serde_json::from_slice(
        &std::fs::read(mocks.join("book_room.mock.json")).expect("book_room emitted"),
    )
    .expect("JSON");
    let variant = &book["variants"]["recorded"];
    assert_eq!(variant["result"]["room"], json!({"$input": "room"}));
    assert_eq!(variant["result"]["day"], json!({"$input": "day"}));
    assert_eq!(variant["result"]["guest"]["ssn"], "[redacted]");
    assert_eq!(
        variant["rules"],
        json!([{"when": [{"source": "input", "path": "room", "op": "eq", "value": "attic"}],
                "result": {"status": "full", "reference": "NONE"}}])
    );
    assert_eq!(book["examples"].as_array().expect("examples").len(), 3);
    // next_ticket: the same input gave 1 then 2: two variants.
    let ticket: Value = serde_json::from_slice(
        &std::fs::read(mocks.join("next_ticket.mock.json")).expect("next_ticket emitted"),
    )
    .expect("JSON");
    assert_eq!(
        ticket["variants"],
        json!({"result_1": {"result": {"ticket": 1}}, "result_2": {"result": {"ticket": 2}}})
    );
    let broken = operation(&report, "broken_total");
    assert_eq!(broken["code"], "check_failed");
    assert_eq!(broken["diagnostics"][0]["code"], "example_result_invalid");
    assert_eq!(broken["diagnostics"][0]["path"], "/examples/0/expected");
    check_all(&mocks, &report);
    // Served back, the recorded calls get the recorded results (next_ticket
    // answers its default variant, the first recorded result).
    let replayable: Vec<&Value> = recorded.iter().take(4).collect();
    let replayed = replay(&dir, &mocks, &replayable);
    assert_eq!(replayed["tools"], json!(["book_room", "next_ticket"]));
    for (i, call) in replayable.iter().enumerate() {
        assert_eq!(
            replayed["calls"][i]["result"]["structuredContent"],
            call["result"]["structuredContent"],
            "call {i}"
        );
    }
    assert_nowhere(&recording, &secrets);
    assert_nowhere(&mocks, &secrets);
}

/// server-everything (the TypeScript SDK's reference server) through the
/// proxy: `get-structured-content` answers by `location` (three rules'
/// worth: one default and two `eq` rules), `echo` and `get-sum` answer
/// text only and declare no output schema (`needs_output_schema`); the
/// emitted definition passes `toolmock check` and, served back, replays
/// the recorded results.
#[test]
fn records_server_everything_and_replays_it() {
    let dir = scratch();
    let recording = dir.join("recording");
    let mocks = dir.join("mocks");
    let calls = json!([
        {"tool": "get-structured-content", "arguments": {"location": "New York"}},
        {"tool": "get-structured-content", "arguments": {"location": "Chicago"}},
        {"tool": "get-structured-content", "arguments": {"location": "Los Angeles"}},
        {"tool": "get-structured-content", "arguments": {"location": "Chicago"}},
        {"tool": "echo", "arguments": {"message": "hello"}},
        {"tool": "get-sum", "arguments": {"a": 2, "b": 3}}
    ]);
    let seen = record_through_proxy(&dir, &everything_command(), &recording, &[], &calls);
    assert_eq!(
        seen["calls"][5]["result"]["content"][0]["text"],
        "The sum of 2 and 3 is 5."
    );
    let (out, report) = emit(&recording, &mocks);
    // echo and get-sum cannot be emitted: exit 1, each with its reason.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(operation(&report, "echo")["code"], "needs_output_schema");
    assert_eq!(operation(&report, "get-sum")["code"], "needs_output_schema");
    let weather = operation(&report, "get-structured-content");
    assert_eq!(weather["status"], "emitted", "{report}");
    let definition: Value = serde_json::from_slice(
        &std::fs::read(mocks.join("get-structured-content.mock.json")).expect("emitted"),
    )
    .expect("JSON");
    let rules = definition["variants"]["recorded"]["rules"]
        .as_array()
        .expect("rules");
    assert_eq!(rules.len(), 2, "{definition}");
    for rule in rules {
        assert_eq!(rule["when"][0]["path"], "location");
        assert_eq!(rule["when"][0]["op"], "eq");
    }
    check_all(&mocks, &report);
    let recorded = recorded_calls(&recording);
    let replayable: Vec<&Value> = recorded
        .iter()
        .filter(|c| c["tool"] == "get-structured-content")
        .collect();
    let replayed = replay(&dir, &mocks, &replayable);
    for (i, call) in replayable.iter().enumerate() {
        assert_eq!(
            replayed["calls"][i]["result"]["structuredContent"],
            call["result"]["structuredContent"],
            "call {i}"
        );
    }
}

fn failing(args: &[&str], stdin: Stdio) -> (i32, String) {
    let out = toolmock().args(args).stdin(stdin).output().expect("runs");
    (out.status.code().unwrap_or(-1), text(&out.stderr))
}

/// Bad input: an unreachable or unstartable server, a bad redaction path,
/// an unreadable or malformed recording, and a recording with no calls —
/// each exits 2 with its code (and its JSON pointer where it has one).
#[test]
fn bad_input_is_refused_with_codes_and_paths() {
    let dir = scratch();
    let out = dir.join("rec");
    let out_s = out.to_str().expect("utf-8");
    let (code, stderr) = failing(
        &[
            "record",
            "--url",
            "http://127.0.0.1:9/mcp",
            "--out",
            out_s,
            "--timeout",
            "10",
        ],
        Stdio::null(),
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("connect_failed"), "{stderr}");
    let (code, stderr) = failing(
        &["record", "--stdio", "/no/such/server", "--out", out_s],
        Stdio::null(),
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("spawn_failed"), "{stderr}");
    let (code, stderr) = failing(
        &[
            "record",
            "--stdio",
            &fixture_command(),
            "--out",
            out_s,
            "--redact",
            "guest",
            "guest..ssn",
        ],
        Stdio::null(),
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("/redact/1: invalid_redact_path"),
        "{stderr}"
    );
    // A client that lists the tools and calls nothing: an empty recording.
    let seen = record_through_proxy(&dir, &fixture_command(), &out, &[], &json!([]));
    assert_eq!(seen["calls"], json!([]));
    let (code, stderr) = failing(&["record", "emit", out_s], Stdio::null());
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("empty_recording"), "{stderr}");
    let (code, stderr) = failing(&["record", "emit", "/no/such/recording"], Stdio::null());
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("unreadable_recording"), "{stderr}");
    std::fs::write(
        out.join("calls.jsonl"),
        "{\"tool\": \"book_room\", \"result\": {}}\nnot json\n",
    )
    .expect("write");
    let (code, stderr) = failing(&["record", "emit", out_s], Stdio::null());
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("/calls/1: invalid_recording"), "{stderr}");
    assert!(
        !out.join("mocks").exists(),
        "nothing is emitted from a bad recording"
    );
}

/// `record --help` and `record emit --help` each document themselves with
/// an example.
#[test]
fn record_and_emit_document_themselves_with_an_example() {
    for args in [&["record", "--help"][..], &["record", "emit", "--help"][..]] {
        let out = toolmock().args(args).output().expect("runs");
        assert_eq!(out.status.code(), Some(0));
        let help = text(&out.stdout);
        assert!(help.contains("Example"), "{args:?}: {help}");
        assert!(help.contains("toolmock record emit"), "{args:?}: {help}");
    }
}

/// The real server reached over streamable HTTP (`--url`): the fixture
/// server on a free port, recorded through the proxy and emitted.
#[test]
fn records_a_server_reached_over_http() {
    let dir = scratch();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("its address")
        .port();
    let mut server = Command::new(python())
        .arg(installed(root().join("fixtures/mcp/fixture_server.py")))
        .args(["--record-tools", "--http", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the fixture server starts");
    let began = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            began.elapsed() < std::time::Duration::from_secs(30),
            "the fixture server did not listen"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let recording = dir.join("recording");
    let exe = env!("CARGO_BIN_EXE_toolmock");
    let url = format!("http://127.0.0.1:{port}/mcp");
    let calls = json!([
        {"tool": "book_room", "arguments": {"room": "101", "day": "2026-12-04", "guest": {"name": "Ada", "ssn": "1"}}},
        {"tool": "book_room", "arguments": {"room": "attic", "day": "2026-12-04", "guest": {"name": "Ada", "ssn": "1"}}}
    ]);
    let seen = client(
        &dir,
        &calls,
        &[
            exe,
            "record",
            "--url",
            &url,
            "--out",
            recording.to_str().expect("utf-8"),
        ],
    );
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(
        seen["calls"][1]["result"]["structuredContent"],
        json!({"status": "full", "reference": "NONE"})
    );
    assert_eq!(recorded_calls(&recording).len(), 2);
    let mocks = dir.join("mocks");
    let (_, report) = emit(&recording, &mocks);
    assert_eq!(
        operation(&report, "book_room")["status"],
        "emitted",
        "{report}"
    );
    check_all(&mocks, &report);
}
