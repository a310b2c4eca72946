//! Requests through the router, tokens, a tool with operations, a worker,
//! and the MCP fixture server.

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use toolmock_api::{ApiConfig, AppState, AuthConfig, Claims, mint_hs256, router};
use tower::ServiceExt;

pub(crate) const SECRET: &[u8] = b"test secret, at least thirty-two bytes long";
pub(crate) const MANAGE: &str = "AIManager:ManageTools";
pub(crate) const RUN: &str = "AIManager:RunSimulations";

pub(crate) fn app(pool: &PgPool) -> Router {
    app_with(pool, ApiConfig::default())
}

pub(crate) fn app_with(pool: &PgPool, config: ApiConfig) -> Router {
    let auth = AuthConfig::hs256(SECRET).unwrap();
    router(AppState::new(pool.clone(), auth, config))
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

pub(crate) fn claims(tenant: &str, permissions: &[&str]) -> Claims {
    Claims {
        sub: format!("{tenant}-user"),
        tenant: tenant.into(),
        permissions: permissions.iter().map(|p| (*p).to_owned()).collect(),
        exp: now() + 3600,
        iat: Some(now()),
        iss: None,
        aud: None,
    }
}

pub(crate) fn token(tenant: &str, permissions: &[&str]) -> String {
    mint_hs256(SECRET, &claims(tenant, permissions)).unwrap()
}

/// A response: status, headers and the body as JSON (`Value::Null` when empty).
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) headers: axum::http::HeaderMap,
    pub(crate) bytes: Vec<u8>,
    pub(crate) json: Value,
}

impl Reply {
    /// The error code of an error reply.
    pub(crate) fn code(&self) -> &str {
        self.json["error"]["code"].as_str().unwrap_or("")
    }

    /// The problems listed in an error reply's details; a reply without a
    /// list fails the test.
    pub(crate) fn problems(&self) -> &[Value] {
        self.json["error"]["details"]["problems"]
            .as_array()
            .unwrap_or_else(|| panic!("no problems listed: {}", self.json))
    }
}

pub(crate) async fn raw(app: &Router, request: Request<Body>) -> Reply {
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    let event_stream = headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|c| c.as_bytes().starts_with(b"text/event-stream"));
    let json = if bytes.is_empty() || event_stream {
        Value::Null
    } else {
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&bytes)))
    };
    Reply {
        status,
        headers,
        bytes,
        json,
    }
}

pub(crate) async fn send(
    app: &Router,
    method: Method,
    path: &str,
    bearer: Option<&str>,
    body: Option<&Value>,
) -> Reply {
    let mut request = Request::builder().method(method).uri(path);
    if let Some(token) = bearer {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let body = match body {
        Some(body) => {
            request = request.header(header::CONTENT_TYPE, "application/json");
            Body::from(serde_json::to_vec(body).unwrap())
        }
        None => Body::empty(),
    };
    raw(app, request.body(body).unwrap()).await
}

/// A custom tool `calendar` with `book` (mockable) and `cancel` (no output schema).
pub(crate) fn calendar_tool(name: &str) -> Value {
    json!({
        "name": name,
        "source": {"type": "custom", "operations": [
            {"name": "book", "description": "Book an appointment",
             "input_schema": {"type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"]},
             "output_schema": {"type": "object", "properties": {"reference": {"type": "string"}}, "required": ["reference"]}},
            {"name": "cancel", "input_schema": {"type": "object"}}
        ]}
    })
}

pub(crate) fn booking_definition() -> Value {
    json!({
        "schema_version": 1,
        "default_variant": "success",
        "initial_state": {"reference": "TEST-742"},
        "variants": {"success": {"result": {"reference": {"$state": "reference"}}}},
        "examples": [{"variant": "success", "input": {"day": "2026-01-02"}, "expected": {"reference": "TEST-742"}}]
    })
}

/// The operation `name` of a tool's answer (`GET /api/tools/{id}` and its kin).
pub(crate) fn operation<'a>(tool: &'a Value, name: &str) -> &'a Value {
    tool["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == name)
        .unwrap()
}

/// A created tool: its id and its operations' ids by name.
#[derive(Debug, Clone)]
pub(crate) struct Created {
    pub(crate) id: String,
    pub(crate) book: String,
    pub(crate) cancel: String,
    pub book_hash: String,
}

pub(crate) async fn create_calendar(app: &Router, bearer: &str) -> Created {
    let reply = send(
        app,
        Method::POST,
        "/api/tools",
        Some(bearer),
        Some(&calendar_tool("calendar")),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.json);
    let op = |name: &str| {
        reply.json["operations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == name)
            .unwrap()
            .clone()
    };
    Created {
        id: reply.json["id"].as_str().unwrap().to_owned(),
        book: op("book")["id"].as_str().unwrap().to_owned(),
        cancel: op("cancel")["id"].as_str().unwrap().to_owned(),
        book_hash: op("book")["contract_hash"].as_str().unwrap().to_owned(),
    }
}

/// Saves the booking definition as a revision of `book`.
pub(crate) async fn save_booking(app: &Router, bearer: &str, tool: &Created) -> Reply {
    send(
        app,
        Method::POST,
        &format!("/api/tools/{}/testing", tool.id),
        Some(bearer),
        Some(&json!({"action": "save", "operation_id": tool.book,
                     "contract_hash": tool.book_hash, "definition": booking_definition()})),
    )
    .await
}

/// `POST /api/simulations` with a document.
pub(crate) async fn start(app: &Router, bearer: &str, document: &Value) -> Reply {
    send(
        app,
        Method::POST,
        "/api/simulations",
        Some(bearer),
        Some(document),
    )
    .await
}

/// A simulation document over the library tool `calendar` (by id): one case
/// `books`, played by an external agent, `attempts` attempts.
pub(crate) fn calendar_simulation(tool: &Created, attempts: u32) -> Value {
    json!({
        "simulation_version": 1,
        "name": "calendar checks",
        "allow_incomplete": true,
        "attempts": attempts,
        "tools": [{"name": "calendar", "from": "library", "id": tool.id}],
        "agent": {"name": "receptionist", "tools": ["calendar"]},
        "cases": [{"name": "books", "driver": {"type": "external"},
                   "expect": {"trajectory": [{"kind": "used", "call": {"tool": "calendar", "operation": "book"}}]}}]
    })
}

/// A worker running the queued scripted attempts in this process (the loop
/// `toolmock-api serve --workers N` runs), until [`Worker::stop`].
pub(crate) struct Worker {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<toolmock_worker::Report, toolmock_worker::WorkerError>>,
}

impl Worker {
    pub(crate) fn start(pool: &PgPool) -> Worker {
        Self::start_named(pool, "test-worker")
    }

    /// The tests' servers are all on 127.0.0.1: private targets are
    /// allowed explicitly (a worker's default refuses them).
    pub(crate) fn start_named(pool: &PgPool, owner: &str) -> Worker {
        let agents = toolmock_worker::Agents {
            targets: toolmock_discovery::TargetPolicy::open(),
            ..toolmock_worker::Agents::none()
        };
        Self::start_with(pool, owner, agents)
    }

    /// A worker whose model and http cases are played by `agents`.
    pub(crate) fn start_with(
        pool: &PgPool,
        owner: &str,
        agents: toolmock_worker::Agents,
    ) -> Worker {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let mut config = toolmock_worker::WorkerConfig::new(owner);
        config.poll = std::time::Duration::from_millis(50);
        let store = toolmock_store::PgStore::new(pool.clone());
        let task = tokio::spawn(toolmock_worker::run_with(store, config, agents, async {
            let _ = stopped.await;
        }));
        Worker { stop, task }
    }

    /// Stops claiming, waits for what it holds, and returns its report.
    pub(crate) async fn stop(self) -> toolmock_worker::Report {
        let _ = self.stop.send(());
        self.task.await.unwrap().unwrap()
    }
}

pub(crate) fn installed(relative: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative);
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-mcp-servers.sh (MCP servers are installed, never skipped)",
        path.display()
    );
    path
}

/// The MCP fixture server (`fixtures/mcp/fixture_server.py`, the official
/// Python SDK) over streamable HTTP on a free port; killed when dropped.
pub(crate) struct FixtureServer {
    child: Child,
    /// `http://127.0.0.1:PORT/mcp`.
    pub(crate) url: String,
}

impl FixtureServer {
    pub(crate) fn start() -> Self {
        Self::start_with(&[])
    }

    /// With more of the server's flags (`--calls-log FILE`, …).
    pub(crate) fn start_with(args: &[&str]) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let mut child = Command::new(installed(".cache/mcp-venv/bin/python"))
            .arg(installed("fixtures/mcp/fixture_server.py"))
            .arg("--http")
            .arg(format!("127.0.0.1:{port}"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                child.try_wait().unwrap().is_none(),
                "the fixture server exited early"
            );
            assert!(
                Instant::now() < deadline,
                "the fixture server did not listen"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Self {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for FixtureServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
