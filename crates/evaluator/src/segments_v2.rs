//! Version 2's expression segments of a computed path (docs/mock-language.md,
//! "Computed paths"): a `$input`/`$state` reference whose own path is an
//! array — one level of nesting, so `users[orders[order_id].user_id]` can be
//! named — and a `$find` whose key (or index) is the segment, a path with a
//! `$find` that finds nothing being a path that does not resolve.

use crate::computed::{ComputedPath, Origin, Step, blame, describe, index_segment};
use crate::diagnostics::{DiagnosticCode as Code, Diagnostics, pointer_push};
use crate::error::CallError;
use crate::expr::{Expr, ExprCompiler, Reference, Scope, Source};
use crate::language::Language;
use crate::path::Segment;
use serde_json::Value;

/// A segment whose value an expression gives per call.
#[derive(Debug, Clone)]
pub(crate) struct ExprSegment {
    expr: Expr,
    origin: Origin,
    /// Where the segment is in the definition.
    at: Box<str>,
}

/// `None` when `item` is not an expression segment (a flat reference, or
/// something the caller reports); `Some(None)` when it is one with problems,
/// which are reported; `Some(Some(segment))` otherwise. `nested` is set for the
/// segments of a path that is itself inside a segment: they may not nest again.
pub(crate) fn compile(
    item: &Value,
    at: &str,
    diagnostics: &mut Diagnostics,
    nested: bool,
) -> Option<Option<Box<ExprSegment>>> {
    let Value::Object(map) = item else {
        return None;
    };
    let mut entries = map.iter();
    let (key, operand) = match (entries.next(), entries.next()) {
        (Some((key, operand)), None) => (key.as_str(), operand),
        _ => return None,
    };
    let source = match (key, operand) {
        ("$input", Value::Array(_)) => Some(Source::Input),
        ("$state", Value::Array(_)) => Some(Source::State),
        ("$find", _) => None,
        _ => return None,
    };
    if nested {
        diagnostics.push(
            Code::InvalidPath,
            at,
            "a path inside a path segment cannot nest again: its segments are literals or references with a dot-separated path",
        );
        return Some(None);
    }
    let (expr, origin) = match (source, operand) {
        (Some(source), Value::Array(items)) => {
            let operand_at = pointer_push(at, key);
            let Some(path) = ComputedPath::compile_nested(items, &operand_at, diagnostics, true)
            else {
                return Some(None);
            };
            let origin = match source {
                Source::Input => Origin::Input,
                Source::State => Origin::State,
            };
            (
                Expr::Reference(Reference::computed(source, path, &operand_at)),
                origin,
            )
        }
        _ => {
            // A computed path is a version-2 feature already reported where
            // the path is, so the `$find` inside needs no report of its own.
            let mut language = Language::counted();
            let expr = ExprCompiler {
                diagnostics: &mut *diagnostics,
                language: &mut language,
            }
            .find(operand, at);
            let Some(expr) = expr else {
                return Some(None);
            };
            if let Expr::Find(find) = &expr
                && !find.gives_key()
            {
                diagnostics.push(
                    Code::InvalidPath,
                    pointer_push(&pointer_push(at, "$find"), "give"),
                    "a $find in a path segment gives \"key\": the segment is the found member's key or index",
                );
                return Some(None);
            }
            (expr, Origin::State)
        }
    };
    Some(Some(Box::new(ExprSegment {
        expr,
        origin,
        at: at.into(),
    })))
}

impl ExprSegment {
    /// The segment of this call; `None` when a `$find` finds nothing.
    pub(crate) fn step(&self, scope: &Scope<'_>) -> Result<Option<Step>, CallError> {
        let value = match &self.expr {
            Expr::Reference(r) => r.resolve(scope)?.into_owned(),
            other => match other.render(scope)? {
                Value::Null => return Ok(None),
                found => found,
            },
        };
        let segment = match &value {
            Value::String(key) => Some(Segment::of_key(key)),
            Value::Number(_) => index_segment(&value),
            _ => None,
        };
        match segment {
            Some(segment) => Ok(Some(Step {
                segment,
                origin: self.origin,
                from: None,
            })),
            None => Err(blame(
                self.origin,
                String::new(),
                format!(
                    "the path segment at {} is {}; a path segment is a string or a non-negative integer",
                    self.at,
                    describe(&value)
                ),
            )),
        }
    }
}
