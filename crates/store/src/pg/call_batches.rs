//! Calls' one-statement writes, several attempts' in one statement.
//!
//! A call on the one-statement path (`fixtures`) is a row of [`CallRow`]:
//! the state it writes, its evidence, and what the statement checks (the
//! capability, the lease, the fence and the version). [`write_rows`] writes
//! any number of such rows in one statement, each checked and written or
//! refused on its own, exactly as one row alone would be.
//!
//! [`CallBatches`] gathers the rows of calls that arrive while earlier ones
//! are being written into one statement (`gathering`, whose rules hold):
//! a call waits for nothing when the store is idle, and each call gets its
//! answer only after the commit of the statement that wrote it.

use super::gathering::{Gathered, Gathering, answered_in_order, column};
use chrono::{DateTime, Utc};
use sqlx::postgres::PgPool;
use std::future::Future;
use uuid::Uuid;

/// How many statements of gathered calls a store (with its clones) has in
/// flight at most, unless told otherwise
/// ([`PgStore::with_call_statements`](super::PgStore::with_call_statements)).
/// One keeps a two-core PostgreSQL busiest: a second statement in flight
/// only makes each smaller (more parsing, planning and commits per call,
/// docs/performance.md); a server with more cores may take more.
pub const CALL_STATEMENTS_IN_FLIGHT: usize = 1;

/// One call's write, as the statement binds it (documents as JSON text).
#[derive(Debug)]
pub(super) struct CallRow {
    pub(super) tenant: Uuid,
    pub(super) attempt: Uuid,
    /// What the state row holds next.
    pub(super) state: String,
    /// The state row's version after the write.
    pub(super) version: i64,
    pub(super) tool: String,
    pub(super) operation: String,
    pub(super) pin_kind: Option<&'static str>,
    pub(super) pin_tool: Option<Uuid>,
    pub(super) pin_operation: Option<Uuid>,
    pub(super) pin_revision: Option<i32>,
    pub(super) pin_hash: Option<String>,
    pub(super) executor: &'static str,
    pub(super) variant: Option<String>,
    pub(super) rule: Option<i32>,
    pub(super) arguments: String,
    pub(super) result: String,
    pub(super) state_before: String,
    pub(super) state_after: String,
    pub(super) delay_ms: i32,
    pub(super) started_at: DateTime<Utc>,
    pub(super) duration_us: i64,
    pub(super) status: &'static str,
    pub(super) error: Option<String>,
    /// The call's time, against which an unfenced lease is checked.
    pub(super) now: DateTime<Utc>,
    /// The store's fence of the attempt (owner, epoch), if it holds one.
    pub(super) owner: Option<String>,
    pub(super) epoch: Option<i64>,
    pub(super) token: Vec<u8>,
    /// Whether the evidence row is also the call's begin mark.
    pub(super) mark: bool,
}

/// What the statement found for one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Written {
    /// The capability, the attempt's status and the lease allow the call
    /// (`None`: no such capability for the attempt).
    pub(super) live: Option<bool>,
    /// The store's fence still holds (`None`: no such capability).
    pub(super) holds: Option<bool>,
    /// The state and the evidence were written.
    pub(super) wrote: bool,
}

/// Writes `rows` in one statement (see the module's documentation); one
/// [`Written`] per row, in order.
pub(super) async fn write_rows<'c, E>(
    executor: E,
    rows: &[CallRow],
    check_versions: bool,
) -> Result<Vec<Written>, sqlx::Error>
where
    E: sqlx::Executor<'c, Database = sqlx::Postgres>,
{
    let found: Vec<(i64, Option<bool>, Option<bool>, bool)> = sqlx::query_as(
        "WITH input AS ( \
             SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::int8[], $5::text[], \
                 $6::text[], $7::text[], $8::uuid[], $9::uuid[], $10::int4[], $11::text[], \
                 $12::text[], $13::text[], $14::int4[], $15::text[], $16::text[], $17::text[], \
                 $18::text[], $19::int4[], $20::timestamptz[], $21::int8[], $22::text[], \
                 $23::text[], $24::timestamptz[], $25::text[], $26::int8[], $27::bytea[], \
                 $28::bool[]) WITH ORDINALITY AS i(tenant_id, attempt_id, state, version, \
                 tool_name, operation_name, pin_kind, tool_id, operation_id, revision, \
                 definition_hash, executor, variant, rule, arguments, result, state_before, \
                 state_after, delay_ms, started_at, duration_us, status, error, now, owner, \
                 epoch, token, mark, n)), \
         checked AS ( \
             SELECT i.n, (a.status = 'running' AND c.revoked_at IS NULL \
                     AND a.lease_expires_at > CASE WHEN i.owner IS NULL THEN i.now \
                         ELSE clock_timestamp() END) AS live, \
                 (i.owner IS NULL OR (a.lease_owner = i.owner AND a.lease_epoch = i.epoch \
                     AND a.lease_expires_at > clock_timestamp())) AS holds \
             FROM input i \
             JOIN attempts a ON a.tenant_id = i.tenant_id AND a.id = i.attempt_id \
             JOIN attempt_capabilities c ON c.tenant_id = i.tenant_id \
                 AND c.attempt_id = i.attempt_id AND c.token_hash = i.token), \
         updated AS ( \
             UPDATE attempt_state s SET state = i.state::jsonb, version = i.version, \
                 updated_at = now() \
             FROM input i JOIN checked k ON k.n = i.n AND k.live AND k.holds \
             WHERE s.tenant_id = i.tenant_id AND s.attempt_id = i.attempt_id \
                 AND (s.version = i.version - 1 OR NOT $29) \
                 AND s.attempt_status = 'running' \
                 AND (i.owner IS NULL OR s.attempt_epoch = i.epoch) \
             RETURNING i.n), \
         recorded AS ( \
             INSERT INTO evidence (tenant_id, attempt_id, tool_name, operation_name, \
                 pin_kind, tool_id, operation_id, revision, definition_hash, executor, \
                 variant, rule, arguments, result, state_before, state_after, \
                 state_version_before, state_version_after, delay_ms, started_at, \
                 duration_us, status, error, begin_mark) \
             SELECT i.tenant_id, i.attempt_id, i.tool_name, i.operation_name, i.pin_kind, \
                 i.tool_id, i.operation_id, i.revision, i.definition_hash, i.executor, \
                 i.variant, i.rule, i.arguments::jsonb, i.result::jsonb, \
                 i.state_before::jsonb, i.state_after::jsonb, i.version - 1, i.version, \
                 i.delay_ms, i.started_at, i.duration_us, i.status, i.error::jsonb, i.mark \
             FROM updated u JOIN input i ON i.n = u.n) \
         SELECT i.n, k.live, k.holds, u.n IS NOT NULL \
         FROM input i LEFT JOIN checked k ON k.n = i.n LEFT JOIN updated u ON u.n = i.n \
         ORDER BY i.n",
    )
    .bind(column(rows, |r| r.tenant))
    .bind(column(rows, |r| r.attempt))
    .bind(column(rows, |r| r.state.as_str()))
    .bind(column(rows, |r| r.version))
    .bind(column(rows, |r| r.tool.as_str()))
    .bind(column(rows, |r| r.operation.as_str()))
    .bind(column(rows, |r| r.pin_kind))
    .bind(column(rows, |r| r.pin_tool))
    .bind(column(rows, |r| r.pin_operation))
    .bind(column(rows, |r| r.pin_revision))
    .bind(column(rows, |r| r.pin_hash.as_deref()))
    .bind(column(rows, |r| r.executor))
    .bind(column(rows, |r| r.variant.as_deref()))
    .bind(column(rows, |r| r.rule))
    .bind(column(rows, |r| r.arguments.as_str()))
    .bind(column(rows, |r| r.result.as_str()))
    .bind(column(rows, |r| r.state_before.as_str()))
    .bind(column(rows, |r| r.state_after.as_str()))
    .bind(column(rows, |r| r.delay_ms))
    .bind(column(rows, |r| r.started_at))
    .bind(column(rows, |r| r.duration_us))
    .bind(column(rows, |r| r.status))
    .bind(column(rows, |r| r.error.as_deref()))
    .bind(column(rows, |r| r.now))
    .bind(column(rows, |r| r.owner.as_deref()))
    .bind(column(rows, |r| r.epoch))
    .bind(column(rows, |r| r.token.as_slice()))
    .bind(column(rows, |r| r.mark))
    .bind(check_versions)
    .fetch_all(executor)
    .await?;
    answered_in_order(&found, rows.len(), |row| row.0, "calls")?;
    Ok(found
        .into_iter()
        .map(|(_, live, holds, wrote)| Written { live, holds, wrote })
        .collect())
}

/// The calls of a store and its clones waiting to be written, and the
/// writers that write them (see the module's documentation).
pub(super) type CallBatches = Gathering<CallRow>;

impl Default for CallBatches {
    fn default() -> Self {
        Self::new(CALL_STATEMENTS_IN_FLIGHT)
    }
}

impl Gathered for CallRow {
    type Found = Written;
    /// Whether the statement checks the state rows' versions.
    type With = bool;

    fn attempt(&self) -> Uuid {
        self.attempt
    }

    fn write_all<'a>(
        pool: &'a PgPool,
        rows: &'a [Self],
        check_versions: bool,
    ) -> impl Future<Output = Result<Vec<Written>, sqlx::Error>> + Send + 'a {
        write_rows(pool, rows, check_versions)
    }
}
