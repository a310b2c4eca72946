//! `toolmock compare`.

use crate::Failure;
use clap::Args;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use toolmock_simulation::compare::{
    CaseComparison, CaseSide, Change, compare_cases, results_cases,
};

/// Compare two results documents of the same suite, case by case.
///
/// BASE and HEAD are two `toolmock run --json` documents (or the API's
/// results) of the same suite — before and after a prompt change or a model
/// upgrade. Per case: the pass rate, pass^k, tokens and cost on each side
/// and the change; a case that held (pass^k) before and does not now is a
/// regression, and regressions are listed first, then the other cases in
/// HEAD's order (cases only one side has are `added` or `removed`).
///
/// Exits 0, or 1 with --fail-on regression when there is a regression; 2
/// when a document cannot be read.
///
/// Example:
///   toolmock compare before.json after.json --fail-on regression --junit compare.xml
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct CompareArgs {
    /// The results before the change.
    base: PathBuf,
    /// The results after it.
    head: PathBuf,
    /// Print the comparison as one JSON document instead of the table.
    #[arg(long)]
    json: bool,
    /// Exit 1 when a case regressed.
    #[arg(long, value_name = "WHAT", value_parser = ["regression"])]
    fail_on: Option<String>,
    /// Also write JUnit XML (one testcase per case; a regression fails).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
}

fn read(path: &Path) -> Result<Vec<(String, Value)>, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::usage(format!("{}: cannot read: {e}", path.display())))?;
    let document: Value = serde_json::from_str(&text)
        .map_err(|e| Failure::usage(format!("{}: not JSON: {e}", path.display())))?;
    results_cases(&document).ok_or_else(|| {
        Failure::usage(format!(
            "{}: not a results document (no cases)",
            path.display()
        ))
    })
}

fn rate(side: Option<&CaseSide>) -> String {
    side.map_or_else(|| "-".into(), |s| format!("{:.0}%", s.pass_rate * 100.0))
}

fn tokens(side: Option<&CaseSide>) -> String {
    side.and_then(|s| s.tokens)
        .map_or_else(|| "-".into(), |t| t.to_string())
}

fn table(rows: &[CaseComparison]) -> String {
    let width = rows
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = format!(
        "{:<width$}  {:<10}  {:>9}  {:>9}  {:>7}  {:>7}  {:>9}  {:>9}\n",
        "case", "change", "base rate", "head rate", "base k", "head k", "base tok", "head tok"
    );
    let k = |s: Option<&CaseSide>| {
        s.map_or_else(
            || "-".to_owned(),
            |s| if s.pass_k { "yes".into() } else { "no".into() },
        )
    };
    for r in rows {
        let _ = writeln!(
            out,
            "{:<width$}  {:<10}  {:>9}  {:>9}  {:>7}  {:>7}  {:>9}  {:>9}",
            r.name,
            r.change.as_str(),
            rate(r.base.as_ref()),
            rate(r.head.as_ref()),
            k(r.base.as_ref()),
            k(r.head.as_ref()),
            tokens(r.base.as_ref()),
            tokens(r.head.as_ref()),
        );
    }
    let regressions = rows
        .iter()
        .filter(|r| r.change == Change::Regression)
        .count();
    let fixed = rows.iter().filter(|r| r.change == Change::Fixed).count();
    let _ = writeln!(
        out,
        "\n{regressions} regression(s), {fixed} fixed, {} case(s)",
        rows.len()
    );
    out
}

fn junit(rows: &[CaseComparison]) -> String {
    use crate::run::junit::escape;
    let failures = rows
        .iter()
        .filter(|r| r.change == Change::Regression)
        .count();
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"compare\" tests=\"{}\" failures=\"{failures}\" errors=\"0\">\n  <testsuite name=\"compare\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\">\n",
        rows.len(),
        rows.len()
    );
    for r in rows {
        let _ = write!(
            out,
            "    <testcase classname=\"compare\" name=\"{}\"",
            escape(&r.name)
        );
        if r.change == Change::Regression {
            let _ = writeln!(
                out,
                ">\n      <failure message=\"held before, not now: pass rate {} -> {}\" type=\"regression\"/>\n    </testcase>",
                rate(r.base.as_ref()),
                rate(r.head.as_ref())
            );
        } else {
            out.push_str("/>\n");
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

pub(crate) fn run(args: &CompareArgs) -> Result<u8, Failure> {
    let rows = compare_cases(&read(&args.base)?, &read(&args.head)?);
    let regressions = rows
        .iter()
        .filter(|r| r.change == Change::Regression)
        .count();
    let text = if args.json {
        format!("{:#}\n", json!({"regressions": regressions, "cases": rows}))
    } else {
        table(&rows)
    };
    crate::output::written(
        std::io::stdout().lock().write_all(text.as_bytes()),
        "cannot write the output",
    )?;
    if let Some(path) = &args.junit {
        std::fs::write(path, junit(&rows))
            .map_err(|e| Failure::usage(format!("{}: cannot write: {e}", path.display())))?;
    }
    Ok(u8::from(args.fail_on.is_some() && regressions > 0))
}
