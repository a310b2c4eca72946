//! The cost of one call against a layered state — a shared fixture base and
//! an attempt's overlay — for fixtures of about 0.1, 1.4 and 14 MB (issue 25:
//! a call's cost must not grow with the fixture). Two calls, as a retail tool
//! makes them: a read of one order by an id from the input, and a nested
//! write of one order's status. The overlay already holds 100 earlier writes.
//!
//! `cargo bench -p toolmock-evaluator --bench fixture_size`

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use std::hint::black_box;
use toolmock_evaluator::{CompiledDefinition, Overlay, StateView, compile, evaluate_layered};

/// A base of `orders` orders (about 254 bytes of JSON each).
fn base(orders: usize) -> Map<String, Value> {
    let orders: Map<String, Value> = (0..orders)
        .map(|i| {
            let order = json!({
                "status": "pending", "user_id": format!("user_{}", i % 500),
                "address": {"address1": "445 Maple Drive", "city": "Fort Worth", "zip": "76165"},
                "items": [{"item_id": format!("{i}1"), "price": "54.04", "name": "Water Bottle"},
                          {"item_id": format!("{i}2"), "price": "12.50", "name": "Sunglasses"}]
            });
            (order_id(i), order)
        })
        .collect();
    Map::from_iter([("orders".to_owned(), Value::Object(orders))])
}

fn order_id(i: usize) -> String {
    format!("#W{i:07}")
}

fn definition() -> CompiledDefinition {
    let id = json!({"$input": "order_id"});
    let doc = json!({
        "schema_version": 2, "default_variant": "get",
        "variants": {
            "get": {"result": {"order": {"$state": ["orders", id]}}},
            "cancel": {"result": {"was": {"$state": ["orders", id, "status"]}},
                       "set_state": [{"path": ["orders", id, "status"], "value": "cancelled"}]}
        },
        "examples": [
            {"variant": "get", "input": {"order_id": "#W0"}, "state": {"orders": {"#W0": 1}},
             "expected": {"order": 1}},
            {"variant": "cancel", "input": {"order_id": "#W0"},
             "state": {"orders": {"#W0": {"status": "pending"}}}, "expected": {"was": "pending"}}
        ]
    });
    compile(&doc).unwrap_or_else(|e| panic!("the definition compiles: {e:?}"))
}

fn bench(c: &mut Criterion) {
    let definition = definition();
    let mut group = c.benchmark_group("fixture_size");
    for orders in [400, 5_500, 55_000] {
        let base = base(orders);
        let megabytes = serde_json::to_vec(&base).map_or(0, |b| b.len()) as f64 / 1e6;
        let mut overlay = Overlay::new();
        for n in 0..100 {
            let input = json!({"order_id": order_id((n * 7919) % orders)});
            let outcome = evaluate_layered(
                &definition,
                &input,
                StateView::layered(&base, &overlay),
                Some("cancel"),
            )
            .unwrap_or_else(|e| panic!("a write: {e}"));
            for (key, patch) in outcome.patches {
                overlay.set(key, patch);
            }
        }
        // An order the overlay has not written: the read goes to the base.
        let input = json!({"order_id": order_id(orders / 2 + 1)});
        let label = format!("{megabytes:.2}MB");
        for variant in ["get", "cancel"] {
            group.bench_with_input(BenchmarkId::new(variant, &label), &input, |b, input| {
                b.iter(|| {
                    evaluate_layered(
                        &definition,
                        black_box(input),
                        StateView::layered(&base, &overlay),
                        Some(variant),
                    )
                    .map(|o| o.patches.len())
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
