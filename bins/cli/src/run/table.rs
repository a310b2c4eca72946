//! The human report: cases × attempts, failures, coverage. Deterministic
//! (no timings): the wall time goes to stderr.

use std::fmt::Write as _;
use toolmock_runtime::model::AttemptOutcome;
use toolmock_simulation::{CaseResult, RunResults};

fn outcomes(case: &CaseResult) -> String {
    let mut counts: Vec<(AttemptOutcome, usize)> = Vec::new();
    for a in &case.attempts {
        match counts.iter_mut().find(|(o, _)| *o == a.outcome) {
            Some((_, n)) => *n += 1,
            None => counts.push((a.outcome, 1)),
        }
    }
    if case.attempts.len() == 1 {
        return counts
            .first()
            .map_or_else(String::new, |(o, _)| o.as_str().to_owned());
    }
    counts
        .iter()
        .map(|(o, n)| format!("{} x{n}", o.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn plural(n: u64, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

/// Renders the table.
pub(crate) fn render(results: &RunResults) -> String {
    let mut out = String::new();
    let s = &results.summary;
    // A case may set its own `attempts`: the header says what ran.
    let per_case = results
        .cases
        .first()
        .map_or(results.attempts_per_case as usize, |c| c.attempts.len());
    let attempts = if results.cases.iter().all(|c| c.attempts.len() == per_case) {
        format!(" x {}", plural(per_case as u64, "attempt"))
    } else {
        format!(", {} in all", plural(u64::from(s.attempts), "attempt"))
    };
    let _ = writeln!(
        out,
        "{}: {}{attempts} ({})",
        results.simulation,
        plural(u64::from(s.cases), "case"),
        results.mode.as_str()
    );
    let _ = writeln!(out);
    let width = results
        .cases
        .iter()
        .map(|c| c.name.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let outcome_width = results
        .cases
        .iter()
        .map(|c| outcomes(c).len())
        .max()
        .unwrap_or(7)
        .max(7);
    // The tokens column only when some model reported usage.
    let tokens = s.tokens.is_some();
    let _ = writeln!(
        out,
        "     {:<width$}  {:<outcome_width$}  {:<13}  {:>9}  pass^k{}",
        "case",
        "outcome",
        "expected",
        "pass rate",
        if tokens { "  tokens" } else { "" }
    );
    for case in &results.cases {
        let ok = case.attempts_as_expected as usize == case.attempts.len();
        let pass_k = if case.pass_k.passed { "yes" } else { "no" };
        let last = match (&case.tokens, tokens) {
            (Some(t), true) => format!("{pass_k:<6}  {:>6}", t.total()),
            (None, true) => format!("{pass_k:<6}  {:>6}", "-"),
            (_, false) => pass_k.to_owned(),
        };
        let _ = writeln!(
            out,
            "{}  {:<width$}  {:<outcome_width$}  {:<13}  {:>9}  {last}",
            if ok { " ok " } else { "FAIL" },
            case.name,
            outcomes(case),
            case.expected_outcome.as_str(),
            format!("{:.0}%", case.pass_rate * 100.0),
        );
    }
    let failures: Vec<(&CaseResult, String)> = results
        .cases
        .iter()
        .flat_map(|c| {
            c.attempts.iter().filter(|a| !a.as_expected).map(move |a| {
                let why = a.first_problem().unwrap_or_else(|| {
                    format!(
                        "ended {} but the case expects {}",
                        a.outcome.as_str(),
                        c.expected_outcome.as_str()
                    )
                });
                (c, format!("attempt {}: {why}", a.number))
            })
        })
        .collect();
    if !failures.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "failures:");
        for (case, line) in failures {
            let _ = writeln!(out, "  {}, {line}", case.name);
        }
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{} as expected of {} (passed {}, failed {}, harness_error {}); virtual time {:.3} s",
        s.as_expected,
        plural(u64::from(s.attempts), "attempt"),
        s.passed,
        s.failed,
        s.harness_error,
        s.virtual_time_ms as f64 / 1000.0
    );
    if let Some(t) = &s.tokens {
        let cached = t
            .cached_tokens
            .map_or_else(String::new, |c| format!(", {c} cached"));
        let cost = t
            .cost
            .map_or_else(String::new, |c| format!("; cost {c:.4}"));
        // Answers a cassette replayed beside live requests (`auto`).
        let replayed = if t.replayed_requests > 0 {
            format!(
                ", {} replayed ({} tokens)",
                t.replayed_requests, t.replayed_tokens
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "tokens: {} in {} (prompt {}{cached}, completion {}){replayed}{cost}",
            t.total(),
            plural(u64::from(t.requests), "model request"),
            t.prompt_tokens,
            t.completion_tokens
        );
    }
    let pinned = results.coverage.iter().filter(|c| c.pinned).count();
    let branches: u64 = results.coverage.iter().map(|c| c.branches).sum();
    let exercised: u64 = results.coverage.iter().map(|c| c.exercised).sum();
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "coverage: {}, {exercised} of {branches} variant/rule branches exercised",
        plural(pinned as u64, "pinned operation"),
    );
    let name_width = results
        .coverage
        .iter()
        .map(|c| c.tool.len() + c.operation.len() + 1)
        .max()
        .unwrap_or(0);
    // A pinned definition shows as its hash's first 12 digits, which the
    // embedded runtime (library revisions of its own) and the API (the
    // file's tools inline) give alike; an unpinned one as why.
    let pins: Vec<&str> = results
        .coverage
        .iter()
        .map(|c| match &c.definition_hash {
            Some(hash) => hash.get(..12).unwrap_or(hash),
            None => c.pin.as_str(),
        })
        .collect();
    let pin_width = pins.iter().map(|p| p.len()).max().unwrap_or(0);
    for (c, pin) in results.coverage.iter().zip(pins) {
        let name = format!("{}/{}", c.tool, c.operation);
        let _ = write!(
            out,
            "  {name:<name_width$}  {pin:<pin_width$}  {:>9}",
            plural(c.calls, "call")
        );
        if c.never.is_empty() {
            let _ = writeln!(out, "  all exercised");
        } else {
            let _ = writeln!(out, "  never: {}", c.never.join(", "));
        }
    }
    // The service's word on the mocks themselves (docs/verify.md).
    if !results.diverged_mocks.is_empty() {
        let _ = writeln!(
            out,
            "\ndiverged: {} pinned mock(s) no longer agree with the real tool (their latest verification)",
            results.diverged_mocks.len()
        );
        for d in &results.diverged_mocks {
            let _ = writeln!(
                out,
                "  {}/{}  {}  {}  verification {} at {}",
                d.tool,
                d.operation,
                d.definition_hash.get(..12).unwrap_or(&d.definition_hash),
                plural(u64::from(d.divergences), "divergence"),
                d.verification,
                d.verified_at
            );
        }
    }
    out
}
