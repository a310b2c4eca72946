//! The definition check (docs/spec.md §7) and its diagnostics: a
//! definition is parsed, its structure walked ([`document`], [`variant`],
//! [`examples`], and the check of each room's syntax), its examples run
//! ([`runs`]),
//! every problem reported at once with its JSON pointer ([`diagnostics`]);
//! the warnings are decided apart ([`warnings`]). [`context`] is what the
//! checks of every room share.

use crate::check::context::Checker;
use crate::check::diagnostics::{DiagnosticCode as Code, Diagnostics};
use crate::check::document::assemble;
use crate::check::runs::{run_examples, runnable_subset};
use crate::contract::CompiledContract;
use crate::definition::CompiledDefinition;
use crate::expr::OPERATORS;
use serde_json::Value;

pub(crate) mod context;
pub(crate) mod diagnostics;
pub(crate) mod document;
pub(crate) mod examples;
pub(crate) mod runs;
pub(crate) mod variant;
pub(crate) mod warnings;

/// Compiles the structure of a definition (docs/spec.md §3, §4 and the structural
/// part of §7) without running its examples.
pub fn compile(definition: &Value) -> Result<CompiledDefinition, Diagnostics> {
    let mut checker = Checker::new(OPERATORS);
    let structure = checker.document(definition);
    if !checker.diagnostics.is_empty() {
        return Err(checker.diagnostics);
    }
    structure.and_then(assemble).ok_or(checker.diagnostics)
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
    let mut checker = Checker::new(OPERATORS);
    let Some(structure) = checker.document(definition) else {
        return Err(checker.diagnostics);
    };
    let mut diagnostics = checker.diagnostics;
    // Examples run against the variants that compiled, even when other parts
    // failed, so that one report lists every problem.
    let runnable = runnable_subset(&structure);
    if let Some(partial) = &runnable {
        diagnostics.extend(run_examples(partial, contract));
    }
    if !diagnostics.is_empty() {
        return Err(diagnostics);
    }
    assemble(structure).ok_or(diagnostics)
}
