//! `$if` (version 3, docs/mock-language.md "Conditional expressions")
//! answers exactly as the two rules it replaces: a rule with the same
//! `when` answering `then`, and a catch-all answering `else` — the same
//! results and the same errors (code and path), for random conditions and
//! inputs.

use proptest::prelude::*;
use serde_json::{Value, json};
use toolmock_evaluator::{Call, CompiledDefinition, compile, evaluate};

/// The conditions a `when` is drawn from: every op family, on paths that
/// may be missing or of another kind.
fn condition(i: usize) -> Value {
    let pool = [
        json!({"source": "input", "path": "x", "op": "exists", "value": true}),
        json!({"source": "input", "path": "x", "op": "eq", "value": 1}),
        json!({"source": "input", "path": "x", "op": "lt", "value": 2}),
        json!({"source": "input", "path": "y", "op": "ge", "value": {"$input": "x"}}),
        json!({"source": "input", "path": "s", "op": "eq_ci", "value": "Ab"}),
        json!({"source": "state", "path": "n", "op": "gt", "value": {"$input": "x"}}),
        json!({"source": "input", "path": "x", "op": "ne", "value": 3}),
    ];
    pool[i % pool.len()].clone()
}

fn compiled(doc: Value) -> CompiledDefinition {
    match compile(&doc) {
        Ok(definition) => definition,
        Err(problems) => panic!("the definition compiles: {problems:?}"),
    }
}

/// The version the rules alone need (a document declares the version whose
/// features it uses): the ordering ops are version 3's, `eq_ci` version 2's.
fn version_of(picks: &[usize]) -> u8 {
    if picks.iter().any(|p| matches!(p % 7, 2 | 3 | 5)) {
        3
    } else if picks.iter().any(|p| p % 7 == 4) {
        2
    } else {
        1
    }
}

fn definitions(when: &[Value], version: u8) -> (CompiledDefinition, CompiledDefinition) {
    let then = json!({"then": {"$input": "x"}, "kept": 1});
    let otherwise = json!({"else": {"$input": "y"}, "kept": 1});
    let example = json!([{"variant": "v", "input": {"x": 1, "y": 1}, "expected": null}]);
    let with_if = json!({"schema_version": 3, "default_variant": "v", "initial_state": {"n": 1},
        "variants": {"v": {"result": {"$if": {"when": when, "then": then, "else": otherwise}}}},
        "examples": example});
    let with_rules = json!({"schema_version": version, "default_variant": "v", "initial_state": {"n": 1},
        "variants": {"v": {"result": otherwise, "rules": [{"when": when, "result": then}]}},
        "examples": example});
    (compiled(with_if), compiled(with_rules))
}

fn value(i: u8) -> Value {
    match i % 6 {
        0 => json!(1),
        1 => json!(2.5),
        2 => json!("ab"),
        3 => json!(null),
        4 => json!(-3),
        _ => Value::Null,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn if_answers_as_its_two_rules(
        picks in proptest::collection::vec(0usize..7, 0..4),
        x in proptest::option::of(0u8..6), y in proptest::option::of(0u8..6), s in proptest::option::of(0u8..3),
    ) {
        let when: Vec<Value> = picks.iter().copied().map(condition).collect();
        let (with_if, with_rules) = definitions(&when, version_of(&picks));
        let mut input = serde_json::Map::new();
        if let Some(x) = x { input.insert("x".into(), value(x)); }
        if let Some(y) = y { input.insert("y".into(), value(y)); }
        if let Some(s) = s { input.insert("s".into(), json!(["AB", "ab", "b"][usize::from(s)])); }
        let input = Value::Object(input);
        let state = json!({"n": 1}).as_object().cloned().unwrap_or_default();
        let call = Call { input: &input, state: &state, variant: None };
        // Errors by code and path: their messages name different places.
        let shown = |e: toolmock_evaluator::CallError| (e.code(), e.path().map(str::to_owned));
        let a = evaluate(&with_if, &call).map(|o| o.result).map_err(shown);
        let b = evaluate(&with_rules, &call).map(|o| o.result).map_err(shown);
        prop_assert_eq!(a, b);
    }
}
