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
use axum::error_handling::HandleErrorLayer;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::time::Instant;
use tower::{BoxError, ServiceBuilder};
use tracing::Instrument;

/// The header that carries the request id, in and out.
pub(crate) const REQUEST_ID_HEADER: &str = "x-request-id";

pub(crate) fn wrap(routes: Router<AppState>, state: AppState) -> Router {
    let config = state.config().clone();
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
        .layer(
            ServiceBuilder::new()
                .layer(HandleErrorLayer::new(overload_error))
                .load_shed()
                .concurrency_limit(config.concurrency_limit),
        )
        .layer(axum::middleware::from_fn(request_id))
        .layer(axum::middleware::from_fn(security_headers::add))
        .with_state(state)
}

async fn overload_error(error: BoxError) -> ApiError {
    if error.is::<tower::load_shed::error::Overloaded>() {
        ApiError::Overloaded
    } else {
        ApiError::Internal(error.to_string())
    }
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
