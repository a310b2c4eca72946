//! JUnit XML of a verification: one testsuite per real tool; per operation
//! a testcase for its contract (a `<failure>` when it changed or is gone,
//! an `<error>` when it could not be read) and one per replayed call (a
//! `<failure>` when it diverged, an `<error>` when it could not be made,
//! `<skipped>` when it was not called).

use crate::run::junit::escape;
use std::fmt::Write as _;
use toolmock_verify::{CheckStatus, DriftStatus, Report};

/// Renders the report.
pub(super) fn render(file: &str, report: &Report) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let mut suites = String::new();
    let (mut all_tests, mut all_failures, mut all_errors, mut all_skipped) = (0, 0, 0, 0);
    for tool in &report.tools {
        let (mut tests, mut failures, mut errors, mut skipped) = (0, 0, 0, 0);
        let mut cases = String::new();
        for op in &tool.operations {
            let class = escape(&format!("{}.{}", tool.tool, op.operation));
            tests += 1;
            let _ = write!(
                cases,
                "    <testcase classname=\"{class}\" name=\"contract\""
            );
            match op.drift.status {
                DriftStatus::Changed | DriftStatus::Gone => {
                    failures += 1;
                    let changes: Vec<String> = op
                        .drift
                        .diff
                        .iter()
                        .flat_map(|d| {
                            d.input_schema
                                .iter()
                                .map(|c| format!("input_schema {}", c.path()))
                                .chain(
                                    d.output_schema
                                        .iter()
                                        .map(|c| format!("output_schema {}", c.path())),
                                )
                        })
                        .collect();
                    let status = if op.drift.status == DriftStatus::Gone {
                        "gone"
                    } else {
                        "changed"
                    };
                    let _ = write!(
                        cases,
                        ">\n      <failure message=\"the contract {status}\" type=\"drift\">{}</failure>\n    </testcase>\n",
                        escape(
                            &[
                                op.drift.message.clone().unwrap_or_default(),
                                changes.join("\n")
                            ]
                            .join("\n")
                        )
                    );
                }
                DriftStatus::Failed => {
                    errors += 1;
                    let _ = write!(
                        cases,
                        ">\n      <error message=\"{}\" type=\"{}\"/>\n    </testcase>\n",
                        escape(op.drift.message.as_deref().unwrap_or("")),
                        escape(op.drift.code.as_deref().unwrap_or("failed"))
                    );
                }
                DriftStatus::Unchecked => {
                    skipped += 1;
                    cases.push_str(">\n      <skipped message=\"no real contract to compare with\"/>\n    </testcase>\n");
                }
                DriftStatus::Unchanged => cases.push_str("/>\n"),
            }
            for check in &op.checks {
                tests += 1;
                let _ = write!(
                    cases,
                    "    <testcase classname=\"{class}\" name=\"{}\"",
                    escape(&check.name)
                );
                match check.status {
                    CheckStatus::Agreed => cases.push_str("/>\n"),
                    CheckStatus::Diverged => {
                        failures += 1;
                        let lines: Vec<String> = check
                            .divergences
                            .iter()
                            .map(|d| {
                                format!(
                                    "{}: {}: {}",
                                    if d.path.is_empty() { "/" } else { &d.path },
                                    d.kind.as_str(),
                                    d.message
                                )
                            })
                            .collect();
                        let _ = write!(
                            cases,
                            ">\n      <failure message=\"{} divergence(s)\" type=\"divergence\">{}</failure>\n    </testcase>\n",
                            check.divergences.len(),
                            escape(&lines.join("\n"))
                        );
                    }
                    CheckStatus::Failed => {
                        errors += 1;
                        let _ = write!(
                            cases,
                            ">\n      <error message=\"{}\" type=\"call_failed\"/>\n    </testcase>\n",
                            escape(check.message.as_deref().unwrap_or(""))
                        );
                    }
                    CheckStatus::Skipped => {
                        skipped += 1;
                        let _ = write!(
                            cases,
                            ">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                            escape(&format!(
                                "{}: {}",
                                check.reason.map_or("", |r| r.as_str()),
                                check.message.as_deref().unwrap_or("")
                            ))
                        );
                    }
                }
            }
        }
        let _ = write!(
            suites,
            "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\">\n{cases}  </testsuite>\n",
            escape(&tool.tool)
        );
        all_tests += tests;
        all_failures += failures;
        all_errors += errors;
        all_skipped += skipped;
    }
    let _ = write!(
        out,
        "<testsuites name=\"{}\" tests=\"{all_tests}\" failures=\"{all_failures}\" errors=\"{all_errors}\" skipped=\"{all_skipped}\">\n{suites}</testsuites>\n",
        escape(&format!("verify {file}"))
    );
    out
}
