//! The model driver: a model plays the agent of a case, one turn at a time,
//! and every tool call it asks for goes through the dispatcher under the
//! attempt's capability (`docs/agents.md`).

use crate::conversation::{
    Actor, ChatModel, ConversationSink, FunctionMap, FunctionTarget, Message, ModelError,
    ModelRequest, ModelRole, ToolCallRequest,
};
use crate::document::CallStatus;
use crate::document::DriverDoc;
use crate::expect::Unmet;
use crate::load::LoadedSimulation;
use crate::problem::{FileProblem, LoadCode};
use crate::simulated_user::{UserPlayer, agent_view, user_view};
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

/// Who plays the user besides the fixed messages: a case's simulated user
/// and the model that plays it.
pub(crate) type SimulatedUser<'a> = Option<(&'a UserPlayer, &'a dyn ChatModel)>;

/// How a user turn went.
enum UserTurn {
    /// The user said something to the agent.
    Spoke,
    /// The conversation is over: a stop marker, or the user's turn limit.
    Ended,
    /// A harness error was recorded (its code and message).
    Fault(HarnessCode, String),
}

/// Plays `messages` with `model`: the system message, then each user turn
/// — the fixed `messages`, then (with a simulated user) the user model's —
/// until the model answers without tool calls, at most `max_turns` model
/// requests in all; every message is handed to `sink` as it is added. Only
/// a failure that could not be recorded is an `Err`.
pub(crate) async fn run_model<B: Backend + 'static>(
    ctx: &AttemptContext<'_, B>,
    (system, messages, max_turns): (String, &[String], u32),
    (functions, user): (&FunctionMap, SimulatedUser<'_>),
    (model, sink, limit): (&dyn ChatModel, Option<&dyn ConversationSink>, Duration),
    case_at: &str,
) -> Result<Played, DispatchError> {
    // The attempt's deadline, on the real clock: what it bounds is how long
    // the models keep the attempt waiting (tool calls end by themselves).
    let deadline = tokio::time::Instant::now() + limit;
    let now = || ctx.dispatcher.now();
    let mut recorder = Recorder {
        played: Played::default(),
        sink,
        now: &now,
    };
    recorder.push(Message::System { content: system }).await?;
    let mut turns = 0u32;
    let mut user_turns = 0u32;
    let mut fixed = messages.iter();
    loop {
        if let Some(text) = fixed.next() {
            recorder.push(Message::user(text.clone())).await?;
        } else if let Some((player, user_model)) = user {
            let turn = user_turn(
                ctx,
                &mut recorder,
                (player, user_model, &mut user_turns),
                (deadline, limit),
                case_at,
            )
            .await?;
            if !matches!(turn, UserTurn::Spoke) {
                return Ok(recorder.played);
            }
        } else {
            return Ok(recorder.played);
        }
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
            let view = agent_view(&recorder.played.conversation);
            let request = ModelRequest {
                messages: &view,
                tools: functions.tools(),
            };
            let Ok(answered) = tokio::time::timeout_at(deadline, model.complete(request)).await
            else {
                past_deadline(ctx, limit, "the model").await?;
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
                            .push(Message::tool(call.id.clone(), content))
                            .await?;
                    }
                    Answer::Stop => return Ok(recorder.played),
                }
            }
        }
    }
}

/// Records that the attempt ran past its deadline waiting for `whom`;
/// the message recorded.
async fn past_deadline<B: Backend>(
    ctx: &AttemptContext<'_, B>,
    limit: Duration,
    whom: &str,
) -> Result<String, DispatchError> {
    let message = format!(
        "the attempt ran past its deadline of {} s while waiting for {whom}",
        limit.as_secs()
    );
    let detail = json!({"attempt_timeout_secs": limit.as_secs()});
    record(ctx, HarnessCode::AttemptTimeout, message.clone(), detail).await?;
    Ok(message)
}

/// What a simulated user answered an agent outside toolmock
/// ([`UserConversation::ask`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserReply {
    /// The user's next message.
    Said(String),
    /// The user's last message, which ended the conversation with `marker`.
    Stopped {
        /// The message.
        text: String,
        /// The stop marker it contains.
        marker: String,
    },
    /// The conversation is over: it was stopped before, or the user's turn
    /// limit is reached now (an unmet `turn_limit`).
    Ended,
    /// The user model failed; the harness error is recorded.
    Fault {
        /// `user_unavailable`, `user_failed` or `attempt_timeout`.
        code: HarnessCode,
        /// Its message.
        message: String,
    },
}

/// A simulated user's conversation with an agent outside toolmock (an MCP
/// client asking through `toolmock serve`'s `ask_user`): the agent's words
/// come in one message at a time, and the user model answers each as it
/// answers the model driver. What it keeps is concluded with the attempt.
#[derive(Debug, Default)]
pub struct UserConversation {
    played: Played,
    used: u32,
    over: bool,
}

impl UserConversation {
    /// A conversation kept elsewhere, resumed (the API keeps each message
    /// in PostgreSQL as it is added, and every `ask-user` request may reach
    /// another process): its messages and when each was added. The user has
    /// used one turn per message of its own, and the conversation is over
    /// once one of them carried a stop marker.
    pub fn resume(conversation: Vec<Message>, times: Vec<DateTime<Utc>>) -> Self {
        let used = conversation
            .iter()
            .filter(|m| matches!(m, Message::User { .. }))
            .count();
        let over = conversation
            .iter()
            .any(|m| matches!(m, Message::User { stop: Some(_), .. }));
        Self {
            played: Played {
                conversation,
                times,
                ..Played::default()
            },
            used: u32::try_from(used).unwrap_or(u32::MAX),
            over,
        }
    }

    /// The agent says `agent_says` (nothing: it only asks for the user's
    /// message, e.g. the first) and the user answers. Each request waits at
    /// most `limit` for the user model; every message added is handed to
    /// `sink` (when there is one) as it is added.
    pub async fn ask<B: Backend + 'static>(
        &mut self,
        ctx: &AttemptContext<'_, B>,
        agent_says: Option<String>,
        (player, model, limit): (&UserPlayer, &dyn ChatModel, Duration),
        (case_at, sink): (&str, Option<&dyn ConversationSink>),
    ) -> Result<UserReply, DispatchError> {
        if self.over {
            return Ok(UserReply::Ended);
        }
        let now = || ctx.dispatcher.now();
        let mut recorder = Recorder {
            played: std::mem::take(&mut self.played),
            sink,
            now: &now,
        };
        if let Some(text) = agent_says.filter(|t| !t.is_empty()) {
            recorder
                .push(Message::Assistant {
                    content: Some(text),
                    tool_calls: Vec::new(),
                })
                .await?;
        }
        let deadline = tokio::time::Instant::now() + limit;
        let turn = user_turn(
            ctx,
            &mut recorder,
            (player, model, &mut self.used),
            (deadline, limit),
            case_at,
        )
        .await?;
        self.played = recorder.played;
        let last = match self.played.conversation.last() {
            Some(Message::User { content, stop, .. }) => Some((content.clone(), stop.clone())),
            _ => None,
        };
        Ok(match (turn, last) {
            (UserTurn::Fault(code, message), _) => {
                self.over = true;
                UserReply::Fault { code, message }
            }
            (UserTurn::Ended, Some((text, Some(marker)))) => {
                self.over = true;
                UserReply::Stopped { text, marker }
            }
            (UserTurn::Spoke, Some((text, _))) => UserReply::Said(text),
            _ => {
                self.over = true;
                UserReply::Ended
            }
        })
    }

    /// What it kept, for the attempt's conclusion: the unmet `turn_limit`
    /// (if any), the messages and when each was added.
    pub fn into_parts(self) -> (Vec<Unmet>, Vec<Message>, Vec<DateTime<Utc>>) {
        (
            self.played.unmet,
            self.played.conversation,
            self.played.times,
        )
    }
}

/// The unmet `turn_limit` of a conversation with an agent outside toolmock
/// whose simulated user wrote all its `max_turns` messages and none of them
/// carried a stop marker: the conversation did not end as the user's
/// instructions say it ends, exactly as the model driver would have found
/// when it asked the user for one more turn. `None` otherwise.
pub fn user_turns_used_up(
    max_turns: u32,
    conversation: &[Message],
    case_at: &str,
) -> Option<Unmet> {
    let mut written = 0u32;
    for message in conversation {
        if let Message::User { stop, .. } = message {
            if stop.is_some() {
                return None;
            }
            written = written.saturating_add(1);
        }
    }
    (written >= max_turns).then(|| turn_limit(max_turns, case_at))
}

/// The user's `turn_limit`, unmet.
fn turn_limit(max_turns: u32, case_at: &str) -> Unmet {
    Unmet::new(
        pointer::push(&pointer::push(case_at, "user"), "max_turns"),
        "turn_limit",
        format!(
            "the user model had written {max_turns} message(s), its limit, and the conversation had not ended"
        ),
    )
}

/// The simulated user's turn: the user model is asked (again after each of
/// its own tool calls) until it says something to the agent, ends the
/// conversation with a stop marker, reaches its turn limit or fails.
async fn user_turn<B: Backend + 'static>(
    ctx: &AttemptContext<'_, B>,
    recorder: &mut Recorder<'_>,
    (player, model, used): (&UserPlayer, &dyn ChatModel, &mut u32),
    (deadline, limit): (tokio::time::Instant, Duration),
    case_at: &str,
) -> Result<UserTurn, DispatchError> {
    loop {
        if *used >= player.max_turns {
            recorder
                .played
                .unmet
                .push(turn_limit(player.max_turns, case_at));
            return Ok(UserTurn::Ended);
        }
        *used += 1;
        let view = user_view(&player.system, &recorder.played.conversation);
        let request = ModelRequest {
            messages: &view,
            tools: player.functions.tools(),
        };
        let Ok(answered) = tokio::time::timeout_at(deadline, model.complete(request)).await else {
            let message = past_deadline(ctx, limit, "the user model").await?;
            return Ok(UserTurn::Fault(HarnessCode::AttemptTimeout, message));
        };
        let reply = match answered {
            Ok(reply) => reply,
            Err(error) => {
                let code = match error {
                    ModelError::Unavailable(_) => HarnessCode::UserUnavailable,
                    ModelError::Failed(_) | ModelError::TooLarge { .. } => HarnessCode::UserFailed,
                    // The user model's miss is the cassette's, as the
                    // agent's and the judge's are.
                    ModelError::CassetteMiss { .. } => HarnessCode::CassetteMiss,
                    ModelError::BudgetExhausted(_) => HarnessCode::BudgetExhausted,
                };
                let message = error.to_string().replacen("the model", "the user model", 1);
                let fault = HarnessFault {
                    code,
                    message: message.clone(),
                    path: error.pointer(),
                };
                record_fault(ctx, fault, error.detail()).await?;
                return Ok(UserTurn::Fault(code, message));
            }
        };
        if let Some(usage) = reply.usage {
            recorder.played.usage.push(RequestUsage {
                role: ModelRole::User,
                turn: *used,
                usage,
            });
        }
        let content = reply.content.unwrap_or_default();
        let unusable = if content.trim().is_empty() && reply.tool_calls.is_empty() {
            Some("the user model's answer has neither text nor tool calls")
        } else if !reply.tool_calls.is_empty() && player.functions.tools().is_empty() {
            Some("the user model asked for tool calls, but the case's user has no tools")
        } else {
            None
        };
        if let Some(why) = unusable {
            record(ctx, HarnessCode::UserFailed, why.to_owned(), json!({})).await?;
            return Ok(UserTurn::Fault(HarnessCode::UserFailed, why.to_owned()));
        }
        let stop = player.stop_in(&content).map(str::to_owned);
        let calls = reply.tool_calls;
        recorder
            .push(Message::User {
                content,
                stop: stop.clone(),
                tool_calls: calls.clone(),
            })
            .await?;
        for call in &calls {
            match answer(ctx, &player.functions, call).await? {
                Answer::Tool(content) => {
                    recorder
                        .push(Message::Tool {
                            tool_call_id: call.id.clone(),
                            content,
                            actor: Actor::User,
                        })
                        .await?;
                }
                Answer::Stop => {
                    let why = "a call of the user's own tools ended in a harness error";
                    return Ok(UserTurn::Fault(HarnessCode::UserFailed, why.to_owned()));
                }
            }
        }
        if stop.is_some() {
            return Ok(UserTurn::Ended);
        }
        if calls.is_empty() {
            return Ok(UserTurn::Spoke);
        }
    }
}

/// Cases a run without a model (`model`), a user model (`user`) or a judge
/// (`judge`) cannot play: a `model` driver without a model, a simulated
/// user without a user model, a `judge` rubric without a judge.
pub(crate) fn unconfigured(
    loaded: &LoadedSimulation,
    (model, user): (bool, bool),
    judge: bool,
) -> Vec<FileProblem> {
    let mut problems = Vec::new();
    for (i, case) in loaded.document.cases.iter().enumerate() {
        let at = pointer::index("/cases", i);
        let model_driver = matches!(case.driver, DriverDoc::Model { .. });
        if model_driver && !model {
            problems.push(FileProblem::load(
                loaded.file.clone(),
                pointer::push(&at, "driver"),
                LoadCode::ModelNotConfigured,
                "a model driver needs a model endpoint: give --model-url and --model",
            ));
        } else if case.user.is_some() && !user {
            problems.push(FileProblem::load(
                loaded.file.clone(),
                pointer::push(&at, "user"),
                LoadCode::UserModelNotConfigured,
                "a simulated user needs a user model: give --user-model-url and --user-model (or --model-url and --model, which it shares by default)",
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

#[cfg(test)]
mod tests {
    use super::*;

    fn stopped(text: &str) -> Message {
        Message::User {
            content: text.into(),
            stop: Some("###STOP###".into()),
            tool_calls: Vec::new(),
        }
    }

    fn said(text: &str) -> Message {
        Message::Assistant {
            content: Some(text.into()),
            tool_calls: Vec::new(),
        }
    }

    /// The rule an external agent's conversation is judged by: the user's
    /// turns used up without a stop marker, whoever spoke last.
    #[test]
    fn a_user_whose_turns_are_used_up_without_a_stop_has_not_ended() {
        let two = [Message::user("a"), said("b"), Message::user("c")];
        let unmet = user_turns_used_up(2, &two, "/cases/3").expect("used up");
        assert_eq!(
            (unmet.code.as_str(), unmet.at.as_str()),
            ("turn_limit", "/cases/3/user/max_turns")
        );
        assert!(user_turns_used_up(3, &two, "/cases/3").is_none());
        let ended = [Message::user("a"), said("b"), stopped("bye ###STOP###")];
        assert!(user_turns_used_up(2, &ended, "/cases/3").is_none());
        assert!(user_turns_used_up(1, &[], "/cases/3").is_none());
    }

    /// A conversation kept elsewhere resumes where it was: the user's
    /// turns counted, over once stopped.
    #[test]
    fn a_resumed_conversation_counts_the_users_turns_and_its_end() {
        let going = UserConversation::resume(vec![Message::user("a"), said("b")], Vec::new());
        assert_eq!((going.used, going.over), (1, false));
        let over = UserConversation::resume(vec![said("b"), stopped("###STOP###")], Vec::new());
        assert_eq!((over.used, over.over), (1, true));
    }
}
