//! Version 2's bounded operators (docs/mock-language.md, "Version 2"):
//! money arithmetic, `$append`, `$merge`, `$find` and the condition ops
//! `contains`, `subset_of`, `eq_ci`.
//!
//! Properties:
//! - `$add`, `$sub` and `$mul` of decimals give exactly what integer
//!   arithmetic on their digits gives (no binary floating-point error), and
//!   the JSON number written is that decimal.
//! - `$round` rounds a tie to the even neighbour and anything else to the
//!   nearest, as integer arithmetic says.
//! - An operator over literals, folded when the definition is compiled,
//!   gives what the same operator over the call's input gives.
//! - `$append` adds exactly its value at the end; `$merge` is a left-to-right
//!   shallow union.
//! - `$find` gives the first key or index whose field equals the value, or `null`.
//! - `subset_of` is multiset inclusion, `contains` membership, and `eq_ci`
//!   ASCII case-insensitive equality on ASCII text.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolmock_evaluator::operators::decimal;
use toolmock_evaluator::{Call, compile, evaluate};

/// `mantissa × 10^-scale` as the text of the shortest decimal.
fn text(mantissa: i128, scale: u32) -> String {
    let negative = mantissa < 0;
    let digits = mantissa.unsigned_abs().to_string();
    let scale = scale as usize;
    let padded = if digits.len() <= scale {
        format!("{}{digits}", "0".repeat(scale + 1 - digits.len()))
    } else {
        digits
    };
    let (int, frac) = padded.split_at(padded.len() - scale);
    let frac = frac.trim_end_matches('0');
    let sign = if negative && (!int.trim_start_matches('0').is_empty() || !frac.is_empty()) {
        "-"
    } else {
        ""
    };
    if frac.is_empty() {
        format!("{sign}{int}")
    } else {
        format!("{sign}{int}.{frac}")
    }
}

/// The JSON number the docs say a decimal result is written as.
fn model_json(mantissa: i128, scale: u32) -> Value {
    let t = text(mantissa, scale);
    match t.parse::<i64>() {
        Ok(i) => Value::from(i),
        Err(_) => serde_json::from_str(&t).expect("a decimal text is JSON"),
    }
}

fn decimal_string() -> impl Strategy<Value = (i128, u32)> {
    (-10_000_000i128..10_000_000, 0u32..=4)
}

fn rescale(m: i128, from: u32, to: u32) -> i128 {
    m * 10i128.pow(to - from)
}

fn eval_binary(op: &str, a: &str, b: &str) -> Result<Value, String> {
    let expected = match op {
        "$add" => 2,
        "$sub" => 0,
        _ => 1,
    };
    let doc = json!({
        "schema_version": 2,
        "default_variant": "v",
        "variants": {"v": {"result": {op: [{"$input": "a"}, {"$input": "b"}]}}},
        "examples": [{"variant": "v", "input": {"a": "1", "b": "1"},
                      "expected": expected}]
    });
    let definition = compile(&doc).map_err(|d| d.to_string())?;
    let state = Map::new();
    let input = json!({"a": a, "b": b});
    evaluate(
        &definition,
        &Call {
            input: &input,
            state: &state,
            variant: None,
        },
    )
    .map(|o| o.result.clone())
    .map_err(|e| e.code().to_owned())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn add_sub_mul_are_exact((ma, sa) in decimal_string(), (mb, sb) in decimal_string()) {
        let (a, b) = (text(ma, sa), text(mb, sb));
        let s = sa.max(sb);
        let sum = rescale(ma, sa, s) + rescale(mb, sb, s);
        let difference = rescale(ma, sa, s) - rescale(mb, sb, s);
        prop_assert_eq!(eval_binary("$add", &a, &b), Ok(model_json(sum, s)));
        prop_assert_eq!(eval_binary("$sub", &a, &b), Ok(model_json(difference, s)));
        prop_assert_eq!(eval_binary("$mul", &a, &b), Ok(model_json(ma * mb, sa + sb)));
    }

    #[test]
    fn round_is_half_even((m, s) in decimal_string(), places in 0u32..=4) {
        let value = decimal::to_decimal(&json!(text(m, s)), "$round").expect("a decimal");
        let rounded = decimal::to_json(decimal::round(value, places)).expect("fits");
        let expected = if places >= s {
            model_json(m, s)
        } else {
            let unit = 10i128.pow(s - places);
            let (q, r) = (m.div_euclid(unit), m.rem_euclid(unit));
            // `q` is the floor; step up past the half, or at the half to even.
            let up = 2 * r > unit || (2 * r == unit && q.rem_euclid(2) == 1);
            model_json(if up { q + 1 } else { q }, places)
        };
        prop_assert_eq!(rounded, expected);
    }

    #[test]
    fn folded_literals_equal_call_time_operands((ma, sa) in decimal_string(), (mb, sb) in decimal_string()) {
        let (a, b) = (text(ma, sa), text(mb, sb));
        let product = decimal::mul(
            decimal::to_decimal(&json!(a), "$mul").expect("a decimal"),
            decimal::to_decimal(&json!(b), "$mul").expect("a decimal"),
        )
        .expect("exact");
        let expected = decimal::to_json(decimal::round(product, 2)).expect("fits");
        let folded = json!({"$round": {"value": {"$mul": [a, b]}, "places": 2}});
        let doc = json!({
            "schema_version": 2,
            "default_variant": "v",
            "variants": {"v": {"result": {
                "folded": folded,
                "live": {"$round": {"value": {"$mul": [{"$input": "a"}, {"$input": "b"}]}, "places": 2}}
            }}},
            "examples": [{"variant": "v", "input": {"a": a, "b": b},
                          "expected": {"folded": expected, "live": expected}}]
        });
        let definition = compile(&doc).map_err(|d| TestCaseError::fail(d.to_string()))?;
        let state = Map::new();
        let input = json!({"a": a, "b": b});
        let outcome = evaluate(&definition, &Call { input: &input, state: &state, variant: None })
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&outcome.result["folded"], &outcome.result["live"]);
        prop_assert_eq!(&outcome.result["live"], &expected);
    }
}

#[test]
fn json_numbers_are_read_as_written() {
    let tenth = decimal::to_decimal(&json!(0.1), "$add").expect("a decimal");
    let fifth = decimal::to_decimal(&json!(0.2), "$add").expect("a decimal");
    let sum = decimal::add(tenth, fifth).expect("exact");
    assert_eq!(decimal::to_json(sum).expect("fits"), json!(0.3));
    let tiny = decimal::to_decimal(&json!(1e-7), "$add").expect("a decimal");
    assert_eq!(tiny.to_string(), "0.0000001");
}

#[test]
fn errors_are_blamed_by_origin_with_paths() {
    let doc = json!({
        "schema_version": 2,
        "default_variant": "v",
        "initial_state": {"price": "1"},
        "variants": {"v": {"result": {"$add": [{"$state": "price"}, {"$input": "x"}]}}},
        "examples": [{"variant": "v", "input": {"x": 1}, "expected": 2}]
    });
    let definition = compile(&doc).expect("compiles");
    let run = |input: Value, state: Value| {
        let state = state.as_object().cloned().unwrap_or_default();
        evaluate(
            &definition,
            &Call {
                input: &input,
                state: &state,
                variant: None,
            },
        )
        .map(|o| o.result.clone())
        .map_err(|e| {
            (
                e.code().to_owned(),
                e.class().as_str().to_owned(),
                e.path().unwrap_or_default().to_owned(),
            )
        })
    };
    assert_eq!(
        run(json!({"x": "1,5"}), json!({"price": "1"})),
        Err((
            "invalid_number".into(),
            "tool_input_error".into(),
            "/x".into()
        ))
    );
    assert_eq!(
        run(json!({"x": 1}), json!({"price": "one"})),
        Err((
            "invalid_fixture_literal".into(),
            "harness_error".into(),
            "/price".into()
        ))
    );
    // The result is blamed on the input when an operand came from it.
    assert_eq!(
        run(json!({"x": "0.000000000000001"}), json!({"price": "1"})),
        Err((
            "invalid_number".into(),
            "tool_input_error".into(),
            "/x".into()
        ))
    );
    assert_eq!(
        run(json!({"x": "0.5"}), json!({"price": "1.25"})),
        Ok(json!(1.75))
    );
}

fn small_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-1000i64..1000).prop_map(Value::from),
        "[a-c]{0,3}".prop_map(Value::from),
    ]
}

fn small_object() -> impl Strategy<Value = Map<String, Value>> {
    proptest::collection::btree_map("[a-d]", small_value(), 0..4)
        .prop_map(|m| m.into_iter().collect())
}

fn run(doc: &Value, input: &Value, state: &Map<String, Value>) -> (Value, Map<String, Value>) {
    let definition = compile(doc).unwrap_or_else(|d| panic!("compiles: {d}"));
    let outcome = evaluate(
        &definition,
        &Call {
            input,
            state,
            variant: None,
        },
    )
    .unwrap_or_else(|e| panic!("evaluates: {e}"));
    (outcome.result.clone(), outcome.post_state(state))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// `$append` in a write grows the state's array by exactly the value,
    /// and its result is the pre-call array plus the value.
    #[test]
    fn append_adds_one_element(items in proptest::collection::vec(small_value(), 0..5), value in small_value()) {
        let mut expected = items.clone();
        expected.push(value.clone());
        let append = json!({"$append": {"to": {"$state": "items"}, "value": {"$input": "v"}}});
        let doc = json!({
            "schema_version": 2,
            "default_variant": "v",
            "initial_state": {"items": items},
            "variants": {"v": {"result": append, "set_state": [{"path": "items", "value": append}]}},
            "examples": [{"variant": "v", "input": {"v": value}, "expected": expected}]
        });
        let state: Map<String, Value> = [("items".to_owned(), Value::from(items))].into_iter().collect();
        let (result, after) = run(&doc, &json!({"v": value}), &state);
        prop_assert_eq!(&result, &Value::from(expected.clone()));
        prop_assert_eq!(after.get("items"), Some(&Value::from(expected)));
    }

    /// `$merge` equals inserting each object's members in turn.
    #[test]
    fn merge_is_a_left_to_right_shallow_union(a in small_object(), b in small_object(), c in small_object()) {
        let mut expected = a.clone();
        for object in [&b, &c] {
            for (k, v) in object {
                expected.insert(k.clone(), v.clone());
            }
        }
        let doc = json!({
            "schema_version": 2,
            "default_variant": "v",
            "initial_state": {"b": b},
            "variants": {"v": {"result": {"$merge": [{"$input": "a"}, {"$state": "b"}, c]}}},
            "examples": [{"variant": "v", "input": {"a": a}, "expected": expected}]
        });
        let state: Map<String, Value> = [("b".to_owned(), Value::Object(b))].into_iter().collect();
        let (result, _) = run(&doc, &json!({"a": a}), &state);
        prop_assert_eq!(result, Value::Object(expected));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// `$find` gives the first key (in key order) or index whose field
    /// equals the value, and `null` when none does.
    #[test]
    fn find_gives_the_first_match(
        records in proptest::collection::btree_map("[a-e]", small_object(), 0..6),
        want in small_value(),
    ) {
        let as_array: Vec<Value> = records.values().cloned().map(Value::Object).collect();
        let expected_key = records
            .iter()
            .find(|(_, r)| r.get("a") == Some(&want))
            .map_or(Value::Null, |(k, _)| Value::from(k.clone()));
        let expected_index = as_array
            .iter()
            .position(|r| r.get("a") == Some(&want))
            .map_or(Value::Null, Value::from);
        let find = |collection: &str, give: &str| json!({"$find": {
            "in": {"$state": collection}, "where": {"a": {"$input": "want"}}, "give": give}});
        let expected = json!({"key": expected_key, "index": expected_index});
        let initial: Map<String, Value> = records.into_iter().map(|(k, v)| (k, Value::Object(v))).collect();
        let doc = json!({
            "schema_version": 2,
            "default_variant": "v",
            "initial_state": {"by_key": initial, "list": as_array},
            "variants": {"v": {"result": {"key": find("by_key", "key"), "index": find("list", "key")}}},
            "examples": [{"variant": "v", "input": {"want": want}, "expected": expected}]
        });
        let state: Map<String, Value> =
            [("by_key".to_owned(), Value::Object(initial)), ("list".to_owned(), Value::from(as_array))]
                .into_iter()
                .collect();
        let (result, _) = run(&doc, &json!({"want": want}), &state);
        prop_assert_eq!(result, expected);
    }
}

/// Whether the rule with the one condition `op`/`value` on input `x` matches.
fn condition_holds(op: &str, value: &Value, x: &Value) -> bool {
    let doc = json!({
        "schema_version": 2,
        "default_variant": "v",
        "variants": {"v": {"result": "no", "rules": [{"when": [
            {"source": "input", "path": "x", "op": op, "value": {"$input": "want"}}], "result": "yes"}]}},
        "examples": [{"variant": "v", "input": {}, "expected": "no"}]
    });
    let (result, _) = run(&doc, &json!({"x": x, "want": value}), &Map::new());
    result == json!("yes")
}

fn letters() -> impl Strategy<Value = Vec<Value>> {
    proptest::collection::vec("[a-c]".prop_map(Value::from), 0..6)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// `subset_of` is multiset inclusion: every element occurs in `value`
    /// at least as often as in the path's array.
    #[test]
    fn subset_of_is_multiset_inclusion(part in letters(), whole in letters()) {
        let count = |xs: &[Value], x: &Value| xs.iter().filter(|y| *y == x).count();
        let expected = part.iter().all(|x| count(&part, x) <= count(&whole, x));
        prop_assert_eq!(condition_holds("subset_of", &Value::from(whole), &Value::from(part)), expected);
    }

    /// `contains` holds exactly when an element equals the value.
    #[test]
    fn contains_is_membership(xs in letters(), want in "[a-d]") {
        let expected = xs.contains(&Value::from(want.clone()));
        prop_assert_eq!(condition_holds("contains", &Value::from(want), &Value::from(xs)), expected);
    }

    /// On ASCII text, `eq_ci` is ASCII case-insensitive equality; any text
    /// equals itself.
    #[test]
    fn eq_ci_on_ascii_and_reflexive(a in "[a-cA-C]{0,4}", b in "[a-cA-C]{0,4}", any in "\\PC{0,8}") {
        let expected = a.eq_ignore_ascii_case(&b);
        prop_assert_eq!(condition_holds("eq_ci", &json!(a), &json!(b)), expected);
        prop_assert!(condition_holds("eq_ci", &json!(any), &json!(any)));
    }
}
