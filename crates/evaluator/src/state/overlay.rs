//! An attempt's own writes over a shared base (shared fixtures,
//! docs/simulations.md "Fixtures").
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

use serde_json::{Map, Value};
use std::collections::BTreeMap;
use toolmock_contract::json_kind;

/// One attempt's writes over a shared base, by top-level member.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overlay {
    pub(crate) members: BTreeMap<String, Patch>,
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
    /// (Version 3) the member here, of an object, was removed. Only ever a
    /// member of [`Patch::Members`], never a top-level member's patch.
    Removed,
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
    /// [`LayeredOutcome::patches`](crate::LayeredOutcome::patches)).
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
    /// copied. (An element of an array is shown under its index text; a
    /// removed member as `null`.) This
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
    /// `{"+": {member: …}}` for changed members, `{"-": true}` for a removed member. Round-trips through
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
            Patch::Removed => Value::Null,
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
            Patch::Removed => one.insert("-".to_owned(), Value::Bool(true)),
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
        if one.get("-") == Some(&Value::Bool(true)) {
            return Some(Patch::Removed);
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

    /// The merged value of this patch over `base` (`null` for a removed
    /// member, which is never a top-level member's patch).
    pub fn merged(&self, base: Option<&Value>) -> Value {
        match self {
            Patch::Value(v) => v.clone(),
            Patch::Removed => Value::Null,
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
                    if let (Patch::Removed, Value::Object(map)) = (patch, &mut *target) {
                        map.remove(key);
                    } else if let Slot::Found(slot) = slot_mut(target, key, key.parse().ok()) {
                        patch.apply(slot);
                    }
                }
            }
            Patch::Removed => *target = Value::Null,
        }
    }

    fn apply_onto_member(&self, state: &mut Map<String, Value>, key: &str) {
        let merged = self.merged(state.get(key));
        state.insert(key.to_owned(), merged);
    }
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
