//! The structural check of version 2's domain errors: a variant's or
//! rule's `error` beside (never with) `result`, the refusal of `set_state`
//! beside an error, and an example's `expected_error`
//! (docs/mock-language.md, "Domain errors").

use super::Walker;
use crate::diagnostics::{DiagnosticCode as Code, pointer_push};
use crate::domain::{Answer, DomainError, ERROR_FIELDS, compile_error};
use crate::expr::ExprCompiler;
use crate::language::Feature;
use crate::operators::json_kind;
use serde_json::{Map, Value};

/// What an example expects its call to answer.
#[derive(Debug, Clone)]
pub(crate) enum Expected {
    /// `expected`: the rendered result.
    Result(Value),
    /// `expected_error` (version 2): the domain error.
    Error(DomainError),
}

/// A variant's fields (`result` or, in version 2, `error`).
pub(super) const VARIANT_FIELDS: &[&str] = &[
    "description",
    "result",
    "error",
    "set_state",
    "delay_ms",
    "rules",
];
/// A rule's fields.
pub(super) const RULE_FIELDS: &[&str] = &[
    "description",
    "when",
    "result",
    "error",
    "set_state",
    "delay_ms",
];
/// An example's fields (`expected` or, in version 2, `expected_error`).
pub(super) const EXAMPLE_FIELDS: &[&str] = &[
    "description",
    "variant",
    "input",
    "state",
    "expected",
    "expected_error",
    "expected_state",
];

impl Walker {
    /// A rule's `set_state` beside its own error answer, or, when it gives
    /// no answer of its own, beside its variant's (`variant_errs`).
    pub(super) fn rule_set_state_beside_error(
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
    pub(super) fn missing_answer(&mut self, map: &Map<String, Value>, at: &str) {
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
    pub(super) fn answer(&mut self, map: &Map<String, Value>, at: &str) -> Option<Option<Answer>> {
        let result = map
            .get("result")
            .map(|v| self.expression(v, &pointer_push(at, "result")));
        let error_at = pointer_push(at, "error");
        let error = map.get("error").map(|v| {
            self.language
                .feature(&mut self.diagnostics, &error_at, Feature::Field("error"));
            compile_error(
                &mut ExprCompiler {
                    diagnostics: &mut self.diagnostics,
                    language: &mut self.language,
                },
                v,
                &error_at,
            )
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
    pub(super) fn set_state_beside_error(
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

    /// An example's `expected` or (version 2) `expected_error`: exactly one.
    pub(super) fn expected(&mut self, map: &Map<String, Value>, at: &str) -> Option<Expected> {
        let error_at = pointer_push(at, "expected_error");
        match (map.get("expected"), map.get("expected_error")) {
            (None, None) => {
                let message = if self.language.admits(Feature::Field("expected_error")) {
                    "an example needs the field \"expected\" or the field \"expected_error\""
                } else {
                    "an example needs the field \"expected\""
                };
                self.push(Code::MissingField, at, message);
                None
            }
            (Some(_), Some(_)) => {
                self.language.feature(
                    &mut self.diagnostics,
                    &error_at,
                    Feature::Field("expected_error"),
                );
                self.push(
                    Code::ResultAndError,
                    error_at,
                    "an example expects either \"expected\" or \"expected_error\", not both: remove one",
                );
                None
            }
            (Some(expected), None) => Some(Expected::Result(expected.clone())),
            (None, Some(error)) => {
                self.language.feature(
                    &mut self.diagnostics,
                    &error_at,
                    Feature::Field("expected_error"),
                );
                self.expected_error(error, &error_at).map(Expected::Error)
            }
        }
    }

    /// `expected_error: {code, message, data?}`: plain data, compared with
    /// the error the call answers.
    fn expected_error(&mut self, value: &Value, at: &str) -> Option<DomainError> {
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
        let text = |walker: &mut Walker, key: &str| match map.get(key) {
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
