//! Evaluating one call (docs/spec.md §6) from a compiled definition:
//! [`evaluate`], the entry point, and the two that add something to it —
//! [`evaluate_with_contract`] (the contract's schemas) and
//! [`evaluate_json`] (the result written as JSON text).

use crate::call::outcome::{Call, JsonOutcome, Outcome};
use crate::call::select::{Selected, render_updates, select};
use crate::contract::CompiledContract;
use crate::definition::CompiledDefinition;
use crate::domain::answer::{Answer, DomainError};
use crate::error::CallError;
use crate::scope::{Memo, Scope};
use serde_json::Value;

/// Evaluates one call without schema validation (docs/spec.md §6 steps 1–6).
///
/// Pure and deterministic: the same definition, call and state always give the
/// same answer; nothing is read from a clock or the environment.
pub fn evaluate<'d>(
    definition: &'d CompiledDefinition,
    call: &Call<'_>,
) -> Result<Outcome<'d>, CallError> {
    let memo = Memo::new();
    let scope = Scope::new(call.input, call.state, &memo);
    let selected = select(definition, call, &scope)?;
    outcome(&selected, &scope)
}

/// Renders what `select` chose: the result and the state updates, or the
/// domain error alone (which changes no state, so `set_state` is not rendered).
pub(crate) fn outcome<'d>(
    selected: &Selected<'d>,
    scope: &Scope<'_>,
) -> Result<Outcome<'d>, CallError> {
    let (result, error, state_updates) = match selected.result {
        Answer::Result(expr) => (expr.render(scope)?, None, render_updates(selected, scope)?),
        Answer::Error(error) => (Value::Null, Some(error.render(scope)?), Vec::new()),
    };
    Ok(Outcome {
        variant: &selected.variant.name,
        rule: selected.rule,
        result,
        error,
        state_updates,
        delay_ms: selected.delay_ms,
    })
}

/// Evaluates one call with the contract: the input is validated before the
/// variant is looked up and the result after it is rendered (docs/spec.md §6).
pub fn evaluate_with_contract<'d>(
    definition: &'d CompiledDefinition,
    contract: &CompiledContract,
    call: &Call<'_>,
) -> Result<Outcome<'d>, CallError> {
    contract.validate_input(call.input)?;
    let outcome = evaluate(definition, call)?;
    // The output schema describes results; a domain error is not one.
    if outcome.error.is_none() {
        contract.validate_output(&outcome.result)?;
    }
    Ok(outcome)
}

/// [`evaluate`], but the rendered result is appended to `out` as compact
/// JSON — byte for byte what `serde_json::to_writer` writes for
/// [`Outcome::result`] — without building it as a [`Value`]: literal parts
/// of the result were serialized once, when the definition was compiled.
///
/// The answer and any error are exactly [`evaluate`]'s. On error `out` is
/// left as it was.
///
/// ```
/// use serde_json::{json, Map};
/// use toolmock_evaluator::{Call, compile, evaluate_json};
///
/// let definition = compile(&json!({
///     "schema_version": 1,
///     "default_variant": "ok",
///     "variants": {"ok": {"result": {"id": {"$input": "id"}, "status": "found"}}},
///     "examples": [{"variant": "ok", "input": {"id": 1}, "expected": {"id": 1, "status": "found"}}]
/// })).expect("the definition compiles");
/// let mut out = Vec::new();
/// let input = json!({"id": 7});
/// let call = Call { input: &input, state: &Map::new(), variant: None };
/// let outcome = evaluate_json(&definition, &call, &mut out)?;
/// assert_eq!(out, br#"{"id":7,"status":"found"}"#);
/// assert_eq!(outcome.variant, "ok");
/// # Ok::<(), toolmock_evaluator::CallError>(())
/// ```
pub fn evaluate_json<'d>(
    definition: &'d CompiledDefinition,
    call: &Call<'_>,
    out: &mut Vec<u8>,
) -> Result<JsonOutcome<'d>, CallError> {
    let memo = Memo::new();
    let scope = Scope::new(call.input, call.state, &memo);
    let selected = select(definition, call, &scope)?;
    write_selected(selected, &scope, out)
}

/// Writes a selected answer's result to `out` and renders its state
/// updates; on an error `out` is left as it was.
pub(crate) fn write_selected<'d>(
    selected: Selected<'d>,
    scope: &Scope<'_>,
    out: &mut Vec<u8>,
) -> Result<JsonOutcome<'d>, CallError> {
    let expr = match selected.result {
        Answer::Result(expr) => expr,
        Answer::Error(error) => return error_outcome(&selected, error.render(scope)?),
    };
    let start = out.len();
    let answer = expr.write_json(scope, out).and_then(|()| {
        Ok(JsonOutcome {
            variant: &selected.variant.name,
            rule: selected.rule,
            error: None,
            state_updates: render_updates(&selected, scope)?,
            delay_ms: selected.delay_ms,
        })
    });
    if answer.is_err() {
        out.truncate(start);
    }
    answer
}

/// A [`JsonOutcome`] of a domain error: nothing written, no state update.
pub(crate) fn error_outcome<'d>(
    selected: &Selected<'d>,
    error: DomainError,
) -> Result<JsonOutcome<'d>, CallError> {
    Ok(JsonOutcome {
        variant: &selected.variant.name,
        rule: selected.rule,
        error: Some(error),
        state_updates: Vec::new(),
        delay_ms: selected.delay_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::{evaluate, evaluate_json};
    use crate::call::outcome::Call;
    use serde_json::{Map, json};

    /// `evaluate_json` writes exactly the JSON of `evaluate`'s result, and
    /// fails exactly when and how `evaluate` fails.
    #[test]
    fn json_rendering_matches_value_rendering() {
        let definition = crate::check::compile(&json!({
            "schema_version": 1,
            "default_variant": "a",
            "initial_state": {"s": {"k": [1, "two"]}},
            "variants": {
                "a": {
                    "result": {
                        "z": "last", "a": [1, {"$input": "x"}, {"b\"q": {"$state": "s.k.1"}}],
                        "m": {"$number": {"$input": "n"}}, "e": {}, "l": [],
                        "d": {"$dateAdd": {"value": {"$input": "when"}, "days": 1}},
                        "u": "é\u{1}\n\t", "lit": {"$number": "0042"}, "whole": {"$state": ""}
                    },
                    "set_state": {"seen": {"$input": "x"}},
                    "rules": [{"when": [{"source": "input", "path": "x", "op": "eq", "value": 0}],
                               "result": {"$input": ""}}]
                },
                "b": {"result": [true, null, 1.5]},
                "c": {"result": "plain"},
                "d": {"result": {"$state": "s"}}
            },
            "examples": [
                {"variant": "a", "input": {"x": 0}, "expected": {"x": 0}},
                {"variant": "b", "input": {}, "expected": [true, null, 1.5]},
                {"variant": "c", "input": {}, "expected": "plain"},
                {"variant": "d", "input": {}, "expected": {"k": [1, "two"]}}
            ]
        }))
        .expect("compiles");
        let state = definition.initial_state().clone();
        let inputs = [
            json!({"x": 0}),
            json!({"x": {"deep": [null]}, "n": "12.50", "when": "2026-03-01T23:30:00-05:00"}),
            json!({"x": 1, "n": "1e3", "when": "2026-03-01"}),
            json!({"x": 1, "n": 3, "when": "2026-02-30"}),
            json!({"n": 3, "when": "2026-03-01"}),
            json!({"x": 1, "n": 3}),
        ];
        let empty = Map::new();
        let (mut oks, mut errors) = (0, 0);
        for input in &inputs {
            for variant in [None, Some("b"), Some("c"), Some("d"), Some("nope")] {
                for state in [&state, &empty] {
                    let call = Call {
                        input,
                        state,
                        variant,
                    };
                    let mut out = b"prefix".to_vec();
                    match (
                        evaluate(&definition, &call),
                        evaluate_json(&definition, &call, &mut out),
                    ) {
                        (Ok(value), Ok(written)) => {
                            let mut want = b"prefix".to_vec();
                            want.extend(serde_json::to_vec(&value.result).expect("serializes"));
                            assert_eq!(
                                String::from_utf8_lossy(&out),
                                String::from_utf8_lossy(&want)
                            );
                            oks += 1;
                            assert_eq!(
                                (
                                    value.variant,
                                    value.rule,
                                    &value.state_updates,
                                    value.delay_ms
                                ),
                                (
                                    written.variant,
                                    written.rule,
                                    &written.state_updates,
                                    written.delay_ms
                                )
                            );
                        }
                        (Err(a), Err(b)) => {
                            assert_eq!(
                                (a.code(), a.to_string(), a.path()),
                                (b.code(), b.to_string(), b.path())
                            );
                            assert_eq!(out, b"prefix");
                            errors += 1;
                        }
                        (a, b) => panic!("{input} {variant:?}: {a:?} vs {b:?}"),
                    }
                }
            }
        }
        assert!(oks >= 20 && errors >= 10, "{oks} answers, {errors} errors");
    }

    /// Conditions and references that read the same path share one memo
    /// slot per call; what a reference renders is still exactly the input's
    /// or the state's value, a missing one is still an error, and paths
    /// beyond the memo's slots are resolved each time.
    #[test]
    fn references_read_through_the_call_memo() {
        let many: Vec<_> = (0..20).map(|i| json!({"source": "input", "path": format!("p{i}"), "op": "exists", "value": false})).collect();
        let definition = crate::check::compile(&json!({
            "schema_version": 1,
            "default_variant": "v",
            "initial_state": {"s": 1},
            "variants": {
                "v": {
                    "result": {"many": [{"$input": "p18"}, {"$input": "p19"}], "whole": {"$state": ""}},
                    "rules": [
                        {"when": [{"source": "input", "path": "a.b", "op": "exists", "value": false}],
                         "result": {"$input": "a.b"}},
                        {"when": [{"source": "input", "path": "a.b", "op": "eq", "value": 1},
                                  {"source": "state", "path": "", "op": "exists", "value": true}],
                         "result": [{"$input": "a.b"}, {"$state": ""}, {"$state": "s"}],
                         "set_state": {"s": {"$input": "a.b"}}},
                        {"when": many}
                    ]
                }
            },
            "examples": [{"variant": "v", "input": {"a": {"b": 1}}, "expected": [1, {"s": 1}, 1]}]
        }))
        .expect("compiles");
        let state = definition.initial_state().clone();
        let call = |input: &serde_json::Value| {
            evaluate(
                &definition,
                &Call {
                    input,
                    state: &state,
                    variant: None,
                },
            )
        };

        let missing = call(&json!({"a": {}})).expect_err("a.b is absent");
        assert_eq!(
            (missing.code(), missing.path()),
            ("missing_reference", Some("/a/b"))
        );

        let shared = call(&json!({"a": {"b": 1}})).expect("rule 1 answers");
        assert_eq!(
            (shared.rule, &shared.result),
            (Some(1), &json!([1, {"s": 1}, 1]))
        );
        assert_eq!(shared.state_updates, vec![("s", json!(1))]);

        let all = (0..18).map(|i| (format!("p{i}"), json!(i)));
        let mut input: Map<_, _> = all.collect();
        input.insert("a".into(), json!({"b": 2}));
        let e = call(&json!({"a": {"b": 2}, "p18": 0})).expect_err("p19 is absent");
        assert_eq!((e.code(), e.path()), ("missing_reference", Some("/p19")));
        input.extend([("p18".into(), json!("x")), ("p19".into(), json!("y"))]);
        let both = call(&serde_json::Value::Object(input)).expect("the fallback answers");
        assert_eq!(both.rule, None);
        assert_eq!(both.result, json!({"many": ["x", "y"], "whole": {"s": 1}}));
    }
}
