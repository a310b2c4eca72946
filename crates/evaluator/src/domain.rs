//! Version 2's domain errors: a variant or rule that answers
//! `error: {code, message, data?}` instead of `result`
//! (docs/mock-language.md, "Domain errors").
//!
//! A domain error is an ordinary answer of the mocked operation ("order not
//! found"), not a failed call: it is neither a tool input error nor a
//! harness error, it never changes state, and the output schema does not
//! apply to it.

use crate::diagnostics::{DiagnosticCode as Code, pointer_push};
use crate::error::CallError;
use crate::expr::{Expr, ExprCompiler, Scope};
use crate::operators::{OperandFault, json_kind, reject};
use serde::Serialize;
use serde_json::{Map, Value};

/// The longest error code, in characters.
pub(crate) const MAX_CODE_LEN: usize = 64;

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
    code: Box<str>,
    message: Message,
    data: Option<Expr>,
}

/// A message: its kind is known when the definition is compiled, so that a
/// value that is not a string can be blamed on where it came from.
#[derive(Debug, Clone)]
enum Message {
    /// A literal string.
    Literal(Box<str>),
    /// Exactly one `$input` or `$state` reference, read per call.
    Reference(Expr),
    /// `$dateAdd`, which always gives a string.
    DateAdd(Expr),
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
        let message = match &self.message {
            Message::Literal(text) => text.to_string(),
            Message::DateAdd(expr) => match expr.render(scope)? {
                Value::String(text) => text,
                // `$dateAdd` writes a string or fails.
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
        };
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

/// Whether `code` is a valid error code: `^[A-Za-z][A-Za-z0-9_.:-]{0,63}$`.
pub(crate) fn valid_code(code: &str) -> bool {
    let mut chars = code.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && code.len() <= MAX_CODE_LEN
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
}

/// The fields of `error`, and of an example's `expected_error`.
pub(crate) const ERROR_FIELDS: [&str; 3] = ["code", "message", "data"];

/// Compiles `error: {code, message, data?}` at `at`, reporting every
/// problem; `None` when there was one.
pub(crate) fn compile_error(
    compiler: &mut ExprCompiler<'_>,
    value: &Value,
    at: &str,
) -> Option<ErrorAnswer> {
    let before = compiler.diagnostics.len();
    let Value::Object(map) = value else {
        compiler.diagnostics.push(
            Code::WrongType,
            at,
            format!(
                "expected an error {{\"code\", \"message\", \"data\"?}} (an object), found {}",
                json_kind(value)
            ),
        );
        return None;
    };
    for key in map.keys() {
        if !ERROR_FIELDS.contains(&key.as_str()) {
            compiler.diagnostics.push(
                Code::UnknownField,
                pointer_push(at, key),
                format!("an error has no field {key:?}; its fields are code, message, data"),
            );
        }
    }
    for key in ["code", "message"] {
        if !map.contains_key(key) {
            compiler.diagnostics.push(
                Code::MissingField,
                at,
                format!("an error needs the field {key:?}"),
            );
        }
    }
    let code_at = pointer_push(at, "code");
    let code = match map.get("code") {
        Some(Value::String(code)) if valid_code(code) => Some(Box::<str>::from(code.as_str())),
        Some(Value::String(code)) => {
            compiler.diagnostics.push(
                Code::InvalidErrorCode,
                &code_at,
                format!(
                    "error code {code:?} is not a code: a letter, then at most 63 letters, digits, '_', '.', ':' or '-'"
                ),
            );
            None
        }
        Some(other) => {
            compiler.diagnostics.push(
                Code::WrongType,
                &code_at,
                format!(
                    "expected an error code (a literal string), found {}",
                    json_kind(other)
                ),
            );
            None
        }
        None => None,
    };
    let message_at = pointer_push(at, "message");
    let message = map
        .get("message")
        .and_then(|v| compile_message(compiler, v, &message_at));
    let data = map
        .get("data")
        .map(|v| compiler.compile(v, &pointer_push(at, "data")));
    if compiler.diagnostics.len() != before {
        return None;
    }
    Some(ErrorAnswer {
        code: code?,
        message: message?,
        data,
    })
}

/// A message: a literal string, one `$input`/`$state` reference, or
/// `$dateAdd`; anything else could never be a string, or (`$find`) could
/// not be blamed on one origin when it is not, so it is refused here.
fn compile_message(compiler: &mut ExprCompiler<'_>, value: &Value, at: &str) -> Option<Message> {
    let before = compiler.diagnostics.len();
    let node = compiler.node(value, at);
    if compiler.diagnostics.len() != before {
        return None;
    }
    let message = match node {
        Expr::Literal(Value::String(text)) => Message::Literal(text.into_boxed_str()),
        expr @ Expr::Reference(_) => Message::Reference(expr),
        expr @ Expr::DateAdd(_) => Message::DateAdd(expr),
        Expr::Literal(other) => {
            compiler.diagnostics.push(
                Code::WrongType,
                at,
                format!("an error's message is a string, not {}", json_kind(&other)),
            );
            return None;
        }
        _ => {
            compiler.diagnostics.push(
                Code::WrongType,
                at,
                "an error's message is a string, one $input or $state reference, or $dateAdd: this expression never gives a string it can be sure of",
            );
            return None;
        }
    };
    Some(message)
}

#[cfg(test)]
mod tests {
    use super::valid_code;

    #[test]
    fn codes_follow_the_documented_pattern() {
        for good in ["a", "NOT_FOUND", "order.not-found:v2", &"x".repeat(64)] {
            assert!(valid_code(good), "{good}");
        }
        for bad in ["", "1a", "_a", "a b", "é", "a/b", &"x".repeat(65)] {
            assert!(!valid_code(bad), "{bad}");
        }
    }
}
