//! The layers around every route: security headers, request ids (in the
//! logs, the response header and every 500's body), the concurrency limit
//! with load shedding, the request's budget (`limits`: longer for a tool
//! call), the body read within its time-out and limit, and JSON answers for
//! unknown routes and methods.

use crate::error::{ApiError, REQUEST_ID};
use crate::limits;
use crate::security_headers;
use crate::state::AppState;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::Semaphore;
use tracing::Instrument;

/// The header that carries the request id, in and out.
pub(crate) const REQUEST_ID_HEADER: &str = "x-request-id";

pub(crate) fn wrap(routes: Router<AppState>, state: AppState) -> Router {
    let config = state.config().clone();
    // One semaphore for the whole router: a tower concurrency limit layered
    // on a `Router` wraps each route on its own, so its limit held per route.
    let slots = Arc::new(Semaphore::new(config.concurrency_limit.max(1)));
    routes
        .fallback(|| async { ApiError::RouteNotFound })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(DefaultBodyLimit::max(config.body_limit))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            limits::read_body,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            limits::request_budget,
        ))
        .layer(axum::middleware::from_fn(move |request, next| {
            shed_past_the_limit(Arc::clone(&slots), request, next)
        }))
        .layer(axum::middleware::from_fn(request_id))
        .layer(axum::middleware::from_fn(security_headers::add))
        .with_state(state)
}

/// Serves the request while a slot is free; past `--concurrency-limit`
/// requests in flight, answers 503 `overloaded` at once instead of queueing.
async fn shed_past_the_limit(slots: Arc<Semaphore>, request: Request, next: Next) -> Response {
    let Ok(_slot) = slots.try_acquire() else {
        return ApiError::Overloaded.into_response();
    };
    next.run(request).await
}

/// A caller's id is kept when it is short and printable, so that one id can
/// follow a request across services; otherwise a fresh UUID is used.
fn incoming_id(request: &Request) -> Option<String> {
    let value = request.headers().get(REQUEST_ID_HEADER)?.to_str().ok()?;
    (!value.is_empty()
        && value.len() <= 128
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b)))
    .then(|| value.to_owned())
}

async fn request_id(request: Request, next: Next) -> Response {
    let id = incoming_id(&request).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let span = tracing::info_span!(
        "request",
        request_id = %id,
        method = %request.method(),
        path = %request.uri().path(),
    );
    let started = Instant::now();
    let mut response = REQUEST_ID
        .scope(id.clone(), next.run(request))
        .instrument(span.clone())
        .await;
    let status = response.status().as_u16();
    span.in_scope(|| {
        tracing::info!(
            status,
            latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
            "served"
        );
    });
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    response.into_response()
}
