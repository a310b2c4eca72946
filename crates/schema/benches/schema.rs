//! Schema normalization benchmarks (issue 3, "Performance"; figures in
//! docs/performance.md).
//!
//! `cargo bench -p toolmock-schema --bench schema`
//!
//! - `normalize/500_operations`: read and normalize a platform manifest of
//!   500 operations (every parameter type, options, defaults, array items, a
//!   mix of plain and Salesforce-enveloped outputs; ~1 MB of JSON). Target ≤ 50 ms.
//! - `normalize_and_hash/500_operations`: the same plus the 500 contract hashes
//!   (what `toolmock normalize` prints).
//! - `generate_and_check/500_contracts`: `generate` for each of the 500
//!   contracts: compile both schemas, derive the draft, validate it and run
//!   the whole check of docs/spec.md §7. Target ≤ 500 ms.

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::hint::black_box;
use std::time::Duration;
use toolmock_schema::{PlatformManifest, generate, normalize_manifest};

const SOQL: &str = include_str!("../../../fixtures/salesforce/soql-query.data.schema.json");
const CREATE: &str = include_str!("../../../fixtures/salesforce/create-record.data.schema.json");

fn operation(i: usize, soql: &Value, create: &Value) -> Value {
    let output = match i % 4 {
        0 => json!({"envelope": "salesforce", "status": 200, "data_schema": soql}),
        1 => json!({"envelope": "salesforce", "status": 201, "data_schema": create}),
        _ => json!({"schema": {
            "type": "object",
            "required": ["reference", "status", "items"],
            "properties": {
                "reference": {"type": "string", "minLength": 8},
                "status": {"enum": ["open", "closed"]},
                "updated_at": {"type": "string", "format": "date-time"},
                "amount": {"type": "number", "minimum": 0, "multipleOf": 0.01},
                "items": {"type": "array", "minItems": 1, "items": {
                    "type": "object", "required": ["sku", "qty"],
                    "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}}
                }}
            },
            "additionalProperties": false
        }}),
    };
    json!({
        "name": format!("operation_{i:03}"),
        "description": format!("Operation number {i}"),
        "required": ["record_id"],
        "parameters": [
            {"name": "record_id", "type": "string", "description": "The record"},
            {"name": "object_type", "type": "string", "required": true,
             "options": [{"value": "Account", "label": "Account"}, {"value": "Contact", "label": "Contact"},
                         {"value": "Case", "label": "Case"}, {"value": "Task", "label": "Task"}]},
            {"name": "fields", "type": "sfdc_field_mapping", "description": "Field values"},
            {"name": "limit", "type": "integer", "default": 10},
            {"name": "ratio", "type": "number"},
            {"name": "dry_run", "type": "boolean", "default": false},
            {"name": "filters", "type": "object"},
            {"name": "tags", "type": "array", "items": {"type": "string", "maxLength": 40}},
            {"name": "async_options", "type": "async_options"}
        ],
        "output": output
    })
}

fn manifest() -> Value {
    let soql: Value = serde_json::from_str(SOQL).expect("the fixture is JSON");
    let create: Value = serde_json::from_str(CREATE).expect("the fixture is JSON");
    let operations: Vec<Value> = (0..500).map(|i| operation(i, &soql, &create)).collect();
    json!({"manifest_version": 1, "tool": "bench", "operations": operations})
}

fn benches(c: &mut Criterion) {
    let manifest = manifest();
    let contracts = PlatformManifest::from_value(&manifest)
        .expect("the bench manifest is valid")
        .contracts();
    assert_eq!(contracts.len(), 500);
    for contract in &contracts {
        generate(contract).expect("every bench contract has a draft");
    }

    let mut group = c.benchmark_group("schema");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("normalize/500_operations", |b| {
        b.iter(|| black_box(normalize_manifest(black_box(&manifest)).expect("valid")))
    });
    group.bench_function("normalize_and_hash/500_operations", |b| {
        b.iter(|| {
            let contracts = normalize_manifest(black_box(&manifest)).expect("valid");
            let hashes: Vec<_> = contracts
                .iter()
                .map(|c| c.hash().expect("hashable"))
                .collect();
            black_box(hashes)
        })
    });
    group.bench_function("generate_and_check/500_contracts", |b| {
        b.iter(|| {
            for contract in black_box(&contracts) {
                black_box(generate(contract).expect("a draft"));
            }
        })
    });
    group.finish();
}

criterion_group!(schema, benches);
criterion_main!(schema);
