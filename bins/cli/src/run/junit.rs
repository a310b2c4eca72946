//! JUnit XML: one testsuite per case, one testcase per attempt; an attempt
//! that ended otherwise than expected is a `<failure>` when it failed or
//! passed unexpectedly, an `<error>` when it hit an unexpected harness error.
//! A model-driven attempt's testcase holds its conversation, who said what,
//! as `<system-out>`.

use std::fmt::Write as _;
use toolmock_runtime::model::AttemptOutcome;
use toolmock_simulation::{Message, RunResults};

/// Escapes text for XML attributes and character data; drops characters XML 1.0 forbids.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {}
            c => out.push(c),
        }
    }
    out
}

/// An attempt's model tokens (and cost, when priced) as JUnit properties.
fn properties(tokens: &toolmock_simulation::TokenUsage) -> String {
    let mut out = String::from("      <properties>\n");
    let mut property = |name: &str, value: String| {
        let _ = writeln!(out, "        <property name=\"{name}\" value=\"{value}\"/>");
    };
    property("model_requests", tokens.requests.to_string());
    property("prompt_tokens", tokens.prompt_tokens.to_string());
    property("completion_tokens", tokens.completion_tokens.to_string());
    if let Some(cached) = tokens.cached_tokens {
        property("cached_tokens", cached.to_string());
    }
    if let Some(cost) = tokens.cost {
        property("cost", format!("{cost}"));
    }
    if tokens.replayed_requests > 0 {
        property("replayed_requests", tokens.replayed_requests.to_string());
        property("replayed_tokens", tokens.replayed_tokens.to_string());
    }
    out.push_str("      </properties>\n");
    out
}

/// A model-driven attempt's conversation as `<system-out>`: who said what,
/// one line each (`user: …`, `assistant: …`, an assistant's or a simulated
/// user's tool calls as `assistant calls NAME ARGUMENTS`); empty for an
/// attempt without a conversation. The system message and tool results are
/// in `--evidence` and `--json`.
fn transcript(conversation: &[Message]) -> String {
    let mut lines = String::new();
    for message in conversation {
        let (role, content, calls) = match message {
            Message::User {
                content,
                stop,
                tool_calls,
            } => {
                let mut text = content.clone();
                if let Some(marker) = stop {
                    let _ = write!(text, " [stop: {marker}]");
                }
                ("user", Some(text), tool_calls.as_slice())
            }
            Message::Assistant {
                content,
                tool_calls,
            } => ("assistant", content.clone(), tool_calls.as_slice()),
            Message::System { .. } | Message::Tool { .. } => continue,
        };
        if let Some(text) = content.filter(|t| !t.is_empty()) {
            let _ = writeln!(lines, "{role}: {text}");
        }
        for call in calls {
            let _ = writeln!(lines, "{role} calls {} {}", call.name, call.arguments);
        }
    }
    if lines.is_empty() {
        return lines;
    }
    format!("      <system-out>{}</system-out>\n", escape(&lines))
}

/// Renders the report.
pub(crate) fn render(results: &RunResults) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let (mut failures, mut errors) = (0, 0);
    let mut suites = String::new();
    let mut all_time = 0.0;
    for case in &results.cases {
        let (mut f, mut e) = (0, 0);
        let mut cases = String::new();
        let mut time = 0.0;
        for a in &case.attempts {
            let secs = a.wall.as_secs_f64();
            time += secs;
            let _ = write!(
                cases,
                "    <testcase classname=\"{}\" name=\"{} #{}\" time=\"{secs:.6}\"",
                escape(&format!("{}.{}", results.simulation, case.name)),
                escape(&case.name),
                a.number
            );
            let properties = a.tokens.as_ref().map_or_else(String::new, properties);
            let said = transcript(&a.conversation);
            if a.as_expected {
                if properties.is_empty() && said.is_empty() {
                    cases.push_str("/>\n");
                } else {
                    let _ = write!(cases, ">\n{properties}{said}    </testcase>\n");
                }
                continue;
            }
            let why = a.first_problem().unwrap_or_else(|| {
                format!(
                    "ended {} but the case expects {}",
                    a.outcome.as_str(),
                    case.expected_outcome.as_str()
                )
            });
            let details: Vec<String> = a
                .unmet
                .iter()
                .map(|u| format!("{}: {}: {}", u.at, u.code, u.message))
                .chain(a.harness_errors.iter().map(|h| h.describe()))
                .collect();
            let (tag, kind) = if a.outcome == AttemptOutcome::HarnessError {
                e += 1;
                ("error", "harness_error")
            } else {
                f += 1;
                (
                    "failure",
                    if a.outcome == AttemptOutcome::Passed {
                        "unexpected_pass"
                    } else {
                        "failed"
                    },
                )
            };
            let _ = write!(
                cases,
                ">\n{properties}      <{tag} message=\"{}\" type=\"{kind}\">{}</{tag}>\n{said}    </testcase>\n",
                escape(&why),
                escape(&details.join("\n"))
            );
        }
        failures += f;
        errors += e;
        all_time += time;
        let _ = write!(
            suites,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{f}\" errors=\"{e}\" skipped=\"0\" time=\"{time:.6}\">\n{cases}  </testsuite>\n",
            escape(&case.name),
            case.attempts.len()
        );
    }
    let _ = write!(
        out,
        "<testsuites name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{all_time:.6}\">\n{suites}</testsuites>\n",
        escape(&results.simulation),
        results.summary.attempts
    );
    out
}
