//! Choosing what a call answers (docs/spec.md §6 steps 1–3): the variant
//! asked for, then the first rule whose conditions all hold (through the
//! rule index when the variant has one), else the variant itself.

use crate::call::outcome::Call;
use crate::conditions::condition::holds;
use crate::definition::{CompiledDefinition, CompiledVariant};
use crate::domain::answer::Answer;
use crate::error::CallError;
use crate::expr::tree::Expr;
use crate::nul::refuse_nul_arguments;
use crate::paths::dotted::Resolved;
use crate::scope::Scope;
use crate::state::writes::{Write, render_writes};
use serde_json::Value;
use std::borrow::Cow;

/// What steps 1–3 of docs/spec.md §6 chose.
pub(crate) struct Selected<'d> {
    pub(crate) variant: &'d CompiledVariant,
    pub(crate) rule: Option<usize>,
    pub(crate) result: &'d Answer,
    pub(crate) set_state: &'d [(Box<str>, Expr)],
    pub(crate) writes: &'d [Write],
    pub(crate) delay_ms: u32,
}

/// Steps 1–3 of docs/spec.md §6: the input's U+0000 scan, the variant, the rule.
pub(crate) fn select<'d>(
    definition: &'d CompiledDefinition,
    call: &Call<'_>,
    scope: &Scope<'_>,
) -> Result<Selected<'d>, CallError> {
    refuse_nul_arguments(call.input)?;
    let variant = definition
        .variant(call.variant)
        .ok_or_else(|| unknown_variant(call.variant))?;
    select_rule(variant, scope)
}

pub(crate) fn unknown_variant(name: Option<&str>) -> CallError {
    CallError::UnknownVariant {
        variant: name.unwrap_or_default().to_owned(),
    }
}

/// Steps 2–3 of docs/spec.md §6 in a variant already chosen.
pub(crate) fn select_rule<'d>(
    variant: &'d CompiledVariant,
    scope: &Scope<'_>,
) -> Result<Selected<'d>, CallError> {
    let matched = match &variant.index {
        None => first_match(variant, 0..variant.rules.len(), scope)?,
        Some(index) => {
            let found = match scope.lookup(index.source, &index.path, index.slot) {
                Resolved::Found(v) => Some(Cow::Borrowed(v)),
                Resolved::Built(v) => Some(Cow::Owned(v)),
                // An indexed path is never empty, so never the whole state.
                Resolved::Missing | Resolved::Whole => None,
            };
            first_match(variant, index.candidates(found.as_deref()), scope)?
        }
    };
    let rule = matched.and_then(|i| variant.rules.get(i));
    Ok(Selected {
        variant,
        rule: matched,
        result: rule
            .and_then(|r| r.result.as_ref())
            .unwrap_or(&variant.result),
        set_state: rule
            .and_then(|r| r.set_state.as_deref())
            .unwrap_or(&variant.set_state),
        writes: rule
            .and_then(|r| r.writes.as_deref())
            .unwrap_or(&variant.writes),
        delay_ms: rule.and_then(|r| r.delay_ms).unwrap_or(variant.delay_ms),
    })
}

/// The first of `candidates` (rule indices, ascending) whose conditions all
/// hold. A condition that cannot be decided (a computed path's segment
/// that fails) ends the call with its error.
fn first_match(
    variant: &CompiledVariant,
    candidates: impl Iterator<Item = usize>,
    scope: &Scope<'_>,
) -> Result<Option<usize>, CallError> {
    'rules: for i in candidates {
        let Some(rule) = variant.rules.get(i) else {
            continue;
        };
        for condition in rule.when.iter() {
            if !holds(condition, scope)? {
                continue 'rules;
            }
        }
        return Ok(Some(i));
    }
    Ok(None)
}

/// The state updates of what was selected, rendered.
pub(crate) fn render_updates<'d>(
    selected: &Selected<'d>,
    scope: &Scope<'_>,
) -> Result<Vec<(&'d str, Value)>, CallError> {
    if !selected.writes.is_empty() {
        return render_writes(selected.writes, scope);
    }
    let set_state = selected.set_state;
    let mut updates = Vec::with_capacity(set_state.len());
    for (key, expr) in set_state {
        updates.push((&**key, expr.render(scope)?));
    }
    Ok(updates)
}
