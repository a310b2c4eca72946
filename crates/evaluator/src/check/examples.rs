//! Reading a definition's examples (docs/spec.md §3): the variant each
//! names, its input and state, and what it expects — a result (`expected`)
//! or a domain error (`expected_error`) — and the post-call state.
//! Running them is `crate::check::runs`.

use crate::check::context::{Checker, Shape};
use crate::check::diagnostics::{DiagnosticCode as Code, pointer_index, pointer_push};
use crate::definition::{CompiledExample, Expected};
use crate::language::Feature;
use serde_json::{Map, Value};

const EXAMPLE: Shape = Shape {
    allowed: &[
        "description",
        "variant",
        "input",
        "state",
        "expected",
        "expected_error",
        "expected_state",
    ],
    // `expected` or `expected_error`: see `expected`.
    required: &["variant", "input"],
    what: "an example",
};

impl Checker {
    /// Example `index`; `variants` are the definition's variant names, when
    /// they could be read.
    pub(crate) fn example(
        &mut self,
        index: usize,
        value: &Value,
        variants: Option<&[&str]>,
    ) -> Option<CompiledExample> {
        let at = pointer_index("/examples", index);
        let map = self.object(value, &at, "an example")?;
        let mut ok = self.shape(map, &at, &EXAMPLE);
        let expected = self.expected(map, &at);
        ok &= expected.is_some();
        self.description(map, &at);
        let variant = match map.get("variant") {
            Some(Value::String(name)) => {
                if let Some(names) = variants
                    && !names.contains(&name.as_str())
                {
                    self.push(
                        Code::ExampleUnknownVariant,
                        pointer_push(&at, "variant"),
                        format!("example names variant {name:?}, which does not exist"),
                    );
                    ok = false;
                }
                Some(name.as_str())
            }
            Some(other) => {
                self.wrong_type(
                    &pointer_push(&at, "variant"),
                    "a variant name (a string)",
                    other,
                );
                None
            }
            None => None,
        };
        let input = match map.get("input") {
            Some(v @ Value::Object(_)) => Some(v.clone()),
            Some(other) => {
                self.wrong_type(
                    &pointer_push(&at, "input"),
                    "the call's input (an object)",
                    other,
                );
                None
            }
            None => None,
        };
        let optional_object = |walker: &mut Checker, key: &str| match map.get(key) {
            None => Some(None),
            Some(v) => walker
                .object(v, &pointer_push(&at, key), key)
                .map(|m| Some(m.clone())),
        };
        let state = optional_object(self, "state");
        let expected_state = optional_object(self, "expected_state");
        if !ok {
            return None;
        }
        Some(CompiledExample {
            index,
            variant: variant?.into(),
            input: input?,
            state: state?,
            expected: expected?,
            expected_state: expected_state?,
        })
    }

    /// An example's `expected` or (version 2) `expected_error`: exactly one.
    pub(crate) fn expected(&mut self, map: &Map<String, Value>, at: &str) -> Option<Expected> {
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
                self.feature(&error_at, Feature::Field("expected_error"));
                self.push(
                    Code::ResultAndError,
                    error_at,
                    "an example expects either \"expected\" or \"expected_error\", not both: remove one",
                );
                None
            }
            (Some(expected), None) => Some(Expected::Result(expected.clone())),
            (None, Some(error)) => {
                self.feature(&error_at, Feature::Field("expected_error"));
                self.expected_error(error, &error_at).map(Expected::Error)
            }
        }
    }
}
