//! PostgreSQL persistence for toolmock, and the PostgreSQL implementation of
//! `toolmock-runtime`'s storage traits.
//!
//! [`PgStore`] implements `Catalog`, `PinStore`, `FixtureStore`,
//! `EvidenceSink` and `AttemptStore` with sqlx 0.9 over a connection pool,
//! plus the read models the API lists; the schema is embedded
//! ([`MIGRATOR`]: `migrate` as the owner, [`check_schema`] as the
//! application role). The guarantees the schema itself carries (append-only
//! tables, tenancy in every query and foreign key, row-locked fixture
//! state, revision numbering) and why each holds are in ARCHITECTURE.md,
//! section "`crates/store`", and docs/data-model.md.
//!
//! This crate holds no business rules of its own (they are the runtime's and
//! the evaluator's) and no HTTP API. Queries are checked at run time (no
//! `DATABASE_URL` is needed to build).
//!
//! ```no_run
//! use std::sync::Arc;
//! use toolmock_runtime::Dispatcher;
//! use toolmock_runtime::backend::Catalog;
//! use toolmock_store::{PgStore, connect, migrate};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let pool = connect("postgres://postgres@127.0.0.1:5432/postgres", 16).await?;
//! migrate(&pool).await?;
//! let store = PgStore::new(pool);
//! let tenant = store.create_tenant("acme").await?;
//! let dispatcher = Arc::new(Dispatcher::new(store));
//! # let _ = (tenant, dispatcher);
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
mod pg;
mod rows;
mod schema_check;
#[cfg(feature = "testkit")]
pub mod testkit;

pub use error::{SqlState, map_sqlx_error};
pub use pg::{
    AttemptListing, BudgetLimits, BudgetStanding, CALL_STATEMENTS_IN_FLIGHT, Claimed,
    ClaimedVerification, Fence, IndexedOperation, MAX_VERIFICATION_CLAIMS, PgStore, QUEUE_CHANNEL,
    Reaped, Released, RevisionSummary, SimulationListing, StoredCassette, StoredContract,
    StoredMessage, TestingIndex, ToolListing, UsageRecord, UsageTotals, VerificationMark,
    VerificationRecord, VerificationResult, VerificationSettings,
};
pub use schema_check::{SchemaCheckError, check_schema};

use sqlx::migrate::{MigrateError, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use std::str::FromStr;

/// The embedded migrations (`crates/store/migrations`).
pub static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

/// Runs every pending migration.
pub async fn migrate(pool: &PgPool) -> Result<(), MigrateError> {
    MIGRATOR.run(pool).await
}

/// The least-privilege role the migrations create, and what the application
/// (dispatcher, API, workers) connects as: not a superuser, not the owner of
/// any table, no UPDATE, DELETE or TRUNCATE on the append-only tables
/// (docs/data-model.md, "The application role"). Migrations run as the owner.
pub const APP_ROLE: &str = "toolmock_app";

/// `options` with [`APP_ROLE`] as the user: how tests (and an application
/// given the owner's address for migrating) connect as the application.
pub fn as_app_role(options: PgConnectOptions) -> PgConnectOptions {
    options.username(APP_ROLE)
}

/// Opens a pool of at most `max_connections` to `url`, waiting at most
/// [`DEFAULT_ACQUIRE_TIMEOUT`] for a connection.
///
/// A connection taken from the pool after more than [`PING_AFTER_IDLE`] idle
/// is pinged first (and replaced when the server has gone); one in steady
/// use is not, which saves a round trip per query (sqlx pings on every
/// acquire by default).
pub async fn connect(url: &str, max_connections: u32) -> Result<PgPool, sqlx::Error> {
    connect_bounded(url, max_connections, DEFAULT_ACQUIRE_TIMEOUT).await
}

/// How long a query waits for a pooled connection by default before it
/// fails: short, so that during an outage requests fail fast instead of
/// queueing (sqlx's own default is 30 s).
pub const DEFAULT_ACQUIRE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// [`connect`], waiting at most `acquire_timeout` for a connection (opening
/// one included) before a query fails.
pub async fn connect_bounded(
    url: &str,
    max_connections: u32,
    acquire_timeout: std::time::Duration,
) -> Result<PgPool, sqlx::Error> {
    let options = PgConnectOptions::from_str(url)?;
    PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(acquire_timeout)
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for > PING_AFTER_IDLE {
                    sqlx::Connection::ping(conn).await?;
                }
                Ok(true)
            })
        })
        .connect_with(options)
        .await
}

/// How long a pooled connection may sit idle before it is pinged when taken.
pub const PING_AFTER_IDLE: std::time::Duration = std::time::Duration::from_secs(1);
