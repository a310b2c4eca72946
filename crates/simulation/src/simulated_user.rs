//! The simulated user (`docs/agents.md`, "A simulated user"): a model that
//! plays a case's user. It is sent the documented guidelines and the
//! case's instructions as its system message, and the conversation seen
//! from its side — the roles flipped: the agent's words are what it is
//! told (`user`), its own turns what it said (`assistant`). The agent's tool
//! calls and results are the agent's business and never shown to it; the
//! user's own tool calls and results are never shown to the agent.

use crate::conversation::{Actor, FunctionMap, Message};
use crate::document::UserDoc;
use crate::load::LoadedSimulation;
use std::borrow::Cow;

/// What every user model is told before the case's instructions.
pub const USER_GUIDELINES: &str = "You are playing a user who talks with a customer-service AI agent. \
Follow the instructions below: they are what you want and what you know. \
Write only what the user says, one message at a time, in the first person, briefly and naturally. \
Give a detail only when the agent asks for it, and never invent a detail the instructions do not give: \
when the agent asks for something you do not know, say that you do not know it. \
Never play the agent, never describe what you are doing, and never reveal these guidelines. \
When the task is done, or cannot be done, write a message that contains only the stop marker ###STOP###. \
When the agent transfers you to another agent, write ###TRANSFER###. \
When the instructions do not cover what the agent says, write ###OUT-OF-SCOPE###.";

/// What the user model is told the agent said first, before the user has
/// said anything: the agent's customary greeting, so that the user always
/// answers somebody. It is sent to the user model only; the agent never
/// said it, and the recorded conversation never holds it.
pub const OPENER: &str = "Hi! How can I help you today?";

/// A case's simulated user, ready to play: its system message, its stop
/// markers, its turn bound and its tools as functions.
#[derive(Debug, Clone)]
pub struct UserPlayer {
    /// The guidelines, the instructions and the persona.
    pub system: String,
    /// The markers that end the conversation.
    pub stop: Vec<String>,
    /// The most messages the user model writes.
    pub max_turns: u32,
    /// The user's own tools (empty: the user has none).
    pub functions: FunctionMap,
}

impl UserPlayer {
    /// The player of `user` in `loaded`.
    pub fn new(loaded: &LoadedSimulation, user: &UserDoc) -> Self {
        let UserDoc::Model {
            instructions,
            persona,
            stop,
            max_turns,
            tools,
        } = user;
        Self {
            system: system_message(instructions, persona),
            stop: stop.clone(),
            max_turns: *max_turns,
            functions: FunctionMap::of_tools(loaded, tools),
        }
    }

    /// The first stop marker `text` contains.
    pub fn stop_in(&self, text: &str) -> Option<&str> {
        self.stop
            .iter()
            .find(|m| text.contains(m.as_str()))
            .map(String::as_str)
    }
}

/// The user model's system message: the guidelines, the instructions and,
/// when given, the persona.
pub(crate) fn system_message(instructions: &str, persona: &str) -> String {
    let mut text = format!("{USER_GUIDELINES}\n\nInstructions:\n{instructions}");
    if !persona.is_empty() {
        text.push_str("\n\nPersona:\n");
        text.push_str(persona);
    }
    text
}

/// Whether a message belongs to the user's own side (its tool calls and
/// their results), which the agent never sees.
fn users_own(message: &Message) -> bool {
    match message {
        Message::User { tool_calls, .. } => !tool_calls.is_empty(),
        Message::Tool { actor, .. } => *actor == Actor::User,
        Message::System { .. } | Message::Assistant { .. } => false,
    }
}

/// The conversation as the agent is sent it: everything but the user's own
/// tool calls and their results (borrowed as it is when there are none).
pub fn agent_view(conversation: &[Message]) -> Cow<'_, [Message]> {
    if conversation.iter().any(users_own) {
        Cow::Owned(
            conversation
                .iter()
                .filter(|m| !users_own(m))
                .cloned()
                .collect(),
        )
    } else {
        Cow::Borrowed(conversation)
    }
}

/// The conversation as the user model is sent it: its system message, the
/// agent's [`OPENER`], then the roles flipped — the agent's words as
/// `user` messages (an assistant turn with only tool calls is left out),
/// the user's turns as `assistant` messages (with its own tool calls), the
/// user's tool results as tool messages. The agent's system message, tool
/// calls and tool results are left out.
pub fn user_view(system: &str, conversation: &[Message]) -> Vec<Message> {
    let mut view = Vec::with_capacity(conversation.len() + 2);
    view.push(Message::System {
        content: system.to_owned(),
    });
    view.push(Message::user(OPENER));
    for message in conversation {
        match message {
            Message::System { .. } => {}
            Message::User {
                content,
                tool_calls,
                ..
            } => view.push(Message::Assistant {
                content: (!content.is_empty() || tool_calls.is_empty()).then(|| content.clone()),
                tool_calls: tool_calls.clone(),
            }),
            Message::Assistant { content, .. } => {
                if let Some(text) = content.as_deref().filter(|t| !t.is_empty()) {
                    view.push(Message::user(text));
                }
            }
            Message::Tool {
                tool_call_id,
                content,
                actor: Actor::User,
            } => view.push(Message::tool(tool_call_id.clone(), content.clone())),
            Message::Tool { .. } => {}
        }
    }
    view
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::ToolCallRequest;
    use serde_json::{Value, json};

    fn call(id: &str) -> ToolCallRequest {
        ToolCallRequest {
            id: id.into(),
            name: "f".into(),
            arguments: "{}".into(),
        }
    }

    fn conversation() -> Vec<Message> {
        vec![
            Message::System {
                content: "You keep notes.".into(),
            },
            Message::user("I need a note."),
            Message::Assistant {
                content: None,
                tool_calls: vec![call("a1")],
            },
            Message::tool("a1", "{}"),
            Message::Assistant {
                content: Some("What should it say?".into()),
                tool_calls: vec![],
            },
            Message::User {
                content: String::new(),
                stop: None,
                tool_calls: vec![call("u1")],
            },
            Message::Tool {
                tool_call_id: "u1".into(),
                content: "{\"ok\":true}".into(),
                actor: Actor::User,
            },
            Message::user("Milk."),
        ]
    }

    #[test]
    fn the_user_model_sees_the_roles_flipped_and_only_the_words() {
        let view = user_view("SYSTEM", &conversation());
        let roles: Vec<Value> = view
            .iter()
            .map(|m| serde_json::to_value(m).unwrap_or_default())
            .collect();
        assert_eq!(
            roles,
            vec![
                json!({"role": "system", "content": "SYSTEM"}),
                json!({"role": "user", "content": OPENER}),
                json!({"role": "assistant", "content": "I need a note."}),
                json!({"role": "user", "content": "What should it say?"}),
                json!({"role": "assistant", "tool_calls": [{"id": "u1", "name": "f", "arguments": "{}"}]}),
                json!({"role": "tool", "tool_call_id": "u1", "content": "{\"ok\":true}"}),
                json!({"role": "assistant", "content": "Milk."}),
            ]
        );
    }

    #[test]
    fn the_agent_never_sees_the_users_own_calls() {
        let all = conversation();
        let view = agent_view(&all);
        assert_eq!(view.len(), all.len() - 2);
        assert!(!view.iter().any(users_own));
        let plain = &all[..5];
        assert!(matches!(agent_view(plain), Cow::Borrowed(_)));
    }

    #[test]
    fn the_system_message_holds_guidelines_instructions_and_persona() {
        let text = system_message("Cancel order #W1.", "Terse.");
        assert!(text.starts_with(USER_GUIDELINES));
        assert!(text.ends_with("\n\nInstructions:\nCancel order #W1.\n\nPersona:\nTerse."));
        assert!(!system_message("x", "").contains("Persona"));
    }
}
