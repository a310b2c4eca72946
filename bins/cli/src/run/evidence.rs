//! `--evidence DIR`: per attempt, JSON Lines of everything it recorded, in
//! the order it happened: `evidence`, `tool_input_error`, `harness_error`
//! and (model-driven attempts) `message` lines — the conversation, each
//! message with its `role` — then one `final_state` line. Each call's line
//! says whose call it was (`actor`: `agent`, or `user` for a simulated
//! user's own tools).
//! Files: `DIR/NN-CASE/attempt-N.jsonl` (NN the case's position from 01).
//!
//! An attempt over shared fixtures keeps in its `final_state` line only
//! what it changed (`overlay`, with the run's `fixtures_hash`); the state
//! every attempt started from is written once, `DIR/base.json`, and
//! `toolmock evidence state` merges the two (`crate::evidence`).
//! Evidence then grows with what the attempts changed, not with the
//! fixtures times the attempts.

use crate::Failure;
use serde_json::{Map, Value, json};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use toolmock_runtime::model::PinRef;
use toolmock_simulation::RunResults;

fn pin(p: &PinRef) -> Value {
    match p {
        PinRef::Library {
            revision,
            definition_hash,
            ..
        } => {
            json!({"kind": "library", "revision": revision, "definition_hash": definition_hash.as_str()})
        }
        PinRef::Inline { definition_hash } => {
            json!({"kind": "inline", "definition_hash": definition_hash.as_str()})
        }
        PinRef::Effect { definition_hash } => {
            json!({"kind": "effect", "definition_hash": definition_hash.as_str()})
        }
    }
}

pub(crate) fn slug(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    if s.is_empty() { "case".into() } else { s }
}

/// The file of the state every fixture-backed attempt started from.
pub(crate) const BASE_FILE: &str = "base.json";

/// The folder of the case at `position` (from 0) named `name`.
fn case_folder(position: usize, name: &str) -> String {
    format!("{:02}-{}", position + 1, slug(name))
}

/// Writes every attempt's records under `dir`.
pub(crate) fn write(dir: &Path, results: &RunResults) -> Result<(), Failure> {
    let fail = |path: &Path, e: std::io::Error| {
        Failure::usage(format!("{}: cannot write: {e}", path.display()))
    };
    std::fs::create_dir_all(dir).map_err(|e| fail(dir, e))?;
    // The shared base, written once (by the first attempt over it).
    let mut base: Option<Arc<Map<String, Value>>> = None;
    for (i, case) in results.cases.iter().enumerate() {
        let folder = dir.join(case_folder(i, &case.name));
        std::fs::create_dir_all(&folder).map_err(|e| fail(&folder, e))?;
        for attempt in &case.attempts {
            let Some(raw) = &attempt.raw else { continue };
            let mut lines: Vec<(Option<i64>, Value)> = Vec::new();
            // A tool belongs to one side: the simulated user's tools are
            // those its calls were reported under.
            let users: std::collections::HashSet<&str> = attempt
                .calls
                .iter()
                .filter(|c| !c.actor.is_agent())
                .map(|c| c.tool.as_str())
                .collect();
            let actor = |tool: &str| {
                if users.contains(tool) {
                    "user"
                } else {
                    "agent"
                }
            };
            for e in &raw.evidence {
                lines.push((
                    e.started_at.timestamp_nanos_opt(),
                    json!({
                        "actor": actor(&e.tool),
                        "kind": "evidence",
                        "tool": e.tool, "operation": e.operation, "pin": pin(&e.pin),
                        "executor": e.executor.as_str(), "variant": e.variant, "rule": e.rule,
                        "arguments": e.arguments, "result": e.result,
                        "state_before": e.state_before, "state_after": e.state_after,
                        "version_before": e.version_before, "version_after": e.version_after,
                        "delay_ms": e.delay_ms, "started_at": e.started_at.to_rfc3339(),
                        "duration_us": e.duration_us,
                    }),
                ));
            }
            for e in &raw.tool_input_errors {
                lines.push((
                    e.at.timestamp_nanos_opt(),
                    json!({
                        "actor": actor(&e.tool),
                        "kind": "tool_input_error",
                        "tool": e.tool, "operation": e.operation,
                        "pin": e.pin.as_ref().map(pin), "arguments": e.arguments,
                        "code": e.code.to_string(), "message": e.message, "path": e.path,
                        "violations": e.violations, "at": e.at.to_rfc3339(),
                    }),
                ));
            }
            for e in &raw.harness_errors {
                lines.push((
                    e.at.timestamp_nanos_opt(),
                    json!({
                        "kind": "harness_error",
                        "tool": e.tool, "operation": e.operation,
                        "pin": e.pin.as_ref().map(pin), "arguments": e.arguments,
                        "code": e.code.to_string(), "message": e.message, "path": e.path,
                        "detail": e.detail, "at": e.at.to_rfc3339(),
                    }),
                ));
            }
            for (message, at) in attempt.conversation.iter().zip(&raw.message_times) {
                let mut line = json!({"kind": "message", "at": at.to_rfc3339()});
                if let (Value::Object(out), Ok(Value::Object(fields))) =
                    (&mut line, serde_json::to_value(message))
                {
                    out.extend(fields);
                }
                lines.push((at.timestamp_nanos_opt(), line));
            }
            // Stable: a message and a record of one instant keep their order.
            lines.sort_by_key(|line| line.0);
            let path = folder.join(format!("attempt-{}.jsonl", attempt.number));
            let file = std::fs::File::create(&path).map_err(|e| fail(&path, e))?;
            let mut out = std::io::BufWriter::new(file);
            for (_, line) in &lines {
                serde_json::to_writer(&mut out, line)
                    .map_err(|e| fail(&path, std::io::Error::other(e)))?;
                writeln!(out).map_err(|e| fail(&path, e))?;
            }
            // The tokens of each model request, after the records (a
            // request's usage has no instant of its own among them).
            for request in &attempt.model_requests {
                let mut line = json!({"kind": "model_usage"});
                if let (Value::Object(out), Ok(Value::Object(fields))) =
                    (&mut line, serde_json::to_value(request))
                {
                    out.extend(fields);
                }
                serde_json::to_writer(&mut out, &line)
                    .map_err(|e| fail(&path, std::io::Error::other(e)))?;
                writeln!(out).map_err(|e| fail(&path, e))?;
            }
            let layered = &raw.final_state;
            let shared = match (&results.fixtures_hash, &base) {
                (Some(_), _) if !layered.fixture_backed => false,
                (Some(_), Some(written)) => {
                    Arc::ptr_eq(written, &layered.base) || **written == *layered.base
                }
                (Some(hash), None) => {
                    write_base(dir, hash, &layered.base)?;
                    base = Some(layered.base.clone());
                    true
                }
                (None, _) => false,
            };
            let line = match (&results.fixtures_hash, shared) {
                (Some(hash), true) => json!({
                    "kind": "final_state",
                    "fixtures_hash": hash,
                    "overlay": layered.overlay.to_stored(),
                }),
                _ => json!({"kind": "final_state", "state": layered.whole()}),
            };
            serde_json::to_writer(&mut out, &line)
                .map_err(|e| fail(&path, std::io::Error::other(e)))?;
            writeln!(out).map_err(|e| fail(&path, e))?;
            out.flush().map_err(|e| fail(&path, e))?;
        }
    }
    Ok(())
}

/// `DIR/base.json`: `{"fixtures_hash": H, "state": {…}}`, written from
/// the shared base where it is (never copied).
fn write_base(dir: &Path, hash: &str, base: &Map<String, Value>) -> Result<(), Failure> {
    #[derive(serde::Serialize)]
    struct Base<'a> {
        fixtures_hash: &'a str,
        state: &'a Map<String, Value>,
    }
    let path = dir.join(BASE_FILE);
    let fail = |e: std::io::Error| Failure::usage(format!("{}: cannot write: {e}", path.display()));
    let file = std::fs::File::create(&path).map_err(fail)?;
    let mut out = std::io::BufWriter::new(file);
    serde_json::to_writer(
        &mut out,
        &Base {
            fixtures_hash: hash,
            state: base,
        },
    )
    .map_err(|e| fail(std::io::Error::other(e)))?;
    writeln!(out).map_err(fail)?;
    out.flush().map_err(fail)
}
