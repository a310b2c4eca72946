//! From divergence to a fixed mock (`toolmock verify --propose DIR`): for
//! each operation whose mock diverged, a draft revision whose replayed
//! examples are the real answers, checked against the contract (the real
//! tool's current one when it changed) before it is written, for a person
//! to review.
//!
//! The draft keeps the mock and replaces, in each replayed variant, the
//! result and rules with what `toolmock record emit`'s inference builds
//! from the real answers (`toolmock_mcp::record::infer`), and that
//! variant's replayed examples with the real calls. When that draft fails
//! its check (a rule of the old variant read state the real answers do not
//! explain, say), the inferred definition alone is proposed; when that
//! fails too, nothing is written and the check's diagnostics say why.

use crate::report::{Answer, CheckStatus, OperationReport, Report, Verdict};
use crate::subject::Subject;
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use toolmock_contract::OperationContract;
use toolmock_evaluator::CompiledContract;
use toolmock_mcp::record::{Observation, file_stem as stem, infer};

/// What became of one diverged operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Proposal {
    /// The tool.
    pub tool: String,
    /// The operation.
    pub operation: String,
    /// `merged` (the mock with its replayed variants rewritten), `inferred`
    /// (the real answers alone) or `not_proposed`.
    pub outcome: &'static str,
    /// The draft's file (relative to the folder), when one was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
    /// The contract it was checked against (relative to the folder).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contract: Option<String>,
    /// In words.
    pub message: String,
}

/// Why proposals could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}", .file.display())]
pub struct ProposeError {
    /// The file or folder.
    pub file: PathBuf,
    /// The operating system's reason.
    #[source]
    pub source: std::io::Error,
}

/// Writes a draft for every diverged operation of `report` into `out`
/// (`TOOL/OPERATION.mock.json` beside `TOOL/OPERATION.contract.json`, and
/// `proposals.json`, this list).
pub fn propose(
    report: &Report,
    subjects: &[Subject],
    out: &Path,
) -> Result<Vec<Proposal>, ProposeError> {
    let mut proposals = Vec::new();
    for tool in &report.tools {
        let Some(subject) = subjects.iter().find(|s| s.tool == tool.tool) else {
            continue;
        };
        for op in tool
            .operations
            .iter()
            .filter(|o| o.verdict == Verdict::Diverged)
        {
            proposals.push(one(subject, op, out)?);
        }
    }
    create(out)?;
    write(
        &out.join("proposals.json"),
        &serde_json::to_value(&proposals).unwrap_or(Value::Null),
    )?;
    Ok(proposals)
}

fn create(dir: &Path) -> Result<(), ProposeError> {
    std::fs::create_dir_all(dir).map_err(|source| ProposeError {
        file: dir.to_owned(),
        source,
    })
}

fn write(file: &Path, value: &Value) -> Result<(), ProposeError> {
    let mut bytes = serde_json::to_vec_pretty(value).unwrap_or_default();
    bytes.push(b'\n');
    std::fs::write(file, bytes).map_err(|source| ProposeError {
        file: file.to_owned(),
        source,
    })
}

fn one(subject: &Subject, report: &OperationReport, out: &Path) -> Result<Proposal, ProposeError> {
    let not = |message: String| Proposal {
        tool: subject.tool.clone(),
        operation: report.operation.clone(),
        outcome: "not_proposed",
        definition: None,
        contract: None,
        message,
    };
    let Some(op) = subject.operation(&report.operation) else {
        return Ok(not("the operation is not in the verification".into()));
    };
    let Some(mock) = &op.mock else {
        return Ok(not("the operation has no mock".into()));
    };
    let default = mock.definition["default_variant"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    // The real answers, by the variant they were replayed against.
    let mut observed: Vec<(String, Vec<Observation>)> = Vec::new();
    for check in &report.checks {
        if !matches!(check.status, CheckStatus::Agreed | CheckStatus::Diverged) {
            continue;
        }
        let Some(Answer::Result(result)) = &check.real else {
            continue;
        };
        let variant = check.variant.clone().unwrap_or_else(|| default.clone());
        let observation = Observation {
            input: check.input.clone(),
            result: result.clone(),
        };
        match observed.iter_mut().find(|(v, _)| *v == variant) {
            Some((_, list)) if !list.contains(&observation) => list.push(observation),
            Some(_) => {}
            None => observed.push((variant, vec![observation])),
        }
    }
    if observed.is_empty() {
        return Ok(not(
            "no replayed call got a real result to build examples from (the real tool refused them)".into(),
        ));
    }
    let contract: OperationContract = match report
        .drift
        .real_contract
        .as_ref()
        .map(|c| serde_json::from_value(c.clone()))
    {
        Some(Ok(current)) => current,
        _ => op.contract.clone(),
    };
    let compiled = match CompiledContract::new(contract.clone()) {
        Ok(c) => c,
        Err(e) => return Ok(not(format!("the contract cannot be compiled: {e}"))),
    };
    let merged = merge(&mock.definition, &observed);
    let inferred = observed
        .iter()
        .find(|(v, _)| *v == default)
        .or(observed.first())
        .map(|(_, list)| infer(list).definition);
    let (outcome, draft, message) =
        match toolmock_evaluator::compile_checked(&merged, Some(&compiled)) {
            Ok(_) => (
                "merged",
                merged,
                format!(
                    "the mock with {} replayed variant(s) rewritten from {} real answer(s)",
                    observed.len(),
                    observed.iter().map(|(_, l)| l.len()).sum::<usize>()
                ),
            ),
            Err(first) => match inferred
                .as_ref()
                .map(|d| (d, toolmock_evaluator::compile_checked(d, Some(&compiled))))
            {
                Some((definition, Ok(_))) => (
                    "inferred",
                    definition.clone(),
                    format!(
                        "the real answers alone (the rewritten mock fails its check: {})",
                        first_diagnostic(&first)
                    ),
                ),
                Some((_, Err(diagnostics))) => {
                    return Ok(not(format!(
                        "no draft passes its check against the contract: {}",
                        first_diagnostic(&diagnostics)
                    )));
                }
                None => return Ok(not("nothing to infer from".into())),
            },
        };
    let dir = out.join(stem(&subject.tool));
    create(&dir)?;
    let name = stem(&report.operation);
    let definition = format!("{}/{name}.mock.json", stem(&subject.tool));
    let contract_file = format!("{}/{name}.contract.json", stem(&subject.tool));
    write(&out.join(&definition), &draft)?;
    write(
        &out.join(&contract_file),
        &serde_json::to_value(&contract).unwrap_or(Value::Null),
    )?;
    Ok(Proposal {
        tool: subject.tool.clone(),
        operation: report.operation.clone(),
        outcome,
        definition: Some(definition),
        contract: Some(contract_file),
        message,
    })
}

fn first_diagnostic(diagnostics: &toolmock_evaluator::Diagnostics) -> String {
    diagnostics.as_slice().first().map_or(String::new(), |d| {
        format!(
            "{}: {}: {}",
            if d.path.is_empty() { "/" } else { &d.path },
            d.code.as_str(),
            d.message
        )
    })
}

/// The mock with each observed variant's result and rules rebuilt from
/// the real answers, and its examples replaced by them (a variant the
/// inference splits into several keeps its own).
fn merge(definition: &Value, observed: &[(String, Vec<Observation>)]) -> Value {
    let mut draft = definition.clone();
    let mut examples: Vec<Value> = definition["examples"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (variant, observations) in observed {
        let inferred = infer(observations).definition;
        let Some(recorded) = inferred["variants"]["recorded"].as_object() else {
            continue; // several results for one input: the inference made variants
        };
        if inferred["variants"].as_object().map_or(0, Map::len) != 1 {
            continue;
        }
        if let Some(target) = draft["variants"][variant.as_str()].as_object_mut() {
            target.insert("result".into(), recorded["result"].clone());
            match recorded.get("rules") {
                Some(rules) => target.insert("rules".into(), rules.clone()),
                None => target.remove("rules"),
            };
        }
        // The variant's examples that start from the initial state were
        // replayed: the real calls stand in their place.
        examples.retain(|e| !(e["variant"] == json!(variant) && e.get("state").is_none()));
        for o in observations {
            if examples.len() >= toolmock_evaluator::MAX_EXAMPLES {
                break;
            }
            examples.push(json!({"variant": variant, "input": o.input, "expected": o.result}));
        }
    }
    draft["examples"] = Value::Array(examples);
    draft
}
