//! What every handler shares, at the bottom of the crate: the dispatcher
//! over the PostgreSQL store, the pool, the token verifier and the
//! configuration, and the per-attempt MCP endpoint's served tools
//! (`served_table`: one per state, as the dispatcher's caches are). It
//! holds no other route's data: what a route keeps between requests
//! belongs to that route's module.

use crate::auth::AuthConfig;
use crate::generator::Generator;
use crate::mcp_allow::McpAllowList;
use crate::served_table::ServedTable;
use sqlx::PgPool;
use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use toolmock_runtime::Dispatcher;
use toolmock_runtime::error::StoreError;
use toolmock_runtime::model::TenantId;
use toolmock_store::PgStore;

/// The longest delay a mock definition may ask for (`delay_ms`): a tool
/// call's budget must leave room for it.
pub const MAX_DEFINITION_DELAY: Duration = Duration::from_secs(30);

/// The tunables of the HTTP layer.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// Which generator answers `generate` (default: schema-derived).
    pub generator: Generator,
    /// The largest request body accepted, in bytes (larger: 413).
    pub body_limit: usize,
    /// How long one request may take (longer: 503 `timeout`), except a
    /// tool call.
    pub request_timeout: Duration,
    /// How long a tool call's request may take (`tool-calls` and `mcp`). It
    /// should exceed
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
    /// lease ends is ended as `harness_error` by
    /// [`expire_abandoned_attempts`](crate::expire_abandoned_attempts).
    pub attempt_lease: Duration,
    /// How many simulation starts run at once; more wait their turn, so
    /// that starts never hold more than this many of the pool's connections
    /// and other requests are not starved.
    pub concurrent_starts: usize,
    /// The model that plays the simulated users of external attempts
    /// (`ask-user`, the MCP endpoint's `ask_user`); none: such an ask
    /// records the harness error `user_unavailable`.
    pub user_model: Option<Arc<dyn toolmock_simulation::ChatModel>>,
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
            concurrent_starts: 2,
            user_model: None,
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
    /// Shared with the background jobs, which outlive a request.
    dispatcher: Arc<Dispatcher<PgStore>>,
    pool: PgPool,
    auth: AuthConfig,
    config: ApiConfig,
    /// Tenants known to have their row, so that it is written once per process.
    tenants: Mutex<HashSet<TenantId>>,
    /// One permit per start running (`ApiConfig::concurrent_starts`).
    starts: tokio::sync::Semaphore,
    /// The per-attempt MCP endpoint's served tools, by simulation.
    served: ServedTable,
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
        Self::over_store(PgStore::new(pool), auth, config)
    }

    /// State over a store the caller made (over a migrated pool): what a
    /// test uses to serve with a store it set up itself.
    pub fn over_store(store: PgStore, auth: AuthConfig, config: ApiConfig) -> Self {
        let pool = store.pool().clone();
        Self {
            inner: Arc::new(Inner {
                dispatcher: Arc::new(Dispatcher::new(store)),
                pool,
                auth,
                tenants: Mutex::new(HashSet::new()),
                starts: tokio::sync::Semaphore::new(config.concurrent_starts.max(1)),
                served: ServedTable::default(),
                config,
            }),
        }
    }

    /// Waits for a start's turn (see [`ApiConfig::concurrent_starts`]).
    pub(crate) async fn start_permit(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        // The semaphore is never closed; `None` would only mean no limit.
        self.inner.starts.acquire().await.ok()
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

    /// The dispatcher, for a background job that outlives the request
    /// which started it (the same dispatcher: its count of answered calls
    /// is the one `finish_attempt` checks).
    pub(crate) fn shared_dispatcher(&self) -> Arc<Dispatcher<PgStore>> {
        Arc::clone(&self.inner.dispatcher)
    }

    /// The per-attempt MCP endpoint's served tools, by simulation.
    pub(crate) fn served_table(&self) -> &ServedTable {
        &self.inner.served
    }

    /// Makes sure a token's tenant has its row before anything is written
    /// for it: tenants come from tokens, not from a sign-up step.
    pub(crate) async fn ensure_tenant(
        &self,
        tenant: TenantId,
        name: &str,
    ) -> Result<(), StoreError> {
        let known = self
            .inner
            .tenants
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&tenant);
        if known {
            return Ok(());
        }
        self.store().ensure_tenant(tenant, name).await?;
        self.inner
            .tenants
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(tenant);
        Ok(())
    }
}

impl AsRef<AuthConfig> for AppState {
    fn as_ref(&self) -> &AuthConfig {
        self.auth()
    }
}
