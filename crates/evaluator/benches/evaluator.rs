//! Evaluator benchmarks (issue 2, "Performance"; figures in docs/performance.md).
//!
//! `cargo bench -p toolmock-evaluator --bench evaluator`
//!
//! - `call/*`: one call on a realistic definition (5 variants, 20 rules with
//!   2–3 conditions each, a ~1 KB result with seven `$input`/`$state`
//!   references). Target: median ≤ 2 µs, and ≤ 2× `clone/result`.
//! - `call/last_rule_json`: the same call through `evaluate_json`, which writes
//!   the result as JSON text instead of building a `Value`.
//! - `clone/result`: `clone()` of the very `Value` that `call/last_rule` renders.
//! - `check/large`: `compile_checked` with a contract of a ~100 KB definition
//!   with 100 examples. Target: ≤ 20 ms.
//! - `contract/refuse_chain_{20,26}`: `CompiledContract::new` on a contract
//!   whose input schema is a chain of `$defs` levels each reaching the next
//!   twice (issue 11.1), refused as `schema_too_complex`. Target: < 50 ms.
//!
//! - `iteration/map_10000`: one call whose result is a `$map` over 10,000
//!   records of the state (each giving its `price`, by `$let` path), and
//!   `iteration/map_sum_10000` the `$sum` of it. Target: ≤ 5 ms.
//!   `iteration/any_condition_10000`: `$any` over the same records as a
//!   condition (of a `$if`), the match the last record: it never copies the
//!   state (it once copied all of it each time it was tried).
//!
//! The data files in `benches/data/` are written by `scripts/bench-data.py`.

use criterion::{Criterion, criterion_group, criterion_main};

// The `toolmock` binary runs on mimalloc, so the benches measure under the
// allocator it ships with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use serde_json::{Value, json};
use std::hint::black_box;
use toolmock_contract::OperationContract;
use toolmock_evaluator::{
    Call, CompiledContract, compile_checked, evaluate, evaluate_json, evaluate_with_contract,
    parse_definition,
};

const REALISTIC: &str = include_str!("data/realistic.mock.json");
const REALISTIC_CONTRACT: &str = include_str!("data/realistic.contract.json");
const LARGE: &str = include_str!("data/large.mock.json");
const LARGE_CONTRACT: &str = include_str!("data/large.contract.json");

fn contract(text: &str) -> CompiledContract {
    let contract = OperationContract::from_json_str(text).expect("the bench contract reads");
    CompiledContract::new(contract).expect("the bench contract compiles")
}

fn definition(text: &str) -> Value {
    parse_definition(text.as_bytes()).expect("the bench definition parses")
}

fn input(tier: u32) -> Value {
    json!({
        "customer": {"id": "C-100019", "tier": format!("tier-{tier}")},
        "order": {"id": "ORD-2026-000019", "amount": 119.5}
    })
}

fn calls(c: &mut Criterion) {
    let contract = contract(REALISTIC_CONTRACT);
    let compiled = compile_checked(&definition(REALISTIC), Some(&contract))
        .expect("the bench definition passes");
    let state = compiled.initial_state().clone();
    // tier-19 fails the first condition of rules 0–18 and matches rule 19,
    // which keeps the variant's ~1 KB result; tier-22 matches no rule.
    let last_rule = input(19);
    let no_match = input(22);
    let call = |input| Call {
        input,
        state: &state,
        variant: None,
    };

    let outcome = evaluate(&compiled, &call(&last_rule)).expect("the bench call succeeds");
    assert_eq!(outcome.rule, Some(19));
    let rendered = outcome.result.clone();
    let size = serde_json::to_vec(&rendered).map_or(0, |v| v.len());
    assert!(
        (900..1200).contains(&size),
        "the result is ~1 KB, not {size} bytes"
    );
    let miss = evaluate(&compiled, &call(&no_match)).expect("the bench call succeeds");
    assert_eq!(miss.rule, None);

    let mut group = c.benchmark_group("call");
    group.bench_function("last_rule", |b| {
        b.iter(|| evaluate(black_box(&compiled), black_box(&call(&last_rule))))
    });
    group.bench_function("no_match", |b| {
        b.iter(|| evaluate(black_box(&compiled), black_box(&call(&no_match))))
    });
    // The same call with the result written as JSON text (what `toolmock
    // eval` does without --contract), into a reused buffer.
    let mut out = Vec::with_capacity(4096);
    group.bench_function("last_rule_json", |b| {
        b.iter(|| {
            out.clear();
            let written =
                evaluate_json(black_box(&compiled), black_box(&call(&last_rule)), &mut out);
            black_box(&out);
            written
        })
    });
    group.bench_function("last_rule_with_contract", |b| {
        b.iter(|| {
            evaluate_with_contract(
                black_box(&compiled),
                black_box(&contract),
                black_box(&call(&last_rule)),
            )
        })
    });
    group.finish();

    c.bench_function("clone/result", |b| b.iter(|| black_box(&rendered).clone()));
}

fn check(c: &mut Criterion) {
    let contract = contract(LARGE_CONTRACT);
    let large = definition(LARGE);
    let size = serde_json::to_vec(&large).map_or(0, |v| v.len());
    assert!(
        (95_000..=102_400).contains(&size),
        "~100 KB, not {size} bytes"
    );
    let examples = large["examples"].as_array().map_or(0, Vec::len);
    assert_eq!(examples, 100);
    compile_checked(&large, Some(&contract)).expect("the large definition passes");

    let mut group = c.benchmark_group("check");
    group.sample_size(30);
    group.bench_function("large", |b| {
        b.iter(|| compile_checked(black_box(&large), Some(black_box(&contract))))
    });
    group.bench_function("large_without_contract", |b| {
        b.iter(|| compile_checked(black_box(&large), None))
    });
    group.bench_function("large_parse_and_check", |b| {
        b.iter(|| {
            let value = parse_definition(black_box(LARGE.as_bytes()));
            value.map(|v| compile_checked(&v, Some(&contract)).is_ok())
        })
    });
    group.finish();
}

/// `levels` `$defs` levels, each reaching the next through `anyOf` and `allOf`.
fn chain_contract(levels: usize) -> OperationContract {
    let mut defs = serde_json::Map::new();
    for level in 0..levels {
        let next = format!("#/$defs/l{}", level + 1);
        defs.insert(
            format!("l{level}"),
            json!({"anyOf": [{"$ref": next}, {"allOf": [{"$ref": next}, {"type": "object"}]}]}),
        );
    }
    defs.insert(format!("l{levels}"), json!({"type": "string"}));
    OperationContract {
        operation: serde_json::from_value(json!({"source": "mcp", "name": "chain"}))
            .expect("an identity"),
        description: String::new(),
        input_schema: json!({"$defs": defs, "$ref": "#/$defs/l0"}),
        output_schema: json!({}),
    }
}

fn refuse(c: &mut Criterion) {
    let mut group = c.benchmark_group("contract");
    for levels in [20, 26] {
        let contract = chain_contract(levels);
        group.bench_function(format!("refuse_chain_{levels}"), |b| {
            b.iter(|| {
                let refused = CompiledContract::new(black_box(contract.clone()));
                assert!(matches!(
                    refused,
                    Err(toolmock_evaluator::SchemaError::TooComplex { .. })
                ));
            })
        });
    }
    group.finish();
}

/// A call mapping 10,000 records of the state (version 3's `$map`).
fn iteration(c: &mut Criterion) {
    let items: Vec<Value> = (0..10_000)
        .map(|n| json!({"id": format!("item-{n}"), "price": n as f64 + 0.25, "options": {"color": "red"}}))
        .collect();
    let mut group = c.benchmark_group("iteration");
    for (name, result) in [
        (
            "map_10000",
            json!({"$map": {"in": {"$state": "items"}, "as": "x", "give": {"$let": ["x", "price"]}}}),
        ),
        (
            "map_sum_10000",
            json!({"$sum": {"$map": {"in": {"$state": "items"}, "as": "x", "give": {"$let": ["x", "price"]}}}}),
        ),
        (
            "any_condition_10000",
            json!({"$if": {"when": [{"$any": {"in": {"$state": "items"}, "as": "x",
                "when": [{"source": "let", "path": "x.id", "op": "eq", "value": "item-9999"}]}}],
                "then": 1, "else": 0}}),
        ),
    ] {
        // The records are the call's state (a fixture), not the definition's.
        let doc = json!({"schema_version": 3, "default_variant": "v",
            "variants": {"v": {"result": result}},
            "examples": [{"variant": "v", "input": {}, "state": {"items": []}, "expected": match name { "map_10000" => json!([]), _ => json!(0) }}]});
        let compiled = compile_checked(&doc, None).expect("the iteration bench definition passes");
        let mut state = serde_json::Map::new();
        state.insert("items".into(), Value::Array(items.clone()));
        let input = json!({});
        let call = Call {
            input: &input,
            state: &state,
            variant: None,
        };
        let answer = evaluate(&compiled, &call).expect("the call answers");
        assert!(answer.result.is_array() || answer.result.is_number());
        group.bench_function(name, |b| {
            b.iter(|| evaluate(&compiled, black_box(&call)).map(|o| o.rule))
        });
    }
    group.finish();
}

criterion_group!(benches, calls, check, refuse, iteration);
criterion_main!(benches);
