//! Expectations and the trajectory: judged over what the attempt recorded
//! (evidence, tool input errors, harness errors, final state), so that they
//! hold for any driver — the scripted one here or a real agent later.

use crate::document::{
    ArgumentsMatch, CallMatcher, CallStatus, CaseExpect, SequenceMode, StateExpect, StepExpect,
    TrajectoryExpect,
};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use std::borrow::Cow;
use toolmock_contract::pointer;
use toolmock_evaluator::{StateView, json_equal};
use toolmock_runtime::model::{EvidenceRecord, Executor, HarnessErrorRecord, ToolInputErrorRecord};

/// One call of an attempt as recorded by the dispatcher.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordedCall {
    /// Tool name.
    pub tool: String,
    /// Operation name.
    pub operation: String,
    /// The arguments.
    pub arguments: Value,
    /// How it ended.
    pub status: CallStatus,
    /// The error code, for errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The error's JSON pointer, for errors that have one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The result returned, for successes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The domain error `{code, message, data?}`, for a call that answered one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// The variant used, for successes and domain errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// The matched rule, for successes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<u32>,
    /// The simulated delay.
    pub delay_ms: u32,
    /// When (left out of reports: they must not depend on the clock).
    #[serde(skip)]
    pub at: DateTime<Utc>,
    /// Who answered it (evidence only: the mock, or a real handler); not
    /// serialized (the results' calls show it, see `CallReport`).
    #[serde(skip)]
    pub executor: Option<Executor>,
}

/// Every call of an attempt in the order it happened: evidence, tool input
/// errors and call-caused harness errors merged by time (the dispatcher's
/// clock must be strictly increasing, see [`super::SequenceClock`]).
pub fn recorded_calls(
    evidence: &[EvidenceRecord],
    tool_input_errors: &[ToolInputErrorRecord],
    harness_errors: &[HarnessErrorRecord],
) -> Vec<RecordedCall> {
    let mut calls: Vec<RecordedCall> = Vec::with_capacity(evidence.len() + tool_input_errors.len());
    calls.extend(evidence.iter().map(|e| RecordedCall {
        tool: e.tool.clone(),
        operation: e.operation.clone(),
        arguments: e.arguments.clone(),
        status: match e.error {
            Some(_) => CallStatus::DomainError,
            None => CallStatus::Ok,
        },
        code: e.error.as_ref().map(|d| d.code.clone()),
        path: None,
        result: e.error.is_none().then(|| e.result.clone()),
        error: e.error.as_ref().map(|d| d.to_json()),
        variant: e.variant.clone(),
        rule: e.rule,
        delay_ms: e.delay_ms,
        at: e.started_at,
        executor: Some(e.executor),
    }));
    calls.extend(tool_input_errors.iter().map(|e| RecordedCall {
        tool: e.tool.clone(),
        operation: e.operation.clone(),
        arguments: e.arguments.clone(),
        status: CallStatus::ToolInputError,
        code: Some(e.code.as_str().to_owned()),
        path: e.path.clone(),
        result: None,
        error: None,
        variant: None,
        rule: None,
        delay_ms: 0,
        at: e.at,
        executor: None,
    }));
    calls.extend(harness_errors.iter().filter_map(|e| {
        Some(RecordedCall {
            tool: e.tool.clone()?,
            operation: e.operation.clone()?,
            arguments: e.arguments.clone().unwrap_or(Value::Null),
            status: CallStatus::HarnessError,
            code: Some(e.code.as_str().to_owned()),
            path: e.path.clone(),
            result: None,
            error: None,
            variant: None,
            rule: None,
            delay_ms: 0,
            at: e.at,
            executor: None,
        })
    }));
    calls.sort_by_key(|c| c.at);
    calls
}

/// One expectation that did not hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Unmet {
    /// JSON pointer of the expectation in the simulation document.
    pub at: String,
    /// What kind of failure (stable code).
    pub code: String,
    /// What happened, for people.
    pub message: String,
}

impl Unmet {
    pub(crate) fn new(at: impl Into<String>, code: &str, message: impl Into<String>) -> Self {
        Self {
            at: at.into(),
            code: code.to_owned(),
            message: message.into(),
        }
    }
}

/// Whether `expected` is contained in `actual`: objects by key, arrays by
/// position (the actual array may be longer), scalars by docs/spec.md §5 equality.
pub(crate) fn is_subset(expected: &Value, actual: &Value) -> bool {
    first_difference(expected, actual, true, "").is_none()
}

/// The first place where `actual` differs from `expected` (exactly, or as a
/// subset): its JSON pointer and a description.
pub(crate) fn first_difference(
    expected: &Value,
    actual: &Value,
    subset: bool,
    at: &str,
) -> Option<(String, String)> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => first_member_difference(e, a, subset, at),
        (Value::Array(e), Value::Array(a)) => {
            let too_short = a.len() < e.len();
            if too_short || (!subset && a.len() != e.len()) {
                return Some((
                    at.to_owned(),
                    format!("has {} items, expected {}", a.len(), e.len()),
                ));
            }
            e.iter()
                .zip(a)
                .enumerate()
                .find_map(|(i, (ev, av))| first_difference(ev, av, subset, &pointer::index(at, i)))
        }
        _ if json_equal(expected, actual) => None,
        _ => Some((
            at.to_owned(),
            format!("is {}, expected {}", short(actual), short(expected)),
        )),
    }
}

/// [`first_difference`] of two objects, member by member.
fn first_member_difference(
    expected: &Map<String, Value>,
    actual: &Map<String, Value>,
    subset: bool,
    at: &str,
) -> Option<(String, String)> {
    first_member_difference_of(
        expected,
        (
            |k: &str| actual.get(k).map(Cow::Borrowed),
            actual.keys().map(String::as_str),
        ),
        subset,
        at,
    )
}

/// [`first_member_difference`] of an object given as a lookup and its keys:
/// a final state is compared where it is, never copied whole (it can be a
/// whole fixture database under an attempt's few writes).
fn first_member_difference_of<'a>(
    expected: &Map<String, Value>,
    (get, mut keys): (
        impl Fn(&str) -> Option<Cow<'a, Value>>,
        impl Iterator<Item = &'a str>,
    ),
    subset: bool,
    at: &str,
) -> Option<(String, String)> {
    for (k, ev) in expected {
        let here = pointer::push(at, k);
        match get(k) {
            None => return Some((here, "is missing".into())),
            Some(av) => {
                if let Some(d) = first_difference(ev, &av, subset, &here) {
                    return Some(d);
                }
            }
        }
    }
    if !subset && let Some(k) = keys.find(|k| !expected.contains_key(*k)) {
        return Some((pointer::push(at, k), "is not expected".into()));
    }
    None
}

/// A value in at most 80 characters, for messages.
pub(crate) fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.len() <= 80 {
        return text;
    }
    let mut end = 77;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

fn shown(at: &str) -> &str {
    if at.is_empty() { "/" } else { at }
}

/// What one step's call produced.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StepOutcome {
    /// A result.
    Ok(Value),
    /// A tool input error, harness error or domain error (class, code, message).
    Error {
        /// `tool_input_error`, `harness_error` or `domain_error`.
        class: CallStatus,
        /// Its code.
        code: String,
        /// Its message.
        message: String,
    },
}

/// Judges one step's outcome against its expectation (`None`: any
/// result). `at` is the step's pointer; an unmet expectation points at the
/// step's `expect` member, or at the step when it has none.
pub(crate) fn judge_step(
    expect: Option<&StepExpect>,
    outcome: &StepOutcome,
    at: &str,
) -> Option<Unmet> {
    let expect_at = pointer::push(at, "expect");
    let describe = |o: &StepOutcome| match o {
        StepOutcome::Ok(v) => format!("the result {}", short(v)),
        StepOutcome::Error {
            class,
            code,
            message,
        } => format!("{} {code} ({message})", class.as_str()),
    };
    match (expect, outcome) {
        (None, StepOutcome::Ok(_)) => None,
        (None, other) => Some(Unmet::new(
            at,
            "step_failed",
            format!("expected a result, got {}", describe(other)),
        )),
        (Some(StepExpect::Result(want)), StepOutcome::Ok(got)) => {
            first_difference(want, got, false, "").map(|(p, why)| {
                Unmet::new(
                    pointer::push(&expect_at, "result"),
                    "result_mismatch",
                    format!("result{} {why}", shown(&p).trim_end_matches('/')),
                )
            })
        }
        (Some(StepExpect::ResultSubset(want)), StepOutcome::Ok(got)) => {
            first_difference(want, got, true, "").map(|(p, why)| {
                Unmet::new(
                    pointer::push(&expect_at, "result_subset"),
                    "result_subset_mismatch",
                    format!("result{} {why}", shown(&p).trim_end_matches('/')),
                )
            })
        }
        (Some(StepExpect::ToolInputError(want)), got) => match got {
            StepOutcome::Error {
                class: CallStatus::ToolInputError,
                code,
                ..
            } if code == want => None,
            other => Some(Unmet::new(
                pointer::push(&expect_at, "tool_input_error"),
                "expected_tool_input_error",
                format!("expected tool_input_error {want}, got {}", describe(other)),
            )),
        },
        (Some(StepExpect::HarnessError(want)), got) => match got {
            StepOutcome::Error {
                class: CallStatus::HarnessError,
                code,
                ..
            } if code == want => None,
            other => Some(Unmet::new(
                pointer::push(&expect_at, "harness_error"),
                "expected_harness_error",
                format!("expected harness_error {want}, got {}", describe(other)),
            )),
        },
        (Some(StepExpect::DomainError(want)), got) => match got {
            StepOutcome::Error {
                class: CallStatus::DomainError,
                code,
                ..
            } if code == want => None,
            other => Some(Unmet::new(
                pointer::push(&expect_at, "domain_error"),
                "expected_domain_error",
                format!("expected domain_error {want}, got {}", describe(other)),
            )),
        },
        (Some(StepExpect::Result(_) | StepExpect::ResultSubset(_)), other) => Some(Unmet::new(
            expect_at,
            "step_failed",
            format!("expected a result, got {}", describe(other)),
        )),
    }
}

impl CallMatcher {
    /// Whether a recorded call matches this pattern.
    pub fn matches(&self, call: &RecordedCall) -> bool {
        self.tool == call.tool
            && self.operation.as_ref().is_none_or(|o| *o == call.operation)
            && self.status.is_none_or(|s| s == call.status)
            && self
                .code
                .as_ref()
                .is_none_or(|want| call.code.as_ref() == Some(want))
            && self
                .arguments
                .as_ref()
                .is_none_or(|want| match self.arguments_match {
                    ArgumentsMatch::Exact => json_equal(want, &call.arguments),
                    ArgumentsMatch::Subset => is_subset(want, &call.arguments),
                })
    }

    fn label(&self) -> String {
        let mut text = match &self.operation {
            Some(op) => format!("{}/{op}", self.tool),
            None => self.tool.clone(),
        };
        if let Some(args) = &self.arguments {
            text.push_str(&format!(" with {}", short(args)));
        }
        text
    }
}

fn label(call: &RecordedCall) -> String {
    format!("{}/{}", call.tool, call.operation)
}

/// The largest matching between reference patterns and recorded calls
/// (each used once): `pairs[i]` is the call matched to pattern `i`.
fn maximum_matching(patterns: &[CallMatcher], calls: &[RecordedCall]) -> Vec<Option<usize>> {
    let edges: Vec<Vec<usize>> = patterns
        .iter()
        .map(|p| (0..calls.len()).filter(|&j| p.matches(&calls[j])).collect())
        .collect();
    let mut owner: Vec<Option<usize>> = vec![None; calls.len()];
    fn augment(
        i: usize,
        edges: &[Vec<usize>],
        seen: &mut [bool],
        owner: &mut [Option<usize>],
    ) -> bool {
        for &j in &edges[i] {
            if seen[j] {
                continue;
            }
            seen[j] = true;
            if owner[j].is_none_or(|k| augment(k, edges, seen, owner)) {
                owner[j] = Some(i);
                return true;
            }
        }
        false
    }
    for i in 0..patterns.len() {
        let mut seen = vec![false; calls.len()];
        augment(i, &edges, &mut seen, &mut owner);
    }
    let mut pairs = vec![None; patterns.len()];
    for (j, o) in owner.iter().enumerate() {
        if let Some(i) = o {
            pairs[*i] = Some(j);
        }
    }
    pairs
}

/// Judges one trajectory expectation.
pub(crate) fn judge_trajectory(
    expect: &TrajectoryExpect,
    calls: &[RecordedCall],
    at: &str,
) -> Option<Unmet> {
    match expect {
        TrajectoryExpect::Used { call } => (!calls.iter().any(|c| call.matches(c))).then(|| {
            Unmet::new(
                at,
                "not_used",
                format!("no recorded call matches {}", call.label()),
            )
        }),
        TrajectoryExpect::NotUsed { call } => calls.iter().position(|c| call.matches(c)).map(|i| {
            Unmet::new(
                at,
                "used",
                format!(
                    "call {} ({}) matches {}, which must not be used",
                    i + 1,
                    label(&calls[i]),
                    call.label()
                ),
            )
        }),
        TrajectoryExpect::Count {
            call,
            exactly,
            at_least,
            at_most,
        } => {
            let n =
                u32::try_from(calls.iter().filter(|c| call.matches(c)).count()).unwrap_or(u32::MAX);
            let ok = exactly.is_none_or(|e| n == e)
                && at_least.is_none_or(|l| n >= l)
                && at_most.is_none_or(|m| n <= m);
            (!ok).then(|| {
                let mut bounds = Vec::new();
                if let Some(e) = exactly {
                    bounds.push(format!("exactly {e}"));
                }
                if let Some(l) = at_least {
                    bounds.push(format!("at least {l}"));
                }
                if let Some(m) = at_most {
                    bounds.push(format!("at most {m}"));
                }
                Unmet::new(
                    at,
                    "call_count",
                    format!(
                        "{n} recorded call(s) match {}, expected {}",
                        call.label(),
                        bounds.join(" and ")
                    ),
                )
            })
        }
        TrajectoryExpect::Sequence { mode, calls: want } => {
            let fail = |message: String| Some(Unmet::new(at, "sequence_mismatch", message));
            match mode {
                SequenceMode::Strict => {
                    for (i, pattern) in want.iter().enumerate() {
                        match calls.get(i) {
                            None => {
                                return fail(format!(
                                    "call {} ({}) was never made; only {} recorded",
                                    i + 1,
                                    pattern.label(),
                                    calls.len()
                                ));
                            }
                            Some(c) if !pattern.matches(c) => {
                                return fail(format!(
                                    "call {} is {}, expected {}",
                                    i + 1,
                                    label(c),
                                    pattern.label()
                                ));
                            }
                            Some(_) => {}
                        }
                    }
                    (calls.len() > want.len()).then(|| {
                        Unmet::new(
                            at,
                            "sequence_mismatch",
                            format!(
                                "{} calls recorded, expected {}; the first extra is {}",
                                calls.len(),
                                want.len(),
                                label(&calls[want.len()])
                            ),
                        )
                    })
                }
                SequenceMode::Unordered | SequenceMode::Subset | SequenceMode::Superset => {
                    let pairs = maximum_matching(want, calls);
                    let unmatched_pattern = pairs.iter().position(Option::is_none);
                    let used: Vec<bool> = {
                        let mut used = vec![false; calls.len()];
                        for j in pairs.iter().flatten() {
                            used[*j] = true;
                        }
                        used
                    };
                    let extra_call = used.iter().position(|u| !u);
                    let need_all_patterns =
                        matches!(mode, SequenceMode::Unordered | SequenceMode::Superset);
                    let forbid_extra =
                        matches!(mode, SequenceMode::Unordered | SequenceMode::Subset);
                    if need_all_patterns && let Some(i) = unmatched_pattern {
                        return fail(format!(
                            "no recorded call is left to match reference call {} ({})",
                            i + 1,
                            want[i].label()
                        ));
                    }
                    if forbid_extra && let Some(j) = extra_call {
                        return fail(format!(
                            "recorded call {} ({}) matches no reference call",
                            j + 1,
                            label(&calls[j])
                        ));
                    }
                    None
                }
            }
        }
    }
}

/// Judges the final state.
pub(crate) fn judge_state(expect: &StateExpect, state: StateView<'_>, at: &str) -> Option<Unmet> {
    let (want, subset, key) = match expect {
        StateExpect::Exact(m) => (m, false, "exact"),
        StateExpect::Subset(m) => (m, true, "subset"),
    };
    first_member_difference_of(want, (|k: &str| state.member(k), state.keys()), subset, "").map(
        |(p, why)| {
            Unmet::new(
                pointer::push(at, key),
                "final_state_mismatch",
                format!("state{} {why}", shown(&p).trim_end_matches('/')),
            )
        },
    )
}

/// Judges the attempt-level expectations of a case (final state and
/// trajectory); `at` is the pointer of the case's `expect`.
pub fn unmet_expectations(
    expect: &CaseExpect,
    calls: &[RecordedCall],
    state: StateView<'_>,
    at: &str,
) -> Vec<Unmet> {
    let mut unmet = Vec::new();
    if let Some(want) = &expect.final_state
        && let Some(u) = judge_state(want, state, &pointer::push(at, "final_state"))
    {
        unmet.push(u);
    }
    let base = pointer::push(at, "trajectory");
    for (i, t) in expect.trajectory.iter().enumerate() {
        if let Some(u) = judge_trajectory(t, calls, &pointer::index(&base, i)) {
            unmet.push(u);
        }
    }
    unmet
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(tool: &str, operation: &str, arguments: Value, status: CallStatus) -> RecordedCall {
        RecordedCall {
            tool: tool.into(),
            operation: operation.into(),
            arguments,
            status,
            code: None,
            path: None,
            result: None,
            error: None,
            variant: None,
            rule: None,
            delay_ms: 0,
            at: DateTime::<Utc>::MIN_UTC,
            executor: None,
        }
    }

    fn recorded() -> Vec<RecordedCall> {
        vec![
            call(
                "sf",
                "query",
                json!({"soql": "a", "limit": 1}),
                CallStatus::Ok,
            ),
            call(
                "sf",
                "create",
                json!({"object_type": "X"}),
                CallStatus::ToolInputError,
            ),
            call(
                "sf",
                "create",
                json!({"object_type": "Case"}),
                CallStatus::Ok,
            ),
        ]
    }

    /// Every trajectory expectation kind, each once holding and once not.
    #[test]
    fn trajectory_expectations_hold_and_fail() {
        let table: Vec<(Value, Option<&str>)> = vec![
            (
                json!({"kind": "used", "call": {"tool": "sf", "operation": "query"}}),
                None,
            ),
            (
                json!({"kind": "used", "call": {"tool": "sf", "operation": "delete"}}),
                Some("not_used"),
            ),
            (
                json!({"kind": "not_used", "call": {"tool": "sf", "operation": "delete"}}),
                None,
            ),
            (
                json!({"kind": "not_used", "call": {"tool": "sf", "status": "tool_input_error"}}),
                Some("used"),
            ),
            (
                json!({"kind": "count", "call": {"tool": "sf", "operation": "create"}, "exactly": 2}),
                None,
            ),
            (
                json!({"kind": "count", "call": {"tool": "sf"}, "at_least": 1, "at_most": 2}),
                Some("call_count"),
            ),
            (
                json!({"kind": "used", "call": {"tool": "sf", "arguments": {"soql": "a"}}}),
                None,
            ),
            (
                json!({"kind": "used", "call": {"tool": "sf", "arguments": {"soql": "a"}, "arguments_match": "exact"}}),
                Some("not_used"),
            ),
            (
                json!({"kind": "used", "call": {"tool": "sf", "arguments": {"soql": "a", "limit": 1.0}, "arguments_match": "exact"}}),
                None,
            ),
            (
                json!({"kind": "sequence", "mode": "strict", "calls": [
                {"tool": "sf", "operation": "query"}, {"tool": "sf", "status": "tool_input_error"}, {"tool": "sf", "operation": "create"}]}),
                None,
            ),
            (
                json!({"kind": "sequence", "mode": "strict", "calls": [
                {"tool": "sf", "operation": "create"}, {"tool": "sf", "operation": "query"}, {"tool": "sf"}]}),
                Some("sequence_mismatch"),
            ),
            (
                json!({"kind": "sequence", "mode": "strict", "calls": [{"tool": "sf", "operation": "query"}]}),
                Some("sequence_mismatch"),
            ),
            (
                json!({"kind": "sequence", "mode": "unordered", "calls": [
                {"tool": "sf", "operation": "create"}, {"tool": "sf", "operation": "create"}, {"tool": "sf", "operation": "query"}]}),
                None,
            ),
            (
                json!({"kind": "sequence", "mode": "unordered", "calls": [
                {"tool": "sf", "operation": "create"}, {"tool": "sf", "operation": "query"}]}),
                Some("sequence_mismatch"),
            ),
            (
                json!({"kind": "sequence", "mode": "superset", "calls": [{"tool": "sf", "operation": "query"}]}),
                None,
            ),
            (
                json!({"kind": "sequence", "mode": "superset", "calls": [
                {"tool": "sf", "operation": "query"}, {"tool": "sf", "operation": "query"}]}),
                Some("sequence_mismatch"),
            ),
            (
                json!({"kind": "sequence", "mode": "subset", "calls": [
                {"tool": "sf"}, {"tool": "sf"}, {"tool": "sf"}, {"tool": "other"}]}),
                None,
            ),
            (
                json!({"kind": "sequence", "mode": "subset", "calls": [{"tool": "sf"}, {"tool": "sf"}]}),
                Some("sequence_mismatch"),
            ),
        ];
        let calls = recorded();
        for (i, (expect, want)) in table.iter().enumerate() {
            let expect: TrajectoryExpect = serde_json::from_value(expect.clone()).unwrap();
            let got = judge_trajectory(&expect, &calls, &format!("/t/{i}"));
            assert_eq!(
                got.as_ref().map(|u| u.code.as_str()),
                *want,
                "row {i}: {expect:?} gave {got:?}"
            );
            if let Some(u) = got {
                assert_eq!(u.at, format!("/t/{i}"));
            }
        }
    }

    /// Matching is a maximum matching, not greedy: a broad pattern first must
    /// not steal the only call a narrow pattern can match.
    #[test]
    fn unordered_sequences_use_a_maximum_matching() {
        let calls = recorded();
        let expect: TrajectoryExpect = serde_json::from_value(json!({"kind": "sequence", "mode": "unordered",
            "calls": [{"tool": "sf"}, {"tool": "sf", "operation": "query"}, {"tool": "sf", "status": "ok"}]}))
        .unwrap();
        assert_eq!(judge_trajectory(&expect, &calls, ""), None);
    }

    /// Every step expectation kind, each once holding and once not.
    #[test]
    fn step_expectations_hold_and_fail() {
        let ok = StepOutcome::Ok(json!({"a": 1, "b": [1, 2, {"c": "x"}]}));
        let input_error = StepOutcome::Error {
            class: CallStatus::ToolInputError,
            code: "invalid_arguments".into(),
            message: "m".into(),
        };
        let harness = StepOutcome::Error {
            class: CallStatus::HarnessError,
            code: "missing_reference".into(),
            message: "m".into(),
        };
        type Row<'a> = (Option<Value>, &'a StepOutcome, Option<(&'a str, &'a str)>);
        let table: Vec<Row> = vec![
            (None, &ok, None),
            (None, &input_error, Some(("step_failed", "/s"))),
            (
                Some(json!({"result": {"b": [1.0, 2, {"c": "x"}], "a": 1}})),
                &ok,
                None,
            ),
            (
                Some(json!({"result": {"a": 1}})),
                &ok,
                Some(("result_mismatch", "/s/expect/result")),
            ),
            (
                Some(json!({"result": {"a": 1}})),
                &harness,
                Some(("step_failed", "/s/expect")),
            ),
            (Some(json!({"result_subset": {"b": [1, 2, {}]}})), &ok, None),
            (
                Some(json!({"result_subset": {"b": [2]}})),
                &ok,
                Some(("result_subset_mismatch", "/s/expect/result_subset")),
            ),
            (
                Some(json!({"tool_input_error": "invalid_arguments"})),
                &input_error,
                None,
            ),
            (
                Some(json!({"tool_input_error": "invalid_number"})),
                &input_error,
                Some(("expected_tool_input_error", "/s/expect/tool_input_error")),
            ),
            (
                Some(json!({"tool_input_error": "invalid_arguments"})),
                &ok,
                Some(("expected_tool_input_error", "/s/expect/tool_input_error")),
            ),
            (
                Some(json!({"harness_error": "missing_reference"})),
                &harness,
                None,
            ),
            (
                Some(json!({"harness_error": "missing_reference"})),
                &input_error,
                Some(("expected_harness_error", "/s/expect/harness_error")),
            ),
        ];
        for (i, (expect, outcome, want)) in table.into_iter().enumerate() {
            let expect: Option<StepExpect> = expect.map(|e| serde_json::from_value(e).unwrap());
            let got = judge_step(expect.as_ref(), outcome, "/s");
            assert_eq!(
                got.as_ref().map(|u| (u.code.as_str(), u.at.as_str())),
                want,
                "row {i}: {got:?}"
            );
        }
    }

    #[test]
    fn final_state_exact_and_subset() {
        let state = json!({"a": 1, "b": {"c": [1, 2]}});
        let state = state.as_object().unwrap();
        let judge = |e: Value| {
            let e: StateExpect = serde_json::from_value(e).unwrap();
            judge_state(&e, StateView::plain(state), "/fs").map(|u| (u.at, u.message))
        };
        assert_eq!(judge(json!({"exact": {"a": 1, "b": {"c": [1, 2]}}})), None);
        assert_eq!(
            judge(json!({"exact": {"a": 1}})),
            Some(("/fs/exact".into(), "state/b is not expected".into()))
        );
        assert_eq!(judge(json!({"subset": {"b": {"c": [1]}}})), None);
        assert_eq!(
            judge(json!({"subset": {"b": {"c": [2]}}})),
            Some(("/fs/subset".into(), "state/b/c/0 is 1, expected 2".into()))
        );
    }
}
