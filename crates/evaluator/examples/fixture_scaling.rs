//! The cost of one call against a layered state (shared fixture base plus an
//! attempt's overlay) for fixtures of about 0.1, 1.4 and 14 MB: a read of one
//! order by id and a nested write into one order, as a retail tool does.
//! The figure should not grow with the fixture (docs/performance.md).
//!
//! `cargo run --release -p toolmock-evaluator --example fixture_scaling`

use serde_json::{Map, Value, json};
use std::time::Instant;
use toolmock_evaluator::{Overlay, StateView, compile, evaluate_layered};

fn base(orders: usize) -> Map<String, Value> {
    let orders: Map<String, Value> = (0..orders)
        .map(|i| {
            (
                format!("#W{i:07}"),
                json!({"status": "pending", "user_id": format!("user_{}", i % 500),
                       "address": {"address1": "445 Maple Drive", "city": "Fort Worth", "zip": "76165"},
                       "items": [{"item_id": format!("{i}1"), "price": "54.04", "name": "Water Bottle"},
                                 {"item_id": format!("{i}2"), "price": "12.50", "name": "Sunglasses"}]}),
            )
        })
        .collect();
    json!({"orders": orders})
        .as_object()
        .cloned()
        .unwrap_or_default()
}

fn main() {
    let id = json!({"$input": "order_id"});
    let variants = ["get", "cancel"];
    let doc = json!({
        "schema_version": 2, "default_variant": "get",
        "variants": {
            "get": {"result": {"order": {"$state": ["orders", id]}}},
            "cancel": {"result": {"was": {"$state": ["orders", id, "status"]}},
                       "set_state": [{"path": ["orders", id, "status"], "value": "cancelled"}]}
        },
        "examples": variants.iter().map(|v| json!({"variant": v, "input": {"order_id": "#W0000001"}, "expected": null})).collect::<Vec<_>>()
    });
    let definition = match compile(&doc) {
        Ok(d) => d,
        Err(e) => panic!("compiles: {e:?}"),
    };
    for orders in [300, 4_200, 42_000] {
        let base = base(orders);
        let bytes = serde_json::to_vec(&base).map_or(0, |b| b.len());
        let mut overlay = Overlay::new();
        let calls = 20_000usize;
        let started = Instant::now();
        for n in 0..calls {
            // Spread over the orders; every second call writes.
            let input = json!({"order_id": format!("#W{:07}", (n * 7919) % orders)});
            let variant = variants[n % 2];
            let outcome = evaluate_layered(
                &definition,
                &input,
                StateView::layered(&base, &overlay),
                Some(variant),
            );
            match outcome {
                Ok(outcome) => {
                    for (key, patch) in outcome.patches {
                        overlay.set(key, patch);
                    }
                }
                Err(e) => panic!("call {n}: {e}"),
            }
        }
        let per_call = started.elapsed().as_nanos() / calls as u128;
        println!(
            "fixture {:>6.2} MB ({orders} orders): {per_call} ns per call (read or nested write), overlay {} bytes",
            bytes as f64 / 1e6,
            serde_json::to_vec(&overlay.to_stored()).map_or(0, |b| b.len())
        );
    }
}
