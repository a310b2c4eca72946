//! toolmock's HTTP API as a library: the router, its handlers, auth and
//! tenancy, one error type and the OpenAPI document, testable in-process
//! without a server.
//!
//! [`router`] builds an axum [`Router`] from [`routes::ROUTES`], the one table
//! of every route with who may call it; the OpenAPI 3.1 document
//! ([`openapi`], served at `/api/openapi.json`) is generated from the same
//! handlers. Every failure is an [`ApiError`] answering
//! `{"error": {"code", "message", "details"?}}`. People and tools authenticate
//! with bearer JWTs ([`AuthConfig`]); a nested service calls the dispatcher
//! endpoint with its attempt's capability. Every read and write is scoped to
//! the token's tenant, and another tenant's rows answer 404.
//!
//! This crate is not the binary (`toolmock-api`, in `bins/api`, reads the
//! configuration, sets up logging and the pool, checks the schema and calls
//! [`serve`]) and holds no business rules: those are the runtime's, the
//! evaluator's and the schema crate's.
//!
//! ```no_run
//! use toolmock_api::{ApiConfig, AppState, AuthConfig, router};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let pool = toolmock_store::connect("postgres://postgres@127.0.0.1:5432/postgres", 16).await?;
//! toolmock_store::migrate(&pool).await?;
//! let auth = AuthConfig::hs256(b"a development secret of 32+ bytes!")?;
//! let state = AppState::new(pool, auth, ApiConfig::default());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! toolmock_api::serve(listener, router(state), std::future::pending()).await?;
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod auth;
mod call_task;
mod cassette_upload;
mod error;
mod extract;
mod generator;
mod jobs;
mod limits;
mod mcp_allow;
mod middleware;
pub mod routes;
pub mod security_headers;
pub mod seed;
mod served_table;
mod served_tools;
mod state;
mod stored;
pub mod ui;
mod user_talk;
mod views;

pub use auth::{AuthConfig, AuthConfigError, Claims, Principal, mint_hs256};
pub use error::{ApiCode, ApiError, ErrorBody, ErrorEnvelope};
pub use generator::{ChatCompletions, Generator};
pub use limits::{MAX_DEFINITION_DELAY, ServeLimits, serve_with};
pub use mcp_allow::{McpAllowEntryError, McpAllowList};
pub use state::{ApiConfig, AppState};

use axum::Router;
use std::future::Future;

/// The whole application: every route of [`routes::ROUTES`], the OpenAPI
/// document, the browser UI ([`ui`]), request ids, the body limit, the timeout and the concurrency
/// limit, and JSON errors for unknown routes and methods.
pub fn router(state: AppState) -> Router {
    middleware::wrap(routes::api_router().merge(ui::routes()), state)
}

/// The OpenAPI 3.1 document of every route.
pub fn openapi() -> utoipa::openapi::OpenApi {
    routes::documented().1
}

/// Ends every attempt still running after its lease ran out — its external
/// agent gone, or the worker that ran its script dead or paused — as
/// `harness_error`: its lease is taken back (a new epoch fences its holder
/// out), its capabilities are revoked, and the finish records
/// `lease_expired`. Returns how many it ended. Safe to run from every API
/// and worker process at once (`toolmock_worker::reap_expired`).
pub async fn expire_abandoned_attempts(
    state: &AppState,
) -> Result<usize, toolmock_runtime::error::StoreError> {
    toolmock_worker::reap_expired(state.dispatcher()).await
}

/// How often the API's own reaper sweeps: external agents' leases are long
/// (an hour by default), and every worker sweeps as well.
pub const REAP_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// Runs [`expire_abandoned_attempts`] every [`REAP_EVERY`] until aborted.
pub fn spawn_lease_sweeper(state: AppState) -> tokio::task::JoinHandle<()> {
    toolmock_worker::spawn_reaper(state.shared_dispatcher(), REAP_EVERY)
}

/// Serves `app` on `listener` with the default [`ServeLimits`] until
/// `shutdown` resolves, then lets the requests in flight finish (graceful
/// shutdown).
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, app, shutdown, ServeLimits::default()).await
}
