//! The local OpenAI-compatible conversation server
//! (`fixtures/conversation-server/`) and a scratch folder, for the tests
//! that run model-driven cases through the real `toolmock` binary.

#![allow(dead_code, clippy::unwrap_used)]

use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The conversation server, killed when dropped.
pub(crate) struct Server {
    child: Child,
    /// Its base URL (`…/v1`).
    pub(crate) url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn server() -> Server {
    server_with(&[])
}

pub(crate) fn server_with(args: &[&str]) -> Server {
    let python = root().join(".cache/test-venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/install-test-tools.sh",
        python.display()
    );
    let mut child = Command::new(python)
        .arg(root().join("fixtures/conversation-server/server.py"))
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("the conversation server starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("its port");
    let port: u16 = line.trim().parse().expect("a port");
    Server {
        child,
        url: format!("http://127.0.0.1:{port}/v1"),
    }
}

pub(crate) fn scratch() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "agents-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A GET through `curl`-free std networking (`…/v1/..` is the server's
/// root): its JSON body, e.g. the server's request counts.
pub(crate) fn reqwest_get(url: &str) -> Value {
    use std::io::{Read, Write};
    let url = url.replace("/v1/..", "");
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    write!(
        stream,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let body = text.split_once("\r\n\r\n").unwrap().1;
    serde_json::from_str(body).unwrap()
}

/// `toolmock ARGS` in `dir` with `envs` and none of the caller's
/// `TOOLMOCK_*` variables (a model configured outside the test never
/// reaches it); a run that hangs (a model kept waiting for) is killed
/// after 300 s, not waited for.
pub(crate) fn toolmock(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut command = Command::new("timeout");
    command
        .args(["-s", "KILL", "300", env!("CARGO_BIN_EXE_toolmock")])
        .current_dir(dir)
        .args(args);
    for (var, _) in std::env::vars() {
        if var.starts_with("TOOLMOCK_") {
            command.env_remove(var);
        }
    }
    command.envs(envs.iter().copied());
    command.output().expect("toolmock runs")
}

/// Every attempt of a results document, with its case's name.
pub(crate) fn attempts(results: &Value) -> Vec<(String, Value)> {
    let mut all = Vec::new();
    for case in results["cases"].as_array().unwrap() {
        for attempt in case["attempts"].as_array().unwrap() {
            all.push((case["name"].as_str().unwrap().to_owned(), attempt.clone()));
        }
    }
    all
}

/// The notes tool (the agent's), the phone tool (the user's: `unlock`
/// sets `unlocked`) and `cases`.
pub(crate) fn notes_with_a_customer(cases: Value) -> Value {
    json!({
        "simulation_version": 1,
        "name": "notes with a customer",
        "tools": [
            {"name": "notes", "from": "custom",
             "operations": [{"name": "add", "description": "Adds a note.",
                "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                "output_schema": {"type": "object", "required": ["id"]}}],
             "definitions": {"add": {
                "schema_version": 1, "default_variant": "ok",
                "variants": {"ok": {"result": {"id": "n-1"}, "set_state": {"last": {"$input": "text"}}}},
                "examples": [{"variant": "ok", "input": {"text": "a"}, "expected": {"id": "n-1"}}]}}},
            {"name": "phone", "from": "custom",
             "operations": [{"name": "unlock", "description": "Unlocks the user's phone.",
                "input_schema": {"type": "object"}, "output_schema": {"type": "object"}}],
             "definitions": {"unlock": {
                "schema_version": 1, "default_variant": "ok",
                "variants": {"ok": {"result": {"unlocked": true}, "set_state": {"unlocked": true}}},
                "examples": [{"variant": "ok", "input": {}, "expected": {"unlocked": true}}]}}}
        ],
        "agent": {"name": "scribe", "prompt": "You keep notes.", "tools": ["notes"]},
        "cases": cases
    })
}

/// Writes `document` as `dir/sim.json` and runs `toolmock ARGS` there (with
/// `envs`, as [`toolmock`]): what it printed, and the results document it
/// printed (`--json`).
pub(crate) fn run_json(
    dir: &Path,
    document: &Value,
    args: &[&str],
    envs: &[(&str, &str)],
) -> (Output, Value) {
    std::fs::write(
        dir.join("sim.json"),
        serde_json::to_vec_pretty(document).unwrap(),
    )
    .unwrap();
    let out = toolmock(dir, args, envs);
    let results: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out, results)
}

/// The first attempt of the first case of a results document.
pub(crate) fn first_attempt(results: &Value) -> &Value {
    &results["cases"][0]["attempts"][0]
}
