//! The version rule's diagnostics (docs/mock-language.md, "Version 2" and
//! "Version 3"): a document that declares an earlier version than the
//! features it uses gets one diagnostic per use, each at its own JSON
//! pointer and naming its feature — every one, not only the first; and a
//! document may declare a later version than its features need.

use serde_json::{Value, json};
use toolmock_evaluator::compile;

/// Every diagnostic of `doc` as (code, path, message); empty when it compiles.
fn diagnostics(doc: &Value) -> Vec<(String, String, String)> {
    match compile(doc) {
        Ok(_) => Vec::new(),
        Err(found) => found
            .iter()
            .map(|d| (d.code.to_string(), d.path.clone(), d.message.clone()))
            .collect(),
    }
}

/// A document of `version` using four version-3 features at once.
fn with_version_3_features(version: u64) -> Value {
    json!({
        "schema_version": version, "default_variant": "v",
        "variants": {"v": {
            "let": {"n": {"$abs": {"$input": "x"}}},
            "result": {
                "a": {"$if": {"when": [], "then": 1, "else": 2}},
                "b": {"$concat": ["x", "y"]}
            },
            "set_state": [{"remove": "gone.x"}]
        }},
        "examples": [{"variant": "v", "input": {"x": 1}, "expected": {"a": 1, "b": "xy"}}]
    })
}

#[test]
fn every_later_feature_is_named_at_its_path() {
    let message = |what: &str| {
        format!(
            "{what} is a version-3 feature, and this document says \"schema_version\": 2; write \"schema_version\": 3 to use it"
        )
    };
    let expected: Vec<(String, String, String)> = [
        ("/variants/v/let", "a let block"),
        ("/variants/v/let/n", "the $abs operator (money arithmetic)"),
        ("/variants/v/result/a", "the $if operator"),
        ("/variants/v/result/b", "the $concat operator"),
        (
            "/variants/v/set_state/0",
            "a removal (a write {\"remove\": path})",
        ),
    ]
    .into_iter()
    .map(|(path, what)| {
        (
            "version_3_feature".to_owned(),
            path.to_owned(),
            message(what),
        )
    })
    .collect();
    assert_eq!(diagnostics(&with_version_3_features(2)), expected);
    assert_eq!(diagnostics(&with_version_3_features(3)), Vec::new());
}

#[test]
fn a_later_version_may_be_declared_without_its_features() {
    for version in [1, 2, 3] {
        let plain = json!({
            "schema_version": version, "default_variant": "v",
            "variants": {"v": {"result": {"a": {"$input": "x"}}, "set_state": {"seen": true}}},
            "examples": [{"variant": "v", "input": {"x": 1}, "expected": {"a": 1},
                          "expected_state": {"seen": true}}]
        });
        assert_eq!(diagnostics(&plain), Vec::new(), "schema_version {version}");
    }
    let version_2_only = json!({
        "schema_version": 3, "default_variant": "v",
        "variants": {"v": {"result": {"$state": ["orders", {"$input": "id"}]}}},
        "initial_state": {"orders": {"o1": "pending"}},
        "examples": [{"variant": "v", "input": {"id": "o1"}, "expected": "pending"}]
    });
    assert_eq!(diagnostics(&version_2_only), Vec::new());
}
