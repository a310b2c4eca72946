//! The matchers, data-driven: each case of `cases/matchers.json` gives a
//! `verify` block's matchers, the mock's answer and the real one, and the
//! divergences expected (pointer and kind, in the order reported).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed expectation must panic

use serde_json::{Value, json};
use toolmock_simulation::document::VerifyDoc;
use toolmock_verify::Settings;

#[test]
fn every_matcher_case_gives_its_divergences() {
    let cases: Vec<Value> =
        serde_json::from_str(include_str!("cases/matchers.json")).expect("the cases parse");
    assert!(cases.len() >= 15);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let block: VerifyDoc = serde_json::from_value(json!({
            "matchers": case.get("matchers").cloned().unwrap_or(json!([]))
        }))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let settings = Settings::compile(&block, &["read", "write"], "/verify")
            .unwrap_or_else(|p| panic!("{name}: {p:?}"));
        let operation = case["operation"].as_str().unwrap_or("read");
        let found: Vec<Value> = settings
            .matchers
            .compare(operation, &case["mock"], &case["real"])
            .iter()
            .map(|d| json!([d.path, d.kind.as_str()]))
            .collect();
        assert_eq!(Value::Array(found), case["divergences"], "{name}");
    }
}
