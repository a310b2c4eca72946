//! `toolmock eval`.

use crate::{Failure, check, input};
use clap::Args;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::sync::mpsc;
use toolmock_evaluator::{
    CallError, CompiledContract, CompiledDefinition, Prepared, Rendering, Workspace,
};

/// Evaluate calls against a mock definition, threading the state from call to call.
///
/// CALLS is JSON Lines: one {"input": {...}, "variant": "name"?} object per
/// line (blank lines are skipped; any other line, an array included, is an
/// error naming its line number); `--calls -` reads standard input. Each
/// call prints one line:
///   {"ok": {"variant", "rule", "result", "state", "delay_ms"}}
///   {"domain_error": {"variant", "rule", "error": {"code", "message", "data"?}, "state", "delay_ms"}}
///   {"error": {"class": "tool_input_error"|"harness_error", "code", "message", "path"?}}
/// (`domain_error`: a version-2 variant or rule answered an error; it changes no state.)
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

/// A call read, parsed and prepared (see [`Prepared::new`]), ready to evaluate.
struct ParsedCall {
    input: Value,
    prepared: Prepared,
}

/// How many lines go to one parsing thread at a time. Each chunk costs a
/// few thread hand-offs, which on a busy machine cost far more than the
/// work they hand over: 1,024 took the yardstick's ~2,300 context switches
/// (at 256) down to ~500 and ran faster; 4,096 did not gain more.
const BATCH: usize = 1024;

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
    stream(
        BufReader::with_capacity(1 << 16, calls),
        std::io::stdout(),
        &definition,
        contract.as_ref(),
        &mut state,
        &calls_name,
    )?;
    Ok(0)
}

/// Evaluates every call in order, writing one line each.
///
/// Only what depends on the state has to happen in file order, so that is
/// all this thread does: one thread reads raw lines in chunks and deals them
/// out in turn to the parsing threads, which parse each call and
/// prepare it ([`Prepared::new`]: the input's checks, the variant and, with a contract,
/// every operator that reads the input alone); this thread takes the chunks back in that same
/// turn, evaluates them against the state in file order and hands each
/// chunk's lines to a writing thread. The state and the output are exactly
/// those of one thread doing everything. Parsed calls are freed by the thread
/// that parsed them.
fn stream(
    calls: impl BufRead + Send,
    out: impl Write + Send,
    definition: &CompiledDefinition,
    contract: Option<&CompiledContract>,
    state: &mut Map<String, Value>,
    calls_name: &str,
) -> Result<(), Failure> {
    // One core for the evaluating thread, the others parse: on 2 cores a
    // second parsing thread only added hand-offs (the yardstick used ~25 %
    // more CPU time with two than with one, and ran no faster).
    let parsers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .saturating_sub(1)
        .clamp(1, 3);
    // The result is written straight from the compiled definition; with a
    // contract it must also exist as a `Value` to be schema-validated, and
    // the input operators are rendered ahead. Without one the parsing thread
    // is the busier of the two, so they are rendered in place.
    let rendering = match contract {
        Some(_) => Rendering::JsonAndValue,
        None => Rendering::Nothing,
    };
    let prepare = Preparation {
        definition,
        contract,
        rendering,
        calls_name,
    };
    std::thread::scope(|scope| {
        let mut raw_senders = Vec::with_capacity(parsers);
        let mut parsed_receivers = Vec::with_capacity(parsers);
        let mut spent_senders = Vec::with_capacity(parsers);
        for _ in 0..parsers {
            let (raw_tx, raw_rx) = mpsc::sync_channel::<Chunk>(2);
            let (parsed_tx, parsed_rx) = mpsc::sync_channel::<Batch>(2);
            let (spent_tx, spent_rx) = mpsc::channel::<Batch>();
            scope.spawn(move || parse_chunks(&raw_rx, &parsed_tx, &spent_rx, &prepare));
            raw_senders.push(raw_tx);
            parsed_receivers.push(parsed_rx);
            spent_senders.push(spent_tx);
        }
        scope.spawn(move || read_chunks(calls, calls_name, &raw_senders));
        let (lines_tx, lines_rx) = mpsc::sync_channel::<Vec<u8>>(2);
        let (empty_tx, empty_rx) = mpsc::channel::<Vec<u8>>();
        let writer = scope.spawn(move || write_chunks(out, &lines_rx, &empty_tx));
        let evaluated = evaluate_all(
            &parsed_receivers,
            &spent_senders,
            &lines_tx,
            &empty_rx,
            definition,
            contract,
            state,
        );
        drop(lines_tx);
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the writing thread stopped")));
        evaluated?;
        crate::output::written(written, "cannot write the output")
    })
}

/// What a parsing thread needs to prepare the calls it parses.
#[derive(Clone, Copy)]
struct Preparation<'a> {
    definition: &'a CompiledDefinition,
    contract: Option<&'a CompiledContract>,
    rendering: Rendering,
    calls_name: &'a str,
}

/// The evaluating loop: batches in the parsers' turn, lines out in chunks.
/// Stops early, without an error, when the writing thread has stopped (its
/// error is the one reported).
fn evaluate_all(
    parsed: &[mpsc::Receiver<Batch>],
    spent: &[mpsc::Sender<Batch>],
    lines_out: &mpsc::SyncSender<Vec<u8>>,
    empty: &mpsc::Receiver<Vec<u8>>,
    definition: &CompiledDefinition,
    contract: Option<&CompiledContract>,
    state: &mut Map<String, Value>,
) -> Result<(), Failure> {
    let mut text = StateText::new(state);
    let mut result = Vec::with_capacity(1 << 12);
    let mut workspace = Workspace::new(definition);
    for turn in 0.. {
        let worker = turn % parsed.len();
        let Ok(batch) = parsed[worker].recv() else {
            break;
        };
        let mut lines = empty
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH * 1024));
        let mut failure = None;
        for call in &batch {
            match call {
                Ok(call) => evaluate_one(
                    call,
                    &mut lines,
                    &mut workspace,
                    contract,
                    state,
                    &mut text,
                    &mut result,
                ),
                Err(e) => {
                    failure = Some(e.clone());
                    break;
                }
            }
        }
        // Freed by the thread that parsed it; if it has stopped, here.
        let _ = spent[worker].send(batch);
        if lines_out.send(lines).is_err() {
            break;
        }
        if let Some(failure) = failure {
            return Err(failure);
        }
    }
    Ok(())
}

/// Writes the chunks of lines in order, handing each buffer back for reuse.
fn write_chunks(
    mut out: impl Write,
    lines: &mpsc::Receiver<Vec<u8>>,
    empty: &mpsc::Sender<Vec<u8>>,
) -> std::io::Result<()> {
    for mut chunk in lines {
        out.write_all(&chunk)?;
        chunk.clear();
        let _ = empty.send(chunk);
    }
    out.flush()
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
    preparation: &Preparation<'_>,
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
            match parse_line(line, preparation, chunk.first_line + i) {
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
fn parse_line(
    line: &[u8],
    preparation: &Preparation<'_>,
    number: usize,
) -> Option<Result<ParsedCall, Failure>> {
    let calls_name = preparation.calls_name;
    let first = line.iter().find(|b| !b.is_ascii_whitespace())?;
    let not_a_call = |why: String| {
        Failure::usage(format!(
            "{calls_name}:{number}: not a call ({{\"input\": {{...}}, \"variant\"?: \"name\"}}): {why}"
        ))
    };
    // serde would also read a struct from an array (`[{…}, "variant"]`);
    // docs/spec.md §11 reads one object per line, nothing else.
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
    // Checked as UTF-8 once for the whole line, the text is not checked again
    // string by string; a line that is not UTF-8 gets serde's own message.
    let call = match std::str::from_utf8(line) {
        Ok(text) => serde_json::from_str::<CallLine>(text),
        Err(_) => serde_json::from_slice::<CallLine>(line),
    };
    Some(
        call.map(|call| {
            let input = Value::Object(call.input);
            let prepared = Prepared::new(
                preparation.definition,
                preparation.contract,
                &input,
                call.variant.as_deref(),
                preparation.rendering,
            );
            ParsedCall { input, prepared }
        })
        .map_err(|e| not_a_call(e.to_string())),
    )
}

/// Evaluates one call and appends its line to `out`.
fn evaluate_one(
    call: &ParsedCall,
    out: &mut Vec<u8>,
    workspace: &mut Workspace<'_>,
    contract: Option<&CompiledContract>,
    state: &mut Map<String, Value>,
    text: &mut StateText,
    result: &mut Vec<u8>,
) {
    result.clear();
    let (input, prepared) = (&call.input, &call.prepared);
    let answer = match contract {
        Some(contract) => {
            prepared.evaluate_json_with_contract(workspace, contract, input, state, result)
        }
        None => prepared.evaluate_json(workspace.definition(), input, state, result),
    };
    match answer {
        Ok(outcome) if outcome.error.is_some() => {
            // A domain error changes no state: the state is the pre-call one.
            let (variant, rule, delay_ms) = (outcome.variant, outcome.rule, outcome.delay_ms);
            write_domain_error(out, variant, rule, outcome.error.as_ref(), text, delay_ms);
        }
        Ok(outcome) => {
            text.update(&outcome.state_updates);
            let (variant, rule, delay_ms) = (outcome.variant, outcome.rule, outcome.delay_ms);
            outcome.commit_to(state);
            write_ok(out, variant, rule, result, text, delay_ms);
        }
        Err(error) => write_error(out, &error),
    }
    out.push(b'\n');
}

/// The state's compact JSON, kept per top-level key in the state's own
/// (sorted) key order, so that a call re-serializes only the keys it sets
/// rather than the whole state.
struct StateText {
    /// Each key with its `"key":value` text.
    entries: Vec<(String, Vec<u8>)>,
}

impl StateText {
    fn new(state: &Map<String, Value>) -> StateText {
        StateText {
            entries: state
                .iter()
                .map(|(key, value)| (key.clone(), member(key, value)))
                .collect(),
        }
    }

    /// Replaces (or adds) each updated key's text.
    fn update(&mut self, updates: &[(&str, Value)]) {
        for (key, value) in updates {
            match self.entries.binary_search_by(|(k, _)| k.as_str().cmp(key)) {
                Ok(at) => {
                    let text = &mut self.entries[at].1;
                    text.clear();
                    write_member(text, key, value);
                }
                Err(at) => self
                    .entries
                    .insert(at, ((*key).to_owned(), member(key, value))),
            }
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        out.push(b'{');
        for (i, (_, text)) in self.entries.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(text);
        }
        out.push(b'}');
    }
}

fn member(key: &str, value: &Value) -> Vec<u8> {
    let mut text = Vec::new();
    write_member(&mut text, key, value);
    text
}

/// `"key":value`, exactly as `serde_json` writes a member of a compact object.
fn write_member(out: &mut Vec<u8>, key: &str, value: &Value) {
    // Writing into a `Vec` cannot fail.
    let _ = serde_json::to_writer(&mut *out, key);
    out.push(b':');
    let _ = serde_json::to_writer(&mut *out, value);
}

/// `{"ok": {"variant", "rule", "result", "state", "delay_ms"}}`, compact,
/// with the result already serialized.
fn write_ok(
    out: &mut Vec<u8>,
    variant: &str,
    rule: Option<usize>,
    result: &[u8],
    state: &StateText,
    delay_ms: u32,
) {
    out.extend_from_slice(b"{\"ok\":{\"variant\":");
    let _ = serde_json::to_writer(&mut *out, variant);
    out.extend_from_slice(b",\"rule\":");
    match rule {
        // Writing a number into a `Vec` cannot fail.
        Some(index) => {
            let _ = serde_json::to_writer(&mut *out, &index);
        }
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"result\":");
    out.extend_from_slice(result);
    out.extend_from_slice(b",\"state\":");
    state.write(out);
    out.extend_from_slice(b",\"delay_ms\":");
    let _ = serde_json::to_writer(&mut *out, &delay_ms);
    out.extend_from_slice(b"}}");
}

/// `{"domain_error": {"variant", "rule", "error": {"code", "message",
/// "data"?}, "state", "delay_ms"}}`, compact: a call that answered a
/// version-2 domain error (an answer, not a failed call).
fn write_domain_error(
    out: &mut Vec<u8>,
    variant: &str,
    rule: Option<usize>,
    error: Option<&toolmock_evaluator::DomainError>,
    state: &StateText,
    delay_ms: u32,
) {
    out.extend_from_slice(b"{\"domain_error\":{\"variant\":");
    // Writing into a `Vec` cannot fail.
    let _ = serde_json::to_writer(&mut *out, variant);
    out.extend_from_slice(b",\"rule\":");
    let _ = serde_json::to_writer(&mut *out, &rule);
    out.extend_from_slice(b",\"error\":");
    let _ = serde_json::to_writer(&mut *out, &error);
    out.extend_from_slice(b",\"state\":");
    state.write(out);
    out.extend_from_slice(b",\"delay_ms\":");
    let _ = serde_json::to_writer(&mut *out, &delay_ms);
    out.extend_from_slice(b"}}");
}

fn write_error(out: &mut Vec<u8>, error: &CallError) {
    let line = ErrorLine {
        error: ErrorBody {
            class: error.class().as_str(),
            code: error.code(),
            message: error.to_string(),
            path: error.path(),
        },
    };
    // Writing into a `Vec` cannot fail.
    let _ = serde_json::to_writer(out, &line);
}

#[cfg(test)]
mod tests {
    use super::StateText;
    use serde_json::{Map, Value, json};

    /// The state text kept per key is, after any updates (new keys, the
    /// empty key and keys that sort anywhere included), exactly the compact
    /// JSON `serde_json` writes for the state.
    #[test]
    fn the_kept_state_text_is_the_state_serialized() -> Result<(), serde_json::Error> {
        let mut state: Map<String, Value> =
            serde_json::from_value(json!({"b": [1, {"x": "é\n"}], "d": null, "a\"": 2}))?;
        let mut text = StateText::new(&state);
        let steps = [
            vec![("d", json!({"k": 1}))],
            vec![("c", json!("new")), ("", json!(0))],
            vec![("zz", json!([])), ("b", json!(false)), ("a\"", json!(1.5))],
        ];
        for updates in steps {
            text.update(&updates);
            for (key, value) in updates {
                state.insert(key.to_owned(), value);
            }
            let mut written = Vec::new();
            text.write(&mut written);
            assert_eq!(
                String::from_utf8_lossy(&written),
                serde_json::to_string(&state)?
            );
        }
        Ok(())
    }
}
