//! The browser UI: one HTML page, its script and its style sheet, compiled
//! into the binary (no separate server, nothing to build, no Node to run).
//!
//! The page is a client of the public API only: it signs in with a pasted
//! token, kept in the tab's `sessionStorage`, and sends it as a bearer token
//! like any other client; it holds no route, query or rule of its own, so
//! everything it shows is what the API answers (and what its tests check).
//! Pages are addressed by the URL's fragment (`#/tools/ID`, `#/simulations/ID`,
//! `#/attempts/ID`), so the server serves the same document at `/`.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

const INDEX: &str = include_str!("../ui/index.html");
const SCRIPT: &str = include_str!("../ui/app.js");
const STYLE: &str = include_str!("../ui/app.css");
const ICON: &str = include_str!("../ui/favicon.svg");

/// Where the UI's assets are served. The icon is also at `/favicon.ico`,
/// where browsers look for it unasked (an SVG: every current browser reads
/// an icon by its content type, not its name).
pub const ASSETS: [&str; 5] = [
    "/",
    "/ui/app.js",
    "/ui/app.css",
    "/ui/favicon.svg",
    "/favicon.ico",
];

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // The page runs only its own script and style and talks only to its own
    // origin: an injected string cannot load or send anything elsewhere.
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
             img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        ),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // Assets change with the binary: revalidate rather than cache forever.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The UI's routes (not API routes: they are not in the OpenAPI document).
pub(crate) fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            "/",
            get(|| async { asset(INDEX, "text/html; charset=utf-8") }),
        )
        .route(
            "/ui/app.js",
            get(|| async { asset(SCRIPT, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/ui/app.css",
            get(|| async { asset(STYLE, "text/css; charset=utf-8") }),
        )
        .route(
            "/ui/favicon.svg",
            get(|| async { asset(ICON, "image/svg+xml") }),
        )
        .route(
            "/favicon.ico",
            get(|| async { asset(ICON, "image/svg+xml") }),
        )
}
