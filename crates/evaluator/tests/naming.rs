//! Named sub-expressions (version 3, docs/mock-language.md "Named
//! sub-expressions"): a definition that names an expression once in a
//! `let` block and uses it by `$let` in a result, a write and computed
//! text (and, in both, in a condition's value) answers exactly as the same
//! definition with the expression written out at every other use — results, post-call states and
//! errors (by code) — for random inputs, good and bad; `$append` and
//! `$merge` take a named value as they take a reference.

use proptest::prelude::*;
use serde_json::{Value, json};
use toolmock_evaluator::{Call, CompiledDefinition, compile, evaluate};

fn definition(named: bool) -> CompiledDefinition {
    let sum = json!({"$add": [{"$input": "a"}, {"$input": "b"}]});
    let use_of = |_: &str| {
        if named {
            json!({"$let": "sum"})
        } else {
            sum.clone()
        }
    };
    let variant = json!({
        "result": {"sum": use_of("result"), "text": {"$concat": ["total ", use_of("text")]}},
        "set_state": [{"path": "last", "value": use_of("write")}],
        // A condition's value is a literal, a reference or a `$let`: both
        // definitions check through the name.
        "rules": [{"when": [{"source": "state", "path": "limit", "op": "lt", "value": {"$let": "sum"}}],
                   "result": {"over": use_of("rule")}}],
        "let": {"sum": sum}
    });
    let doc = json!({"schema_version": 3, "default_variant": "v", "initial_state": {"limit": 10},
        "variants": {"v": variant},
        "examples": [{"variant": "v", "input": {"a": 1, "b": 2}, "expected": null}]});
    match compile(&doc) {
        Ok(definition) => definition,
        Err(problems) => panic!("the definition compiles: {problems:?}"),
    }
}

fn operand() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        (-2000i64..2000).prop_map(|n| Some(json!(format!("{}.{:02}", n / 100, (n % 100).abs())))),
        (-50i64..50).prop_map(|n| Some(json!(n))),
        Just(Some(json!("1e3"))),
        Just(Some(json!(true))),
        Just(None),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn let_answers_as_the_expression_written_out(a in operand(), b in operand()) {
        let (named, inline) = (definition(true), definition(false));
        let mut input = serde_json::Map::new();
        if let Some(a) = a { input.insert("a".into(), a); }
        if let Some(b) = b { input.insert("b".into(), b); }
        let input = Value::Object(input);
        let state = json!({"limit": 10}).as_object().cloned().unwrap_or_default();
        let call = Call { input: &input, state: &state, variant: None };
        let shown = |r: Result<toolmock_evaluator::Outcome<'_>, toolmock_evaluator::CallError>| match r {
            Ok(o) => Ok((o.result.clone(), o.post_state(&state), o.rule)),
            Err(e) => Err((e.code(), e.class())),
        };
        prop_assert_eq!(shown(evaluate(&named, &call)), shown(evaluate(&inline, &call)));
    }
}

/// `$append` and `$merge` over a named value: the definition that names the
/// input's array and object answers as the one that reads them directly —
/// also when the input gives another kind (refused per call, by code and
/// class, as the reference is).
fn collections(named: bool) -> CompiledDefinition {
    let read = |path: &str| {
        if named {
            json!({"$let": path})
        } else {
            json!({"$input": path})
        }
    };
    let variant = json!({
        "result": {
            "items": {"$append": {"to": read("items"), "value": "last"}},
            "merged": {"$merge": [read("extra"), {"fixed": true}]}
        },
        "let": {"items": {"$input": "items"}, "extra": {"$input": "extra"}}
    });
    let doc = json!({"schema_version": 3, "default_variant": "v", "variants": {"v": variant},
        "examples": [{"variant": "v", "input": {"items": [], "extra": {}},
                      "expected": {"items": ["last"], "merged": {"fixed": true}}}]});
    match compile(&doc) {
        Ok(definition) => definition,
        Err(problems) => panic!("the definition compiles: {problems:?}"),
    }
}

fn any_kind() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!([1, "two"])),
        Just(json!([])),
        Just(json!({"a": 1})),
        Just(json!({})),
        Just(json!("text")),
        Just(json!(7)),
        Just(json!(null)),
    ]
}

proptest! {
    #[test]
    fn collections_take_a_named_value_as_they_take_a_reference(
        items in any_kind(),
        extra in any_kind(),
    ) {
        let (named, inline) = (collections(true), collections(false));
        let input = json!({"items": items, "extra": extra});
        let state = serde_json::Map::new();
        let call = Call { input: &input, state: &state, variant: None };
        let shown = |r: Result<toolmock_evaluator::Outcome<'_>, toolmock_evaluator::CallError>| match r {
            Ok(o) => Ok(o.result.clone()),
            Err(e) => Err((e.code(), e.class())),
        };
        prop_assert_eq!(shown(evaluate(&named, &call)), shown(evaluate(&inline, &call)));
    }
}
