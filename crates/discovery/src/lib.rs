//! Discovery of MCP tools: the thin I/O adapter between a live MCP server and
//! `toolmock-schema`.
//!
//! [`discover`] connects with the official `rmcp` client (client features
//! only) to a server, either a spawned command speaking stdio
//! ([`Endpoint::Stdio`]) or a streamable HTTP endpoint ([`Endpoint::Http`]),
//! lists every tool by following `nextCursor` page by page, and hands the
//! pages to [`toolmock_schema::normalize_pages`], which normalizes each tool to an
//! operation with source `mcp`: input schema as discovered, output schema as
//! discovered, else the library tool's own ([`Options::fallback_output_schema`]),
//! else status `needs_output_schema`. Fields the contract does not use
//! (`icons`, `execution`, `_meta`) are ignored; a declared `$schema` is kept;
//! `title` and `annotations` are kept as untrusted hints.
//!
//! Discovery never calls a tool. The one thing here that does is
//! [`RealExecutor`], the real handlers of an explicit `real_tools` run:
//! `tools/call` on an MCP server (the same client), a `POST` to a custom
//! operation's HTTP endpoint, an `http_request` effect node. Nothing here
//! writes a file; every rule about what a contract is lives in
//! `toolmock-schema`.
//!
//! ```
//! use toolmock_discovery::Endpoint;
//!
//! // `--stdio` command lines are split like a shell would, without expansion.
//! let endpoint = Endpoint::stdio_command_line("python3 'my server.py' --page-size 2")?;
//! assert_eq!(
//!     endpoint,
//!     Endpoint::Stdio {
//!         program: "python3".into(),
//!         args: vec!["my server.py".into(), "--page-size".into(), "2".into()],
//!         cwd: None,
//!     }
//! );
//! assert!(Endpoint::http("ftp://example.com").is_err());
//! # Ok::<(), toolmock_discovery::DiscoveryError>(())
//! ```
//!
//! Discovering (this needs a server; see `scripts/install-mcp-servers.sh`):
//!
//! ```no_run
//! use toolmock_discovery::{Endpoint, Options, discover_blocking};
//!
//! let endpoint = Endpoint::stdio_command_line(".cache/mcp-venv/bin/python fixtures/mcp/fixture_server.py")?;
//! let discovery = discover_blocking(&endpoint, &Options::default())?;
//! for op in &discovery.operations {
//!     println!("{} {}", op.operation.name, op.status().as_str());
//! }
//! # Ok::<(), toolmock_discovery::DiscoveryError>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod body;
mod command_line;
mod failure;
mod flags;
mod real;
mod targets;

pub use body::{BodyError, DEFAULT_MAX_RESPONSE_BYTES, read_body};
pub use command_line::split_command_line;
pub use failure::FailureClass;
pub use flags::RealToolFlags;
pub use real::{RealAnswer, RealExecutor};
pub use targets::{TargetError, TargetPolicy};

use rmcp::model::{
    ClientCapabilities, ClientConfig, ErrorCode, Implementation, PaginatedRequestParams,
    ProtocolVersion,
};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, RoleClient, RunningService,
    serve_client_with_lifecycle,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use toolmock_contract::problem_codes;
use toolmock_schema::{DiscoveredOperation, NormalizeProblems};

/// The most `tools/list` pages one discovery reads before refusing the server.
pub const MAX_PAGES: usize = 1000;

/// How much of a spawned server's stderr is kept for error messages.
const STDERR_TAIL_BYTES: usize = 4096;

/// Where the MCP server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A command to spawn; it speaks MCP over its stdin and stdout.
    Stdio {
        /// The program (looked up on `PATH` when it has no slash).
        program: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its working directory (default: the caller's).
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint, e.g. `http://127.0.0.1:8000/mcp`.
    Http {
        /// The endpoint's URL.
        url: String,
    },
}

impl Endpoint {
    /// A stdio endpoint from a command line such as `"python3 server.py --flag"`
    /// (split like a POSIX shell would: quotes and backslashes, no expansion).
    pub fn stdio_command_line(command_line: &str) -> Result<Self, DiscoveryError> {
        let mut words = split_command_line(command_line)?.into_iter();
        let Some(program) = words.next() else {
            return Err(DiscoveryError::InvalidCommand {
                reason: "the command is empty".into(),
            });
        };
        Ok(Endpoint::Stdio {
            program,
            args: words.collect(),
            cwd: None,
        })
    }

    /// A streamable HTTP endpoint; the URL must be `http://` or `https://`.
    pub fn http(url: &str) -> Result<Self, DiscoveryError> {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(DiscoveryError::InvalidUrl {
                url: url.to_owned(),
            });
        }
        Ok(Endpoint::Http {
            url: url.to_owned(),
        })
    }
}

/// How to discover.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The library tool's own `output_schema`: used for every tool the server
    /// gives no `outputSchema` (docs/spec.md §9).
    pub fallback_output_schema: Option<Value>,
    /// The whole discovery (connect, every page) must finish within this.
    pub timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fallback_output_schema: None,
            timeout: Duration::from_secs(60),
        }
    }
}

/// What a server said about itself (untrusted, informational).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerDescription {
    /// The implementation's name.
    pub name: Option<String>,
    /// Its version.
    pub version: Option<String>,
    /// The negotiated MCP protocol revision.
    pub protocol_version: Option<String>,
}

/// The result of one discovery.
#[derive(Debug, Clone, PartialEq)]
pub struct Discovery {
    /// What the server said about itself.
    pub server: ServerDescription,
    /// How many `tools/list` pages were read.
    pub pages: usize,
    /// Every tool, in listing order, normalized.
    pub operations: Vec<DiscoveredOperation>,
}

/// Why a discovery failed.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    /// The `--stdio` command line cannot be split into words.
    #[error("the command cannot be used: {reason}")]
    InvalidCommand {
        /// Why.
        reason: String,
    },
    /// The URL is not `http://` or `https://`.
    #[error("{url:?} is not an http:// or https:// URL")]
    InvalidUrl {
        /// The URL given.
        url: String,
    },
    /// The server process could not be started.
    #[error("cannot start {program:?}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The MCP handshake failed (the server exited, spoke no MCP, refused us).
    #[error("cannot connect to the MCP server: {message}{stderr}")]
    Connect {
        /// The client's explanation (may quote what the server sent: for
        /// the person who runs the discovery, not for a third party).
        message: String,
        /// The failure's class, which quotes nothing.
        class: FailureClass,
        /// The end of the server's stderr, when it was spawned (may be empty).
        stderr: String,
    },
    /// A `tools/list` request failed.
    #[error("tools/list page {page} failed: {message}{stderr}")]
    ListTools {
        /// The page number (1 is the first).
        page: usize,
        /// The client's explanation (may quote what the server sent).
        message: String,
        /// The failure's class, which quotes nothing.
        class: FailureClass,
        /// The end of the server's stderr, when it was spawned (may be empty).
        stderr: String,
    },
    /// A server sent a cursor it had already sent: it would never finish.
    #[error("the server repeated the cursor {cursor:?}; refusing to loop")]
    RepeatedCursor {
        /// The cursor.
        cursor: String,
    },
    /// More than [`MAX_PAGES`] pages.
    #[error("the server listed more than {MAX_PAGES} pages of tools")]
    TooManyPages,
    /// The discovery did not finish in time.
    #[error("discovery did not finish within {seconds} s")]
    Timeout {
        /// The limit.
        seconds: u64,
    },
    /// The tools the server listed cannot be normalized (every problem listed).
    #[error("the server's tools cannot be normalized:\n{0}")]
    InvalidTools(#[source] NormalizeProblems),
    /// A page could not be turned into JSON (never expected).
    #[error("a tools/list page could not be read as JSON: {0}")]
    Page(#[source] serde_json::Error),
    /// The async runtime could not be started ([`discover_blocking`]).
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

problem_codes! {
    /// The codes of [`DiscoveryError`].
    pub enum DiscoveryCode {
        /// The `--stdio` command line cannot be split into words.
        InvalidCommand => "invalid_command",
        /// The URL is not `http://` or `https://`.
        InvalidUrl => "invalid_url",
        /// The server process could not be started.
        SpawnFailed => "spawn_failed",
        /// The MCP handshake failed.
        ConnectFailed => "connect_failed",
        /// A `tools/list` request failed.
        ListToolsFailed => "list_tools_failed",
        /// The server repeated a cursor.
        RepeatedCursor => "repeated_cursor",
        /// The server listed more than 1000 pages.
        TooManyPages => "too_many_pages",
        /// The discovery did not finish within its timeout.
        Timeout => "timeout",
        /// The tools the server listed cannot be normalized.
        InvalidTools => "invalid_tools",
        /// A page could not be turned into JSON.
        InvalidPage => "invalid_page",
        /// The async runtime could not be started.
        RuntimeFailed => "runtime_failed",
    }
}

impl From<&DiscoveryError> for DiscoveryCode {
    fn from(error: &DiscoveryError) -> Self {
        match error {
            DiscoveryError::InvalidCommand { .. } => DiscoveryCode::InvalidCommand,
            DiscoveryError::InvalidUrl { .. } => DiscoveryCode::InvalidUrl,
            DiscoveryError::Spawn { .. } => DiscoveryCode::SpawnFailed,
            DiscoveryError::Connect { .. } => DiscoveryCode::ConnectFailed,
            DiscoveryError::ListTools { .. } => DiscoveryCode::ListToolsFailed,
            DiscoveryError::RepeatedCursor { .. } => DiscoveryCode::RepeatedCursor,
            DiscoveryError::TooManyPages => DiscoveryCode::TooManyPages,
            DiscoveryError::Timeout { .. } => DiscoveryCode::Timeout,
            DiscoveryError::InvalidTools(_) => DiscoveryCode::InvalidTools,
            DiscoveryError::Page(_) => DiscoveryCode::InvalidPage,
            DiscoveryError::Runtime(_) => DiscoveryCode::RuntimeFailed,
        }
    }
}

impl DiscoveryError {
    /// What kind of failure this is, in words that hold nothing the server
    /// sent: what a service may show to someone other than the server's
    /// operator (the API shows only this).
    pub fn failure_class(&self) -> FailureClass {
        match self {
            DiscoveryError::Connect { class, .. } | DiscoveryError::ListTools { class, .. } => {
                *class
            }
            DiscoveryError::Timeout { .. } => FailureClass::TimedOut,
            DiscoveryError::InvalidTools(_) => FailureClass::InvalidTools,
            DiscoveryError::RepeatedCursor { .. }
            | DiscoveryError::TooManyPages
            | DiscoveryError::Page(_) => FailureClass::NotMcp,
            DiscoveryError::InvalidCommand { .. }
            | DiscoveryError::InvalidUrl { .. }
            | DiscoveryError::Spawn { .. }
            | DiscoveryError::Runtime(_) => FailureClass::Local,
        }
    }

    /// A stable, machine-readable code.
    pub fn code(&self) -> &'static str {
        DiscoveryCode::from(self).as_str()
    }
}

/// Discovers every tool of the server at `endpoint`.
pub async fn discover(endpoint: &Endpoint, options: &Options) -> Result<Discovery, DiscoveryError> {
    match tokio::time::timeout(options.timeout, discover_untimed(endpoint, options)).await {
        Ok(result) => result,
        Err(_) => Err(DiscoveryError::Timeout {
            seconds: options.timeout.as_secs(),
        }),
    }
}

/// [`discover`] on a runtime of its own, for callers that are not async.
pub fn discover_blocking(
    endpoint: &Endpoint,
    options: &Options,
) -> Result<Discovery, DiscoveryError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(DiscoveryError::Runtime)?;
    runtime.block_on(discover(endpoint, options))
}

fn client_info() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("toolmock", env!("CARGO_PKG_VERSION")),
    )
}

/// The two MCP lifecycles, tried in this order: the 2026-07-28
/// `server/discover` probe, then (for a server that answers it with a
/// JSON-RPC error, i.e. one that predates it) the `initialize` handshake of
/// 2025-06-18 … 2025-11-25 on a fresh connection.
///
/// rmcp's own `ClientLifecycleMode::Auto` is not used: it gives the probe a
/// fixed 10 s and then sends `initialize` on the same connection, so a server
/// that takes longer to start answers the probe (id 0) where the client
/// expects the `initialize` answer (id 1), and the discovery fails however
/// long `--timeout` is. Here each answer is awaited for as long as the
/// discovery's own timeout allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handshake {
    Discover,
    Initialize,
}

impl Handshake {
    fn mode(self) -> ClientLifecycleMode {
        match self {
            Handshake::Discover => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
            Handshake::Initialize => ClientLifecycleMode::Initialize,
        }
    }

    fn client_info(self) -> ClientConfig {
        let mut info = client_info();
        if self == Handshake::Initialize {
            info.protocol_version = ProtocolVersion::V_2025_11_25;
        }
        info
    }
}

/// Whether a failed `server/discover` probe means "a server from before
/// 2026-07-28": a correlated JSON-RPC error that is not one of the modern
/// rejections (the rule rmcp's `Auto` mode applies).
fn is_legacy_answer(error: &ClientInitializeError) -> bool {
    matches!(
        error,
        ClientInitializeError::JsonRpcError(data)
            if data.code != ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
                && data.code != ErrorCode::HEADER_MISMATCH
    )
}

/// What went wrong while connecting, in the user's words: the transport's
/// own error chain, never the client's internal type names.
fn connect_message(endpoint: &Endpoint, error: &ClientInitializeError) -> String {
    fn chain(error: &(dyn std::error::Error + 'static)) -> String {
        let mut text = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            let cause_text = cause.to_string();
            if !text.contains(&cause_text) {
                text.push_str(": ");
                text.push_str(&cause_text);
            }
            source = cause.source();
        }
        text
    }
    let place = match endpoint {
        Endpoint::Stdio { program, .. } => format!("the server started by {program:?}"),
        Endpoint::Http { url } => url.clone(),
    };
    match error {
        ClientInitializeError::TransportError { error, context } => match endpoint {
            Endpoint::Http { url } => {
                format!(
                    "cannot reach {url} ({context}): {}",
                    chain(error.error.as_ref())
                )
            }
            Endpoint::Stdio { .. } => format!(
                "cannot talk to {place} ({context}): {}",
                chain(error.error.as_ref())
            ),
        },
        ClientInitializeError::ConnectionClosed(context) => {
            format!("{place} closed the connection before it answered ({context})")
        }
        ClientInitializeError::JsonRpcError(data) => {
            format!("{place} refused the MCP handshake: {}", data.message)
        }
        other => format!("{place} did not complete the MCP handshake: {other}"),
    }
}

/// The end of a spawned server's stderr, collected in the background.
#[derive(Default)]
struct StderrTail(Option<tokio::task::JoinHandle<String>>);

impl StderrTail {
    fn collect(mut stderr: tokio::process::ChildStderr) -> Self {
        StderrTail(Some(tokio::spawn(async move {
            let mut buffer = Vec::new();
            let mut chunk = [0u8; 1024];
            while let Ok(n) = stderr.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                buffer.extend_from_slice(&chunk[..n]);
                if buffer.len() > 2 * STDERR_TAIL_BYTES {
                    buffer.drain(..buffer.len() - STDERR_TAIL_BYTES);
                }
            }
            let start = buffer.len().saturating_sub(STDERR_TAIL_BYTES);
            String::from_utf8_lossy(&buffer[start..]).into_owned()
        })))
    }

    async fn text(&mut self) -> String {
        let Some(handle) = self.0.take() else {
            return String::new();
        };
        // The server may still be running: give it a moment, never block.
        match tokio::time::timeout(Duration::from_millis(500), handle).await {
            Ok(Ok(text)) if !text.trim().is_empty() => {
                format!("\n--- server stderr (end) ---\n{}", text.trim_end())
            }
            _ => String::new(),
        }
    }
}

async fn discover_untimed(
    endpoint: &Endpoint,
    options: &Options,
) -> Result<Discovery, DiscoveryError> {
    let mut session = open_untimed(endpoint, DEFAULT_MAX_RESPONSE_BYTES).await?;
    let listed = session.discover(options).await;
    // Closing the client ends a spawned server (its stdin closes; the child is reaped).
    session.close().await;
    listed
}

/// An open connection to an MCP server, for a caller that does more than
/// list its tools (`toolmock record` forwards the client's calls through
/// [`Session::peer`]). This crate itself never calls a tool.
pub struct Session {
    client: Client,
    tail: StderrTail,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("server", &describe(&self.client))
            .finish_non_exhaustive()
    }
}

/// Connects to the server at `endpoint` (the same handshakes as
/// [`discover`]) within `timeout`, and keeps the connection open.
pub async fn open(endpoint: &Endpoint, timeout: Duration) -> Result<Session, DiscoveryError> {
    open_bounded(endpoint, timeout, DEFAULT_MAX_RESPONSE_BYTES).await
}

/// [`open`], with the server's answers over streamable HTTP bounded at
/// `max_response_bytes` (one JSON response or SSE event; a longer one
/// fails its request). Over stdio rmcp's own limit applies: 16 MiB per line.
pub async fn open_bounded(
    endpoint: &Endpoint,
    timeout: Duration,
    max_response_bytes: u64,
) -> Result<Session, DiscoveryError> {
    match tokio::time::timeout(timeout, open_untimed(endpoint, max_response_bytes)).await {
        Ok(result) => result,
        Err(_) => Err(DiscoveryError::Timeout {
            seconds: timeout.as_secs(),
        }),
    }
}

async fn open_untimed(
    endpoint: &Endpoint,
    max_response_bytes: u64,
) -> Result<Session, DiscoveryError> {
    let (client, tail) = match connect(endpoint, Handshake::Discover, max_response_bytes).await? {
        Connected::Client(client, tail) => (client, tail),
        Connected::Legacy => {
            match connect(endpoint, Handshake::Initialize, max_response_bytes).await? {
                Connected::Client(client, tail) => (client, tail),
                Connected::Legacy => unreachable_legacy()?,
            }
        }
    };
    Ok(Session { client, tail })
}

impl Session {
    /// Lists every tool (following `nextCursor`) and normalizes them, as
    /// [`discover`] does, within `options.timeout`.
    pub async fn discover(&mut self, options: &Options) -> Result<Discovery, DiscoveryError> {
        let listed = match tokio::time::timeout(options.timeout, list_pages(&self.client)).await {
            Ok(listed) => listed,
            Err(_) => {
                return Err(DiscoveryError::Timeout {
                    seconds: options.timeout.as_secs(),
                });
            }
        };
        let pages = match listed {
            Ok(pages) => pages,
            Err(ListFailure::Request {
                page,
                message,
                class,
            }) => {
                return Err(DiscoveryError::ListTools {
                    page,
                    message,
                    class,
                    stderr: self.tail.text().await,
                });
            }
            Err(ListFailure::Other(e)) => return Err(e),
        };
        let operations =
            toolmock_schema::normalize_pages(&pages, options.fallback_output_schema.as_ref())
                .map_err(DiscoveryError::InvalidTools)?;
        Ok(Discovery {
            server: describe(&self.client),
            pages: pages.len(),
            operations,
        })
    }

    /// The server, to send it requests of one's own.
    pub fn peer(&self) -> &rmcp::service::Peer<RoleClient> {
        self.client.peer()
    }

    /// What the server said about itself.
    pub fn server(&self) -> ServerDescription {
        describe(&self.client)
    }

    /// The end of a spawned server's stderr (empty for HTTP), for an error
    /// message; waits at most half a second.
    pub async fn stderr_tail(&mut self) -> String {
        self.tail.text().await
    }

    /// Closes the connection; a spawned server is ended and reaped.
    pub async fn close(self) {
        let _ = self.client.cancel().await;
    }
}

type Client = RunningService<RoleClient, ClientConfig>;

enum Connected {
    Client(Client, StderrTail),
    /// The server answered the `server/discover` probe as a server from
    /// before 2026-07-28 does.
    Legacy,
}

/// `initialize` never reports a legacy server (only the probe does).
fn unreachable_legacy() -> Result<(Client, StderrTail), DiscoveryError> {
    Err(DiscoveryError::Connect {
        message: "the server answered initialize as if it were a probe".into(),
        class: FailureClass::NotMcp,
        stderr: String::new(),
    })
}

/// Starts (or reaches) the server and runs one handshake. Waits for the
/// answer as long as the caller's timeout allows.
async fn connect(
    endpoint: &Endpoint,
    handshake: Handshake,
    max_response_bytes: u64,
) -> Result<Connected, DiscoveryError> {
    let mut tail = StderrTail::default();
    let started = match endpoint {
        Endpoint::Stdio { program, args, cwd } => {
            let mut command = tokio::process::Command::new(program);
            command.args(args);
            if let Some(cwd) = cwd {
                command.current_dir(cwd);
            }
            let (transport, stderr) = TokioChildProcess::builder(command)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|source| DiscoveryError::Spawn {
                    program: program.clone(),
                    source,
                })?;
            if let Some(stderr) = stderr {
                tail = StderrTail::collect(stderr);
            }
            serve_client_with_lifecycle(handshake.client_info(), transport, handshake.mode()).await
        }
        Endpoint::Http { url } => {
            let limit = usize::try_from(max_response_bytes).unwrap_or(usize::MAX);
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            config.max_json_response_size = limit;
            config.max_sse_event_size = limit;
            let transport = StreamableHttpClientTransport::from_config(config);
            serve_client_with_lifecycle(handshake.client_info(), transport, handshake.mode()).await
        }
    };
    match started {
        Ok(client) => Ok(Connected::Client(client, tail)),
        Err(e) if handshake == Handshake::Discover && is_legacy_answer(&e) => Ok(Connected::Legacy),
        Err(e) => Err(DiscoveryError::Connect {
            message: connect_message(endpoint, &e),
            class: failure::of_handshake(&e),
            stderr: tail.text().await,
        }),
    }
}

enum ListFailure {
    Request {
        page: usize,
        message: String,
        class: FailureClass,
    },
    Other(DiscoveryError),
}

/// Reads every `tools/list` page, as JSON, following `nextCursor`.
async fn list_pages(client: &Client) -> Result<Vec<Value>, ListFailure> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = BTreeSet::new();
    loop {
        if pages.len() >= MAX_PAGES {
            return Err(ListFailure::Other(DiscoveryError::TooManyPages));
        }
        let params = cursor
            .clone()
            .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let result = client
            .peer()
            .list_tools(params)
            .await
            .map_err(|e| ListFailure::Request {
                page: pages.len() + 1,
                message: e.to_string(),
                class: failure::of_request(&e),
            })?;
        let next = result.next_cursor.clone();
        let page = serde_json::to_value(&result)
            .map_err(|e| ListFailure::Other(DiscoveryError::Page(e)))?;
        pages.push(page);
        match next {
            Some(c) if !c.is_empty() => {
                if !seen.insert(c.clone()) {
                    return Err(ListFailure::Other(DiscoveryError::RepeatedCursor {
                        cursor: c,
                    }));
                }
                cursor = Some(c);
            }
            _ => return Ok(pages),
        }
    }
}

fn describe(client: &Client) -> ServerDescription {
    match client.peer_info() {
        Some(info) => ServerDescription {
            name: info.server_info.as_ref().map(|s| s.name.clone()),
            version: info.server_info.as_ref().map(|s| s.version.clone()),
            protocol_version: Some(info.protocol_version.to_string()),
        },
        None => ServerDescription::default(),
    }
}

#[cfg(test)]
mod error_codes {
    #[test]
    fn every_code_is_documented_and_every_documented_code_exists() {
        let doc = include_str!("../../../docs/error-codes.md");
        let codes = toolmock_contract::code_strings::<crate::DiscoveryCode>();
        toolmock_contract::check_documented_codes(doc, "toolmock-discovery", &codes)
            .unwrap_or_else(|e| panic!("{e}"));
    }
}
