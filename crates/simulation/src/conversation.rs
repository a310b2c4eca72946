//! The boundary between the model driver and a model: the conversation's
//! messages, the function tools offered, and the [`ChatModel`] trait an
//! adapter implements (`toolmock-agent` for OpenAI-compatible endpoints).
//! Nothing here speaks HTTP: a model is whatever answers a
//! [`ModelRequest`] with a [`ModelReply`].
//!
//! Function names: an endpoint accepts `^[A-Za-z0-9_-]{1,64}$`, so an
//! operation is offered as `TOOL__OPERATION` and a workflow as its name,
//! every other character written `_` and the name cut to 64 characters;
//! when two would get one name, the later (in the agent's `tools` order,
//! operations in their tool's order) gets `_2`, `_3`, … (cut to fit). The
//! map is kept both ways, so a name the model sends back is resolved
//! exactly, and one it invents is not resolved at all.

pub use crate::document::Actor;
use crate::document::AgentDoc;
use crate::load::LoadedSimulation;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use toolmock_runtime::error::StoreError;

/// One message of a model-driven conversation, as sent to and received from
/// the model (and as recorded: the conversation is evidence).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// The agent's prompt and guards.
    System {
        /// The text.
        content: String,
    },
    /// A user turn: one of the case's `messages`, or a simulated user's
    /// reply.
    User {
        /// The text.
        content: String,
        /// The stop marker the text contains, when a simulated user ended
        /// the conversation with it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop: Option<String>,
        /// A simulated user's calls of its own tools (the agent never sees
        /// this message: only the user's words reach it).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCallRequest>,
    },
    /// The model's answer: text, tool calls, or both.
    Assistant {
        /// Its text (none when it only calls tools).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        /// Its tool calls, in the order the model gave them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCallRequest>,
    },
    /// What a tool call produced: the rendered result as JSON text, or a
    /// tool input error (`{"error": {…}}`).
    Tool {
        /// The call answered.
        tool_call_id: String,
        /// The text sent back.
        content: String,
        /// Whose call it answers (`agent` unless written).
        #[serde(default, skip_serializing_if = "Actor::is_agent")]
        actor: Actor,
    },
}

impl Message {
    /// A user turn of plain text.
    pub fn user(content: impl Into<String>) -> Self {
        Message::User {
            content: content.into(),
            stop: None,
            tool_calls: Vec::new(),
        }
    }

    /// A tool message answering one of the agent's calls.
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message::Tool {
            tool_call_id: tool_call_id.into(),
            content: content.into(),
            actor: Actor::Agent,
        }
    }
}

/// One function call the model asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallRequest {
    /// The model's id for it (echoed in the tool message).
    pub id: String,
    /// The function name, as the model wrote it.
    pub name: String,
    /// The arguments, as the JSON text the model wrote.
    pub arguments: String,
}

/// A function tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionTool {
    /// The function name (the mapping in this module's documentation).
    pub name: String,
    /// The contract's description (a workflow's description).
    pub description: String,
    /// The contract's input JSON Schema (`{"type": "object"}` for a workflow).
    pub parameters: Value,
}

/// One request to the model: the whole conversation so far and the tools.
#[derive(Debug, Clone, Copy)]
pub struct ModelRequest<'a> {
    /// The conversation so far.
    pub messages: &'a [Message],
    /// The function tools (empty for a judge).
    pub tools: &'a [FunctionTool],
}

/// What the model answered.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModelReply {
    /// Its text.
    pub content: Option<String>,
    /// Its tool calls, in order.
    pub tool_calls: Vec<ToolCallRequest>,
    /// The tokens the endpoint says the answer took, when it says.
    pub usage: Option<Usage>,
}

/// The tokens one model answer took, as the endpoint reported them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the request (`prompt_tokens`).
    pub prompt_tokens: u64,
    /// Tokens of the answer (`completion_tokens`).
    pub completion_tokens: u64,
    /// Of the prompt tokens, those the endpoint served from its cache, when
    /// it says (`prompt_tokens_details.cached_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// A cassette replayed the answer in a run that sends what its cassette
    /// lacks live (`--cassette-mode auto`): these tokens were spent when it
    /// was recorded, not by this run, and no budget counts them
    /// (docs/cassettes.md, "Token usage and cost").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replayed: bool,
}

/// Which model of an attempt a request is for: a cassette keeps their
/// exchanges apart, a usage report names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelRole {
    /// The model that plays the agent.
    Agent,
    /// The judge model that grades a rubric.
    Judge,
    /// The model that plays a case's simulated user.
    User,
}

impl ModelRole {
    /// Its stable text.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelRole::Agent => "agent",
            ModelRole::Judge => "judge",
            ModelRole::User => "user",
        }
    }
}

/// The attempt a model's requests belong to (handed to
/// [`ChatModel::for_attempt`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptScope {
    /// The case's name.
    pub case: String,
    /// The attempt's number within its case (1, 2, …).
    pub attempt: u32,
}

/// Why a model gave no reply. Either ends the attempt `harness_error`: it
/// is never the agent's failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// Unreachable or failing after the adapter's retries (`agent_unavailable`).
    #[error("the model is unavailable: {0}")]
    Unavailable(String),
    /// It answered, but not with a usable completion (`model_failed`).
    #[error("the model's answer is unusable: {0}")]
    Failed(String),
    /// Its answer was longer than the client reads (`model_failed`, with
    /// the reason `response_too_large` in the record's detail).
    #[error(
        "the model's answer is unusable: it exceeded the {limit_bytes}-byte limit on an answer (--model-max-response-bytes)"
    )]
    TooLarge {
        /// The limit, in bytes.
        limit_bytes: u64,
    },
    /// The run's budget of tokens or cost is spent: the request was not
    /// sent (`budget_exhausted`).
    #[error("{0}")]
    BudgetExhausted(String),
    /// A cassette in replay mode has no answer for the request
    /// (`cassette_miss`): the message names the case, the attempt, the turn
    /// and the first difference; `detail` carries them as fields.
    #[error("{message}")]
    CassetteMiss {
        /// What was asked for and where the request differs.
        message: String,
        /// `{"case", "attempt", "turn", "role", "pointer"}`.
        detail: Value,
    },
}

impl ModelError {
    /// The detail a harness error for it records: `{"reason":
    /// "response_too_large", "limit_bytes": N}` for [`ModelError::TooLarge`],
    /// an empty object otherwise.
    pub fn detail(&self) -> serde_json::Value {
        match self {
            ModelError::TooLarge { limit_bytes } => {
                serde_json::json!({"reason": "response_too_large", "limit_bytes": limit_bytes})
            }
            ModelError::CassetteMiss { detail, .. } => detail.clone(),
            _ => serde_json::json!({}),
        }
    }

    /// The JSON pointer its harness error carries as its `path`: where a
    /// cassette miss's request first differs from the recorded one.
    pub fn pointer(&self) -> Option<String> {
        match self {
            ModelError::CassetteMiss { detail, .. } => detail
                .get("pointer")
                .and_then(Value::as_str)
                .map(str::to_owned),
            _ => None,
        }
    }
}

/// A boxed, sendable future (the trait is object-safe).
pub type ModelFuture<'a> =
    Pin<Box<dyn Future<Output = Result<ModelReply, ModelError>> + Send + 'a>>;

/// A model that plays an agent (or grades a rubric): one completion per
/// request. Implementations retry transient failures themselves and bound
/// their concurrent requests; the driver only sees a reply or an error.
pub trait ChatModel: Send + Sync + std::fmt::Debug {
    /// Answers one request.
    fn complete<'a>(&'a self, request: ModelRequest<'a>) -> ModelFuture<'a>;

    /// What besides the request determines the answer — the model name and
    /// the sampling parameters sent with every request — as a JSON object
    /// (a cassette keys its exchanges by it). Never the endpoint's URL or
    /// key. Default: nothing (`{}`).
    fn identity(&self) -> Value {
        json!({})
    }

    /// The model as one attempt uses it: a model that keeps per-attempt
    /// state (a cassette counts the attempt's turns and its repeated
    /// requests) answers a view of itself; `None` (the default) means the
    /// model itself.
    fn for_attempt(&self, scope: &AttemptScope) -> Option<std::sync::Arc<dyn ChatModel>> {
        let _ = scope;
        None
    }
}

/// `model` as `scope`'s attempt uses it ([`ChatModel::for_attempt`]).
pub fn attempt_model(
    model: &std::sync::Arc<dyn ChatModel>,
    scope: &AttemptScope,
) -> std::sync::Arc<dyn ChatModel> {
    model.for_attempt(scope).unwrap_or_else(|| model.clone())
}

/// A boxed, sendable future of a [`ConversationSink`].
pub type SinkFuture<'a> = Pin<Box<dyn Future<Output = Result<(), StoreError>> + Send + 'a>>;

/// Where a model-driven attempt's messages are kept as they are added, so
/// that the conversation is evidence even when the attempt never ends (a
/// worker's PostgreSQL table). The embedded runner has none: its results
/// carry the conversation.
pub trait ConversationSink: Send + Sync {
    /// Keeps message `position` (0 for the system message) of the attempt,
    /// added at `at`. An error ends the run (the message was not kept).
    fn keep<'a>(&'a self, position: u32, message: &'a Message, at: DateTime<Utc>)
    -> SinkFuture<'a>;
}

/// What a function name stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FunctionTarget {
    /// An operation of a tool.
    Operation {
        /// The tool's name.
        tool: String,
        /// The operation's runtime name.
        operation: String,
    },
    /// A workflow of the agent.
    Workflow(String),
}

/// The function tools of an agent and the map back from their names.
#[derive(Debug, Clone, Default)]
pub struct FunctionMap {
    tools: Vec<FunctionTool>,
    targets: HashMap<String, FunctionTarget>,
}

/// The longest function name endpoints accept.
pub const MAX_FUNCTION_NAME: usize = 64;

fn clean(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn cut(text: &str, max: usize) -> &str {
    // Clean names are ASCII: any index is a char boundary.
    &text[..text.len().min(max)]
}

impl FunctionMap {
    /// Adds `target` under the name derived from `wanted`, unique in this map.
    fn add(
        &mut self,
        wanted: &str,
        description: String,
        parameters: Value,
        target: FunctionTarget,
    ) {
        let base = clean(wanted);
        let mut name = cut(&base, MAX_FUNCTION_NAME).to_owned();
        let mut n = 2u32;
        while name.is_empty() || self.targets.contains_key(&name) {
            let suffix = format!("_{n}");
            name = format!("{}{suffix}", cut(&base, MAX_FUNCTION_NAME - suffix.len()));
            n += 1;
        }
        self.targets.insert(name.clone(), target);
        self.tools.push(FunctionTool {
            name,
            description,
            parameters,
        });
    }

    /// The map of `(tool, operations)` and workflows, in that order: each
    /// operation is `(name, description, input schema)`.
    pub fn build<'a>(
        tools: impl IntoIterator<Item = (&'a str, Vec<(&'a str, &'a str, &'a Value)>)>,
        workflows: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Self {
        let mut map = Self::default();
        for (tool, operations) in tools {
            for (operation, description, schema) in operations {
                map.add(
                    &format!("{tool}__{operation}"),
                    description.to_owned(),
                    schema.clone(),
                    FunctionTarget::Operation {
                        tool: tool.to_owned(),
                        operation: operation.to_owned(),
                    },
                );
            }
        }
        for (workflow, description) in workflows {
            map.add(
                workflow,
                description.to_owned(),
                json!({"type": "object"}),
                FunctionTarget::Workflow(workflow.to_owned()),
            );
        }
        map
    }

    /// The functions of a loaded simulation's agent: the operations of the
    /// tools it names, then its workflows it names, in its `tools` order.
    pub fn of_agent(loaded: &LoadedSimulation) -> Self {
        let agent: &AgentDoc = &loaded.document.agent;
        let workflows = agent.tools.iter().filter_map(|name| {
            let w = agent.workflows.iter().find(|w| &w.name == name)?;
            Some((w.name.as_str(), w.description.as_str()))
        });
        Self::build(Self::operations_of(loaded, &agent.tools), workflows)
    }

    /// The functions of the tools `names` names (a simulated user's: no
    /// workflow), in that order.
    pub fn of_tools(loaded: &LoadedSimulation, names: &[String]) -> Self {
        Self::build(Self::operations_of(loaded, names), std::iter::empty())
    }

    /// Each tool `names` names with its operations, as [`Self::build`]
    /// takes them; a name that is no tool (a workflow) is left out.
    fn operations_of<'a>(
        loaded: &'a LoadedSimulation,
        names: &'a [String],
    ) -> impl Iterator<Item = (&'a str, Vec<(&'a str, &'a str, &'a Value)>)> {
        names.iter().filter_map(|name| {
            let tool = loaded.tools.iter().find(|t| &t.name == name)?;
            Some((
                tool.name.as_str(),
                tool.operations
                    .iter()
                    .map(|op| {
                        (
                            op.operation.name.as_str(),
                            op.description.as_str(),
                            &op.input_schema,
                        )
                    })
                    .collect(),
            ))
        })
    }

    /// The function tools, in the order they are offered.
    pub fn tools(&self) -> &[FunctionTool] {
        &self.tools
    }

    /// What a function name stands for; `None` for a name never offered.
    pub fn resolve(&self, name: &str) -> Option<&FunctionTarget> {
        self.targets.get(name)
    }
}

/// The system message of an agent: its prompt, then its guards as a list.
pub fn system_message(agent: &AgentDoc) -> String {
    let mut text = agent.prompt.clone();
    if !agent.guards.is_empty() {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str("Prerequisites you must respect:");
        for guard in &agent.guards {
            text.push_str("\n- ");
            text.push_str(guard);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops<'a>(names: &[&'a str], schema: &'a Value) -> Vec<(&'a str, &'a str, &'a Value)> {
        names.iter().map(|n| (*n, "", schema)).collect()
    }

    #[test]
    fn names_are_valid_unique_and_resolve_back() {
        let schema = json!({"type": "object"});
        let long = "x".repeat(80);
        let map = FunctionMap::build(
            [
                ("a.b", ops(&["c"], &schema)),
                ("a_b", ops(&["c"], &schema)),
                ("crm", ops(&["GET /members/{id}", "find member"], &schema)),
                (long.as_str(), ops(&["one", "two"], &schema)),
            ],
            [("a_b__c", ""), ("", "")],
        );
        let names: Vec<&str> = map.tools().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names[..4],
            [
                "a_b__c",
                "a_b__c_2",
                "crm__GET__members__id_",
                "crm__find_member"
            ]
        );
        // Both long names are cut to 64 and told apart by the suffix.
        assert_eq!(names[4].len(), 64);
        assert_eq!(names[5], format!("{}_2", &names[4][..62]));
        // A workflow whose name an operation took gets the next suffix; an
        // empty name becomes `_2`.
        assert_eq!(names[6], "a_b__c_3");
        assert_eq!(names[7], "_2");
        let unique: std::collections::HashSet<&str> = names.iter().copied().collect();
        assert_eq!(unique.len(), names.len());
        for name in &names {
            assert!(
                name.len() <= MAX_FUNCTION_NAME
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                "{name}"
            );
        }
        assert_eq!(
            map.resolve("a_b__c_2"),
            Some(&FunctionTarget::Operation {
                tool: "a_b".into(),
                operation: "c".into()
            })
        );
        assert_eq!(
            map.resolve("a_b__c"),
            Some(&FunctionTarget::Operation {
                tool: "a.b".into(),
                operation: "c".into()
            })
        );
        assert_eq!(
            map.resolve("a_b__c_3"),
            Some(&FunctionTarget::Workflow("a_b__c".into()))
        );
        assert_eq!(map.resolve("delete_everything"), None);
    }

    #[test]
    fn the_system_message_holds_prompt_and_guards() {
        let agent = AgentDoc {
            name: "a".into(),
            prompt: "You book visits.".into(),
            guards: vec!["verify the member first".into()],
            tools: vec![],
            workflows: vec![],
        };
        assert_eq!(
            system_message(&agent),
            "You book visits.\n\nPrerequisites you must respect:\n- verify the member first"
        );
    }
}
