//! The operators the tau2 retail port added (docs/mock-language.md):
//! `$sort`, `$pluck`, `$find`'s `where_ci`, nested-reference and `$find`
//! path segments, and `subset_of` against a `$pluck`.
//!
//! Properties:
//! - `$sort` of strings is the code-point order Python's `sorted` gives (a
//!   model: sorting the strings' code points), and sorting twice changes nothing.
//! - `$pluck` is the elements' values at the path, in order, those without
//!   it left out.
//! - On ASCII text `where_ci` finds what a search comparing lower-cased
//!   strings finds (Python's `.lower()`, as tau2's tools compare), in key order.
//! - A nested reference segment reads what two lookups read, and a `$find`
//!   segment resolves exactly when the `$find` finds something.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolmock_evaluator::{Call, compile, evaluate};

/// Renders `result` (a version-2 expression) against `input` and `state`.
fn render(result: Value, input: Value, state: Value) -> Result<Value, String> {
    let doc = json!({
        "schema_version": 2,
        "default_variant": "v",
        "variants": {"v": {"result": "probe", "rules": [
            {"when": [{"source": "input", "path": "go", "op": "exists", "value": true}], "result": result}]}},
        "examples": [{"variant": "v", "input": {}, "expected": "probe"}]
    });
    let compiled = compile(&doc).map_err(|d| format!("{d:?}"))?;
    let Value::Object(state) = state else {
        return Err("state is an object".into());
    };
    let mut input = input;
    input["go"] = json!(true);
    evaluate(
        &compiled,
        &Call {
            input: &input,
            state: &state,
            variant: None,
        },
    )
    .map(|o| o.result)
    .map_err(|e| e.code().to_string())
}

fn word() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-zA-Z_0-9é]{0,6}").expect("a regex")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn sort_is_code_point_order(words in proptest::collection::vec(word(), 0..8)) {
        let mut model = words.clone();
        model.sort_by(|a, b| a.chars().map(u32::from).cmp(b.chars().map(u32::from)));
        let sorted = render(json!({"$sort": {"$input": "xs"}}), json!({"xs": words}), json!({}));
        prop_assert_eq!(sorted.clone(), Ok(json!(model)));
        let twice = render(json!({"$sort": {"$sort": {"$input": "xs"}}}), json!({"xs": words}), json!({}));
        prop_assert_eq!(twice, sorted);
    }

    #[test]
    fn sort_numbers_by_value(numbers in proptest::collection::vec(-1000i64..1000, 0..8)) {
        let mut model = numbers.clone();
        model.sort();
        let sorted = render(json!({"$sort": {"$input": "xs"}}), json!({"xs": numbers}), json!({}));
        prop_assert_eq!(sorted, Ok(json!(model)));
    }

    #[test]
    fn pluck_keeps_the_values_in_order(items in proptest::collection::vec(proptest::option::of(word()), 0..8)) {
        let elements: Vec<Value> = items
            .iter()
            .map(|i| match i {
                Some(w) => json!({"id": w, "other": 1}),
                None => json!({"other": 1}),
            })
            .collect();
        let model: Vec<&String> = items.iter().flatten().collect();
        let plucked = render(json!({"$pluck": {"from": {"$state": "items"}, "path": "id"}}), json!({}),
                             json!({"items": elements}));
        prop_assert_eq!(plucked, Ok(json!(model)));
    }

    #[test]
    fn where_ci_finds_what_lowercase_comparison_finds(
        emails in proptest::collection::btree_map("[a-z]{1,4}_[0-9]", "[a-zA-Z@.]{1,5}", 0..6),
        wanted in "[a-zA-Z@.]{1,5}",
    ) {
        let users: Map<String, Value> = emails.iter().map(|(k, e)| (k.clone(), json!({"email": e}))).collect();
        // A BTreeMap iterates in key order, which for ASCII keys is code point order.
        let model = emails
            .iter()
            .find(|(_, e)| e.to_lowercase() == wanted.to_lowercase())
            .map_or(Value::Null, |(k, _)| json!(k));
        let find = json!({"$find": {"in": {"$state": "users"}, "where_ci": {"email": {"$input": "e"}}, "give": "key"}});
        prop_assert_eq!(render(find.clone(), json!({"e": wanted}), json!({"users": users})), Ok(model.clone()));
        // As a path segment: the path resolves exactly when it finds a key.
        let at = render(json!({"$state": ["users", find]}), json!({"e": wanted}), json!({"users": users}));
        match model {
            Value::String(k) => prop_assert_eq!(at, Ok(users[&k].clone())),
            _ => prop_assert_eq!(at, Err("missing_reference".to_string())),
        }
    }

    #[test]
    fn nested_reference_reads_what_two_lookups_read(
        owners in proptest::collection::btree_map("#[0-9]{1,3}", "[a-z]{1,3}", 1..6),
        pick in 0usize..6,
    ) {
        let orders: Map<String, Value> = owners.iter().map(|(k, u)| (k.clone(), json!({"user_id": u}))).collect();
        let users: Map<String, Value> = owners.values().map(|u| (u.clone(), json!({"name": format!("N{u}")}))).collect();
        let order = owners.keys().nth(pick % owners.len()).cloned().unwrap_or_default();
        let model = json!(format!("N{}", owners[&order]));
        let nested = json!({"$state": ["users", {"$state": ["orders", {"$input": "id"}, "user_id"]}, "name"]});
        prop_assert_eq!(render(nested, json!({"id": order}), json!({"orders": orders, "users": users})), Ok(model));
    }
}
