//! One call (docs/spec.md §6).

use crate::compile::{CompiledCondition, CompiledDefinition, CompiledVariant, Test};
use crate::computed::{Found, Write};
use crate::contract::CompiledContract;
use crate::domain::{Answer, DomainError};
use crate::error::CallError;
use crate::expr::{Ahead, Expr, Memo, Scope};
use crate::json::json_equal;
use crate::path::Resolved;
use serde::Serialize;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// One call: its input, the pre-call state and an optional variant name.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The call's arguments (an object for every real tool call).
    pub input: &'a Value,
    /// The pre-call state.
    pub state: &'a Map<String, Value>,
    /// The variant to use; `None` means the definition's `default_variant`.
    pub variant: Option<&'a str>,
}

/// What a successful call answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome<'d> {
    /// The variant used.
    pub variant: &'d str,
    /// The index of the matched rule in the variant's `rules`, or `None`.
    pub rule: Option<usize>,
    /// The rendered result: exactly what the agent receives; `null` when
    /// the call answered a domain error.
    pub result: Value,
    /// (Version 2) the domain error the call answered instead of a result:
    /// not a failed call, and it changes no state (`state_updates` is empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<DomainError>,
    /// The rendered `set_state`: each top-level key replaces the pre-call state's.
    #[serde(skip)]
    pub state_updates: Vec<(&'d str, Value)>,
    /// The simulated delay.
    pub delay_ms: u32,
}

impl Outcome<'_> {
    /// Applies the state updates in place, turning the pre-call state into the post-call state.
    pub fn apply_to(&self, state: &mut Map<String, Value>) {
        for (key, value) in &self.state_updates {
            state.insert((*key).to_owned(), value.clone());
        }
    }

    /// Moves the updates into `state` (no clone).
    pub fn commit_to(self, state: &mut Map<String, Value>) -> Value {
        commit(self.state_updates, state);
        self.result
    }

    /// The post-call state, computed from the pre-call state.
    pub fn post_state(&self, pre: &Map<String, Value>) -> Map<String, Value> {
        let mut state = pre.clone();
        self.apply_to(&mut state);
        state
    }
}

/// Evaluates one call without schema validation (docs/spec.md §6 steps 1–6).
///
/// Pure and deterministic: the same definition, call and state always give the
/// same answer; nothing is read from a clock or the environment.
pub fn evaluate<'d>(
    definition: &'d CompiledDefinition,
    call: &Call<'_>,
) -> Result<Outcome<'d>, CallError> {
    let memo = Memo::new();
    let scope = Scope::new(call.input, call.state, &memo);
    let selected = select(definition, call, &scope)?;
    outcome(&selected, &scope)
}

/// Renders what [`select`] chose: the result and the state updates, or the
/// domain error alone (which changes no state, so `set_state` is not rendered).
fn outcome<'d>(selected: &Selected<'d>, scope: &Scope<'_>) -> Result<Outcome<'d>, CallError> {
    let (result, error, state_updates) = match selected.result {
        Answer::Result(expr) => (expr.render(scope)?, None, render_updates(selected, scope)?),
        Answer::Error(error) => (Value::Null, Some(error.render(scope)?), Vec::new()),
    };
    Ok(Outcome {
        variant: &selected.variant.name,
        rule: selected.rule,
        result,
        error,
        state_updates,
        delay_ms: selected.delay_ms,
    })
}

/// What a successful call answers when its result was written as JSON text
/// by [`evaluate_json`] instead of being built as a [`Value`].
#[derive(Debug, Clone, PartialEq)]
pub struct JsonOutcome<'d> {
    /// The variant used.
    pub variant: &'d str,
    /// The index of the matched rule in the variant's `rules`, or `None`.
    pub rule: Option<usize>,
    /// (Version 2) the domain error the call answered: then nothing was
    /// written as the result, and `state_updates` is empty.
    pub error: Option<DomainError>,
    /// The rendered `set_state`: each top-level key replaces the pre-call state's.
    pub state_updates: Vec<(&'d str, Value)>,
    /// The simulated delay.
    pub delay_ms: u32,
}

impl JsonOutcome<'_> {
    /// Moves the updates into `state`, turning the pre-call state into the post-call state.
    pub fn commit_to(self, state: &mut Map<String, Value>) {
        commit(self.state_updates, state);
    }
}

/// Moves each update in, allocating a key only for a key the state lacks.
fn commit(updates: Vec<(&str, Value)>, state: &mut Map<String, Value>) {
    for (key, value) in updates {
        match state.get_mut(key) {
            Some(slot) => *slot = value,
            None => {
                state.insert(key.to_owned(), value);
            }
        }
    }
}

/// [`evaluate`], but the rendered result is appended to `out` as compact
/// JSON — byte for byte what `serde_json::to_writer` writes for
/// [`Outcome::result`] — without building it as a [`Value`]: literal parts
/// of the result were serialized once, when the definition was compiled.
///
/// The answer and any error are exactly [`evaluate`]'s. On error `out` is
/// left as it was.
///
/// ```
/// use serde_json::{json, Map};
/// use toolmock_evaluator::{Call, compile, evaluate_json};
///
/// let definition = compile(&json!({
///     "schema_version": 1,
///     "default_variant": "ok",
///     "variants": {"ok": {"result": {"id": {"$input": "id"}, "status": "found"}}},
///     "examples": [{"variant": "ok", "input": {"id": 1}, "expected": {"id": 1, "status": "found"}}]
/// })).expect("the definition compiles");
/// let mut out = Vec::new();
/// let input = json!({"id": 7});
/// let call = Call { input: &input, state: &Map::new(), variant: None };
/// let outcome = evaluate_json(&definition, &call, &mut out)?;
/// assert_eq!(out, br#"{"id":7,"status":"found"}"#);
/// assert_eq!(outcome.variant, "ok");
/// # Ok::<(), toolmock_evaluator::CallError>(())
/// ```
pub fn evaluate_json<'d>(
    definition: &'d CompiledDefinition,
    call: &Call<'_>,
    out: &mut Vec<u8>,
) -> Result<JsonOutcome<'d>, CallError> {
    let memo = Memo::new();
    let scope = Scope::new(call.input, call.state, &memo);
    let selected = select(definition, call, &scope)?;
    write_selected(selected, &scope, out)
}

/// Writes a selected answer's result to `out` and renders its state
/// updates; on an error `out` is left as it was.
fn write_selected<'d>(
    selected: Selected<'d>,
    scope: &Scope<'_>,
    out: &mut Vec<u8>,
) -> Result<JsonOutcome<'d>, CallError> {
    let expr = match selected.result {
        Answer::Result(expr) => expr,
        Answer::Error(error) => return error_outcome(&selected, error.render(scope)?),
    };
    let start = out.len();
    let answer = expr.write_json(scope, out).and_then(|()| {
        Ok(JsonOutcome {
            variant: &selected.variant.name,
            rule: selected.rule,
            error: None,
            state_updates: render_updates(&selected, scope)?,
            delay_ms: selected.delay_ms,
        })
    });
    if answer.is_err() {
        out.truncate(start);
    }
    answer
}

/// A [`JsonOutcome`] of a domain error: nothing written, no state update.
fn error_outcome<'d>(
    selected: &Selected<'d>,
    error: DomainError,
) -> Result<JsonOutcome<'d>, CallError> {
    Ok(JsonOutcome {
        variant: &selected.variant.name,
        rule: selected.rule,
        error: Some(error),
        state_updates: Vec::new(),
        delay_ms: selected.delay_ms,
    })
}

/// What steps 1–3 of docs/spec.md §6 chose.
pub(crate) struct Selected<'d> {
    pub(crate) variant: &'d CompiledVariant,
    pub(crate) rule: Option<usize>,
    pub(crate) result: &'d Answer,
    pub(crate) set_state: &'d [(Box<str>, Expr)],
    pub(crate) writes: &'d [Write],
    pub(crate) delay_ms: u32,
}

pub(crate) fn select<'d>(
    definition: &'d CompiledDefinition,
    call: &Call<'_>,
    scope: &Scope<'_>,
) -> Result<Selected<'d>, CallError> {
    crate::nul::refuse_nul_arguments(call.input)?;
    let variant = definition
        .variant(call.variant)
        .ok_or_else(|| unknown_variant(call.variant))?;
    select_rule(variant, scope)
}

fn unknown_variant(name: Option<&str>) -> CallError {
    CallError::UnknownVariant {
        variant: name.unwrap_or_default().to_owned(),
    }
}

/// Steps 2–3 of docs/spec.md §6 in a variant already chosen.
fn select_rule<'d>(
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

fn render_updates<'d>(
    selected: &Selected<'d>,
    scope: &Scope<'_>,
) -> Result<Vec<(&'d str, Value)>, CallError> {
    if !selected.writes.is_empty() {
        return crate::computed::render_writes(selected.writes, scope);
    }
    let set_state = selected.set_state;
    let mut updates = Vec::with_capacity(set_state.len());
    for (key, expr) in set_state {
        updates.push((&**key, expr.render(scope)?));
    }
    Ok(updates)
}

/// Evaluates one call with the contract: the input is validated before the
/// variant is looked up and the result after it is rendered (docs/spec.md §6).
pub fn evaluate_with_contract<'d>(
    definition: &'d CompiledDefinition,
    contract: &CompiledContract,
    call: &Call<'_>,
) -> Result<Outcome<'d>, CallError> {
    contract.validate_input(call.input)?;
    let outcome = evaluate(definition, call)?;
    // The output schema describes results; a domain error is not one.
    if outcome.error.is_none() {
        contract.validate_output(&outcome.result)?;
    }
    Ok(outcome)
}

/// How [`prepare`] renders a variant's input operators ahead: as JSON text
/// for [`evaluate_prepared_json`], as values for [`evaluate_prepared`], both
/// for [`evaluate_prepared_checked`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rendering {
    /// For [`evaluate_prepared_json`].
    Json,
    /// For [`evaluate_prepared`].
    Value,
    /// For [`evaluate_prepared_checked`].
    JsonAndValue,
    /// Nothing ahead: every operator is rendered in place, by any of the
    /// three; for when the thread that prepares is the busier one.
    Nothing,
}

/// The part of a call that its input and variant name decide alone, worked
/// out by [`prepare`] before the state is known — on another thread, ahead
/// of the calls still waiting for their state.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The variant's index; or why the call fails before its state is read.
    checked: Result<usize, CallError>,
    ahead: Ahead,
}

/// The first half of a call, which reads no state: the input's U+0000
/// scan, its validation against the contract's input schema when there is a
/// contract, the variant's lookup, and the rendering of every operator of the
/// variant that reads the input alone (`$input`, and `$number`/`$dateAdd` of
/// input and literals). [`evaluate_prepared_json`] or [`evaluate_prepared`]
/// then does the rest against the state, with the same `definition` (and
/// `contract`), the same input and the `rendering` they need; the answer and
/// any error are exactly [`evaluate_json`]'s, or [`evaluate`]'s
/// ([`evaluate_with_contract`]'s with a contract).
///
/// Every error is met in [`evaluate`]'s order: the input's errors first, an
/// unknown variant next; an operator that fails ahead is left to fail again
/// in place, so its error is the one its own location in the definition gives.
pub fn prepare(
    definition: &CompiledDefinition,
    contract: Option<&CompiledContract>,
    input: &Value,
    variant: Option<&str>,
    rendering: Rendering,
) -> Prepared {
    let checked = match contract {
        Some(contract) => contract.validate_input(input),
        None => crate::nul::refuse_nul_arguments(input),
    }
    .and_then(|()| {
        definition
            .variant_index(variant)
            .ok_or_else(|| unknown_variant(variant))
    });
    let ahead = match checked.as_ref().map(|&i| definition.variants.get(i)) {
        Ok(Some(v)) => Ahead::render(
            &v.input_holes,
            input,
            matches!(rendering, Rendering::Json | Rendering::JsonAndValue),
            matches!(rendering, Rendering::Value | Rendering::JsonAndValue),
        ),
        _ => Ahead::default(),
    };
    Prepared { checked, ahead }
}

impl Prepared {
    fn variant<'d>(
        &self,
        definition: &'d CompiledDefinition,
    ) -> Result<&'d CompiledVariant, CallError> {
        match &self.checked {
            Ok(i) => definition
                .variants
                .get(*i)
                // Only a `Prepared` of another definition gets here.
                .ok_or_else(|| unknown_variant(None)),
            Err(e) => Err(e.clone()),
        }
    }
}

/// [`evaluate_json`] of a call [`prepare`]d with [`Rendering::Json`] and no
/// contract: steps 2–6 of docs/spec.md §6 against the state.
pub fn evaluate_prepared_json<'d>(
    definition: &'d CompiledDefinition,
    prepared: &Prepared,
    input: &Value,
    state: &Map<String, Value>,
    out: &mut Vec<u8>,
) -> Result<JsonOutcome<'d>, CallError> {
    let variant = prepared.variant(definition)?;
    let memo = Memo::new();
    let scope = Scope::with_ahead(input, state, &memo, &prepared.ahead);
    write_selected(select_rule(variant, &scope)?, &scope, out)
}

/// [`evaluate`] of a call [`prepare`]d with [`Rendering::Value`] — or
/// [`evaluate_with_contract`] when `contract` is the one it was prepared
/// with: the result is then validated against the output schema.
pub fn evaluate_prepared<'d>(
    definition: &'d CompiledDefinition,
    contract: Option<&CompiledContract>,
    prepared: &Prepared,
    input: &Value,
    state: &Map<String, Value>,
) -> Result<Outcome<'d>, CallError> {
    let variant = prepared.variant(definition)?;
    let memo = Memo::new();
    let scope = Scope::with_ahead(input, state, &memo, &prepared.ahead);
    let selected = select_rule(variant, &scope)?;
    let outcome = outcome(&selected, &scope)?;
    if let Some(contract) = contract
        && outcome.error.is_none()
    {
        contract.validate_output(&outcome.result)?;
    }
    Ok(outcome)
}

/// The results a [`Workspace`] keeps for one variant: its own, then each rule's.
type KeptResults = Vec<Option<Value>>;

/// Where [`evaluate_prepared_checked`] keeps the last rendering of each
/// result of one definition, to render the next call's result into it (see
/// its documentation). Belongs to one evaluating thread.
#[derive(Debug)]
pub struct Workspace<'d> {
    definition: &'d CompiledDefinition,
    /// By variant index; filled as results are first rendered.
    kept: Vec<KeptResults>,
}

impl<'d> Workspace<'d> {
    /// An empty workspace for the calls of `definition`.
    pub fn new(definition: &'d CompiledDefinition) -> Self {
        Workspace {
            definition,
            kept: Vec::new(),
        }
    }

    /// The definition whose results it keeps.
    pub fn definition(&self) -> &'d CompiledDefinition {
        self.definition
    }

    /// The kept rendering of variant `variant`'s result (`rule` `None`) or of
    /// one of its rules' results.
    fn kept(&mut self, variant: usize, rule: Option<usize>) -> Option<&mut Option<Value>> {
        let rules = self.definition.variants.get(variant)?.rules.len();
        if self.kept.len() <= variant {
            self.kept.resize_with(variant + 1, Vec::new);
        }
        let kept = self.kept.get_mut(variant)?;
        if kept.is_empty() {
            kept.resize_with(rules + 1, || None);
        }
        kept.get_mut(rule.map_or(0, |r| r + 1))
    }
}

/// [`evaluate_with_contract`] of a call [`prepare`]d with the same contract
/// and [`Rendering::JsonAndValue`], with the result appended to `out` as
/// compact JSON (as [`evaluate_json`] writes it) instead of returned.
///
/// The output schema needs the result as a [`Value`]; it is rendered into
/// the one the workspace kept from the last call that used the same result,
/// where only the operators change, so the literal parts of a large result
/// are neither copied nor freed per call. The text is written from the
/// compiled definition, as [`evaluate_json`] does. On error `out` is left as
/// it was.
pub fn evaluate_prepared_checked<'d>(
    workspace: &mut Workspace<'d>,
    contract: &CompiledContract,
    prepared: &Prepared,
    input: &Value,
    state: &Map<String, Value>,
    out: &mut Vec<u8>,
) -> Result<JsonOutcome<'d>, CallError> {
    let definition = workspace.definition;
    let variant = prepared.variant(definition)?;
    let memo = Memo::new();
    let scope = Scope::with_ahead(input, state, &memo, &prepared.ahead);
    let selected = select_rule(variant, &scope)?;
    let expr = match selected.result {
        Answer::Result(expr) => expr,
        // No output schema for a domain error, so nothing is kept.
        Answer::Error(error) => return error_outcome(&selected, error.render(&scope)?),
    };
    let own_result = selected
        .rule
        .and_then(|i| variant.rules.get(i))
        .is_some_and(|r| r.result.is_some());
    let key = prepared
        .checked
        .as_ref()
        .ok()
        .map(|&v| (v, selected.rule.filter(|_| own_result)));
    let mut fresh = None;
    let rendered = match key.and_then(|(v, r)| workspace.kept(v, r)) {
        Some(kept) => {
            let value = kept.get_or_insert(Value::Null);
            expr.render_into(&scope, value)?;
            value
        }
        None => fresh.insert(expr.render(&scope)?),
    };
    let state_updates = render_updates(&selected, &scope)?;
    contract.validate_output(rendered)?;
    let start = out.len();
    if let Err(e) = expr.write_json(&scope, out) {
        out.truncate(start);
        return Err(e);
    }
    Ok(JsonOutcome {
        variant: &selected.variant.name,
        rule: selected.rule,
        error: None,
        state_updates,
        delay_ms: selected.delay_ms,
    })
}

fn holds(condition: &CompiledCondition, scope: &Scope<'_>) -> Result<bool, CallError> {
    let state_whole;
    let resolved = match &condition.computed {
        None => scope.lookup(condition.source, &condition.path, condition.slot),
        Some(computed) => match computed.resolve(condition.source, scope)? {
            Found::Whole => Resolved::Whole,
            Found::Value(v) => Resolved::Found(v),
            Found::Built(v) => Resolved::Built(v),
            Found::Missing { .. } => Resolved::Missing,
        },
    };
    let built;
    let found = match resolved {
        Resolved::Found(v) => Some(v),
        Resolved::Built(v) => {
            built = v;
            Some(&built)
        }
        Resolved::Missing => None,
        // Rebuilt each time: a rare condition (`exists` on state "").
        Resolved::Whole => {
            state_whole = Value::Object(scope.state.whole());
            Some(&state_whole)
        }
    };
    Ok(match &condition.test {
        Test::Eq(want) => found.is_some_and(|v| json_equal(v, want)),
        Test::Ne(want) => !found.is_some_and(|v| json_equal(v, want)),
        Test::In(options) => found.is_some_and(|v| options.iter().any(|o| json_equal(v, o))),
        Test::Exists(want) => found.is_some() == *want,
        Test::Ref(eq, reference) => {
            let want = reference.resolve(scope)?;
            found.is_some_and(|v| json_equal(v, &want)) == *eq
        }
        Test::V2(test) => test.holds(found, scope)?,
    })
}

#[cfg(test)]
mod tests {
    use super::{
        Call, Rendering, Workspace, evaluate, evaluate_json, evaluate_prepared,
        evaluate_prepared_checked, evaluate_prepared_json, evaluate_with_contract, prepare,
    };
    use crate::CompiledContract;
    use serde_json::{Map, json};
    use toolmock_contract::{OperationContract, OperationIdentity, OperationSource};

    /// Calls prepared ahead (input checks, variant, input operators) answer
    /// exactly as whole calls do — results, updates and errors, their
    /// locations included, with and without a contract — also where two
    /// operators that render alike sit at different places and fail.
    #[test]
    fn prepared_calls_answer_like_whole_calls() -> Result<(), Box<dyn std::error::Error>> {
        let definition = crate::compile(&json!({
            "schema_version": 1,
            "default_variant": "a",
            "initial_state": {"s": {"k": [1, "two"]}, "n": 0},
            "variants": {
                "a": {
                    "result": {
                        "x": {"$input": "x"}, "k": {"$state": "s.k.1"},
                        "m": {"$number": {"$input": "n"}},
                        "d": {"$dateAdd": {"value": {"$input": "when"}, "days": 1}},
                        "ds": {"$dateAdd": {"value": "2026-01-01", "days": {"$state": "n"}}},
                        "all": {"$input": ""}, "whole": {"$state": ""},
                        "nest": {"deep": {"$input": "x"}, "lit": [1, {"$state": "n"}, "z"]}
                    },
                    "set_state": {"seen": {"$input": "x"}, "n": {"$number": {"$input": "n"}}},
                    "rules": [
                        {"when": [{"source": "input", "path": "x", "op": "eq", "value": 0}],
                         "result": [{"$number": {"$input": "n"}}, {"$input": "x"}]},
                        {"when": [{"source": "state", "path": "n", "op": "eq", "value": 3}],
                         "result": {"again": {"$dateAdd": {"value": {"$input": "when"}, "days": 1}}},
                         "set_state": {"n": 4}}
                    ]
                },
                "b": {"result": [true, {"$input": "x"}]}
            },
            "examples": [
                {"variant": "a", "input": {"x": 0, "n": 2}, "expected": [2, 0]},
                {"variant": "b", "input": {"x": 1}, "expected": [true, 1]}
            ]
        }))
        .map_err(|d| d.to_string())?;
        let contract = CompiledContract::new(OperationContract {
            operation: OperationIdentity {
                source: OperationSource::Custom,
                name: "op".into(),
            },
            description: String::new(),
            input_schema: json!({"type": "object", "properties": {"x": {"type": "integer"}}}),
            output_schema: json!({"type": "object"}),
        })?;
        let inputs = [
            json!({"x": 0, "n": 2}),
            json!({"x": 1, "n": "12.50", "when": "2026-03-01T23:30:00-05:00"}),
            json!({"x": 1, "n": "1e3", "when": "2026-03-01"}),
            json!({"x": 2, "n": 3, "when": "2026-02-30"}),
            json!({"x": "text", "n": 3, "when": "2026-03-01"}),
            json!({"x": 1, "n": 3}),
            json!({"n": 3, "when": "2026-03-01"}),
            json!({"x": "a\u{0}b"}),
        ];
        let mut state = definition.initial_state().clone();
        let mut workspace = Workspace::new(&definition);
        let (mut oks, mut errors) = (0, 0);
        for input in &inputs {
            for variant in [None, Some("b"), Some("nope")] {
                for pass in 0..2 {
                    let call = Call {
                        input,
                        state: &state,
                        variant,
                    };
                    let json = prepare(&definition, None, input, variant, Rendering::Json);
                    let mut whole = b"prefix".to_vec();
                    let mut ahead = b"prefix".to_vec();
                    let written = evaluate_json(&definition, &call, &mut whole);
                    assert_eq!(
                        evaluate_prepared_json(&definition, &json, input, &state, &mut ahead),
                        written
                    );
                    assert_eq!(ahead, whole);
                    let bare = prepare(&definition, None, input, variant, Rendering::Nothing);
                    let mut in_place = b"prefix".to_vec();
                    assert_eq!(
                        evaluate_prepared_json(&definition, &bare, input, &state, &mut in_place),
                        written
                    );
                    assert_eq!(in_place, whole);
                    let value = prepare(&definition, None, input, variant, Rendering::Value);
                    let outcome = evaluate(&definition, &call);
                    assert_eq!(
                        evaluate_prepared(&definition, None, &value, input, &state),
                        outcome
                    );
                    let checked = prepare(
                        &definition,
                        Some(&contract),
                        input,
                        variant,
                        Rendering::Value,
                    );
                    let validated = evaluate_with_contract(&definition, &contract, &call);
                    assert_eq!(
                        evaluate_prepared(&definition, Some(&contract), &checked, input, &state),
                        validated
                    );
                    let both = prepare(
                        &definition,
                        Some(&contract),
                        input,
                        variant,
                        Rendering::JsonAndValue,
                    );
                    let mut text = b"prefix".to_vec();
                    let kept = evaluate_prepared_checked(
                        &mut workspace,
                        &contract,
                        &both,
                        input,
                        &state,
                        &mut text,
                    );
                    match (&validated, &kept) {
                        (Ok(o), Ok(k)) => {
                            assert_eq!(
                                (o.variant, o.rule, &o.state_updates, o.delay_ms),
                                (k.variant, k.rule, &k.state_updates, k.delay_ms)
                            );
                            let mut want = b"prefix".to_vec();
                            want.extend(serde_json::to_vec(&o.result)?);
                            assert_eq!(
                                String::from_utf8_lossy(&text),
                                String::from_utf8_lossy(&want)
                            );
                        }
                        (Err(a), Err(k)) => {
                            assert_eq!(a, k);
                            assert_eq!(text, b"prefix");
                        }
                        (a, k) => panic!("{input} {variant:?}: {a:?} vs {k:?}"),
                    }
                    match outcome {
                        Ok(outcome) => {
                            oks += 1;
                            // The second pass sees the state this call left.
                            if pass == 0 {
                                outcome.apply_to(&mut state);
                            }
                        }
                        Err(_) => errors += 1,
                    }
                }
            }
        }
        assert!(oks >= 10 && errors >= 10, "{oks} answers, {errors} errors");
        let initial = definition.initial_state();
        let messages: Vec<String> = [0, 1]
            .map(|x| json!({"x": x, "n": "bad", "when": "2026-03-01"}))
            .iter()
            .filter_map(|input| {
                let prepared = prepare(&definition, None, input, None, Rendering::Json);
                evaluate_prepared_json(&definition, &prepared, input, initial, &mut Vec::new())
                    .err()
                    .map(|e| e.to_string())
            })
            .collect();
        assert_eq!(messages.len(), 2);
        assert!(messages[0].contains("/rules/0/result/0"), "{}", messages[0]);
        assert!(
            messages[1].contains("/variants/a/result/m"),
            "{}",
            messages[1]
        );
        Ok(())
    }

    /// `evaluate_json` writes exactly the JSON of `evaluate`'s result, and
    /// fails exactly when and how `evaluate` fails.
    #[test]
    fn json_rendering_matches_value_rendering() {
        let definition = crate::compile(&json!({
            "schema_version": 1,
            "default_variant": "a",
            "initial_state": {"s": {"k": [1, "two"]}},
            "variants": {
                "a": {
                    "result": {
                        "z": "last", "a": [1, {"$input": "x"}, {"b\"q": {"$state": "s.k.1"}}],
                        "m": {"$number": {"$input": "n"}}, "e": {}, "l": [],
                        "d": {"$dateAdd": {"value": {"$input": "when"}, "days": 1}},
                        "u": "é\u{1}\n\t", "lit": {"$number": "0042"}, "whole": {"$state": ""}
                    },
                    "set_state": {"seen": {"$input": "x"}},
                    "rules": [{"when": [{"source": "input", "path": "x", "op": "eq", "value": 0}],
                               "result": {"$input": ""}}]
                },
                "b": {"result": [true, null, 1.5]},
                "c": {"result": "plain"},
                "d": {"result": {"$state": "s"}}
            },
            "examples": [
                {"variant": "a", "input": {"x": 0}, "expected": {"x": 0}},
                {"variant": "b", "input": {}, "expected": [true, null, 1.5]},
                {"variant": "c", "input": {}, "expected": "plain"},
                {"variant": "d", "input": {}, "expected": {"k": [1, "two"]}}
            ]
        }))
        .expect("compiles");
        let state = definition.initial_state().clone();
        let inputs = [
            json!({"x": 0}),
            json!({"x": {"deep": [null]}, "n": "12.50", "when": "2026-03-01T23:30:00-05:00"}),
            json!({"x": 1, "n": "1e3", "when": "2026-03-01"}),
            json!({"x": 1, "n": 3, "when": "2026-02-30"}),
            json!({"n": 3, "when": "2026-03-01"}),
            json!({"x": 1, "n": 3}),
        ];
        let empty = Map::new();
        let (mut oks, mut errors) = (0, 0);
        for input in &inputs {
            for variant in [None, Some("b"), Some("c"), Some("d"), Some("nope")] {
                for state in [&state, &empty] {
                    let call = Call {
                        input,
                        state,
                        variant,
                    };
                    let mut out = b"prefix".to_vec();
                    match (
                        evaluate(&definition, &call),
                        evaluate_json(&definition, &call, &mut out),
                    ) {
                        (Ok(value), Ok(written)) => {
                            let mut want = b"prefix".to_vec();
                            want.extend(serde_json::to_vec(&value.result).expect("serializes"));
                            assert_eq!(
                                String::from_utf8_lossy(&out),
                                String::from_utf8_lossy(&want)
                            );
                            oks += 1;
                            assert_eq!(
                                (
                                    value.variant,
                                    value.rule,
                                    &value.state_updates,
                                    value.delay_ms
                                ),
                                (
                                    written.variant,
                                    written.rule,
                                    &written.state_updates,
                                    written.delay_ms
                                )
                            );
                        }
                        (Err(a), Err(b)) => {
                            assert_eq!(
                                (a.code(), a.to_string(), a.path()),
                                (b.code(), b.to_string(), b.path())
                            );
                            assert_eq!(out, b"prefix");
                            errors += 1;
                        }
                        (a, b) => panic!("{input} {variant:?}: {a:?} vs {b:?}"),
                    }
                }
            }
        }
        assert!(oks >= 20 && errors >= 10, "{oks} answers, {errors} errors");
    }

    /// Conditions and references that read the same path share one memo
    /// slot per call; what a reference renders is still exactly the input's
    /// or the state's value, a missing one is still an error, and paths
    /// beyond the memo's slots are resolved each time.
    #[test]
    fn references_read_through_the_call_memo() {
        let many: Vec<_> = (0..20).map(|i| json!({"source": "input", "path": format!("p{i}"), "op": "exists", "value": false})).collect();
        let definition = crate::compile(&json!({
            "schema_version": 1,
            "default_variant": "v",
            "initial_state": {"s": 1},
            "variants": {
                "v": {
                    "result": {"many": [{"$input": "p18"}, {"$input": "p19"}], "whole": {"$state": ""}},
                    "rules": [
                        {"when": [{"source": "input", "path": "a.b", "op": "exists", "value": false}],
                         "result": {"$input": "a.b"}},
                        {"when": [{"source": "input", "path": "a.b", "op": "eq", "value": 1},
                                  {"source": "state", "path": "", "op": "exists", "value": true}],
                         "result": [{"$input": "a.b"}, {"$state": ""}, {"$state": "s"}],
                         "set_state": {"s": {"$input": "a.b"}}},
                        {"when": many}
                    ]
                }
            },
            "examples": [{"variant": "v", "input": {"a": {"b": 1}}, "expected": [1, {"s": 1}, 1]}]
        }))
        .expect("compiles");
        let state = definition.initial_state().clone();
        let call = |input: &serde_json::Value| {
            evaluate(
                &definition,
                &Call {
                    input,
                    state: &state,
                    variant: None,
                },
            )
        };

        let missing = call(&json!({"a": {}})).expect_err("a.b is absent");
        assert_eq!(
            (missing.code(), missing.path()),
            ("missing_reference", Some("/a/b"))
        );

        let shared = call(&json!({"a": {"b": 1}})).expect("rule 1 answers");
        assert_eq!(
            (shared.rule, &shared.result),
            (Some(1), &json!([1, {"s": 1}, 1]))
        );
        assert_eq!(shared.state_updates, vec![("s", json!(1))]);

        let all = (0..18).map(|i| (format!("p{i}"), json!(i)));
        let mut input: Map<_, _> = all.collect();
        input.insert("a".into(), json!({"b": 2}));
        let e = call(&json!({"a": {"b": 2}, "p18": 0})).expect_err("p19 is absent");
        assert_eq!((e.code(), e.path()), ("missing_reference", Some("/p19")));
        input.extend([("p18".into(), json!("x")), ("p19".into(), json!("y"))]);
        let both = call(&serde_json::Value::Object(input)).expect("the fallback answers");
        assert_eq!(both.rule, None);
        assert_eq!(both.result, json!({"many": ["x", "y"], "whole": {"s": 1}}));
    }
}
