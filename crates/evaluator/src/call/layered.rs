//! Evaluating a call against a layered state: a shared base and an
//! attempt's own overlay ([`evaluate_layered`]), the writes coming back as
//! patches instead of whole new values.

use crate::call::outcome::Call;
use crate::call::select::select;
use crate::definition::CompiledDefinition;
use crate::domain::answer::{Answer, DomainError};
use crate::error::CallError;
use crate::scope::{Memo, Scope};
use crate::state::overlay::Patch;
use crate::state::view::StateView;
use crate::state::writes::write_patches;
use serde::Serialize;
use serde_json::{Map, Value};

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
    pub error: Option<DomainError>,
    /// The new patch of each top-level member the call wrote; set each
    /// with [`Overlay::set`](crate::Overlay::set).
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
