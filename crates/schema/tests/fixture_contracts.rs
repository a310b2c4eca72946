//! Every contract in `fixtures/` (contract files, the contracts inside the
//! conformance vectors, the normalized manifests) still compiles under the
//! schema complexity bound of issue 11.1. The MCP fixture servers' contracts
//! are compiled in `toolmock-discovery`'s server tests.

use serde_json::Value;
use std::path::{Path, PathBuf};
use toolmock_contract::OperationContract;
use toolmock_evaluator::{CompiledContract, SchemaError};
use toolmock_schema::PlatformManifest;

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a fixtures folder") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            json_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

/// Every object in `value` with the three members of a contract.
fn contract_shaped<'v>(value: &'v Value, out: &mut Vec<&'v Value>) {
    match value {
        Value::Object(map) => {
            if ["operation", "input_schema", "output_schema"]
                .iter()
                .all(|k| map.contains_key(*k))
            {
                out.push(value);
            }
            map.values().for_each(|v| contract_shaped(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| contract_shaped(v, out)),
        _ => {}
    }
}

#[test]
fn every_fixture_contract_compiles_within_the_complexity_bound() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut files = Vec::new();
    json_files(&root, &mut files);
    files.sort();
    let mut compiled = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a fixture reads");
        let Ok(value) = serde_json::from_str::<Value>(&text) else {
            continue; // fixtures of invalid JSON on purpose
        };
        let mut contracts: Vec<OperationContract> = Vec::new();
        let mut found = Vec::new();
        contract_shaped(&value, &mut found);
        contracts.extend(
            found
                .into_iter()
                .filter_map(|c| OperationContract::from_value(c.clone()).ok()),
        );
        if value.get("manifest_version").is_some()
            && let Ok(manifest) = PlatformManifest::from_value(&value)
        {
            contracts.extend(manifest.into_contracts());
        }
        for contract in contracts {
            let name = contract.operation.name.clone();
            match CompiledContract::new(contract) {
                Err(e @ SchemaError::TooComplex { .. }) => {
                    panic!("{}: {name}: {e}", file.display())
                }
                Ok(_) => compiled += 1,
                // Vectors that test other refusals keep their own codes.
                Err(_) => {}
            }
        }
    }
    assert!(compiled > 30, "only {compiled} fixture contracts compiled");
}
