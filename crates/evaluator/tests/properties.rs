//! Property tests of the evaluator (docs/spec.md §4–§6).
//!
//! - Evaluation is deterministic: the same compiled definition, input, state
//!   and variant always give the same answer, from the same or a cloned
//!   compiled definition.
//! - A failed call leaves the state unchanged: no `Outcome` is produced, the
//!   caller's state is untouched, and a state threaded through many calls only
//!   ever changes by the updates of successful calls.
//! - First match: the rule a call answers with is the first rule, in order,
//!   whose conditions all hold, computed here independently — also for
//!   variants with many rules keyed on one path, which the evaluator indexes.
//! - `$number` agrees with Rust's own `str::parse::<f64>` on every string it
//!   accepts, accepts only the grammar `-?[0-9]+(\.[0-9]+)?`, and writes an
//!   integer exactly when the value is integral and below 2^53 in magnitude.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolmock_contract::OperationContract;
use toolmock_evaluator::operators::{parse_decimal, to_number};
use toolmock_evaluator::{
    Call, CompiledContract, CompiledDefinition, compile, evaluate, evaluate_json,
    evaluate_with_contract, json_equal,
};

// ------------------------------------------------------------------ generators

const KEYS: &[&str] = &["a", "b", "c", "n", "list", "when"];
const PATHS: &[&str] = &[
    "", "a", "b", "a.b", "list.0", "list.1", "n", "when", "missing", "a.0",
];

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(KEYS).prop_map(str::to_owned)
}

fn path() -> impl Strategy<Value = String> {
    prop::sample::select(PATHS).prop_map(str::to_owned)
}

/// Data values that exercise the operators: dates, decimal strings, numbers.
fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-50i64..50).prop_map(Value::from),
        (-1.0e6f64..1.0e6).prop_map(Value::from),
        prop::sample::select(vec![
            "2026-03-10",
            "2024-02-29T23:30:00-01:00",
            "2026-02-30",
            "0000-01-01",
            "9999-12-31",
            "0042",
            "-1.50",
            "1e3",
            "",
            "x",
            "7",
        ])
        .prop_map(Value::from),
    ]
}

fn data() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(key(), data(), 0..5).prop_map(|m| m.into_iter().collect())
}

fn reference() -> impl Strategy<Value = Value> {
    (any::<bool>(), path()).prop_map(|(input, p)| {
        if input {
            json!({ "$input": p })
        } else {
            json!({ "$state": p })
        }
    })
}

/// An operand of `$number`/`$dateAdd`: always a reference, so that literal
/// operands (checked at compile time) cannot make the definition fail to compile.
fn expression() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        3 => scalar(),
        3 => reference(),
        1 => reference().prop_map(|r| json!({ "$number": r })),
        1 => (reference(), prop::option::of(reference()), prop::option::of(reference())).prop_map(
            |(value, days, hours)| {
                let mut fields = Map::new();
                fields.insert("value".into(), value);
                if let Some(d) = days {
                    fields.insert("days".into(), d);
                }
                if let Some(h) = hours {
                    fields.insert("hours".into(), h);
                }
                json!({ "$dateAdd": fields })
            }
        ),
    ];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn set_state() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(key(), expression(), 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

fn condition() -> impl Strategy<Value = Value> {
    let op_value = prop_oneof![
        scalar().prop_map(|v| ("eq", v)),
        scalar().prop_map(|v| ("ne", v)),
        prop::collection::vec(scalar(), 0..3).prop_map(|v| ("in", Value::Array(v))),
        any::<bool>().prop_map(|b| ("exists", Value::Bool(b))),
    ];
    (any::<bool>(), path(), op_value).prop_map(|(input, p, (op, value))| {
        json!({"source": if input { "input" } else { "state" }, "path": p, "op": op, "value": value})
    })
}

fn rule() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(condition(), 0..3),
        prop::option::of(expression()),
        prop::option::of(set_state()),
        prop::option::of(0u32..=30_000),
    )
        .prop_map(|(when, result, set_state, delay)| {
            let mut r = Map::new();
            r.insert("when".into(), Value::Array(when));
            if let Some(v) = result {
                r.insert("result".into(), v);
            }
            if let Some(v) = set_state {
                r.insert("set_state".into(), v);
            }
            if let Some(v) = delay {
                r.insert("delay_ms".into(), v.into());
            }
            Value::Object(r)
        })
}

fn variant() -> impl Strategy<Value = Value> {
    (
        expression(),
        set_state(),
        0u32..=30_000,
        prop::collection::vec(rule(), 0..4),
    )
        .prop_map(|(result, set_state, delay, rules)| {
            json!({"result": result, "set_state": set_state, "delay_ms": delay, "rules": rules})
        })
}

/// A random definition that passes the structural check (its examples are
/// not run: `compile` is the structural part of docs/spec.md §7).
fn definition() -> impl Strategy<Value = Value> {
    (prop::collection::vec(variant(), 1..4), object()).prop_map(|(variants, initial)| {
        let names: Vec<String> = (0..variants.len()).map(|i| format!("v{i}")).collect();
        let examples: Vec<Value> = names
            .iter()
            .map(|n| json!({"variant": n, "input": {}, "expected": null}))
            .collect();
        json!({
            "schema_version": 1,
            "default_variant": "v0",
            "initial_state": initial,
            "variants": names.iter().cloned().zip(variants).collect::<Map<_, _>>(),
            "examples": examples,
        })
    })
}

fn compiled(doc: &Value) -> CompiledDefinition {
    compile(doc).unwrap_or_else(|d| panic!("generated definition does not compile: {d}\n{doc}"))
}

fn variant_choice() -> impl Strategy<Value = Option<String>> {
    prop::option::of(
        prop::sample::select(vec!["v0", "v1", "v2", "v3", "nope"]).prop_map(str::to_owned),
    )
}

/// The answer of one call as comparable JSON (or the error's class, code, path and message).
fn answer(
    definition: &CompiledDefinition,
    input: &Value,
    state: &Map<String, Value>,
    variant: Option<&str>,
) -> Value {
    match evaluate(
        definition,
        &Call {
            input,
            state,
            variant,
        },
    ) {
        Ok(o) => json!({
            "variant": o.variant, "rule": o.rule, "result": o.result, "delay_ms": o.delay_ms,
            "state": o.post_state(state),
            "updates": o.state_updates.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
        }),
        Err(e) => json!({
            "class": e.class().as_str(), "code": e.code(), "path": e.path(), "message": e.to_string(),
        }),
    }
}

// ------------------------------------------------------------------ properties

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn evaluation_is_deterministic(
        doc in definition(),
        input in object(),
        state in object(),
        variant in variant_choice(),
    ) {
        let input = Value::Object(input);
        let a = compiled(&doc);
        let b = compiled(&doc);
        let c = a.clone();
        let first = answer(&a, &input, &state, variant.as_deref());
        prop_assert_eq!(&first, &answer(&a, &input, &state, variant.as_deref()));
        prop_assert_eq!(&first, &answer(&b, &input, &state, variant.as_deref()));
        prop_assert_eq!(&first, &answer(&c, &input, &state, variant.as_deref()));
        // The typed results agree too, not only their JSON.
        let call = Call { input: &input, state: &state, variant: variant.as_deref() };
        prop_assert_eq!(evaluate(&a, &call), evaluate(&b, &call));
    }

    #[test]
    fn a_failed_call_leaves_the_state_unchanged(
        doc in definition(),
        calls in prop::collection::vec((object(), variant_choice()), 1..8),
    ) {
        let definition = compiled(&doc);
        let mut state = definition.initial_state().clone();
        for (input, variant) in calls {
            let input = Value::Object(input);
            let before = state.clone();
            let call = Call { input: &input, state: &state, variant: variant.as_deref() };
            match evaluate(&definition, &call) {
                Ok(outcome) => {
                    // The post-call state is the pre-call state with exactly
                    // the rendered top-level keys replaced.
                    let post = outcome.post_state(&state);
                    for (k, v) in &post {
                        match outcome.state_updates.iter().rev().find(|(u, _)| *u == k.as_str()) {
                            Some((_, new)) => prop_assert_eq!(v, new),
                            None => prop_assert_eq!(Some(v), before.get(k)),
                        }
                    }
                    prop_assert!(before.keys().all(|k| post.contains_key(k)));
                    outcome.apply_to(&mut state);
                    prop_assert_eq!(&state, &post);
                }
                Err(_) => {
                    // No outcome exists to commit; the caller's state is as it was.
                    prop_assert_eq!(&state, &before);
                }
            }
        }
    }

    #[test]
    fn a_failing_set_state_or_output_commits_nothing(
        state in object(),
        good in data(),
        fail_late in any::<bool>(),
    ) {
        // set_state renders "a" fine, then fails on a reference that cannot
        // resolve; or the output schema refuses the result.
        let doc = json!({
            "schema_version": 1, "default_variant": "v",
            "variants": {"v": {"result": {"$input": "good"},
                               "set_state": {"a": {"$input": "good"}, "z": {"$input": "absent"}}},
                         "w": {"result": {"$input": "good"}, "set_state": {"a": {"$input": "good"}}}},
            "examples": [{"variant": "v", "input": {}, "expected": null},
                         {"variant": "w", "input": {}, "expected": null}]
        });
        let definition = compiled(&doc);
        let input = json!({ "good": good });
        let before = state.clone();
        let call = Call { input: &input, state: &state, variant: if fail_late { Some("v") } else { Some("w") } };
        if fail_late {
            let e = evaluate(&definition, &call).expect_err("set_state reads a missing key");
            prop_assert_eq!(e.code(), "missing_reference");
        } else {
            let refuse_all = CompiledContract::new(
                OperationContract::from_value(json!({
                    "operation": {"source": "custom", "name": "p"},
                    "input_schema": {"type": "object"}, "output_schema": false
                })).expect("contract"),
            ).expect("schemas compile");
            let e = evaluate_with_contract(&definition, &refuse_all, &call)
                .expect_err("the output schema refuses everything");
            prop_assert_eq!(e.code(), "output_schema_violation");
            // Without the contract the same call succeeds: the schema alone withheld the outcome.
            prop_assert!(evaluate(&definition, &call).is_ok());
        }
        prop_assert_eq!(&state, &before);
    }
}

// ------------------------------------------------------------------ first match

/// Values a keyed condition and a call may hold: strings that key rules, and
/// values equal to none of them (or equal only by number value).
fn discriminant() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        json!("a"),
        json!("b"),
        json!("c"),
        json!("d"),
        json!("e"),
        json!(""),
        json!(1),
        json!(1.0),
        json!(null),
        json!(["a"]),
        json!({"a": "a"}),
    ])
}

/// Mostly `eq` on "k" against strings, so that most variants are indexed,
/// mixed with every other op and with a second path.
fn keyed_condition() -> impl Strategy<Value = Value> {
    let op_value = prop_oneof![
        6 => discriminant().prop_map(|v| ("eq", v)),
        1 => discriminant().prop_map(|v| ("ne", v)),
        1 => prop::collection::vec(discriminant(), 0..3).prop_map(|v| ("in", Value::Array(v))),
        1 => any::<bool>().prop_map(|b| ("exists", Value::Bool(b))),
    ];
    let path = prop::sample::select(vec!["k", "k", "k", "j"]);
    (any::<bool>(), path, op_value).prop_map(|(input, p, (op, value))| {
        json!({"source": if input { "input" } else { "state" }, "path": p, "op": op, "value": value})
    })
}

/// A rule's conditions: usually first an `eq` on input "k" against one of a
/// few strings (the shape the index serves), then any others.
fn keyed_rule() -> impl Strategy<Value = Vec<Value>> {
    let key = prop::sample::select(vec!["a", "b", "c", "d", "e"]);
    (
        prop::option::weighted(0.75, key),
        prop::collection::vec(keyed_condition(), 0..3),
    )
        .prop_map(|(key, mut others)| {
            if let Some(key) = key {
                let first = json!({"source": "input", "path": "k", "op": "eq", "value": key});
                others.insert(0, first);
            }
            others
        })
}

/// Whether a condition holds, by docs/spec.md §5 and §6 step 2, on one-segment paths.
fn oracle_holds(condition: &Value, input: &Value, state: &Map<String, Value>) -> bool {
    let path = condition["path"].as_str().unwrap_or_default();
    let found = match condition["source"].as_str() {
        Some("input") => input.get(path),
        _ => state.get(path),
    };
    let want = &condition["value"];
    match condition["op"].as_str() {
        Some("eq") => found.is_some_and(|v| json_equal(v, want)),
        Some("ne") => !found.is_some_and(|v| json_equal(v, want)),
        Some("in") => found.is_some_and(|v| {
            want.as_array()
                .is_some_and(|options| options.iter().any(|o| json_equal(v, o)))
        }),
        _ => found.is_some() == want.as_bool().unwrap_or_default(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn the_first_rule_that_holds_answers(
        rules in prop::collection::vec(keyed_rule(), 0..40),
        input in prop::collection::btree_map(prop::sample::select(vec!["k", "j"]), discriminant(), 0..3),
        state in prop::collection::btree_map(prop::sample::select(vec!["k", "j"]), discriminant(), 0..3),
    ) {
        let doc = json!({
            "schema_version": 1, "default_variant": "v",
            "variants": {"v": {
                "result": "fallback",
                "rules": rules.iter().enumerate()
                    .map(|(i, when)| json!({"when": when, "result": i}))
                    .collect::<Vec<_>>(),
            }},
            "examples": [{"variant": "v", "input": {}, "expected": null}]
        });
        let definition = compiled(&doc);
        let input = Value::Object(input.into_iter().map(|(k, v)| (k.to_owned(), v)).collect());
        let state: Map<String, Value> = state.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        let want = rules
            .iter()
            .position(|when| when.iter().all(|c| oracle_holds(c, &input, &state)));
        let call = Call { input: &input, state: &state, variant: None };
        let outcome = evaluate(&definition, &call).expect("nothing here can fail");
        prop_assert_eq!(outcome.rule, want);
        prop_assert_eq!(outcome.result, want.map_or(json!("fallback"), |i| json!(i)));
    }
}

// ------------------------------------------------------------------ $number

/// The grammar `^-?[0-9]+(\.[0-9]+)?$`, matched independently of the evaluator.
fn matches_grammar(s: &str) -> bool {
    let body = s.strip_prefix('-').unwrap_or(s);
    let (int, frac) = match body.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (body, None),
    };
    let digits = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_digit());
    digits(int) && frac.is_none_or(digits)
}

const TWO_TO_53: f64 = 9_007_199_254_740_992.0;

/// `$number` accepts `text` exactly when it is in the grammar and finite,
/// and what it accepts agrees with the f64 parse.
fn accepted_exactly_in_the_grammar(text: &str) -> Result<(), TestCaseError> {
    match parse_decimal(text) {
        Ok(got) => {
            prop_assert!(
                matches_grammar(text),
                "{:?} accepted outside the grammar",
                text
            );
            assert_agrees(text, &got)
        }
        Err(_) => {
            prop_assert!(
                !matches_grammar(text) || !text.parse::<f64>().is_ok_and(f64::is_finite),
                "{:?} rejected although it is in the grammar",
                text
            );
            Ok(())
        }
    }
}

/// What an accepted string must produce: the f64 parse, as an integer exactly
/// when integral and below 2^53.
fn assert_agrees(text: &str, got: &serde_json::Number) -> Result<(), TestCaseError> {
    let want: f64 = text.parse().expect("grammar strings parse as f64");
    prop_assert!(want.is_finite(), "{text:?} was accepted but overflows");
    let value = got.as_f64().expect("a JSON number");
    prop_assert!(
        value == want,
        "{text:?}: $number gave {got}, str::parse gave {want:e}"
    );
    let integral = want.fract() == 0.0 && want.abs() < TWO_TO_53;
    prop_assert_eq!(
        got.is_i64() || got.is_u64(),
        integral,
        "{:?} → {} written as an integer: {}",
        text,
        got,
        got.is_i64() || got.is_u64()
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    #[test]
    fn number_grammar_strings_agree_with_f64_parse(text in r"-?[0-9]{1,30}(\.[0-9]{1,30})?") {
        let got = parse_decimal(&text).map_err(|r| TestCaseError::fail(format!("{text:?} rejected: {}", r.message)))?;
        assert_agrees(&text, &got)?;
        prop_assert_eq!(to_number(&Value::String(text.clone())).expect("accepted"), Value::Number(got));
    }

    #[test]
    fn number_long_grammar_strings_accepted_exactly_when_finite(
        text in r"-?[1-9][0-9]{290,330}(\.[0-9]{1,5})?",
    ) {
        let finite = text.parse::<f64>().expect("parses").is_finite();
        match parse_decimal(&text) {
            Ok(got) => {
                prop_assert!(finite);
                assert_agrees(&text, &got)?;
            }
            Err(_) => prop_assert!(!finite, "{} rejected though finite", text),
        }
    }

    #[test]
    fn number_near_miss_strings_accepted_only_in_the_grammar(text in r"[-+.eE0-9 x,_]{0,10}") {
        accepted_exactly_in_the_grammar(&text)?;
    }

    #[test]
    fn number_arbitrary_strings_accepted_only_in_the_grammar(text in any::<String>()) {
        accepted_exactly_in_the_grammar(&text)?;
    }

    #[test]
    fn number_json_numbers_pass_through(n in any::<f64>().prop_filter("finite", |f| f.is_finite()), i in any::<i64>()) {
        let f = Value::from(n);
        prop_assert_eq!(to_number(&f).expect("a number"), f);
        let i = Value::from(i);
        prop_assert_eq!(to_number(&i).expect("a number"), i);
    }

    #[test]
    fn number_rejects_every_non_string_non_number(v in data().prop_filter("not a string or number", |v| !v.is_string() && !v.is_number())) {
        prop_assert!(to_number(&v).is_err());
    }
}

/// Guards the generators above: the random calls must both succeed and fail
/// often enough for the two state properties to mean something.
#[test]
fn generated_calls_both_succeed_and_fail() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = (definition(), object(), object(), variant_choice());
    let (mut ok, mut failed) = (0, 0);
    for _ in 0..300 {
        let (doc, input, state, variant) = strategy
            .new_tree(&mut runner)
            .expect("a value tree")
            .current();
        let definition = compiled(&doc);
        let input = Value::Object(input);
        let call = Call {
            input: &input,
            state: &state,
            variant: variant.as_deref(),
        };
        match evaluate(&definition, &call) {
            Ok(_) => ok += 1,
            Err(_) => failed += 1,
        }
    }
    assert!(
        ok >= 30 && failed >= 30,
        "{ok} calls succeeded and {failed} failed"
    );
}

// ------------------------------------------------------------ fuzz crashes

/// `fuzz/artifacts/definition/crash-438c2455…` (the `definition` target,
/// 2026-12-05): the target's oracle compared `evaluate_json`'s bytes with
/// `evaluate`'s result also for a domain error. The evaluator was right — a
/// domain error writes no result, and both name the same error — so the
/// oracle now says so, and so does this test.
#[test]
fn fuzz_crash_438c2455_a_domain_error_writes_no_result_and_both_name_it() {
    let doc = json!({"schema_version": 2, "default_variant": "default",
        "variants": {"default": {"error": {"code": "order_not_found", "message": "Order not found"}}},
        "examples": [{"variant": "default", "input": {}, "expected": "ok"}]});
    let compiled = compiled(&doc);
    let input = json!({});
    let call = Call {
        input: &input,
        state: &Map::new(),
        variant: None,
    };
    let value = evaluate(&compiled, &call).expect("a domain error is an answer");
    let mut json = Vec::new();
    let written = evaluate_json(&compiled, &call, &mut json).expect("the same answer");
    assert!(json.is_empty());
    assert_eq!(value.error, written.error);
    assert_eq!(
        value.error.as_ref().map(|e| e.code.as_str()),
        Some("order_not_found")
    );
    assert_eq!(
        (value.rule, value.delay_ms),
        (written.rule, written.delay_ms)
    );
}
