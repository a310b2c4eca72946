//! Everything an attempt recorded and its state, in one statement: what
//! its judgement reads, so that concluding an attempt waits on one round
//! trip to PostgreSQL, not four.
//!
//! The statement is a `UNION ALL` of the evidence, the tool input errors,
//! the harness errors and the state row, each row tagged with its `kind`
//! and carrying every column any of them has (NULL where it has none), so
//! that each row is read by the same row type as the list it belongs to.
//! Each part is read as of the statement's snapshot.

use super::state_reads::layered;
use super::{Db, PgStore, db};
use crate::rows::*;
use sqlx::FromRow;
use sqlx::Row;
use sqlx::types::Json;
use toolmock_runtime::backend::AttemptRecords;
use toolmock_runtime::error::StoreError;
use toolmock_runtime::model::*;

const RECORDS: &str = "\
    SELECT 0 AS kind, e.state_version_after AS ord, e.tenant_id, e.attempt_id, \
        e.tool_name, e.operation_name, e.pin_kind, e.tool_id, e.operation_id, e.revision, \
        e.definition_hash, e.executor, e.variant, e.rule, e.arguments, e.result, \
        e.state_before, e.state_after, e.state_version_before, e.state_version_after, \
        e.delay_ms, e.started_at, e.duration_us, e.status, e.error, \
        NULL::text AS code, NULL::text AS message, NULL::text AS path, \
        NULL::jsonb AS violations, NULL::jsonb AS detail, NULL::timestamptz AS created_at, \
        NULL::jsonb AS state, NULL::bigint AS version, NULL::text AS form, \
        NULL::uuid AS simulation_id \
    FROM evidence e WHERE e.tenant_id = $1 AND e.attempt_id = $2 \
    UNION ALL \
    SELECT 1, t.id, t.tenant_id, t.attempt_id, t.tool_name, t.operation_name, t.pin_kind, \
        t.tool_id, t.operation_id, t.revision, t.definition_hash, NULL, NULL, NULL, \
        t.arguments, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, \
        t.code, t.message, t.path, t.violations, NULL, t.created_at, \
        NULL, NULL, NULL, NULL \
    FROM tool_input_errors t WHERE t.tenant_id = $1 AND t.attempt_id = $2 \
    UNION ALL \
    SELECT 2, h.id, h.tenant_id, h.attempt_id, h.tool_name, h.operation_name, h.pin_kind, \
        h.tool_id, h.operation_id, h.revision, h.definition_hash, NULL, NULL, NULL, \
        h.arguments, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, \
        h.code, h.message, h.path, NULL, h.detail, h.created_at, \
        NULL, NULL, NULL, NULL \
    FROM harness_errors h WHERE h.tenant_id = $1 AND h.attempt_id = $2 \
    UNION ALL \
    SELECT 3, 0, s.tenant_id, s.attempt_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, \
        NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, \
        NULL, NULL, NULL, NULL, NULL, NULL, \
        s.state, s.version, s.form, a.simulation_id \
    FROM attempt_state s JOIN attempts a ON a.tenant_id = s.tenant_id AND a.id = s.attempt_id \
    WHERE s.tenant_id = $1 AND s.attempt_id = $2 \
    ORDER BY kind, ord";

impl PgStore {
    /// [`toolmock_runtime::backend::EvidenceSink::attempt_records`] in one
    /// statement, with the state (merged, whichever form its row holds).
    pub(super) async fn read_records(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Db<AttemptRecords> {
        let rows = db(sqlx::query(RECORDS)
            .bind(tenant.as_uuid())
            .bind(attempt.as_uuid())
            .fetch_all(self.pool())
            .await)?;
        let mut records = AttemptRecords {
            evidence: Vec::new(),
            tool_input_errors: Vec::new(),
            harness_errors: Vec::new(),
            state: None,
        };
        let mut state_row = None;
        for row in &rows {
            let kind: i32 = db(row.try_get("kind"))?;
            match kind {
                0 => records
                    .evidence
                    .push(db(EvidenceRow::from_row(row))?.into_record()?),
                1 => records
                    .tool_input_errors
                    .push(db(ToolInputErrorRow::from_row(row))?.into_record()?),
                2 => records
                    .harness_errors
                    .push(db(HarnessErrorRow::from_row(row))?.into_record()?),
                _ => state_row = Some(db(StateRow::from_row(row))?),
            }
        }
        // Every attempt has its state row: none means no such attempt.
        let StateRow {
            state: Json(state),
            version,
            form,
            simulation_id,
        } = state_row.ok_or(StoreError::NotFound { entity: "attempt" })?;
        let held = self
            .held_state(self.pool(), tenant, simulation_id, &form, state)
            .await?;
        records.state = Some(layered(held, to_u64(version, "state version")?));
        Ok(records)
    }
}
