//! The table of normalization rules: one JSON case file per rule in
//! `tests/cases/`, all run by this one runner.
//!
//! Kinds: `manifest` (the exact contracts), `manifest_errors` (every problem,
//! in order, by code and path), `validate` (values the normalized schemas
//! accept or refuse), `hash` (whether two manifests give the same hashes),
//! `mcp` (the exact entries of discovered pages) and `mcp_errors`.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use toolmock_contract::OperationContract;
use toolmock_schema::{ContractEntry, PlatformManifest, normalize_pages};

fn cases() -> Vec<(PathBuf, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/cases exists")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("a case file reads");
            let value: Value = serde_json::from_str(&text).expect("a case file is JSON");
            (p, value)
        })
        .collect()
}

fn contracts(manifest: &Value) -> Vec<OperationContract> {
    PlatformManifest::from_value(manifest)
        .unwrap_or_else(|e| panic!("the manifest should be valid:\n{e}"))
        .contracts()
}

fn contract_json(c: &OperationContract) -> Value {
    serde_json::to_value(c).expect("a contract serializes")
}

/// The problems, as `(code, path, message)`, are exactly `want` (a list of
/// `{code, path}`, in order), and no message repeats its path (the path is
/// reported apart from the message, never inside it).
fn expect_problems<'a>(
    problems: impl Iterator<Item = (&'static str, &'a str, String)>,
    want: &Value,
) -> Result<(), String> {
    let problems: Vec<_> = problems.collect();
    let got: Vec<Value> = problems
        .iter()
        .map(|(code, path, _)| json!({"code": code, "path": path}))
        .collect();
    if Value::Array(got.clone()) != *want {
        let messages: Vec<&str> = problems.iter().map(|(_, _, m)| m.as_str()).collect();
        return Err(format!(
            "problems differ\n got: {}\nwant: {want}\nmessages:\n{}",
            Value::Array(got),
            messages.join("\n")
        ));
    }
    for (_, path, message) in &problems {
        if !path.is_empty() && message.contains(path) {
            return Err(format!("the message {message} repeats its path {path}"));
        }
    }
    Ok(())
}

fn run_case(case: &Value) -> Result<(), String> {
    let kind = case["kind"].as_str().ok_or("the case has no kind")?;
    match kind {
        "manifest" => {
            let got: Vec<Value> = contracts(&case["manifest"])
                .iter()
                .map(contract_json)
                .collect();
            let want = case["contracts"].as_array().ok_or("no contracts")?;
            if &got != want {
                return Err(format!(
                    "contracts differ\n got: {}\nwant: {}",
                    serde_json::to_string_pretty(&got).unwrap_or_default(),
                    serde_json::to_string_pretty(want).unwrap_or_default()
                ));
            }
            // Every contract is a valid docs/spec.md §2 contract that hashes.
            for c in &got {
                let parsed = OperationContract::from_value(c.clone()).map_err(|e| e.to_string())?;
                parsed.hash().map_err(|e| e.to_string())?;
            }
        }
        "manifest_errors" => {
            let errors = PlatformManifest::from_value(&case["manifest"])
                .err()
                .ok_or("the manifest was accepted")?;
            expect_problems(
                errors
                    .iter()
                    .map(|e| (e.code.as_str(), e.path.as_str(), e.to_string())),
                &case["errors"],
            )?;
        }
        "validate" => {
            let contracts = contracts(&case["manifest"]);
            for check in case["checks"].as_array().ok_or("no checks")? {
                let op = check["operation"].as_u64().ok_or("no operation")? as usize;
                let contract = contracts.get(op).ok_or("no such operation")?;
                let schema = match check["schema"].as_str() {
                    Some("input") => &contract.input_schema,
                    _ => &contract.output_schema,
                };
                let validator =
                    toolmock_evaluator::compile_schema(schema).map_err(|e| e.to_string())?;
                let valid = validator.is_valid(&check["value"]);
                if Some(valid) != check["valid"].as_bool() {
                    return Err(format!(
                        "{} of operation {op} should {}accept {}",
                        check["schema"],
                        if valid { "not " } else { "" },
                        check["value"]
                    ));
                }
            }
        }
        "hash" => {
            let hashes = |m: &Value| -> Result<Vec<String>, String> {
                contracts(m)
                    .iter()
                    .map(|c| c.hash().map(|h| h.to_string()).map_err(|e| e.to_string()))
                    .collect()
            };
            let (a, b) = (hashes(&case["a"])?, hashes(&case["b"])?);
            let same = case["same"].as_bool().ok_or("no same")?;
            if (a == b) != same {
                return Err(format!(
                    "hashes {a:?} and {b:?} should {}be equal",
                    if same { "" } else { "not " }
                ));
            }
        }
        "mcp" => {
            let pages = case["pages"].as_array().ok_or("no pages")?;
            let fallback = case.get("fallback");
            let ops = normalize_pages(pages, fallback)
                .map_err(|e| format!("the pages were refused:\n{e}"))?;
            let mut got = Vec::new();
            for op in &ops {
                let entry = ContractEntry::of_discovered(op).map_err(|e| e.to_string())?;
                let mut value = serde_json::to_value(&entry).map_err(|e| e.to_string())?;
                let hash = value
                    .as_object_mut()
                    .and_then(|m| m.remove("contract_hash"));
                // The hash is the contract's own.
                if let Some(contract) = op.contract() {
                    let want = contract.hash().map_err(|e| e.to_string())?.to_string();
                    if hash != Some(Value::String(want)) {
                        return Err(format!("{}: wrong hash {hash:?}", op.operation.name));
                    }
                } else if hash.is_some() {
                    return Err(format!(
                        "{}: needs_output_schema but hashed",
                        op.operation.name
                    ));
                }
                got.push(value);
            }
            if Value::Array(got.clone()) != case["operations"] {
                return Err(format!(
                    "entries differ\n got: {}\nwant: {}",
                    serde_json::to_string_pretty(&got).unwrap_or_default(),
                    serde_json::to_string_pretty(&case["operations"]).unwrap_or_default()
                ));
            }
        }
        "mcp_errors" => {
            let pages = case["pages"].as_array().ok_or("no pages")?;
            let errors = normalize_pages(pages, None)
                .err()
                .ok_or("the pages were accepted")?;
            expect_problems(
                errors
                    .iter()
                    .map(|e| (e.code.as_str(), e.path.as_str(), e.to_string())),
                &case["errors"],
            )?;
        }
        other => return Err(format!("unknown kind {other:?}")),
    }
    Ok(())
}

#[test]
fn every_normalization_rule() {
    let cases = cases();
    assert!(cases.len() >= 30, "the table lost cases: {}", cases.len());
    let mut failures = Vec::new();
    for (path, case) in &cases {
        assert!(
            case["rule"].is_string(),
            "{}: every case states its rule",
            path.display()
        );
        if let Err(e) = run_case(case) {
            failures.push(format!("{}: {}\n  {e}", path.display(), case["rule"]));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

#[test]
fn every_parameter_type_has_a_case() {
    let table = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases/manifest_parameter_types.json"),
    )
    .expect("the parameter types case reads");
    for t in toolmock_schema::ParameterType::ALL {
        assert!(
            table.contains(&format!("\"{}\"", t.as_str())),
            "no case for {t}"
        );
    }
}

#[test]
fn the_shipped_manifest_schema_agrees_with_the_reader() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let read = |p: &Path| -> Value {
        serde_json::from_str(&std::fs::read_to_string(p).expect("reads")).expect("JSON")
    };
    let schema = read(&root.join("platform-manifest.schema.json"));
    let validator =
        toolmock_evaluator::compile_schema(&schema).expect("the manifest schema compiles");
    let manifests = [
        ("salesforce/salesforce.manifest.json", true),
        ("manifests/healthplus.manifest.json", true),
        ("manifests/spec-example.manifest.json", true),
        ("manifests/invalid.manifest.json", false),
    ];
    for (file, valid) in manifests {
        let manifest = read(&root.join(file));
        assert_eq!(
            validator.is_valid(&manifest),
            valid,
            "{file} against the schema"
        );
        assert_eq!(
            PlatformManifest::from_value(&manifest).is_ok(),
            valid,
            "{file} by the reader"
        );
    }
    // Every case the reader accepts, the schema accepts too.
    for (path, case) in cases() {
        if case["kind"] == "manifest" {
            assert!(validator.is_valid(&case["manifest"]), "{}", path.display());
        }
    }
}
