//! `toolmock record emit`: a recording folder → one checked mock definition
//! per operation (with its contract), a simulation that serves them, and a
//! report of every operation that could not be emitted and why.

use super::infer::{Observation, infer};
use super::{
    CALLS_FILE, CONTRACTS_FILE, RecordCode, RecordError, create_dir, write_file, write_json,
};
use serde::Serialize;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use toolmock_contract::{OperationContract, canonical_json};
use toolmock_evaluator::CompiledContract;

/// One diagnostic of a definition that failed its check.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Diagnostic {
    /// The check's code.
    pub code: String,
    /// A JSON pointer into the emitted definition.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// What `emit` did with one operation.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct OperationReport {
    /// The tool's name.
    pub operation: String,
    /// `emitted` or `skipped`.
    pub status: &'static str,
    /// Why it was skipped (a [`RecordCode`]), when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<&'static str>,
    /// In words.
    pub message: String,
    /// The calls recorded for it.
    pub calls: usize,
    /// The emitted definition's file (relative to the output folder).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
    /// The check's diagnostics (`check_failed`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<Diagnostic>,
}

/// One emitted operation.
#[derive(Debug, Clone)]
pub struct Emitted {
    /// The tool's name.
    pub operation: String,
    /// The definition (it passed its check against `contract`).
    pub definition: Value,
    /// The discovered contract entry.
    pub contract_entry: Value,
}

/// Everything `emit` wrote and skipped.
#[derive(Debug, Clone, Serialize)]
pub struct EmitReport {
    /// Where the files went.
    pub out: PathBuf,
    /// Per operation, in the server's order (unlisted tools last).
    pub operations: Vec<OperationReport>,
}

impl EmitReport {
    /// How many operations were emitted.
    pub fn emitted(&self) -> usize {
        self.operations
            .iter()
            .filter(|o| o.status == "emitted")
            .count()
    }
}

/// One line of a recording's `calls.jsonl`, as `toolmock record` wrote it
/// (already redacted).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCall {
    /// The tool's name.
    pub tool: String,
    /// The arguments it was called with (an object).
    pub arguments: Value,
    /// `structuredContent` of a result that is not `isError`.
    pub structured: Option<Value>,
}

fn unreadable(file: &Path, source: std::io::Error) -> RecordError {
    RecordError::Unreadable {
        file: file.to_owned(),
        source,
    }
}

fn invalid(file: &Path, path: String, message: impl Into<String>) -> RecordError {
    RecordError::Invalid {
        file: file.to_owned(),
        path,
        message: message.into(),
    }
}

/// The calls of the recording in `dir`, in the order they were recorded
/// (`toolmock verify` replays them; `emit` infers from them).
pub fn read_calls(dir: &Path) -> Result<Vec<RecordedCall>, RecordError> {
    let file = dir.join(CALLS_FILE);
    let text = std::fs::read_to_string(&file).map_err(|e| unreadable(&file, e))?;
    let mut calls = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let at = |rest: &str| format!("/calls/{i}{rest}");
        let value: Value = serde_json::from_str(line)
            .map_err(|e| invalid(&file, at(""), format!("line {} is not JSON: {e}", i + 1)))?;
        let tool = value["tool"]
            .as_str()
            .ok_or_else(|| invalid(&file, at("/tool"), "a call needs its tool's name"))?;
        let arguments = value.get("arguments").cloned().unwrap_or(json!({}));
        if !arguments.is_object() {
            return Err(invalid(
                &file,
                at("/arguments"),
                "arguments must be an object",
            ));
        }
        let structured = match (&value["result"], &value["error"]) {
            (Value::Object(result), _) => (result.get("isError") != Some(&Value::Bool(true)))
                .then(|| result.get("structuredContent").cloned())
                .flatten(),
            (Value::Null, Value::Object(_)) => None,
            _ => {
                return Err(invalid(
                    &file,
                    at(""),
                    "a call needs a result object or an error object",
                ));
            }
        };
        calls.push(RecordedCall {
            tool: tool.to_owned(),
            arguments,
            structured,
        });
    }
    Ok(calls)
}

fn read_contracts(dir: &Path) -> Result<Vec<Value>, RecordError> {
    let file = dir.join(CONTRACTS_FILE);
    let bytes = std::fs::read(&file).map_err(|e| unreadable(&file, e))?;
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| invalid(&file, String::new(), format!("not JSON: {e}")))?;
    let Value::Array(entries) = value else {
        return Err(invalid(&file, String::new(), "not an array of contracts"));
    };
    for (i, entry) in entries.iter().enumerate() {
        if entry["contract"]["operation"]["name"].as_str().is_none() {
            return Err(invalid(
                &file,
                format!("/{i}/contract/operation/name"),
                "every entry names its operation",
            ));
        }
    }
    Ok(entries)
}

/// A file name for an operation: its name with anything but letters,
/// digits, `-`, `_` and `.` as `_` (and never hidden: `_` before a
/// leading `.`). `toolmock verify --propose` names its drafts so too.
pub fn file_stem(name: &str) -> String {
    let stem: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if stem.is_empty() || stem.starts_with('.') {
        format!("_{stem}")
    } else {
        stem
    }
}

fn skipped(
    operation: &str,
    calls: usize,
    code: RecordCode,
    message: String,
) -> Box<OperationReport> {
    Box::new(OperationReport {
        operation: operation.to_owned(),
        status: "skipped",
        code: Some(code.as_str()),
        message,
        calls,
        definition: None,
        diagnostics: Vec::new(),
    })
}

/// One operation: its distinct structured results → a definition, checked
/// against the contract.
fn emit_one(entry: &Value, calls: &[&RecordedCall]) -> Result<Emitted, Box<OperationReport>> {
    let name = entry["contract"]["operation"]["name"]
        .as_str()
        .unwrap_or_default();
    let n = calls.len();
    if entry["contract"].get("output_schema").is_none() {
        return Err(skipped(
            name,
            n,
            RecordCode::NeedsOutputSchema,
            "the server declares no outputSchema for this tool; a mock's results are checked against one".into(),
        ));
    }
    if calls.is_empty() {
        return Err(skipped(
            name,
            0,
            RecordCode::NotCalled,
            "the recording has no call of this tool".into(),
        ));
    }
    let mut observations: Vec<Observation> = Vec::new();
    let mut seen = Vec::new();
    for call in calls {
        let Some(result) = &call.structured else {
            continue;
        };
        let k = canonical_json(&json!([call.arguments, result])).unwrap_or_default();
        if !seen.contains(&k) {
            seen.push(k);
            observations.push(Observation {
                input: call.arguments.clone(),
                result: result.clone(),
            });
        }
    }
    if observations.is_empty() {
        return Err(skipped(
            name,
            n,
            RecordCode::NoStructuredResults,
            format!(
                "none of its {n} call(s) returned a structured result that is not an error (text-only results and errors are not mocked)"
            ),
        ));
    }
    let inferred = infer(&observations);
    let contract: Result<OperationContract, String> =
        serde_json::from_value(entry["contract"].clone()).map_err(|e| e.to_string());
    let compiled = contract.and_then(|c| CompiledContract::new(c).map_err(|e| e.to_string()));
    let checked = match &compiled {
        Ok(contract) => toolmock_evaluator::compile_checked(&inferred.definition, Some(contract))
            .map(|_| ())
            .map_err(|diagnostics| {
                diagnostics
                    .as_slice()
                    .iter()
                    .map(|d| Diagnostic {
                        code: d.code.as_str().to_owned(),
                        path: d.path.clone(),
                        message: d.message.clone(),
                    })
                    .collect::<Vec<_>>()
            }),
        Err(e) => Err(vec![Diagnostic {
            code: "invalid_contract".into(),
            path: "/contract".into(),
            message: e.clone(),
        }]),
    };
    if let Err(diagnostics) = checked {
        let mut report = skipped(
            name,
            n,
            RecordCode::CheckFailed,
            format!(
                "the definition built from the recorded results fails its check against the discovered contract ({} problem(s); e.g. a result that breaks the tool's own output schema)",
                diagnostics.len()
            ),
        );
        report.diagnostics = diagnostics;
        return Err(report);
    }
    Ok(Emitted {
        operation: name.to_owned(),
        definition: inferred.definition,
        contract_entry: entry.clone(),
    })
}

fn describe(definition: &Value, calls: usize) -> String {
    let variants = definition["variants"].as_object().map_or(0, |v| v.len());
    let rules: usize = definition["variants"].as_object().map_or(0, |v| {
        v.values()
            .map(|x| x["rules"].as_array().map_or(0, Vec::len))
            .sum()
    });
    let examples = definition["examples"].as_array().map_or(0, Vec::len);
    format!("{variants} variant(s), {rules} rule(s), {examples} example(s) from {calls} call(s)")
}

/// Emits the recording in `dir` into `out`: per emitted operation
/// `NAME.mock.json` and `NAME.contract.json`, then `contracts.json` (the
/// emitted operations' entries), `simulation.json` (one tool from those
/// contracts with those definitions, and a case `replay` an external
/// agent plays, so `toolmock serve out/simulation.json` serves them) and
/// `report.json` (this report). An operation that cannot be emitted is
/// reported with its code; it is not an error of the whole.
pub fn emit(dir: &Path, out: &Path) -> Result<EmitReport, RecordError> {
    let metadata = std::fs::metadata(dir).map_err(|e| unreadable(dir, e))?;
    if !metadata.is_dir() {
        return Err(unreadable(
            dir,
            std::io::Error::other("not a folder (give the folder `toolmock record --out` wrote)"),
        ));
    }
    let entries = read_contracts(dir)?;
    let calls = read_calls(dir)?;
    if calls.is_empty() {
        return Err(RecordError::Empty {
            file: dir.join(CALLS_FILE),
        });
    }
    create_dir(out)?;
    let mut reports = Vec::new();
    let mut emitted = Vec::new();
    for entry in &entries {
        let name = entry["contract"]["operation"]["name"]
            .as_str()
            .unwrap_or_default();
        let mine: Vec<&RecordedCall> = calls.iter().filter(|c| c.tool == name).collect();
        match emit_one(entry, &mine) {
            Ok(one) => {
                let stem = file_stem(name);
                let definition_file = format!("{stem}.mock.json");
                write_json(&out.join(&definition_file), &one.definition)?;
                write_json(
                    &out.join(format!("{stem}.contract.json")),
                    &one.contract_entry["contract"],
                )?;
                reports.push(OperationReport {
                    operation: name.to_owned(),
                    status: "emitted",
                    code: None,
                    message: describe(&one.definition, mine.len()),
                    calls: mine.len(),
                    definition: Some(definition_file),
                    diagnostics: Vec::new(),
                });
                emitted.push((one, stem));
            }
            Err(report) => reports.push(*report),
        }
    }
    let mut unlisted: Vec<&str> = calls
        .iter()
        .map(|c| c.tool.as_str())
        .filter(|t| {
            !entries
                .iter()
                .any(|e| e["contract"]["operation"]["name"] == *t)
        })
        .collect();
    unlisted.dedup();
    for tool in unlisted {
        let n = calls.iter().filter(|c| c.tool == tool).count();
        reports.push(*skipped(
            tool,
            n,
            RecordCode::UnlistedTool,
            "the server did not list this tool, so it has no contract".into(),
        ));
    }
    write_simulation(out, &emitted)?;
    let report = EmitReport {
        out: out.to_owned(),
        operations: reports,
    };
    write_json(
        &out.join("report.json"),
        &serde_json::to_value(&report).unwrap_or(Value::Null),
    )?;
    Ok(report)
}

fn write_simulation(out: &Path, emitted: &[(Emitted, String)]) -> Result<(), RecordError> {
    let contracts: Vec<Value> = emitted
        .iter()
        .map(|(e, _)| e.contract_entry.clone())
        .collect();
    write_json(&out.join(CONTRACTS_FILE), &Value::Array(contracts))?;
    let file = out.join("simulation.json");
    if emitted.is_empty() {
        // Nothing to serve: no simulation (a stale one would mislead).
        return match std::fs::remove_file(&file) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(RecordError::CannotWrite { file, source }),
        };
    }
    let definitions: serde_json::Map<String, Value> = emitted
        .iter()
        .map(|(e, stem)| (e.operation.clone(), json!(format!("{stem}.mock.json"))))
        .collect();
    let simulation = json!({
        "simulation_version": 1,
        "name": "recorded",
        "description": "Emitted by toolmock record emit: the recorded server's tools, answered from the recorded calls.",
        "tools": [{"name": "recorded", "from": "contracts", "contracts": CONTRACTS_FILE,
                   "definitions": definitions}],
        "agent": {"name": "agent", "tools": ["recorded"]},
        "cases": [{"name": "replay", "description": "An MCP client replays calls.",
                   "driver": {"type": "external"}}]
    });
    let mut bytes = serde_json::to_vec_pretty(&simulation).unwrap_or_default();
    bytes.push(b'\n');
    write_file(&file, &bytes)
}
