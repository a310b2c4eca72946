//! Reading references and paths from a definition: a reference's path
//! string, a path written as an array and each of its segments (a literal,
//! a reference, a reference with its own array path, a `$find`), every
//! problem reported at its segment. What they compile to, and how a call
//! resolves it, is `crate::paths::reference`.

use crate::check::context::Checker;
use crate::check::diagnostics::{DiagnosticCode as Code, pointer_index, pointer_push};
use crate::error::Origin;
use crate::expr::tree::Expr;
use crate::language::Feature;
use crate::paths::dotted::{Path, Segment};
use crate::paths::reference::{ComputedPath, ExprSegment, Part, Reference, SegmentValue};
use crate::paths::steps::index_segment;
use crate::scope::{NO_SLOT, Source};
use serde_json::Value;
use toolmock_contract::json_kind;

/// At most this many segments in one computed path: resolving one costs at
/// most this many lookups, plus one path resolution per reference segment.
pub(crate) const MAX_SEGMENTS: usize = 32;

impl Checker {
    /// A reference's operand at `at`: a dot-separated path string or, where
    /// `computed` allows it, a path written as an array.
    pub(crate) fn reference(
        &mut self,
        source: Source,
        operand: &Value,
        at: &str,
        computed: bool,
    ) -> Option<Reference> {
        if let (Value::Array(items), true) = (operand, computed) {
            self.feature(at, Feature::ArrayPath);
            let path = self.array_path(items, at)?;
            return Some(Reference::computed(source, path, at));
        }
        let Value::String(raw) = operand else {
            self.diagnostics.push(
                Code::WrongType,
                at,
                format!(
                    "{} takes a path string, not {}",
                    source.operator(),
                    json_kind(operand)
                ),
            );
            return None;
        };
        match Path::parse(raw) {
            Ok(path) => Some(Reference {
                source,
                path,
                computed: None,
                at: at.into(),
                slot: NO_SLOT,
            }),
            Err(e) => {
                self.diagnostics.push(Code::InvalidPath, at, e.message);
                None
            }
        }
    }

    /// A path written as an array; every problem is reported at its segment.
    pub(crate) fn array_path(&mut self, items: &[Value], at: &str) -> Option<ComputedPath> {
        self.array_path_nested(items, at, false)
    }

    /// Compiles an array path; `nested` for the path of a reference inside a
    /// segment, whose own segments may not nest again.
    fn array_path_nested(
        &mut self,
        items: &[Value],
        at: &str,
        nested: bool,
    ) -> Option<ComputedPath> {
        let before = self.diagnostics.len();
        if items.len() > MAX_SEGMENTS {
            self.diagnostics.push(
                Code::InvalidPath,
                at,
                format!(
                    "a path has {} segments; at most {MAX_SEGMENTS} are allowed",
                    items.len()
                ),
            );
        }
        let mut parts = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let item_at = pointer_index(at, i);
            match literal_segment(item) {
                Some(Ok(segment)) => parts.push(Part::Literal(segment)),
                Some(Err(found)) => self.diagnostics.push(
                    Code::InvalidPath,
                    &item_at,
                    format!(
                        "a path segment is a string, a non-negative integer or one $input/$state reference, not {found}"
                    ),
                ),
                None => {
                    let part = match self.expr_segment(item, &item_at, nested) {
                        Some(compiled) => compiled.map(Part::Computed),
                        None => self.reference_segment(item, &item_at),
                    };
                    if let Some(part) = part {
                        parts.push(part);
                    }
                }
            }
        }
        (self.diagnostics.len() == before).then(|| ComputedPath {
            parts: parts.into_boxed_slice(),
            at: at.into(),
        })
    }

    /// A dot-separated path as a computed path of literal segments (a
    /// write's path written as a string).
    pub(crate) fn dotted_path(&mut self, raw: &str, at: &str) -> Option<ComputedPath> {
        if let Err(e) = Path::parse(raw) {
            self.push(Code::InvalidPath, at, e.message);
            return None;
        }
        let items: Vec<Value> = if raw.is_empty() {
            Vec::new()
        } else {
            raw.split('.')
                .map(|s| Value::String(s.to_owned()))
                .collect()
        };
        self.array_path(&items, at)
    }

    /// A segment that is one `$input`/`$state` reference with a dotted path.
    fn reference_segment(&mut self, item: &Value, at: &str) -> Option<Part> {
        let Value::Object(map) = item else {
            return None;
        };
        let mut entries = map.iter();
        let (key, operand) = match (entries.next(), entries.next()) {
            (Some((key, operand)), None) if key == "$input" || key == "$state" => (key, operand),
            _ => {
                self.diagnostics.push(
                    Code::UnknownOperator,
                    at,
                    "a path segment's operator is exactly one $input or $state reference",
                );
                return None;
            }
        };
        let source = if key == "$input" {
            Source::Input
        } else {
            Source::State
        };
        let operand_at = pointer_push(at, key);
        let Value::String(raw) = operand else {
            self.diagnostics.push(
                Code::InvalidPath,
                &operand_at,
                format!(
                    "a path segment's reference takes a dot-separated path string (references inside a path do not nest), not {}",
                    json_kind(operand)
                ),
            );
            return None;
        };
        match Path::parse(raw) {
            Ok(path) => Some(Part::Reference {
                source,
                path,
                at: operand_at.into(),
            }),
            Err(e) => {
                self.diagnostics
                    .push(Code::InvalidPath, &operand_at, e.message);
                None
            }
        }
    }

    /// `None` when `item` is not an expression segment (a flat reference, or
    /// something the caller reports); `Some(None)` when it is one with problems,
    /// which are reported; `Some(Some(segment))` otherwise. `nested` is set for the
    /// segments of a path that is itself inside a segment: they may not nest again.
    fn expr_segment(
        &mut self,
        item: &Value,
        at: &str,
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
        if key == "$let" {
            // (Version 3) a named value, or a path inside one, as the segment.
            let compiled = self
                .compiler_of("$let")
                .and_then(|compile| compile(self, key, operand, at));
            let Some(expr) = compiled else {
                return Some(None);
            };
            let origin = expr.origin();
            let value = match expr {
                Expr::Reference(r) => SegmentValue::Nested(r),
                other => SegmentValue::Rendered(Box::new(other)),
            };
            return Some(Some(Box::new(ExprSegment {
                value,
                origin,
                at: at.into(),
            })));
        }
        let source = match (key, operand) {
            ("$input", Value::Array(_)) => Some(Source::Input),
            ("$state", Value::Array(_)) => Some(Source::State),
            ("$find", _) => None,
            _ => return None,
        };
        if nested {
            self.push(
                Code::InvalidPath,
                at,
                "a path inside a path segment cannot nest again: its segments are literals or references with a dot-separated path",
            );
            return Some(None);
        }
        let (value, origin) = match (source, operand) {
            (Some(source), Value::Array(items)) => {
                let operand_at = pointer_push(at, key);
                let Some(path) = self.array_path_nested(items, &operand_at, true) else {
                    return Some(None);
                };
                (
                    SegmentValue::Nested(Reference::computed(source, path, &operand_at)),
                    source.origin(),
                )
            }
            _ => {
                // A computed path is a version-2 feature already reported where
                // the path is, so the `$find` inside needs no report of its own.
                let compiled = self.counted(|c| {
                    let compile = c.compiler_of("$find")?;
                    compile(c, "$find", operand, at)
                });
                let op = match compiled {
                    Some(Expr::Op(op)) => op,
                    _ => return Some(None),
                };
                if !op.names_segment() {
                    self.push(
                        Code::InvalidPath,
                        pointer_push(&pointer_push(at, "$find"), "give"),
                        "a $find in a path segment gives \"key\": the segment is the found member's key or index",
                    );
                    return Some(None);
                }
                (SegmentValue::Rendered(op), Origin::State)
            }
        };
        Some(Some(Box::new(ExprSegment {
            value,
            origin,
            at: at.into(),
        })))
    }
}

/// A literal segment: `Some(Ok)` for a string or a non-negative integer,
/// `Some(Err(kind))` for any other literal, `None` for an object with a `$` key.
fn literal_segment(item: &Value) -> Option<Result<Segment, String>> {
    match item {
        Value::String(key) => Some(Ok(Segment::of_key(key))),
        Value::Number(_) => Some(index_segment(item).ok_or_else(|| format!("the number {item}"))),
        Value::Object(map) if map.keys().any(|k| k.starts_with('$')) => None,
        other => Some(Err(json_kind(other).to_owned())),
    }
}

/// The source and path of an object that is exactly one `$input` or
/// `$state` member.
pub(crate) fn reference_like(value: &Value) -> Option<(Source, &Value)> {
    let map = value.as_object()?;
    let mut entries = map.iter();
    match (entries.next(), entries.next()) {
        (Some((key, path)), None) if key == "$input" => Some((Source::Input, path)),
        (Some((key, path)), None) if key == "$state" => Some((Source::State, path)),
        _ => None,
    }
}
