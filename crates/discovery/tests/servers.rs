//! Discovery against real MCP servers, installed by
//! `scripts/install-mcp-servers.sh` into `.cache/` at the workspace root:
//! the Python SDK fixture server (`fixtures/mcp/fixture_server.py`) over
//! stdio and streamable HTTP, and the published
//! `@modelcontextprotocol/server-everything` over stdio.
//!
//! A missing server fails these tests; it is never skipped.

use serde_json::{Value, json};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use toolmock_discovery::{Discovery, DiscoveryError, Endpoint, Options, discover_blocking};
use toolmock_schema::{ContractEntry, DiscoveryStatus, OutputSchemaSource};

fn root() -> PathBuf {
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

fn python() -> PathBuf {
    installed(root().join(".cache/mcp-venv/bin/python"))
}

fn fixture_script() -> PathBuf {
    installed(root().join("fixtures/mcp/fixture_server.py"))
}

fn everything_entry() -> PathBuf {
    installed(
        root()
            .join(".cache/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
    )
}

fn fixture_stdio() -> Endpoint {
    Endpoint::Stdio {
        program: python().display().to_string(),
        args: vec![fixture_script().display().to_string()],
        cwd: Some(root()),
    }
}

fn everything_stdio() -> Endpoint {
    Endpoint::Stdio {
        program: "node".into(),
        args: vec![everything_entry().display().to_string(), "stdio".into()],
        cwd: Some(root()),
    }
}

fn options() -> Options {
    Options {
        fallback_output_schema: None,
        timeout: Duration::from_secs(90),
    }
}

fn entries(discovery: &Discovery) -> Value {
    Value::Array(
        discovery
            .operations
            .iter()
            .map(|op| {
                serde_json::to_value(ContractEntry::of_discovered(op).expect("hashable"))
                    .expect("serializable")
            })
            .collect(),
    )
}

fn by_name<'a>(discovery: &'a Discovery, name: &str) -> &'a toolmock_schema::DiscoveredOperation {
    discovery
        .operations
        .iter()
        .find(|op| op.operation.name == name)
        .unwrap_or_else(|| panic!("{name} was not discovered"))
}

/// Every ready contract compiles, within the schema complexity bound (issue
/// 11.1); tools without an output schema are compiled with `{}` as one.
fn every_contract_compiles(discovery: &Discovery) {
    for op in &discovery.operations {
        let contract = op
            .contract()
            .unwrap_or_else(|| toolmock_contract::OperationContract {
                operation: op.operation.clone(),
                description: op.description.clone(),
                input_schema: op.input_schema.clone(),
                output_schema: json!({}),
            });
        if let Err(e) = toolmock_evaluator::CompiledContract::new(contract) {
            panic!("{}: {e}", op.operation.name);
        }
    }
}

fn check_fixture(discovery: &Discovery) {
    every_contract_compiles(discovery);
    // Four tools over two pages of two: the client followed nextCursor.
    assert_eq!(discovery.pages, 2);
    let names: Vec<&str> = discovery
        .operations
        .iter()
        .map(|o| o.operation.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "lookup_patient",
            "schedule_appointment",
            "set_priority",
            "send_reminder"
        ]
    );
    assert_eq!(discovery.server.name.as_deref(), Some("toolmock-fixture"));
    // The Python SDK 2.x speaks the 2026-07-28 `server/discover` lifecycle.
    assert_eq!(
        discovery.server.protocol_version.as_deref(),
        Some("2026-07-28")
    );

    let lookup = by_name(discovery, "lookup_patient");
    assert_eq!(lookup.status(), DiscoveryStatus::Ready);
    assert_eq!(lookup.description, "Find a patient by member id");
    assert_eq!(lookup.hints.title.as_deref(), Some("Look up a patient"));
    assert_eq!(
        lookup
            .hints
            .annotations
            .as_ref()
            .and_then(|a| a.get("readOnlyHint")),
        Some(&json!(true))
    );

    let schedule = by_name(discovery, "schedule_appointment");
    let (output, source) = schedule.output.as_ref().expect("an output schema");
    assert_eq!(*source, OutputSchemaSource::Discovered);
    assert_eq!(
        output["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert!(output["$defs"]["appointment"].is_object());
    assert_eq!(
        schedule.input_schema["properties"]["slot"],
        json!({"$ref": "#/$defs/slot"})
    );

    let priority = by_name(discovery, "set_priority");
    assert_eq!(
        priority.input_schema["properties"]["priority"]["enum"],
        json!(["low", "normal", "high", "urgent"])
    );

    let reminder = by_name(discovery, "send_reminder");
    assert_eq!(reminder.status(), DiscoveryStatus::NeedsOutputSchema);
    assert!(reminder.contract().is_none());

    // Nothing the contract does not use leaks into it.
    let text = entries(discovery).to_string();
    for ignored in [
        "icons",
        "execution",
        "_meta",
        "taskSupport",
        "example.com/owner",
    ] {
        assert!(
            !text.contains(ignored),
            "{ignored} leaked into the contracts"
        );
    }

    // Every ready contract yields a draft that passes its check.
    for op in &discovery.operations {
        if let Some(contract) = op.contract() {
            let draft = toolmock_schema::generate(&contract)
                .unwrap_or_else(|e| panic!("{}: {e}", op.operation.name));
            let compiled = toolmock_evaluator::CompiledContract::new(contract).expect("compiles");
            let diagnostics = toolmock_evaluator::check(&draft.to_value(), Some(&compiled));
            assert!(
                diagnostics.is_empty(),
                "{}: {diagnostics}",
                op.operation.name
            );
        }
    }
}

#[test]
fn python_fixture_server_over_stdio() {
    let discovery = discover_blocking(&fixture_stdio(), &options()).expect("discovery succeeds");
    check_fixture(&discovery);
    insta::assert_json_snapshot!("python_fixture", entries(&discovery));
}

/// Kills the server when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn python_fixture_server_over_streamable_http() {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut server = Server(
        Command::new(python())
            .arg(fixture_script())
            .arg("--http")
            .arg(format!("127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the fixture server starts"),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = server.0.try_wait() {
            panic!("the HTTP fixture server exited early: {status}");
        }
        assert!(
            Instant::now() < deadline,
            "the HTTP fixture server did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let endpoint = Endpoint::http(&format!("http://127.0.0.1:{port}/mcp")).expect("a URL");
    let discovery = discover_blocking(&endpoint, &options()).expect("discovery succeeds");
    check_fixture(&discovery);
    // The same contracts whatever the transport.
    let stdio = discover_blocking(&fixture_stdio(), &options()).expect("discovery succeeds");
    assert_eq!(entries(&discovery), entries(&stdio));
}

#[test]
fn fallback_output_schema_makes_tools_ready() {
    let fallback = json!({"type": "object", "properties": {"sent": {"type": "boolean"}}, "required": ["sent"]});
    let discovery = discover_blocking(
        &fixture_stdio(),
        &Options {
            fallback_output_schema: Some(fallback.clone()),
            ..options()
        },
    )
    .expect("discovery succeeds");
    let reminder = by_name(&discovery, "send_reminder");
    assert_eq!(
        reminder.output,
        Some((fallback, OutputSchemaSource::Fallback))
    );
    // A discovered schema still wins over the fallback.
    let lookup = by_name(&discovery, "lookup_patient");
    assert_eq!(
        lookup.output.as_ref().map(|o| o.1),
        Some(OutputSchemaSource::Discovered)
    );
}

#[test]
fn server_everything_over_stdio() {
    let discovery = discover_blocking(&everything_stdio(), &options()).expect("discovery succeeds");
    assert!(
        discovery.operations.len() >= 10,
        "{} tools",
        discovery.operations.len()
    );
    // server-everything (TypeScript SDK 1.x) only knows the initialize
    // handshake: the client fell back to it.
    assert_eq!(
        discovery.server.protocol_version.as_deref(),
        Some("2025-11-25")
    );
    let echo = by_name(&discovery, "echo");
    // Draft-07 schemas (zod-to-json-schema) keep their declared $schema.
    assert_eq!(
        echo.input_schema["$schema"],
        "http://json-schema.org/draft-07/schema#"
    );
    assert_eq!(echo.hints.title.as_deref(), Some("Echo Tool"));
    assert!(
        echo.hints
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key("readOnlyHint"))
    );
    assert_eq!(echo.status(), DiscoveryStatus::NeedsOutputSchema);
    let structured = by_name(&discovery, "get-structured-content");
    assert_eq!(structured.status(), DiscoveryStatus::Ready);
    every_contract_compiles(&discovery);
    let contract = structured.contract().expect("ready");
    contract.hash().expect("hashable");
    toolmock_evaluator::CompiledContract::new(contract.clone()).expect("its schemas compile");
    insta::assert_json_snapshot!("server_everything", entries(&discovery));
}

#[test]
fn unreachable_servers_are_clear_errors() {
    let missing = Endpoint::Stdio {
        program: "/nonexistent/toolmock-no-such-server".into(),
        args: vec![],
        cwd: None,
    };
    let e = discover_blocking(&missing, &options()).expect_err("cannot start");
    assert_eq!(e.code(), "spawn_failed", "{e}");

    let exits = Endpoint::Stdio {
        program: python().display().to_string(),
        args: vec![
            "-c".into(),
            "import sys; sys.stderr.write('no MCP here\\n')".into(),
        ],
        cwd: None,
    };
    let e = discover_blocking(&exits, &options()).expect_err("not an MCP server");
    assert_eq!(e.code(), "connect_failed", "{e}");
    assert!(
        e.to_string().contains("no MCP here"),
        "stderr is shown: {e}"
    );

    assert!(matches!(
        Endpoint::http("ftp://x"),
        Err(DiscoveryError::InvalidUrl { .. })
    ));
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let closed = Endpoint::http(&format!("http://127.0.0.1:{port}/mcp")).expect("a URL");
    let e = discover_blocking(
        &closed,
        &Options {
            timeout: Duration::from_secs(30),
            ..options()
        },
    )
    .expect_err("nothing listens");
    assert_eq!(e.code(), "connect_failed", "{e}");
    // In the user's words: what could not be reached, never rmcp's type names.
    let message = e.to_string();
    assert!(
        message.contains(&format!("cannot reach http://127.0.0.1:{port}/mcp")),
        "{message}"
    );
    assert!(
        !message.contains("Worker") && !message.contains("reqwest"),
        "{message}"
    );
}

/// A server that says nothing for 15 s after it starts (a first `npx -y`
/// still downloading, a slow interpreter) is waited for: the probe's answer
/// is awaited as long as the discovery's timeout allows, and no second
/// handshake is sent on the same connection meanwhile.
#[test]
fn a_server_that_answers_after_15_s_is_waited_for() {
    let slow = Endpoint::Stdio {
        program: "bash".into(),
        args: vec![
            "-c".into(),
            format!(
                "sleep 15; exec '{}' '{}'",
                python().display(),
                fixture_script().display()
            ),
        ],
        cwd: Some(root()),
    };
    let discovery = discover_blocking(&slow, &options()).expect("discovery waits");
    check_fixture(&discovery);
}

/// The same for a server from before 2026-07-28: its answer to the probe is
/// an error, after which it is started again for the `initialize` handshake.
#[test]
fn a_slow_legacy_server_is_waited_for() {
    let slow = Endpoint::Stdio {
        program: "bash".into(),
        args: vec![
            "-c".into(),
            format!(
                "sleep 12; exec node '{}' stdio",
                everything_entry().display()
            ),
        ],
        cwd: Some(root()),
    };
    let discovery = discover_blocking(&slow, &options()).expect("discovery waits");
    assert_eq!(
        discovery.server.protocol_version.as_deref(),
        Some("2025-11-25")
    );
    assert!(!discovery.operations.is_empty());
}

fn fixture_paging(mode: &str) -> Endpoint {
    Endpoint::Stdio {
        program: python().display().to_string(),
        args: vec![
            fixture_script().display().to_string(),
            "--paging".into(),
            mode.into(),
        ],
        cwd: Some(root()),
    }
}

/// A server that hands back the cursor it was given would be listed
/// forever: the second sight of a cursor ends the discovery.
#[test]
fn a_repeated_cursor_is_refused() {
    let e = discover_blocking(&fixture_paging("repeat"), &options()).expect_err("a loop");
    assert_eq!(e.code(), "repeated_cursor", "{e}");
    assert!(e.to_string().contains("\"again\""), "{e}");
}

/// Pages that never end (each with a new cursor) stop at `MAX_PAGES`.
#[test]
fn endless_pages_stop_at_the_page_limit() {
    let e = discover_blocking(&fixture_paging("endless"), &options()).expect_err("too many pages");
    assert_eq!(e.code(), "too_many_pages", "{e}");
    assert!(
        e.to_string()
            .contains(&toolmock_discovery::MAX_PAGES.to_string()),
        "{e}"
    );
}
