//! Token usage, budgets and the comparison of two simulations, as the
//! simulation and attempt routes answer them.

use serde::Serialize;
use toolmock_simulation::compare::{CaseComparison, CaseSide, Change};
use toolmock_simulation::{ModelRole, RequestUsage, Summary, TokenUsage, Usage};
use toolmock_store::{BudgetStanding, SimulationListing, UsageRecord, UsageTotals};
use utoipa::ToSchema;

/// Model tokens summed over requests (an attempt's, a simulation's).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub(crate) struct TokensView {
    /// Model requests whose answer reported usage.
    pub(crate) requests: u32,
    /// Their prompt tokens.
    pub(crate) prompt_tokens: u64,
    /// Their completion tokens.
    pub(crate) completion_tokens: u64,
    /// Prompt plus completion tokens.
    pub(crate) total_tokens: u64,
    /// Of the prompt tokens, those the endpoint served from its cache (when
    /// any answer said).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cached_tokens: Option<u64>,
    /// Their cost under the workers' `--price` (absent when none of them
    /// was priced).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cost: Option<f64>,
}

pub(crate) fn tokens_view(t: UsageTotals) -> TokensView {
    TokensView {
        requests: t.requests,
        prompt_tokens: t.prompt_tokens,
        completion_tokens: t.completion_tokens,
        total_tokens: t.prompt_tokens + t.completion_tokens,
        cached_tokens: t.cached_tokens,
        cost: t.cost,
    }
}

/// One model request of an attempt.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ModelRequestView {
    /// `agent`, `judge` or `user` (a simulated user's model).
    #[schema(pattern = "^(agent|judge|user)$")]
    pub(crate) role: String,
    /// The role's request number within the attempt (1, 2, …).
    pub(crate) turn: u32,
    /// Prompt tokens.
    pub(crate) prompt_tokens: u64,
    /// Completion tokens.
    pub(crate) completion_tokens: u64,
    /// Cached prompt tokens, when the endpoint said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cached_tokens: Option<u64>,
    /// Its cost, when the worker had a price for its model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cost: Option<f64>,
    /// A cassette replayed the answer: it cost nothing against a budget.
    pub(crate) replayed: bool,
    /// When the answer arrived.
    pub(crate) at: chrono::DateTime<chrono::Utc>,
}

pub(crate) fn model_request_view(r: UsageRecord) -> ModelRequestView {
    ModelRequestView {
        role: r.role,
        turn: r.turn,
        prompt_tokens: r.prompt_tokens,
        completion_tokens: r.completion_tokens,
        cached_tokens: r.cached_tokens,
        cost: r.cost,
        replayed: r.replayed,
        at: r.at,
    }
}

/// A simulation's budget and what it spent.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct BudgetView {
    /// The most tokens (prompt plus completion) its requests may spend.
    pub(crate) max_tokens: Option<u64>,
    /// The most they may cost (the unit of the workers' `--price`).
    pub(crate) max_cost: Option<f64>,
    /// Where `max_tokens` came from: `request` (the start's query) or
    /// `tenant` (the tenant's default).
    pub(crate) max_tokens_from: Option<String>,
    /// Where `max_cost` came from.
    pub(crate) max_cost_from: Option<String>,
    /// Tokens of the requests sent to an endpoint (replayed ones cost
    /// nothing).
    pub(crate) spent_tokens: u64,
    /// Their cost.
    pub(crate) spent_cost: f64,
    /// Whether a bound is reached: no new model request is sent.
    pub(crate) exhausted: bool,
    /// Attempts that ended `harness_error` (`budget_exhausted`) because a
    /// request they needed was not sent.
    pub(crate) budget_exhausted_attempts: u32,
}

pub(crate) fn budget_view(standing: BudgetStanding, refused: u32) -> BudgetView {
    let from =
        |set: bool, tenant: bool| set.then(|| if tenant { "tenant" } else { "request" }.to_owned());
    BudgetView {
        max_tokens: standing.limits.max_tokens,
        max_cost: standing.limits.max_cost,
        max_tokens_from: from(
            standing.limits.max_tokens.is_some(),
            standing.max_tokens_from_tenant,
        ),
        max_cost_from: from(
            standing.limits.max_cost.is_some(),
            standing.max_cost_from_tenant,
        ),
        spent_tokens: standing.spent_tokens,
        spent_cost: standing.spent_cost,
        exhausted: standing.exhausted().is_some() || refused > 0,
        budget_exhausted_attempts: refused,
    }
}

/// An attempt's requests as `toolmock run --json` reports them: the
/// agent's and the judge's (a simulated user's are the views' alone, as
/// `toolmock run` counts none), with their sum, each priced as recorded.
pub(crate) fn run_usage(rows: &[UsageRecord]) -> (Vec<RequestUsage>, Option<TokenUsage>) {
    let mut requests = Vec::new();
    let mut sum: Option<TokenUsage> = None;
    for r in rows {
        let role = match r.role.as_str() {
            "agent" => ModelRole::Agent,
            "judge" => ModelRole::Judge,
            _ => continue,
        };
        let usage = Usage {
            prompt_tokens: r.prompt_tokens,
            completion_tokens: r.completion_tokens,
            cached_tokens: r.cached_tokens,
            // (The results document, like a replay's report, does not
            // mark replayed answers: the views do, `replayed`.)
            replayed: false,
        };
        requests.push(RequestUsage {
            role,
            turn: r.turn,
            usage,
        });
        sum.get_or_insert_with(TokenUsage::default)
            .add(&TokenUsage {
                requests: 1,
                prompt_tokens: r.prompt_tokens,
                completion_tokens: r.completion_tokens,
                cached_tokens: r.cached_tokens,
                cost: r.cost,
                ..TokenUsage::default()
            });
    }
    (requests, sum)
}

/// One side of a compared case.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct CaseSideView {
    /// Attempts that ended as expected, as a fraction (0 to 1).
    pub(crate) pass_rate: f64,
    /// pass^k: whether every attempt ended as expected.
    pub(crate) pass_k: bool,
    /// Its attempts.
    pub(crate) k: u64,
    /// Prompt plus completion tokens of the agent's and the judge's
    /// requests (absent: no answer reported usage).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tokens: Option<u64>,
    /// Their cost (absent: not priced).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cost: Option<f64>,
}

/// A case on both sides.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct CaseComparisonView {
    /// The case's name (cases are matched by name).
    pub(crate) name: String,
    /// `regression` (held before, not now), `fixed`, `same`, `added` (only
    /// HEAD has it) or `removed` (only BASE has it).
    #[schema(pattern = "^(regression|fixed|same|added|removed)$")]
    pub(crate) change: String,
    /// BASE's side (absent for an added case).
    pub(crate) base: Option<CaseSideView>,
    /// HEAD's side (absent for a removed case).
    pub(crate) head: Option<CaseSideView>,
}

/// One compared simulation and its totals.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ComparedSimulation {
    /// Its id.
    pub(crate) id: uuid::Uuid,
    /// Its document's name.
    pub(crate) name: Option<String>,
    /// When it started.
    pub(crate) created_at: chrono::DateTime<chrono::Utc>,
    /// Its cases.
    pub(crate) cases: u32,
    /// Its attempts.
    pub(crate) attempts: u32,
    /// Of them, those that ended as their case expects.
    pub(crate) as_expected: u32,
    /// The agent's and the judge's tokens (absent: no usage reported).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tokens: Option<u64>,
    /// Their cost (absent: not priced).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cost: Option<f64>,
}

/// Two simulations of one suite compared case by case.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ComparisonView {
    /// BASE: before the change.
    pub(crate) base: ComparedSimulation,
    /// HEAD: after it.
    pub(crate) head: ComparedSimulation,
    /// Whether both were started from documents of the same name.
    pub(crate) same_suite: bool,
    /// Cases that held before and do not now.
    pub(crate) regressions: u32,
    /// Cases that did not hold before and do now.
    pub(crate) fixed: u32,
    /// Every case of either side: regressions first, then HEAD's cases in
    /// its order, then the cases only BASE has.
    pub(crate) cases: Vec<CaseComparisonView>,
}

fn side_view(side: CaseSide) -> CaseSideView {
    CaseSideView {
        pass_rate: side.pass_rate,
        pass_k: side.pass_k,
        k: side.k,
        tokens: side.tokens,
        cost: side.cost,
    }
}

fn compared(listing: SimulationListing, summary: &Summary) -> ComparedSimulation {
    ComparedSimulation {
        id: listing.id.as_uuid(),
        name: listing.name,
        created_at: listing.created_at,
        cases: summary.cases,
        attempts: summary.attempts,
        as_expected: summary.as_expected,
        tokens: summary.tokens.map(|t| t.total()),
        cost: summary.tokens.and_then(|t| t.cost),
    }
}

pub(crate) fn comparison_view(
    base: (SimulationListing, &Summary),
    head: (SimulationListing, &Summary),
    rows: Vec<CaseComparison>,
) -> ComparisonView {
    let count = |change: Change| {
        u32::try_from(rows.iter().filter(|r| r.change == change).count()).unwrap_or(u32::MAX)
    };
    let (regressions, fixed) = (count(Change::Regression), count(Change::Fixed));
    let base = compared(base.0, base.1);
    let head = compared(head.0, head.1);
    ComparisonView {
        same_suite: base.name == head.name,
        base,
        head,
        regressions,
        fixed,
        cases: rows
            .into_iter()
            .map(|r| CaseComparisonView {
                name: r.name,
                change: r.change.as_str().to_owned(),
                base: r.base.map(side_view),
                head: r.head.map(side_view),
            })
            .collect(),
    }
}
