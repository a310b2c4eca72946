//! References (`{"$input": path}`, `{"$state": path}`) and the paths they
//! follow when a path is written as an array (version 2's computed paths,
//! docs/mock-language.md "Computed paths"): each segment a literal key or
//! index, a `$input`/`$state` reference read per call, or one an
//! expression gives — a reference with its own array path (one level of
//! nesting, so `users[orders[order_id].user_id]` can be named) or a
//! `$find` whose key is the segment. Their compiled form and how a call
//! resolves them; `crate::paths::parse` reads them from a definition.

use crate::error::{CallError, Origin, Rejection, display_pointer};
use crate::paths::dotted::{Path, Resolved, Segment, step};
use crate::paths::steps::{Found, Step, Steps, describe, pointer_of, segment_of};
use crate::scope::{NO_SLOT, Render, Scope, Source};
use crate::state::view::Seen;
use serde_json::Value;
use std::borrow::Cow;

/// `{"$input": path}` or `{"$state": path}`, with the definition location for messages.
#[derive(Debug, Clone)]
pub(crate) struct Reference {
    pub(crate) source: Source,
    pub(crate) path: Path,
    /// A version-2 path written as an array (then `path` is empty and unused).
    pub(crate) computed: Option<Box<ComputedPath>>,
    pub(crate) at: Box<str>,
    /// The variant's memo slot for this source and path (see [`crate::scope::Memo`]).
    pub(crate) slot: usize,
}

/// A path written as an array.
#[derive(Debug, Clone)]
pub(crate) struct ComputedPath {
    pub(crate) parts: Box<[Part]>,
    /// Where the path is in the definition.
    pub(crate) at: Box<str>,
}

/// One segment as written.
#[derive(Debug, Clone)]
pub(crate) enum Part {
    Literal(Segment),
    Reference {
        source: Source,
        path: Path,
        /// Where the reference is in the definition.
        at: Box<str>,
    },
    /// A segment an expression gives.
    Computed(Box<ExprSegment>),
}

/// A segment whose value an expression gives per call.
#[derive(Debug, Clone)]
pub(crate) struct ExprSegment {
    pub(crate) value: SegmentValue,
    pub(crate) origin: Origin,
    /// Where the segment is in the definition.
    pub(crate) at: Box<str>,
}

/// The expression of an [`ExprSegment`].
#[derive(Debug, Clone)]
pub(crate) enum SegmentValue {
    /// A reference with its own array path.
    Nested(Reference),
    /// An operator whose value names the segment (`$find` giving a key); a
    /// `null` value is a path that does not resolve.
    Rendered(Box<dyn Render>),
}

impl Reference {
    /// A reference with a computed path, outside any memo slot.
    pub(crate) fn computed(source: Source, path: ComputedPath, at: &str) -> Reference {
        Reference {
            source,
            path: Path::whole(),
            computed: Some(Box::new(path)),
            at: at.into(),
            slot: NO_SLOT,
        }
    }

    /// The source and path this reference reads, as written; `None` for a
    /// computed path, which is resolved anew each time (never memoized).
    pub(crate) fn key(&self) -> Option<(Source, &str)> {
        match self.computed {
            None => Some((self.source, self.path.as_str())),
            Some(_) => None,
        }
    }

    pub(crate) fn resolve<'a>(&self, scope: &Scope<'a>) -> Result<Cow<'a, Value>, CallError> {
        if let Some(computed) = &self.computed {
            return match computed.resolve(self.source, scope)? {
                Found::Whole => Ok(Cow::Owned(Value::Object(scope.state.whole()))),
                Found::Value(v) => Ok(Cow::Borrowed(v)),
                Found::Built(v) => Ok(Cow::Owned(v)),
                Found::Missing { pointer } => Err(CallError::MissingReference {
                    path: pointer,
                    message: format!(
                        "{} (a computed path, at {}) does not resolve in the call's {}",
                        self.source.operator(),
                        display_pointer(&self.at),
                        self.source.place()
                    ),
                }),
            };
        }
        let found = match scope.lookup(self.source, &self.path, self.slot) {
            Resolved::Whole => Some(Cow::Owned(Value::Object(scope.state.whole()))),
            Resolved::Found(v) => Some(Cow::Borrowed(v)),
            Resolved::Built(v) => Some(Cow::Owned(v)),
            Resolved::Missing => None,
        };
        found.ok_or_else(|| CallError::MissingReference {
            path: self.data_pointer(),
            message: format!(
                "{} {:?} (at {}) does not resolve in the call's {}",
                self.source.operator(),
                self.path.as_str(),
                display_pointer(&self.at),
                self.source.place()
            ),
        })
    }

    /// A value this reference read, refused by an operator, blamed on where
    /// it came from.
    pub(crate) fn blame(&self, rejection: Rejection) -> CallError {
        CallError::refused_operand(
            self.source.origin(),
            Some(self.data_pointer()),
            rejection,
            &self.at,
        )
    }

    /// Where the reference points, as a JSON pointer into the input or the state.
    pub(crate) fn data_pointer(&self) -> String {
        self.path.to_pointer()
    }
}

impl ComputedPath {
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

    /// Where the path is in the definition.
    pub(crate) fn at(&self) -> &str {
        &self.at
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
}

/// A reference segment's value as a segment (see [`segment_of`]).
fn reference_step(
    source: Source,
    path: &Path,
    at: &str,
    scope: &Scope<'_>,
) -> Result<Step, CallError> {
    let operator = source.operator();
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
                "{operator} {:?} (a path segment, at {at}) does not resolve in the call's {}",
                path.as_str(),
                source.place()
            ),
        });
    };
    let origin = source.origin();
    match segment_of(&value) {
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
            Err(CallError::refused_segment(
                origin,
                path.to_pointer(),
                message,
            ))
        }
    }
}

impl ExprSegment {
    /// The segment of this call; `None` when a `$find` finds nothing.
    pub(crate) fn step(&self, scope: &Scope<'_>) -> Result<Option<Step>, CallError> {
        let value = match &self.value {
            SegmentValue::Nested(r) => r.resolve(scope)?.into_owned(),
            SegmentValue::Rendered(expr) => match expr.render(scope)? {
                Value::Null => return Ok(None),
                found => found,
            },
        };
        match segment_of(&value) {
            Some(segment) => Ok(Some(Step {
                segment,
                origin: self.origin,
                from: None,
            })),
            None => Err(CallError::refused_segment(
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
