//! Removal from state (version 3, docs/mock-language.md "Removing from
//! state"): a write `{"remove": path}` takes out the member (or array
//! element) the path names; with `where`/`where_ci` it takes out every
//! member of the collection the path names that matches. Removal never
//! creates anything: a path that does not resolve, as a read would not,
//! removes nothing. Into a plain state's copied member, or into an
//! attempt's overlay patches over a shared base.

use crate::error::CallError;
use crate::expr::find::Wanted;
use crate::paths::dotted::{Segment, step};
use crate::paths::steps::{Step, pointer_of};
use crate::state::overlay::Patch;
use serde_json::Value;
use std::collections::BTreeMap;
use toolmock_contract::json_kind;

/// What one removal takes out, for this call.
pub(crate) enum Removing<'w> {
    /// The member the path's last segment names in its parent.
    Member,
    /// Every member of the collection at the path that matches.
    Matching(Wanted<'w>),
}

/// The member `segment` names in `value`, to change it.
fn child_mut<'v>(value: &'v mut Value, segment: &Segment) -> Option<&'v mut Value> {
    match value {
        Value::Object(map) => map.get_mut(&*segment.key),
        Value::Array(items) => segment.index.and_then(|i| items.get_mut(i)),
        _ => None,
    }
}

/// Removes from `member` (the copy of a top-level member) what `removing`
/// names at `rest` (the path's segments after the top-level key; `all` is
/// the whole path, for messages). A path that does not resolve removes
/// nothing. The answer says whether anything was removed.
pub(crate) fn remove_in(
    member: &mut Value,
    rest: &[Step],
    removing: &Removing<'_>,
    at: &str,
    all: &[Step],
) -> Result<bool, CallError> {
    match removing {
        Removing::Member => {
            let Some((last, parents)) = rest.split_last() else {
                return Ok(false);
            };
            let Some(parent) = parents
                .iter()
                .try_fold(member, |v, s| child_mut(v, &s.segment))
            else {
                return Ok(false);
            };
            Ok(remove_member(parent, &last.segment))
        }
        Removing::Matching(wanted) => {
            let Some(collection) = rest
                .iter()
                .try_fold(member, |v, s| child_mut(v, &s.segment))
            else {
                return Ok(false);
            };
            retain_unmatched(collection, wanted, at, all)
        }
    }
}

/// Takes the member `segment` names out of `parent`: an object's member,
/// or an array's element (the later ones move down).
fn remove_member(parent: &mut Value, segment: &Segment) -> bool {
    match parent {
        Value::Object(map) => map.remove(&*segment.key).is_some(),
        Value::Array(items) => match segment.index.filter(|i| *i < items.len()) {
            Some(i) => {
                items.remove(i);
                true
            }
            None => false,
        },
        _ => false,
    }
}

/// Keeps the members of a collection that do not match; the answer says
/// whether any did.
fn retain_unmatched(
    collection: &mut Value,
    wanted: &Wanted<'_>,
    at: &str,
    all: &[Step],
) -> Result<bool, CallError> {
    let before = match collection {
        Value::Object(map) => {
            let before = map.len();
            map.retain(|_, element| !wanted.matches(element));
            before - map.len()
        }
        Value::Array(items) => {
            let before = items.len();
            items.retain(|element| !wanted.matches(element));
            before - items.len()
        }
        other => return Err(not_a_collection(other, at, all)),
    };
    Ok(before > 0)
}

/// A removal with `where` whose path names a string, number, boolean or
/// `null`: the state cannot be what the definition says it is.
fn not_a_collection(found: &Value, at: &str, all: &[Step]) -> CallError {
    let pointer = pointer_of(all);
    CallError::InvalidStatePath {
        message: format!(
            "the removal at {at} cannot be made: the state at {} is {}, not an object or an array to remove members from",
            if pointer.is_empty() { "/" } else { &pointer },
            json_kind(found)
        ),
        path: pointer,
    }
}

/// The same removal against a layered state: `patch` is what the attempt
/// (and this call's earlier writes) wrote over `base` for the value at
/// this depth. The answer is the new patch, or `None` when nothing is
/// removed (the patch stays as it was). A member of an object of the base
/// is removed by a removed patch (no copy of the object); an element of an
/// array, by a new copy of the array.
pub(crate) fn remove_patch(
    patch: Option<&Patch>,
    base: Option<&Value>,
    rest: &[Step],
    removing: &Removing<'_>,
    at: &str,
    all: &[Step],
) -> Result<Option<Patch>, CallError> {
    let whole = match (patch, base) {
        (Some(Patch::Removed), _) | (None, None) => return Ok(None),
        (Some(Patch::Value(value)), _) => Some(value.clone()),
        // An array (or a scalar, where the path stops) is changed as a
        // whole value: its elements' indices move.
        (Some(p @ Patch::Members(_)), Some(b @ Value::Array(_))) => Some(p.merged(Some(b))),
        (None, Some(b)) if !b.is_object() => Some(b.clone()),
        _ => None,
    };
    if let Some(mut whole) = whole {
        let removed = remove_in(&mut whole, rest, removing, at, all)?;
        return Ok(removed.then_some(Patch::Value(whole)));
    }
    // An object of the base, perhaps with some members written.
    let mut members = match patch {
        Some(Patch::Members(members)) => members.clone(),
        _ => BTreeMap::new(),
    };
    match (rest.split_first(), removing) {
        (None, Removing::Matching(wanted)) => {
            let mut changed = false;
            let keys: Vec<String> = merged_keys(base, &members);
            for key in keys {
                let element = match members.get(&key) {
                    Some(Patch::Removed) => continue,
                    Some(p) => std::borrow::Cow::Owned(p.merged(base.and_then(|b| b.get(&key)))),
                    None => match base.and_then(|b| b.get(&key)) {
                        Some(v) => std::borrow::Cow::Borrowed(v),
                        None => continue,
                    },
                };
                if wanted.matches(&element) {
                    members.insert(key, Patch::Removed);
                    changed = true;
                }
            }
            Ok(changed.then_some(Patch::Members(members)))
        }
        (None, Removing::Member) => Ok(None),
        (Some((last, [])), Removing::Member) => {
            let key = &*last.segment.key;
            let present = match members.get(key) {
                Some(Patch::Removed) => false,
                Some(_) => true,
                None => base.and_then(|b| step(b, &last.segment)).is_some(),
            };
            if !present {
                return Ok(None);
            }
            members.insert(key.to_owned(), Patch::Removed);
            Ok(Some(Patch::Members(members)))
        }
        (Some((first, deeper)), _) => {
            let key = &*first.segment.key;
            let child_base = base.and_then(|b| step(b, &first.segment));
            let Some(child) =
                remove_patch(members.get(key), child_base, deeper, removing, at, all)?
            else {
                return Ok(None);
            };
            members.insert(key.to_owned(), child);
            Ok(Some(Patch::Members(members)))
        }
    }
}

/// The keys of an object of the base with some members written, in order.
fn merged_keys(base: Option<&Value>, members: &BTreeMap<String, Patch>) -> Vec<String> {
    let mut keys: Vec<String> = base
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    keys.extend(members.keys().cloned());
    keys.sort();
    keys.dedup();
    keys
}
