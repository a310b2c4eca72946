//! `toolmock eval`.

use crate::{Failure, check, input};
use clap::Args;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use toolmock_evaluator::{
    Call, CallError, CompiledContract, CompiledDefinition, evaluate_json, evaluate_with_contract,
};

/// Evaluate calls against a mock definition, threading the state from call to call.
///
/// CALLS is JSON Lines: one {"input": {...}, "variant": "name"?} per line
/// (blank lines are skipped). Each call prints one line:
///   {"ok": {"variant", "rule", "result", "state", "delay_ms"}}
///   {"error": {"class": "tool_input_error"|"harness_error", "code", "message", "path"?}}
/// The definition is checked first; if it fails, its diagnostics are printed
/// on stderr, nothing is evaluated and the exit status is 1. A call that errs
/// is a line of output, not a failure: the exit status is 0 once every line
/// was processed, 2 for unusable arguments, unreadable files or a malformed
/// calls line. With --contract, inputs and results are schema-validated.
///
/// Example:
///   printf '{"input":{"member_id":"M-1"}}\n' > calls.jsonl
///   toolmock eval lookup.mock.json --calls calls.jsonl --contract lookup.contract.json
///   {"ok":{"variant":"found","rule":null,"result":{...},"state":{...},"delay_ms":0}}
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct EvalArgs {
    /// The mock definition (version 1).
    definition: PathBuf,
    /// The calls, one JSON object per line.
    #[arg(long)]
    calls: PathBuf,
    /// The operation contract: validates every input and result.
    #[arg(long)]
    contract: Option<PathBuf>,
    /// The state before the first call (an object); default: the definition's initial_state.
    #[arg(long)]
    state: Option<PathBuf>,
}

/// One line of the calls file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallLine {
    input: Map<String, Value>,
    #[serde(default)]
    variant: Option<String>,
}

#[derive(Serialize)]
struct ErrorLine<'a> {
    error: ErrorBody<'a>,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    class: &'static str,
    code: &'static str,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a str>,
}

pub(crate) fn run(args: &EvalArgs) -> Result<u8, Failure> {
    let contract = args
        .contract
        .as_deref()
        .map(input::read_compiled_contract)
        .transpose()?;
    let initial = match &args.state {
        Some(path) => {
            let bytes = input::read_file(path)?;
            match serde_json::from_slice::<Value>(&bytes) {
                Ok(Value::Object(map)) => Some(map),
                Ok(_) => {
                    return Err(Failure::usage(format!(
                        "{}: the state must be a JSON object",
                        path.display()
                    )));
                }
                Err(e) => {
                    return Err(Failure::usage(format!(
                        "{}: not valid JSON: {e}",
                        path.display()
                    )));
                }
            }
        }
        None => None,
    };
    let calls = std::fs::File::open(&args.calls)
        .map_err(|e| Failure::usage(format!("{}: cannot read: {e}", args.calls.display())))?;
    let definition = match check::check_file(&args.definition, contract.as_ref())? {
        Ok(definition) => definition,
        Err(diagnostics) => {
            let stderr = std::io::stderr();
            let _ = check::print_human(&mut stderr.lock(), &args.definition, &diagnostics);
            return Ok(1);
        }
    };
    let mut state = initial.unwrap_or_else(|| definition.initial_state().clone());
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let result = stream(
        BufReader::with_capacity(1 << 16, calls),
        &mut out,
        &definition,
        contract.as_ref(),
        &mut state,
        &args.calls,
    );
    let flushed = out.flush();
    result?;
    flushed.map_err(|e| Failure::usage(format!("cannot write the output: {e}")))?;
    Ok(0)
}

fn stream(
    calls: impl BufRead,
    out: &mut impl Write,
    definition: &CompiledDefinition,
    contract: Option<&CompiledContract>,
    state: &mut Map<String, Value>,
    calls_path: &std::path::Path,
) -> Result<(), Failure> {
    let write_failed = |e: std::io::Error| Failure::usage(format!("cannot write the output: {e}"));
    let mut result = Vec::with_capacity(1 << 12);
    for (number, line) in calls.split(b'\n').enumerate() {
        let line = line
            .map_err(|e| Failure::usage(format!("{}: cannot read: {e}", calls_path.display())))?;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let call: CallLine = serde_json::from_slice(&line).map_err(|e| {
            Failure::usage(format!(
                "{}:{}: not a call ({{\"input\": {{...}}, \"variant\"?: \"name\"}}): {e}",
                calls_path.display(),
                number + 1
            ))
        })?;
        let input = Value::Object(call.input);
        let request = Call {
            input: &input,
            state,
            variant: call.variant.as_deref(),
        };
        result.clear();
        let answer = match contract {
            // The result must exist as a `Value` to be schema-validated.
            Some(contract) => evaluate_with_contract(definition, contract, &request).map(|o| {
                let head = (o.variant, o.rule, o.delay_ms);
                let rendered = o.commit_to(state);
                // Writing a `Value` into a `Vec` cannot fail.
                let _ = serde_json::to_writer(&mut result, &rendered);
                head
            }),
            // Without a contract the result is written straight from the
            // compiled definition, without building it as a `Value`.
            None => evaluate_json(definition, &request, &mut result).map(|o| {
                let head = (o.variant, o.rule, o.delay_ms);
                o.commit_to(state);
                head
            }),
        };
        match answer {
            Ok((variant, rule, delay_ms)) => {
                write_ok(out, variant, rule, &result, state, delay_ms).map_err(write_failed)?;
            }
            Err(error) => write_error(out, &error).map_err(write_failed)?,
        }
        out.write_all(b"\n").map_err(write_failed)?;
    }
    Ok(())
}

/// `{"ok": {"variant", "rule", "result", "state", "delay_ms"}}`, compact,
/// with the result already serialized.
fn write_ok(
    out: &mut impl Write,
    variant: &str,
    rule: Option<usize>,
    result: &[u8],
    state: &Map<String, Value>,
    delay_ms: u32,
) -> std::io::Result<()> {
    out.write_all(b"{\"ok\":{\"variant\":")?;
    serde_json::to_writer(&mut *out, variant)?;
    match rule {
        Some(index) => write!(out, ",\"rule\":{index}")?,
        None => out.write_all(b",\"rule\":null")?,
    }
    out.write_all(b",\"result\":")?;
    out.write_all(result)?;
    out.write_all(b",\"state\":")?;
    serde_json::to_writer(&mut *out, state)?;
    write!(out, ",\"delay_ms\":{delay_ms}}}}}")
}

fn write_error(out: &mut impl Write, error: &CallError) -> std::io::Result<()> {
    let line = ErrorLine {
        error: ErrorBody {
            class: error.class().as_str(),
            code: error.code(),
            message: error.to_string(),
            path: error.path(),
        },
    };
    serde_json::to_writer(out, &line).map_err(std::io::Error::from)
}
