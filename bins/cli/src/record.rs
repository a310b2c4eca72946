//! `toolmock record` and `toolmock record emit`: a thin shell over
//! `toolmock_mcp::record`.

use crate::Failure;
use clap::{ArgGroup, Args, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;
use toolmock_discovery::Endpoint;
use toolmock_mcp::CancellationToken;
use toolmock_mcp::record::{self, RecordError, RecordOptions, Redactor};

/// Record a real MCP server's traffic: a recording proxy over stdio.
///
/// Point an MCP client at this command as its stdio server. It connects to
/// the real server (--stdio spawns COMMAND, split like a shell would; --url
/// reaches a streamable HTTP endpoint), writes its tools' contracts to
/// DIR/contracts.json (as `toolmock discover` prints them), serves the same
/// tools to the client, forwards every tools/call and appends it to
/// DIR/calls.jsonl before the answer goes back. --redact PATH (repeatable;
/// a dot path such as patient.ssn, `*` for any key or index) replaces the
/// values there in arguments and structured results, and scrubs a redacted
/// string from every other string of the call, before anything is written.
/// Ends when the client closes stdin; a summary goes to stderr.
///
/// `toolmock record emit DIR` turns a recording into checked mock
/// definitions (see `toolmock record emit --help`).
///
/// Exits 0 when the recording ended, 2 when the server cannot be reached
/// or DIR cannot be written.
///
/// Example (an MCP client's server command):
///   toolmock record --stdio "python3 server.py" --out rec --redact patient.ssn
///   toolmock record emit rec --out mocks
///   toolmock serve mocks/simulation.json --stdio
#[derive(Debug, Args)]
#[command(verbatim_doc_comment, args_conflicts_with_subcommands = true)]
#[command(group(ArgGroup::new("endpoint").args(["stdio", "url"])))]
pub(crate) struct RecordArgs {
    #[command(subcommand)]
    emit: Option<RecordCommand>,
    /// The real server's command line, e.g. "python3 server.py --flag".
    #[arg(long, value_name = "COMMAND")]
    stdio: Option<String>,
    /// The real server's streamable HTTP endpoint.
    #[arg(long)]
    url: Option<String>,
    /// The recording folder (created; its recording files are replaced).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// A dot path whose values are redacted in arguments and results.
    #[arg(long, value_name = "PATH", num_args = 1..)]
    redact: Vec<String>,
    /// Give up connecting to and listing the real server after SECONDS.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    timeout: u64,
    /// How much of the real server's answers is read.
    #[command(flatten)]
    real: toolmock_discovery::RealToolFlags,
}

#[derive(Debug, Subcommand)]
enum RecordCommand {
    Emit(EmitArgs),
}

/// Turn a recording into mock definitions that pass `toolmock check`.
///
/// Per tool: its distinct recorded structured results become one result,
/// first-match rules keyed on the inputs that decide them (`eq` on the
/// fewest input paths that tell them apart), or, when the same input gave
/// different results, one variant each; a result value that the recording
/// proves to echo an input (equal in every call, seen with two different
/// values, from one input path only) is written as a `$input` reference;
/// the recorded calls are the examples. Each definition is checked
/// against the discovered contract before it is written. A tool that
/// cannot be emitted is listed with its code and why (needs_output_schema,
/// not_called, no_structured_results, check_failed with the check's
/// diagnostics, unlisted_tool).
///
/// Writes to --out (default DIR/mocks): NAME.mock.json and
/// NAME.contract.json per emitted tool, contracts.json, simulation.json
/// (servable by `toolmock serve`, case `replay`) and report.json. Prints
/// one line per tool. Exits 0 when every tool with calls was emitted, 1
/// when one was not, 2 when the recording cannot be read or is empty.
///
/// Example:
///   toolmock record emit rec --out mocks
///   toolmock check mocks/get_weather.mock.json --contract mocks/get_weather.contract.json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct EmitArgs {
    /// The recording folder `toolmock record --out` wrote.
    dir: PathBuf,
    /// Where to write the definitions (default DIR/mocks).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

fn failure(e: &RecordError) -> Failure {
    let at = e.path().map(|p| format!("{p}: ")).unwrap_or_default();
    Failure::usage(format!("{at}{}: {e}", e.code()))
}

pub(crate) fn run(args: &RecordArgs) -> Result<u8, Failure> {
    if let Some(RecordCommand::Emit(emit)) = &args.emit {
        return run_emit(emit);
    }
    let endpoint = match (&args.stdio, &args.url) {
        (Some(command), _) => Endpoint::stdio_command_line(command),
        (None, Some(url)) => Endpoint::http(url),
        (None, None) => {
            return Err(Failure::usage(
                "give the real server with --stdio COMMAND or --url URL (or use `record emit DIR`)",
            ));
        }
    }
    .map_err(|e| Failure::usage(format!("{}: {e}", e.code())))?;
    let Some(out) = &args.out else {
        return Err(Failure::usage("give the recording folder with --out DIR"));
    };
    let redactor = Redactor::new(&args.redact).map_err(|e| failure(&e))?;
    let options = RecordOptions {
        endpoint,
        out: out.clone(),
        redactor,
        timeout: Duration::from_secs(args.timeout.max(1)),
        max_response_bytes: args.real.real_max_response_bytes,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::usage(format!("cannot start the runtime: {e}")))?;
    let stop = CancellationToken::new();
    let recorded = runtime.block_on(async {
        let on_signal = stop.clone();
        tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            on_signal.cancel();
        });
        record::record_stdio(&options, stop).await
    });
    // A stdin read cannot be cancelled: do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(200));
    let recorded = recorded.map_err(|e| failure(&e))?;
    let _ = writeln!(
        std::io::stderr(),
        "toolmock: recorded {} call(s) of {} tool(s) into {}",
        recorded.calls,
        recorded.tools,
        out.display()
    );
    Ok(0)
}

fn run_emit(args: &EmitArgs) -> Result<u8, Failure> {
    let out = args.out.clone().unwrap_or_else(|| args.dir.join("mocks"));
    let report = record::emit(&args.dir, &out).map_err(|e| failure(&e))?;
    let stdout = std::io::stdout();
    let mut lines = stdout.lock();
    let mut missed = false;
    for op in &report.operations {
        let printed = match op.code {
            None => writeln!(lines, "{}: emitted: {}", op.operation, op.message),
            Some(code) => {
                missed |= op.calls > 0;
                let mut text = format!("{}: skipped: {code}: {}", op.operation, op.message);
                for d in &op.diagnostics {
                    let path = if d.path.is_empty() { "/" } else { &d.path };
                    text.push_str(&format!("\n  {path}: {}: {}", d.code, d.message));
                }
                writeln!(lines, "{text}")
            }
        };
        crate::output::written(printed, "cannot write the report")?;
    }
    let emitted = report.emitted();
    let written = writeln!(
        lines,
        "toolmock: {emitted} of {} tool(s) emitted into {}",
        report.operations.len(),
        out.display()
    );
    crate::output::written(written, "cannot write the report")?;
    Ok(if missed { 1 } else { 0 })
}
