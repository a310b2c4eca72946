//! A run's budget of model tokens and cost (`--max-tokens`, `--max-cost`):
//! a [`ChatModel`] wrapper that sends no new request once the budget is
//! spent. It wraps the live model — under a cassette, so a replayed answer
//! costs nothing.

use std::sync::{Arc, Mutex, PoisonError};
use toolmock_simulation::{
    AttemptScope, ChatModel, ModelError, ModelFuture, ModelRequest, Price, Usage,
};

/// `MODEL=IN,OUT` (`--price`): a model name and its input and output price
/// per million tokens (non-negative numbers).
pub fn parse_price(text: &str) -> Result<(String, Price), String> {
    let usage = || format!("{text:?} is not MODEL=IN,OUT (prices per million tokens)");
    let (model, prices) = text.rsplit_once('=').ok_or_else(usage)?;
    let (input, output) = prices.split_once(',').ok_or_else(usage)?;
    let number = |p: &str| {
        p.trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
            .ok_or_else(usage)
    };
    if model.is_empty() {
        return Err(usage());
    }
    Ok((
        model.to_owned(),
        Price {
            input: number(input)?,
            output: number(output)?,
        },
    ))
}

/// The price `prices` (as `--price` gives them, repeated) set for `model`,
/// if any: the last one given wins, as with any repeated flag.
pub fn price_of(prices: &[(String, Price)], model: Option<&str>) -> Option<Price> {
    let model = model?;
    prices
        .iter()
        .rev()
        .find(|(m, _)| m == model)
        .map(|(_, p)| *p)
}

/// What a run may spend on model requests, and what it has spent.
#[derive(Debug)]
pub struct Budget {
    max_tokens: Option<u64>,
    max_cost: Option<f64>,
    spent: Mutex<Spent>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Spent {
    tokens: u64,
    cost: f64,
    refused: u64,
}

impl Budget {
    /// A budget of at most `max_tokens` tokens (prompt plus completion) and
    /// at most `max_cost` (in the unit of `--price`); `None` when neither.
    pub fn new(max_tokens: Option<u64>, max_cost: Option<f64>) -> Option<Arc<Self>> {
        (max_tokens.is_some() || max_cost.is_some()).then(|| {
            Arc::new(Self {
                max_tokens,
                max_cost,
                spent: Mutex::new(Spent::default()),
            })
        })
    }

    /// `model` (priced by `price`, if any) under this budget.
    pub fn wrap(
        self: &Arc<Self>,
        model: Arc<dyn ChatModel>,
        price: Option<Price>,
    ) -> Arc<dyn ChatModel> {
        Arc::new(Budgeted {
            inner: model,
            budget: self.clone(),
            price,
        })
    }

    /// Requests refused because the budget was spent.
    pub fn refused(&self) -> u64 {
        self.lock().refused
    }

    /// Tokens spent so far (as the answers reported them).
    pub fn spent_tokens(&self) -> u64 {
        self.lock().tokens
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Spent> {
        self.spent.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Why no new request may be sent, if the budget is spent.
    fn exhausted(&self) -> Option<String> {
        let mut spent = self.lock();
        let why = match (self.max_tokens, self.max_cost) {
            (Some(max), _) if spent.tokens >= max => format!(
                "the run's token budget is spent ({} of --max-tokens {max}): no new model request is sent",
                spent.tokens
            ),
            (_, Some(max)) if spent.cost >= max => format!(
                "the run's cost budget is spent ({:.6} of --max-cost {max}): no new model request is sent",
                spent.cost
            ),
            _ => return None,
        };
        spent.refused += 1;
        Some(why)
    }

    fn spend(&self, usage: &Usage, price: Option<Price>) {
        let mut spent = self.lock();
        spent.tokens += usage.prompt_tokens + usage.completion_tokens;
        spent.cost += price.map_or(0.0, |p| p.cost(usage));
    }
}

/// A model under a [`Budget`].
#[derive(Debug)]
struct Budgeted {
    inner: Arc<dyn ChatModel>,
    budget: Arc<Budget>,
    price: Option<Price>,
}

impl ChatModel for Budgeted {
    fn complete<'a>(&'a self, request: ModelRequest<'a>) -> ModelFuture<'a> {
        Box::pin(async move {
            if let Some(message) = self.budget.exhausted() {
                return Err(ModelError::BudgetExhausted(message));
            }
            let reply = self.inner.complete(request).await?;
            if let Some(usage) = &reply.usage {
                self.budget.spend(usage, self.price);
            }
            Ok(reply)
        })
    }

    fn identity(&self) -> serde_json::Value {
        self.inner.identity()
    }

    fn for_attempt(&self, scope: &AttemptScope) -> Option<Arc<dyn ChatModel>> {
        let view = self.inner.for_attempt(scope)?;
        Some(self.budget.wrap(view, self.price))
    }
}
