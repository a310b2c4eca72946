//! Each model request of a claimed attempt, metered through PostgreSQL:
//! before a request is sent to an endpoint, the simulation's budget is
//! read (the spend of every worker's requests, summed by PostgreSQL); once
//! it is spent no request is sent and the attempt ends `harness_error`
//! (`budget_exhausted`). Every answer's usage is recorded at once, under
//! the attempt's fence, with its cost under the worker's `--price`
//! (docs/cassettes.md, "On the service").
//!
//! The two are apart: the budget's [`Gate`] wraps each live model *under*
//! the simulation's cassette, so an answer the cassette replays (in
//! `replay` or `auto`) never meets it; the [`Meter`] wraps the models as
//! the attempt's players ask them, cassette included, so every answer's
//! usage is recorded, a replayed one as `replayed`.

use crate::agents::RolePrices;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use toolmock_runtime::model::{AttemptId, SimulationId, TenantId};
use toolmock_simulation::{
    AttemptScope, ChatModel, ModelError, ModelFuture, ModelRequest, Players, Price,
};
use toolmock_store::{PgStore, UsageRecord};

/// Where an attempt's requests are metered: its store, tenant, simulation
/// and id, and whether its simulation has a budget to enforce.
#[derive(Debug, Clone)]
pub(crate) struct Meter {
    pub(crate) store: PgStore,
    pub(crate) tenant: TenantId,
    pub(crate) simulation: SimulationId,
    pub(crate) attempt: AttemptId,
    /// Its simulation replays a cassette (mode `replay`): every answer is
    /// the cassette's, recorded as `replayed`. (Under `auto` the cassette
    /// marks each answer it replays: [`toolmock_simulation::Usage::replayed`].)
    pub(crate) replaying: bool,
}

impl Meter {
    /// `players` with every model metered for this attempt.
    pub(crate) fn players(&self, players: &Players, prices: RolePrices) -> Players {
        players.map_models(|role, model| {
            let price = match role {
                "agent" => prices.agent,
                "judge" => prices.judge,
                _ => prices.user,
            };
            Arc::new(Metered {
                inner: model.clone(),
                meter: self.clone(),
                role,
                price,
                turns: AtomicU32::new(0),
            }) as Arc<dyn ChatModel>
        })
    }
}

/// Where a simulation's budget is read: its store, tenant and id.
#[derive(Debug, Clone)]
pub(crate) struct BudgetOf {
    pub(crate) store: PgStore,
    pub(crate) tenant: TenantId,
    pub(crate) simulation: SimulationId,
}

impl BudgetOf {
    /// `model` (the `role` model an endpoint answers, priced `price`)
    /// under the simulation's budget.
    pub(crate) fn gate(
        &self,
        model: Arc<dyn ChatModel>,
        role: &'static str,
        price: Option<Price>,
    ) -> Arc<dyn ChatModel> {
        Arc::new(Gate {
            inner: model,
            budget: self.clone(),
            role,
            price,
        })
    }

    /// Why the request must not be sent, if the budget forbids it.
    async fn refusal(&self, role: &str, price: Option<Price>) -> Result<(), ModelError> {
        let standing = self
            .store
            .budget_standing(self.tenant, self.simulation)
            .await
            .map_err(|e| {
                ModelError::Unavailable(format!(
                    "the simulation's budget could not be read ({e}): no request was sent"
                ))
            })?;
        let Some(standing) = standing else {
            return Ok(());
        };
        if let Some(why) = standing.exhausted() {
            return Err(ModelError::BudgetExhausted(why));
        }
        // A cost bound cannot be kept over a model without a price: refused
        // rather than sent uncounted.
        if standing.limits.max_cost.is_some() && price.is_none() {
            return Err(ModelError::BudgetExhausted(format!(
                "the simulation has a cost budget, but this worker has no --price for the {role} model: no request is sent"
            )));
        }
        Ok(())
    }
}

/// A live model under its simulation's budget: no request is sent once
/// the budget is spent.
#[derive(Debug)]
struct Gate {
    inner: Arc<dyn ChatModel>,
    budget: BudgetOf,
    role: &'static str,
    price: Option<Price>,
}

impl ChatModel for Gate {
    fn complete<'a>(&'a self, request: ModelRequest<'a>) -> ModelFuture<'a> {
        Box::pin(async move {
            self.budget.refusal(self.role, self.price).await?;
            self.inner.complete(request).await
        })
    }

    fn identity(&self) -> serde_json::Value {
        self.inner.identity()
    }

    fn for_attempt(&self, scope: &AttemptScope) -> Option<Arc<dyn ChatModel>> {
        let view = self.inner.for_attempt(scope)?;
        Some(self.budget.gate(view, self.role, self.price))
    }
}

/// One attempt's model of one role, under its [`Meter`].
#[derive(Debug)]
struct Metered {
    inner: Arc<dyn ChatModel>,
    meter: Meter,
    role: &'static str,
    price: Option<Price>,
    /// The role's requests so far in this attempt.
    turns: AtomicU32,
}

impl ChatModel for Metered {
    fn complete<'a>(&'a self, request: ModelRequest<'a>) -> ModelFuture<'a> {
        Box::pin(async move {
            let turn = self.turns.fetch_add(1, Ordering::Relaxed) + 1;
            let reply = self.inner.complete(request).await?;
            if let Some(usage) = &reply.usage {
                let record = UsageRecord {
                    role: self.role.to_owned(),
                    turn,
                    prompt_tokens: usage.prompt_tokens,
                    completion_tokens: usage.completion_tokens,
                    cached_tokens: usage.cached_tokens,
                    cost: self.price.map(|p| p.cost(usage)),
                    replayed: self.meter.replaying || usage.replayed,
                    at: chrono::Utc::now(),
                };
                // An answer whose spend cannot be recorded is not used: the
                // budget of every worker counts on the record.
                self.meter
                    .store
                    .record_model_usage(
                        self.meter.tenant,
                        (self.meter.simulation, self.meter.attempt),
                        &record,
                    )
                    .await
                    .map_err(|e| {
                        ModelError::Unavailable(format!(
                            "the answer's usage could not be recorded ({e})"
                        ))
                    })?;
            }
            Ok(reply)
        })
    }

    fn identity(&self) -> serde_json::Value {
        self.inner.identity()
    }

    fn for_attempt(&self, scope: &AttemptScope) -> Option<Arc<dyn ChatModel>> {
        let view = self.inner.for_attempt(scope)?;
        Some(Arc::new(Metered {
            inner: view,
            meter: self.meter.clone(),
            role: self.role,
            price: self.price,
            turns: AtomicU32::new(0),
        }))
    }
}
