//! Bytes → `parse_definition` → `compile` and `compile_checked` (with and
//! without a small contract) → `evaluate` of every example-like call.
//!
//! Nothing may panic, and the check must agree with itself: a definition that
//! passes with the contract passes without it, one that passes compiles, and
//! every example of a passing definition evaluates to its `expected` (or, in
//! version 2, its `expected_error`); `evaluate_json` agrees with `evaluate`,
//! a domain error included.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};
use std::sync::OnceLock;
use toolmock_contract::OperationContract;
use toolmock_evaluator::{
    Call, CompiledContract, CompiledDefinition, compile, compile_checked, evaluate, evaluate_json,
    evaluate_with_contract, json_equal, parse_definition,
};

fn contract() -> &'static CompiledContract {
    static CONTRACT: OnceLock<CompiledContract> = OnceLock::new();
    CONTRACT.get_or_init(|| {
        let contract = OperationContract::from_value(json!({
            "operation": {"source": "mcp", "name": "fuzz"},
            "description": "a small contract",
            "input_schema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": 64},
                    "count": {"type": "integer", "minimum": 0},
                    "when": {"type": "string", "format": "date"}
                }
            },
            "output_schema": {
                "type": "object",
                "properties": {"status": {"type": "string"}}
            }
        }))
        .expect("the fuzz contract reads");
        CompiledContract::new(contract).expect("the fuzz contract compiles")
    })
}

/// Calls shaped like the document's examples (whatever their types), plus
/// the default and an unknown variant.
fn calls(
    doc: &Value,
    compiled: &CompiledDefinition,
) -> Vec<(Value, Map<String, Value>, Option<String>)> {
    let initial = compiled.initial_state().clone();
    let mut out = Vec::new();
    if let Some(examples) = doc.get("examples").and_then(Value::as_array) {
        for example in examples.iter().take(8) {
            let input = example.get("input").cloned().unwrap_or(Value::Null);
            let state = match example.get("state") {
                Some(Value::Object(map)) => map.clone(),
                _ => initial.clone(),
            };
            let variant = example
                .get("variant")
                .and_then(Value::as_str)
                .map(str::to_owned);
            out.push((input.clone(), state.clone(), variant));
            out.push((input, Map::new(), None));
        }
    }
    out.push((json!({}), initial.clone(), None));
    out.push((
        json!({"name": "x"}),
        initial,
        Some("no such variant".to_owned()),
    ));
    out
}

fn run(doc: &Value, compiled: &CompiledDefinition) {
    for (input, state, variant) in calls(doc, compiled) {
        let call = Call {
            input: &input,
            state: &state,
            variant: variant.as_deref(),
        };
        let first = evaluate(compiled, &call);
        let again = evaluate(compiled, &call);
        match (&first, &again) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "evaluation is deterministic"),
            (Err(a), Err(b)) => assert_eq!(a.code(), b.code(), "evaluation is deterministic"),
            _ => panic!("evaluation is deterministic"),
        }
        // The streamed JSON rendering answers exactly as the `Value` one.
        let mut json = Vec::new();
        match (&first, evaluate_json(compiled, &call, &mut json)) {
            (Ok(value), Ok(written)) => {
                // A domain error writes no result; both name the same error.
                assert_eq!(value.error, written.error);
                if value.error.is_some() {
                    assert!(json.is_empty());
                } else {
                    assert_eq!(json, serde_json::to_vec(&value.result).expect("serializes"));
                }
                assert_eq!(
                    (value.rule, value.delay_ms),
                    (written.rule, written.delay_ms)
                );
                assert_eq!(value.state_updates, written.state_updates);
            }
            (Err(a), Err(b)) => {
                assert_eq!((a.code(), a.to_string()), (b.code(), b.to_string()));
                assert!(json.is_empty());
            }
            _ => panic!("evaluate_json disagrees with evaluate"),
        }
        if let Ok(outcome) = first {
            let post = outcome.post_state(&state);
            let mut moved = state.clone();
            outcome.commit_to(&mut moved);
            assert_eq!(post, moved);
        }
        let _ = evaluate_with_contract(compiled, contract(), &call);
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = parse_definition(data) else {
        return;
    };
    let structural = compile(&doc);
    let without = compile_checked(&doc, None);
    let with = compile_checked(&doc, Some(contract()));
    if with.is_ok() {
        assert!(
            without.is_ok(),
            "passing with the contract implies passing without it"
        );
    }
    if let Ok(checked) = &without {
        assert!(
            structural.is_ok(),
            "a definition that passes its check compiles"
        );
        // Every example of a passing definition renders its expected result.
        if let Some(examples) = doc.get("examples").and_then(Value::as_array) {
            for example in examples {
                let state = match example.get("state") {
                    Some(Value::Object(map)) => map.clone(),
                    _ => checked.initial_state().clone(),
                };
                let input = &example["input"];
                let call = Call {
                    input,
                    state: &state,
                    variant: example["variant"].as_str(),
                };
                let outcome = evaluate(checked, &call).expect("a checked example evaluates");
                match example.get("expected_error") {
                    // Version 2: the example's domain error, exactly.
                    Some(expected) => {
                        let error = serde_json::to_value(&outcome.error).expect("serializes");
                        assert!(json_equal(&error, expected), "{error} != {expected}");
                    }
                    None => {
                        assert!(outcome.error.is_none());
                        assert!(json_equal(&outcome.result, &example["expected"]));
                    }
                }
            }
        }
    }
    if let Err(diagnostics) = &without {
        assert!(!diagnostics.is_empty(), "a failed check says why");
    }
    if let Ok(compiled) = &structural {
        run(&doc, compiled);
    }
});
