//! Token usage and budgets (`model_usage`, `simulation_budgets`,
//! `tenant_budgets`): a worker records each model answer's usage under the
//! attempt's fence and asks, before each request, whether its simulation's
//! budget is spent — the sum is PostgreSQL's, so every worker sharing a
//! simulation reads the same spend (docs/data-model.md, "Token usage and
//! budgets").

use super::{Db, PgStore, db};
use crate::rows::corrupt;
use chrono::{DateTime, Utc};
use toolmock_runtime::model::{AttemptId, SimulationId, TenantId};

/// One model request's usage, as a worker records it.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageRecord {
    /// `agent`, `judge` or `user`.
    pub role: String,
    /// The role's request number within the attempt (1, 2, …).
    pub turn: u32,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Of the prompt tokens, those served from the endpoint's cache.
    pub cached_tokens: Option<u64>,
    /// What it cost under the worker's price for its model (none: no price).
    pub cost: Option<f64>,
    /// A cassette replayed it: it costs nothing against a budget.
    pub replayed: bool,
    /// When its answer arrived.
    pub at: DateTime<Utc>,
}

/// Usage summed over requests (an attempt's, a simulation's).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UsageTotals {
    /// Requests whose answer reported usage.
    pub requests: u32,
    /// Their prompt tokens.
    pub prompt_tokens: u64,
    /// Their completion tokens.
    pub completion_tokens: u64,
    /// Their cached tokens, when any answer said.
    pub cached_tokens: Option<u64>,
    /// Their cost, when any of them was priced.
    pub cost: Option<f64>,
}

/// A budget of tokens and cost (either bound may be absent, not both).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BudgetLimits {
    /// The most tokens (prompt plus completion).
    pub max_tokens: Option<u64>,
    /// The most cost, in the unit of the workers' prices.
    pub max_cost: Option<f64>,
}

impl BudgetLimits {
    /// Whether neither bound is set.
    pub fn is_empty(&self) -> bool {
        self.max_tokens.is_none() && self.max_cost.is_none()
    }
}

/// A simulation's budget and what its live requests spent of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetStanding {
    /// The bounds.
    pub limits: BudgetLimits,
    /// Whether `max_tokens` came from the tenant's default (else the start
    /// request).
    pub max_tokens_from_tenant: bool,
    /// Whether `max_cost` came from the tenant's default.
    pub max_cost_from_tenant: bool,
    /// Tokens of the requests sent to an endpoint (replayed ones excluded).
    pub spent_tokens: u64,
    /// Their cost (unpriced requests add none).
    pub spent_cost: f64,
}

impl BudgetStanding {
    /// Why no new request may be sent, once a bound is reached.
    pub fn exhausted(&self) -> Option<String> {
        match (self.limits.max_tokens, self.limits.max_cost) {
            (Some(max), _) if self.spent_tokens >= max => Some(format!(
                "the simulation's token budget is spent ({} of max_tokens {max}): no new model request is sent",
                self.spent_tokens
            )),
            (_, Some(max)) if self.spent_cost >= max => Some(format!(
                "the simulation's cost budget is spent ({:.6} of max_cost {max}): no new model request is sent",
                self.spent_cost
            )),
            _ => None,
        }
    }
}

#[derive(sqlx::FromRow)]
struct UsageRow {
    role: String,
    turn: i32,
    prompt_tokens: i64,
    completion_tokens: i64,
    cached_tokens: Option<i64>,
    cost: Option<f64>,
    replayed: bool,
    at: DateTime<Utc>,
}

fn tokens(value: i64) -> Db<u64> {
    u64::try_from(value).map_err(|e| corrupt("token count", e))
}

fn signed(value: u64) -> Db<i64> {
    i64::try_from(value).map_err(|e| corrupt("token count", e))
}

impl UsageRow {
    fn into_record(self) -> Db<UsageRecord> {
        Ok(UsageRecord {
            role: self.role,
            turn: u32::try_from(self.turn).map_err(|e| corrupt("usage turn", e))?,
            prompt_tokens: tokens(self.prompt_tokens)?,
            completion_tokens: tokens(self.completion_tokens)?,
            cached_tokens: self.cached_tokens.map(tokens).transpose()?,
            cost: self.cost,
            replayed: self.replayed,
            at: self.at,
        })
    }
}

/// The sums a listing query of `simulations.rs` reads (its `us` rows),
/// as columns.
#[derive(sqlx::FromRow)]
pub(super) struct SumsRow {
    pub(super) usage_requests: i64,
    pub(super) usage_prompt: i64,
    pub(super) usage_completion: i64,
    pub(super) usage_cached: Option<i64>,
    pub(super) usage_cost: Option<f64>,
}

impl SumsRow {
    /// `None` when no request reported usage.
    pub(super) fn into_totals(self) -> Db<Option<UsageTotals>> {
        if self.usage_requests == 0 {
            return Ok(None);
        }
        Ok(Some(UsageTotals {
            requests: u32::try_from(self.usage_requests).map_err(|e| corrupt("requests", e))?,
            prompt_tokens: tokens(self.usage_prompt)?,
            completion_tokens: tokens(self.usage_completion)?,
            cached_tokens: self.usage_cached.map(tokens).transpose()?,
            cost: self.usage_cost,
        }))
    }
}

impl PgStore {
    /// Records one model request's usage for an attempt of `simulation`.
    /// Fenced like every write a worker makes for an attempt it holds.
    pub async fn record_model_usage(
        &self,
        tenant: TenantId,
        (simulation, attempt): (SimulationId, AttemptId),
        usage: &UsageRecord,
    ) -> Db<()> {
        let (owner, epoch) = self.fence_of(attempt);
        let turn = i32::try_from(usage.turn).map_err(|e| corrupt("usage turn", e))?;
        let written = db(sqlx::query(
            "INSERT INTO model_usage (tenant_id, attempt_id, simulation_id, role, turn, \
                 prompt_tokens, completion_tokens, cached_tokens, cost, replayed, at) \
             SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11 \
             WHERE $12::text IS NULL OR EXISTS (SELECT 1 FROM attempts f \
                 WHERE f.tenant_id = $1 AND f.id = $2 AND f.lease_owner = $12 \
                     AND f.lease_epoch = $13 AND f.lease_expires_at > clock_timestamp() FOR SHARE)",
        )
        .bind(tenant.as_uuid())
        .bind(attempt.as_uuid())
        .bind(simulation.as_uuid())
        .bind(&usage.role)
        .bind(turn)
        .bind(signed(usage.prompt_tokens)?)
        .bind(signed(usage.completion_tokens)?)
        .bind(usage.cached_tokens.map(signed).transpose()?)
        .bind(usage.cost)
        .bind(usage.replayed)
        .bind(usage.at)
        .bind(owner)
        .bind(epoch)
        .execute(self.pool())
        .await)?;
        if written.rows_affected() == 0 {
            return Err(self.fenced());
        }
        Ok(())
    }

    /// An attempt's model requests' usage in the order they were recorded
    /// (empty for an attempt no model played).
    pub async fn attempt_usage(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Db<Vec<UsageRecord>> {
        let rows: Vec<UsageRow> = self
            .attempt_rows(
                "SELECT role, turn, prompt_tokens, completion_tokens, cached_tokens, cost, \
                     replayed, at \
                 FROM model_usage WHERE tenant_id = $1 AND attempt_id = $2 ORDER BY id",
                tenant,
                attempt,
            )
            .await?;
        rows.into_iter().map(UsageRow::into_record).collect()
    }

    /// Fixes a simulation's budget at its start (once; none when `limits`
    /// is empty), with where each bound came from.
    pub async fn record_simulation_budget(
        &self,
        tenant: TenantId,
        simulation: SimulationId,
        limits: BudgetLimits,
        from_tenant: (bool, bool),
    ) -> Db<()> {
        if limits.is_empty() {
            return Ok(());
        }
        let from =
            |set: bool, tenant: bool| set.then_some(if tenant { "tenant" } else { "request" });
        db(sqlx::query(
            "INSERT INTO simulation_budgets (tenant_id, simulation_id, max_tokens, max_cost, \
                 max_tokens_from, max_cost_from) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(tenant.as_uuid())
        .bind(simulation.as_uuid())
        .bind(limits.max_tokens.map(signed).transpose()?)
        .bind(limits.max_cost)
        .bind(from(limits.max_tokens.is_some(), from_tenant.0))
        .bind(from(limits.max_cost.is_some(), from_tenant.1))
        .execute(self.pool())
        .await)?;
        Ok(())
    }

    /// A simulation's budget and its live spend so far, or `None` when it
    /// has no budget. One statement: every worker reads the spend every
    /// other worker committed.
    pub async fn budget_standing(
        &self,
        tenant: TenantId,
        simulation: SimulationId,
    ) -> Db<Option<BudgetStanding>> {
        #[derive(sqlx::FromRow)]
        struct Row {
            max_tokens: Option<i64>,
            max_cost: Option<f64>,
            max_tokens_from: Option<String>,
            max_cost_from: Option<String>,
            spent_tokens: i64,
            spent_cost: f64,
        }
        let row: Option<Row> = db(sqlx::query_as(
            "SELECT b.max_tokens, b.max_cost, b.max_tokens_from, b.max_cost_from, \
                 COALESCE((SELECT sum(u.prompt_tokens + u.completion_tokens) FROM model_usage u \
                     WHERE u.tenant_id = $1 AND u.simulation_id = $2 AND NOT u.replayed), 0)::bigint \
                     AS spent_tokens, \
                 COALESCE((SELECT sum(u.cost) FROM model_usage u \
                     WHERE u.tenant_id = $1 AND u.simulation_id = $2 AND NOT u.replayed), 0) \
                     AS spent_cost \
             FROM simulation_budgets b WHERE b.tenant_id = $1 AND b.simulation_id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(simulation.as_uuid())
        .fetch_optional(self.pool())
        .await)?;
        row.map(|r| {
            Ok(BudgetStanding {
                limits: BudgetLimits {
                    max_tokens: r.max_tokens.map(tokens).transpose()?,
                    max_cost: r.max_cost,
                },
                max_tokens_from_tenant: r.max_tokens_from.as_deref() == Some("tenant"),
                max_cost_from_tenant: r.max_cost_from.as_deref() == Some("tenant"),
                spent_tokens: tokens(r.spent_tokens)?,
                spent_cost: r.spent_cost,
            })
        })
        .transpose()
    }

    /// How many of a simulation's attempts a spent budget ended
    /// (`budget_exhausted` harness errors).
    pub async fn budget_refusals(&self, tenant: TenantId, simulation: SimulationId) -> Db<u32> {
        let n: i64 = db(sqlx::query_scalar(
            "SELECT count(*) FROM harness_errors h JOIN attempts a \
                 ON a.tenant_id = h.tenant_id AND a.id = h.attempt_id \
             WHERE h.tenant_id = $1 AND a.simulation_id = $2 AND h.code = 'budget_exhausted'",
        )
        .bind(tenant.as_uuid())
        .bind(simulation.as_uuid())
        .fetch_one(self.pool())
        .await)?;
        u32::try_from(n).map_err(|e| corrupt("count", e))
    }

    /// The tenant's default budget, if an operator set one.
    pub async fn tenant_budget(&self, tenant: TenantId) -> Db<Option<BudgetLimits>> {
        let row: Option<(Option<i64>, Option<f64>)> = db(sqlx::query_as(
            "SELECT max_tokens, max_cost FROM tenant_budgets WHERE tenant_id = $1",
        )
        .bind(tenant.as_uuid())
        .fetch_optional(self.pool())
        .await)?;
        row.map(|(max_tokens, max_cost)| {
            Ok(BudgetLimits {
                max_tokens: max_tokens.map(tokens).transpose()?,
                max_cost,
            })
        })
        .transpose()
    }

    /// Sets (or, with empty `limits`, removes) the tenant's default budget;
    /// the tenant's row is created when it has none yet (named `name`).
    pub async fn set_tenant_budget(
        &self,
        tenant: TenantId,
        name: &str,
        limits: BudgetLimits,
    ) -> Db<()> {
        self.ensure_tenant(tenant, name).await?;
        if limits.is_empty() {
            db(
                sqlx::query("DELETE FROM tenant_budgets WHERE tenant_id = $1")
                    .bind(tenant.as_uuid())
                    .execute(self.pool())
                    .await,
            )?;
            return Ok(());
        }
        db(sqlx::query(
            "INSERT INTO tenant_budgets (tenant_id, max_tokens, max_cost, updated_at) \
             VALUES ($1, $2, $3, now()) \
             ON CONFLICT (tenant_id) DO UPDATE SET max_tokens = $2, max_cost = $3, updated_at = now() \
             WHERE tenant_budgets.tenant_id = $1",
        )
        .bind(tenant.as_uuid())
        .bind(limits.max_tokens.map(signed).transpose()?)
        .bind(limits.max_cost)
        .execute(self.pool())
        .await)?;
        Ok(())
    }
}
