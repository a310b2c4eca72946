//! The results document: one attempt's entry, and the whole document of
//! the attempts that ran.

use crate::document::{CaseDoc, SimulationDocument};
use crate::expect::{RecordedCall, Unmet};
use crate::results::{
    AttemptResult, CallReport, CaseResult, ErrorEntry, RunResults, Summary, coverage,
};
use crate::usage::TokenUsage;
use std::time::Duration;
use toolmock_runtime::model::AttemptOutcome;
use toolmock_runtime::model::{
    EvidenceRecord, HarnessErrorRecord, PinRecord, ToolInputErrorRecord,
};

/// The results document's entry for a finished attempt of `case`, from what
/// it recorded (`calls` as [`recorded_calls`](crate::expect::recorded_calls) makes them of the records)
/// and the expectations its judgement found unmet — the same entry whichever
/// runtime played it (the API's results endpoint builds its document with
/// this from PostgreSQL). No judge report and no raw records.
pub fn attempt_result(
    case: &CaseDoc,
    (number, outcome): (u32, AttemptOutcome),
    unmet: Vec<Unmet>,
    calls: Vec<RecordedCall>,
    (evidence, tool_input_errors, harness_errors): (
        &[EvidenceRecord],
        &[ToolInputErrorRecord],
        &[HarnessErrorRecord],
    ),
    conversation: Vec<crate::conversation::Message>,
) -> AttemptResult {
    AttemptResult {
        number,
        outcome,
        as_expected: outcome == case.expect.outcome,
        unmet,
        harness_errors: harness_errors.iter().map(ErrorEntry::harness).collect(),
        tool_input_errors: tool_input_errors
            .iter()
            .map(ErrorEntry::tool_input)
            .collect(),
        virtual_time_ms: evidence.iter().map(|e| u64::from(e.delay_ms)).sum(),
        calls: calls
            .into_iter()
            .map(|call| {
                let actor = case.actor_of(&call.tool);
                CallReport {
                    actor,
                    ..CallReport::from(call)
                }
            })
            .collect(),
        wall: Duration::ZERO,
        judge: None,
        model_requests: Vec::new(),
        tokens: None,
        raw: None,
        conversation,
    }
}

/// The results document of attempts that ran (by `run`, or played by an
/// agent outside toolmock, e.g. over MCP): `cases` pairs each reported case
/// with its attempts, in order; coverage is over `pins`; `fixtures_hash` is
/// the one the start computed (`StartedSimulation::fixtures_hash`).
pub fn assemble_results(
    document: &SimulationDocument,
    pins: &[PinRecord],
    cases: Vec<(&CaseDoc, Vec<AttemptResult>)>,
    fixtures_hash: Option<String>,
) -> RunResults {
    let coverage = coverage(
        pins,
        cases.iter().flat_map(|(case, attempts)| {
            attempts
                .iter()
                .map(|a| (a.calls.as_slice(), case.variants.as_slice()))
        }),
    );
    let cases: Vec<CaseResult> = cases
        .into_iter()
        .map(|(case, attempts)| CaseResult::new(case, attempts))
        .collect();
    let mut summary = Summary::default();
    for case in &cases {
        for a in &case.attempts {
            summary.attempts += 1;
            summary.as_expected += u32::from(a.as_expected);
            match a.outcome {
                AttemptOutcome::Passed => summary.passed += 1,
                AttemptOutcome::Failed => summary.failed += 1,
                AttemptOutcome::HarnessError => summary.harness_error += 1,
            }
            summary.virtual_time_ms += a.virtual_time_ms;
        }
    }
    summary.cases = u32::try_from(cases.len()).unwrap_or(u32::MAX);
    summary.tokens = TokenUsage::sum(cases.iter().map(|c| &c.tokens));
    RunResults {
        results_version: 2,
        simulation: document.name.clone(),
        mode: document.mode,
        attempts_per_case: document.attempts,
        ok: summary.as_expected == summary.attempts,
        summary,
        cases,
        coverage,
        fixtures_hash,
        diverged_mocks: Vec::new(),
    }
}
