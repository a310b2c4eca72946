//! Verifications of library tools (docs/verify.md, "On the service"): a
//! tool's settings and schedule, the queue of verifications (claimed by
//! workers under a lease, `FOR UPDATE SKIP LOCKED`, like attempts), and
//! what each found per operation — appended once, beside the revisions,
//! never changed. The marks the API shows (an operation's latest verdict,
//! a pinned definition that diverged) are read from those rows.

use super::{Db, PgStore, db};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::time::Duration;
use toolmock_runtime::model::{OperationId, TenantId, ToolId};
use uuid::Uuid;

/// How many times a verification is claimed before a lease that keeps
/// running out ends it as failed.
pub const MAX_VERIFICATION_CLAIMS: i32 = 3;

/// A tool's verification settings.
#[derive(Debug, Clone, PartialEq)]
pub struct VerificationSettings {
    /// The tool.
    pub tool: ToolId,
    /// The settings document (the API's wire form).
    pub settings: Value,
    /// The schedule, in seconds (none: only on request).
    pub every_seconds: Option<i32>,
    /// When the schedule queues the next verification.
    pub next_due_at: Option<DateTime<Utc>>,
    /// Who set them.
    pub updated_by: String,
    /// When.
    pub updated_at: DateTime<Utc>,
}

/// One verification.
#[derive(Debug, Clone, PartialEq)]
pub struct VerificationRecord {
    /// Its id.
    pub id: Uuid,
    /// The tool.
    pub tool: ToolId,
    /// The token's subject that asked, or `schedule`.
    pub requested_by: String,
    /// The settings it runs with.
    pub settings: Value,
    /// `queued`, `running`, `finished` or `failed`.
    pub status: String,
    /// When it was queued.
    pub queued_at: DateTime<Utc>,
    /// When a worker last claimed it.
    pub started_at: Option<DateTime<Utc>>,
    /// When it finished or failed.
    pub finished_at: Option<DateTime<Utc>>,
    /// Finished: whether nothing drifted, diverged or failed.
    pub ok: Option<bool>,
    /// Finished: the report's counts.
    pub summary: Option<Value>,
    /// Failed: why.
    pub error: Option<String>,
}

/// What a verification found for one operation.
#[derive(Debug, Clone, PartialEq)]
pub struct VerificationResult {
    /// The operation.
    pub operation: OperationId,
    /// The revision whose mock was checked (none: no mock).
    pub revision: Option<i32>,
    /// Its definition's hash.
    pub definition_hash: Option<String>,
    /// The contract it was checked against.
    pub contract_hash: String,
    /// `diverged`, `drifted`, `failed`, `agreed` or `unverified`.
    pub verdict: String,
    /// How many divergences its checks found.
    pub divergences: i32,
    /// The operation's whole report.
    pub report: Value,
}

/// A verification a worker claimed.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimedVerification {
    /// Its tenant.
    pub tenant: TenantId,
    /// Its id.
    pub id: Uuid,
    /// The tool.
    pub tool: ToolId,
    /// The settings it runs with.
    pub settings: Value,
}

/// The latest verdict on one operation's mock, or on one definition.
#[derive(Debug, Clone, PartialEq)]
pub struct VerificationMark {
    /// The verification.
    pub verification: Uuid,
    /// The tool.
    pub tool: ToolId,
    /// The operation.
    pub operation: OperationId,
    /// The revision checked.
    pub revision: Option<i32>,
    /// The definition checked.
    pub definition_hash: Option<String>,
    /// The verdict.
    pub verdict: String,
    /// How many divergences.
    pub divergences: i32,
    /// When.
    pub at: DateTime<Utc>,
}

type RecordRow = (
    Uuid,
    Uuid,
    String,
    sqlx::types::Json<Value>,
    String,
    DateTime<Utc>,
    Option<DateTime<Utc>>,
    Option<DateTime<Utc>>,
    Option<bool>,
    Option<sqlx::types::Json<Value>>,
    Option<String>,
);

const RECORD_COLUMNS: &str = "id, tool_id, requested_by, settings, status, queued_at, \
     started_at, finished_at, ok, summary, error";

fn record(row: RecordRow) -> VerificationRecord {
    let (
        id,
        tool,
        requested_by,
        settings,
        status,
        queued_at,
        started_at,
        finished_at,
        ok,
        summary,
        error,
    ) = row;
    VerificationRecord {
        id,
        tool: ToolId(tool),
        requested_by,
        settings: settings.0,
        status,
        queued_at,
        started_at,
        finished_at,
        ok,
        summary: summary.map(|s| s.0),
        error,
    }
}

type SettingsRow = (
    sqlx::types::Json<Value>,
    Option<i32>,
    Option<DateTime<Utc>>,
    String,
    DateTime<Utc>,
);

fn settings_of(tool: ToolId, row: SettingsRow) -> VerificationSettings {
    VerificationSettings {
        tool,
        settings: row.0.0,
        every_seconds: row.1,
        next_due_at: row.2,
        updated_by: row.3,
        updated_at: row.4,
    }
}

type MarkRow = (
    Uuid,
    Uuid,
    Uuid,
    Option<i32>,
    Option<String>,
    String,
    i32,
    DateTime<Utc>,
);

fn mark(row: MarkRow) -> VerificationMark {
    let (verification, tool, operation, revision, definition_hash, verdict, divergences, at) = row;
    VerificationMark {
        verification,
        tool: ToolId(tool),
        operation: OperationId(operation),
        revision,
        definition_hash,
        verdict,
        divergences,
        at,
    }
}

impl PgStore {
    /// Sets `tool`'s verification settings (replacing any): `every_seconds`
    /// schedules one every so often, the first that long from now.
    pub async fn put_verification_settings(
        &self,
        tenant: TenantId,
        tool: ToolId,
        settings: &Value,
        every_seconds: Option<i32>,
        by: &str,
    ) -> Db<VerificationSettings> {
        let row: SettingsRow =
            db(sqlx::query_as(
                "INSERT INTO tool_verification_settings (tenant_id, tool_id, settings, every_seconds, \
                     next_due_at, updated_by, updated_at) \
                 VALUES ($1, $2, $3, $4, clock_timestamp() + make_interval(secs => $4), $5, clock_timestamp()) \
                 ON CONFLICT (tenant_id, tool_id) DO UPDATE SET settings = EXCLUDED.settings, \
                     every_seconds = EXCLUDED.every_seconds, next_due_at = EXCLUDED.next_due_at, \
                     updated_by = EXCLUDED.updated_by, updated_at = EXCLUDED.updated_at \
                 RETURNING settings, every_seconds, next_due_at, updated_by, updated_at",
            )
            .bind(tenant.as_uuid())
            .bind(tool.as_uuid())
            .bind(sqlx::types::Json(settings))
            .bind(every_seconds)
            .bind(by)
            .fetch_one(&self.pool)
            .await)?;
        Ok(settings_of(tool, row))
    }

    /// `tool`'s verification settings, when some were set.
    pub async fn verification_settings(
        &self,
        tenant: TenantId,
        tool: ToolId,
    ) -> Db<Option<VerificationSettings>> {
        let row: Option<SettingsRow> = db(sqlx::query_as(
            "SELECT settings, every_seconds, next_due_at, updated_by, updated_at \
                 FROM tool_verification_settings WHERE tenant_id = $1 AND tool_id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(tool.as_uuid())
        .fetch_optional(&self.pool)
        .await)?;
        Ok(row.map(|row| settings_of(tool, row)))
    }

    /// Queues a verification of `tool` with `settings`.
    pub async fn queue_verification(
        &self,
        tenant: TenantId,
        tool: ToolId,
        requested_by: &str,
        settings: &Value,
    ) -> Db<VerificationRecord> {
        let row: RecordRow = db(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "INSERT INTO tool_verifications (tenant_id, id, tool_id, requested_by, settings, status, queued_at) \
             VALUES ($1, $2, $3, $4, $5, 'queued', clock_timestamp()) RETURNING {RECORD_COLUMNS}"
        )))
        .bind(tenant.as_uuid())
        .bind(Uuid::new_v4())
        .bind(tool.as_uuid())
        .bind(requested_by)
        .bind(sqlx::types::Json(settings))
        .fetch_one(&self.pool)
        .await)?;
        Ok(record(row))
    }

    /// `tool`'s verifications, the latest first, at most `limit`.
    pub async fn verifications(
        &self,
        tenant: TenantId,
        tool: ToolId,
        limit: u32,
    ) -> Db<Vec<VerificationRecord>> {
        let rows: Vec<RecordRow> = db(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {RECORD_COLUMNS} FROM tool_verifications WHERE tenant_id = $1 AND tool_id = $2 \
             ORDER BY queued_at DESC, id LIMIT $3"
        )))
        .bind(tenant.as_uuid())
        .bind(tool.as_uuid())
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await)?;
        Ok(rows.into_iter().map(record).collect())
    }

    /// One verification of `tool` and its results (in the tool's
    /// operation order).
    pub async fn verification(
        &self,
        tenant: TenantId,
        tool: ToolId,
        id: Uuid,
    ) -> Db<(VerificationRecord, Vec<VerificationResult>)> {
        let row: Option<RecordRow> = db(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {RECORD_COLUMNS} FROM tool_verifications \
             WHERE tenant_id = $1 AND tool_id = $2 AND id = $3"
        )))
        .bind(tenant.as_uuid())
        .bind(tool.as_uuid())
        .bind(id)
        .fetch_optional(&self.pool)
        .await)?;
        let Some(row) = row else {
            return Err(toolmock_runtime::error::StoreError::NotFound {
                entity: "verification",
            });
        };
        type ResultRow = (
            Uuid,
            Option<i32>,
            Option<String>,
            String,
            String,
            i32,
            sqlx::types::Json<Value>,
        );
        let results: Vec<ResultRow> = db(sqlx::query_as(
            "SELECT r.operation_id, r.revision, r.definition_hash, r.contract_hash, r.verdict, \
                 r.divergences, r.report \
             FROM tool_verification_results r \
             JOIN tool_operations o ON o.tenant_id = r.tenant_id AND o.id = r.operation_id \
             WHERE r.tenant_id = $1 AND r.verification_id = $2 ORDER BY o.name",
        )
        .bind(tenant.as_uuid())
        .bind(id)
        .fetch_all(&self.pool)
        .await)?;
        Ok((
            record(row),
            results
                .into_iter()
                .map(
                    |(
                        operation,
                        revision,
                        definition_hash,
                        contract_hash,
                        verdict,
                        divergences,
                        report,
                    )| {
                        VerificationResult {
                            operation: OperationId(operation),
                            revision,
                            definition_hash,
                            contract_hash,
                            verdict,
                            divergences,
                            report: report.0,
                        }
                    },
                )
                .collect(),
        ))
    }

    /// Claims the oldest queued verification of any tenant for `owner`
    /// (`FOR UPDATE SKIP LOCKED`), or one whose lease ran out: `running`
    /// under a lease of `lease` from now. One claimed
    /// [`MAX_VERIFICATION_CLAIMS`] times already ends `failed` instead.
    pub async fn claim_verification(
        &self,
        owner: &str,
        lease: Duration,
    ) -> Db<Option<ClaimedVerification>> {
        db(sqlx::query(
            "UPDATE tool_verifications SET status = 'failed', finished_at = clock_timestamp(), \
                 lease_owner = '', error = 'its lease ran out ' || claims || ' times: the worker running it stopped or it never finished' \
             WHERE status = 'running' AND lease_expires_at <= clock_timestamp() AND claims >= $1",
        )
        .bind(MAX_VERIFICATION_CLAIMS)
        .execute(&self.pool)
        .await)?;
        let row: Option<(Uuid, Uuid, Uuid, sqlx::types::Json<Value>)> = db(sqlx::query_as(
            "WITH picked AS ( \
                 SELECT tenant_id, id FROM tool_verifications \
                 WHERE status = 'queued' \
                     OR (status = 'running' AND lease_expires_at <= clock_timestamp()) \
                 ORDER BY queued_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) \
             UPDATE tool_verifications v SET status = 'running', lease_owner = $1, \
                 lease_expires_at = clock_timestamp() + make_interval(secs => $2), \
                 started_at = clock_timestamp(), claims = v.claims + 1 \
             FROM picked p WHERE v.tenant_id = p.tenant_id AND v.id = p.id \
             RETURNING v.tenant_id, v.id, v.tool_id, v.settings",
        )
        .bind(owner)
        .bind(lease.as_secs_f64())
        .fetch_optional(&self.pool)
        .await)?;
        Ok(row.map(|(tenant, id, tool, settings)| ClaimedVerification {
            tenant: TenantId(tenant),
            id,
            tool: ToolId(tool),
            settings: settings.0,
        }))
    }

    /// Ends a claimed verification as finished: its results appended and
    /// its counts kept, in one transaction — only while `owner` still
    /// holds its lease (`false`: someone else does, and nothing was written).
    pub async fn finish_verification(
        &self,
        tenant: TenantId,
        id: Uuid,
        owner: &str,
        ok: bool,
        summary: &Value,
        results: &[VerificationResult],
    ) -> Db<bool> {
        let mut tx = db(self.pool.begin().await)?;
        let held = db(sqlx::query(
            "UPDATE tool_verifications SET status = 'finished', ok = $4, summary = $5, \
                 finished_at = clock_timestamp(), lease_owner = '' \
             WHERE tenant_id = $1 AND id = $2 AND status = 'running' AND lease_owner = $3",
        )
        .bind(tenant.as_uuid())
        .bind(id)
        .bind(owner)
        .bind(ok)
        .bind(sqlx::types::Json(summary))
        .execute(&mut *tx)
        .await)?
        .rows_affected();
        if held == 0 {
            super::rollback(tx).await?;
            return Ok(false);
        }
        for result in results {
            db(sqlx::query(
                "INSERT INTO tool_verification_results (tenant_id, verification_id, tool_id, \
                     operation_id, revision, definition_hash, contract_hash, verdict, divergences, \
                     report, created_at) \
                 SELECT $1, $2, tool_id, $3, $4, $5, $6, $7, $8, $9, clock_timestamp() \
                 FROM tool_verifications WHERE tenant_id = $1 AND id = $2",
            )
            .bind(tenant.as_uuid())
            .bind(id)
            .bind(result.operation.as_uuid())
            .bind(result.revision)
            .bind(&result.definition_hash)
            .bind(&result.contract_hash)
            .bind(&result.verdict)
            .bind(result.divergences)
            .bind(sqlx::types::Json(&result.report))
            .execute(&mut *tx)
            .await)?;
        }
        db(tx.commit().await)?;
        Ok(true)
    }

    /// Ends a claimed verification as failed (it could not run: `error`
    /// says why), while `owner` still holds its lease.
    pub async fn fail_verification(
        &self,
        tenant: TenantId,
        id: Uuid,
        owner: &str,
        error: &str,
    ) -> Db<bool> {
        let done = db(sqlx::query(
            "UPDATE tool_verifications SET status = 'failed', error = $4, \
                 finished_at = clock_timestamp(), lease_owner = '' \
             WHERE tenant_id = $1 AND id = $2 AND status = 'running' AND lease_owner = $3",
        )
        .bind(tenant.as_uuid())
        .bind(id)
        .bind(owner)
        .bind(error)
        .execute(&self.pool)
        .await)?
        .rows_affected();
        Ok(done > 0)
    }

    /// Queues a verification of every tool whose schedule is due (and that
    /// has none queued or running), and sets each schedule's next time;
    /// how many were queued. Any number of workers may call it at once:
    /// each due schedule is taken by one (`FOR UPDATE SKIP LOCKED`).
    pub async fn queue_due_verifications(&self) -> Db<u64> {
        let queued = db(sqlx::query(
            "WITH due AS ( \
                 SELECT tenant_id, tool_id FROM tool_verification_settings \
                 WHERE next_due_at <= clock_timestamp() \
                 FOR UPDATE SKIP LOCKED), \
             moved AS ( \
                 UPDATE tool_verification_settings s \
                 SET next_due_at = clock_timestamp() + make_interval(secs => s.every_seconds) \
                 FROM due d WHERE s.tenant_id = d.tenant_id AND s.tool_id = d.tool_id \
                 RETURNING s.tenant_id, s.tool_id, s.settings) \
             INSERT INTO tool_verifications (tenant_id, id, tool_id, requested_by, settings, status, queued_at) \
             SELECT m.tenant_id, gen_random_uuid(), m.tool_id, 'schedule', m.settings, 'queued', clock_timestamp() \
             FROM moved m WHERE NOT EXISTS ( \
                 SELECT 1 FROM tool_verifications v WHERE v.tenant_id = m.tenant_id \
                     AND v.tool_id = m.tool_id AND v.status IN ('queued', 'running'))",
        )
        .execute(&self.pool)
        .await)?
        .rows_affected();
        Ok(queued)
    }

    /// The latest verdict on each of `tool`'s operations.
    pub async fn latest_verdicts(
        &self,
        tenant: TenantId,
        tool: ToolId,
    ) -> Db<Vec<VerificationMark>> {
        let rows: Vec<MarkRow> = db(sqlx::query_as(
            "SELECT DISTINCT ON (operation_id) verification_id, tool_id, operation_id, revision, \
                 definition_hash, verdict, divergences, created_at \
             FROM tool_verification_results WHERE tenant_id = $1 AND tool_id = $2 \
             ORDER BY operation_id, created_at DESC",
        )
        .bind(tenant.as_uuid())
        .bind(tool.as_uuid())
        .fetch_all(&self.pool)
        .await)?;
        Ok(rows.into_iter().map(mark).collect())
    }

    /// Of `definitions` (hashes), those whose latest verdict, in any
    /// verification of the tenant, is `diverged`.
    pub async fn diverged_definitions(
        &self,
        tenant: TenantId,
        definitions: &[String],
    ) -> Db<Vec<VerificationMark>> {
        let rows: Vec<MarkRow> = db(sqlx::query_as(
            "SELECT * FROM ( \
                 SELECT DISTINCT ON (definition_hash) verification_id, tool_id, operation_id, \
                     revision, definition_hash, verdict, divergences, created_at \
                 FROM tool_verification_results \
                 WHERE tenant_id = $1 AND definition_hash = ANY($2) \
                 ORDER BY definition_hash, created_at DESC) latest \
             WHERE verdict = 'diverged'",
        )
        .bind(tenant.as_uuid())
        .bind(definitions)
        .fetch_all(&self.pool)
        .await)?;
        Ok(rows.into_iter().map(mark).collect())
    }
}
