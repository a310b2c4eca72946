//! Concluding an attempt whose agent is done: its expectations checked over
//! what it recorded, the LLM judge asked for a rubric, and the finish with
//! that verdict.

use crate::conversation::{ChatModel, ModelRole};
use crate::document::CaseDoc;
use crate::expect::{RecordedCall, Unmet, recorded_calls, unmet_expectations};
use crate::judge::{grade, judge_agent_said, judge_final_answer, passes};
use crate::model_driver::Played;
use crate::results::{AttemptResult, RawAttempt};
use crate::usage::{RequestUsage, TokenUsage};
use toolmock_contract::pointer;
use toolmock_runtime::backend::{AttemptRecords, Backend};
use toolmock_runtime::dispatcher::Dispatcher;
use toolmock_runtime::model::Verdict;
use toolmock_runtime::model::{AttemptId, TenantId};

use super::error::*;
use super::results::*;

/// Judges an attempt whose agent is done (a script that ran, an external
/// agent that said so) over what it recorded — `unmet` holds what its driver
/// already found unmet — and finishes it with that verdict (a store that
/// keeps judgements records the judgement with the finish). The outcome is
/// the dispatcher's: a harness error makes it `harness_error` whatever the
/// verdict. `wall` is left zero for the caller.
pub async fn conclude_attempt<B: Backend>(
    dispatcher: &Dispatcher<B>,
    tenant: TenantId,
    case: &CaseDoc,
    case_at: &str,
    attempt: (AttemptId, u32),
    unmet: Vec<Unmet>,
    keep_raw: bool,
) -> Result<AttemptResult, RunError> {
    conclude_conversation(
        dispatcher,
        tenant,
        (case, case_at),
        attempt,
        (unmet, Vec::new(), Vec::new()),
        keep_raw,
    )
    .await
}

/// [`conclude_attempt`] with a conversation an agent outside toolmock had
/// with a simulated user ([`crate::UserConversation::into_parts`]): what it
/// found unmet, its messages and when each was added.
pub async fn conclude_conversation<B: Backend>(
    dispatcher: &Dispatcher<B>,
    tenant: TenantId,
    (case, case_at): (&CaseDoc, &str),
    attempt: (AttemptId, u32),
    (unmet, conversation, times): (
        Vec<Unmet>,
        Vec<crate::conversation::Message>,
        Vec<chrono::DateTime<chrono::Utc>>,
    ),
    keep_raw: bool,
) -> Result<AttemptResult, RunError> {
    // An agent outside toolmock asks its own model: no request of it is
    // toolmock's to count.
    let played = Played {
        unmet,
        conversation,
        times,
        usage: Vec::new(),
    };
    conclude_played(
        dispatcher,
        tenant,
        case,
        case_at,
        attempt,
        played,
        (keep_raw, None),
    )
    .await
}

/// [`conclude_attempt`] with the conversation the driver recorded and the
/// judge for the case's rubric. The judge is asked only when the attempt
/// has no harness error (it can never turn one into a pass); a judge that
/// cannot answer is recorded as the harness error `judge_failed`.
pub(super) async fn conclude_played<B: Backend>(
    dispatcher: &Dispatcher<B>,
    tenant: TenantId,
    case: &CaseDoc,
    case_at: &str,
    (attempt, number): (AttemptId, u32),
    played: Played,
    (keep_raw, judge): (bool, Option<&dyn ChatModel>),
) -> Result<AttemptResult, RunError> {
    let Played {
        mut unmet,
        conversation,
        times,
        usage: mut requests,
    } = played;
    let store = dispatcher.backend();
    // What it recorded and its state, in one round trip where the backend
    // can (PostgreSQL: one statement), else the state read beside it; either
    // way as its layers, the shared base and the attempt's writes, never a
    // copy of the base (a judgement's memory grows with what the attempt
    // changed).
    let AttemptRecords {
        evidence,
        tool_input_errors,
        mut harness_errors,
        state,
    } = store.attempt_records(tenant, attempt).await?;
    let state = match state {
        Some(state) => state,
        None => store.layered_state(tenant, attempt).await?,
    };
    let calls: Vec<RecordedCall> = recorded_calls(&evidence, &tool_input_errors, &harness_errors);
    let expect_at = pointer::push(case_at, "expect");
    unmet.extend(unmet_expectations(
        &case.expect,
        &calls,
        state.view(),
        &expect_at,
    ));
    if let Some(expect) = &case.expect.final_answer {
        unmet.extend(judge_final_answer(
            expect,
            &conversation,
            &pointer::push(&expect_at, "final_answer"),
        ));
    }
    if let Some(expect) = &case.expect.agent_said {
        unmet.extend(judge_agent_said(
            expect,
            &conversation,
            &pointer::push(&expect_at, "agent_said"),
        ));
    }
    let mut judged = None;
    if let Some(expect) = &case.expect.judge
        && harness_errors.is_empty()
    {
        let graded = match judge {
            Some(judge) => {
                let (graded, usage) = grade(judge, expect, &conversation, &calls).await;
                if let Some(usage) = usage {
                    requests.push(RequestUsage {
                        role: ModelRole::Judge,
                        turn: 1,
                        usage,
                    });
                }
                graded
            }
            // A rubric nobody can grade never passes unread.
            None => Err((
                toolmock_runtime::error::HarnessCode::JudgeFailed,
                "no judge model is configured here to grade the rubric".to_owned(),
                serde_json::json!({}),
                None,
            )),
        };
        match graded {
            Ok(report) => {
                if !passes(expect, &report) {
                    unmet.push(Unmet::new(
                        pointer::push(&expect_at, "judge"),
                        "judge_verdict",
                        format!(
                            "the judge graded {} ({}): {}",
                            report.verdict, report.score, report.reasoning
                        ),
                    ));
                }
                judged = Some(report);
            }
            Err((code, why, detail, path)) => {
                let fault = toolmock_runtime::error::HarnessFault {
                    code,
                    message: why,
                    path,
                };
                dispatcher
                    .record_fault(tenant, attempt, None, None, fault, detail)
                    .await?;
                harness_errors = store.harness_errors(tenant, attempt).await?;
            }
        }
    }
    let verdict = if unmet.is_empty() {
        Verdict::Passed
    } else {
        Verdict::Failed
    };
    // A store that keeps judgements records this one with the finish, in
    // the same step: no reader sees the attempt finished and unjudged.
    let outcome = if store.keeps_judgements() {
        let unmet_json =
            serde_json::to_value(&unmet).map_err(|e| RunError::Storage(e.to_string()))?;
        let judge_json = judged
            .as_ref()
            .map(serde_json::to_value)
            .transpose()
            .map_err(|e| RunError::Storage(e.to_string()))?;
        dispatcher
            .finish_judged(tenant, attempt, verdict, (&unmet_json, judge_json.as_ref()))
            .await?
    } else {
        dispatcher.finish_attempt(tenant, attempt, verdict).await?
    };
    let mut result = attempt_result(
        case,
        (number, outcome),
        unmet,
        calls,
        (&evidence, &tool_input_errors, &harness_errors),
        conversation,
    );
    result.judge = judged;
    result.tokens = TokenUsage::of(&requests, &|_| None);
    result.model_requests = requests;
    result.raw = keep_raw.then_some(RawAttempt {
        evidence,
        tool_input_errors,
        harness_errors,
        final_state: state,
        message_times: times,
    });
    Ok(result)
}
