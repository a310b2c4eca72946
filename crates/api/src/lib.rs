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
mod error;
mod extract;
mod generator;
mod limits;
mod mcp_allow;
mod middleware;
pub mod routes;
mod runner;
pub mod security_headers;
pub mod ui;

pub use auth::{AuthConfig, AuthConfigError, Claims, Principal, mint_hs256};
pub use error::{ApiCode, ApiError, ErrorBody, ErrorEnvelope};
pub use generator::{ChatCompletions, Generator};
pub use limits::{MAX_DEFINITION_DELAY, ServeLimits, serve_with};
pub use mcp_allow::{McpAllowEntryError, McpAllowList};

use axum::Router;
use sqlx::PgPool;
use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use toolmock_runtime::Dispatcher;
use toolmock_runtime::model::TenantId;
use toolmock_store::PgStore;

/// The tunables of the HTTP layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiConfig {
    /// Which generator answers `generate` (default: schema-derived).
    pub generator: Generator,
    /// The largest request body accepted, in bytes (larger: 413).
    pub body_limit: usize,
    /// How long one request may take (longer: 503 `timeout`), except a
    /// tool call.
    pub request_timeout: Duration,
    /// How long a tool call's request may take. It should exceed
    /// [`MAX_DEFINITION_DELAY`] (the binary refuses less), so that a delay a
    /// definition asks for is served inside it; a call still running when it
    /// ends runs on to its recorded end and is recorded as `answer_lost`.
    pub tool_call_timeout: Duration,
    /// How long a client may take to send a request's body (longer: 408
    /// `body_timeout`).
    pub body_read_timeout: Duration,
    /// Which MCP servers discovery may reach (default: every URL).
    pub mcp_allow: McpAllowList,
    /// How many requests are served at once (more: 503 `overloaded`).
    pub concurrency_limit: usize,
    /// How long a simulation's attempts may run: one still running when its
    /// lease ends is ended as `harness_error` by [`expire_abandoned_attempts`].
    pub attempt_lease: Duration,
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            generator: Generator::Schema,
            body_limit: 1024 * 1024,
            request_timeout: Duration::from_secs(30),
            tool_call_timeout: Duration::from_secs(30) + MAX_DEFINITION_DELAY,
            body_read_timeout: Duration::from_secs(10),
            mcp_allow: McpAllowList::default(),
            concurrency_limit: 1024,
            attempt_lease: Duration::from_secs(3600),
        }
    }
}

/// What every handler shares: the dispatcher over the PostgreSQL store, the
/// pool, the token verifier and the configuration.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

struct Inner {
    dispatcher: Dispatcher<PgStore>,
    pool: PgPool,
    auth: AuthConfig,
    config: ApiConfig,
    /// Tenants known to have their row, so that it is written once per process.
    tenants: Mutex<HashSet<TenantId>>,
    /// The rendered pieces of tool testing views kept between requests.
    testing: routes::TestingCache,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("auth", &self.inner.auth)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// State over a migrated pool.
    pub fn new(pool: PgPool, auth: AuthConfig, config: ApiConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                dispatcher: Dispatcher::new(PgStore::new(pool.clone())),
                pool,
                auth,
                config,
                tenants: Mutex::new(HashSet::new()),
                testing: routes::TestingCache::default(),
            }),
        }
    }

    /// The dispatcher.
    pub fn dispatcher(&self) -> &Dispatcher<PgStore> {
        &self.inner.dispatcher
    }

    /// The store.
    pub fn store(&self) -> &PgStore {
        self.inner.dispatcher.backend()
    }

    /// The pool.
    pub fn pool(&self) -> &PgPool {
        &self.inner.pool
    }

    /// The token verifier.
    pub fn auth(&self) -> &AuthConfig {
        &self.inner.auth
    }

    /// The configuration.
    pub fn config(&self) -> &ApiConfig {
        &self.inner.config
    }

    /// What tool testing views keep between requests.
    pub(crate) fn testing_cache(&self) -> &routes::TestingCache {
        &self.inner.testing
    }

    /// Makes sure the principal's tenant has its row before anything is
    /// written for it: tenants come from tokens, not from a sign-up step.
    pub(crate) async fn ensure_tenant(&self, principal: &Principal) -> Result<(), ApiError> {
        let known = self
            .inner
            .tenants
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&principal.tenant);
        if known {
            return Ok(());
        }
        self.store()
            .ensure_tenant(principal.tenant, &principal.tenant_name)
            .await?;
        self.inner
            .tenants
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(principal.tenant);
        Ok(())
    }
}

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
/// agent gone, or the process that ran its script dead — as `harness_error`:
/// a `lease_expired` harness error is recorded, then the attempt is
/// finished. Returns how many it ended. Safe to run from every API process at
/// once: a second finish of the same attempt is refused and ignored.
pub async fn expire_abandoned_attempts(
    state: &AppState,
) -> Result<usize, toolmock_runtime::error::StoreError> {
    runner::expire_abandoned(state).await
}

/// Runs [`expire_abandoned_attempts`] every 30 s until aborted.
pub fn spawn_lease_sweeper(state: AppState) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(30));
        loop {
            tick.tick().await;
            match expire_abandoned_attempts(&state).await {
                Ok(0) => {}
                Ok(n) => tracing::warn!(
                    attempts = n,
                    "attempts whose lease ran out ended as harness_error"
                ),
                Err(e) => tracing::error!(error = %e, "the lease sweeper cannot read the attempts"),
            }
        }
    })
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
