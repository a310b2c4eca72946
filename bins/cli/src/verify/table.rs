//! The human report of `toolmock verify`: one row per operation, then each
//! changed contract with its diff, each divergence by pointer, each call
//! that could not be made, and the totals. No times: the same tools print
//! the same report.

use std::io::Write;
use toolmock_verify::{CheckReport, CheckStatus, DriftStatus, OperationReport, Report};

fn drift(op: &OperationReport) -> &'static str {
    match op.drift.status {
        DriftStatus::Unchanged => "unchanged",
        DriftStatus::Changed => "changed",
        DriftStatus::Gone => "gone",
        DriftStatus::Unchecked => "unchecked",
        DriftStatus::Failed => "failed",
    }
}

fn replayed(op: &OperationReport) -> String {
    let mut parts = Vec::new();
    for (status, word) in [
        (CheckStatus::Agreed, "agreed"),
        (CheckStatus::Diverged, "diverged"),
        (CheckStatus::Failed, "failed"),
        (CheckStatus::Skipped, "not called"),
    ] {
        let n = op.count(status);
        if n > 0 {
            parts.push(format!("{n} {word}"));
        }
    }
    if parts.is_empty() {
        "nothing to replay".into()
    } else {
        parts.join(", ")
    }
}

fn place(check: &CheckReport) -> String {
    let path = if check.source.path.is_empty() {
        "/"
    } else {
        &check.source.path
    };
    format!("{} {path}", check.source.file)
}

/// Writes the report.
pub(super) fn write(out: &mut impl Write, file: &str, report: &Report) -> std::io::Result<()> {
    let s = &report.summary;
    writeln!(
        out,
        "verify {file}: {} tool{}, {} operation{}\n",
        s.tools,
        if s.tools == 1 { "" } else { "s" },
        s.operations,
        if s.operations == 1 { "" } else { "s" }
    )?;
    let rows: Vec<(String, &OperationReport)> = report
        .tools
        .iter()
        .flat_map(|t| {
            t.operations
                .iter()
                .map(move |o| (format!("{}/{}", t.tool, o.operation), o))
        })
        .collect();
    let width = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(0).max(14);
    let calls: Vec<String> = rows.iter().map(|(_, o)| replayed(o)).collect();
    let calls_width = calls.iter().map(String::len).max().unwrap_or(0).max(8);
    writeln!(
        out,
        " {:width$}  {:9}  {:calls_width$}  verdict",
        "tool/operation", "contract", "replayed"
    )?;
    for ((name, op), calls) in rows.iter().zip(&calls) {
        writeln!(
            out,
            " {name:width$}  {:9}  {calls:calls_width$}  {}",
            drift(op),
            op.verdict.as_str()
        )?;
    }
    let heading = |out: &mut dyn Write, title: &str, shown: &mut bool| {
        if !*shown {
            *shown = true;
            writeln!(out, "\n{title}")
        } else {
            Ok(())
        }
    };
    let mut shown = false;
    for (name, op) in &rows {
        match op.drift.status {
            DriftStatus::Changed | DriftStatus::Gone | DriftStatus::Failed => {
                heading(out, "contracts:", &mut shown)?;
            }
            _ => continue,
        }
        let from = op.drift.from.unwrap_or("");
        match (&op.drift.diff, &op.drift.message) {
            (Some(diff), _) => {
                writeln!(
                    out,
                    "  {name}: changed ({from}): {} -> {}",
                    diff.old_hash, diff.new_hash
                )?;
                crate::diff::write_changes(out, "    ", diff)?;
                if diff.description.is_some() {
                    writeln!(out, "    description changed")?;
                }
            }
            (None, Some(message)) => {
                let code = op
                    .drift
                    .code
                    .as_deref()
                    .map_or(String::new(), |c| format!("{c}: "));
                writeln!(out, "  {name}: {}: {code}{message}", drift(op))?;
            }
            (None, None) => writeln!(out, "  {name}: {}", drift(op))?,
        }
    }
    let mut shown = false;
    for (name, op) in &rows {
        for check in op
            .checks
            .iter()
            .filter(|c| c.status == CheckStatus::Diverged)
        {
            heading(out, "divergences:", &mut shown)?;
            writeln!(out, "  {name} {} ({}):", check.name, place(check))?;
            for d in &check.divergences {
                let path = if d.path.is_empty() { "/" } else { &d.path };
                writeln!(out, "    {path}: {}: {}", d.kind.as_str(), d.message)?;
            }
        }
    }
    let mut shown = false;
    for (name, op) in &rows {
        for check in op.checks.iter().filter(|c| c.status == CheckStatus::Failed) {
            heading(
                out,
                "not checked (the real tool could not be called):",
                &mut shown,
            )?;
            writeln!(
                out,
                "  {name} {} ({}): {}",
                check.name,
                place(check),
                check.message.as_deref().unwrap_or("")
            )?;
        }
    }
    writeln!(
        out,
        "\n{} operation{}: {} unchanged, {} changed, {} gone, {} unchecked{}; {} call{}: {} agreed, {} diverged, {} failed, {} not called",
        s.operations,
        if s.operations == 1 { "" } else { "s" },
        s.unchanged,
        s.changed,
        s.gone,
        s.unchecked,
        if s.drift_failed > 0 {
            format!(", {} failed", s.drift_failed)
        } else {
            String::new()
        },
        s.checks,
        if s.checks == 1 { "" } else { "s" },
        s.agreed,
        s.diverged,
        s.failed,
        s.skipped
    )
}
