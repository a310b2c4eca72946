//! Issue 32, items 1 and 2, on `toolmock serve` (the real binary, real
//! delays): over `--http` and over `--stdio`, a client that hangs up while a
//! call's delay runs gives the harness error `answer_lost` and its attempt
//! cannot pass; a delay at the longest a definition may ask for
//! (`delay_ms: 30000`) is answered and its attempt passes.

mod serve_common;

use serde_json::{Value, json};
use serve_common::{Served, StdioServed, post, read_results, scratch};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// A simulation of one operation, `wait`, that answers after `delay_ms`,
/// and one external case with no expectations: only a harness error can
/// fail it.
fn slow(delay_ms: u64) -> PathBuf {
    let document = json!({
        "simulation_version": 1,
        "name": "slow",
        "tools": [{
            "name": "slow",
            "from": "custom",
            "operations": [{"name": "wait", "description": "Waits",
                            "input_schema": {"type": "object"},
                            "output_schema": {"type": "object", "required": ["ok"]}}],
            "definitions": {"wait": {
                "schema_version": 1,
                "default_variant": "ok",
                "variants": {"ok": {"result": {"ok": true}, "delay_ms": delay_ms}},
                "examples": [{"variant": "ok", "input": {}, "expected": {"ok": true}}]
            }}
        }],
        "agent": {"name": "waiter", "tools": ["slow"]},
        "cases": [{"name": "waits", "driver": {"type": "external"}}]
    });
    let path = scratch().join("slow.json");
    std::fs::write(&path, document.to_string()).expect("write the simulation");
    path
}

fn wait_call(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "wait", "arguments": {}}})
}

fn codes(attempt: &Value) -> Vec<&str> {
    attempt["harness_errors"]
        .as_array()
        .expect("harness errors")
        .iter()
        .map(|e| e["code"].as_str().expect("code"))
        .collect()
}

/// `--http`: the client sends `tools/call` and closes its connection during
/// the call's 3 s delay. The finish (sent at once: it waits for the running
/// call) judges the attempt `harness_error`, with `answer_lost`.
#[test]
fn http_client_hanging_up_mid_delay_loses_the_attempt() {
    let served = Served::start(&slow(3000), &["--real-delays"]);
    let address = served.base.trim_start_matches("http://").to_owned();
    let mut socket = std::net::TcpStream::connect(&address).expect("connect");
    let body = wait_call(1).to_string();
    write!(
        socket,
        "POST /attempts/1/mcp HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("send the call");
    std::thread::sleep(Duration::from_millis(700));
    drop(socket);
    let (status, attempt) = post(&format!("{}/attempts/1/finish", served.base), None);
    assert_eq!(status, 200, "{attempt}");
    assert_eq!(attempt["outcome"], "harness_error", "{attempt}");
    assert_eq!(codes(&attempt), ["answer_lost"], "{attempt}");
}

/// `--http`: a call whose delay is the documented maximum is answered, and
/// its attempt passes.
#[test]
fn http_call_at_the_maximum_delay_is_answered() {
    let served = Served::start(&slow(30_000), &["--real-delays"]);
    let (status, answer) = post(&served.url(1), Some(&wait_call(1)));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["structuredContent"], json!({"ok": true}));
    let (status, attempt) = post(&format!("{}/attempts/1/finish", served.base), None);
    assert_eq!(status, 200, "{attempt}");
    assert_eq!(attempt["outcome"], "passed", "{attempt}");
}

/// `--stdio`: the client sends `tools/call` and closes both its pipes during
/// the call's 3 s delay. The answer cannot be written; the process records
/// it lost, ends the attempt `harness_error` and exits 1.
#[test]
fn stdio_client_hanging_up_mid_delay_loses_the_attempt() {
    let results = scratch().join("results.json");
    let mut served = StdioServed::serve(
        &slow(3000),
        &["--real-delays", "--json", results.to_str().expect("utf-8")],
    );
    served.send(&wait_call(1));
    std::thread::sleep(Duration::from_millis(700));
    served.hang_up();
    assert_eq!(served.exit_code(), 1);
    let results = read_results(&results);
    let attempt = &results["cases"][0]["attempts"][0];
    assert_eq!(attempt["outcome"], "harness_error", "{results}");
    assert_eq!(codes(attempt), ["answer_lost"], "{results}");
}

/// `--stdio`: a call whose delay is the documented maximum is answered;
/// the client then closes stdin and the attempt passes.
#[test]
fn stdio_call_at_the_maximum_delay_is_answered() {
    let results = scratch().join("results.json");
    let mut served = StdioServed::serve(
        &slow(30_000),
        &["--real-delays", "--json", results.to_str().expect("utf-8")],
    );
    let answer = served.call(1, "wait", json!({}));
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({"ok": true}),
        "{answer}"
    );
    served.close_stdin();
    assert_eq!(served.exit_code(), 0);
    let results = read_results(&results);
    assert_eq!(
        results["cases"][0]["attempts"][0]["outcome"], "passed",
        "{results}"
    );
}
