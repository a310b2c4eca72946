//! Version 2's domain errors (docs/mock-language.md, "Domain errors").
//!
//! Properties:
//! - A rule answering `error` gives exactly the rendered `{code, message,
//!   data}`, whatever the input and state, with no state update (the
//!   variant's `set_state` is not applied) and the rule's delay.
//! - `evaluate_json`, `evaluate_with_contract` and `Prepared::evaluate`
//!   answer the same error as `evaluate`, write no result text, and never
//!   apply the output schema to it.
//! - A message read from the input is blamed on the input when it is not a
//!   string, and a state message on the state.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolmock_contract::{OperationContract, OperationIdentity, OperationSource};
use toolmock_evaluator::{
    Call, CompiledContract, DomainError, Prepared, Rendering, compile, evaluate, evaluate_json,
    evaluate_with_contract,
};

fn code() -> impl Strategy<Value = String> {
    "[A-Za-z][A-Za-z0-9_.:-]{0,20}"
}

fn data() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        "[a-z ]{0,8}".prop_map(Value::String),
        proptest::collection::vec("[a-z]{0,3}", 0..3).prop_map(|v| json!(v)),
    ]
}

fn contract() -> CompiledContract {
    CompiledContract::new(OperationContract {
        operation: OperationIdentity {
            source: OperationSource::Custom,
            name: "op".into(),
        },
        description: String::new(),
        input_schema: json!({"type": "object"}),
        // Every result is an object with `status`: a domain error is not
        // a result, so this schema never applies to one.
        output_schema: json!({"type": "object", "required": ["status"]}),
    })
    .expect("the contract compiles")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn an_error_answer_renders_and_changes_nothing(
        code in code(),
        message in "[ -~]{0,20}",
        literal in data(),
        from_input in data(),
        delay in 0u32..=30_000,
        n in any::<i32>(),
    ) {
        let doc = json!({
            "schema_version": 2,
            "default_variant": "v",
            "initial_state": {"n": 0},
            "variants": {"v": {
                "result": {"status": "ok"},
                "set_state": {"n": {"$input": "n"}},
                "delay_ms": 1,
                "rules": [{
                    "when": [{"source": "input", "path": "fail", "op": "eq", "value": true}],
                    "error": {"code": code, "message": {"$input": "why"},
                              "data": {"literal": literal, "input": {"$input": "x"}, "state": {"$state": "n"}}},
                    "delay_ms": delay
                }]
            }},
            "examples": [{"variant": "v", "input": {"n": 1}, "expected": {"status": "ok"}}]
        });
        let definition = compile(&doc).map_err(|d| TestCaseError::fail(d.to_string()))?;
        let input = json!({"fail": true, "why": message, "x": from_input, "n": n});
        let state: Map<String, Value> = [("n".to_owned(), json!(7))].into_iter().collect();
        let call = Call { input: &input, state: &state, variant: None };
        let want = DomainError {
            code: code.clone(),
            message: message.clone(),
            data: Some(json!({"literal": literal, "input": from_input, "state": 7})),
        };
        let outcome = evaluate(&definition, &call).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(outcome.error.as_ref(), Some(&want));
        prop_assert_eq!(&outcome.result, &Value::Null);
        prop_assert!(outcome.state_updates.is_empty());
        prop_assert_eq!((outcome.rule, outcome.delay_ms), (Some(0), delay));
        prop_assert_eq!(outcome.post_state(&state), state.clone());

        let mut out = b"before".to_vec();
        let json = evaluate_json(&definition, &call, &mut out).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(out, b"before".to_vec());
        prop_assert_eq!(json.error.as_ref(), Some(&want));
        prop_assert!(json.state_updates.is_empty());

        let contract = contract();
        let checked = evaluate_with_contract(&definition, &contract, &call)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(checked.error.as_ref(), Some(&want));
        let prepared = Prepared::new(&definition, Some(&contract), &input, None, Rendering::Value);
        let ahead = prepared.evaluate(&definition, Some(&contract), &input, &state)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(ahead.error.as_ref(), Some(&want));

        // Without `fail`, the variant's own result and set_state apply.
        let ok_input = json!({"n": n});
        let ok = evaluate(&definition, &Call { input: &ok_input, state: &state, variant: None })
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(ok.error.is_none());
        prop_assert_eq!(ok.state_updates, vec![("n", json!(n))]);
    }

    #[test]
    fn a_message_that_is_not_a_string_is_blamed_on_its_origin(value in data()) {
        prop_assume!(!value.is_string());
        let doc = json!({
            "schema_version": 2,
            "default_variant": "v",
            "initial_state": {"texts": {"a": "fine"}},
            "variants": {
                "v": {"error": {"code": "E", "message": {"$input": "why"}}},
                "s": {"error": {"code": "E", "message": {"$state": ["texts", {"$input": "k"}]}}}
            },
            "examples": [
                {"variant": "v", "input": {"why": "w"}, "expected_error": {"code": "E", "message": "w"}},
                {"variant": "s", "input": {"k": "a"}, "expected_error": {"code": "E", "message": "fine"}}
            ]
        });
        let definition = compile(&doc).map_err(|d| TestCaseError::fail(d.to_string()))?;
        let input = json!({"why": value.clone(), "k": "b"});
        let mut state = definition.initial_state().clone();
        state.insert("texts".into(), json!({"b": value}));
        let from_input = evaluate(&definition, &Call { input: &input, state: &state, variant: None })
            .expect_err("the input's message is not a string");
        prop_assert_eq!((from_input.class().as_str(), from_input.code(), from_input.path()),
                        ("tool_input_error", "invalid_operand", Some("/why")));
        let from_state = evaluate(&definition, &Call { input: &input, state: &state, variant: Some("s") })
            .expect_err("the state's message is not a string");
        prop_assert_eq!((from_state.class().as_str(), from_state.code()),
                        ("harness_error", "invalid_fixture_literal"));
    }
}
