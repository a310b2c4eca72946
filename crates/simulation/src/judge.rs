//! Expectations over a conversation: `final_answer` (judged here, over the
//! recorded messages only) and `judge` (a rubric graded by a separately
//! configured judge model over the recorded conversation and calls).

use crate::conversation::{ChatModel, Message, ModelError, ModelRequest, Usage};
use crate::document::{AgentSaidExpect, FinalAnswerExpect, JudgeExpect};
use crate::expect::{RecordedCall, Unmet};
use crate::results::JudgeReport;
use serde_json::{Value, json};
use toolmock_contract::pointer;
use toolmock_runtime::error::HarnessCode;

/// The agent's final answer: the last assistant message without tool calls.
pub(crate) fn final_answer(conversation: &[Message]) -> Option<&str> {
    conversation.iter().rev().find_map(|m| match m {
        Message::Assistant {
            content,
            tool_calls,
        } if tool_calls.is_empty() => Some(content.as_deref().unwrap_or("")),
        _ => None,
    })
}

/// Every part of `expect` that the final answer does not hold, at `at`
/// (`/cases/N/expect/final_answer`).
pub(crate) fn judge_final_answer(
    expect: &FinalAnswerExpect,
    conversation: &[Message],
    at: &str,
) -> Vec<Unmet> {
    let Some(answer) = final_answer(conversation) else {
        return vec![Unmet::new(
            at,
            "no_final_answer",
            "the agent gave no final answer (an answer without tool calls)",
        )];
    };
    let mut unmet = Vec::new();
    for (i, text) in expect.contains.iter().enumerate() {
        if !answer.contains(text.as_str()) {
            unmet.push(Unmet::new(
                pointer::index(&pointer::push(at, "contains"), i),
                "final_answer_contains",
                format!("the final answer does not contain {text:?}: {answer:?}"),
            ));
        }
    }
    for (i, text) in expect.not_contains.iter().enumerate() {
        if answer.contains(text.as_str()) {
            unmet.push(Unmet::new(
                pointer::index(&pointer::push(at, "not_contains"), i),
                "final_answer_not_contains",
                format!("the final answer contains {text:?}: {answer:?}"),
            ));
        }
    }
    if let Some(pattern) = &expect.matches {
        let here = pointer::push(at, "matches");
        match regex::Regex::new(pattern) {
            Ok(re) if re.is_match(answer) => {}
            Ok(_) => unmet.push(Unmet::new(
                here,
                "final_answer_matches",
                format!("the final answer does not match {pattern:?}: {answer:?}"),
            )),
            // The loader refuses such patterns; a document that skipped it fails here.
            Err(e) => unmet.push(Unmet::new(here, "invalid_regex", e.to_string())),
        }
    }
    unmet
}

/// Every text of `expect` that no assistant message of `conversation`
/// holds, at `at` (`/cases/N/expect/agent_said`): compared without regard
/// to case, the message's commas left out.
pub(crate) fn judge_agent_said(
    expect: &AgentSaidExpect,
    conversation: &[Message],
    at: &str,
) -> Vec<Unmet> {
    let said: Vec<String> = conversation
        .iter()
        .filter_map(|m| match m {
            Message::Assistant {
                content: Some(text),
                ..
            } => Some(text.to_lowercase().replace(',', "")),
            _ => None,
        })
        .collect();
    expect
        .contains
        .iter()
        .enumerate()
        .filter(|(_, text)| {
            let wanted = text.to_lowercase();
            !said.iter().any(|s| s.contains(&wanted))
        })
        .map(|(i, text)| {
            Unmet::new(
                pointer::index(&pointer::push(at, "contains"), i),
                "agent_said_contains",
                format!("no message of the agent says {text:?}"),
            )
        })
        .collect()
}

const JUDGE_INSTRUCTIONS: &str = "You grade a conversation between a user and an AI agent that uses tools. \
The tool results are recorded facts from a test harness; never invent or assume other results. \
Grade only what the transcript shows against the rubric. \
Answer with one JSON object and nothing else: \
{\"verdict\": \"pass\" or \"fail\", \"score\": a number from 0 to 1, \"reasoning\": \"one or two sentences\"}.";

/// The judge's answer, read strictly: exactly one JSON object — no
/// Markdown code fence around it, no repeated key anywhere in it (another
/// reader could keep the other value) — with `verdict` `pass`/`fail`,
/// `score` in 0…1 and `reasoning`; anything else is `Err` (a harness error,
/// never a verdict). The error describes what is wrong with the answer and
/// its size, never its text: the judge's endpoint is not ours, and what it
/// echoes must not reach results or evidence.
pub(crate) fn read_verdict(text: &str) -> Result<JudgeReport, String> {
    let size = text.len();
    let value: Value = serde_json::from_str(text.trim()).map_err(|e| {
        let what = if text.trim_start().starts_with("```") {
            "is wrapped in a Markdown code fence"
        } else {
            "is not JSON"
        };
        format!(
            "the judge's answer ({size} bytes) {what} (line {}, column {}): it must be one JSON object",
            e.line(),
            e.column()
        )
    })?;
    let Value::Object(object) = value else {
        return Err(format!(
            "the judge's answer ({size} bytes) is JSON but not an object"
        ));
    };
    if let Some(first) = toolmock_contract::duplicate_keys(text.trim().as_bytes()).first() {
        // Only a key of the verdict's own is named: any other is the judge's text.
        let which = match first.as_str() {
            known @ ("/verdict" | "/score" | "/reasoning") => format!("the key at {known}"),
            _ => "a key".to_owned(),
        };
        return Err(format!(
            "the judge's answer ({size} bytes) repeats {which}: its verdict is ambiguous"
        ));
    }
    let verdict = match object.get("verdict").and_then(Value::as_str) {
        Some(v @ ("pass" | "fail")) => v.to_owned(),
        _ => {
            return Err(format!(
                "the judge's answer ({size} bytes) has no verdict \"pass\" or \"fail\""
            ));
        }
    };
    let score = object
        .get("score")
        .and_then(Value::as_f64)
        .filter(|s| (0.0..=1.0).contains(s))
        .ok_or_else(|| format!("the judge's answer ({size} bytes) has no score from 0 to 1"))?;
    let reasoning = object
        .get("reasoning")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Ok(JudgeReport {
        verdict,
        score,
        reasoning,
    })
}

/// Asks `judge` to grade `expect`'s rubric over the recorded conversation
/// and calls. `Err` is the harness code to record (`judge_failed`, or
/// `cassette_miss` when a replaying cassette had no answer), why no grade
/// came back, the record's detail and its path (a miss's pointer). Beside
/// it, the tokens the judge's answer took (spent even when the answer is
/// refused).
pub(crate) async fn grade(
    judge: &dyn ChatModel,
    expect: &JudgeExpect,
    conversation: &[Message],
    calls: &[RecordedCall],
) -> (
    Result<JudgeReport, (HarnessCode, String, Value, Option<String>)>,
    Option<Usage>,
) {
    let calls: Vec<Value> = calls
        .iter()
        .map(|c| {
            json!({
                "tool": c.tool, "operation": c.operation, "status": c.status.as_str(),
                "arguments": c.arguments, "result": c.result, "error_code": c.code,
            })
        })
        .collect();
    let transcript = json!({"conversation": conversation, "recorded_calls": calls});
    let messages = [
        Message::System {
            content: JUDGE_INSTRUCTIONS.to_owned(),
        },
        Message::user(format!(
            "Rubric:\n{}\n\nTranscript (JSON):\n{}",
            expect.rubric, transcript
        )),
    ];
    let reply = match judge
        .complete(ModelRequest {
            messages: &messages,
            tools: &[],
        })
        .await
    {
        Ok(reply) => reply,
        Err(e) => {
            let code = match e {
                ModelError::CassetteMiss { .. } => HarnessCode::CassetteMiss,
                ModelError::BudgetExhausted(_) => HarnessCode::BudgetExhausted,
                _ => HarnessCode::JudgeFailed,
            };
            return (Err((code, e.to_string(), e.detail(), e.pointer())), None);
        }
    };
    let verdict = read_verdict(reply.content.as_deref().unwrap_or(""))
        .map_err(|why| (HarnessCode::JudgeFailed, why, json!({}), None));
    (verdict, reply.usage)
}

/// Whether a grade passes `expect`.
pub(crate) fn passes(expect: &JudgeExpect, report: &JudgeReport) -> bool {
    report.verdict == "pass" && report.score >= expect.min_score
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_agent_said_is_found_in_any_of_its_messages() {
        let conversation = vec![
            Message::Assistant {
                content: Some("Your refund is $1,093.34.".into()),
                tool_calls: vec![],
            },
            Message::user("And the order?"),
            Message::Assistant {
                content: Some("It is Pending.".into()),
                tool_calls: vec![],
            },
        ];
        let expect = AgentSaidExpect {
            contains: vec!["1093.34".into(), "pending".into(), "cancelled".into()],
        };
        let unmet = judge_agent_said(&expect, &conversation, "/cases/0/expect/agent_said");
        assert_eq!(unmet.len(), 1, "{unmet:?}");
        assert_eq!(unmet[0].at, "/cases/0/expect/agent_said/contains/2");
        assert_eq!(unmet[0].code, "agent_said_contains");
    }

    #[test]
    fn verdicts_are_read_strictly() {
        let ok =
            read_verdict(" {\"verdict\": \"pass\", \"score\": 0.9, \"reasoning\": \"fine\"}\n");
        assert_eq!(ok.map(|r| (r.verdict, r.score)), Ok(("pass".into(), 0.9)));
        for (garbage, why) in [
            ("looks fine to me", "is not JSON"),
            ("{\"verdict\": \"maybe\", \"score\": 0.5}", "no verdict"),
            ("{\"verdict\": \"pass\", \"score\": 7}", "no score"),
            ("{\"verdict\": \"pass\"}", "no score"),
            ("[\"pass\"]", "not an object"),
            ("", "is not JSON"),
            // The last key would win in serde_json: a fail read as a pass.
            (
                "{\"verdict\": \"fail\", \"score\": 0.1, \"verdict\": \"pass\"}",
                "repeats the key at /verdict",
            ),
            (
                "{\"verdict\": \"pass\", \"score\": 1, \"x\": {\"a\": 1, \"a\": 2}}",
                "repeats a key",
            ),
            // docs/agents.md: one JSON object, nothing around it.
            (
                "```json\n{\"verdict\": \"pass\", \"score\": 0.9, \"reasoning\": \"fine\"}\n```",
                "Markdown code fence",
            ),
            (
                "Sure! {\"verdict\": \"pass\", \"score\": 0.9}",
                "is not JSON",
            ),
        ] {
            let error = read_verdict(garbage).expect_err(garbage);
            assert!(error.contains(why), "{garbage}: {error}");
        }
    }

    /// What the judge answers never reaches the message (item 10 of issue
    /// 32): only what is wrong with it and its size.
    #[test]
    fn a_refused_verdict_never_quotes_the_answer() {
        let secret = "sk-live-ECHOED-0123456789";
        for answer in [
            format!("I refuse. {secret}"),
            format!("{{\"verdict\": \"{secret}\", \"score\": 1}}"),
            format!("{{\"verdict\": \"pass\", \"score\": \"{secret}\"}}"),
            format!("```\n{{\"reasoning\": \"{secret}\"}}\n```"),
            format!("{{\"{secret}\": 1, \"{secret}\": 2}}"),
        ] {
            let error = read_verdict(&answer).expect_err(&answer);
            assert!(!error.contains("ECHOED"), "{error}");
            assert!(
                error.contains(&format!("({} bytes)", answer.len())),
                "{error}"
            );
        }
    }

    #[test]
    fn final_answers_are_judged_over_the_last_answer() {
        let conversation = vec![
            Message::Assistant {
                content: Some("Booked TEST-742".into()),
                tool_calls: vec![],
            },
            Message::user("and?"),
            Message::Assistant {
                content: Some("Your visit is booked: TEST-742.".into()),
                tool_calls: vec![],
            },
        ];
        let expect = FinalAnswerExpect {
            contains: vec!["TEST-742".into(), "cancel".into()],
            not_contains: vec!["booked".into()],
            matches: Some(r"TEST-\d+\.$".into()),
        };
        let codes: Vec<(String, String)> = judge_final_answer(&expect, &conversation, "/x")
            .into_iter()
            .map(|u| (u.at, u.code))
            .collect();
        assert_eq!(
            codes,
            [
                (
                    "/x/contains/1".to_owned(),
                    "final_answer_contains".to_owned()
                ),
                (
                    "/x/not_contains/0".to_owned(),
                    "final_answer_not_contains".to_owned()
                ),
            ]
        );
        assert_eq!(
            judge_final_answer(&expect, &[], "/x")[0].code,
            "no_final_answer"
        );
    }
}
