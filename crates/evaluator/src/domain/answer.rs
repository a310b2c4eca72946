//! Domain errors (version 2): a variant or rule that answers
//! `error: {code, message, data?}` instead of `result`
//! (docs/mock-language.md, "Domain errors").
//!
//! A domain error is an ordinary answer of the mocked operation ("order not
//! found"), not a failed call: it is neither a tool input error nor a
//! harness error, it never changes state, and the output schema does not
//! apply to it.

use crate::conditions::condition::Choice;
use crate::error::{CallError, OperandFault, reject};
use crate::expr::tree::Expr;
use crate::scope::Scope;
use serde::Serialize;
use serde_json::{Map, Value};
use toolmock_contract::json_kind;

/// A domain error a call answered: what the agent receives as a tool error.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DomainError {
    /// The error's code, a literal of the definition
    /// (`^[A-Za-z][A-Za-z0-9_.:-]{0,63}$`).
    pub code: String,
    /// The rendered message.
    pub message: String,
    /// The rendered `data`, when the definition gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl DomainError {
    /// `{"code", "message", "data"?}` as a JSON object.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("code".into(), Value::String(self.code.clone()));
        map.insert("message".into(), Value::String(self.message.clone()));
        if let Some(data) = &self.data {
            map.insert("data".into(), data.clone());
        }
        Value::Object(map)
    }
}

/// What a variant or rule answers: a result, or (version 2) a domain error.
#[derive(Debug, Clone)]
pub(crate) enum Answer {
    Result(Expr),
    Error(Box<ErrorAnswer>),
}

/// A compiled `error: {code, message, data?}`.
#[derive(Debug, Clone)]
pub(crate) struct ErrorAnswer {
    pub(crate) code: Box<str>,
    pub(crate) message: Message,
    pub(crate) data: Option<Expr>,
}

/// A message: its kind is known when the definition is compiled, so that a
/// value that is not a string can be blamed on where it came from.
#[derive(Debug, Clone)]
pub(crate) enum Message {
    /// A literal string.
    Literal(Box<str>),
    /// Exactly one `$input` or `$state` reference, read per call.
    Reference(Expr),
    /// `$dateAdd`, which always gives a string.
    DateAdd(Expr),
    /// (Version 3) `$if` between two messages.
    Choice(Box<Choice<Message>>),
    /// (Version 3) `$concat`, `$format` or `$json`, which always give a string.
    Text(Expr),
}

impl Answer {
    /// The result expression, for an answer that is a result.
    pub(crate) fn result_mut(&mut self) -> Option<&mut Expr> {
        match self {
            Answer::Result(expr) => Some(expr),
            Answer::Error(_) => None,
        }
    }

    /// True for a domain error.
    pub(crate) fn is_error(&self) -> bool {
        matches!(self, Answer::Error(_))
    }
}

impl ErrorAnswer {
    /// The error of this call: the message and data rendered against the
    /// pre-call input and state.
    pub(crate) fn render(&self, scope: &Scope<'_>) -> Result<DomainError, CallError> {
        let message = self.message.render(scope)?;
        let data = match &self.data {
            Some(expr) => Some(expr.render(scope)?),
            None => None,
        };
        Ok(DomainError {
            code: self.code.to_string(),
            message,
            data,
        })
    }
}

impl Message {
    /// The message of this call.
    fn render(&self, scope: &Scope<'_>) -> Result<String, CallError> {
        Ok(match self {
            Message::Choice(choice) => return choice.pick(scope)?.render(scope),
            Message::Literal(text) => text.to_string(),
            Message::DateAdd(expr) | Message::Text(expr) => match expr.render(scope)? {
                Value::String(text) => text,
                // `$dateAdd`, `$concat` and `$format` write a string or fail.
                other => other.to_string(),
            },
            Message::Reference(expr) => match expr.render(scope)? {
                Value::String(text) => text,
                other => {
                    let Expr::Reference(r) = expr else {
                        return Err(CallError::MissingReference {
                            path: String::new(),
                            message: "an error message that is not a reference".into(),
                        });
                    };
                    return Err(r.blame(reject(
                        OperandFault::InvalidOperand,
                        format!("an error's message is a string, not {}", json_kind(&other)),
                    )));
                }
            },
        })
    }
}
