//! Writes of many attempts gathered into one statement.
//!
//! A [`Gathering`] collects the rows (writes) that arrive while earlier
//! ones are being written: a row waits for nothing when the store is idle
//! (a writer starts at once), and under load the rows that queued behind
//! the statements in flight go out together, in one statement and one
//! commit — so PostgreSQL parses, plans and flushes its log once for all of
//! them. Each row still gets its answer only after the commit of the
//! statement that wrote it. What a row is and how a statement writes rows
//! is the [`Gathered`] type's (`call_batches`: a call's state and evidence;
//! `finishes`: an attempt's clean finish). Rules the gathering keeps:
//!
//! - at most one row per attempt in a statement, and no attempt in two
//!   statements in flight: a later row of an attempt waits for the earlier
//!   statement, so two statements of one store never wait on each other's
//!   rows of one attempt;
//! - a statement the database answered with an error (a `CHECK`, a
//!   trigger, a deadlock, its connection terminated by the server) rolled
//!   back whole, so each of its rows is written again alone and gets its
//!   own answer; any other failure (the network lost before the answer,
//!   where the commit is unknown) is each row's failure, as it would be
//!   alone, and is never written again: that could apply a write twice;
//! - the writes run in tasks of their own: a caller that goes away (a
//!   client that hangs up) takes nothing from the others.

use super::Db;
use crate::error::map_sqlx_error;
use sqlx::postgres::PgPool;
use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::oneshot;
use toolmock_runtime::error::StoreError;
use uuid::Uuid;

/// The most rows one statement writes.
const MAX_ROWS_PER_STATEMENT: usize = 64;

/// A write that can be gathered with others into one statement.
pub(super) trait Gathered: Sized + Send + Sync + 'static {
    /// What the statement found for one row.
    type Found: Send + 'static;
    /// How every statement of a gathering writes (fixed for the gathering).
    type With: Copy + Send + Sync + 'static;
    /// The attempt the row writes for.
    fn attempt(&self) -> Uuid;
    /// Writes `rows` in one statement: one `Found` per row, in order.
    fn write_all<'a>(
        pool: &'a PgPool,
        rows: &'a [Self],
        with: Self::With,
    ) -> impl Future<Output = Result<Vec<Self::Found>, sqlx::Error>> + Send + 'a;
}

/// What a gathered row's statement came to: the row written (or refused)
/// as the statement found it, or the statement's failure.
type Outcome<R> = Result<<R as Gathered>::Found, StoreError>;

/// A row waiting to be written, and where its outcome goes.
struct Waiting<R: Gathered> {
    row: R,
    reply: oneshot::Sender<Outcome<R>>,
}

struct Queue<R: Gathered> {
    /// The rows not yet in a statement, oldest first.
    waiting: VecDeque<Waiting<R>>,
    /// The attempts of the statements in flight.
    in_flight: HashSet<Uuid>,
    /// The writer tasks running.
    writers: usize,
    /// The most writer tasks at once.
    max_writers: usize,
}

/// The rows of a store and its clones waiting to be written, and the
/// writers that write them (see the module's documentation).
pub(super) struct Gathering<R: Gathered>(Mutex<Queue<R>>);

impl<R: Gathered> std::fmt::Debug for Gathering<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let queue = self.queue();
        f.debug_struct("Gathering")
            .field("waiting", &queue.waiting.len())
            .field("writers", &queue.writers)
            .finish()
    }
}

impl<R: Gathered> Gathering<R> {
    /// Rows written by at most `statements` statements at once (at least
    /// one).
    pub(super) fn new(statements: usize) -> Self {
        Self(Mutex::new(Queue {
            waiting: VecDeque::new(),
            in_flight: HashSet::new(),
            writers: 0,
            max_writers: statements.max(1),
        }))
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue<R>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes `row` with the rows gathered beside it (or alone, when the
    /// database refused their statement); the answer comes after the
    /// statement that wrote it committed (or failed).
    pub(super) async fn write(
        self: &Arc<Self>,
        pool: &PgPool,
        with: R::With,
        row: R,
    ) -> Db<R::Found> {
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
                gathering: self.clone(),
                current: Vec::new(),
                retired: false,
            };
            tokio::spawn(writer.run(pool.clone(), with));
        }
        outcome.await.map_err(|_| {
            StoreError::Backend("the writer stopped before its statement finished".into())
        })?
    }

    /// The next statement's rows: the oldest waiting, at most one per
    /// attempt and none of an attempt in flight. `None` when there are
    /// none: the writer is then counted out in the same lock, so a row
    /// queued after this look starts a writer of its own.
    fn take(&self) -> Option<Vec<Waiting<R>>> {
        let mut queue = self.queue();
        let mut taken = Vec::new();
        let mut left = VecDeque::with_capacity(queue.waiting.len());
        while let Some(waiting) = queue.waiting.pop_front() {
            if taken.len() < MAX_ROWS_PER_STATEMENT && queue.in_flight.insert(waiting.row.attempt())
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

/// A task writing gathered rows until none can be taken.
struct Writer<R: Gathered> {
    gathering: Arc<Gathering<R>>,
    /// The attempts of its statement in flight.
    current: Vec<Uuid>,
    /// Counted out of the writers already (it found nothing to take).
    retired: bool,
}

impl<R: Gathered> Writer<R> {
    async fn run(mut self, pool: PgPool, with: R::With) {
        let mut answered = false;
        loop {
            if answered {
                // The callers just answered are woken, and their next rows
                // (a call's next step, on the store's copy) are often ready
                // at once: one turn of the scheduler lets them join the next
                // statement rather than wait for the one after it.
                tokio::task::yield_now().await;
            }
            let Some(taken) = self.gathering.take() else {
                break;
            };
            answered = true;
            self.current = taken.iter().map(|w| w.row.attempt()).collect();
            let (rows, replies): (Vec<R>, Vec<_>) =
                taken.into_iter().map(|w| (w.row, w.reply)).unzip();
            let written = R::write_all(&pool, &rows, with).await;
            self.gathering.landed(&std::mem::take(&mut self.current));
            match written {
                Ok(found) => {
                    // `write_all` answers one row per row, in order
                    // (`answered_in_order`).
                    for (reply, found) in replies.into_iter().zip(found) {
                        let _ = reply.send(Ok(found));
                    }
                }
                Err(error) if rows.len() == 1 => {
                    if let Some(reply) = replies.into_iter().next() {
                        let _ = reply.send(Err(map_sqlx_error(error)));
                    }
                }
                Err(error) if error.as_database_error().is_some() => {
                    // It rolled back whole: each row is written again
                    // alone, side by side, and gets its own answer.
                    for (reply, row) in replies.into_iter().zip(rows) {
                        let pool = pool.clone();
                        tokio::spawn(async move {
                            let _ = reply.send(write_alone(&pool, &row, with).await);
                        });
                    }
                }
                Err(error) => fail_each::<R>(replies, error),
            }
        }
        self.retired = true;
    }
}

/// `row` written in a statement of its own.
async fn write_alone<R: Gathered>(pool: &PgPool, row: &R, with: R::With) -> Outcome<R> {
    R::write_all(pool, std::slice::from_ref(row), with)
        .await
        .map_err(map_sqlx_error)?
        .pop()
        .ok_or_else(|| {
            crate::rows::corrupt("gathered statement", "no row for the row written alone")
        })
}

/// One column of `rows`, as a gathered statement binds it (an array).
pub(super) fn column<'r, R, T>(rows: &'r [R], field: impl Fn(&'r R) -> T) -> Vec<T> {
    rows.iter().map(field).collect()
}

/// Checks that a gathered statement answered one row per row it was given,
/// in order (`place`: the row's place, from 1, as the statement numbered
/// it `WITH ORDINALITY`); `what` names the rows in the error.
pub(super) fn answered_in_order<T>(
    found: &[T],
    rows: usize,
    place: impl Fn(&T) -> i64,
    what: &str,
) -> Result<(), sqlx::Error> {
    let in_order = found.len() == rows
        && found
            .iter()
            .enumerate()
            .all(|(at, row)| place(row) == at as i64 + 1);
    if in_order {
        return Ok(());
    }
    Err(sqlx::Error::Protocol(format!(
        "a statement of gathered {what} answered {} rows for {rows}",
        found.len()
    )))
}

/// A document as the JSON text a gathered statement binds.
pub(super) fn json_text<T: serde::Serialize + ?Sized>(document: &T) -> Db<String> {
    serde_json::to_string(document).map_err(|e| crate::rows::corrupt("document", e))
}

/// Answers each row of a statement that failed, or whose commit is
/// unknown, with that failure: none is written again.
fn fail_each<R: Gathered>(replies: Vec<oneshot::Sender<Outcome<R>>>, error: sqlx::Error) {
    tracing::warn!(%error, rows = replies.len(), "a gathered statement failed");
    let shared = Arc::new(error);
    for reply in replies {
        let failure = SharedFailure(shared.clone());
        let _ = reply.send(Err(StoreError::Backend(Box::new(failure))));
    }
}

impl<R: Gathered> Drop for Writer<R> {
    /// A writer that went away before it ran dry (its task panicked or was
    /// dropped) frees its attempts and its place; if none is left to write
    /// the rows still waiting, they fail rather than wait forever.
    fn drop(&mut self) {
        if self.retired {
            return;
        }
        let mut queue = self.gathering.queue();
        queue.writers -= 1;
        for attempt in &self.current {
            queue.in_flight.remove(attempt);
        }
        if queue.writers == 0 {
            queue.waiting.clear();
        }
    }
}

/// One failure of a statement, answered to each of its rows.
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

    /// A row of nothing but its attempt: what the gathering looks at.
    struct Row(Uuid);

    impl Gathered for Row {
        type Found = ();
        type With = ();
        fn attempt(&self) -> Uuid {
            self.0
        }
        async fn write_all(_: &PgPool, rows: &[Self], (): ()) -> Result<Vec<()>, sqlx::Error> {
            Ok(vec![(); rows.len()])
        }
    }

    fn queued(gathering: &Gathering<Row>, attempts: &[u128]) {
        let mut queue = gathering.queue();
        queue.writers += 1;
        for attempt in attempts {
            let (reply, _) = oneshot::channel();
            queue.waiting.push_back(Waiting {
                row: Row(Uuid::from_u128(*attempt)),
                reply,
            });
        }
    }

    fn attempts(taken: &[Waiting<Row>]) -> Vec<u128> {
        taken.iter().map(|w| w.row.0.as_u128()).collect()
    }

    #[test]
    fn a_statement_takes_one_row_per_attempt_and_none_of_an_attempt_in_flight() {
        let gathering = Gathering::new(2);
        queued(&gathering, &[1, 2, 1, 3, 2]);
        let first = gathering.take().unwrap();
        assert_eq!(attempts(&first), [1, 2, 3], "one per attempt, oldest first");
        // A second writer finds only rows of attempts in flight.
        queued(&gathering, &[]);
        assert!(gathering.take().is_none());
        gathering.landed(&[1, 2, 3].map(Uuid::from_u128));
        assert_eq!(attempts(&gathering.take().unwrap()), [1, 2]);
    }

    #[test]
    fn a_statement_takes_at_most_its_bound() {
        let gathering = Gathering::new(1);
        let many: Vec<u128> = (0..(MAX_ROWS_PER_STATEMENT as u128 + 5)).collect();
        queued(&gathering, &many);
        assert_eq!(gathering.take().unwrap().len(), MAX_ROWS_PER_STATEMENT);
        assert_eq!(gathering.take().unwrap().len(), 5);
        assert!(gathering.take().is_none());
        assert_eq!(
            gathering.queue().writers,
            0,
            "the writer counted out when dry"
        );
    }
}
