//! The whole check of docs/spec.md §7: structure, then every example.

use crate::compile::{CompiledDefinition, Expected, Walker};
use crate::contract::CompiledContract;
use crate::diagnostics::{DiagnosticCode as Code, Diagnostics, pointer_index, pointer_push};
use crate::eval::{Call, evaluate};
use crate::json::{json_equal, maps_equal};
use serde_json::{Map, Value};

/// Compiles the structure of a definition (docs/spec.md §3, §4 and the structural
/// part of §7) without running its examples.
pub fn compile(definition: &Value) -> Result<CompiledDefinition, Diagnostics> {
    let mut walker = Walker::new();
    let structure = walker.document(definition);
    if !walker.diagnostics.is_empty() {
        return Err(walker.diagnostics);
    }
    structure
        .and_then(CompiledDefinition::assemble)
        .ok_or(walker.diagnostics)
}

/// Parses JSON bytes (refusing invalid UTF-8 and invalid JSON with an
/// `invalid_json` diagnostic) and compiles the structure.
pub fn compile_slice(bytes: &[u8]) -> Result<CompiledDefinition, Diagnostics> {
    compile(&parse_definition(bytes)?)
}

/// Parses a definition document, turning a syntax error into an
/// `invalid_json` diagnostic and every repeated object key into a
/// `duplicate_key` diagnostic (serde_json would keep the last one silently).
pub fn parse_definition(bytes: &[u8]) -> Result<Value, Diagnostics> {
    let mut diagnostics = Diagnostics::default();
    let value = serde_json::from_slice(bytes).map_err(|e| {
        diagnostics.push(
            Code::InvalidJson,
            "",
            format!("the definition is not valid JSON: {e}"),
        );
    });
    for path in toolmock_contract::duplicate_keys(bytes) {
        diagnostics.push(
            Code::DuplicateKey,
            path,
            "this key appears more than once in its object; keep exactly one",
        );
    }
    match value {
        Ok(value) if diagnostics.is_empty() => Ok(value),
        _ => Err(diagnostics),
    }
}

/// Checks a definition: every problem at once. With a contract, example inputs
/// and rendered results are validated against its schemas.
pub fn check(definition: &Value, contract: Option<&CompiledContract>) -> Diagnostics {
    match compile_checked(definition, contract) {
        Ok(_) => Diagnostics::default(),
        Err(diagnostics) => diagnostics,
    }
}

/// Checks a definition and returns it compiled when it passes.
pub fn compile_checked(
    definition: &Value,
    contract: Option<&CompiledContract>,
) -> Result<CompiledDefinition, Diagnostics> {
    let mut walker = Walker::new();
    let Some(structure) = walker.document(definition) else {
        return Err(walker.diagnostics);
    };
    let mut diagnostics = walker.diagnostics;
    // Examples run against the variants that compiled, even when other parts
    // failed, so that one report lists every problem.
    let runnable = runnable_subset(&structure);
    if let Some(partial) = &runnable {
        diagnostics.extend(run_examples(partial, contract));
    }
    if !diagnostics.is_empty() {
        return Err(diagnostics);
    }
    CompiledDefinition::assemble(structure).ok_or(diagnostics)
}

/// A definition made of the variants and examples that compiled, with the
/// examples whose variant compiled.
fn runnable_subset(structure: &crate::compile::Structure) -> Option<CompiledDefinition> {
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
    let partial = crate::compile::Structure {
        default_variant: Some(default_variant),
        variants: variants.into_iter().map(Some).collect(),
        variants_ok: true,
        initial_state: structure.initial_state.clone(),
        examples,
        examples_ok: true,
    };
    CompiledDefinition::assemble(partial)
}

fn run_examples(
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
    outcome: &crate::eval::Outcome<'_>,
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
