//! A model-driven attempt's conversation (`attempt_messages`), kept message
//! by message under the attempt's lease fence, and the judge's report kept
//! with the judgement.

use super::{Db, PgStore, db};
use crate::rows::corrupt;
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;
use toolmock_runtime::model::{AttemptId, TenantId};

/// One kept message of an attempt's conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    /// 0 for the system message, then in the order they were added.
    pub position: u32,
    /// The message: `{"role": …, …}` as the model driver records it.
    pub message: Value,
    /// When it was added.
    pub at: DateTime<Utc>,
}

#[derive(sqlx::FromRow)]
struct MessageRow {
    position: i32,
    message: Json<Value>,
    at: DateTime<Utc>,
}

impl PgStore {
    /// Keeps message `position` of an attempt's conversation. Fenced like
    /// every write a worker makes for an attempt it holds; a position kept
    /// twice is a conflict.
    pub async fn record_message(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        position: u32,
        message: &Value,
        at: DateTime<Utc>,
    ) -> Db<()> {
        let (owner, epoch) = self.fence_of(attempt);
        let position = i32::try_from(position).map_err(|e| corrupt("message position", e))?;
        let written = db(sqlx::query(
            "INSERT INTO attempt_messages (tenant_id, attempt_id, position, message, at) \
             SELECT $1, $2, $3, $4, $5 \
             WHERE $6::text IS NULL OR EXISTS (SELECT 1 FROM attempts f \
                 WHERE f.tenant_id = $1 AND f.id = $2 AND f.lease_owner = $6 \
                     AND f.lease_epoch = $7 AND f.lease_expires_at > clock_timestamp() FOR SHARE)",
        )
        .bind(tenant.as_uuid())
        .bind(attempt.as_uuid())
        .bind(position)
        .bind(Json(message))
        .bind(at)
        .bind(owner)
        .bind(epoch)
        .execute(self.pool())
        .await)?;
        if written.rows_affected() == 0 {
            return Err(self.fenced());
        }
        Ok(())
    }

    /// An attempt's conversation in order (empty for an attempt no model
    /// played); "not found" for another tenant's attempt.
    pub async fn attempt_messages(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Db<Vec<StoredMessage>> {
        let rows: Vec<MessageRow> = self
            .attempt_rows(
                "SELECT position, message, at FROM attempt_messages \
                 WHERE tenant_id = $1 AND attempt_id = $2 ORDER BY position",
                tenant,
                attempt,
            )
            .await?;
        rows.into_iter()
            .map(|r| {
                Ok(StoredMessage {
                    position: u32::try_from(r.position)
                        .map_err(|e| corrupt("message position", e))?,
                    message: r.message.0,
                    at: r.at,
                })
            })
            .collect()
    }

    /// The judge's report (verdict, score, reasoning) kept with an
    /// attempt's judgement, if its case had a rubric that was graded.
    pub async fn attempt_judge_report(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Db<Option<Value>> {
        let row: Option<Option<Json<Value>>> = db(sqlx::query_scalar(
            "SELECT judge FROM attempt_judgements WHERE tenant_id = $1 AND attempt_id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(attempt.as_uuid())
        .fetch_optional(self.pool())
        .await)?;
        Ok(row.flatten().map(|j| j.0))
    }
}
