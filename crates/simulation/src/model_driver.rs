//! The model driver: a model plays the agent of a case, one turn at a time,
//! and every tool call it asks for goes through the dispatcher under the
//! attempt's capability (`docs/agents.md`).

use crate::conversation::{
    ChatModel, ConversationSink, FunctionMap, FunctionTarget, Message, ModelError, ModelRequest,
    ModelRole, ToolCallRequest,
};
use crate::document::CallStatus;
use crate::document::DriverDoc;
use crate::expect::Unmet;
use crate::load::LoadedSimulation;
use crate::problem::{FileProblem, LoadCode};
use crate::usage::RequestUsage;
use crate::workflow::{AttemptContext, CallFailure};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use std::time::Duration;
use toolmock_contract::pointer;
use toolmock_runtime::backend::Backend;
use toolmock_runtime::dispatcher::ToolCall;
use toolmock_runtime::error::{
    AttemptFault, DispatchError, HarnessCode, HarnessFault, ToolInputCode, ToolInputFault,
};

/// What a model-driven attempt left for the judge.
#[derive(Debug, Default)]
pub(crate) struct Played {
    /// What its driver found unmet (`turn_limit`).
    pub unmet: Vec<Unmet>,
    /// Every message, in order.
    pub conversation: Vec<Message>,
    /// When each was added (the dispatcher's injected clock, the evidence's
    /// clock), to place it among the records.
    pub times: Vec<DateTime<Utc>>,
    /// The usage of every model request whose answer reported it, in order.
    pub usage: Vec<RequestUsage>,
}

/// The conversation as it is played: kept in memory for the results, and
/// by the sink (when there is one) as each message is added.
struct Recorder<'s> {
    played: Played,
    sink: Option<&'s dyn ConversationSink>,
    /// The dispatcher's clock (never the wall clock: under a virtual clock
    /// the conversation and the evidence must agree).
    now: &'s (dyn Fn() -> DateTime<Utc> + Sync),
}

impl Recorder<'_> {
    async fn push(&mut self, message: Message) -> Result<(), DispatchError> {
        let at = (self.now)();
        if let Some(sink) = self.sink {
            let position = u32::try_from(self.played.conversation.len()).unwrap_or(u32::MAX);
            sink.keep(position, &message, at)
                .await
                .map_err(DispatchError::Store)?;
        }
        self.played.conversation.push(message);
        self.played.times.push(at);
        Ok(())
    }
}

/// How one tool call ended, for the model.
enum Answer {
    /// The text of the tool message.
    Tool(String),
    /// A harness error was recorded: the conversation ends here.
    Stop,
}

/// The tool message of a tool input error; `path` only when there is one
/// (an invented function name or unreadable arguments have none).
fn error_message(code: &str, message: &str, path: Option<&str>) -> String {
    let mut error = json!({"class": "tool_input_error", "code": code, "message": message});
    if let (Some(path), Value::Object(map)) = (path, &mut error) {
        map.insert("path".into(), json!(path));
    }
    json!({ "error": error }).to_string()
}

/// The tool message of a version-2 domain error: the operation's own error
/// answer (`order_not_found`), told apart from a tool input error by its
/// class (docs/agents.md).
fn domain_error_message(code: &str, message: &str, data: Option<&Value>) -> String {
    let mut error = json!({"class": "domain_error", "code": code, "message": message});
    if let (Some(data), Value::Object(map)) = (data, &mut error) {
        map.insert("data".into(), data.clone());
    }
    json!({ "error": error }).to_string()
}

/// Plays `messages` with `model`: the system message, then each user turn
/// until the model answers without tool calls, at most `max_turns` model
/// requests in all; every message is handed to `sink` as it is added. Only
/// a failure that could not be recorded is an `Err`.
pub(crate) async fn run_model<B: Backend + 'static>(
    ctx: &AttemptContext<'_, B>,
    (system, messages, max_turns): (String, &[String], u32),
    functions: &FunctionMap,
    (model, sink, limit): (&dyn ChatModel, Option<&dyn ConversationSink>, Duration),
    case_at: &str,
) -> Result<Played, DispatchError> {
    // The attempt's deadline, on the real clock: what it bounds is how long
    // the model keeps the attempt waiting (tool calls end by themselves).
    let deadline = tokio::time::Instant::now() + limit;
    let now = || ctx.dispatcher.now();
    let mut recorder = Recorder {
        played: Played::default(),
        sink,
        now: &now,
    };
    recorder.push(Message::System { content: system }).await?;
    let mut turns = 0u32;
    for user in messages {
        recorder
            .push(Message::User {
                content: user.clone(),
            })
            .await?;
        loop {
            if turns >= max_turns {
                recorder.played.unmet.push(Unmet::new(
                    pointer::push(&pointer::push(case_at, "driver"), "max_turns"),
                    "turn_limit",
                    format!("the model was still calling tools after {max_turns} turn(s)"),
                ));
                return Ok(recorder.played);
            }
            turns += 1;
            let request = ModelRequest {
                messages: &recorder.played.conversation,
                tools: functions.tools(),
            };
            let Ok(answered) = tokio::time::timeout_at(deadline, model.complete(request)).await
            else {
                let message = format!(
                    "the attempt ran past its deadline of {} s while waiting for the model",
                    limit.as_secs()
                );
                let detail = json!({"attempt_timeout_secs": limit.as_secs()});
                record(ctx, HarnessCode::AttemptTimeout, message, detail).await?;
                return Ok(recorder.played);
            };
            let reply = match answered {
                Ok(reply) => reply,
                Err(error) => {
                    let code = match error {
                        ModelError::Unavailable(_) => HarnessCode::AgentUnavailable,
                        ModelError::Failed(_) | ModelError::TooLarge { .. } => {
                            HarnessCode::ModelFailed
                        }
                        ModelError::CassetteMiss { .. } => HarnessCode::CassetteMiss,
                        ModelError::BudgetExhausted(_) => HarnessCode::BudgetExhausted,
                    };
                    let fault = HarnessFault {
                        code,
                        message: error.to_string(),
                        path: error.pointer(),
                    };
                    record_fault(ctx, fault, error.detail()).await?;
                    return Ok(recorder.played);
                }
            };
            if let Some(usage) = reply.usage {
                recorder.played.usage.push(RequestUsage {
                    role: ModelRole::Agent,
                    turn: turns,
                    usage,
                });
            }
            let calls = reply.tool_calls.clone();
            recorder
                .push(Message::Assistant {
                    content: reply.content,
                    tool_calls: reply.tool_calls,
                })
                .await?;
            if calls.is_empty() {
                break;
            }
            // Parallel calls of one turn run one after the other, in order.
            for call in &calls {
                match answer(ctx, functions, call).await? {
                    Answer::Tool(content) => {
                        recorder
                            .push(Message::Tool {
                                tool_call_id: call.id.clone(),
                                content,
                            })
                            .await?;
                    }
                    Answer::Stop => return Ok(recorder.played),
                }
            }
        }
    }
    Ok(recorder.played)
}

/// Cases a run without a model (`model`) or a judge (`judge`) cannot play: a `model` driver without a model, a
/// `judge` rubric without a judge.
pub(crate) fn unconfigured(
    loaded: &LoadedSimulation,
    model: bool,
    judge: bool,
) -> Vec<FileProblem> {
    let mut problems = Vec::new();
    for (i, case) in loaded.document.cases.iter().enumerate() {
        let at = pointer::index("/cases", i);
        if matches!(case.driver, DriverDoc::Model { .. }) && !model {
            problems.push(FileProblem::load(
                loaded.file.clone(),
                pointer::push(&at, "driver"),
                LoadCode::ModelNotConfigured,
                "a model driver needs a model endpoint: give --model-url and --model",
            ));
        }
        if case.expect.judge.is_some() && !judge {
            problems.push(FileProblem::load(
                loaded.file.clone(),
                pointer::push(&pointer::push(&at, "expect"), "judge"),
                LoadCode::JudgeNotConfigured,
                "a judge rubric needs a judge model: give --judge-model (and --judge-url unless it is --model-url's)",
            ));
        }
    }
    problems
}

async fn record<B: Backend>(
    ctx: &AttemptContext<'_, B>,
    code: HarnessCode,
    message: String,
    detail: serde_json::Value,
) -> Result<(), DispatchError> {
    let fault = HarnessFault {
        code,
        message,
        path: None,
    };
    record_fault(ctx, fault, detail).await
}

async fn record_fault<B: Backend>(
    ctx: &AttemptContext<'_, B>,
    fault: HarnessFault,
    detail: serde_json::Value,
) -> Result<(), DispatchError> {
    ctx.dispatcher
        .record_fault(ctx.tenant, ctx.attempt, None, None, fault, detail)
        .await
        .map(|_| ())
        .map_err(DispatchError::Store)
}

/// Records a tool input error found before dispatch and returns its tool
/// message (or stops, when it could not be kept).
async fn refuse<B: Backend>(
    ctx: &AttemptContext<'_, B>,
    call: ToolCall,
    code: ToolInputCode,
    message: String,
) -> Result<Answer, DispatchError> {
    let fault = ToolInputFault {
        code,
        message,
        path: None,
        violations: json!([]),
    };
    match ctx
        .dispatcher
        .record_fault(ctx.tenant, ctx.attempt, Some(&call), None, fault, json!({}))
        .await
    {
        Ok(AttemptFault::ToolInput(f)) => Ok(Answer::Tool(error_message(
            f.code.as_str(),
            &f.message,
            None,
        ))),
        Ok(AttemptFault::Harness(_)) => Ok(Answer::Stop),
        Err(e) => Err(DispatchError::Store(e)),
    }
}

async fn answer<B: Backend + 'static>(
    ctx: &AttemptContext<'_, B>,
    functions: &FunctionMap,
    call: &ToolCallRequest,
) -> Result<Answer, DispatchError> {
    let text = call.arguments.trim();
    // An empty arguments text is an empty object (some servers send "" for
    // a call without arguments).
    let parsed = if text.is_empty() {
        Ok(json!({}))
    } else {
        serde_json::from_str::<Value>(text)
    };
    let Some(target) = functions.resolve(&call.name) else {
        let arguments = parsed.unwrap_or_else(|_| Value::String(call.arguments.clone()));
        return refuse(
            ctx,
            ToolCall::new(call.name.clone(), "", arguments),
            ToolInputCode::UnknownFunction,
            format!(
                "there is no function {:?}; call one of the functions you were given",
                call.name
            ),
        )
        .await;
    };
    let (tool, operation) = match target {
        FunctionTarget::Operation { tool, operation } => (tool.as_str(), operation.as_str()),
        FunctionTarget::Workflow(name) => (name.as_str(), ""),
    };
    let arguments = match parsed {
        Ok(value @ Value::Object(_)) => value,
        Ok(_) | Err(_) => {
            let why = match parsed {
                Err(e) => format!("the arguments are not JSON: {e}"),
                Ok(_) => "the arguments must be a JSON object".to_owned(),
            };
            return refuse(
                ctx,
                ToolCall::new(tool, operation, Value::String(call.arguments.clone())),
                ToolInputCode::InvalidArgumentsJson,
                why,
            )
            .await;
        }
    };
    let outcome: Result<Value, Answer> = match target {
        FunctionTarget::Operation { tool, operation } => match ctx
            .dispatcher
            .call(
                ctx.tenant,
                ctx.capability,
                &ToolCall::new(tool.clone(), operation.clone(), arguments),
            )
            .await
        {
            Ok(result) => Ok(result),
            Err(DispatchError::ToolInput(f)) => Err(Answer::Tool(error_message(
                f.code.as_str(),
                &f.message,
                f.path.as_deref(),
            ))),
            // Recorded already; never shown to the model.
            Err(DispatchError::Harness(_)) => Err(Answer::Stop),
            Err(DispatchError::Domain(e)) => Err(Answer::Tool(domain_error_message(
                &e.code,
                &e.message,
                e.data.as_ref(),
            ))),
            Err(other) => return Err(other),
        },
        FunctionTarget::Workflow(name) => match ctx.run_workflow(name, arguments, None).await {
            Ok(result) => Ok(result),
            Err(CallFailure::Recorded {
                class: CallStatus::ToolInputError,
                code,
                message,
                ..
            }) => Err(Answer::Tool(error_message(&code, &message, None))),
            Err(CallFailure::Recorded {
                class: CallStatus::DomainError,
                code,
                message,
                ..
            }) => Err(Answer::Tool(domain_error_message(&code, &message, None))),
            Err(CallFailure::Recorded { .. }) => Err(Answer::Stop),
            Err(CallFailure::Fatal(e)) => return Err(e),
        },
    };
    // The result exactly as rendered: its JSON text, no wrapper.
    Ok(outcome.map_or_else(|answer| answer, |result| Answer::Tool(result.to_string())))
}
