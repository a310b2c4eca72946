//! The state one call reads ([`StateView`]): a plain state, or a shared
//! base with an attempt's [`Overlay`] over it, read as the merged state
//! without copying the base.

use crate::paths::dotted::{Resolved, Segment, step};
use crate::state::overlay::{Overlay, Patch};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::iter::Peekable;

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

    /// One top-level member of the merged state: the base's or a replaced
    /// value borrowed, a member some of whose parts were written built (its
    /// own size, never the whole state's).
    pub fn member(&self, key: &str) -> Option<Cow<'a, Value>> {
        let base = self.base.get(key);
        match self.overlay.and_then(|o| o.members.get(key)) {
            None => base.map(Cow::Borrowed),
            Some(Patch::Removed) => None,
            Some(Patch::Value(v)) => Some(Cow::Borrowed(v)),
            Some(patch @ Patch::Members(_)) => Some(Cow::Owned(patch.merged(base))),
        }
    }

    /// The merged state's top-level keys, in the order of its object
    /// (sorted), without building it.
    pub fn keys(&self) -> impl Iterator<Item = &'a str> + use<'a> {
        let overlay = self.overlay;
        let written = overlay
            .into_iter()
            .flat_map(|o| o.members.iter())
            .filter(|(_, p)| !matches!(p, Patch::Removed))
            .map(|(k, _)| k.as_str());
        let kept = self
            .base
            .keys()
            .map(String::as_str)
            .filter(move |k| overlay.and_then(|o| o.members.get(*k)).is_none());
        Sorted::new(kept, written)
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
                Patch::Removed => return Seen::Missing,
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

/// Two sorted, disjoint key sequences merged in order.
pub(crate) struct Sorted<'a, A: Iterator<Item = &'a str>, B: Iterator<Item = &'a str>> {
    a: Peekable<A>,
    b: Peekable<B>,
}

impl<'a, A: Iterator<Item = &'a str>, B: Iterator<Item = &'a str>> Sorted<'a, A, B> {
    pub(crate) fn new(a: A, b: B) -> Self {
        Sorted {
            a: a.peekable(),
            b: b.peekable(),
        }
    }
}

impl<'a, A: Iterator<Item = &'a str>, B: Iterator<Item = &'a str>> Iterator for Sorted<'a, A, B> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        match (self.a.peek(), self.b.peek()) {
            (Some(x), Some(y)) if y < x => self.b.next(),
            (Some(_), _) => self.a.next(),
            (None, _) => self.b.next(),
        }
    }
}
