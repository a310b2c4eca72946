//! Token usage: what every model request of an attempt cost, as the
//! endpoint reported it, summed per attempt, per case and per run
//! (`toolmock run --json`, docs/cassettes.md "Usage"), and its cost under
//! the prices a caller gives per model.

use crate::conversation::{ModelRole, Usage};
use serde::{Deserialize, Serialize};

/// The usage of one model request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestUsage {
    /// Whose request.
    pub role: ModelRole,
    /// The role's request number within the attempt (1, 2, …).
    pub turn: u32,
    /// Its tokens.
    #[serde(flatten)]
    pub usage: Usage,
}

/// Tokens summed over requests (an attempt's, a case's, a run's).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Model requests whose answer reported usage.
    pub requests: u32,
    /// Their prompt tokens.
    pub prompt_tokens: u64,
    /// Their completion tokens.
    pub completion_tokens: u64,
    /// Of the prompt tokens, those served from the endpoint's cache (when
    /// any answer said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// Their cost under the prices given (`--price`), in the prices' unit;
    /// absent when no price applies to any of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// Of the requests, those a cassette replayed beside live ones
    /// (`--cassette-mode auto`): counted above as recorded, spent by no
    /// budget of this run; absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replayed_requests: u32,
    /// Their prompt plus completion tokens.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replayed_tokens: u64,
}

fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

impl TokenUsage {
    /// Prompt plus completion tokens.
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }

    /// Adds `other` to this sum.
    pub fn add(&mut self, other: &TokenUsage) {
        self.requests += other.requests;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cached_tokens = match (self.cached_tokens, other.cached_tokens) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        self.cost = match (self.cost, other.cost) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
        self.replayed_requests += other.replayed_requests;
        self.replayed_tokens += other.replayed_tokens;
    }

    /// The tokens this run spent: those of the requests it sent, not of
    /// the answers a cassette replayed.
    pub fn live_tokens(&self) -> u64 {
        self.total() - self.replayed_tokens
    }

    /// The sum of `requests`, each priced by `price` (input and output
    /// price per million tokens of its role's model, if any); `None` when
    /// there are none.
    pub fn of(
        requests: &[RequestUsage],
        price: &dyn Fn(ModelRole) -> Option<Price>,
    ) -> Option<TokenUsage> {
        let mut sum: Option<TokenUsage> = None;
        for r in requests {
            let cost = price(r.role).map(|p| p.cost(&r.usage));
            sum.get_or_insert_with(TokenUsage::default)
                .add(&TokenUsage {
                    requests: 1,
                    prompt_tokens: r.usage.prompt_tokens,
                    completion_tokens: r.usage.completion_tokens,
                    cached_tokens: r.usage.cached_tokens,
                    cost,
                    replayed_requests: u32::from(r.usage.replayed),
                    replayed_tokens: if r.usage.replayed {
                        r.usage.prompt_tokens + r.usage.completion_tokens
                    } else {
                        0
                    },
                });
        }
        sum
    }

    /// The sum of `parts` (`None` when none has any usage).
    pub fn sum<'a>(parts: impl IntoIterator<Item = &'a Option<TokenUsage>>) -> Option<TokenUsage> {
        let mut sum: Option<TokenUsage> = None;
        for part in parts.into_iter().flatten() {
            sum.get_or_insert_with(TokenUsage::default).add(part);
        }
        sum
    }
}

/// A model's price per million tokens (`--price MODEL=IN,OUT`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    /// Per million prompt tokens.
    pub input: f64,
    /// Per million completion tokens.
    pub output: f64,
}

impl Price {
    /// What `usage` costs.
    pub fn cost(&self, usage: &Usage) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let (prompt, completion) = (usage.prompt_tokens as f64, usage.completion_tokens as f64);
        (prompt * self.input + completion * self.output) / 1e6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_sums_and_prices_per_role() {
        let request = |role, prompt, completion, cached| RequestUsage {
            role,
            turn: 1,
            usage: Usage {
                prompt_tokens: prompt,
                completion_tokens: completion,
                cached_tokens: cached,
                replayed: false,
            },
        };
        let requests = [
            request(ModelRole::Agent, 1_000, 100, None),
            request(ModelRole::Agent, 2_000, 200, Some(500)),
            request(ModelRole::Judge, 500, 50, None),
        ];
        let agent_only = |role| {
            (role == ModelRole::Agent).then_some(Price {
                input: 2.0,
                output: 8.0,
            })
        };
        let sum = TokenUsage::of(&requests, &agent_only).unwrap();
        assert_eq!(
            (sum.requests, sum.prompt_tokens, sum.completion_tokens),
            (3, 3_500, 350)
        );
        assert_eq!(sum.cached_tokens, Some(500));
        // 3,000 × 2 + 300 × 8 per million; the judge has no price.
        assert!((sum.cost.unwrap() - 0.0084).abs() < 1e-12);
        assert_eq!(TokenUsage::of(&[], &agent_only), None);
        let unpriced = TokenUsage::of(&requests, &|_| None).unwrap();
        assert_eq!(unpriced.cost, None);
        assert_eq!(
            TokenUsage::sum([&Some(sum), &None, &Some(unpriced)])
                .unwrap()
                .total(),
            7_700
        );
    }

    #[test]
    fn replayed_requests_are_summed_apart() {
        let request = |turn, replayed| RequestUsage {
            role: ModelRole::Agent,
            turn,
            usage: Usage {
                prompt_tokens: 100,
                completion_tokens: 10,
                cached_tokens: None,
                replayed,
            },
        };
        let attempt = TokenUsage::of(&[request(1, true), request(2, false)], &|_| None).unwrap();
        assert_eq!((attempt.requests, attempt.total()), (2, 220));
        assert_eq!(
            (attempt.replayed_requests, attempt.replayed_tokens),
            (1, 110)
        );
        assert_eq!(attempt.live_tokens(), 110);
        let run = TokenUsage::sum([&Some(attempt), &Some(attempt)]).unwrap();
        assert_eq!((run.replayed_requests, run.replayed_tokens), (2, 220));
        let live = TokenUsage::of(&[request(1, false)], &|_| None).unwrap();
        let json = serde_json::to_value(live).unwrap();
        assert!(json.get("replayed_requests").is_none(), "{json}");
        let json = serde_json::to_value(request(1, true)).unwrap();
        assert_eq!(json["replayed"], true, "{json}");
        let json = serde_json::to_value(request(1, false)).unwrap();
        assert!(json.get("replayed").is_none(), "{json}");
    }
}
