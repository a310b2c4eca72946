//! One call (SPEC §6).

use crate::compile::{CompiledCondition, CompiledDefinition, Test};
use crate::contract::CompiledContract;
use crate::error::CallError;
use crate::expr::{Expr, Scope, Source};
use crate::path::Resolved;
use serde::Serialize;
use serde_json::{Map, Value};

/// One call: its input, the pre-call state and an optional variant name.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The call's arguments (an object for every real tool call).
    pub input: &'a Value,
    /// The pre-call state.
    pub state: &'a Map<String, Value>,
    /// The variant to use; `None` means the definition's `default_variant`.
    pub variant: Option<&'a str>,
}

/// What a successful call answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome<'d> {
    /// The variant used.
    pub variant: &'d str,
    /// The index of the matched rule in the variant's `rules`, or `None`.
    pub rule: Option<usize>,
    /// The rendered result: exactly what the agent receives.
    pub result: Value,
    /// The rendered `set_state`: each top-level key replaces the pre-call state's.
    #[serde(skip)]
    pub state_updates: Vec<(&'d str, Value)>,
    /// The simulated delay.
    pub delay_ms: u32,
}

impl Outcome<'_> {
    /// Applies the state updates in place, turning the pre-call state into the post-call state.
    pub fn apply_to(&self, state: &mut Map<String, Value>) {
        for (key, value) in &self.state_updates {
            state.insert((*key).to_owned(), value.clone());
        }
    }

    /// Moves the updates into `state` (no clone).
    pub fn commit_to(self, state: &mut Map<String, Value>) -> Value {
        for (key, value) in self.state_updates {
            state.insert(key.to_owned(), value);
        }
        self.result
    }

    /// The post-call state, computed from the pre-call state.
    pub fn post_state(&self, pre: &Map<String, Value>) -> Map<String, Value> {
        let mut state = pre.clone();
        self.apply_to(&mut state);
        state
    }
}

/// Evaluates one call without schema validation (SPEC §6 steps 1–6).
///
/// Pure and deterministic: the same definition, call and state always give the
/// same answer; nothing is read from a clock or the environment.
pub fn evaluate<'d>(
    definition: &'d CompiledDefinition,
    call: &Call<'_>,
) -> Result<Outcome<'d>, CallError> {
    let variant = definition
        .variant(call.variant)
        .ok_or_else(|| CallError::UnknownVariant {
            variant: call.variant.unwrap_or_default().to_owned(),
        })?;
    let scope = Scope {
        input: call.input,
        state: call.state,
    };
    let matched = variant
        .rules
        .iter()
        .position(|rule| rule.when.iter().all(|c| holds(c, &scope)));
    let rule = matched.map(|i| &variant.rules[i]);
    let result_expr: &Expr = rule
        .and_then(|r| r.result.as_ref())
        .unwrap_or(&variant.result);
    let set_state = rule
        .and_then(|r| r.set_state.as_deref())
        .unwrap_or(&variant.set_state);
    let delay_ms = rule.and_then(|r| r.delay_ms).unwrap_or(variant.delay_ms);
    let result = result_expr.render(&scope)?;
    let state_updates = set_state
        .iter()
        .map(|(key, expr)| Ok((&**key, expr.render(&scope)?)))
        .collect::<Result<Vec<_>, CallError>>()?;
    Ok(Outcome {
        variant: &variant.name,
        rule: matched,
        result,
        state_updates,
        delay_ms,
    })
}

/// Evaluates one call with the contract: the input is validated before the
/// variant is looked up and the result after it is rendered (SPEC §6).
pub fn evaluate_with_contract<'d>(
    definition: &'d CompiledDefinition,
    contract: &CompiledContract,
    call: &Call<'_>,
) -> Result<Outcome<'d>, CallError> {
    contract.validate_input(call.input)?;
    let outcome = evaluate(definition, call)?;
    contract.validate_output(&outcome.result)?;
    Ok(outcome)
}

fn holds(condition: &CompiledCondition, scope: &Scope<'_>) -> bool {
    let state_whole;
    let found: Option<&Value> = match condition.source {
        Source::Input => condition.path.resolve(scope.input),
        Source::State => match condition.path.resolve_in_map(scope.state) {
            Resolved::Found(v) => Some(v),
            Resolved::Missing => None,
            Resolved::Whole => {
                state_whole = Value::Object(scope.state.clone());
                Some(&state_whole)
            }
        },
    };
    match &condition.test {
        Test::Eq(want) => found.is_some_and(|v| json_equal(v, want)),
        Test::Ne(want) => !found.is_some_and(|v| json_equal(v, want)),
        Test::In(options) => found.is_some_and(|v| options.iter().any(|o| json_equal(v, o))),
        Test::Exists(want) => found.is_some() == *want,
    }
}

/// Deep JSON equality with numbers compared by value (`1` equals `1.0`);
/// booleans are never numbers; object key order does not matter.
pub fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => numbers_equal(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => maps_equal(x, y),
        _ => a == b,
    }
}

/// Numbers by exact value: an integer equals a float only when the float is
/// that very integer (`2^53 + 1` is not `2^53` written as a double).
fn numbers_equal(x: &serde_json::Number, y: &serde_json::Number) -> bool {
    let int = |n: &serde_json::Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    // `f as i128` is exact for integral doubles within range and saturates
    // beyond it, where no 64-bit integer can be equal anyway.
    let float_is = |f: f64, i: i128| f.fract() == 0.0 && f as i128 == i;
    match (int(x), int(y)) {
        (Some(i), Some(j)) => i == j,
        (Some(i), None) => y.as_f64().is_some_and(|g| float_is(g, i)),
        (None, Some(j)) => x.as_f64().is_some_and(|f| float_is(f, j)),
        (None, None) => x.as_f64() == y.as_f64(),
    }
}

/// [`json_equal`] for two objects.
pub fn maps_equal(x: &Map<String, Value>, y: &Map<String, Value>) -> bool {
    x.len() == y.len()
        && x.iter()
            .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
}

#[cfg(test)]
mod tests {
    use super::json_equal;
    use serde_json::json;

    #[test]
    fn equality_is_deep_and_by_value() {
        assert!(json_equal(&json!(1), &json!(1.0)));
        assert!(json_equal(
            &json!({"a": [1, {"b": 2.0}]}),
            &json!({"a": [1.0, {"b": 2}]})
        ));
        assert!(!json_equal(&json!(true), &json!(1)));
        assert!(!json_equal(&json!([1, 2]), &json!([2, 1])));
        assert!(!json_equal(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        assert!(!json_equal(&json!(u64::MAX), &json!(-1)));
        assert!(json_equal(&json!(null), &json!(null)));
    }
}
