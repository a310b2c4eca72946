//! The value a later condition op compares with (`value`): a literal, a
//! `$input`/`$state` reference read per call, or (for `subset_of`) a
//! `$pluck`; read per call and, for a reference, checked for the kind of
//! value its op compares with.

use crate::check::context::Checker;
use crate::check::diagnostics::{DiagnosticCode as Code, pointer_push};
use crate::error::{CallError, OperandFault, reject};
use crate::expr::tree::Expr;
use crate::language::Feature;
use crate::paths::parse::reference_like;
use crate::paths::reference::Reference;
use crate::scope::Scope;
use serde_json::Value;
use std::borrow::Cow;
use toolmock_contract::json_kind;

/// The kind of value an op compares with.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Needs {
    /// Any value.
    Any,
    /// An array.
    Array,
    /// A string.
    String,
    /// A number or a string (the ordering ops).
    Ordered,
}

impl Needs {
    /// How messages name it; `None` for any value.
    fn kind(self) -> Option<&'static str> {
        match self {
            Needs::Any => None,
            Needs::Array => Some("an array"),
            Needs::String => Some("a string"),
            Needs::Ordered => Some("a number or a string"),
        }
    }

    fn fits(self, value: &Value) -> bool {
        match self {
            Needs::Any => true,
            Needs::Array => value.is_array(),
            Needs::String => value.is_string(),
            Needs::Ordered => value.is_string() || value.is_number(),
        }
    }
}

/// A condition's `value` for a later op: a literal or a reference read per call.
#[derive(Debug, Clone)]
pub(crate) enum Want {
    Literal(Value),
    Reference(Box<Reference>),
    /// `subset_of`'s value may be a `$pluck` (an array per call); any later
    /// op's, and `eq`'s and `ne`'s, a `$let` (version 3).
    Pluck(Box<Expr>),
}

impl Want {
    /// The value for this call; a reference's value that is not what `op`
    /// compares with (`needs`) is blamed on where it came from.
    pub(crate) fn read<'s, 'a: 's>(
        &'s self,
        scope: &Scope<'a>,
        op: &str,
        needs: Needs,
    ) -> Result<Cow<'s, Value>, CallError> {
        let reference = match self {
            Want::Literal(v) => return Ok(Cow::Borrowed(v)),
            Want::Pluck(expr) => return Ok(Cow::Owned(expr.render(scope)?)),
            Want::Reference(r) => r,
        };
        let value = reference.resolve(scope)?;
        if let Some(kind) = needs.kind()
            && !needs.fits(&value)
        {
            return Err(reference.blame(reject(
                OperandFault::InvalidOperand,
                format!(
                    "the condition op {op} compares with {kind}, not {}",
                    json_kind(&value)
                ),
            )));
        }
        Ok(value)
    }
}

impl Checker {
    /// Whether a condition's `value` is `{"$let": "name"}` in a document
    /// whose version reads it (an earlier one compares it as a literal).
    pub(crate) fn names_let(&self, value: &Value) -> bool {
        matches!(value, Value::Object(map) if map.len() == 1 && map.contains_key("$let"))
            && self.language.admits(Feature::Operator("$let"))
    }

    /// The `value` (at `at`) of a condition with the later op `op`, which
    /// compares with `needs`; `plucks` when the value may be a `$pluck`.
    pub(crate) fn want(
        &mut self,
        op: &str,
        needs: Needs,
        plucks: bool,
        value: &Value,
        at: &str,
    ) -> Option<Want> {
        let pluck = match value {
            Value::Object(map) if map.len() == 1 && map.contains_key("$pluck") => Some(map),
            _ => None,
        };
        if self.names_let(value) {
            // (Version 3) a named sub-expression, rendered per call.
            let before = self.diagnostics.len();
            let expr = self.compile(value, at);
            return (self.diagnostics.len() == before).then(|| Want::Pluck(Box::new(expr)));
        }
        match reference_like(value) {
            None if pluck.is_some() && plucks => {
                let before = self.diagnostics.len();
                let expr = self.compile(value, at);
                if self.diagnostics.len() != before {
                    return None;
                }
                Some(Want::Pluck(Box::new(expr)))
            }
            Some((source, path)) => {
                let reference =
                    self.reference(source, path, &pointer_push(at, source.operator()), true)?;
                Some(Want::Reference(Box::new(reference)))
            }
            None => {
                if let Some(kind) = needs.kind()
                    && !needs.fits(value)
                {
                    self.push(
                        Code::InvalidCondition,
                        at,
                        format!(
                            "op \"{op}\" needs {kind} value (or one $input/$state reference), not {}",
                            json_kind(value)
                        ),
                    );
                    return None;
                }
                Some(Want::Literal(value.clone()))
            }
        }
    }
}
