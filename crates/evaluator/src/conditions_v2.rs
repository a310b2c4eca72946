//! Version 2's condition ops: `contains` (array containment), `subset_of`
//! (multiset inclusion) and `eq_ci` (equality under Unicode simple case
//! folding); docs/mock-language.md, "More condition ops".

use crate::compile::{Test, Walker, reference_like};
use crate::diagnostics::{DiagnosticCode as Code, pointer_push};
use crate::error::CallError;
use crate::expr::{Expr, ExprCompiler, Reference, Scope, Source};
use crate::json::{equal_folded, json_equal};
use crate::language::Feature;
use crate::operators::{OperandFault, json_kind, reject};
use serde_json::Value;
use std::borrow::Cow;

/// The ops, as written.
pub(crate) const OPS: [&str; 3] = ["contains", "subset_of", "eq_ci"];

/// A condition's `value` for these ops: a literal or a reference read per call.
#[derive(Debug, Clone)]
pub(crate) enum Want {
    Literal(Value),
    Reference(Box<Reference>),
    /// `subset_of`'s value may be a `$pluck` (an array per call).
    Pluck(Box<Expr>),
}

/// One of the three ops with its value.
#[derive(Debug, Clone)]
pub(crate) enum V2Test {
    Contains(Want),
    SubsetOf(Want),
    EqCi(Want),
}

impl V2Test {
    /// Whether the test holds of `found` (the condition's path's value, if it resolves).
    pub(crate) fn holds(
        &self,
        found: Option<&Value>,
        scope: &Scope<'_>,
    ) -> Result<bool, CallError> {
        let Some(found) = found else {
            // An unresolved path satisfies none of these (the value is
            // still read, so a broken reference is never hidden).
            self.want(scope)?;
            return Ok(false);
        };
        let want = self.want(scope)?;
        Ok(match self {
            V2Test::Contains(_) => found
                .as_array()
                .is_some_and(|items| items.iter().any(|item| json_equal(item, &want))),
            V2Test::SubsetOf(_) => match (found, &*want) {
                (Value::Array(part), Value::Array(whole)) => multiset_included(part, whole),
                _ => false,
            },
            V2Test::EqCi(_) => match (found, &*want) {
                (Value::String(a), Value::String(b)) => equal_folded(a, b),
                _ => false,
            },
        })
    }

    /// The value, read and (for a reference) checked for the kind the op needs.
    fn want<'s, 'a: 's>(&'s self, scope: &Scope<'a>) -> Result<Cow<'s, Value>, CallError> {
        let (want, needs) = match self {
            V2Test::Contains(w) => (w, None),
            V2Test::SubsetOf(w) => (w, Some(("subset_of", "an array"))),
            V2Test::EqCi(w) => (w, Some(("eq_ci", "a string"))),
        };
        let reference = match want {
            Want::Literal(v) => return Ok(Cow::Borrowed(v)),
            Want::Pluck(expr) => return Ok(Cow::Owned(expr.render(scope)?)),
            Want::Reference(r) => r,
        };
        let value = reference.resolve(scope)?;
        if let Some((op, kind)) = needs {
            let fits = match kind {
                "an array" => value.is_array(),
                _ => value.is_string(),
            };
            if !fits {
                return Err(reference.blame(reject(
                    OperandFault::InvalidOperand,
                    format!(
                        "the condition op {op} compares with {kind}, not {}",
                        json_kind(&value)
                    ),
                )));
            }
        }
        Ok(value)
    }
}

/// Whether every element of `part` can be paired with a distinct equal
/// element of `whole` (each element counts as often as it occurs).
/// At most `part.len() × whole.len()` comparisons.
pub(crate) fn multiset_included(part: &[Value], whole: &[Value]) -> bool {
    if part.len() > whole.len() {
        return false;
    }
    let mut used = vec![false; whole.len()];
    part.iter().all(|item| {
        let free = whole
            .iter()
            .zip(used.iter())
            .position(|(w, taken)| !taken && json_equal(item, w));
        match free.and_then(|i| used.get_mut(i)) {
            Some(slot) => {
                *slot = true;
                true
            }
            None => false,
        }
    })
}

impl Walker {
    /// The test of a `contains`, `subset_of` or `eq_ci` condition; `at` is
    /// the condition's location.
    pub(crate) fn v2_test(&mut self, op: &str, value: &Value, at: &str) -> Option<Test> {
        self.language.feature(
            &mut self.diagnostics,
            &pointer_push(at, "op"),
            Feature::Op(op),
        );
        let value_at = pointer_push(at, "value");
        let pluck = match value {
            Value::Object(map) if map.len() == 1 && map.contains_key("$pluck") => Some(map),
            _ => None,
        };
        let want = match reference_like(value) {
            None if pluck.is_some() && op == "subset_of" => {
                let before = self.diagnostics.len();
                let expr = ExprCompiler {
                    diagnostics: &mut self.diagnostics,
                    language: &mut self.language,
                }
                .compile(value, &value_at);
                if self.diagnostics.len() != before {
                    return None;
                }
                Want::Pluck(Box::new(expr))
            }
            Some((source, path)) => {
                let key = match source {
                    Source::Input => "$input",
                    Source::State => "$state",
                };
                let reference = ExprCompiler {
                    diagnostics: &mut self.diagnostics,
                    language: &mut self.language,
                }
                .reference(source, path, &pointer_push(&value_at, key), true)?;
                Want::Reference(Box::new(reference))
            }
            None => {
                let wrong = match op {
                    "subset_of" if !value.is_array() => Some("an array"),
                    "eq_ci" if !value.is_string() => Some("a string"),
                    _ => None,
                };
                if let Some(kind) = wrong {
                    self.diagnostics.push(
                        Code::InvalidCondition,
                        &value_at,
                        format!(
                            "op \"{op}\" needs {kind} value (or one $input/$state reference), not {}",
                            json_kind(value)
                        ),
                    );
                    return None;
                }
                Want::Literal(value.clone())
            }
        };
        Some(Test::V2(Box::new(match op {
            "contains" => V2Test::Contains(want),
            "subset_of" => V2Test::SubsetOf(want),
            _ => V2Test::EqCi(want),
        })))
    }
}
