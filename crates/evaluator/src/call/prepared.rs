//! A call in two halves, for when the input is known before the state
//! (`toolmock eval` parses and prepares calls on other threads while one
//! thread evaluates them in order): [`Prepared::new`] does everything the
//! input and the variant name decide alone; the `evaluate*` methods of
//! [`Prepared`] do the rest against the state and answer exactly what the
//! whole-call functions answer.

use crate::call::evaluate::{error_outcome, outcome, write_selected};
use crate::call::outcome::{JsonOutcome, Outcome};
use crate::call::select::{render_updates, select_rule, unknown_variant};
use crate::contract::CompiledContract;
use crate::definition::{CompiledDefinition, CompiledVariant};
use crate::domain::answer::Answer;
use crate::error::CallError;
use crate::nul::refuse_nul_arguments;
use crate::render::ahead::render_ahead;
use crate::scope::{Ahead, Memo, Scope};
use serde_json::{Map, Value};

/// Which of a variant's input operators [`Prepared::new`] renders ahead,
/// and how: as JSON text for [`Prepared::evaluate_json`], as values for
/// [`Prepared::evaluate`], both for [`Prepared::evaluate_json_with_contract`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rendering {
    /// For [`Prepared::evaluate_json`].
    Json,
    /// For [`Prepared::evaluate`].
    Value,
    /// For [`Prepared::evaluate_json_with_contract`].
    JsonAndValue,
    /// Nothing ahead: every operator is rendered in place, by any of the
    /// three; for when the thread that prepares is the busier one.
    Nothing,
}

/// The part of a call that its input and variant name decide alone, worked
/// out by [`Prepared::new`] before the state is known — on another thread,
/// ahead of the calls still waiting for their state.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The variant's index; or why the call fails before its state is read.
    checked: Result<usize, CallError>,
    ahead: Ahead,
}

impl Prepared {
    /// The first half of a call, which reads no state: the input's U+0000
    /// scan, its validation against the contract's input schema when there
    /// is a contract, the variant's lookup, and the rendering of every
    /// operator of the variant that reads the input alone (`$input`, and
    /// `$number`/`$dateAdd` of input and literals). One of the `evaluate*`
    /// methods then does the rest against the state, with the same
    /// `definition` (and `contract`), the same input and the `rendering` it
    /// needs; the answer and any error are exactly
    /// [`evaluate_json`](crate::evaluate_json)'s, or
    /// [`evaluate`](crate::evaluate)'s
    /// ([`evaluate_with_contract`](crate::evaluate_with_contract)'s with a
    /// contract).
    ///
    /// Every error is met in [`evaluate`](crate::evaluate)'s order: the
    /// input's errors first, an unknown variant next; an operator that fails
    /// ahead is left to fail again in place, so its error is the one its own
    /// location in the definition gives.
    pub fn new(
        definition: &CompiledDefinition,
        contract: Option<&CompiledContract>,
        input: &Value,
        variant: Option<&str>,
        rendering: Rendering,
    ) -> Prepared {
        let checked = match contract {
            Some(contract) => contract.validate_input(input),
            None => refuse_nul_arguments(input),
        }
        .and_then(|()| {
            definition
                .variant_index(variant)
                .ok_or_else(|| unknown_variant(variant))
        });
        let ahead = match checked.as_ref().map(|&i| definition.variants.get(i)) {
            Ok(Some(v)) => render_ahead(
                &v.input_holes,
                input,
                matches!(rendering, Rendering::Json | Rendering::JsonAndValue),
                matches!(rendering, Rendering::Value | Rendering::JsonAndValue),
            ),
            _ => Ahead::default(),
        };
        Prepared { checked, ahead }
    }

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

    /// [`evaluate_json`](crate::evaluate_json) of a call prepared with
    /// [`Rendering::Json`] and no contract: steps 2–6 of docs/spec.md §6
    /// against the state.
    pub fn evaluate_json<'d>(
        &self,
        definition: &'d CompiledDefinition,
        input: &Value,
        state: &Map<String, Value>,
        out: &mut Vec<u8>,
    ) -> Result<JsonOutcome<'d>, CallError> {
        let variant = self.variant(definition)?;
        let memo = Memo::new();
        let scope = Scope::with_ahead(input, state, &memo, &self.ahead);
        write_selected(select_rule(variant, &scope)?, &scope, out)
    }

    /// [`evaluate`](crate::evaluate) of a call prepared with
    /// [`Rendering::Value`] — or
    /// [`evaluate_with_contract`](crate::evaluate_with_contract) when
    /// `contract` is the one it was prepared with: the result is then
    /// validated against the output schema.
    pub fn evaluate<'d>(
        &self,
        definition: &'d CompiledDefinition,
        contract: Option<&CompiledContract>,
        input: &Value,
        state: &Map<String, Value>,
    ) -> Result<Outcome<'d>, CallError> {
        let variant = self.variant(definition)?;
        let memo = Memo::new();
        let scope = Scope::with_ahead(input, state, &memo, &self.ahead);
        let selected = select_rule(variant, &scope)?;
        let outcome = outcome(&selected, &scope)?;
        if let Some(contract) = contract
            && outcome.error.is_none()
        {
            contract.validate_output(&outcome.result)?;
        }
        Ok(outcome)
    }

    /// [`evaluate_with_contract`](crate::evaluate_with_contract) of a call
    /// prepared with the same contract and [`Rendering::JsonAndValue`], with
    /// the result appended to `out` as compact JSON (as
    /// [`evaluate_json`](crate::evaluate_json) writes it) instead of returned.
    ///
    /// The output schema needs the result as a [`Value`]; it is rendered into
    /// the one the workspace kept from the last call that used the same result,
    /// where only the operators change, so the literal parts of a large result
    /// are neither copied nor freed per call. The text is written from the
    /// compiled definition, as `evaluate_json` does. On error `out` is left as
    /// it was.
    pub fn evaluate_json_with_contract<'d>(
        &self,
        workspace: &mut Workspace<'d>,
        contract: &CompiledContract,
        input: &Value,
        state: &Map<String, Value>,
        out: &mut Vec<u8>,
    ) -> Result<JsonOutcome<'d>, CallError> {
        let definition = workspace.definition;
        let variant = self.variant(definition)?;
        let memo = Memo::new();
        let scope = Scope::with_ahead(input, state, &memo, &self.ahead);
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
        let key = self
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
}

/// The results a [`Workspace`] keeps for one variant: its own, then each rule's.
type KeptResults = Vec<Option<Value>>;

/// Where [`Prepared::evaluate_json_with_contract`] keeps the last rendering of each
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

#[cfg(test)]
mod tests {
    use super::{Prepared, Rendering, Workspace};
    use crate::call::evaluate::{evaluate, evaluate_json, evaluate_with_contract};
    use crate::call::outcome::Call;
    use crate::contract::CompiledContract;
    use serde_json::json;
    use toolmock_contract::{OperationContract, OperationIdentity, OperationSource};

    /// Calls prepared ahead (input checks, variant, input operators) answer
    /// exactly as whole calls do — results, updates and errors, their
    /// locations included, with and without a contract — also where two
    /// operators that render alike sit at different places and fail.
    #[test]
    fn prepared_calls_answer_like_whole_calls() -> Result<(), Box<dyn std::error::Error>> {
        let definition = crate::check::compile(&json!({
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
                    let json = Prepared::new(&definition, None, input, variant, Rendering::Json);
                    let mut whole = b"prefix".to_vec();
                    let mut ahead = b"prefix".to_vec();
                    let written = evaluate_json(&definition, &call, &mut whole);
                    assert_eq!(
                        json.evaluate_json(&definition, input, &state, &mut ahead),
                        written
                    );
                    assert_eq!(ahead, whole);
                    let bare = Prepared::new(&definition, None, input, variant, Rendering::Nothing);
                    let mut in_place = b"prefix".to_vec();
                    assert_eq!(
                        bare.evaluate_json(&definition, input, &state, &mut in_place),
                        written
                    );
                    assert_eq!(in_place, whole);
                    let value = Prepared::new(&definition, None, input, variant, Rendering::Value);
                    let outcome = evaluate(&definition, &call);
                    assert_eq!(value.evaluate(&definition, None, input, &state), outcome);
                    let checked = Prepared::new(
                        &definition,
                        Some(&contract),
                        input,
                        variant,
                        Rendering::Value,
                    );
                    let validated = evaluate_with_contract(&definition, &contract, &call);
                    assert_eq!(
                        checked.evaluate(&definition, Some(&contract), input, &state),
                        validated
                    );
                    let both = Prepared::new(
                        &definition,
                        Some(&contract),
                        input,
                        variant,
                        Rendering::JsonAndValue,
                    );
                    let mut text = b"prefix".to_vec();
                    let kept = both.evaluate_json_with_contract(
                        &mut workspace,
                        &contract,
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
                let prepared = Prepared::new(&definition, None, input, None, Rendering::Json);
                prepared
                    .evaluate_json(&definition, input, initial, &mut Vec::new())
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
}
