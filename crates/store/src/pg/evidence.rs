//! `EvidenceSink`: the append-only records of calls and faults.

use super::{Db, PgStore, db, rollback};
use crate::rows::*;
use sqlx::types::Json;
use sqlx::{Postgres, Transaction};
use toolmock_runtime::backend::*;
use toolmock_runtime::error::*;
use toolmock_runtime::model::*;

impl EvidenceSink for PgStore {
    async fn record_tool_input_error(&self, record: &ToolInputErrorRecord) -> Db<()> {
        let (owner, epoch) = self.fence_of(record.attempt);
        let pin = pin_columns(record.pin.as_ref())?;
        let result = sqlx::query(
            "INSERT INTO tool_input_errors (tenant_id, attempt_id, tool_name, operation_name, \
                 pin_kind, tool_id, operation_id, revision, definition_hash, arguments, code, \
                 message, path, violations, created_at) \
             SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15 \
             WHERE $16::text IS NULL OR EXISTS (SELECT 1 FROM attempts f \
                 WHERE f.tenant_id = $1 AND f.id = $2 AND f.lease_owner = $16 \
                     AND f.lease_epoch = $17 AND f.lease_expires_at > clock_timestamp() FOR SHARE)",
        )
        .bind(record.tenant.as_uuid())
        .bind(record.attempt.as_uuid())
        .bind(&record.tool)
        .bind(&record.operation)
        .bind(pin.kind)
        .bind(pin.tool_id)
        .bind(pin.operation_id)
        .bind(pin.revision)
        .bind(pin.definition_hash)
        .bind(Json(&record.arguments))
        .bind(record.code.as_str())
        .bind(&record.message)
        .bind(record.path.as_deref())
        .bind(Json(&record.violations))
        .bind(record.at)
        .bind(owner)
        .bind(epoch)
        .execute(&self.pool)
        .await;
        match db(result) {
            Ok(written) if written.rows_affected() == 0 => Err(self.fenced()),
            Ok(_) => Ok(()),
            Err(StoreError::NotFound { .. }) => Err(StoreError::NotFound { entity: "attempt" }),
            Err(e) => Err(e),
        }
    }

    async fn record_harness_error(&self, record: &HarnessErrorRecord) -> Db<()> {
        let mut tx = db(self.pool.begin().await)?;
        // The attempts row first (the lock finish_attempt takes), then the
        // insert, whose trigger marks the attempt in this transaction.
        let (owner, epoch) = self.fence_of(record.attempt);
        let holds: Option<bool> = db(sqlx::query_scalar(
            "SELECT ($3::text IS NULL OR (lease_owner = $3 AND lease_epoch = $4 \
                 AND lease_expires_at > clock_timestamp())) \
             FROM attempts WHERE tenant_id = $1 AND id = $2 FOR NO KEY UPDATE",
        )
        .bind(record.tenant.as_uuid())
        .bind(record.attempt.as_uuid())
        .bind(owner)
        .bind(epoch)
        .fetch_optional(&mut *tx)
        .await)?;
        match holds {
            None => {
                rollback(tx).await?;
                return Err(StoreError::NotFound { entity: "attempt" });
            }
            Some(false) => {
                rollback(tx).await?;
                return Err(self.fenced());
            }
            Some(true) => {}
        }
        insert_harness_error(&mut tx, record).await?;
        db(tx.commit().await)
    }

    async fn evidence(&self, tenant: TenantId, attempt: AttemptId) -> Db<Vec<EvidenceRecord>> {
        let rows: Vec<EvidenceRow> = self
            .attempt_rows(
                "SELECT attempt_id, tool_name, operation_name, pin_kind, tool_id, operation_id, \
                     revision, definition_hash, executor, variant, rule, arguments, result, \
                     state_before, state_after, state_version_before, state_version_after, \
                     delay_ms, started_at, duration_us, status, error \
                 FROM evidence WHERE tenant_id = $1 AND attempt_id = $2 \
                 ORDER BY state_version_after",
                tenant,
                attempt,
            )
            .await?;
        rows.into_iter().map(EvidenceRow::into_record).collect()
    }

    async fn tool_input_errors(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Db<Vec<ToolInputErrorRecord>> {
        let rows: Vec<ToolInputErrorRow> = self
            .attempt_rows(
                "SELECT tenant_id, attempt_id, tool_name, operation_name, pin_kind, tool_id, \
                     operation_id, revision, definition_hash, arguments, code, message, path, \
                     violations, created_at \
                 FROM tool_input_errors WHERE tenant_id = $1 AND attempt_id = $2 ORDER BY id",
                tenant,
                attempt,
            )
            .await?;
        rows.into_iter()
            .map(ToolInputErrorRow::into_record)
            .collect()
    }

    async fn harness_errors(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Db<Vec<HarnessErrorRecord>> {
        let rows: Vec<HarnessErrorRow> = self
            .attempt_rows(
                "SELECT tenant_id, attempt_id, tool_name, operation_name, pin_kind, tool_id, \
                     operation_id, revision, definition_hash, arguments, code, message, path, \
                     detail, created_at \
                 FROM harness_errors WHERE tenant_id = $1 AND attempt_id = $2 ORDER BY id",
                tenant,
                attempt,
            )
            .await?;
        rows.into_iter().map(HarnessErrorRow::into_record).collect()
    }

    /// One statement (`records`), the state with it.
    async fn attempt_records(&self, tenant: TenantId, attempt: AttemptId) -> Db<AttemptRecords> {
        self.read_records(tenant, attempt).await
    }
}

/// Inserts one harness error in `tx` (whose caller holds the attempt's row
/// lock); the insert trigger marks the attempt.
pub(super) async fn insert_harness_error(
    tx: &mut Transaction<'static, Postgres>,
    record: &HarnessErrorRecord,
) -> Db<()> {
    let pin = pin_columns(record.pin.as_ref())?;
    db(sqlx::query(
        "INSERT INTO harness_errors (tenant_id, attempt_id, tool_name, operation_name, \
                 pin_kind, tool_id, operation_id, revision, definition_hash, arguments, code, \
                 message, path, detail, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
    )
    .bind(record.tenant.as_uuid())
    .bind(record.attempt.as_uuid())
    .bind(record.tool.as_deref())
    .bind(record.operation.as_deref())
    .bind(pin.kind)
    .bind(pin.tool_id)
    .bind(pin.operation_id)
    .bind(pin.revision)
    .bind(pin.definition_hash)
    .bind(record.arguments.as_ref().map(Json))
    .bind(record.code.as_str())
    .bind(&record.message)
    .bind(record.path.as_deref())
    .bind(Json(&record.detail))
    .bind(record.at)
    .execute(&mut **tx)
    .await)?;
    Ok(())
}
