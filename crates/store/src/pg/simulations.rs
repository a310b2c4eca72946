//! Queries the API's simulation pages need beyond the runtime's traits: the
//! document a start was given, a page of simulations with their outcome
//! counts, a simulation's attempts with their judgements, and recording a
//! judgement. Every one filters by tenant.

use super::usage::{SumsRow, UsageTotals};
use super::{Db, PgStore, db};
use crate::rows::corrupt;
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;
use toolmock_runtime::error::StoreError;
use toolmock_runtime::model::{AgentId, AttemptId, AttemptOutcome, SimulationId, TenantId};
use uuid::Uuid;

/// A simulation with how its attempts stand.
#[derive(Debug, Clone, PartialEq)]
pub struct SimulationListing {
    /// Its id.
    pub id: SimulationId,
    /// The document's name (absent for a start without a document).
    pub name: Option<String>,
    /// The agent under test.
    pub agent: AgentId,
    /// When it started.
    pub created_at: DateTime<Utc>,
    /// Attempts in all.
    pub attempts: u32,
    /// Attempts waiting in the queue for a worker (not yet claimed).
    pub queued: u32,
    /// Attempts under way: claimed by a worker, or played by an external
    /// agent, and not finished yet.
    pub running: u32,
    /// Finished as passed.
    pub passed: u32,
    /// Finished as failed.
    pub failed: u32,
    /// Finished as harness_error.
    pub harness_error: u32,
    /// The sha256 of its shared fixtures' canonical JSON, when it was
    /// started with any.
    pub fixtures_hash: Option<String>,
    /// Its attempts' model requests' usage, summed (none: no request
    /// reported usage).
    pub tokens: Option<UsageTotals>,
}

#[derive(sqlx::FromRow)]
struct ListingRow {
    id: Uuid,
    name: Option<String>,
    agent_id: Uuid,
    created_at: DateTime<Utc>,
    attempts: i64,
    queued: i64,
    running: i64,
    passed: i64,
    failed: i64,
    harness_error: i64,
    fixtures_hash: Option<String>,
    #[sqlx(flatten)]
    usage: SumsRow,
}

fn count(value: i64) -> Db<u32> {
    u32::try_from(value).map_err(|e| corrupt("count", e))
}

impl ListingRow {
    fn into_listing(self) -> Db<SimulationListing> {
        Ok(SimulationListing {
            id: SimulationId(self.id),
            name: self.name,
            agent: AgentId(self.agent_id),
            created_at: self.created_at,
            attempts: count(self.attempts)?,
            queued: count(self.queued)?,
            running: count(self.running)?,
            passed: count(self.passed)?,
            failed: count(self.failed)?,
            harness_error: count(self.harness_error)?,
            fixtures_hash: self.fixtures_hash,
            tokens: self.usage.into_totals()?,
        })
    }
}

/// One attempt of a simulation, as its page lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptListing {
    /// Its id.
    pub id: AttemptId,
    /// Its test case's name.
    pub test_case: String,
    /// Its test case's position in the document (0-based).
    pub case_position: u32,
    /// 1, 2, … within its test case.
    pub number: u32,
    /// `None` while queued or running.
    pub outcome: Option<AttemptOutcome>,
    /// Waiting in the queue for a worker (not yet claimed).
    pub queued: bool,
    /// Whether a harness error was recorded.
    pub has_harness_error: bool,
    /// When it finished.
    pub finished_at: Option<DateTime<Utc>>,
    /// The expectations it did not meet, once judged (`[]`: all met).
    pub unmet: Option<Value>,
    /// How many calls it recorded: answered, refused as tool input errors,
    /// and ended by harness errors (a harness error that names no call, such
    /// as an expired lease, is not one).
    pub calls: u32,
    /// The judge's report (verdict, score, reasoning) of a graded rubric.
    pub judge: Option<Value>,
    /// Its model requests' usage, summed (none: no request reported usage).
    pub tokens: Option<UsageTotals>,
}

#[derive(sqlx::FromRow)]
struct AttemptRow {
    id: Uuid,
    test_case: String,
    position: i32,
    number: i32,
    outcome: Option<String>,
    queued: bool,
    has_harness_error: bool,
    finished_at: Option<DateTime<Utc>>,
    unmet: Option<Json<Value>>,
    calls: i64,
    judge: Option<Json<Value>>,
    #[sqlx(flatten)]
    usage: SumsRow,
}

impl AttemptRow {
    fn into_listing(self) -> Db<AttemptListing> {
        let outcome = self
            .outcome
            .as_deref()
            .map(|o| AttemptOutcome::parse(o).ok_or_else(|| corrupt("attempt outcome", o)))
            .transpose()?;
        Ok(AttemptListing {
            id: AttemptId(self.id),
            test_case: self.test_case,
            case_position: u32::try_from(self.position).map_err(|e| corrupt("position", e))?,
            number: u32::try_from(self.number).map_err(|e| corrupt("attempt number", e))?,
            outcome,
            queued: self.queued,
            has_harness_error: self.has_harness_error,
            finished_at: self.finished_at,
            unmet: self.unmet.map(|j| j.0),
            calls: count(self.calls)?,
            judge: self.judge.map(|j| j.0),
            tokens: self.usage.into_totals()?,
        })
    }
}

// The usage sums (`us`) are the `model_usage` rows of the simulation or
// the attempt, as the columns `SumsRow` reads (`sum(bigint)` is numeric:
// cast back).
const LISTING: &str = "SELECT s.id, d.name, s.agent_id, s.created_at, \
         count(a.id) AS attempts, \
         count(a.id) FILTER (WHERE a.status = 'queued') AS queued, \
         count(a.id) FILTER (WHERE a.outcome IS NULL AND a.status <> 'queued') AS running, \
         count(a.id) FILTER (WHERE a.outcome = 'passed') AS passed, \
         count(a.id) FILTER (WHERE a.outcome = 'failed') AS failed, \
         count(a.id) FILTER (WHERE a.outcome = 'harness_error') AS harness_error, \
         b.fixtures_hash, us.* \
     FROM simulations s \
     LEFT JOIN simulation_documents d ON d.simulation_id = s.id \
     LEFT JOIN simulation_fixture_bases b ON b.tenant_id = s.tenant_id AND b.simulation_id = s.id \
     CROSS JOIN LATERAL (SELECT count(u.id) AS usage_requests, \
         COALESCE(sum(u.prompt_tokens), 0)::bigint AS usage_prompt, \
         COALESCE(sum(u.completion_tokens), 0)::bigint AS usage_completion, \
         sum(u.cached_tokens)::bigint AS usage_cached, sum(u.cost) AS usage_cost FROM model_usage u \
         WHERE u.tenant_id = s.tenant_id AND u.simulation_id = s.id) us \
     LEFT JOIN attempts a ON a.simulation_id = s.id";

/// What [`LISTING`] groups by: the simulation and its one-row joins.
const GROUP: &str = "GROUP BY s.id, d.name, b.fixtures_hash, us.usage_requests, us.usage_prompt, \
     us.usage_completion, us.usage_cached, us.usage_cost";

const ATTEMPTS: &str = "SELECT a.id, c.name AS test_case, c.position, a.number, a.outcome, \
         a.status = 'queued' AS queued, \
         a.has_harness_error, a.finished_at, j.unmet, \
         (SELECT count(*) FROM evidence e \
              WHERE e.tenant_id = a.tenant_id AND e.attempt_id = a.id) \
         + (SELECT count(*) FROM tool_input_errors t \
              WHERE t.tenant_id = a.tenant_id AND t.attempt_id = a.id) \
         + (SELECT count(*) FROM harness_errors h \
              WHERE h.tenant_id = a.tenant_id AND h.attempt_id = a.id AND h.tool_name IS NOT NULL) \
         AS calls, j.judge, us.* \
     FROM attempts a \
     JOIN test_cases c ON c.id = a.test_case_id \
     LEFT JOIN attempt_judgements j ON j.attempt_id = a.id \
     CROSS JOIN LATERAL (SELECT count(u.id) AS usage_requests, \
         COALESCE(sum(u.prompt_tokens), 0)::bigint AS usage_prompt, \
         COALESCE(sum(u.completion_tokens), 0)::bigint AS usage_completion, \
         sum(u.cached_tokens)::bigint AS usage_cached, sum(u.cost) AS usage_cost FROM model_usage u \
         WHERE u.tenant_id = a.tenant_id AND u.attempt_id = a.id) us";

impl PgStore {
    /// Keeps the document a simulation was started with.
    pub async fn record_simulation_document(
        &self,
        tenant: TenantId,
        simulation: SimulationId,
        name: &str,
        document: &Value,
        started_by: &str,
    ) -> Db<()> {
        db(sqlx::query(
            "INSERT INTO simulation_documents (tenant_id, simulation_id, name, document, started_by) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(tenant.as_uuid())
        .bind(simulation.as_uuid())
        .bind(name)
        .bind(Json(document))
        .bind(started_by)
        .execute(self.pool())
        .await)?;
        Ok(())
    }

    /// The document a simulation was started with, if it was given one.
    pub async fn simulation_document(
        &self,
        tenant: TenantId,
        simulation: SimulationId,
    ) -> Db<Option<Value>> {
        let row: Option<Json<Value>> = db(sqlx::query_scalar(
            "SELECT document FROM simulation_documents WHERE tenant_id = $1 AND simulation_id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(simulation.as_uuid())
        .fetch_optional(self.pool())
        .await)?;
        Ok(row.map(|j| j.0))
    }

    /// Up to `limit` simulations of the tenant, newest first, started before
    /// the simulation `before` (keyset pagination on `(created_at, id)`:
    /// stable while simulations start). An unknown `before` gives nothing.
    pub async fn list_simulations(
        &self,
        tenant: TenantId,
        before: Option<SimulationId>,
        limit: u32,
    ) -> Db<Vec<SimulationListing>> {
        let sql = format!(
            "{LISTING} WHERE s.tenant_id = $1 \
                 AND ($2::uuid IS NULL OR (s.created_at, s.id) < \
                     (SELECT b.created_at, b.id FROM simulations b WHERE b.tenant_id = $1 AND b.id = $2)) \
             {GROUP} ORDER BY s.created_at DESC, s.id DESC LIMIT $3"
        );
        let rows: Vec<ListingRow> = db(sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(tenant.as_uuid())
            .bind(before.map(|b| b.as_uuid()))
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await)?;
        rows.into_iter().map(ListingRow::into_listing).collect()
    }

    /// One simulation with how its attempts stand.
    pub async fn simulation(
        &self,
        tenant: TenantId,
        simulation: SimulationId,
    ) -> Db<SimulationListing> {
        let sql = format!("{LISTING} WHERE s.tenant_id = $1 AND s.id = $2 {GROUP}");
        let row: Option<ListingRow> = db(sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(tenant.as_uuid())
            .bind(simulation.as_uuid())
            .fetch_optional(self.pool())
            .await)?;
        row.ok_or(StoreError::NotFound {
            entity: "simulation",
        })?
        .into_listing()
    }

    /// A simulation's attempts in document order (case, then number).
    pub async fn simulation_attempts(
        &self,
        tenant: TenantId,
        simulation: SimulationId,
    ) -> Db<Vec<AttemptListing>> {
        let sql = format!(
            "{ATTEMPTS} WHERE a.tenant_id = $1 AND a.simulation_id = $2 \
             ORDER BY c.position, a.number"
        );
        let rows: Vec<AttemptRow> = db(sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(tenant.as_uuid())
            .bind(simulation.as_uuid())
            .fetch_all(self.pool())
            .await)?;
        rows.into_iter().map(AttemptRow::into_listing).collect()
    }

    /// One attempt as its simulation's page lists it.
    pub async fn attempt_listing(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Db<AttemptListing> {
        let sql = format!("{ATTEMPTS} WHERE a.tenant_id = $1 AND a.id = $2");
        let row: Option<AttemptRow> = db(sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(tenant.as_uuid())
            .bind(attempt.as_uuid())
            .fetch_optional(self.pool())
            .await)?;
        row.ok_or(StoreError::NotFound { entity: "attempt" })?
            .into_listing()
    }
}
