//! A state held as a shared base plus one attempt's own writes (shared
//! fixtures, docs/simulations.md "Fixtures").
//!
//! The base — a simulation's fixtures and its definitions' initial states —
//! is read by every attempt and never copied; an attempt's writes are an
//! [`Overlay`]: a tree of [`Patch`]es that replace a value at a path or
//! change some members of an object (or elements of an array) of the base.
//! A nested write such as `orders.<id>.status` adds one small patch and
//! leaves the rest of `orders` where it is, so a call's cost and an
//! attempt's memory grow with what the attempt wrote, not with the base.
//!
//! Reads see the merged state: a read that ends inside a replaced value or
//! inside the untouched base borrows it; only a read that ends exactly on a
//! value some of whose members were written builds the merged value (its
//! size, not the base's). Pure: no I/O, no clock.

use crate::compile::CompiledDefinition;
use crate::computed::{Slot, Step, Write, slot_mut, write_error};
use crate::domain::Answer;
use crate::error::CallError;
use crate::eval::{Call, select};
use crate::expr::{Memo, Scope};
use crate::operators::json_kind;
use crate::path::{Resolved, Segment, step};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// One attempt's writes over a shared base, by top-level member.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overlay {
    members: BTreeMap<String, Patch>,
}

/// A write over a base value.
#[derive(Debug, Clone, PartialEq)]
pub enum Patch {
    /// The value here is replaced whole.
    Value(Value),
    /// Some members (of an object) or elements (of an array, by index
    /// text) are changed; every other one is the base's. Over a missing
    /// base it is an object of just these members.
    Members(BTreeMap<String, Patch>),
}

impl Overlay {
    /// No writes yet.
    pub fn new() -> Overlay {
        Overlay::default()
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Replaces the patch of one top-level member (a call's answer from
    /// [`LayeredOutcome::patches`]).
    pub fn set(&mut self, key: &str, patch: Patch) {
        match self.members.get_mut(key) {
            Some(slot) => *slot = patch,
            None => {
                self.members.insert(key.to_owned(), patch);
            }
        }
    }

    /// The patch of one top-level member.
    pub fn get(&self, key: &str) -> Option<&Patch> {
        self.members.get(key)
    }

    /// The top-level members written, in key order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.members.keys().map(String::as_str)
    }

    /// What the attempt wrote, as JSON: every replaced value where it is,
    /// inside objects of the members on its path; no member of the base is
    /// copied. (An element of an array is shown under its index text.) This
    /// is what evidence records as a fixture-backed attempt's state.
    pub fn changes(&self) -> Map<String, Value> {
        self.members
            .iter()
            .map(|(k, p)| (k.clone(), p.changes()))
            .collect()
    }

    /// Rebuilds an overlay from [`Overlay::changes`] written with
    /// [`Overlay::to_stored`] (which keeps which nodes are replacements).
    pub fn from_stored(stored: &Value) -> Option<Overlay> {
        let Value::Object(map) = stored else {
            return None;
        };
        let mut members = BTreeMap::new();
        for (k, v) in map {
            members.insert(k.clone(), Patch::from_stored(v)?);
        }
        Some(Overlay { members })
    }

    /// The overlay as stored JSON: `{"=": value}` for a replaced value,
    /// `{"+": {member: …}}` for changed members. Round-trips through
    /// [`Overlay::from_stored`].
    pub fn to_stored(&self) -> Value {
        Value::Object(
            self.members
                .iter()
                .map(|(k, p)| (k.clone(), p.to_stored()))
                .collect(),
        )
    }

    /// Applies every patch onto a full state (base already in `state`).
    pub fn apply_onto(&self, state: &mut Map<String, Value>) {
        for (key, patch) in &self.members {
            patch.apply_onto_member(state, key);
        }
    }
}

impl Patch {
    fn changes(&self) -> Value {
        match self {
            Patch::Value(v) => v.clone(),
            Patch::Members(m) => {
                Value::Object(m.iter().map(|(k, p)| (k.clone(), p.changes())).collect())
            }
        }
    }

    fn to_stored(&self) -> Value {
        let mut one = Map::new();
        match self {
            Patch::Value(v) => one.insert("=".to_owned(), v.clone()),
            Patch::Members(m) => one.insert(
                "+".to_owned(),
                Value::Object(m.iter().map(|(k, p)| (k.clone(), p.to_stored())).collect()),
            ),
        };
        Value::Object(one)
    }

    fn from_stored(stored: &Value) -> Option<Patch> {
        let Value::Object(one) = stored else {
            return None;
        };
        if one.len() != 1 {
            return None;
        }
        if let Some(v) = one.get("=") {
            return Some(Patch::Value(v.clone()));
        }
        let Value::Object(m) = one.get("+")? else {
            return None;
        };
        let mut members = BTreeMap::new();
        for (k, v) in m {
            members.insert(k.clone(), Patch::from_stored(v)?);
        }
        Some(Patch::Members(members))
    }

    /// The merged value of this patch over `base`.
    pub fn merged(&self, base: Option<&Value>) -> Value {
        match self {
            Patch::Value(v) => v.clone(),
            Patch::Members(_) => {
                let mut out = base.cloned().unwrap_or(Value::Null);
                self.apply(&mut out);
                out
            }
        }
    }

    /// Applies this patch to `target` in place: a member patch walks the
    /// slots as a nested write does (a missing member starts as `{}`; an
    /// array element that is not there is left out, as it never was
    /// written).
    fn apply(&self, target: &mut Value) {
        match self {
            Patch::Value(v) => *target = v.clone(),
            Patch::Members(members) => {
                if !matches!(target, Value::Object(_) | Value::Array(_)) {
                    *target = Value::Object(Map::new());
                }
                for (key, patch) in members {
                    if let Slot::Found(slot) = slot_mut(target, key, key.parse().ok()) {
                        patch.apply(slot);
                    }
                }
            }
        }
    }

    fn apply_onto_member(&self, state: &mut Map<String, Value>, key: &str) {
        let merged = self.merged(state.get(key));
        state.insert(key.to_owned(), merged);
    }
}

/// The state one call reads: a base alone (version-1 and plain calls), or a
/// shared base and an attempt's overlay.
#[derive(Debug, Clone, Copy)]
pub struct StateView<'a> {
    pub(crate) base: &'a Map<String, Value>,
    pub(crate) overlay: Option<&'a Overlay>,
}

/// What a path finds in a view.
pub(crate) enum Seen<'a> {
    Borrowed(&'a Value),
    Built(Value),
    Missing,
}

impl<'a> StateView<'a> {
    /// A plain state: no overlay.
    pub fn plain(state: &'a Map<String, Value>) -> StateView<'a> {
        StateView {
            base: state,
            overlay: None,
        }
    }

    /// A shared base and an attempt's own writes.
    pub fn layered(base: &'a Map<String, Value>, overlay: &'a Overlay) -> StateView<'a> {
        StateView {
            base,
            overlay: Some(overlay),
        }
    }

    /// The whole merged state, built (the rare read of state `""`).
    pub fn whole(&self) -> Map<String, Value> {
        let mut state = self.base.clone();
        if let Some(overlay) = self.overlay {
            overlay.apply_onto(&mut state);
        }
        state
    }

    /// The value at `segments` (non-empty) in the merged state.
    pub(crate) fn find<'s>(&self, segments: impl IntoIterator<Item = &'s Segment>) -> Seen<'a> {
        let mut segments = segments.into_iter();
        let Some(first) = segments.next() else {
            return Seen::Built(Value::Object(self.whole()));
        };
        let base = self.base.get(&*first.key);
        let patch = self.overlay.and_then(|o| o.members.get(&*first.key));
        let Some(mut patch) = patch else {
            return match base.and_then(|v| segments.try_fold(v, |v, s| step(v, s))) {
                Some(v) => Seen::Borrowed(v),
                None => Seen::Missing,
            };
        };
        let mut base = base;
        loop {
            match patch {
                Patch::Value(v) => {
                    return match segments.try_fold(v, |v, s| step(v, s)) {
                        Some(v) => Seen::Borrowed(v),
                        None => Seen::Missing,
                    };
                }
                Patch::Members(members) => {
                    let Some(segment) = segments.next() else {
                        return Seen::Built(patch.merged(base));
                    };
                    let child_base = base.and_then(|b| step(b, segment));
                    if matches!(base, Some(Value::Array(_))) && child_base.is_none() {
                        return Seen::Missing;
                    }
                    match members.get(&*segment.key) {
                        Some(child) => {
                            patch = child;
                            base = child_base;
                        }
                        None => {
                            return match child_base
                                .and_then(|v| segments.try_fold(v, |v, s| step(v, s)))
                            {
                                Some(v) => Seen::Borrowed(v),
                                None => Seen::Missing,
                            };
                        }
                    }
                }
            }
        }
    }

    /// A dot path's value, as the evaluator's lookups use it.
    pub(crate) fn resolve(&self, segments: &[Segment]) -> Resolved<'a> {
        if segments.is_empty() {
            return Resolved::Whole;
        }
        if self.overlay.is_none() {
            // The version-1 path, unchanged.
            let (first, rest) = (&segments[0], &segments[1..]);
            return match self.base.get(&*first.key) {
                None => Resolved::Missing,
                Some(value) => match rest.iter().try_fold(value, |v, s| step(v, s)) {
                    Some(found) => Resolved::Found(found),
                    None => Resolved::Missing,
                },
            };
        }
        match self.find(segments) {
            Seen::Borrowed(v) => Resolved::Found(v),
            Seen::Built(v) => Resolved::Built(v),
            Seen::Missing => Resolved::Missing,
        }
    }
}

/// The writes of one call against a layered state: each write's path and
/// value, rendered against the pre-call state, applied in order to the
/// top-level members' patches; the answer is the new patch of each member
/// written. The checks are the plain form's (docs/mock-language.md): a
/// missing object member on the way is created as an object; a missing
/// array index, or a step into a scalar, is an error.
pub(crate) fn write_patches<'d>(
    writes: &'d [Write],
    scope: &Scope<'_>,
) -> Result<Vec<(&'d str, Patch)>, CallError> {
    let view = &scope.state;
    let mut members: Vec<(&'d str, Option<Patch>)> = Vec::new();
    for write in writes {
        let steps = write.steps(scope)?;
        let value = write.value.render(scope)?;
        let top: &'d str = &write.top;
        let position = match members.iter().position(|(k, _)| *k == top) {
            Some(p) => p,
            None => {
                let current = view.overlay.and_then(|o| o.members.get(top)).cloned();
                members.push((top, current));
                members.len() - 1
            }
        };
        let base = view.base.get(top);
        let Some((_, slot)) = members.get_mut(position) else {
            continue;
        };
        let rest = steps.get(1..).unwrap_or(&[]);
        let patch = slot.take();
        *slot = Some(write_into(patch, base, rest, value, &write.path, &steps)?);
    }
    Ok(members
        .into_iter()
        .filter_map(|(k, p)| p.map(|p| (k, p)))
        .collect())
}

fn write_into(
    patch: Option<Patch>,
    base: Option<&Value>,
    rest: &[Step],
    value: Value,
    path: &crate::computed::ComputedPath,
    all: &[Step],
) -> Result<Patch, CallError> {
    let Some((first, deeper)) = rest.split_first() else {
        return Ok(Patch::Value(value));
    };
    let mut members = match patch {
        Some(Patch::Value(mut whole)) => {
            // A replaced value is the attempt's own: written in place.
            crate::computed::write_at(&mut whole, rest, value, path, all)?;
            return Ok(Patch::Value(whole));
        }
        Some(Patch::Members(members)) => members,
        None => BTreeMap::new(),
    };
    let child_base = match base {
        None | Some(Value::Object(_)) => base.and_then(|b| step(b, &first.segment)),
        Some(Value::Array(items)) => match first.segment.index.and_then(|i| items.get(i)) {
            Some(item) => Some(item),
            None => {
                return Err(write_error(
                    first,
                    path,
                    all,
                    format!(
                        "has no element {:?} (an array of {}): a write never adds array elements",
                        &*first.segment.key,
                        items.len()
                    ),
                ));
            }
        },
        Some(other) => {
            return Err(write_error(
                first,
                path,
                all,
                format!(
                    "cannot take the segment {:?}: it is {}",
                    &*first.segment.key,
                    json_kind(other)
                ),
            ));
        }
    };
    let child = members.remove(&*first.segment.key);
    let written = write_into(child, child_base, deeper, value, path, all)?;
    members.insert(first.segment.key.to_string(), written);
    Ok(Patch::Members(members))
}

/// What a successful call against a layered state answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayeredOutcome<'d> {
    /// The variant used.
    pub variant: &'d str,
    /// The index of the matched rule in the variant's `rules`, or `None`.
    pub rule: Option<usize>,
    /// The rendered result: exactly what the agent receives.
    pub result: Value,
    /// (Version 2) the domain error the call answered instead of a result.
    pub error: Option<crate::DomainError>,
    /// The new patch of each top-level member the call wrote; set each
    /// with [`Overlay::set`].
    #[serde(skip)]
    pub patches: Vec<(&'d str, Patch)>,
    /// The simulated delay.
    pub delay_ms: u32,
}

/// Evaluates one call against a layered state — a shared base (fixtures and
/// initial states) and the attempt's own [`Overlay`](crate::Overlay) — without copying the
/// base: reads see the merged state, and the call's writes come back as the
/// new patches of the top-level members it wrote ([`LayeredOutcome`]).
/// Everything else — selection, rendering, every error — is [`evaluate`](crate::evaluate)'s
/// over the merged state.
pub fn evaluate_layered<'d>(
    definition: &'d CompiledDefinition,
    input: &Value,
    state: StateView<'_>,
    variant: Option<&str>,
) -> Result<LayeredOutcome<'d>, CallError> {
    let memo = Memo::new();
    let scope = Scope::layered(input, state, &memo);
    let empty = Map::new();
    let call = Call {
        input,
        state: &empty,
        variant,
    };
    let selected = select(definition, &call, &scope)?;
    let result = match selected.result {
        Answer::Result(expr) => expr.render(&scope)?,
        Answer::Error(error) => {
            // A domain error changes nothing: no patches.
            return Ok(LayeredOutcome {
                variant: &selected.variant.name,
                rule: selected.rule,
                result: Value::Null,
                error: Some(error.render(&scope)?),
                patches: Vec::new(),
                delay_ms: selected.delay_ms,
            });
        }
    };
    let patches = if selected.writes.is_empty() {
        let mut patches = Vec::with_capacity(selected.set_state.len());
        for (key, expr) in selected.set_state {
            patches.push((&**key, Patch::Value(expr.render(&scope)?)));
        }
        patches
    } else {
        write_patches(selected.writes, &scope)?
    };
    Ok(LayeredOutcome {
        variant: &selected.variant.name,
        rule: selected.rule,
        result,
        error: None,
        patches,
        delay_ms: selected.delay_ms,
    })
}
