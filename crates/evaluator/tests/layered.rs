//! A layered state (a shared base and an attempt's overlay) answers every
//! call exactly as the same state held whole: the same result, the same
//! error, and the same post-call state — while the base is never copied.
//!
//! A property test plays random call sequences of a version-3 definition
//! with reads (whole records, `$find`, conditions, the whole state),
//! writes (nested, into array elements, at missing members, top-level) and
//! removals (a record, an array element, the members a `where` selects, a
//! removal then a write at the same place) and updates (the members a
//! `where` selects, the elements a `when` selects, one member after a
//! write to it) against both and compares after every call — the state
//! also as JSON written straight from the layers, and member by member.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolmock_evaluator::{
    Call, CompiledDefinition, Overlay, StateView, compile, evaluate, evaluate_layered,
};

fn definition() -> CompiledDefinition {
    let id = json!({"$input": "id"});
    let mut doc = json!({
        "schema_version": 3,
        "default_variant": "get",
        "initial_state": {"n": 0},
        "variants": {
            "get": {"result": {"order": {"$state": ["orders", id]}}},
            "status": {
                "result": {"was": {"$state": ["orders", id, "status"]}},
                "set_state": [{"path": ["orders", id, "status"], "value": {"$input": "s"}}]
            },
            "item": {
                "result": {"ok": true},
                "set_state": [{"path": ["orders", id, "items", {"$input": "i"}], "value": {"$input": "s"}}]
            },
            "two": {
                "result": {"ok": true},
                "set_state": [
                    {"path": ["orders", id, "status"], "value": "x"},
                    {"path": ["orders", id, "status"], "value": {"$input": "s"}},
                    {"path": ["fresh", id, "deep"], "value": {"$input": "i"}}
                ]
            },
            "top": {"result": {"ok": true}, "set_state": {"note": {"$input": "s"}, "n": {"$input": "i"}}},
            "record": {"result": {"ok": true}, "set_state": [{"path": ["orders", id], "value": {"status": {"$input": "s"}, "items": ["a"]}}]},
            "find": {"result": {"k": {"$find": {"in": {"$state": "orders"}, "where": {"status": {"$input": "s"}}, "give": "key"}}}},
            "whole": {"result": {"$state": ""}},
            "drop": {"result": {"ok": true}, "set_state": [{"remove": ["orders", id]}]},
            "drop_item": {"result": {"ok": true}, "set_state": [{"remove": ["orders", id, "items", {"$input": "i"}]}]},
            "drop_where": {"result": {"ok": true}, "set_state": [{"remove": "orders", "where": {"status": {"$input": "s"}}}]},
            "drop_items_where": {"result": {"ok": true}, "set_state": [{"remove": ["orders", id, "items"], "where": {"": "a"}}]},
            "drop_then_write": {"result": {"ok": true}, "set_state": [
                {"remove": ["orders", id]},
                {"path": ["orders", id, "status"], "value": {"$input": "s"}}
            ]},
            "write_then_drop": {"result": {"ok": true}, "set_state": [
                {"path": ["fresh", id, "deep"], "value": {"$input": "i"}},
                {"remove": ["fresh", id, "deep"]},
                {"remove": ["n", "x"]}
            ]},
            "update_where": {"result": {"ok": true}, "set_state": [
                {"update": "orders", "as": "o", "where": {"status": {"$input": "s"}},
                 "merge": {"count": {"$count": {"$let": ["o", "items"]}}, "status": "touched"}}
            ]},
            "update_item": {"result": {"ok": true}, "set_state": [
                {"path": ["orders", id, "status"], "value": "seen"},
                {"update": ["orders", id, "items"], "as": "x", "when": [{"source": "let", "path": "x", "op": "eq", "value": "a"}],
                 "value": {"$concat": [{"$let": "x"}, {"$input": "s"}]}},
                {"update": ["orders", id], "as": "o", "merge": {"was": {"$let": ["o", "status"]}}}
            ]},
            "cond": {
                "result": "different",
                "rules": [{"when": [{"source": "state", "path": ["orders", id, "status"], "op": "eq", "value": {"$input": "s"}}],
                           "result": "same"}]
            }
        },
        "examples": [{"variant": "get", "input": {"id": "o1"}, "expected": {"order": {"status": "pending", "items": ["a", "b"]}}}]
    });
    // `compile` wants an example per variant but does not run them (`check`
    // does); these only name each variant.
    doc["examples"] = VARIANTS
        .iter()
        .map(|v| json!({"variant": v, "input": {"id": "o1", "i": 0, "s": "pending"}, "expected": null}))
        .collect();
    match compile(&doc) {
        Ok(definition) => definition,
        Err(problems) => panic!("the definition compiles: {problems:?}"),
    }
}

fn base() -> Map<String, Value> {
    let mut orders = Map::new();
    for i in 0..4 {
        orders.insert(
            format!("o{i}"),
            json!({"status": "pending", "items": ["a", "b"]}),
        );
    }
    json!({"orders": orders, "n": 0, "users": {"u": {"name": "Ada"}}})
        .as_object()
        .cloned()
        .unwrap_or_default()
}

const VARIANTS: [&str; 17] = [
    "get",
    "status",
    "item",
    "two",
    "top",
    "record",
    "find",
    "whole",
    "cond",
    "drop",
    "drop_item",
    "drop_where",
    "drop_items_where",
    "drop_then_write",
    "write_then_drop",
    "update_where",
    "update_item",
];

fn calls() -> impl Strategy<Value = Vec<(usize, u8, u8, u8)>> {
    proptest::collection::vec((0..VARIANTS.len(), 0u8..6, 0u8..4, 0u8..3), 1..12)
}

fn input(id: u8, i: u8, s: u8) -> Value {
    let status = ["pending", "shipped", "cancelled"][usize::from(s)];
    json!({"id": format!("o{id}"), "i": i, "s": status})
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn layered_answers_as_whole(sequence in calls()) {
        let definition = definition();
        let base = base();
        let mut whole = base.clone();
        let mut overlay = Overlay::new();
        for (v, id, i, s) in sequence {
            let variant = Some(VARIANTS[v]);
            let input = input(id, i, s);
            let plain = evaluate(&definition, &Call { input: &input, state: &whole, variant });
            let layered = evaluate_layered(&definition, &input, StateView::layered(&base, &overlay), variant);
            match (plain, layered) {
                (Ok(plain), Ok(layered)) => {
                    prop_assert_eq!(&plain.result, &layered.result);
                    plain.commit_to(&mut whole);
                    for (key, patch) in layered.patches {
                        overlay.set(key, patch);
                    }
                }
                (Err(a), Err(b)) => prop_assert_eq!(a, b),
                (a, b) => prop_assert!(false, "plain {:?} but layered {:?}", a, b),
            }
            let view = StateView::layered(&base, &overlay);
            prop_assert_eq!(&view.whole(), &whole);
            // Written straight from the layers: the same text as the whole.
            prop_assert_eq!(serde_json::to_string(&view).unwrap(), serde_json::to_string(&whole).unwrap());
            // Read member by member: the same members, in the same order.
            prop_assert_eq!(view.keys().collect::<Vec<_>>(), whole.keys().map(String::as_str).collect::<Vec<_>>());
            for (key, value) in &whole {
                let member = view.member(key);
                prop_assert_eq!(member.as_deref(), Some(value));
            }
            let stored = Overlay::from_stored(&overlay.to_stored());
            prop_assert_eq!(stored.as_ref(), Some(&overlay));
        }
        // The base itself is never written.
        prop_assert_eq!(&base, &self::base());
    }
}

/// Removing a record marks it removed in the overlay, never copying the
/// rest of the collection; a read no longer finds it, and the stored form
/// keeps the removal.
#[test]
fn a_removal_keeps_only_the_mark() {
    let definition = definition();
    let base = base();
    let mut a = Overlay::new();
    let input = input(1, 0, 0);
    let Ok(outcome) = evaluate_layered(
        &definition,
        &input,
        StateView::layered(&base, &a),
        Some("drop"),
    ) else {
        panic!("the removal answers")
    };
    for (key, patch) in outcome.patches {
        a.set(key, patch);
    }
    assert_eq!(Value::Object(a.changes()), json!({"orders": {"o1": null}}));
    assert_eq!(a.to_stored(), json!({"orders": {"+": {"o1": {"-": true}}}}));
    let whole = StateView::layered(&base, &a).whole();
    assert_eq!(whole["orders"].as_object().map(|o| o.len()), Some(3));
    assert!(whole["orders"].get("o1").is_none());
    let read = evaluate_layered(
        &definition,
        &input,
        StateView::layered(&base, &a),
        Some("get"),
    );
    assert!(matches!(
        read,
        Err(toolmock_evaluator::CallError::MissingReference { .. })
    ));
}

/// A nested write leaves the rest of the collection out of the overlay, and
/// two attempts' overlays over one base never see each other's writes.
#[test]
fn a_nested_write_keeps_only_the_change() {
    let definition = definition();
    let base = base();
    let (mut a, b) = (Overlay::new(), Overlay::new());
    let input = input(1, 0, 2);
    let Ok(outcome) = evaluate_layered(
        &definition,
        &input,
        StateView::layered(&base, &a),
        Some("status"),
    ) else {
        panic!("the write answers")
    };
    for (key, patch) in outcome.patches {
        a.set(key, patch);
    }
    assert_eq!(
        Value::Object(a.changes()),
        json!({"orders": {"o1": {"status": "cancelled"}}})
    );
    let read = |overlay: &Overlay| {
        evaluate_layered(
            &definition,
            &input,
            StateView::layered(&base, overlay),
            Some("get"),
        )
        .map(|o| o.result)
    };
    assert_eq!(
        read(&a),
        Ok(json!({"order": {"status": "cancelled", "items": ["a", "b"]}}))
    );
    assert_eq!(
        read(&b),
        Ok(json!({"order": {"status": "pending", "items": ["a", "b"]}}))
    );
}
