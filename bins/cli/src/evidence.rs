//! `toolmock evidence`: reading what `toolmock run --evidence DIR` wrote.
//!
//! `state` gives one attempt's whole final state. An attempt over shared
//! fixtures recorded only its changes (its `final_state` line's `overlay`,
//! with the run's `fixtures_hash`); the state it started from is
//! `DIR/base.json`, written once for the run. The whole state is the base
//! with the overlay applied, built here on demand.

use crate::run::evidence::{BASE_FILE, slug};
use crate::{CliCode, Failure};
use clap::{Args, Subcommand};
use serde_json::{Map, Value};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use toolmock_evaluator::{Overlay, StateView};

/// Read what `toolmock run --evidence DIR` wrote.
#[derive(Debug, Args)]
pub(crate) struct EvidenceArgs {
    #[command(subcommand)]
    command: EvidenceCommand,
}

#[derive(Debug, Subcommand)]
enum EvidenceCommand {
    State(StateArgs),
}

/// Print one attempt's whole final state (one line of JSON).
///
/// An attempt over shared fixtures recorded only what it changed; its whole
/// state is the run's base (DIR/base.json, checked against the attempt's
/// fixtures_hash) with those changes applied.
///
/// Example:
///   toolmock run retail.json --evidence out
///   toolmock evidence state out task_7 1 > task_7.state.json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct StateArgs {
    /// The folder `toolmock run --evidence` wrote.
    dir: PathBuf,
    /// The case: its name, its folder (`NN-NAME`) or its position (from 1).
    case: String,
    /// The attempt's number (from 1).
    attempt: u32,
}

pub(crate) fn run(args: &EvidenceArgs) -> Result<u8, Failure> {
    match &args.command {
        EvidenceCommand::State(state) => {
            let whole = final_state(&state.dir, &state.case, state.attempt)?;
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            let written = serde_json::to_writer(&mut out, &whole)
                .map_err(std::io::Error::from)
                .and_then(|()| writeln!(out))
                .and_then(|()| out.flush());
            crate::output::written(written, "cannot write the output")?;
            Ok(0)
        }
    }
}

fn not_found(path: &Path, message: impl std::fmt::Display) -> Failure {
    Failure {
        message: format!(
            "{}: {}: {message}",
            path.display(),
            CliCode::EvidenceNotFound
        ),
        exit: 1,
    }
}

fn invalid(path: &Path, pointer: &str, message: impl std::fmt::Display) -> Failure {
    let at = if pointer.is_empty() { "/" } else { pointer };
    Failure {
        message: format!(
            "{}: {at}: {}: {message}",
            path.display(),
            CliCode::EvidenceInvalid
        ),
        exit: 1,
    }
}

/// The folder of `case` under `dir`: by its name, its folder's name, or
/// its position.
fn find_case(dir: &Path, case: &str) -> Result<PathBuf, Failure> {
    let entries = std::fs::read_dir(dir).map_err(|e| not_found(dir, e))?;
    let mut folders: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    folders.sort();
    let by_name = |folder: &&String| {
        folder.as_str() == case
            || folder.split_once('-').is_some_and(|(n, rest)| {
                rest == slug(case) || n.parse().ok() == case.parse::<u32>().ok().filter(|p| *p > 0)
            })
    };
    let found: Vec<&String> = folders.iter().filter(by_name).collect();
    match found.as_slice() {
        [one] => Ok(dir.join(one)),
        [] => Err(not_found(
            dir,
            format!("no case {case:?} (its name, its folder NN-NAME or its position from 1)"),
        )),
        many => Err(not_found(
            dir,
            format!(
                "{case:?} names {} folders ({}); give the folder",
                many.len(),
                many.iter()
                    .map(|f| f.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

/// The whole final state of `case`'s attempt `attempt` under `dir`.
pub(crate) fn final_state(
    dir: &Path,
    case: &str,
    attempt: u32,
) -> Result<Map<String, Value>, Failure> {
    let folder = find_case(dir, case)?;
    let path = folder.join(format!("attempt-{attempt}.jsonl"));
    let file = std::fs::File::open(&path).map_err(|e| not_found(&path, e))?;
    let mut last = None;
    for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| not_found(&path, e))?;
        // Only the `final_state` line is read whole.
        if !line.contains("\"final_state\"") {
            continue;
        }
        let value: Value = serde_json::from_str(&line)
            .map_err(|e| invalid(&path, "", format!("line {} is not JSON: {e}", n + 1)))?;
        if value.get("kind").and_then(Value::as_str) == Some("final_state") {
            last = Some(value);
        }
    }
    let Some(Value::Object(mut line)) = last else {
        return Err(invalid(&path, "", "no final_state line"));
    };
    if let Some(state) = line.remove("state") {
        return match state {
            Value::Object(state) => Ok(state),
            _ => Err(invalid(&path, "/state", "the state is not an object")),
        };
    }
    let overlay = line.get("overlay").ok_or_else(|| {
        invalid(
            &path,
            "",
            "the final_state line has neither state nor overlay",
        )
    })?;
    let overlay = Overlay::from_stored(overlay).ok_or_else(|| {
        invalid(
            &path,
            "/overlay",
            "not an overlay ({\"=\": value}, {\"+\": {member: …}} or {\"-\": true} at every member)",
        )
    })?;
    let hash = line
        .get("fixtures_hash")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(&path, "/fixtures_hash", "missing"))?;
    let base_path = dir.join(BASE_FILE);
    let text = std::fs::read(&base_path).map_err(|e| not_found(&base_path, e))?;
    let base: Value = serde_json::from_slice(&text)
        .map_err(|e| invalid(&base_path, "", format!("not JSON: {e}")))?;
    let Value::Object(mut base) = base else {
        return Err(invalid(&base_path, "", "not an object"));
    };
    let base_hash = base.get("fixtures_hash").and_then(Value::as_str);
    if base_hash != Some(hash) {
        return Err(invalid(
            &base_path,
            "/fixtures_hash",
            format!(
                "the base is of fixtures {}, the attempt's of {hash}",
                base_hash.unwrap_or("(none)")
            ),
        ));
    }
    let Some(Value::Object(state)) = base.remove("state") else {
        return Err(invalid(&base_path, "/state", "missing or not an object"));
    };
    Ok(StateView::layered(&state, &overlay).whole())
}
