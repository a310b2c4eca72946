//! Version 3's computed text and sign (docs/mock-language.md "Sign and
//! computed text") against models: `$concat` and `$format` write each
//! scalar as its JSON text (a string as it is) and keep the literal text
//! between holes, `{{`/`}}` included, exactly; `$abs` and `$neg` are exact
//! on decimals (generated as whole cents, the model compares integers).

use proptest::prelude::*;
use serde_json::{Value, json};
use toolmock_evaluator::{Call, CompiledDefinition, compile, evaluate};

fn compiled(result: Value) -> CompiledDefinition {
    let doc = json!({"schema_version": 3, "default_variant": "v",
        "variants": {"v": {"result": result}},
        "examples": [{"variant": "v", "input": {}, "expected": null}]});
    match compile(&doc) {
        Ok(definition) => definition,
        Err(problems) => panic!("the definition compiles: {problems:?}"),
    }
}

fn answer(definition: &CompiledDefinition, input: &Value) -> Value {
    let state = serde_json::Map::new();
    let call = Call {
        input,
        state: &state,
        variant: None,
    };
    match evaluate(definition, &call) {
        Ok(outcome) => outcome.result,
        Err(e) => panic!("{input}: {e}"),
    }
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        "[a-z {}é]{0,6}".prop_map(Value::String),
        any::<i32>().prop_map(|n| json!(n)),
        (-1000i32..1000).prop_map(|n| json!(f64::from(n) / 8.0)),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
    ]
}

/// A scalar as the model writes it.
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn cents(n: i64) -> Value {
    let sign = if n < 0 { "-" } else { "" };
    let text = format!("{sign}{}.{:02}", (n / 100).abs(), (n % 100).abs());
    json!(text)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn concat_writes_each_scalar(parts in proptest::collection::vec(scalar(), 2..8)) {
        let refs: Vec<Value> = (0..parts.len()).map(|i| json!({"$input": format!("p{i}")})).collect();
        let definition = compiled(json!({"$concat": refs}));
        let input: serde_json::Map<String, Value> =
            parts.iter().enumerate().map(|(i, v)| (format!("p{i}"), v.clone())).collect();
        let expected: String = parts.iter().map(text).collect();
        prop_assert_eq!(answer(&definition, &Value::Object(input)), json!(expected));
    }

    #[test]
    fn format_fills_named_holes(
        pieces in proptest::collection::vec(("[a-z .{}]{0,5}", 0usize..3), 1..6),
        values in proptest::collection::vec(scalar(), 3),
    ) {
        // The literal pieces with their braces doubled, each followed by a hole.
        let mut template = String::new();
        let mut expected = String::new();
        for (literal, hole) in &pieces {
            template.push_str(&literal.replace('{', "{{").replace('}', "}}"));
            template.push_str(&format!("{{v{hole}}}"));
            expected.push_str(literal);
            expected.push_str(&text(&values[*hole]));
        }
        let named: serde_json::Map<String, Value> =
            (0..3).map(|i| (format!("v{i}"), json!({"$input": format!("v{i}")}))).collect();
        let definition = compiled(json!({"$format": {"text": template, "values": named}}));
        let input: serde_json::Map<String, Value> =
            values.iter().enumerate().map(|(i, v)| (format!("v{i}"), v.clone())).collect();
        prop_assert_eq!(answer(&definition, &Value::Object(input)), json!(expected));
    }

    #[test]
    fn abs_and_neg_are_exact(n in -10_000_000i64..10_000_000) {
        let definition = compiled(json!({"abs": {"$abs": {"$input": "x"}}, "neg": {"$neg": {"$input": "x"}},
                                         "back": {"$neg": {"$neg": {"$input": "x"}}}}));
        let got = answer(&definition, &json!({"x": cents(n)}));
        let number = |cents: i64| -> Value {
            serde_json::from_str(&format!("{}", cents as f64 / 100.0)).unwrap_or(Value::Null)
        };
        prop_assert_eq!(got["abs"].as_f64(), number(n.abs()).as_f64());
        prop_assert_eq!(got["neg"].as_f64(), number(-n).as_f64());
        prop_assert_eq!(got["back"].as_f64(), number(n).as_f64());
    }
}
