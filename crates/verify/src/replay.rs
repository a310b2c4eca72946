//! Behaviour: what is replayed against a real tool, and the replay itself.
//!
//! Each example of a replayed variant is one check; each recording and each
//! chain is a sequence, replayed in order (the mock carrying its state from
//! call to call, from every mock's `initial_state`). Nothing is called for
//! an operation the `verify` block does not mark safe: such a call is a
//! skipped check, and the executor is never given a handler for it. Real
//! calls go through [`RealExecutor`], at most `concurrency` at once per tool.

use crate::matchers::Divergence;
use crate::report::{Answer, CheckReport, CheckStatus, Sequence};
use crate::settings::parse_step;
use crate::subject::{Source, Subject, SubjectOperation};
use crate::{DivergenceKind, SkipReason};
use serde_json::{Map, Value};
use tokio::sync::Semaphore;
use toolmock_contract::pointer;
use toolmock_discovery::{RealAnswer, RealExecutor};
use toolmock_evaluator::{Call, evaluate_with_contract};

/// One call to replay.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    /// A chain step's id, for later steps' `$step` references.
    pub(crate) id: Option<String>,
    pub(crate) operation: String,
    pub(crate) name: String,
    pub(crate) source: Source,
    pub(crate) sequence: Option<Sequence>,
    pub(crate) variant: Option<String>,
    /// The input as written (a chain step's may hold `$step` references).
    pub(crate) input: Value,
    /// The mock's answer (computed before anything real runs).
    pub(crate) mock: Option<Answer>,
    /// Why it is not called, when it is not.
    pub(crate) skip: Option<(SkipReason, String)>,
}

/// Independent calls run concurrently; a sequence's steps run in order.
#[derive(Debug, Clone)]
pub(crate) enum Unit {
    One(Box<Step>),
    Sequence(Vec<Step>),
}

fn skip(reason: SkipReason, message: impl Into<String>) -> Option<(SkipReason, String)> {
    Some((reason, message.into()))
}

/// Whether `subject` may call `op` for real, and if not why.
fn callable(subject: &Subject, op: &SubjectOperation) -> Option<(SkipReason, String)> {
    if !subject.settings.safe.allows(&op.name) {
        return skip(
            SkipReason::NotSafe,
            format!(
                "{} is not marked safe to call (verify.safe): it was not called",
                op.name
            ),
        );
    }
    if !subject.handled(op) {
        return skip(
            SkipReason::NoRealHandler,
            format!("{} has no MCP server and no endpoint to call", op.name),
        );
    }
    None
}

/// Everything to replay against `subject`, in report order.
pub(crate) fn plan(subject: &Subject) -> Vec<Unit> {
    let mut units = Vec::new();
    for op in &subject.operations {
        let Some(mock) = &op.mock else {
            continue;
        };
        let examples = mock.definition["examples"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let default = mock.definition["default_variant"]
            .as_str()
            .unwrap_or_default();
        for (i, example) in examples.iter().enumerate() {
            let variant = example["variant"].as_str().unwrap_or(default).to_owned();
            let source = Source {
                file: mock.source.file.clone(),
                path: pointer::index(&pointer::push(&mock.source.path, "examples"), i),
            };
            let skip = callable(subject, op)
                .or_else(|| {
                    (variant != default && !subject.settings.variants.contains(&variant)).then(|| {
                        (
                            SkipReason::VariantNotReplayed,
                            format!(
                                "variant {variant:?} is not the default and verify.variants does not name it"
                            ),
                        )
                    })
                })
                .or_else(|| {
                    example.get("state").is_some().then(|| {
                        (
                            SkipReason::NeedsState,
                            "the example starts from a state of its own, which the real tool cannot be put in: replay it in a chain".to_owned(),
                        )
                    })
                });
            let mock_answer = match (&example.get("expected"), &example.get("expected_error")) {
                (_, Some(error)) => Answer::Error {
                    class: "domain_error".into(),
                    code: error["code"].as_str().unwrap_or_default().to_owned(),
                    message: error["message"].as_str().unwrap_or_default().to_owned(),
                },
                (Some(expected), None) => Answer::Result((*expected).clone()),
                (None, None) => continue,
            };
            units.push(Unit::One(Box::new(Step {
                id: None,
                operation: op.name.clone(),
                name: format!("example {i}"),
                source,
                sequence: None,
                variant: Some(variant),
                input: example["input"].clone(),
                mock: Some(mock_answer),
                skip,
            })));
        }
    }
    for recording in &subject.recordings {
        let mut state = subject.initial_state();
        let mut steps = Vec::new();
        for (i, call) in recording.calls.iter().enumerate() {
            let source = Source {
                file: recording.file.clone(),
                path: pointer::index("/calls", i),
            };
            let sequence = Some(Sequence {
                kind: "recording",
                name: recording.name.clone(),
                step: i,
            });
            let name = format!("recording {} #{i}", recording.name);
            let Some(op) = subject.operation(&call.tool) else {
                steps.push(Step {
                    id: None,
                    operation: call.tool.clone(),
                    name,
                    source,
                    sequence,
                    variant: None,
                    input: call.arguments.clone(),
                    mock: None,
                    skip: skip(
                        SkipReason::UnknownOperation,
                        format!("the tool has no operation {:?}", call.tool),
                    ),
                });
                continue;
            };
            let mock = mock_answer(op, &call.arguments, None, &mut state);
            steps.push(Step {
                id: None,
                operation: op.name.clone(),
                name,
                source,
                sequence,
                variant: None,
                input: call.arguments.clone(),
                mock: Some(mock),
                skip: callable(subject, op),
            });
        }
        if !steps.is_empty() {
            units.push(Unit::Sequence(steps));
        }
    }
    for (c, chain) in subject.settings.chains.iter().enumerate() {
        let mut state = subject.initial_state();
        let mut mock_steps: Vec<(Option<String>, Value, Option<Answer>)> = Vec::new();
        let mut steps = Vec::new();
        for (s, step) in chain.steps.iter().enumerate() {
            let Some(op) = subject.operation(&step.operation) else {
                continue; // refused when the block was compiled
            };
            let mock = match resolve(&step.input, &mock_steps) {
                Ok(input) => {
                    let answer = mock_answer(op, &input, step.variant.as_deref(), &mut state);
                    mock_steps.push((step.id.clone(), input, Some(answer.clone())));
                    answer
                }
                Err(why) => {
                    mock_steps.push((step.id.clone(), Value::Null, None));
                    Answer::Error {
                        class: "harness_error".into(),
                        code: "reference_unresolved".into(),
                        message: why,
                    }
                }
            };
            steps.push(Step {
                id: step.id.clone(),
                operation: op.name.clone(),
                name: format!("chain {} #{s}", chain.name),
                source: Source {
                    file: subject.block.file.clone(),
                    path: pointer::index(
                        &pointer::push(
                            &pointer::index(&pointer::push(&subject.block.path, "chains"), c),
                            "steps",
                        ),
                        s,
                    ),
                },
                sequence: Some(Sequence {
                    kind: "chain",
                    name: chain.name.clone(),
                    step: s,
                }),
                variant: step.variant.clone(),
                input: step.input.clone(),
                mock: Some(mock),
                skip: callable(subject, op),
            });
        }
        units.push(Unit::Sequence(steps));
    }
    units
}

/// The mock's answer to `input` in `state`, which its state updates then change.
fn mock_answer(
    op: &SubjectOperation,
    input: &Value,
    variant: Option<&str>,
    state: &mut Map<String, Value>,
) -> Answer {
    let Some(mock) = &op.mock else {
        return Answer::Error {
            class: "harness_error".into(),
            code: "missing_definition".into(),
            message: format!("{} has no mock", op.name),
        };
    };
    let call = Call {
        input,
        state,
        variant,
    };
    match evaluate_with_contract(&mock.compiled, &op.compiled_contract, &call) {
        Ok(outcome) => match &outcome.error {
            Some(error) => Answer::Error {
                class: "domain_error".into(),
                code: error.code.clone(),
                message: error.message.clone(),
            },
            None => {
                outcome.apply_to(state);
                Answer::Result(outcome.result)
            }
        },
        Err(e) => Answer::Error {
            class: e.class().as_str().into(),
            code: e.code().into(),
            message: e.to_string(),
        },
    }
}

/// `input` with every `{"$step": "ID.result.P"}` / `ID.arguments.P`
/// replaced from `done` (the side's earlier steps: id, input, answer).
fn resolve(
    input: &Value,
    done: &[(Option<String>, Value, Option<Answer>)],
) -> Result<Value, String> {
    match input {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get("$step") {
                let (id, part, path) = parse_step(reference)
                    .ok_or_else(|| format!("{reference:?} is not ID.result.PATH"))?;
                let (_, arguments, answer) = done
                    .iter()
                    .find(|(step, _, _)| step.as_deref() == Some(id))
                    .ok_or_else(|| format!("no earlier step {id:?}"))?;
                let root = match part {
                    "arguments" => Some(arguments),
                    _ => answer.as_ref().and_then(Answer::result),
                };
                return root
                    .and_then(|root| at_path(root, path))
                    .cloned()
                    .ok_or_else(|| {
                        format!("{reference} does not resolve: step {id:?} answered no such value")
                    });
            }
            map.iter()
                .map(|(k, v)| Ok((k.clone(), resolve(v, done)?)))
                .collect::<Result<Map<_, _>, String>>()
                .map(Value::Object)
        }
        Value::Array(items) => items
            .iter()
            .map(|v| resolve(v, done))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        other => Ok(other.clone()),
    }
}

/// A dot path (`a.0.b`, the mock language's) in `value`; `""` is the value.
fn at_path<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    if path.is_empty() {
        return Some(value);
    }
    path.split('.').try_fold(value, |v, segment| match v {
        Value::Object(map) => map.get(segment),
        Value::Array(items) => items.get(segment.parse::<usize>().ok()?),
        _ => None,
    })
}

/// What a tool needs to replay.
pub(crate) struct Replayer<'a> {
    pub(crate) subject: &'a Subject,
    pub(crate) executor: &'a RealExecutor,
    pub(crate) permits: &'a Semaphore,
}

impl Replayer<'_> {
    /// Replays one unit; its reports in order.
    pub(crate) async fn run(&self, unit: Unit) -> Vec<CheckReport> {
        match unit {
            Unit::One(step) => vec![self.step(*step, &[]).await.0],
            Unit::Sequence(steps) => {
                let mut reports = Vec::with_capacity(steps.len());
                let mut done: Vec<(Option<String>, Value, Option<Answer>)> = Vec::new();
                let mut broken = false;
                for step in steps {
                    let id = step.id.clone();
                    if broken {
                        let mut report = self.report(&step, step.input.clone());
                        report.status = CheckStatus::Skipped;
                        report.reason = Some(SkipReason::StepNotReached);
                        report.message =
                            Some("an earlier step of the sequence could not be called".into());
                        reports.push(report);
                        done.push((id, Value::Null, None));
                        continue;
                    }
                    let (report, input) = self.step(step, &done).await;
                    broken = report.status == CheckStatus::Failed;
                    done.push((id, input, report.real.clone()));
                    reports.push(report);
                }
                reports
            }
        }
    }

    fn report(&self, step: &Step, input: Value) -> CheckReport {
        CheckReport {
            operation: step.operation.clone(),
            name: step.name.clone(),
            source: step.source.clone(),
            sequence: step.sequence.clone(),
            variant: step.variant.clone(),
            input,
            status: CheckStatus::Agreed,
            reason: None,
            mock: step.mock.clone(),
            real: None,
            divergences: Vec::new(),
            message: None,
        }
    }

    /// One call: its report and the input it sent.
    async fn step(
        &self,
        step: Step,
        done: &[(Option<String>, Value, Option<Answer>)],
    ) -> (CheckReport, Value) {
        let input = match resolve(&step.input, done) {
            Ok(input) => input,
            Err(why) => {
                let mut report = self.report(&step, step.input.clone());
                report.status = CheckStatus::Skipped;
                report.reason = Some(SkipReason::ReferenceUnresolved);
                report.message = Some(why);
                return (report, Value::Null);
            }
        };
        let mut report = self.report(&step, input.clone());
        if let Some((reason, message)) = &step.skip {
            report.status = CheckStatus::Skipped;
            report.reason = Some(*reason);
            report.message = Some(message.clone());
            return (report, input);
        }
        let answer = {
            let _permit = self.permits.acquire().await;
            self.executor
                .answer(&self.subject.tool, &step.operation, &input)
                .await
        };
        let real = match answer {
            Ok(RealAnswer::Result(value)) => Answer::Result(value),
            Ok(RealAnswer::Refused(text)) => Answer::Refused(text),
            Ok(RealAnswer::Unstructured(text)) => Answer::Unstructured(text),
            Err(why) => {
                report.status = CheckStatus::Failed;
                report.message = Some(why);
                return (report, input);
            }
        };
        let op = self.subject.operation(&step.operation);
        report.divergences = match (&step.mock, op) {
            (Some(mock), Some(op)) => compare(self.subject, op, mock, &real),
            _ => Vec::new(),
        };
        report.status = if report.divergences.is_empty() {
            CheckStatus::Agreed
        } else {
            CheckStatus::Diverged
        };
        report.real = Some(real);
        (report, input)
    }
}

/// Every divergence of `real` from `mock`, and every output-schema
/// violation of a real result.
pub(crate) fn compare(
    subject: &Subject,
    op: &SubjectOperation,
    mock: &Answer,
    real: &Answer,
) -> Vec<Divergence> {
    let mut out = Vec::new();
    if let Answer::Result(value) = real {
        for violation in op.compiled_contract.output_violations(value) {
            out.push(Divergence::new(
                violation.path.clone(),
                DivergenceKind::OutputSchemaViolation,
                None,
                Some(value.pointer(&violation.path).unwrap_or(value)),
                format!(
                    "the real answer breaks the output schema: {}",
                    violation.message
                ),
            ));
        }
    }
    let mock_refuses = matches!(mock, Answer::Error { .. });
    match (mock, real) {
        (Answer::Result(m), Answer::Result(r)) => {
            out.extend(subject.settings.matchers.compare(&op.name, m, r));
        }
        (Answer::Result(_), Answer::Refused(text)) => out.push(Divergence::new(
            "",
            DivergenceKind::RealRefused,
            mock.result(),
            None,
            format!("the mock answers a result, the real tool refused: {text}"),
        )),
        (_, Answer::Unstructured(text)) if !mock_refuses => out.push(Divergence::new(
            "",
            DivergenceKind::UnstructuredAnswer,
            mock.result(),
            None,
            format!("the real tool answered without structuredContent: {text}"),
        )),
        (Answer::Error { code, .. }, Answer::Result(_) | Answer::Unstructured(_)) => {
            out.push(Divergence::new(
                "",
                DivergenceKind::RealAnswered,
                None,
                real.result(),
                format!("the mock answers the error {code}, the real tool a result"),
            ));
        }
        // Both refuse: the real tool's refusal carries no code to compare.
        _ => {}
    }
    out
}
