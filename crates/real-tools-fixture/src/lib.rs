//! What the real-tools tests run against: the project's MCP fixture server
//! (`fixtures/mcp/fixture_server.py`, the official Python SDK, over
//! streamable HTTP, with its schema-breaking `count_visits` tool), a small
//! HTTP server on a thread that answers custom operations and effect nodes
//! and keeps what it was sent, and the real-tools simulation document that
//! uses both. Shared by `toolmock run`'s tests (`bins/cli/tests/real_tools.rs`)
//! and the worker's (`bins/worker/tests/process.rs`): a dev-dependency only,
//! never linked into a shipped binary.

#![forbid(unsafe_code)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // set-up: a failure must stop the test

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn installed(path: PathBuf) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-mcp-servers.sh (MCP servers are installed, never skipped)",
        path.display()
    );
    path
}

/// The fixture MCP server over streamable HTTP on a free port.
#[derive(Debug)]
pub struct McpFixture {
    child: Child,
    /// Its endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
}

impl McpFixture {
    pub fn start() -> Self {
        Self::start_padded(0)
    }

    /// The same server, every call's text content followed by `pad` spaces.
    #[allow(dead_code)] // used by toolmock run's tests, not the worker's
    pub fn start_padded(pad: usize) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(installed(root().join(".cache/mcp-venv/bin/python")))
            .arg(installed(root().join("fixtures/mcp/fixture_server.py")))
            .args(["--http", &format!("127.0.0.1:{port}"), "--broken-tool"])
            .args(["--pad-text", &pad.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let began = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                began.elapsed() < Duration::from_secs(30),
                "the fixture server did not listen"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        McpFixture {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for McpFixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A small HTTP/1.1 server: `POST /notes` answers `{"saved": text,
/// "previous": "real"}`, `POST /hook` answers `{"received": true}`,
/// `POST /broken` answers 500; it keeps every (path, body) it was sent.
#[derive(Debug)]
pub struct HttpFixture {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    pub received: Arc<Mutex<Vec<(String, Value)>>>,
}

impl HttpFixture {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let kept = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { break };
                let kept = kept.clone();
                std::thread::spawn(move || answer(stream, &kept));
            }
        });
        HttpFixture { url, received }
    }

    pub fn bodies(&self, path: &str) -> Vec<Value> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, b)| b.clone())
            .collect()
    }
}

fn answer(stream: TcpStream, kept: &Mutex<Vec<(String, Value)>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("")
        .to_owned();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    kept.lock().unwrap().push((path.clone(), body.clone()));
    let (status, reply) = match path.as_str() {
        "/notes" => ("200 OK", json!({"saved": body["text"], "previous": "real"})),
        "/hook" => ("200 OK", json!({"received": true})),
        _ => (
            "500 Internal Server Error",
            json!({"error": "broken on purpose"}),
        ),
    };
    let reply = reply.to_string();
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
        reply.len()
    );
}

/// The fixture server's contracts as `toolmock discover` prints them:
/// `lookup_patient` and `count_visits`.
pub fn clinic_contracts(toolmock: &Path, mcp_url: &str) -> Value {
    let out = Command::new(toolmock)
        .args(["discover", "--url", mcp_url])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let all: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let kept: Vec<Value> = all
        .into_iter()
        .filter(|e| {
            let name = &e["contract"]["operation"]["name"];
            name == "lookup_patient" || name == "count_visits"
        })
        .collect();
    assert_eq!(kept.len(), 2);
    Value::Array(kept)
}

/// A mock that answers `result` to everything, with its one example.
fn mock(input: Value, result: Value) -> Value {
    json!({
        "schema_version": 1,
        "default_variant": "ok",
        "variants": {"ok": {"result": result}},
        "examples": [{"variant": "ok", "input": input, "expected": result}]
    })
}

/// A real-tools simulation: `clinic` (the fixture server's tools, by
/// `tools/call`), `notes` (a custom operation at `{http}/notes`) and a
/// workflow `notify` whose `http_request` node posts to `{http}/hook`.
/// Case `real` calls all three and passes; case `broken` calls
/// `count_visits`, whose answer breaks its output schema, and is expected
/// to end `harness_error`.
pub fn document(contracts: Value, mcp_url: &str, http: &str) -> Value {
    json!({
        "simulation_version": 1,
        "name": "real tools",
        "mode": "real_tools",
        "tools": [
            {
                "name": "clinic",
                "from": "contracts",
                "contracts": contracts,
                "server": {"url": mcp_url},
                "definitions": {
                    "lookup_patient": mock(json!({"member_id": "M1234567"}), json!({
                        "patient_id": "00000000-0000-4000-8000-000000000000",
                        "first_name": "Mock", "born": "2000-01-01", "visits": 0
                    })),
                    "count_visits": mock(json!({"member_id": "M1234567"}), json!({"visits": 0}))
                }
            },
            {
                "name": "notes",
                "from": "custom",
                "operations": [{
                    "name": "add",
                    "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                    "output_schema": {
                        "type": "object",
                        "properties": {"saved": {"type": "string"}, "previous": {"type": "string"}},
                        "required": ["saved", "previous"]
                    },
                    "endpoint": format!("{http}/notes")
                }],
                "definitions": {"add": mock(json!({"text": "a"}), json!({"saved": "mock", "previous": "mock"}))}
            }
        ],
        "agent": {
            "name": "front desk",
            "tools": ["clinic", "notes", "notify"],
            "workflows": [{
                "name": "notify",
                "nodes": [
                    {"id": "send", "type": "effect", "effect": "http_request",
                     "config": {"url": format!("{http}/hook"), "body": {"note": {"$input": "note"}}},
                     "next": "done"},
                    {"id": "done", "type": "return", "value": {"$node": "send.body"}}
                ]
            }]
        },
        "cases": [
            {
                "name": "real",
                "driver": {"type": "scripted", "steps": [
                    {"tool": "clinic", "operation": "lookup_patient", "arguments": {"member_id": "M1234567"}},
                    {"tool": "notes", "operation": "add", "arguments": {"text": "hello"}},
                    {"workflow": "notify", "arguments": {"note": "sent"}}
                ]}
            },
            {
                "name": "broken",
                "driver": {"type": "scripted", "steps": [
                    {"tool": "clinic", "operation": "count_visits", "arguments": {"member_id": "M1234567"}}
                ]},
                "expect": {"outcome": "harness_error"}
            }
        ]
    })
}
