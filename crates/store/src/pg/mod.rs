//! [`PgStore`]: the runtime's storage traits on PostgreSQL, one file per
//! trait (`catalog`, `pins`, `fixtures`, `evidence`, `attempts`), and the
//! read models the API lists (`tool_views`, `simulations`); the row types
//! they read are in `crate::rows`.
//!
//! Lock order (see docs/data-model.md): a call locks only its attempt's
//! `attempt_state` row, whose copies of the attempt's status and lease
//! epoch are its fence; a revision save only its `tool_operations` row;
//! finishing an attempt, a release and the queue's lease changes lock the
//! `attempts` row first and the state row after it; recording a harness
//! error locks the `attempts` row only. No transaction locks the two the
//! other way round, so none can deadlock on one attempt's rows. A statement
//! gathered over several attempts (`gathering`: calls, finishes) can meet
//! another process's in opposite orders; PostgreSQL refuses one, and its
//! rows are written again alone (docs/data-model.md, "Lock order").

mod attempts;
mod bases;
mod call_batches;
mod cassettes;
mod catalog;
mod conversations;
mod evidence;
mod finishes;
mod fixtures;
mod gathering;
mod held;
mod pins;
mod queue;
mod records;
mod simulations;
mod state_reads;
mod tool_views;
mod usage;
mod verifications;

pub use call_batches::CALL_STATEMENTS_IN_FLIGHT;
pub use cassettes::StoredCassette;
pub use conversations::StoredMessage;
pub use queue::{Claimed, Fence, QUEUE_CHANNEL, Reaped, Released};
pub use simulations::{AttemptListing, SimulationListing};
pub use tool_views::{
    IndexedOperation, RevisionSummary, StoredContract, TestingIndex, ToolListing,
};
pub use usage::{BudgetLimits, BudgetStanding, UsageRecord, UsageTotals};
pub use verifications::{
    ClaimedVerification, MAX_VERIFICATION_CLAIMS, VerificationMark, VerificationRecord,
    VerificationResult, VerificationSettings,
};

use crate::error::map_sqlx_error;
use sqlx::postgres::PgPool;
use sqlx::{Postgres, Transaction};
use toolmock_runtime::error::StoreError;
use toolmock_runtime::model::{AttemptId, TenantId};

/// The PostgreSQL backend. Cloning shares the pool and the fences.
///
/// A worker's store holds a [`Fence`] for each attempt it has claimed
/// ([`PgStore::hold`]): every write the store makes for such an attempt —
/// a call's begin mark, its state and evidence, tool input and harness
/// errors, revocations, the judgement, the finish — checks in the same
/// statement (or under the same row lock) that the attempt's lease is still
/// that owner's at that epoch, and is refused as [`StoreError::Fenced`]
/// otherwise. Attempts it holds no fence for (an external agent's, served
/// by the API) are written unfenced, as before.
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
    fences: std::sync::Arc<queue::Fences>,
    /// The fixture bases read, shared by every clone (and `unfenced`).
    bases: std::sync::Arc<bases::Bases>,
    /// The state rows this store last wrote, by attempt (`held`), shared
    /// by every clone.
    copies: std::sync::Arc<held::Copies>,
    /// The one-statement calls waiting to be written together
    /// (`call_batches`), shared by every clone.
    calls: std::sync::Arc<call_batches::CallBatches>,
    /// The clean finishes waiting to be written together (`finishes`),
    /// shared by every clone.
    finishes: std::sync::Arc<finishes::Finishes>,
    /// Whether a call's one-statement write checks that the state row is
    /// still at its copy's version: always, except in the test that shows
    /// what that check keeps out (`PgStore::without_version_check`, `testkit` only).
    check_versions: bool,
}

impl PgStore {
    /// A store over a migrated pool.
    pub fn new(pool: PgPool) -> Self {
        Self {
            pool,
            fences: std::sync::Arc::default(),
            bases: std::sync::Arc::default(),
            copies: std::sync::Arc::default(),
            calls: std::sync::Arc::default(),
            finishes: std::sync::Arc::default(),
            check_versions: true,
        }
    }

    /// This store with the version check of the one-statement write turned
    /// off — wrong on purpose: the linearizability tests run with it to
    /// show that they fail without the check (concurrent calls evaluated on
    /// one copy both write). Only with the `testkit` feature.
    #[cfg(feature = "testkit")]
    pub fn without_version_check(mut self) -> Self {
        self.check_versions = false;
        self
    }

    /// This store with at most `statements` statements of gathered calls in
    /// flight at once (at least one; default [`CALL_STATEMENTS_IN_FLIGHT`]).
    /// Set it before the store serves any call: it starts a new gathering.
    pub fn with_call_statements(mut self, statements: usize) -> Self {
        self.calls = std::sync::Arc::new(call_batches::CallBatches::new(statements));
        self
    }

    fn checks_versions(&self) -> bool {
        self.check_versions
    }

    /// The same pool with no fence held: what a reaper writes with, since it
    /// ends attempts whose lease another holder (or this one) lost.
    pub fn unfenced(&self) -> Self {
        Self {
            bases: self.bases.clone(),
            ..Self::new(self.pool.clone())
        }
    }

    /// The pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

type Db<T> = Result<T, StoreError>;

fn db<T>(result: Result<T, sqlx::Error>) -> Db<T> {
    result.map_err(map_sqlx_error)
}

async fn rollback(tx: Transaction<'static, Postgres>) -> Db<()> {
    db(tx.rollback().await)
}

impl PgStore {
    /// The rows of one of an attempt's listings (`sql` binds the tenant as
    /// `$1` and the attempt as `$2`); "not found" when there are none because
    /// the attempt is not this tenant's.
    async fn attempt_rows<R>(
        &self,
        sql: &'static str,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Db<Vec<R>>
    where
        R: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin,
    {
        let rows: Vec<R> = db(sqlx::query_as(sql)
            .bind(tenant.as_uuid())
            .bind(attempt.as_uuid())
            .fetch_all(&self.pool)
            .await)?;
        self.require_attempt(tenant, attempt, rows.is_empty())
            .await?;
        Ok(rows)
    }

    /// An empty listing is "not found" when the attempt is not this tenant's.
    async fn require_attempt(&self, tenant: TenantId, attempt: AttemptId, empty: bool) -> Db<()> {
        if !empty {
            return Ok(());
        }
        let found: Option<uuid::Uuid> = db(sqlx::query_scalar(
            "SELECT id FROM attempts WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(attempt.as_uuid())
        .fetch_optional(&self.pool)
        .await)?;
        found
            .map(|_| ())
            .ok_or(StoreError::NotFound { entity: "attempt" })
    }
}
