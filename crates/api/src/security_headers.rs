//! The security headers every response carries, whatever route (or no
//! route) answered it, errors and load shedding included.
//!
//! A header a route set itself is kept: the UI's assets bring their own
//! content security policy (their page runs a script) and their own caching
//! rule; every other answer is data, which no browser should render, frame,
//! sniff or keep.

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

/// Every header the API sets on every response unless the route set it, with
/// its value. Documented in docs/api.md ("Security headers").
pub const SECURITY_HEADERS: [(HeaderName, &str); 6] = [
    // Never guess a type other than the one declared (JSON stays JSON).
    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    // An API answer is data: it loads nothing, runs nothing, is framed nowhere.
    (
        header::CONTENT_SECURITY_POLICY,
        "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    (header::X_FRAME_OPTIONS, "DENY"),
    // Tenant data is not for shared caches or the browser's disk.
    (header::CACHE_CONTROL, "no-store"),
    (header::REFERRER_POLICY, "no-referrer"),
    (
        HeaderName::from_static("cross-origin-resource-policy"),
        "same-origin",
    ),
];

/// Adds [`SECURITY_HEADERS`] the response does not already carry.
pub(crate) async fn add(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in &SECURITY_HEADERS {
        if !headers.contains_key(name) {
            headers.insert(name.clone(), HeaderValue::from_static(value));
        }
    }
    response
}
