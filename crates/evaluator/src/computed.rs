//! Version-2 computed paths: a path written as an array of segments, each a
//! literal key or index or a `$input`/`$state` reference read per call
//! (docs/mock-language.md, "Version 2"). Also the nested writes of the list
//! form of `set_state`, which follow such paths.

use crate::diagnostics::{DiagnosticCode as Code, Diagnostics, pointer_index, pointer_push};
use crate::error::CallError;
use crate::expr::{Expr, Scope, Source};
use crate::layered::Seen;
use crate::operators::json_kind;
use crate::path::{Path, Resolved, Segment, step};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// At most this many segments in one computed path: resolving one costs at
/// most this many lookups, plus one path resolution per reference segment.
pub(crate) const MAX_SEGMENTS: usize = 32;

/// One segment as written.
#[derive(Debug, Clone)]
enum Part {
    Literal(Segment),
    Reference {
        source: Source,
        path: Path,
        /// Where the reference is in the definition.
        at: Box<str>,
    },
    /// A reference with an array path, or a `$find` (see [`crate::segments_v2`]).
    Computed(Box<crate::segments_v2::ExprSegment>),
}

/// A path written as an array.
#[derive(Debug, Clone)]
pub(crate) struct ComputedPath {
    parts: Box<[Part]>,
    /// Where the path is in the definition.
    at: Box<str>,
}

/// Where a computed segment's text came from: it decides who is blamed when
/// the segment cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    Literal,
    Input,
    State,
}

/// One segment of one call.
#[derive(Debug)]
pub(crate) struct Step {
    pub(crate) segment: Segment,
    pub(crate) origin: Origin,
    /// For a reference segment: where its value is, as a JSON pointer into the
    /// input or the state.
    pub(crate) from: Option<String>,
}

/// A computed path's segments for one call, or where it stopped: a `$find`
/// segment that found nothing leaves the path unresolved.
pub(crate) enum Steps {
    All(Vec<Step>),
    Unfound { pointer: String },
}

/// A computed path resolved for one call.
pub(crate) enum Found<'v> {
    /// The empty path in the state: the whole state.
    Whole,
    /// The value found.
    Value(&'v Value),
    /// The value found, built from a layered state's base and overlay.
    Built(Value),
    /// Nothing at the path; `pointer` is where it was looked for.
    Missing { pointer: String },
}

impl ComputedPath {
    /// Compiles an array path; every problem is reported at its segment.
    pub(crate) fn compile(
        items: &[Value],
        at: &str,
        diagnostics: &mut Diagnostics,
    ) -> Option<ComputedPath> {
        Self::compile_nested(items, at, diagnostics, false)
    }

    /// Compiles an array path; `nested` for the path of a reference inside a
    /// segment, whose own segments may not nest again.
    pub(crate) fn compile_nested(
        items: &[Value],
        at: &str,
        diagnostics: &mut Diagnostics,
        nested: bool,
    ) -> Option<ComputedPath> {
        let before = diagnostics.len();
        if items.len() > MAX_SEGMENTS {
            diagnostics.push(
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
                Some(Err(found)) => diagnostics.push(
                    Code::InvalidPath,
                    &item_at,
                    format!(
                        "a path segment is a string, a non-negative integer or one $input/$state reference, not {found}"
                    ),
                ),
                None => {
                    let part = match crate::segments_v2::compile(item, &item_at, diagnostics, nested) {
                        Some(compiled) => compiled.map(Part::Computed),
                        None => reference_segment(item, &item_at, diagnostics),
                    };
                    if let Some(part) = part {
                        parts.push(part);
                    }
                }
            }
        }
        (diagnostics.len() == before).then(|| ComputedPath {
            parts: parts.into_boxed_slice(),
            at: at.into(),
        })
    }

    /// The first segment, when it is a literal key.
    pub(crate) fn literal_head(&self) -> Option<&str> {
        match self.parts.first()? {
            Part::Literal(segment) => Some(&segment.key),
            Part::Reference { .. } | Part::Computed(_) => None,
        }
    }

    /// The number of segments.
    pub(crate) fn len(&self) -> usize {
        self.parts.len()
    }

    /// Each segment's value for this call.
    pub(crate) fn steps(&self, scope: &Scope<'_>) -> Result<Steps, CallError> {
        let mut steps = Vec::with_capacity(self.parts.len());
        for part in self.parts.iter() {
            let step = match part {
                Part::Literal(segment) => Step {
                    segment: segment.clone(),
                    origin: Origin::Literal,
                    from: None,
                },
                Part::Reference { source, path, at } => reference_step(*source, path, at, scope)?,
                Part::Computed(segment) => match segment.step(scope)? {
                    Some(step) => step,
                    None => {
                        return Ok(Steps::Unfound {
                            pointer: pointer_of(&steps),
                        });
                    }
                },
            };
            steps.push(step);
        }
        Ok(Steps::All(steps))
    }

    /// Resolves the path in the call's input or pre-call state.
    pub(crate) fn resolve<'v>(
        &self,
        source: Source,
        scope: &Scope<'v>,
    ) -> Result<Found<'v>, CallError> {
        let steps = match self.steps(scope)? {
            Steps::All(steps) => steps,
            Steps::Unfound { pointer } => return Ok(Found::Missing { pointer }),
        };
        let pointer = || pointer_of(&steps);
        let found = match source {
            Source::Input => steps
                .iter()
                .try_fold(scope.input, |v, s| step(v, &s.segment)),
            Source::State => match steps.split_first() {
                None => return Ok(Found::Whole),
                Some(_) => match scope.state.find(steps.iter().map(|s| &s.segment)) {
                    Seen::Borrowed(v) => Some(v),
                    Seen::Built(v) => return Ok(Found::Built(v)),
                    Seen::Missing => None,
                },
            },
        };
        Ok(match found {
            Some(v) => Found::Value(v),
            None => Found::Missing { pointer: pointer() },
        })
    }

    /// Where the path is in the definition.
    pub(crate) fn at(&self) -> &str {
        &self.at
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

/// A non-negative integer (integral floats count, as everywhere in the
/// language) as the segment of its decimal text.
pub(crate) fn index_segment(value: &Value) -> Option<Segment> {
    let n = value.as_u64().or_else(|| {
        let f = value.as_f64()?;
        // Below 2^53 every integer is exact, so the text is the integer's.
        (f.fract() == 0.0 && (0.0..9_007_199_254_740_992.0).contains(&f)).then_some(f as u64)
    })?;
    Some(Segment {
        key: n.to_string().into(),
        index: usize::try_from(n).ok(),
    })
}

fn reference_segment(item: &Value, at: &str, diagnostics: &mut Diagnostics) -> Option<Part> {
    let Value::Object(map) = item else {
        return None;
    };
    let mut entries = map.iter();
    let (key, operand) = match (entries.next(), entries.next()) {
        (Some((key, operand)), None) if key == "$input" || key == "$state" => (key, operand),
        _ => {
            diagnostics.push(
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
        diagnostics.push(
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
            diagnostics.push(Code::InvalidPath, &operand_at, e.message);
            None
        }
    }
}

fn source_name(source: Source) -> (&'static str, &'static str) {
    match source {
        Source::Input => ("$input", "input"),
        Source::State => ("$state", "pre-call state"),
    }
}

/// A reference segment's value as a segment: a string is a key (and an
/// index when it is decimal digits without leading zeros), a non-negative
/// integer an index (and the key of its decimal text).
fn reference_step(
    source: Source,
    path: &Path,
    at: &str,
    scope: &Scope<'_>,
) -> Result<Step, CallError> {
    let (operator, name) = source_name(source);
    let found = match source {
        Source::Input => path.resolve(scope.input).map(Cow::Borrowed),
        Source::State => match scope.state.resolve(path.segments()) {
            Resolved::Found(v) => Some(Cow::Borrowed(v)),
            Resolved::Built(v) => Some(Cow::Owned(v)),
            Resolved::Missing => None,
            Resolved::Whole => {
                return Err(CallError::InvalidStatePath {
                    path: String::new(),
                    message: format!(
                        "{operator} {:?} (at {at}) is the whole state, an object; a path segment is a string or a non-negative integer",
                        path.as_str()
                    ),
                });
            }
        },
    };
    let Some(value) = found else {
        return Err(CallError::MissingReference {
            path: path.to_pointer(),
            message: format!(
                "{operator} {:?} (a path segment, at {at}) does not resolve in the call's {name}",
                path.as_str()
            ),
        });
    };
    let segment = match &*value {
        Value::String(key) => Some(Segment::of_key(key)),
        Value::Number(_) => index_segment(&value),
        _ => None,
    };
    let origin = match source {
        Source::Input => Origin::Input,
        Source::State => Origin::State,
    };
    match segment {
        Some(segment) => Ok(Step {
            segment,
            origin,
            from: Some(path.to_pointer()),
        }),
        None => {
            let message = format!(
                "{operator} {:?} (a path segment, at {at}) is {}; a path segment is a string or a non-negative integer",
                path.as_str(),
                describe(&value)
            );
            Err(blame(origin, path.to_pointer(), message))
        }
    }
}

pub(crate) fn describe(value: &Value) -> String {
    match value {
        Value::Number(_) => format!("the number {value}"),
        other => json_kind(other).to_owned(),
    }
}

/// The error a segment of `origin` calls for: the agent's input is a tool
/// input error; the state, or the definition's own literal against the
/// state's shape, is the harness's.
pub(crate) fn blame(origin: Origin, path: String, message: String) -> CallError {
    match origin {
        Origin::Input => CallError::InvalidPathSegment { path, message },
        Origin::State | Origin::Literal => CallError::InvalidStatePath { path, message },
    }
}

fn pointer_of(steps: &[Step]) -> String {
    steps.iter().fold(String::new(), |out, s| {
        crate::diagnostics::pointer_push(&out, &s.segment.key)
    })
}

/// One write of the list form of `set_state`: a path whose first segment is
/// a literal key (the top-level member it changes), and an expression.
#[derive(Debug, Clone)]
pub(crate) struct Write {
    pub(crate) top: Box<str>,
    pub(crate) path: ComputedPath,
    pub(crate) value: Expr,
}

impl Write {
    /// The write's path for this call; a `$find` segment that finds nothing
    /// is a `missing_reference`: a write needs a place.
    pub(crate) fn steps(&self, scope: &Scope<'_>) -> Result<Vec<Step>, CallError> {
        match self.path.steps(scope)? {
            Steps::All(steps) => Ok(steps),
            Steps::Unfound { pointer } => Err(CallError::MissingReference {
                path: pointer,
                message: format!(
                    "the write at {} cannot be made: a $find segment of its path finds nothing",
                    self.path.at()
                ),
            }),
        }
    }
}

/// Renders the writes in order against the pre-call input and state and
/// applies them, each at its nested path, to copies of the top-level members
/// they change; the answer is those members' new values, in the order first
/// written. A missing object member on the way is created as an object; a
/// missing array index, or a step into a string, number, boolean or `null`,
/// is an error blamed on the segment that named it.
pub(crate) fn render_writes<'d>(
    writes: &'d [Write],
    scope: &Scope<'_>,
) -> Result<Vec<(&'d str, Value)>, CallError> {
    let mut members: Vec<(&'d str, Value)> = Vec::new();
    for write in writes {
        let steps = write.steps(scope)?;
        let value = write.value.render(scope)?;
        let position = match members.iter().position(|(k, _)| *k == &*write.top) {
            Some(i) => i,
            None => {
                // A member the state lacks starts as an object when the
                // write goes deeper, and is simply set when it does not.
                let current = match scope.state.base.get(&*write.top) {
                    Some(value) => value.clone(),
                    None if steps.len() > 1 => Value::Object(Map::new()),
                    None => Value::Null,
                };
                members.push((&write.top, current));
                members.len() - 1
            }
        };
        let Some((_, member)) = members.get_mut(position) else {
            continue;
        };
        write_at(
            member,
            steps.get(1..).unwrap_or(&[]),
            value,
            &write.path,
            &steps,
        )?;
    }
    Ok(members)
}

pub(crate) fn write_at(
    target: &mut Value,
    rest: &[Step],
    value: Value,
    path: &ComputedPath,
    all: &[Step],
) -> Result<(), CallError> {
    let Some((first, rest)) = rest.split_first() else {
        *target = value;
        return Ok(());
    };
    let next = match slot_mut(target, &first.segment.key, first.segment.index) {
        Slot::Found(next) => next,
        Slot::NoElement { len } => {
            return Err(write_error(
                first,
                path,
                all,
                format!(
                    "has no element {:?} (an array of {len}): a write never adds array elements",
                    &*first.segment.key
                ),
            ));
        }
        Slot::NotContainer { kind } => {
            return Err(write_error(
                first,
                path,
                all,
                format!(
                    "cannot take the segment {:?}: it is {kind}",
                    &*first.segment.key
                ),
            ));
        }
    };
    write_at(next, rest, value, path, all)
}

/// Where one segment of a nested write lands in a container.
pub(crate) enum Slot<'a> {
    /// An object's member (made `{}` when it was missing, for the write to
    /// fill) or an array's element.
    Found(&'a mut Value),
    /// An array without that element: writes never add elements.
    NoElement {
        /// The array's length.
        len: usize,
    },
    /// Not an object or an array.
    NotContainer {
        /// What it is instead.
        kind: &'static str,
    },
}

/// The slot `key` (`index` when it is one) names in `target` — the one
/// walk of nested writes, for computed `set_state` paths and for merging an
/// overlay's patches alike.
pub(crate) fn slot_mut<'a>(target: &'a mut Value, key: &str, index: Option<usize>) -> Slot<'a> {
    match target {
        Value::Object(map) => Slot::Found(
            map.entry(key.to_owned())
                .or_insert_with(|| Value::Object(Map::new())),
        ),
        Value::Array(items) => {
            let len = items.len();
            match index.and_then(|i| items.get_mut(i)) {
                Some(slot) => Slot::Found(slot),
                None => Slot::NoElement { len },
            }
        }
        other => Slot::NotContainer {
            kind: json_kind(other),
        },
    }
}

pub(crate) fn write_error(
    failed: &Step,
    path: &ComputedPath,
    all: &[Step],
    what: String,
) -> CallError {
    let upto = all
        .iter()
        .position(|s| std::ptr::eq(s, failed))
        .unwrap_or(all.len());
    let parent = pointer_of(all.get(..upto).unwrap_or(all));
    let shown = if parent.is_empty() { "/" } else { &parent };
    let message = format!(
        "the write at {} cannot be made: the state at {shown} {what}{}",
        path.at(),
        match &failed.from {
            Some(from) => format!(" (the segment came from {from})"),
            None => String::new(),
        }
    );
    let pointer = match failed.origin {
        Origin::Input => failed.from.clone().unwrap_or_default(),
        Origin::State | Origin::Literal => parent,
    };
    blame(failed.origin, pointer, message)
}
