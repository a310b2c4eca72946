//! Clean finishes of many attempts in one statement.
//!
//! An attempt's clean finish (`toolmock_finish_clean`: the attempt's row
//! locked, its state row after it, the counts read after the locks, and
//! the outcome and the judgement written when nothing is left to record)
//! is a row of [`FinishRow`]; [`finish_rows`] runs the function once per
//! row, in order, in one statement. [`Finishes`] gathers the finishes that
//! arrive while earlier ones are being written (`gathering`, whose rules
//! hold): under load, workers' attempts end by the dozen, and one statement
//! and one commit serve them all. Each finish is decided by its own call of
//! the function exactly as alone; a statement the database refused (a
//! deadlock with another process's statement, say) is written again one
//! finish at a time.

use super::gathering::{Gathered, Gathering, answered_in_order, column};
use chrono::{DateTime, Utc};
use sqlx::postgres::PgPool;
use std::future::Future;
use uuid::Uuid;

/// One attempt's clean finish, as the statement binds it (documents as
/// JSON text).
#[derive(Debug)]
pub(super) struct FinishRow {
    pub(super) tenant: Uuid,
    pub(super) attempt: Uuid,
    /// The finish's time, against which an unfenced lease is checked.
    pub(super) at: DateTime<Utc>,
    /// The runner's verdict (`passed` or `failed`).
    pub(super) verdict: &'static str,
    /// The store's fence of the attempt (owner, epoch), if it holds one.
    pub(super) owner: Option<String>,
    pub(super) epoch: Option<i64>,
    /// Calls begun that left no mark (they count as begun).
    pub(super) unmarked: i64,
    /// The judgement: the unmet expectations and the judge's report.
    pub(super) unmet: Option<String>,
    pub(super) judge: Option<String>,
}

/// What the function found for one finish.
#[derive(Debug)]
pub(super) struct Finished {
    /// The attempt exists (for the tenant).
    pub(super) found: bool,
    /// The store's fence still holds (always, unfenced).
    pub(super) holds: bool,
    /// The attempt's status under the lock.
    pub(super) status: Option<String>,
    /// The outcome written, when the finish ended the attempt; `None` when
    /// something must be recorded first.
    pub(super) ended: Option<String>,
}

/// Finishes `rows` in one statement (see the module's documentation); one
/// [`Finished`] per row, in order.
pub(super) async fn finish_rows(
    pool: &PgPool,
    rows: &[FinishRow],
) -> Result<Vec<Finished>, sqlx::Error> {
    // The row's place, then `Finished`'s fields.
    type Row = (i64, bool, bool, Option<String>, Option<String>);
    let found: Vec<Row> = sqlx::query_as(
        "SELECT i.n, f.found, f.holds, f.status, f.outcome \
         FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::text[], $5::text[], \
             $6::int8[], $7::int8[], $8::text[], $9::text[]) WITH ORDINALITY \
             AS i(tenant_id, attempt_id, at, verdict, owner, epoch, unmarked, unmet, judge, n) \
         CROSS JOIN LATERAL toolmock_finish_clean(tenant_id => i.tenant_id, \
             attempt_id => i.attempt_id, at => i.at, verdict => i.verdict, owner => i.owner, \
             epoch => i.epoch, unmarked => i.unmarked, unmet => i.unmet::jsonb, \
             judge => i.judge::jsonb) AS f \
         ORDER BY i.n",
    )
    .bind(column(rows, |r| r.tenant))
    .bind(column(rows, |r| r.attempt))
    .bind(column(rows, |r| r.at))
    .bind(column(rows, |r| r.verdict))
    .bind(column(rows, |r| r.owner.as_deref()))
    .bind(column(rows, |r| r.epoch))
    .bind(column(rows, |r| r.unmarked))
    .bind(column(rows, |r| r.unmet.as_deref()))
    .bind(column(rows, |r| r.judge.as_deref()))
    .fetch_all(pool)
    .await?;
    answered_in_order(&found, rows.len(), |row| row.0, "finishes")?;
    Ok(found
        .into_iter()
        .map(|(_, found, holds, status, ended)| Finished {
            found,
            holds,
            status,
            ended,
        })
        .collect())
}

/// The finishes of a store and its clones waiting to be written, and the
/// writer that writes them.
pub(super) type Finishes = Gathering<FinishRow>;

impl Default for Finishes {
    /// One statement of finishes in flight: the finishes that end while it
    /// runs go out together in the next.
    fn default() -> Self {
        Self::new(1)
    }
}

impl Gathered for FinishRow {
    type Found = Finished;
    type With = ();

    fn attempt(&self) -> Uuid {
        self.attempt
    }

    fn write_all<'a>(
        pool: &'a PgPool,
        rows: &'a [Self],
        (): (),
    ) -> impl Future<Output = Result<Vec<Finished>, sqlx::Error>> + Send + 'a {
        finish_rows(pool, rows)
    }
}
