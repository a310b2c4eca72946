//! `toolmock eval`.

use crate::{Failure, check, input};
use clap::Args;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::PathBuf;
use std::sync::mpsc;
use toolmock_evaluator::{
    Call, CallError, CompiledContract, CompiledDefinition, evaluate_json, evaluate_with_contract,
};

/// Evaluate calls against a mock definition, threading the state from call to call.
///
/// CALLS is JSON Lines: one {"input": {...}, "variant": "name"?} object per
/// line (blank lines are skipped; any other line, an array included, is an
/// error naming its line number); `--calls -` reads standard input. Each
/// call prints one line:
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
    /// The calls, one JSON object per line; `-` for standard input.
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

/// A call read and parsed, ready to evaluate.
struct ParsedCall {
    input: Value,
    variant: Option<String>,
}

/// How many lines go to one parsing thread at a time.
const BATCH: usize = 256;

/// Parsed calls in file order; a line that is not a call ends the batch (and
/// the stream) with its error.
type Batch = Vec<Result<ParsedCall, Failure>>;

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
    let stdin = args.calls.as_os_str() == "-";
    let calls_name = if stdin {
        "standard input".to_owned()
    } else {
        args.calls.display().to_string()
    };
    let calls: Box<dyn Read + Send> = if stdin {
        Box::new(std::io::stdin())
    } else {
        Box::new(
            std::fs::File::open(&args.calls)
                .map_err(|e| Failure::usage(format!("{calls_name}: cannot read: {e}")))?,
        )
    };
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
        &calls_name,
    );
    let flushed = out.flush();
    result?;
    flushed.map_err(|e| Failure::usage(format!("cannot write the output: {e}")))?;
    Ok(0)
}

/// Evaluates every call in order, writing one line each.
///
/// Reading and parsing the calls is nearly half of the work, so it happens
/// beside the evaluation: one thread reads raw lines in chunks and deals them
/// out in turn to the parsing threads; this thread takes the parsed chunks
/// back in that same turn, so it evaluates in file order and the state and
/// the output are exactly those of one thread doing everything. Parsed calls
/// are freed by the thread that parsed them.
fn stream(
    calls: impl BufRead + Send,
    out: &mut impl Write,
    definition: &CompiledDefinition,
    contract: Option<&CompiledContract>,
    state: &mut Map<String, Value>,
    calls_name: &str,
) -> Result<(), Failure> {
    let parsers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(2, 4);
    std::thread::scope(|scope| {
        let mut raw_senders = Vec::with_capacity(parsers);
        let mut parsed_receivers = Vec::with_capacity(parsers);
        let mut spent_senders = Vec::with_capacity(parsers);
        for _ in 0..parsers {
            let (raw_tx, raw_rx) = mpsc::sync_channel::<Chunk>(2);
            let (parsed_tx, parsed_rx) = mpsc::sync_channel::<Batch>(2);
            let (spent_tx, spent_rx) = mpsc::channel::<Batch>();
            scope.spawn(move || parse_chunks(&raw_rx, &parsed_tx, &spent_rx, calls_name));
            raw_senders.push(raw_tx);
            parsed_receivers.push(parsed_rx);
            spent_senders.push(spent_tx);
        }
        scope.spawn(move || read_chunks(calls, calls_name, &raw_senders));
        let mut result = Vec::with_capacity(1 << 12);
        for turn in 0.. {
            let worker = turn % parsers;
            let Ok(batch) = parsed_receivers[worker].recv() else {
                break;
            };
            for call in &batch {
                let call = call.as_ref().map_err(Clone::clone)?;
                evaluate_one(call, out, definition, contract, state, &mut result)?;
            }
            // Freed by the thread that parsed it; if it has stopped, here.
            let _ = spent_senders[worker].send(batch);
        }
        Ok(())
    })
}

/// Raw lines for one parsing thread: the text, where each line ends, and the
/// number of the first line; or why reading stopped.
struct Chunk {
    first_line: usize,
    text: Vec<u8>,
    ends: Vec<usize>,
    failure: Option<Failure>,
}

/// Reads lines in chunks of [`BATCH`] and deals them out in turn; after the
/// last chunk (or a read error, sent as the last chunk), every parser's
/// channel is closed, which ends the evaluating loop at the right turn.
fn read_chunks(mut calls: impl BufRead, calls_name: &str, parsers: &[mpsc::SyncSender<Chunk>]) {
    let mut number = 1usize;
    for turn in 0.. {
        let mut chunk = Chunk {
            first_line: number,
            text: Vec::with_capacity(BATCH * 160),
            ends: Vec::with_capacity(BATCH),
            failure: None,
        };
        while chunk.ends.len() < BATCH {
            match calls.read_until(b'\n', &mut chunk.text) {
                Ok(0) => break,
                Ok(_) => chunk.ends.push(chunk.text.len()),
                Err(e) => {
                    chunk.failure = Some(Failure::usage(format!("{calls_name}: cannot read: {e}")));
                    break;
                }
            }
        }
        number += chunk.ends.len();
        let last = chunk.ends.len() < BATCH;
        if chunk.ends.is_empty() && chunk.failure.is_none() {
            return;
        }
        if parsers[turn % parsers.len()].send(chunk).is_err() || last {
            return;
        }
    }
}

/// Parses the chunks one parsing thread is dealt, in order; stops at the
/// first line that is not a call (after sending it) or when the evaluating
/// side has stopped listening.
fn parse_chunks(
    raw: &mpsc::Receiver<Chunk>,
    parsed: &mpsc::SyncSender<Batch>,
    spent: &mpsc::Receiver<Batch>,
    calls_name: &str,
) {
    for chunk in raw {
        while let Ok(batch) = spent.try_recv() {
            drop(batch);
        }
        let mut batch = Vec::with_capacity(chunk.ends.len() + 1);
        let mut start = 0;
        let mut stop = false;
        for (i, &end) in chunk.ends.iter().enumerate() {
            let line = &chunk.text[start..end];
            start = end;
            match parse_line(line, calls_name, chunk.first_line + i) {
                Some(Ok(call)) => batch.push(Ok(call)),
                Some(Err(failure)) => {
                    batch.push(Err(failure));
                    stop = true;
                    break;
                }
                None => {}
            }
        }
        if !stop && let Some(failure) = chunk.failure {
            batch.push(Err(failure));
            stop = true;
        }
        if parsed.send(batch).is_err() || stop {
            return;
        }
    }
}

/// One line: `None` when blank, else the call or why it is not one.
fn parse_line(line: &[u8], calls_name: &str, number: usize) -> Option<Result<ParsedCall, Failure>> {
    let first = line.iter().find(|b| !b.is_ascii_whitespace())?;
    let not_a_call = |why: String| {
        Failure::usage(format!(
            "{calls_name}:{number}: not a call ({{\"input\": {{...}}, \"variant\"?: \"name\"}}): {why}"
        ))
    };
    // serde would also read a struct from an array (`[{…}, "variant"]`);
    // SPEC §11 reads one object per line, nothing else.
    if *first != b'{' {
        return Some(Err(not_a_call(format!(
            "the line must be a JSON object, not {}",
            match first {
                b'[' => "an array",
                b'"' => "a string",
                b'-' | b'0'..=b'9' => "a number",
                b't' | b'f' => "a boolean",
                b'n' => "null",
                _ => "something else",
            }
        ))));
    }
    Some(
        serde_json::from_slice::<CallLine>(line)
            .map(|call| ParsedCall {
                input: Value::Object(call.input),
                variant: call.variant,
            })
            .map_err(|e| not_a_call(e.to_string())),
    )
}

/// Evaluates one call and writes its line.
fn evaluate_one(
    call: &ParsedCall,
    out: &mut impl Write,
    definition: &CompiledDefinition,
    contract: Option<&CompiledContract>,
    state: &mut Map<String, Value>,
    result: &mut Vec<u8>,
) -> Result<(), Failure> {
    let write_failed = |e: std::io::Error| Failure::usage(format!("cannot write the output: {e}"));
    let request = Call {
        input: &call.input,
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
            let _ = serde_json::to_writer(&mut *result, &rendered);
            head
        }),
        // Without a contract the result is written straight from the
        // compiled definition, without building it as a `Value`.
        None => evaluate_json(definition, &request, result).map(|o| {
            let head = (o.variant, o.rule, o.delay_ms);
            o.commit_to(state);
            head
        }),
    };
    match answer {
        Ok((variant, rule, delay_ms)) => {
            write_ok(out, variant, rule, result, state, delay_ms).map_err(write_failed)?;
        }
        Err(error) => write_error(out, &error).map_err(write_failed)?,
    }
    out.write_all(b"\n").map_err(write_failed)
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
