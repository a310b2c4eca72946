//! What bounds a client's hold on the server: how many connections are open
//! at once, how long a client may take to send its request's headers and its
//! body, and how long a request may run.
//!
//! [`serve_with`] accepts connections itself (rather than `axum::serve`) so
//! that hyper can cut off a client that trickles its header lines
//! ([`ServeLimits::header_read_timeout`]) and so that accepting stops while
//! [`ServeLimits::max_connections`] are open: a further client waits in the
//! kernel's backlog instead of costing a task and a buffer each.

use crate::AppState;
use crate::error::ApiError;
pub use crate::state::MAX_DEFINITION_DELAY;
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, Limited};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Semaphore, watch};

/// Limits of the listener, per process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeLimits {
    /// Connections open at once; the next client waits to be accepted.
    pub max_connections: usize,
    /// How long a client may take to send a request's line and headers,
    /// from its connection or its previous request on; then it is closed.
    pub header_read_timeout: Duration,
}

impl Default for ServeLimits {
    fn default() -> Self {
        Self {
            max_connections: 4096,
            header_read_timeout: Duration::from_secs(10),
        }
    }
}

/// Serves `app` on `listener` within `limits` until `shutdown` resolves, then
/// stops accepting and lets the requests in flight finish (graceful shutdown).
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    limits: ServeLimits,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let (stop, stopping) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            () = &mut shutdown => break,
            slot = Arc::clone(&slots).acquire_owned() => slot.map_err(std::io::Error::other)?,
        };
        let (stream, _) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // A connection that failed before it was accepted (reset,
                // out of descriptors for a moment) is that client's problem.
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let mut stopping = stopping.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_read_timeout);
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                _ = async { let _ = stopping.wait_for(|stop| *stop).await; } => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
    }
    drop(listener);
    let _ = stop.send(true);
    // Every connection holds a slot until it is closed.
    let all = u32::try_from(limits.max_connections.max(1)).unwrap_or(u32::MAX);
    let _ = slots.acquire_many(all).await;
    Ok(())
}

/// Whether `path` answers tool calls — the dispatcher endpoint or an
/// attempt's MCP endpoint —, whose calls may sleep for a definition's delay
/// and so get [`crate::ApiConfig::tool_call_timeout`]; so does `ask-user`,
/// which waits for the user model (and the user's own tool calls).
fn is_tool_call(path: &str) -> bool {
    path.starts_with("/api/attempts/")
        && (path.ends_with("/tool-calls") || path.ends_with("/mcp") || path.ends_with("/ask-user"))
}

/// Answers 503 `timeout` when a request runs past its budget: the tool-call
/// budget on the dispatcher endpoint, the request time-out elsewhere. A
/// tool call itself is not cancelled by this (it runs in a task of its own:
/// `call_task`, and `toolmock_mcp::ToolServer` for MCP); only its answer is,
/// and the lost answer is recorded as `answer_lost`.
pub(crate) async fn request_budget(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let config = state.config();
    let budget = if is_tool_call(request.uri().path()) {
        config.tool_call_timeout
    } else {
        config.request_timeout
    };
    match tokio::time::timeout(budget, next.run(request)).await {
        Ok(response) => response,
        Err(_) => ApiError::Timeout.into_response(),
    }
}

/// Reads a request's whole body within the body-read time-out and the body
/// limit before any handler sees it, so that a client trickling its body
/// holds neither a handler nor a pool connection: 408 `body_timeout` when it
/// is too slow, 413 `body_too_large` when it is too long.
pub(crate) async fn read_body(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    if matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS | Method::DELETE
    ) {
        return next.run(request).await;
    }
    let config = state.config();
    let (parts, body) = request.into_parts();
    let limit = config.body_limit;
    let read = Limited::new(body, limit).collect();
    let bytes = match tokio::time::timeout(config.body_read_timeout, read).await {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            return ApiError::BodyTooLarge { limit }.into_response();
        }
        // The client went away or sent a malformed chunk.
        Ok(Err(_)) => return ApiError::BodyUnreadable.into_response(),
        Err(_) => return ApiError::BodyTimeout.into_response(),
    };
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}
