//! Running a definition's examples (docs/spec.md §7): against the
//! variants that compiled — so that one report lists every problem — each
//! example is evaluated, its input and rendered result validated against
//! the contract when there is one, and its answer and post-call state
//! compared with what it expects.

use crate::call::evaluate::evaluate;
use crate::call::outcome::{Call, Outcome};
use crate::check::diagnostics::{DiagnosticCode as Code, Diagnostics, pointer_index, pointer_push};
use crate::check::document::{Structure, assemble};
use crate::contract::CompiledContract;
use crate::definition::{CompiledDefinition, Expected};
use crate::json::{json_equal, maps_equal};
use serde_json::{Map, Value};

/// A definition made of the variants and examples that compiled, with the
/// examples whose variant compiled.
pub(crate) fn runnable_subset(structure: &Structure) -> Option<CompiledDefinition> {
    let variants: Vec<_> = structure.variants.iter().flatten().cloned().collect();
    let default_variant = match &structure.default_variant {
        Some(name) if variants.iter().any(|v| &v.name == name) => name.clone(),
        _ => variants.first()?.name.clone(),
    };
    let examples: Vec<_> = structure
        .examples
        .iter()
        .filter(|e| variants.iter().any(|v| v.name == e.variant))
        .cloned()
        .collect();
    let partial = Structure {
        default_variant: Some(default_variant),
        variants: variants.into_iter().map(Some).collect(),
        variants_ok: true,
        initial_state: structure.initial_state.clone(),
        examples,
        examples_ok: true,
    };
    assemble(partial)
}

pub(crate) fn run_examples(
    definition: &CompiledDefinition,
    contract: Option<&CompiledContract>,
) -> Diagnostics {
    let mut diagnostics = Diagnostics::default();
    for example in definition.examples.iter() {
        let at = pointer_index("/examples", example.index);
        if let Some(contract) = contract {
            let violations = contract.input_violations(&example.input);
            if !violations.is_empty() {
                for v in violations {
                    diagnostics.push(
                        Code::ExampleInputInvalid,
                        format!("{}{}", pointer_push(&at, "input"), v.path),
                        format!("the example's input fails the input schema: {}", v.message),
                    );
                }
                continue;
            }
        }
        let state: &Map<String, Value> =
            example.state.as_ref().unwrap_or(&definition.initial_state);
        let call = Call {
            input: &example.input,
            state,
            variant: Some(&example.variant),
        };
        let outcome = match evaluate(definition, &call) {
            Ok(outcome) => outcome,
            Err(e) => {
                diagnostics.push(
                    Code::ExampleError,
                    &at,
                    format!(
                        "evaluating the example failed with {} {}: {e}",
                        e.class(),
                        e.code()
                    ),
                );
                continue;
            }
        };
        if let Some(contract) = contract
            && outcome.error.is_none()
        {
            for v in contract.output_violations(&outcome.result) {
                let path = if v.path.is_empty() {
                    "/".to_owned()
                } else {
                    v.path.clone()
                };
                diagnostics.push(
                    Code::ExampleResultInvalid,
                    pointer_push(&at, "expected"),
                    format!(
                        "the rendered result fails the output schema at {path}: {}",
                        v.message
                    ),
                );
            }
        }
        compare_answer(&mut diagnostics, &at, &example.expected, &outcome);
        if let Some(expected_state) = &example.expected_state {
            let post = outcome.post_state(state);
            if !maps_equal(&post, expected_state) {
                diagnostics.push(
                    Code::ExampleStateMismatch,
                    pointer_push(&at, "expected_state"),
                    format!(
                        "the post-call state differs from expected_state: it is {}",
                        preview(&Value::Object(post))
                    ),
                );
            }
        }
    }
    diagnostics
}

/// Compares what the call answered — a result or a domain error — with
/// what the example expects.
fn compare_answer(
    diagnostics: &mut Diagnostics,
    at: &str,
    expected: &Expected,
    outcome: &Outcome<'_>,
) {
    match (expected, &outcome.error) {
        (Expected::Result(want), None) => {
            if !json_equal(&outcome.result, want) {
                diagnostics.push(
                    Code::ExampleMismatch,
                    pointer_push(at, "expected"),
                    format!(
                        "the rendered result differs from expected: rendered {}",
                        preview(&outcome.result)
                    ),
                );
            }
        }
        (Expected::Result(_), Some(got)) => diagnostics.push(
            Code::ExampleMismatch,
            pointer_push(at, "expected"),
            format!(
                "the call answered the domain error {}, not a result; to expect it, write expected_error",
                preview(&got.to_json())
            ),
        ),
        (Expected::Error(_), None) => diagnostics.push(
            Code::ExampleErrorMismatch,
            pointer_push(at, "expected_error"),
            format!(
                "the call answered a result, not a domain error: rendered {}",
                preview(&outcome.result)
            ),
        ),
        (Expected::Error(want), Some(got)) => {
            let same = want.code == got.code
                && want.message == got.message
                && match (&want.data, &got.data) {
                    (None, None) => true,
                    (Some(a), Some(b)) => json_equal(a, b),
                    _ => false,
                };
            if !same {
                diagnostics.push(
                    Code::ExampleErrorMismatch,
                    pointer_push(at, "expected_error"),
                    format!(
                        "the domain error differs from expected_error: the call answered {}",
                        preview(&got.to_json())
                    ),
                );
            }
        }
    }
}

/// A bounded rendering of a value for messages.
fn preview(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(300) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}
