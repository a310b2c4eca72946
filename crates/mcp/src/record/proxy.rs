//! The recording proxy: an MCP server to the client, an MCP client to the
//! real server. `tools/list` is the real server's, page for page; each
//! `tools/call` is forwarded, answered to the client exactly as the server
//! answered, and appended (redacted) to `calls.jsonl` before the answer
//! goes back.

use super::{
    CALLS_FILE, CONTRACTS_FILE, RECORDING_FILE, RECORDING_VERSION, RecordError, Redactor,
    create_dir, write_json,
};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorCode, ErrorData, Implementation, ListToolsResult,
    PaginatedRequestParams, ResultType, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleClient, RoleServer, ServiceError};
use rmcp::transport::IntoTransport;
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;
use toolmock_discovery::{Endpoint, Options};
use toolmock_schema::ContractEntry;

/// What to record, and where.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// The real server.
    pub endpoint: Endpoint,
    /// The recording folder (created; its recording files are replaced).
    pub out: PathBuf,
    /// What to redact before anything is written.
    pub redactor: Redactor,
    /// How long connecting to and listing the real server may take.
    pub timeout: Duration,
    /// The longest answer read from the real server over streamable HTTP
    /// (one JSON response or SSE event; a longer one fails its request).
    pub max_response_bytes: u64,
}

/// What a finished recording holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The real server's tools.
    pub tools: usize,
    /// The calls recorded.
    pub calls: usize,
}

struct Inner {
    peer: rmcp::service::Peer<RoleClient>,
    calls: Mutex<(std::fs::File, usize)>,
    file: PathBuf,
    redactor: Redactor,
}

#[derive(Clone)]
struct Recorder {
    inner: Arc<Inner>,
}

impl Recorder {
    /// Appends one call (redacted) and flushes it, so a recording cut short
    /// keeps every call answered before.
    async fn append(&self, mut record: Value) -> Result<(), ErrorData> {
        self.inner.redactor.record(&mut record);
        let mut line = record.to_string();
        line.push('\n');
        let mut calls = self.inner.calls.lock().await;
        let written = calls
            .0
            .write_all(line.as_bytes())
            .and_then(|()| calls.0.flush());
        match written {
            Ok(()) => {
                calls.1 += 1;
                Ok(())
            }
            // The client must not get an answer the recording lacks.
            Err(e) => Err(ErrorData::new(
                ErrorCode::INTERNAL_ERROR,
                format!("cannot_write: {}: {e}", self.inner.file.display()),
                Some(json!({"class": "server", "code": "cannot_write"})),
            )),
        }
    }
}

impl rmcp::ServerHandler for Recorder {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new("toolmock-record", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut listed = self
            .inner
            .peer
            .list_tools(request)
            .await
            .map_err(upstream_error)?;
        // A server from before 2026-07-28 sends no `resultType`; the client
        // may speak the newer revision to the proxy (rmcp drops the field
        // again for an older client).
        listed.result_type.get_or_insert(ResultType::COMPLETE);
        Ok(listed)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tool = request.name.to_string();
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        match self.inner.peer.call_tool(request).await {
            Ok(mut result) => {
                let value = serde_json::to_value(&result).unwrap_or(Value::Null);
                self.append(json!({"tool": tool, "arguments": arguments, "result": value}))
                    .await?;
                result.result_type.get_or_insert(ResultType::COMPLETE);
                Ok(CallToolResponse::from(result))
            }
            Err(e) => {
                let error = upstream_error(e);
                let mut recorded = json!({"code": error.code.0, "message": error.message});
                if let Some(data) = &error.data {
                    recorded["data"] = data.clone();
                }
                self.append(json!({"tool": tool, "arguments": arguments, "error": recorded}))
                    .await?;
                Err(error)
            }
        }
    }
}

/// The real server's JSON-RPC error as it sent it; a transport failure as
/// an internal error naming it.
fn upstream_error(e: ServiceError) -> ErrorData {
    match e {
        ServiceError::McpError(data) => data,
        other => ErrorData::new(
            ErrorCode::INTERNAL_ERROR,
            format!("the recorded server failed: {other}"),
            Some(json!({"class": "server", "code": "upstream_failed"})),
        ),
    }
}

/// Records: connects to the real server, writes its contracts, then serves
/// `client` (e.g. stdio) until it closes or `stop` is cancelled,
/// forwarding and recording each call. The real server is closed (a
/// spawned one ended) before this returns.
pub async fn record<T, E, A>(
    options: &RecordOptions,
    client: T,
    stop: CancellationToken,
) -> Result<Recorded, RecordError>
where
    T: IntoTransport<RoleServer, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let mut session = toolmock_discovery::open_bounded(
        &options.endpoint,
        options.timeout,
        options.max_response_bytes,
    )
    .await
    .map_err(RecordError::Upstream)?;
    let discovery = match session
        .discover(&Options {
            fallback_output_schema: None,
            timeout: options.timeout,
        })
        .await
    {
        Ok(discovery) => discovery,
        Err(e) => {
            session.close().await;
            return Err(RecordError::Upstream(e));
        }
    };
    let written = write_start(options, &discovery);
    let file = options.out.join(CALLS_FILE);
    let calls = written.and_then(|()| {
        std::fs::File::create(&file).map_err(|source| RecordError::CannotWrite {
            file: file.clone(),
            source,
        })
    });
    let calls = match calls {
        Ok(calls) => calls,
        Err(e) => {
            session.close().await;
            return Err(e);
        }
    };
    let recorder = Recorder {
        inner: Arc::new(Inner {
            peer: session.peer().clone(),
            calls: Mutex::new((calls, 0)),
            file,
            redactor: options.redactor.clone(),
        }),
    };
    // A client that closes before its `initialize` ends the recording too.
    if let Ok(running) = recorder.clone().serve_with_ct(client, stop).await {
        let _ = running.waiting().await;
    }
    session.close().await;
    let calls = recorder.inner.calls.lock().await.1;
    Ok(Recorded {
        tools: discovery.operations.len(),
        calls,
    })
}

fn write_start(
    options: &RecordOptions,
    discovery: &toolmock_discovery::Discovery,
) -> Result<(), RecordError> {
    create_dir(&options.out)?;
    let mut entries = Vec::with_capacity(discovery.operations.len());
    for op in &discovery.operations {
        // A contract that cannot be hashed is listed without its hash.
        let entry = ContractEntry::of_discovered(op)
            .ok()
            .and_then(|e| serde_json::to_value(e).ok())
            .unwrap_or_else(
                || json!({"contract": {"operation": {"source": "mcp", "name": op.operation.name}}}),
            );
        entries.push(entry);
    }
    write_json(&options.out.join(CONTRACTS_FILE), &Value::Array(entries))?;
    let server = &discovery.server;
    write_json(
        &options.out.join(RECORDING_FILE),
        &json!({
            "recording_version": RECORDING_VERSION,
            "server": {"name": server.name, "version": server.version,
                       "protocol_version": server.protocol_version},
            "redacted_paths": options.redactor.paths(),
        }),
    )
}

/// [`record`] with the client on this process's stdin and stdout (what
/// `toolmock record` does: the client starts it as its stdio server).
pub async fn record_stdio(
    options: &RecordOptions,
    stop: CancellationToken,
) -> Result<Recorded, RecordError> {
    record(options, rmcp::transport::stdio(), stop).await
}
