//! `$json` and `$object` (version 3, docs/mock-language.md "Objects and
//! JSON text"): `$json` of any value is its RFC 8785 canonical text, which
//! reads back as an equal value; `$object` of pairs is the object of their
//! keys, a later pair replacing an earlier one's.

use proptest::prelude::*;
use serde_json::{Value, json};
use toolmock_evaluator::{Call, compile, evaluate, json_equal};

fn answer(result: Value, input: &Value) -> Value {
    let doc = json!({"schema_version": 3, "default_variant": "v",
        "variants": {"v": {"result": result}},
        "examples": [{"variant": "v", "input": {}, "expected": null}]});
    let definition = match compile(&doc) {
        Ok(definition) => definition,
        Err(problems) => panic!("the definition compiles: {problems:?}"),
    };
    let state = serde_json::Map::new();
    let call = Call {
        input,
        state: &state,
        variant: None,
    };
    match evaluate(&definition, &call) {
        Ok(outcome) => outcome.result,
        Err(e) => panic!("{input}: {e}"),
    }
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-1_000_000i64..1_000_000).prop_map(|n| json!(n)),
        (-1000i32..1000).prop_map(|n| json!(f64::from(n) / 16.0)),
        "[a-zé\"\\\\\n ]{0,5}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-zA-Z]{0,3}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn json_is_canonical_and_reads_back(x in value()) {
        let got = answer(json!({"$json": {"$input": "x"}}), &json!({"x": x}));
        let expected = toolmock_contract::canonical_json(&x).map(|b| String::from_utf8_lossy(&b).into_owned());
        prop_assert_eq!(got.as_str(), expected.as_deref().ok());
        let back: Value = serde_json::from_str(got.as_str().unwrap_or("")).unwrap_or(Value::Null);
        prop_assert!(json_equal(&back, &x), "{} read back as {}", x, back);
    }

    #[test]
    fn object_takes_the_last_pair_of_each_key(pairs in proptest::collection::vec(("[a-c]", value()), 1..6)) {
        let written: Vec<Value> = (0..pairs.len())
            .map(|i| json!([{"$input": format!("k{i}")}, {"$input": format!("v{i}")}]))
            .collect();
        let mut input = serde_json::Map::new();
        let mut expected = serde_json::Map::new();
        for (i, (k, v)) in pairs.iter().enumerate() {
            input.insert(format!("k{i}"), json!(k));
            input.insert(format!("v{i}"), v.clone());
            expected.insert(k.clone(), v.clone());
        }
        let got = answer(json!({"$object": written}), &Value::Object(input));
        prop_assert!(json_equal(&got, &Value::Object(expected)));
    }
}
