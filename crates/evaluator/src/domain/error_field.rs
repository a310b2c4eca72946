//! Reading domain errors from a definition: a variant's or rule's
//! `error: {code, message, data?}` beside (never with) `result`, the
//! refusal of `set_state` beside an error, and an example's
//! `expected_error` (docs/mock-language.md, "Domain errors").

use crate::check::context::Checker;
use crate::check::diagnostics::{DiagnosticCode as Code, pointer_push};
use crate::conditions::choice::choice;
use crate::domain::answer::{Answer, DomainError, ErrorAnswer, Message};
use crate::expr::tree::Expr;
use crate::language::Feature;
use serde_json::{Map, Value};
use toolmock_contract::json_kind;

/// The longest error code, in characters.
pub(crate) const MAX_CODE_LEN: usize = 64;

/// Whether `code` is a valid error code: `^[A-Za-z][A-Za-z0-9_.:-]{0,63}$`.
pub(crate) fn valid_code(code: &str) -> bool {
    let mut chars = code.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && code.len() <= MAX_CODE_LEN
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
}

/// The fields of `error`, and of an example's `expected_error`.
const ERROR_FIELDS: [&str; 3] = ["code", "message", "data"];

/// Compiles `error: {code, message, data?}` at `at`, reporting every
/// problem; `None` when there was one.
fn compile_error(c: &mut Checker, value: &Value, at: &str) -> Option<ErrorAnswer> {
    let before = c.diagnostics.len();
    let Value::Object(map) = value else {
        c.diagnostics.push(
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
            c.diagnostics.push(
                Code::UnknownField,
                pointer_push(at, key),
                format!("an error has no field {key:?}; its fields are code, message, data"),
            );
        }
    }
    for key in ["code", "message"] {
        if !map.contains_key(key) {
            c.diagnostics.push(
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
            c.diagnostics.push(
                Code::InvalidErrorCode,
                &code_at,
                format!(
                    "error code {code:?} is not a code: a letter, then at most 63 letters, digits, '_', '.', ':' or '-'"
                ),
            );
            None
        }
        Some(other) => {
            c.diagnostics.push(
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
        .and_then(|v| compile_message(c, v, &message_at));
    let data = map
        .get("data")
        .map(|v| c.compile(v, &pointer_push(at, "data")));
    if c.diagnostics.len() != before {
        return None;
    }
    Some(ErrorAnswer {
        code: code?,
        message: message?,
        data,
    })
}

/// A message: a literal string, one `$input`/`$state` reference,
/// `$dateAdd`, or (version 3) `$if` between two messages; anything else could never be a string, or (`$find`) could
/// not be blamed on one origin when it is not, so it is refused here.
fn compile_message(c: &mut Checker, value: &Value, at: &str) -> Option<Message> {
    if let Value::Object(map) = value
        && let (1, Some(operand)) = (map.len(), map.get("$if"))
        && c.language.admits(Feature::Operator("$if"))
    {
        // Each branch is a message in its own right.
        let choice = choice(c, "$if", operand, at, &mut compile_message)?;
        return Some(Message::Choice(Box::new(choice)));
    }
    let before = c.diagnostics.len();
    let node = c.node(value, at);
    if c.diagnostics.len() != before {
        return None;
    }
    let message = match node {
        Expr::Literal(Value::String(text)) => Message::Literal(text.into_boxed_str()),
        expr @ Expr::Reference(_) => Message::Reference(expr),
        expr @ Expr::DateAdd(_) => Message::DateAdd(expr),
        Expr::Op(op) if matches!(op.name(), "$concat" | "$format" | "$json") => {
            Message::Text(Expr::Op(op))
        }
        Expr::Literal(other) => {
            c.diagnostics.push(
                Code::WrongType,
                at,
                format!("an error's message is a string, not {}", json_kind(&other)),
            );
            return None;
        }
        _ => {
            // A version-2 document keeps the message it always had.
            let what = if c.language.admits(Feature::Operator("$concat")) {
                "an error's message is a string, one $input or $state reference, $dateAdd, $concat, $format, or $if between messages: this expression never gives a string it can be sure of"
            } else {
                "an error's message is a string, one $input or $state reference, or $dateAdd: this expression never gives a string it can be sure of"
            };
            c.diagnostics.push(Code::WrongType, at, what);
            return None;
        }
    };
    Some(message)
}

impl Checker {
    /// A rule's `set_state` beside its own error answer, or, when it gives
    /// no answer of its own, beside its variant's (`variant_errs`).
    pub(crate) fn rule_set_state_beside_error(
        &mut self,
        map: &Map<String, Value>,
        at: &str,
        answer: Option<&Option<Answer>>,
        variant_errs: bool,
    ) {
        match answer {
            Some(Some(answer)) => self.set_state_beside_error(map, at, answer.is_error(), true),
            Some(None) => self.set_state_beside_error(map, at, variant_errs, false),
            None => {}
        }
    }

    /// A variant that gives neither `result` nor `error`: the `missing_field`
    /// version 1 has always reported (naming `error` too in version 2).
    pub(crate) fn missing_answer(&mut self, map: &Map<String, Value>, at: &str) {
        if map.contains_key("result") || map.contains_key("error") {
            return;
        }
        let message = if self.language.admits(Feature::Field("error")) {
            "a variant needs the field \"result\" or the field \"error\""
        } else {
            "a variant needs the field \"result\""
        };
        self.push(Code::MissingField, at, message);
    }

    /// The answer of a variant or rule: `Some(None)` when it gives neither
    /// `result` nor `error`, `None` when what it gives is broken.
    pub(crate) fn answer(&mut self, map: &Map<String, Value>, at: &str) -> Option<Option<Answer>> {
        let result = map
            .get("result")
            .map(|v| self.expression(v, &pointer_push(at, "result")));
        let error_at = pointer_push(at, "error");
        let error = map.get("error").map(|v| {
            self.feature(&error_at, Feature::Field("error"));
            compile_error(self, v, &error_at)
        });
        match (result, error) {
            (Some(_), Some(_)) => {
                self.push(
                    Code::ResultAndError,
                    error_at,
                    "an answer is either \"result\" or \"error\", not both: remove one",
                );
                None
            }
            (Some(result), None) => result.map(|e| Some(Answer::Result(e))),
            (None, Some(error)) => error.map(|e| Some(Answer::Error(Box::new(e)))),
            (None, None) => Some(None),
        }
    }

    /// A `set_state` given beside an error answer — the variant's or rule's
    /// own, or, for a rule with no answer of its own, the variant's — is
    /// refused: a domain error never changes state.
    pub(crate) fn set_state_beside_error(
        &mut self,
        map: &Map<String, Value>,
        at: &str,
        answers_error: bool,
        own: bool,
    ) {
        if !answers_error || !map.contains_key("set_state") {
            return;
        }
        let whose = if own {
            "this answers a domain error"
        } else {
            "this rule answers its variant's domain error"
        };
        self.push(
            Code::SetStateWithError,
            pointer_push(at, "set_state"),
            format!("{whose}, and a domain error never changes state: remove set_state"),
        );
    }

    /// `expected_error: {code, message, data?}`: plain data, compared with
    /// the error the call answers.
    pub(crate) fn expected_error(&mut self, value: &Value, at: &str) -> Option<DomainError> {
        let map = self.object(value, at, "an expected error {code, message, data?}")?;
        let before = self.diagnostics.len();
        for key in map.keys() {
            if !ERROR_FIELDS.contains(&key.as_str()) {
                self.push(
                    Code::UnknownField,
                    pointer_push(at, key),
                    format!(
                        "an expected error has no field {key:?}; its fields are code, message, data"
                    ),
                );
            }
        }
        let text = |walker: &mut Checker, key: &str| match map.get(key) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                walker.push(
                    Code::WrongType,
                    pointer_push(at, key),
                    format!("expected a string, found {}", json_kind(other)),
                );
                None
            }
            None => {
                walker.push(
                    Code::MissingField,
                    at,
                    format!("an expected error needs the field {key:?}"),
                );
                None
            }
        };
        let code = text(self, "code");
        let message = text(self, "message");
        if self.diagnostics.len() != before {
            return None;
        }
        Some(DomainError {
            code: code?,
            message: message?,
            data: map.get("data").cloned(),
        })
    }
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
