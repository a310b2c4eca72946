//! The results document (`toolmock run --json`) and the coverage report.
//! Nothing in it depends on ids, the clock or the number of jobs.

use crate::conversation::{Actor, Message, ModelRole};
use crate::document::{CallStatus, CaseDoc};
use crate::expect::{RecordedCall, Unmet};
use crate::usage::{Price, RequestUsage, TokenUsage};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::time::Duration;
use toolmock_runtime::model::{
    AttemptOutcome, EvidenceRecord, Executor, HarnessErrorRecord, PinRecord, PinRef, PinTarget,
    SimulationMode, ToolInputErrorRecord, VariantChoice,
};

/// The whole run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResults {
    /// Exactly 2 (version 2 renamed a case's count `as_expected` to
    /// `attempts_as_expected`).
    pub results_version: u32,
    /// The simulation's name.
    pub simulation: String,
    /// Sandbox or real tools.
    pub mode: SimulationMode,
    /// Attempts per case.
    pub attempts_per_case: u32,
    /// Whether every attempt ended as its case expects.
    pub ok: bool,
    /// Counts.
    pub summary: Summary,
    /// Per case, in document order.
    pub cases: Vec<CaseResult>,
    /// Per pinned operation: which variants and rules ran.
    pub coverage: Vec<OperationCoverage>,
    /// The sha256 of the shared fixtures (the canonical JSON of the array
    /// of their objects, in order), when the simulation gives any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixtures_hash: Option<String>,
    /// Pinned mocks whose latest verification found them diverged from
    /// the real tool (the service fills it from its stored verifications,
    /// docs/verify.md; an embedded run has none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diverged_mocks: Vec<DivergedMock>,
}

/// A pinned mock that no longer tells the truth about its real tool: the
/// latest verification of its definition diverged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DivergedMock {
    /// The tool, as the agent calls it.
    pub tool: String,
    /// The operation.
    pub operation: String,
    /// The pinned definition's hash.
    pub definition_hash: String,
    /// The verification that found it (its id).
    pub verification: String,
    /// When (RFC 3339).
    pub verified_at: String,
    /// How many divergences it found.
    pub divergences: u32,
}

/// Counts over every attempt.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Summary {
    /// Cases.
    pub cases: u32,
    /// Attempts.
    pub attempts: u32,
    /// Attempts that ended as their case expects.
    pub as_expected: u32,
    /// Attempts that ended `passed`.
    pub passed: u32,
    /// … `failed`.
    pub failed: u32,
    /// … `harness_error`.
    pub harness_error: u32,
    /// The sum of every attempt's `virtual_time_ms`, over all attempts
    /// (not the run's duration: attempts run concurrently, and a virtual
    /// delay costs no wall time).
    pub virtual_time_ms: u64,
    /// The model tokens of every attempt (absent when none reported usage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenUsage>,
}

/// One case.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseResult {
    /// Its name.
    pub name: String,
    /// How its attempts must end.
    pub expected_outcome: AttemptOutcome,
    /// How many of its attempts ended so (each attempt says so in its own
    /// boolean `as_expected`).
    pub attempts_as_expected: u32,
    /// `attempts_as_expected / attempts`.
    pub pass_rate: f64,
    /// pass^k: whether all k attempts ended as expected.
    pub pass_k: PassK,
    /// Its attempts, by number.
    pub attempts: Vec<AttemptResult>,
    /// The model tokens of its attempts (absent when none reported usage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenUsage>,
}

/// pass^k (τ-bench's reliability measure) for k = the case's attempts.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct PassK {
    /// The number of attempts.
    pub k: u32,
    /// Whether all of them ended as expected.
    pub passed: bool,
}

/// One attempt.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AttemptResult {
    /// 1, 2, … within its case.
    pub number: u32,
    /// How it ended.
    pub outcome: AttemptOutcome,
    /// Whether that is what the case expects.
    pub as_expected: bool,
    /// Every expectation that did not hold, the first first.
    pub unmet: Vec<Unmet>,
    /// Its harness errors.
    pub harness_errors: Vec<ErrorEntry>,
    /// Its tool input errors.
    pub tool_input_errors: Vec<ErrorEntry>,
    /// The sum of its calls' `delay_ms`.
    pub virtual_time_ms: u64,
    /// Its calls, in order (the evidence, trimmed of ids and timestamps).
    pub calls: Vec<CallReport>,
    /// A model-driven attempt's conversation, every message in order (the
    /// model endpoint's configuration is never part of it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conversation: Vec<Message>,
    /// The judge model's grade of the case's rubric, when it was asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeReport>,
    /// The usage of each model request (the agent model's and the judge's)
    /// whose answer reported it, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_requests: Vec<RequestUsage>,
    /// Their sum (absent when no request reported usage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenUsage>,
    /// Wall time (not in the document: it differs from run to run).
    #[serde(skip)]
    pub wall: Duration,
    /// The full records, when asked for (`--evidence`).
    #[serde(skip)]
    pub raw: Option<RawAttempt>,
}

impl AttemptResult {
    /// What to show for a failure: the first unmet expectation, else the first harness error.
    pub fn first_problem(&self) -> Option<String> {
        if let Some(h) = self.harness_errors.first()
            && self.outcome == AttemptOutcome::HarnessError
            && !self.as_expected
        {
            return Some(h.describe());
        }
        if let Some(u) = self.unmet.first() {
            let at = if u.at.is_empty() { "/" } else { &u.at };
            return Some(format!("{at}: {}: {}", u.code, u.message));
        }
        self.harness_errors.first().map(ErrorEntry::describe)
    }
}

/// One recorded call as the results document keeps it: arguments and result
/// as compact JSON text (a 10,000-attempt run keeps 100,000 of them; a small
/// JSON object as a tree costs ten times its text).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallReport {
    /// Tool name.
    pub tool: String,
    /// Operation name.
    pub operation: String,
    /// The arguments.
    pub arguments: Box<RawValue>,
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
    pub result: Option<Box<RawValue>>,
    /// (Version 2) the domain error `{code, message, data?}`, for a call
    /// that answered one (`status` `domain_error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Box<RawValue>>,
    /// The variant used, for successes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// The matched rule, for successes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<u32>,
    /// The simulated delay.
    pub delay_ms: u32,
    /// `external` for a call a real handler answered (real-tools runs);
    /// absent for the mock's answers and for errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub executor: Option<Executor>,
    /// `user` for a call a simulated user made with its own tools; absent
    /// for the agent's calls.
    #[serde(default, skip_serializing_if = "Actor::is_agent")]
    pub actor: Actor,
}

fn raw(value: &Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(value)
        .unwrap_or_else(|_| serde_json::value::to_raw_value(&Value::Null).expect("null serializes"))
}

impl From<RecordedCall> for CallReport {
    fn from(c: RecordedCall) -> Self {
        CallReport {
            arguments: raw(&c.arguments),
            result: c.result.as_ref().map(raw),
            error: c.error.as_ref().map(raw),
            tool: c.tool,
            operation: c.operation,
            status: c.status,
            code: c.code,
            path: c.path,
            variant: c.variant,
            rule: c.rule,
            delay_ms: c.delay_ms,
            executor: c.executor.filter(|e| *e == Executor::Real),
            actor: Actor::Agent,
        }
    }
}

/// Everything an attempt recorded, for `--evidence`.
#[derive(Debug, Clone)]
pub struct RawAttempt {
    /// Evidence rows.
    pub evidence: Vec<EvidenceRecord>,
    /// Tool input errors.
    pub tool_input_errors: Vec<ToolInputErrorRecord>,
    /// Harness errors.
    pub harness_errors: Vec<HarnessErrorRecord>,
    /// The state after the last call, as its layers: the simulation's
    /// shared base (one for every attempt) and what the attempt changed.
    pub final_state: toolmock_runtime::model::LayeredSnapshot,
    /// When each message of the conversation was added (the dispatcher's
    /// injected clock, the evidence's, to place it among the records), in
    /// the conversation's order.
    pub message_times: Vec<DateTime<Utc>>,
}

/// The judge model's grade of a rubric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeReport {
    /// `pass` or `fail`.
    pub verdict: String,
    /// From 0 to 1.
    pub score: f64,
    /// Why, in the judge's words.
    pub reasoning: String,
}

/// A recorded error, trimmed of ids and timestamps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorEntry {
    /// Tool name, when a call caused it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Operation name, when a call caused it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// Its code.
    pub code: String,
    /// Its message.
    pub message: String,
    /// Its JSON pointer, where one applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

impl ErrorEntry {
    /// From a harness error record.
    pub fn harness(r: &HarnessErrorRecord) -> Self {
        ErrorEntry {
            tool: r.tool.clone(),
            operation: r.operation.clone(),
            code: r.code.to_string(),
            message: r.message.clone(),
            path: r.path.clone(),
        }
    }

    /// From a tool input error record.
    pub fn tool_input(r: &ToolInputErrorRecord) -> Self {
        ErrorEntry {
            tool: Some(r.tool.clone()),
            operation: Some(r.operation.clone()),
            code: r.code.to_string(),
            message: r.message.clone(),
            path: r.path.clone(),
        }
    }

    /// `harness_error CODE at TOOL/OP PATH: MESSAGE`.
    pub fn describe(&self) -> String {
        let mut text = format!("harness_error {}", self.code);
        if let (Some(t), Some(o)) = (&self.tool, &self.operation) {
            text.push_str(&format!(" in {t}/{o}"));
        }
        if let Some(p) = &self.path {
            text.push_str(&format!(" at {}", if p.is_empty() { "/" } else { p }));
        }
        text.push_str(&format!(": {}", self.message));
        text
    }
}

/// Coverage of one operation of the simulation: of its pinned definition,
/// or none for an operation left unpinned (`allow_incomplete`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OperationCoverage {
    /// Tool name.
    pub tool: String,
    /// Operation name.
    pub operation: String,
    /// `revision N` or `inline HASH`; `unpinned (REASON)`.
    pub pin: String,
    /// The pinned definition's hash (none for an unpinned operation): the
    /// same whichever runtime pinned it, library revision or inline tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition_hash: Option<String>,
    /// Whether a definition was pinned (an unpinned operation has no
    /// branches and counts for no coverage).
    pub pinned: bool,
    /// Calls answered by it (failed calls not included).
    pub calls: u64,
    /// Its variant/rule branches: per variant, each rule and the variant's
    /// own fields.
    pub branches: u64,
    /// How many of them a call exercised: none of a variant no call
    /// reached; every one of a variant only failing calls reached (their
    /// rule is unknown).
    pub exercised: u64,
    /// Per variant.
    pub variants: Vec<VariantCoverage>,
    /// Everything never exercised: `VARIANT` (never used), `VARIANT/rules/N`,
    /// `VARIANT/own` (the variant's own fields never answered).
    pub never: Vec<String>,
}

/// Coverage of one variant.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VariantCoverage {
    /// Its name.
    pub name: String,
    /// Calls it answered.
    pub calls: u64,
    /// Calls under it that ended in an error (their rule is unknown).
    pub failed: u64,
    /// Calls answered by its own fields (no rule matched).
    pub own: u64,
    /// Calls answered by each rule, by index.
    pub rules: Vec<u64>,
}

/// The coverage of every pinned definition over the given attempts (each
/// its recorded calls, with its case's variant choices). A call that failed
/// (no evidence, so no recorded variant) counts for the variant its case
/// chose, or the default.
pub fn coverage<'a>(
    pins: &[PinRecord],
    attempts: impl Iterator<Item = (&'a [CallReport], &'a [VariantChoice])>,
) -> Vec<OperationCoverage> {
    let defaults: BTreeMap<(&str, &str), &str> = pins
        .iter()
        .filter_map(|p| match &p.pin {
            PinTarget::Pinned { definition, .. } => Some((
                (p.tool.as_str(), p.operation.as_str()),
                definition.get("default_variant")?.as_str()?,
            )),
            PinTarget::Unpinned { .. } => None,
        })
        .collect();
    let mut used: BTreeMap<(&str, &str, &str), BTreeMap<Option<u32>, u64>> = BTreeMap::new();
    let mut failed: BTreeMap<(&str, &str, &str), u64> = BTreeMap::new();
    for (calls, choices) in attempts {
        for c in calls {
            if let Some(v) = &c.variant {
                *used
                    .entry((c.tool.as_str(), c.operation.as_str(), v.as_str()))
                    .or_default()
                    .entry(c.rule)
                    .or_default() += 1;
            } else if c.status != CallStatus::Ok {
                let chosen = choices
                    .iter()
                    .find(|v| v.tool == c.tool && v.operation == c.operation)
                    .map(|v| v.variant.as_str())
                    .or_else(|| {
                        defaults
                            .get(&(c.tool.as_str(), c.operation.as_str()))
                            .copied()
                    });
                if let Some(v) = chosen {
                    *failed
                        .entry((c.tool.as_str(), c.operation.as_str(), v))
                        .or_default() += 1;
                }
            }
        }
    }
    let mut out: Vec<OperationCoverage> = pins
        .iter()
        .map(|p| match &p.pin {
            PinTarget::Unpinned { reason } => OperationCoverage {
                tool: p.tool.clone(),
                operation: p.operation.clone(),
                pin: format!("unpinned ({reason})"),
                definition_hash: None,
                pinned: false,
                calls: 0,
                branches: 0,
                exercised: 0,
                variants: vec![],
                never: vec![],
            },
            PinTarget::Pinned {
                pin, definition, ..
            } => {
                let mut variants = Vec::new();
                let mut never = Vec::new();
                let (mut branches, mut exercised) = (0, 0);
                for (name, variant) in definition
                    .get("variants")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                {
                    let rule_count = variant
                        .get("rules")
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len);
                    let counts = used.get(&(p.tool.as_str(), p.operation.as_str(), name.as_str()));
                    let count =
                        |rule: Option<u32>| counts.and_then(|c| c.get(&rule)).copied().unwrap_or(0);
                    let rules: Vec<u64> = (0..rule_count)
                        .map(|r| count(Some(u32::try_from(r).unwrap_or(u32::MAX))))
                        .collect();
                    let own = count(None);
                    let errors = failed
                        .get(&(p.tool.as_str(), p.operation.as_str(), name.as_str()))
                        .copied()
                        .unwrap_or(0);
                    let calls = own + rules.iter().sum::<u64>();
                    let own_and_rules = 1 + rules.len() as u64;
                    branches += own_and_rules;
                    if calls == 0 && errors > 0 {
                        // Only failing calls: the variant ran, its rules and
                        // own fields cannot be told apart.
                        exercised += own_and_rules;
                    } else if calls == 0 {
                        never.push(name.clone());
                    } else {
                        exercised +=
                            u64::from(own > 0) + rules.iter().filter(|n| **n > 0).count() as u64;
                        for (r, n) in rules.iter().enumerate() {
                            if *n == 0 {
                                never.push(format!("{name}/rules/{r}"));
                            }
                        }
                        if own == 0 {
                            never.push(format!("{name}/own"));
                        }
                    }
                    variants.push(VariantCoverage {
                        name: name.clone(),
                        calls,
                        failed: errors,
                        own,
                        rules,
                    });
                }
                OperationCoverage {
                    tool: p.tool.clone(),
                    operation: p.operation.clone(),
                    pin: match pin {
                        PinRef::Library { revision, .. } => format!("revision {revision}"),
                        PinRef::Inline { definition_hash } => {
                            format!("inline {}", definition_hash.as_str())
                        }
                        PinRef::Effect { definition_hash } => {
                            format!("effect {}", definition_hash.as_str())
                        }
                    },
                    definition_hash: Some(pin.definition_hash().as_str().to_owned()),
                    pinned: true,
                    calls: variants.iter().map(|v| v.calls).sum(),
                    branches,
                    exercised,
                    variants,
                    never,
                }
            }
        })
        .collect();
    out.sort_by(|a, b| (&a.tool, &a.operation).cmp(&(&b.tool, &b.operation)));
    out
}

impl PassK {
    fn of(attempts: &[AttemptResult]) -> Self {
        let k = u32::try_from(attempts.len()).unwrap_or(u32::MAX);
        PassK {
            k,
            passed: !attempts.is_empty() && attempts.iter().all(|a| a.as_expected),
        }
    }
}

impl CaseResult {
    pub(crate) fn new(case: &CaseDoc, attempts: Vec<AttemptResult>) -> Self {
        let n = attempts.len();
        let good = attempts.iter().filter(|a| a.as_expected).count();
        #[allow(clippy::cast_precision_loss)]
        let pass_rate = if n == 0 { 0.0 } else { good as f64 / n as f64 };
        CaseResult {
            name: case.name.clone(),
            expected_outcome: case.expect.outcome,
            attempts_as_expected: u32::try_from(good).unwrap_or(u32::MAX),
            pass_rate,
            pass_k: PassK::of(&attempts),
            tokens: TokenUsage::sum(attempts.iter().map(|a| &a.tokens)),
            attempts,
        }
    }
}

impl RunResults {
    /// Prices every model request by `price` (its role's model's price per
    /// million tokens, if any), and sums the costs per attempt, case and run.
    pub fn price(&mut self, price: &dyn Fn(ModelRole) -> Option<Price>) {
        for case in &mut self.cases {
            for attempt in &mut case.attempts {
                attempt.tokens = TokenUsage::of(&attempt.model_requests, price);
            }
            case.tokens = TokenUsage::sum(case.attempts.iter().map(|a| &a.tokens));
        }
        self.summary.tokens = TokenUsage::sum(self.cases.iter().map(|c| &c.tokens));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolmock_contract::{
        DefinitionHash, OperationContract, OperationIdentity, OperationSource,
    };
    use toolmock_runtime::error::IncompleteStatus;

    fn pinned(tool: &str, definition: Value) -> PinRecord {
        PinRecord {
            tool: tool.into(),
            operation: "op".into(),
            pin: PinTarget::Pinned {
                pin: PinRef::Inline {
                    definition_hash: DefinitionHash::of(&definition).unwrap(),
                },
                contract: OperationContract {
                    operation: OperationIdentity {
                        source: OperationSource::Custom,
                        name: "op".into(),
                    },
                    description: String::new(),
                    input_schema: json!({}),
                    output_schema: json!({}),
                },
                definition,
            },
        }
    }

    fn answered(tool: &str, variant: &str, rule: Option<u32>) -> CallReport {
        CallReport {
            tool: tool.into(),
            operation: "op".into(),
            arguments: raw(&json!({})),
            status: CallStatus::Ok,
            code: None,
            path: None,
            result: Some(raw(&json!({}))),
            error: None,
            variant: Some(variant.into()),
            rule,
            delay_ms: 0,
            executor: None,
            actor: Actor::Agent,
        }
    }

    /// An operation no call reached exercised none of its branches; an
    /// unpinned one has none; a reached one counts each rule and its
    /// variants' own fields that answered.
    #[test]
    fn coverage_counts_only_what_calls_exercised() {
        let definition = json!({"default_variant": "a", "variants": {
            "a": {"result": {}, "rules": [{"when": [], "result": {}}, {"when": [], "result": {}}]},
            "b": {"result": {}}
        }});
        let pins = [
            pinned("reached", definition.clone()),
            pinned("unreached", definition),
            PinRecord {
                tool: "unpinned".into(),
                operation: "op".into(),
                pin: PinTarget::Unpinned {
                    reason: IncompleteStatus::Missing,
                },
            },
        ];
        let calls = [
            answered("reached", "a", Some(1)),
            answered("reached", "b", None),
        ];
        let report = coverage(&pins, std::iter::once((&calls[..], &[][..])));
        let counts: Vec<(&str, bool, u64, u64, Vec<&str>)> = report
            .iter()
            .map(|c| {
                (
                    c.tool.as_str(),
                    c.pinned,
                    c.exercised,
                    c.branches,
                    c.never.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            counts,
            [
                ("reached", true, 2, 4, vec!["a/rules/0", "a/own"]),
                ("unpinned", false, 0, 0, vec![]),
                ("unreached", true, 0, 4, vec!["a", "b"]),
            ]
        );
    }
}
