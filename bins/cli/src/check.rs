//! `toolmock check`.

use crate::{Failure, input};
use clap::Args;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use toolmock_contract::Problem;
use toolmock_evaluator::{
    CompiledContract, CompiledDefinition, Diagnostic, Diagnostics, WarningCode, Warnings,
};

/// Check a mock definition against its operation contract.
///
/// Reports every problem at once, one line each, as
/// FILE: /json/pointer: code: message, then a count. Exits 0 when the
/// definition passes, 1 when it does not, 2 when a file cannot be used.
/// The report is this command's output, so it goes to stdout (every other
/// command prints its problems on stderr, beside the data it writes).
///
/// A definition that passes is then looked at for warnings, printed as
/// FILE: /json/pointer: warning: code: message: a `$input` reference the
/// input schema does not guarantee (optional_input_reference) and a rule an
/// earlier rule always answers first (unreachable_rule). They do not fail
/// the check unless --deny-warnings is given.
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
    /// Print {"ok": bool, "diagnostics": [{"code", "path", "message",
    /// "severity": "error"|"warning"}]} instead of lines.
    #[arg(long)]
    json: bool,
    /// Fail the check (exit 1) when there is any warning.
    #[arg(long)]
    deny_warnings: bool,
}

#[derive(Serialize)]
struct Report<'a> {
    ok: bool,
    diagnostics: Vec<Entry<'a>>,
}

/// One line of the `--json` report: a problem and how severe it is.
#[derive(Serialize)]
struct Entry<'a> {
    code: &'static str,
    path: &'a str,
    message: &'a str,
    severity: &'static str,
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
    let bytes = input::read_file(&args.definition)?;
    let checked = toolmock_evaluator::parse_definition(&bytes).and_then(|doc| {
        toolmock_evaluator::compile_checked(&doc, Some(&contract)).map(|compiled| {
            (
                toolmock_evaluator::warnings(&doc, Some(&contract)),
                compiled,
            )
        })
    });
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let name = args.definition.display().to_string();
    let passed = match &checked {
        Ok((warnings, _)) => warnings.is_empty() || !args.deny_warnings,
        Err(_) => false,
    };
    let written = match (&checked, args.json) {
        (Ok((warnings, _)), true) => write_json(&mut out, passed, &[], warnings.as_slice()),
        (Err(diagnostics), true) => write_json(&mut out, false, diagnostics.as_slice(), &[]),
        (Ok((warnings, compiled)), false) => {
            print_warnings(&mut out, &name, warnings).and_then(|()| {
                let n = compiled.variant_names().count();
                let w = warnings.len();
                let plural = |n: usize| if n == 1 { "" } else { "s" };
                if passed && w == 0 {
                    writeln!(out, "{name}: ok ({n} variant{})", plural(n))
                } else if passed {
                    writeln!(
                        out,
                        "{name}: ok ({n} variant{}), {w} warning{}",
                        plural(n),
                        plural(w)
                    )
                } else {
                    writeln!(
                        out,
                        "{name}: {w} warning{}, denied by --deny-warnings",
                        plural(w)
                    )
                }
            })
        }
        (Err(diagnostics), false) => print_human(&mut out, &args.definition, diagnostics),
    };
    crate::output::written(written, "cannot write the report")?;
    Ok(if passed { 0 } else { 1 })
}

/// Prints warnings as `FILE: /json/pointer: warning: code: message`.
fn print_warnings(out: &mut impl Write, name: &str, warnings: &Warnings) -> std::io::Result<()> {
    for w in warnings {
        writeln!(
            out,
            "{name}: {}: warning: {}: {}",
            w.display_path(),
            w.code,
            w.message
        )?;
    }
    Ok(())
}

fn write_json(
    out: &mut impl Write,
    ok: bool,
    errors: &[Diagnostic],
    warnings: &[Problem<WarningCode>],
) -> std::io::Result<()> {
    let diagnostics = errors
        .iter()
        .map(|d| Entry {
            code: d.code.as_str(),
            path: &d.path,
            message: &d.message,
            severity: "error",
        })
        .chain(warnings.iter().map(|w| Entry {
            code: w.code.as_str(),
            path: &w.path,
            message: &w.message,
            severity: "warning",
        }))
        .collect();
    let report = Report { ok, diagnostics };
    serde_json::to_writer(&mut *out, &report).map_err(std::io::Error::other)?;
    writeln!(out)
}
