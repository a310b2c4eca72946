//! The ordering condition ops `lt`, `le`, `gt`, `ge` (version 3,
//! docs/mock-language.md "Ordering conditions") against a model: numbers
//! by exact decimal value (generated as whole cents, so the model compares
//! integers), date-times by their instant whatever their offsets, other
//! strings by code point; and the four ops agree with one another (`lt` is
//! `not ge`, `gt` is `not le`, `lt(a, b)` is `gt(b, a)`).

use chrono::{DateTime, FixedOffset, TimeZone, Utc};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::cmp::Ordering;
use toolmock_evaluator::{Call, CompiledDefinition, compile, evaluate};

const OPS: [&str; 4] = ["lt", "le", "gt", "ge"];

fn definition() -> CompiledDefinition {
    let variants: serde_json::Map<String, Value> = OPS
        .iter()
        .map(|op| {
            let rule = json!({"when": [{"source": "input", "path": "a", "op": op, "value": {"$input": "b"}}],
                              "result": true});
            ((*op).to_owned(), json!({"result": false, "rules": [rule]}))
        })
        .collect();
    let examples: Vec<Value> = OPS
        .iter()
        .map(|op| json!({"variant": op, "input": {"a": 1, "b": 2}, "expected": null}))
        .collect();
    let doc = json!({"schema_version": 3, "default_variant": "lt", "variants": variants, "examples": examples});
    match compile(&doc) {
        Ok(definition) => definition,
        Err(problems) => panic!("the definition compiles: {problems:?}"),
    }
}

/// What each op answers for `a` against `b`.
fn answers(definition: &CompiledDefinition, a: &Value, b: &Value) -> [bool; 4] {
    let input = json!({"a": a, "b": b});
    let state = serde_json::Map::new();
    OPS.map(|op| {
        let call = Call {
            input: &input,
            state: &state,
            variant: Some(op),
        };
        match evaluate(definition, &call) {
            Ok(outcome) => outcome.result == json!(true),
            Err(e) => panic!("{op} of {a} and {b}: {e}"),
        }
    })
}

fn expected(ordering: Ordering) -> [bool; 4] {
    [
        ordering.is_lt(),
        ordering.is_le(),
        ordering.is_gt(),
        ordering.is_ge(),
    ]
}

/// Whole cents as a JSON number written with two places at most.
fn cents(n: i64) -> Value {
    let text = if n % 100 == 0 {
        (n / 100).to_string()
    } else {
        format!(
            "{}{}.{:02}",
            if n < 0 { "-" } else { "" },
            (n / 100).abs(),
            (n % 100).abs()
        )
    };
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

fn instant(seconds: i64, offset_minutes: i32) -> (i64, String) {
    let utc: DateTime<Utc> = Utc.timestamp_opt(seconds, 0).single().expect("a time");
    let offset = FixedOffset::east_opt(offset_minutes * 60).expect("an offset within a day");
    (
        seconds,
        utc.with_timezone(&offset)
            .format("%Y-%m-%dT%H:%M:%S%:z")
            .to_string(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn numbers_compare_by_exact_value(a in -100_000i64..100_000, b in -100_000i64..100_000) {
        let definition = definition();
        prop_assert_eq!(answers(&definition, &cents(a), &cents(b)), expected(a.cmp(&b)));
        prop_assert_eq!(answers(&definition, &cents(a), &cents(a)), expected(Ordering::Equal));
    }

    #[test]
    fn date_times_compare_by_instant(
        a in 0i64..4_000_000_000, b in 0i64..4_000_000_000,
        oa in -720i32..720, ob in -720i32..720,
    ) {
        let definition = definition();
        let ((sa, ta), (sb, tb)) = (instant(a, oa), instant(b, ob));
        prop_assert_eq!(answers(&definition, &json!(ta), &json!(tb)), expected(sa.cmp(&sb)));
    }

    #[test]
    fn other_strings_compare_by_code_point(a in "[a-zA-Z_0-9é ]{0,8}", b in "[a-zA-Z_0-9é ]{0,8}") {
        let definition = definition();
        prop_assert_eq!(answers(&definition, &json!(a), &json!(b)), expected(a.cmp(&b)));
        let [lt, le, gt, ge] = answers(&definition, &json!(a), &json!(b));
        let [rlt, rle, rgt, rge] = answers(&definition, &json!(b), &json!(a));
        prop_assert_eq!((lt, gt), (!ge, !le));
        prop_assert_eq!((lt, le, gt, ge), (rgt, rge, rlt, rle));
    }
}

/// An unknown op's message lists the ops of the document's version
/// (issue 34 item 7): version 1's four in a version-1 document, as always;
/// every op through version 3's in a version-3 one.
#[test]
fn an_unknown_op_lists_the_ops_of_the_documents_version() {
    let message = |version: u8| {
        let doc = json!({"schema_version": version, "default_variant": "v",
            "variants": {"v": {"result": {"$if": {"when": [], "then": 1, "else": 0}},
                               "rules": [{"when": [{"source": "input", "path": "x", "op": "lte", "value": 1}],
                                          "result": 1}]}},
            "examples": [{"variant": "v", "input": {}, "expected": 1}]});
        match compile(&doc) {
            Ok(_) => panic!("an unknown op is refused"),
            Err(problems) => problems
                .iter()
                .find(|p| p.path == "/variants/v/rules/0/when/0/op")
                .map(|p| p.message.clone())
                .unwrap_or_default(),
        }
    };
    assert_eq!(
        message(3),
        "unknown op \"lte\"; the ops are eq, ne, in, exists, contains, subset_of, eq_ci, lt, le, gt and ge"
    );
    assert_eq!(
        message(1),
        "unknown op \"lte\"; the ops are eq, ne, in and exists"
    );
}
