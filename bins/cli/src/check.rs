//! `toolmock check`.

use crate::{Failure, input};
use clap::Args;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use toolmock_evaluator::{CompiledContract, CompiledDefinition, Diagnostic, Diagnostics};

/// Check a mock definition against its operation contract.
///
/// Reports every problem at once, one line each, as
/// FILE: /json/pointer: code: message, then a count. Exits 0 when the
/// definition passes, 1 when it does not, 2 when a file cannot be used.
///
/// Every example is evaluated; its input is validated against the input
/// schema and its rendered result against the output schema, then compared
/// with `expected` (and `expected_state` when given).
///
/// Example:
///   toolmock check book.mock.json --contract book.contract.json
///   book.mock.json: /variants/success/delay_ms: delay_out_of_range: delay_ms 40000 is outside 0…30000
///   book.mock.json: 1 problem
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct CheckArgs {
    /// The mock definition (version 1).
    definition: PathBuf,
    /// The operation contract the definition mocks.
    #[arg(long)]
    contract: PathBuf,
    /// Print {"ok": bool, "diagnostics": [{"code", "path", "message"}]} instead of lines.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Report<'a> {
    ok: bool,
    diagnostics: &'a [Diagnostic],
}

/// Reads and checks a definition; `Err` carries the diagnostics.
pub(crate) fn check_file(
    path: &Path,
    contract: Option<&CompiledContract>,
) -> Result<Result<CompiledDefinition, Diagnostics>, Failure> {
    let bytes = input::read_file(path)?;
    Ok(toolmock_evaluator::parse_definition(&bytes)
        .and_then(|doc| toolmock_evaluator::compile_checked(&doc, contract)))
}

/// Prints diagnostics as compiler-style lines with a count at the end.
pub(crate) fn print_human(
    out: &mut impl Write,
    file: &Path,
    diagnostics: &Diagnostics,
) -> std::io::Result<()> {
    crate::output::print_problems(out, &file.display().to_string(), diagnostics)
}

pub(crate) fn run(args: &CheckArgs) -> Result<u8, Failure> {
    let contract = input::read_compiled_contract(&args.contract)?;
    let checked = check_file(&args.definition, Some(&contract))?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let name = args.definition.display();
    let written = match (&checked, args.json) {
        (Ok(_), true) => write_json(&mut out, &[]),
        (Err(diagnostics), true) => write_json(&mut out, diagnostics.as_slice()),
        (Ok(compiled), false) => {
            let n = compiled.variant_names().count();
            writeln!(
                out,
                "{name}: ok ({n} variant{})",
                if n == 1 { "" } else { "s" }
            )
        }
        (Err(diagnostics), false) => print_human(&mut out, &args.definition, diagnostics),
    };
    written.map_err(|e| Failure::usage(format!("cannot write the report: {e}")))?;
    Ok(if checked.is_ok() { 0 } else { 1 })
}

fn write_json(out: &mut impl Write, diagnostics: &[Diagnostic]) -> std::io::Result<()> {
    let report = Report {
        ok: diagnostics.is_empty(),
        diagnostics,
    };
    serde_json::to_writer(&mut *out, &report).map_err(std::io::Error::other)?;
    writeln!(out)
}
