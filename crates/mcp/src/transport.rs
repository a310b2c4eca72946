//! The two transports of `toolmock serve`: stdio (one attempt for the
//! process) and streamable HTTP (one path per attempt).

use crate::delivery::Delivering;
use crate::embedded::{AttemptNumber, Embedded, PathAttempts, ProcessAttempt};
use crate::error::{McpCode, ServeError};
use crate::handler::{Attempts, ToolServer};
use axum::Json;
use axum::Router;
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, post};
use rmcp::ServiceExt;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use toolmock_runtime::backend::Backend;
use tower::ServiceExt as _;

/// Serves attempt `number` over this process's stdin and stdout until the
/// client closes them (or the attempt ends otherwise and `stop` is
/// cancelled). Returns when the session is over; the caller ends the
/// attempt and reports.
pub async fn serve_stdio<B: Backend + 'static>(
    embedded: Arc<Embedded<B>>,
    number: u32,
    stop: CancellationToken,
) -> Result<(), ServeError> {
    embedded.open(number).await?;
    let server = embedded.server(ProcessAttempt::new(embedded.clone(), number));
    // Each call's answer counts as delivered once written to stdout; one the
    // session could not write is recorded as lost before this returns.
    let (stdin, stdout) = rmcp::transport::stdio();
    let transport = Delivering::new(AsyncRwTransport::new_server(stdin, stdout));
    // A client that closes stdin before its `initialize` ends the session too.
    let Ok(running) = server.serve_with_ct(transport, stop.child_token()).await else {
        return Ok(());
    };
    let _ = running.waiting().await;
    Ok(())
}

/// The HTTP router of `serve --http`:
///
/// - `POST /attempts` hands out a new attempt: `201 {"attempt": n, "url": "/attempts/n/mcp"}`;
/// - `/attempts/{n}/mcp` is attempt n's streamable-HTTP MCP endpoint (started at its first request);
/// - `POST /attempts/{n}/finish` ends attempt n and answers its result (`toolmock run`'s attempt object).
///
/// `any_host`: accept any `Host` header (the server listens beyond loopback);
/// otherwise only loopback hosts, against DNS rebinding. Stopping is the
/// HTTP server's graceful shutdown: a call being answered (even the one
/// that ends the last attempt) is answered first.
pub fn router<B: Backend + 'static>(embedded: Arc<Embedded<B>>, any_host: bool) -> Router {
    let server = embedded.server(PathAttempts::new(embedded.clone()));
    let mcp = stateless_service(server, any_host);
    Router::new()
        .route("/attempts", post(new_attempt::<B>))
        .route("/attempts/{n}/finish", post(finish::<B>))
        .route(
            "/attempts/{n}/mcp",
            any(
                move |state: State<Arc<Embedded<B>>>, path: Path<String>, request: Request| {
                    let mcp = mcp.clone();
                    async move { attempt_mcp(state, path, request, mcp).await }
                },
            ),
        )
        .with_state(embedded)
}

/// rmcp's streamable HTTP service over a handler.
pub type Mcp<B, A> = StreamableHttpService<ToolServer<B, A>, NeverSessionManager>;

/// The streamable HTTP transport of a handler, stateless (no session id:
/// the attempt is the URL or the credential) and answering JSON. `any_host`:
/// accept any `Host` header; otherwise loopback hosts only.
pub fn stateless_service<B: Backend + 'static, A: Attempts>(
    server: ToolServer<B, A>,
    any_host: bool,
) -> Mcp<B, A> {
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None);
    if any_host {
        config = config.disable_allowed_hosts();
    }
    StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    )
}

fn error(status: StatusCode, code: McpCode, message: String) -> Response {
    (
        status,
        Json(json!({"error": {"code": code.as_str(), "message": message}})),
    )
        .into_response()
}

fn serve_error(e: &ServeError) -> Response {
    match e {
        ServeError::UnknownAttempt { .. } => error(
            StatusCode::NOT_FOUND,
            McpCode::UnknownAttempt,
            e.to_string(),
        ),
        ServeError::AttemptFinished { .. } => error(
            StatusCode::CONFLICT,
            McpCode::AttemptFinished,
            e.to_string(),
        ),
        _ => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            McpCode::StorageFailed,
            e.to_string(),
        ),
    }
}

fn number(raw: &str) -> Result<u32, ServeError> {
    raw.parse::<u32>().map_err(|_| ServeError::UnknownAttempt {
        attempt: raw.to_owned(),
        max: crate::embedded::MAX_ATTEMPTS,
    })
}

async fn new_attempt<B: Backend + 'static>(State(embedded): State<Arc<Embedded<B>>>) -> Response {
    match embedded.new_attempt().await {
        Ok(n) => (
            StatusCode::CREATED,
            Json(json!({"attempt": n, "url": format!("/attempts/{n}/mcp")})),
        )
            .into_response(),
        Err(e) => serve_error(&e),
    }
}

async fn finish<B: Backend + 'static>(
    State(embedded): State<Arc<Embedded<B>>>,
    Path(raw): Path<String>,
) -> Response {
    let result = match number(&raw) {
        Ok(n) => embedded.finish(n).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(result) => Json(result).into_response(),
        Err(e) => serve_error(&e),
    }
}

async fn attempt_mcp<B: Backend + 'static, A: Attempts>(
    State(embedded): State<Arc<Embedded<B>>>,
    Path(raw): Path<String>,
    mut request: Request,
    mcp: Mcp<B, A>,
) -> Response {
    let n = match number(&raw) {
        Ok(n) => n,
        Err(e) => return serve_error(&e),
    };
    if let Err(e) = embedded.open(n).await {
        return serve_error(&e);
    }
    request.extensions_mut().insert(AttemptNumber(n));
    match mcp.oneshot(request).await {
        Ok(response) => response.map(axum::body::Body::new),
        Err(never) => match never {},
    }
}
