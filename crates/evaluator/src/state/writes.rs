//! Writes (`set_state`, docs/spec.md §6 and, for its list form,
//! docs/mock-language.md "Nested writes"): what a call changes, rendered
//! against the pre-call input and state — into copies of the top-level
//! members of a plain state, or into an attempt's overlay patches over a
//! shared base. The checks are the same for both: a missing object member
//! on the way is created as an object; a missing array index, or a step
//! into a scalar, is an error blamed on the segment that named it.

use crate::error::{CallError, Origin};
use crate::expr::find::Selection;
use crate::expr::iteration::Change;
use crate::expr::tree::Expr;
use crate::paths::dotted::step;
use crate::paths::reference::ComputedPath;
use crate::paths::steps::{Step, Steps, pointer_of};
use crate::scope::Scope;
use crate::state::overlay::{Patch, Slot, slot_mut};
use crate::state::removal::{Removing, remove_in, remove_patch};
use crate::state::view::StateView;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use toolmock_contract::json_kind;

/// Compiled `set_state` in its object form: each top-level key with its expression.
pub(crate) type StateUpdates = Box<[(Box<str>, Expr)]>;

/// One write of the list form of `set_state`: a path whose first segment is
/// a literal key (the top-level member it changes), and what it does there.
#[derive(Debug, Clone)]
pub(crate) struct Write {
    pub(crate) top: Box<str>,
    pub(crate) path: ComputedPath,
    pub(crate) action: Action,
}

/// What a write does at its path.
#[derive(Debug, Clone)]
pub(crate) enum Action {
    /// Sets the value there (`{path, value}`).
    Set(Expr),
    /// (Version 3) removes the member there, or with a selection the
    /// members of the collection there that match (`{remove, where?}`).
    Remove(Option<Selection>),
    /// (Version 3) replaces or merges the member there, or with a
    /// selection the selected members of the collection there (`{update, …}`).
    Update(Box<Change>),
}

impl Write {
    /// Every expression of the write: its value, or its selection's values.
    pub(crate) fn exprs_mut(&mut self) -> Box<dyn Iterator<Item = &mut Expr> + '_> {
        match &mut self.action {
            Action::Set(value) => Box::new(std::iter::once(value)),
            Action::Remove(Some(selection)) => Box::new(selection.exprs_mut()),
            Action::Remove(None) => Box::new(std::iter::empty()),
            Action::Update(change) => Box::new(change.exprs_mut()),
        }
    }

    /// What this call removes, with the selection's values rendered; `None`
    /// for a write that sets.
    fn removing(&self, scope: &Scope<'_>) -> Result<Option<Removing<'_>>, CallError> {
        Ok(match &self.action {
            Action::Set(_) | Action::Update(_) => None,
            Action::Remove(None) => Some(Removing::Member),
            Action::Remove(Some(selection)) => Some(Removing::Matching(selection.wanted(scope)?)),
        })
    }

    /// A removal's path for this call: `None` when a `$find` segment finds
    /// nothing (then there is nothing to remove).
    fn removal_steps(&self, scope: &Scope<'_>) -> Result<Option<Vec<Step>>, CallError> {
        Ok(match self.path.steps(scope)? {
            Steps::All(steps) => Some(steps),
            Steps::Unfound { .. } => None,
        })
    }

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
        let steps;
        let value = match &write.action {
            Action::Set(value) => {
                steps = write.steps(scope)?;
                value.render(scope)?
            }
            Action::Remove(_) => {
                remove_from_members(write, scope, &mut members)?;
                continue;
            }
            Action::Update(change) => {
                steps = write.steps(scope)?;
                let rest = steps.get(1..).unwrap_or(&[]);
                let current = match members.iter().find(|(k, _)| *k == &*write.top) {
                    Some((_, member)) => resolve_steps(member, rest),
                    None => scope
                        .state
                        .base
                        .get(&*write.top)
                        .and_then(|m| resolve_steps(m, rest)),
                };
                updated(change, current, write, &steps, scope)?
            }
        };
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

/// One removal against the plain state: in the copy of its top-level
/// member (made on first change; a member the state lacks has nothing to
/// remove).
fn remove_from_members<'d>(
    write: &'d Write,
    scope: &Scope<'_>,
    members: &mut Vec<(&'d str, Value)>,
) -> Result<(), CallError> {
    let (Some(steps), Some(removing)) = (write.removal_steps(scope)?, write.removing(scope)?)
    else {
        return Ok(());
    };
    let rest = steps.get(1..).unwrap_or(&[]);
    if let Some((_, member)) = members.iter_mut().find(|(k, _)| *k == &*write.top) {
        remove_in(member, rest, &removing, write.path.at(), &steps)?;
        return Ok(());
    }
    let Some(current) = scope.state.base.get(&*write.top) else {
        return Ok(());
    };
    let mut member = current.clone();
    if remove_in(&mut member, rest, &removing, write.path.at(), &steps)? {
        members.push((&write.top, member));
    }
    Ok(())
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
    CallError::refused_segment(failed.origin, pointer, message)
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
        let top: &'d str = &write.top;
        let value = match &write.action {
            Action::Set(value) => value,
            Action::Update(change) => {
                let steps = write.steps(scope)?;
                let rest = steps.get(1..).unwrap_or(&[]);
                let base = view.base.get(top);
                let slot = patch_slot(&mut members, top, view);
                let current = current_at(slot.as_ref(), base, rest);
                let value = updated(change, current, write, &steps, scope)?;
                let patch = slot.take();
                *slot = Some(write_into(patch, base, rest, value, &write.path, &steps)?);
                continue;
            }
            Action::Remove(_) => {
                let (Some(steps), Some(removing)) =
                    (write.removal_steps(scope)?, write.removing(scope)?)
                else {
                    continue;
                };
                let slot = patch_slot(&mut members, top, view);
                let rest = steps.get(1..).unwrap_or(&[]);
                let changed = remove_patch(
                    slot.as_ref(),
                    view.base.get(top),
                    rest,
                    &removing,
                    write.path.at(),
                    &steps,
                )?;
                if let Some(changed) = changed {
                    *slot = Some(changed);
                }
                continue;
            }
        };
        let steps = write.steps(scope)?;
        let value = value.render(scope)?;
        let base = view.base.get(top);
        let slot = patch_slot(&mut members, top, view);
        let rest = steps.get(1..).unwrap_or(&[]);
        let patch = slot.take();
        *slot = Some(write_into(patch, base, rest, value, &write.path, &steps)?);
    }
    Ok(members
        .into_iter()
        .filter_map(|(k, p)| p.map(|p| (k, p)))
        .collect())
}

/// The patch of top-level member `top` as this call's writes leave it so
/// far: the attempt's own when this call has not written it yet.
fn patch_slot<'m, 'd>(
    members: &'m mut Vec<(&'d str, Option<Patch>)>,
    top: &'d str,
    view: &StateView<'_>,
) -> &'m mut Option<Patch> {
    let position = match members.iter().position(|(k, _)| *k == top) {
        Some(p) => p,
        None => {
            let current = view.overlay.and_then(|o| o.members.get(top)).cloned();
            members.push((top, current));
            members.len() - 1
        }
    };
    &mut members[position].1
}

fn write_into(
    patch: Option<Patch>,
    base: Option<&Value>,
    rest: &[Step],
    value: Value,
    path: &ComputedPath,
    all: &[Step],
) -> Result<Patch, CallError> {
    let Some((first, deeper)) = rest.split_first() else {
        return Ok(Patch::Value(value));
    };
    let mut members = match patch {
        Some(Patch::Removed) => {
            // A member this call removed is written anew, nothing of the
            // base's under it.
            let mut whole = Value::Object(Map::new());
            write_at(&mut whole, rest, value, path, all)?;
            return Ok(Patch::Value(whole));
        }
        Some(Patch::Value(mut whole)) => {
            // A replaced value is the attempt's own: written in place.
            write_at(&mut whole, rest, value, path, all)?;
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

/// The value at `rest` inside `root`, copied; `None` when it is not there.
fn resolve_steps(root: &Value, rest: &[Step]) -> Option<Value> {
    rest.iter()
        .try_fold(root, |v, s| step(v, &s.segment))
        .cloned()
}

/// The value at `rest` of a top-level member as this call's writes leave
/// it so far (its patch over the base); `None` when it is not there.
fn current_at(patch: Option<&Patch>, base: Option<&Value>, rest: &[Step]) -> Option<Value> {
    let Some((first, deeper)) = rest.split_first() else {
        return match patch {
            Some(Patch::Removed) => None,
            Some(p) => Some(p.merged(base)),
            None => base.cloned(),
        };
    };
    match patch {
        Some(Patch::Removed) => None,
        Some(Patch::Value(whole)) => resolve_steps(whole, rest),
        Some(Patch::Members(members)) => current_at(
            members.get(&*first.segment.key),
            base.and_then(|b| step(b, &first.segment)),
            deeper,
        ),
        None => base.and_then(|b| resolve_steps(b, rest)),
    }
}

/// What an update makes of `current` (the value at its path, as the
/// earlier writes left it): every selected member of the collection, or
/// the one member, replaced or merged. It must be there.
fn updated(
    change: &Change,
    current: Option<Value>,
    write: &Write,
    steps: &[Step],
    scope: &Scope<'_>,
) -> Result<Value, CallError> {
    let pointer = pointer_of(steps);
    let Some(mut current) = current else {
        return Err(CallError::MissingReference {
            message: format!(
                "the update at {} cannot be made: the state has nothing at {}",
                write.path.at(),
                if pointer.is_empty() { "/" } else { &pointer }
            ),
            path: pointer,
        });
    };
    if !change.has_selection() {
        scope.visit(1, write.path.at())?;
        return change.apply(current, scope);
    }
    if !(current.is_array() || current.is_object()) {
        return Err(CallError::InvalidStatePath {
            message: format!(
                "the update at {} cannot be made: the state at {} is {}, not an object or an array to update members of",
                write.path.at(),
                if pointer.is_empty() { "/" } else { &pointer },
                json_kind(&current)
            ),
            path: pointer,
        });
    }
    change.update_all(&mut current, scope)?;
    Ok(current)
}
