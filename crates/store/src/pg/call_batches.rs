//! Calls' one-statement writes, several attempts' in one statement.
//!
//! A call on the one-statement path (`fixtures`) is a row of [`CallRow`]:
//! the state it writes, its evidence, and what the statement checks (the
//! capability, the lease, the fence and the version). [`write_rows`] writes
//! any number of such rows in one statement, each checked and written or
//! refused on its own, exactly as one row alone would be.
//!
//! [`CallBatches`] gathers the rows of calls that arrive while earlier ones
//! are being written: a call waits for nothing when the store is idle (a
//! writer starts at once), and under load the calls that queued behind the
//! statements in flight go out together, in one statement and one commit —
//! so PostgreSQL parses, plans and flushes its log once for all of them.
//! Each call still gets its answer only after the commit of the statement
//! that wrote it. Rules the gathering keeps:
//!
//! - at most one row per attempt in a statement, and no attempt in two
//!   statements in flight: a later call of an attempt waits for the earlier
//!   statement, so two statements never wait on each other's state rows;
//! - a statement the database answered with an error (a `CHECK`, a
//!   trigger, a deadlock, its connection terminated by the server) rolled
//!   back whole, so each of its calls is written again alone and gets its
//!   own answer; any other failure (the network lost before the answer,
//!   where the commit is unknown) is each call's failure, as it would be
//!   alone, and is never written again: that could apply a call twice;
//! - the writes run in tasks of their own: a caller that goes away (a
//!   client that hangs up) takes nothing from the others.

use super::Db;
use crate::error::map_sqlx_error;
use chrono::{DateTime, Utc};
use sqlx::postgres::PgPool;
use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::oneshot;
use toolmock_runtime::error::StoreError;
use uuid::Uuid;

/// How many statements of gathered calls a store (with its clones) has in
/// flight at most, unless told otherwise
/// ([`PgStore::with_call_statements`](super::PgStore::with_call_statements)).
/// One keeps a two-core PostgreSQL busiest: a second statement in flight
/// only makes each smaller (more parsing, planning and commits per call,
/// docs/performance.md); a server with more cores may take more.
pub const CALL_STATEMENTS_IN_FLIGHT: usize = 1;

/// The most calls one statement writes.
const MAX_CALLS_PER_STATEMENT: usize = 64;

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
    if found.len() != rows.len()
        || found
            .iter()
            .enumerate()
            .any(|(at, row)| row.0 != at as i64 + 1)
    {
        return Err(sqlx::Error::Protocol(format!(
            "a calls' statement answered {} rows for {} calls",
            found.len(),
            rows.len()
        )));
    }
    Ok(found
        .into_iter()
        .map(|(_, live, holds, wrote)| Written { live, holds, wrote })
        .collect())
}

/// One column of the rows, as the statement binds it (an array).
fn column<'r, T>(rows: &'r [CallRow], field: impl Fn(&'r CallRow) -> T) -> Vec<T> {
    rows.iter().map(field).collect()
}

/// What a gathered call's statement came to.
pub(super) enum Outcome {
    /// Its row was checked and written or refused.
    Written(Written),
    /// The database answered its statement, which held other calls too,
    /// with an error: it rolled back, and the call is to be written again
    /// alone.
    Alone(Box<CallRow>),
    /// The statement failed and whether it committed is unknown.
    Failed(StoreError),
}

/// A call waiting to be written, and where its outcome goes.
struct Waiting {
    row: CallRow,
    reply: oneshot::Sender<Outcome>,
}

struct Queue {
    /// The calls not yet in a statement, oldest first.
    waiting: VecDeque<Waiting>,
    /// The attempts of the statements in flight.
    in_flight: HashSet<Uuid>,
    /// The writer tasks running.
    writers: usize,
    /// The most writer tasks at once.
    max_writers: usize,
}

/// The calls of a store and its clones waiting to be written, and the
/// writers that write them (see the module's documentation).
pub(super) struct CallBatches(Mutex<Queue>);

impl Default for CallBatches {
    fn default() -> Self {
        Self::new(CALL_STATEMENTS_IN_FLIGHT)
    }
}

impl std::fmt::Debug for CallBatches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let queue = self.queue();
        f.debug_struct("CallBatches")
            .field("waiting", &queue.waiting.len())
            .field("writers", &queue.writers)
            .finish()
    }
}

impl CallBatches {
    /// Batches written by at most `statements` statements at once (at
    /// least one).
    pub(super) fn new(statements: usize) -> Self {
        Self(Mutex::new(Queue {
            waiting: VecDeque::new(),
            in_flight: HashSet::new(),
            writers: 0,
            max_writers: statements.max(1),
        }))
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes `row` with the calls gathered beside it; the outcome comes
    /// after the statement that wrote it committed (or failed).
    pub(super) async fn write(
        self: &Arc<Self>,
        pool: &PgPool,
        check_versions: bool,
        row: CallRow,
    ) -> Db<Outcome> {
        let (reply, outcome) = oneshot::channel();
        let start_writer = {
            let mut queue = self.queue();
            queue.waiting.push_back(Waiting { row, reply });
            let start = queue.writers < queue.max_writers;
            if start {
                queue.writers += 1;
            }
            start
        };
        if start_writer {
            let writer = Writer {
                batches: self.clone(),
                current: Vec::new(),
                retired: false,
            };
            tokio::spawn(writer.run(pool.clone(), check_versions));
        }
        outcome.await.map_err(|_| {
            StoreError::Backend("the call's writer stopped before its statement finished".into())
        })
    }

    /// The next statement's calls: the oldest waiting, at most one per
    /// attempt and none of an attempt in flight. `None` when there are
    /// none: the writer is then counted out in the same lock, so a call
    /// queued after this look starts a writer of its own.
    fn take(&self) -> Option<Vec<Waiting>> {
        let mut queue = self.queue();
        let mut taken = Vec::new();
        let mut left = VecDeque::with_capacity(queue.waiting.len());
        while let Some(waiting) = queue.waiting.pop_front() {
            if taken.len() < MAX_CALLS_PER_STATEMENT && queue.in_flight.insert(waiting.row.attempt)
            {
                taken.push(waiting);
            } else {
                left.push_back(waiting);
            }
        }
        queue.waiting = left;
        if taken.is_empty() {
            queue.writers -= 1;
            return None;
        }
        Some(taken)
    }

    /// The attempts of a statement that finished are free again.
    fn landed(&self, attempts: &[Uuid]) {
        let mut queue = self.queue();
        for attempt in attempts {
            queue.in_flight.remove(attempt);
        }
    }
}

/// A task writing gathered calls until none can be taken.
struct Writer {
    batches: Arc<CallBatches>,
    /// The attempts of its statement in flight.
    current: Vec<Uuid>,
    /// Counted out of the writers already (it found nothing to take).
    retired: bool,
}

impl Writer {
    async fn run(mut self, pool: PgPool, check_versions: bool) {
        while let Some(taken) = self.batches.take() {
            self.current = taken.iter().map(|w| w.row.attempt).collect();
            let (rows, replies): (Vec<CallRow>, Vec<_>) =
                taken.into_iter().map(|w| (w.row, w.reply)).unzip();
            let written = write_rows(&pool, &rows, check_versions).await;
            self.batches.landed(&std::mem::take(&mut self.current));
            match written {
                Ok(written) => {
                    for (reply, written) in replies.into_iter().zip(written) {
                        let _ = reply.send(Outcome::Written(written));
                    }
                }
                Err(error) if rows.len() == 1 => {
                    if let Some(reply) = replies.into_iter().next() {
                        let _ = reply.send(Outcome::Failed(map_sqlx_error(error)));
                    }
                }
                Err(error) if error.as_database_error().is_some() => {
                    for (reply, row) in replies.into_iter().zip(rows) {
                        let _ = reply.send(Outcome::Alone(Box::new(row)));
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, calls = rows.len(), "a calls' statement failed");
                    let shared = Arc::new(error);
                    for reply in replies {
                        let failure = SharedFailure(shared.clone());
                        let _ = reply.send(Outcome::Failed(StoreError::Backend(Box::new(failure))));
                    }
                }
            }
        }
        self.retired = true;
    }
}

impl Drop for Writer {
    /// A writer that went away before it ran dry (its task panicked or was
    /// dropped) frees its attempts and its place; if none is left to write
    /// the calls still waiting, they fail rather than wait forever.
    fn drop(&mut self) {
        if self.retired {
            return;
        }
        let mut queue = self.batches.queue();
        queue.writers -= 1;
        for attempt in &self.current {
            queue.in_flight.remove(attempt);
        }
        if queue.writers == 0 {
            queue.waiting.clear();
        }
    }
}

/// One failure of a statement, answered to each of its calls.
#[derive(Debug)]
struct SharedFailure(Arc<sqlx::Error>);

impl std::fmt::Display for SharedFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::error::Error for SharedFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(attempt: u128) -> CallRow {
        CallRow {
            tenant: Uuid::nil(),
            attempt: Uuid::from_u128(attempt),
            state: "{}".into(),
            version: 1,
            tool: "t".into(),
            operation: "o".into(),
            pin_kind: None,
            pin_tool: None,
            pin_operation: None,
            pin_revision: None,
            pin_hash: None,
            executor: "mock",
            variant: None,
            rule: None,
            arguments: "{}".into(),
            result: "{}".into(),
            state_before: "{}".into(),
            state_after: "{}".into(),
            delay_ms: 0,
            started_at: DateTime::<Utc>::MIN_UTC,
            duration_us: 0,
            status: "ok",
            error: None,
            now: DateTime::<Utc>::MIN_UTC,
            owner: None,
            epoch: None,
            token: Vec::new(),
            mark: true,
        }
    }

    fn queued(batches: &CallBatches, attempts: &[u128]) {
        let mut queue = batches.queue();
        queue.writers += 1;
        for attempt in attempts {
            let (reply, _) = oneshot::channel();
            queue.waiting.push_back(Waiting {
                row: row(*attempt),
                reply,
            });
        }
    }

    fn attempts(taken: &[Waiting]) -> Vec<u128> {
        taken.iter().map(|w| w.row.attempt.as_u128()).collect()
    }

    #[test]
    fn a_statement_takes_one_call_per_attempt_and_none_of_an_attempt_in_flight() {
        let batches = CallBatches::new(2);
        queued(&batches, &[1, 2, 1, 3, 2]);
        let first = batches.take().unwrap();
        assert_eq!(attempts(&first), [1, 2, 3], "one per attempt, oldest first");
        // A second writer finds only calls of attempts in flight.
        queued(&batches, &[]);
        assert!(batches.take().is_none());
        batches.landed(&[1, 2, 3].map(Uuid::from_u128));
        assert_eq!(attempts(&batches.take().unwrap()), [1, 2]);
    }

    #[test]
    fn a_statement_takes_at_most_its_bound() {
        let batches = CallBatches::new(1);
        let many: Vec<u128> = (0..(MAX_CALLS_PER_STATEMENT as u128 + 5)).collect();
        queued(&batches, &many);
        assert_eq!(batches.take().unwrap().len(), MAX_CALLS_PER_STATEMENT);
        assert_eq!(batches.take().unwrap().len(), 5);
        assert!(batches.take().is_none());
        assert_eq!(
            batches.queue().writers,
            0,
            "the writer counted out when dry"
        );
    }
}
