//! Version 2 of the mock language (docs/mock-language.md, "Version 2"):
//! the version rule, computed paths and the list form of `set_state`.
//!
//! Properties:
//! - A path written as an array of literal segments reads exactly what the
//!   same path written with dots reads, as values and as errors.
//! - A reference segment reads exactly what the literal segment of its value
//!   reads.
//! - The writes of a list-form `set_state` give the state an independent
//!   model gives (applied in order, missing objects created, a missing array
//!   index or a step into a scalar an error that changes nothing).
//! - Any version-2 feature in a version-1 document is `version_2_feature`,
//!   and the same document as version 2 passes that part of the check.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolmock_evaluator::{Call, CompiledDefinition, compile, evaluate};

fn v2(result: Value, set_state: Value, initial_state: Value) -> Value {
    json!({
        "schema_version": 2,
        "default_variant": "v",
        "initial_state": initial_state,
        "variants": {"v": {"result": result, "set_state": set_state}},
        "examples": [{"variant": "v", "input": {}, "expected": null}]
    })
}

fn compiled(doc: &Value) -> CompiledDefinition {
    compile(doc).unwrap_or_else(|d| panic!("compiles: {d}"))
}

fn call(
    definition: &CompiledDefinition,
    input: &Value,
    state: &Map<String, Value>,
) -> Result<(Value, Map<String, Value>), (String, String)> {
    evaluate(
        definition,
        &Call {
            input,
            state,
            variant: None,
        },
    )
    .map(|o| (o.result.clone(), o.post_state(state)))
    .map_err(|e| (e.code().to_owned(), e.path().unwrap_or_default().to_owned()))
}

fn codes(doc: &Value) -> Vec<String> {
    match compile(doc) {
        Ok(_) => Vec::new(),
        Err(d) => d.iter().map(|p| p.code.as_str().to_owned()).collect(),
    }
}

// ------------------------------------------------------------------ generators

const KEYS: &[&str] = &["a", "b", "0", "1", "01", "x.y"];

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(KEYS).prop_map(str::to_owned)
}

fn data() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..3).prop_map(Value::from),
        key().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(key(), data(), 0..4).prop_map(|m| m.into_iter().collect())
}

/// Dot-free segment keys, as a dotted path can write them.
fn dotted_segments() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        prop::sample::select(&["a", "b", "0", "1", "01"][..]).prop_map(str::to_owned),
        0..4,
    )
}

/// A model of one write: follow `segments` in `state`, creating objects
/// where an object lacks the member; `None` where the write cannot be made.
fn model_write(state: &mut Map<String, Value>, segments: &[String], value: Value) -> Option<()> {
    let (first, rest) = segments.split_first()?;
    if rest.is_empty() {
        state.insert(first.clone(), value);
        return Some(());
    }
    let mut node = state
        .entry(first.clone())
        .or_insert_with(|| Value::Object(Map::new()));
    for (i, segment) in rest.iter().enumerate() {
        let last = i + 1 == rest.len();
        node = match node {
            Value::Object(map) => {
                if last {
                    map.insert(segment.clone(), value);
                    return Some(());
                }
                map.entry(segment.clone())
                    .or_insert_with(|| Value::Object(Map::new()))
            }
            Value::Array(items) => {
                let canonical = segment == "0" || !segment.starts_with('0');
                let index: usize = segment.parse().ok().filter(|_| canonical)?;
                let slot = items.get_mut(index)?;
                if last {
                    *slot = value;
                    return Some(());
                }
                slot
            }
            _ => return None,
        };
    }
    Some(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn array_paths_read_what_dotted_paths_read(
        segments in dotted_segments(),
        input in object(),
        state in object(),
    ) {
        let dotted = segments.join(".");
        let array: Vec<Value> = segments.iter().map(|s| Value::from(s.as_str())).collect();
        let input = Value::Object(input);
        for source in ["$input", "$state"] {
            let by_dots = compiled(&v2(json!({source: dotted}), json!([{"path": "z", "value": 0}]), json!({})));
            let by_array = compiled(&v2(json!({source: array}), json!({}), json!({})));
            let a = call(&by_dots, &input, &state).map(|(r, _)| r);
            let b = call(&by_array, &input, &state).map(|(r, _)| r);
            prop_assert_eq!(a, b);
        }
    }

    #[test]
    fn a_reference_segment_reads_what_its_value_reads(
        head in key(),
        tail in prop_oneof![key().prop_map(Value::from), (0u64..3).prop_map(Value::from), Just(json!(true)), Just(json!(-1))],
        state in object(),
    ) {
        let computed = compiled(&v2(json!({"$state": [head, {"$input": "k"}]}), json!({}), json!({})));
        let input = json!({"k": tail});
        let got = call(&computed, &input, &state);
        let literal = match &tail {
            Value::String(s) => Some(Value::from(s.as_str())),
            Value::Number(n) if n.as_u64().is_some() => Some(tail.clone()),
            _ => None,
        };
        match literal {
            Some(segment) => {
                let direct = compiled(&v2(json!({"$state": [head, segment]}), json!({}), json!({})));
                prop_assert_eq!(got, call(&direct, &input, &state));
            }
            None => prop_assert_eq!(got.map_err(|e| e.0), Err("invalid_path_segment".to_owned())),
        }
    }

    #[test]
    fn writes_follow_the_model(
        writes in prop::collection::vec((dotted_segments(), data()), 1..4),
        state in object(),
    ) {
        let writes: Vec<(Vec<String>, Value)> = writes
            .into_iter()
            .filter(|(s, _)| !s.is_empty())
            .collect();
        prop_assume!(!writes.is_empty());
        let list: Vec<Value> = writes
            .iter()
            .map(|(s, v)| json!({"path": s, "value": v}))
            .collect();
        let definition = compiled(&v2(json!("ok"), Value::Array(list), json!({})));
        let mut model = state.clone();
        let modelled = writes
            .iter()
            .try_for_each(|(s, v)| model_write(&mut model, s, v.clone()));
        match (call(&definition, &json!({}), &state), modelled) {
            (Ok((_, post)), Some(())) => prop_assert_eq!(post, model),
            (Err((code, _)), None) => prop_assert_eq!(code, "invalid_state_path"),
            (got, want) => prop_assert!(false, "evaluator {:?}, model {:?}", got, want),
        }
    }

    #[test]
    fn version_2_features_in_version_1_are_refused(
        feature in prop::sample::select(&[0usize, 1, 2, 3][..]),
    ) {
        let mut doc = match feature {
            0 => v2(json!({"$input": ["a"]}), json!({}), json!({})),
            1 => v2(json!(1), json!([{"path": "a", "value": 1}]), json!({})),
            2 => v2(json!(1), json!({"a": {"$state": ["a"]}}), json!({"a": 1})),
            _ => json!({
                "schema_version": 2, "default_variant": "v",
                "variants": {"v": {"result": 1, "rules": [{"when": [
                    {"source": "input", "path": ["a"], "op": "exists", "value": true}]}]}},
                "examples": [{"variant": "v", "input": {}, "expected": 1}]
            }),
        };
        prop_assert!(!codes(&doc).iter().any(|c| c == "version_2_feature" || c == "unsupported_schema_version"));
        doc["schema_version"] = json!(1);
        prop_assert_eq!(codes(&doc), vec!["version_2_feature".to_owned()]);
    }
}

#[test]
fn keyed_state_reads_and_writes() {
    let definition = compiled(&json!({
        "schema_version": 2,
        "default_variant": "cancel",
        "initial_state": {"orders": {"#W1": {"status": "pending"}}},
        "variants": {"cancel": {
            "result": {"was": {"$state": ["orders", {"$input": "id"}, "status"]}},
            "set_state": [{"path": ["orders", {"$input": "id"}, "status"], "value": "cancelled"}],
            "rules": [{
                "when": [{"source": "state", "path": ["orders", {"$input": "id"}], "op": "exists", "value": false}],
                "result": {"error": "not found"},
                "set_state": {}
            }]
        }},
        "examples": [{"variant": "cancel", "input": {"id": "#W1"}, "expected": {"was": "pending"},
                      "expected_state": {"orders": {"#W1": {"status": "cancelled"}}}}]
    }));
    let state = definition.initial_state().clone();
    let (result, post) = call(&definition, &json!({"id": "#W1"}), &state).expect("answers");
    assert_eq!(result, json!({"was": "pending"}));
    assert_eq!(
        post,
        json!({"orders": {"#W1": {"status": "cancelled"}}})
            .as_object()
            .cloned()
            .unwrap_or_default()
    );
    let (result, post) = call(&definition, &json!({"id": "#W9"}), &state).expect("answers");
    assert_eq!(result, json!({"error": "not found"}));
    assert_eq!(post, state);
    assert_eq!(
        call(&definition, &json!({"id": false}), &state).expect_err("a boolean id"),
        ("invalid_path_segment".to_owned(), "/id".to_owned())
    );
    assert_eq!(
        call(&definition, &json!({}), &state).expect_err("no id"),
        ("missing_reference".to_owned(), "/id".to_owned())
    );
}

#[test]
fn errors_point_at_the_data_and_name_the_definition() {
    let definition = compiled(&v2(
        json!("ok"),
        json!([{"path": ["list", {"$input": "i"}, "x"], "value": 1}]),
        json!({"list": [{"x": 0}]}),
    ));
    let state = definition.initial_state().clone();
    let input = json!({"i": 3});
    let error = evaluate(
        &definition,
        &Call {
            input: &input,
            state: &state,
            variant: None,
        },
    )
    .expect_err("index 3 is missing");
    assert_eq!(
        (error.code(), error.path()),
        ("invalid_path_segment", Some("/i"))
    );
    assert!(
        error.to_string().contains("/variants/v/set_state/0/path"),
        "{error}"
    );
    let literal = compiled(&v2(
        json!("ok"),
        json!([{"path": "n.x", "value": 1}]),
        json!({}),
    ));
    let scalar = json!({"n": 3}).as_object().cloned().unwrap_or_default();
    let error = evaluate(
        &literal,
        &Call {
            input: &json!({}),
            state: &scalar,
            variant: None,
        },
    )
    .expect_err("n is a number");
    assert_eq!(
        (error.code(), error.path()),
        ("invalid_state_path", Some("/n"))
    );
}

#[test]
fn version_rule_diagnostics_have_their_paths() {
    let doc = json!({
        "schema_version": 1, "default_variant": "v",
        "variants": {"v": {"result": {"a": {"$input": ["x"]}}, "set_state": [{"path": "a", "value": 1}]}},
        "examples": [{"variant": "v", "input": {"x": 1}, "expected": {"a": 1}}]
    });
    let Err(diagnostics) = compile(&doc) else {
        panic!("a version-1 document with version-2 features fails");
    };
    let found: Vec<(&str, &str)> = diagnostics
        .iter()
        .map(|d| (d.code.as_str(), d.path.as_str()))
        .collect();
    assert_eq!(
        found,
        vec![
            ("version_2_feature", "/variants/v/result/a/$input"),
            ("version_2_feature", "/variants/v/set_state"),
        ]
    );
    let plain = json!({
        "schema_version": 2, "default_variant": "v",
        "variants": {"v": {"result": 1}},
        "examples": [{"variant": "v", "input": {}, "expected": 1}]
    });
    // Declaring version 2 without using its features is accepted.
    assert_eq!(codes(&plain), Vec::<String>::new());
}

/// A rule testing input `a` against `value`; version 2 writes the path as
/// an array (so that the document uses a version-2 feature), version 1 with dots.
fn condition_doc(version: u64, value: Value) -> Value {
    let path = if version == 2 {
        json!(["a"])
    } else {
        json!("a")
    };
    json!({
        "schema_version": version, "default_variant": "v",
        "variants": {"v": {"result": "no", "rules": [{
            "when": [{"source": "input", "path": path, "op": "eq", "value": value}],
            "result": "yes"
        }]}},
        "examples": [{"variant": "v", "input": {}, "expected": "no"}]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// `eq` against a reference holds exactly when the literal `eq` against
    /// the reference's value would.
    #[test]
    fn a_reference_value_compares_like_its_literal(a in data(), b in data()) {
        let by_reference = compiled(&condition_doc(2, json!({"$input": "b"})));
        let input = json!({"a": a, "b": b});
        let got = call(&by_reference, &input, &Map::new()).map(|(r, _)| r);
        let by_literal = compiled(&condition_doc(2, input["b"].clone()));
        let want = call(&by_literal, &input, &Map::new()).map(|(r, _)| r);
        // A literal object with `$` keys is data; the generated data has none.
        prop_assert_eq!(got, want);
    }
}

#[test]
fn a_reference_like_value_in_version_1_is_a_literal_and_warned_about() {
    let doc = condition_doc(1, json!({"$input": "b"}));
    let v1 = compiled(&doc);
    let literal = json!({"a": {"$input": "b"}, "b": 1});
    assert_eq!(
        call(&v1, &literal, &Map::new()).map(|(r, _)| r),
        Ok(json!("yes"))
    );
    assert_eq!(
        call(&v1, &json!({"a": 1, "b": 1}), &Map::new()).map(|(r, _)| r),
        Ok(json!("no"))
    );
    let dotted = doc.clone();
    let warnings = toolmock_evaluator::warnings(&dotted, None);
    let found: Vec<(&str, &str)> = warnings
        .iter()
        .map(|w| (w.code.as_str(), w.path.as_str()))
        .collect();
    assert_eq!(
        found,
        vec![("reference_like_value", "/variants/v/rules/0/when/0/value")]
    );
    let mut v2 = dotted.clone();
    v2["schema_version"] = json!(2);
    assert!(toolmock_evaluator::warnings(&v2, None).is_empty());
}
