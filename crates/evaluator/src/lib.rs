//! The pure evaluator and definition check of toolmock.
//!
//! A mock definition (docs/spec.md §3; version 2, with computed paths, nested
//! writes and conditions against references, in §12) is parsed and compiled **once** into
//! an immutable [`CompiledDefinition`]: unknown fields, types, limits,
//! operators, paths and operator literals are all checked then, and every
//! problem is reported at once with a JSON-pointer path ([`Diagnostics`]).
//! [`check`](fn@check) adds the examples: each is evaluated, and with a
//! [`CompiledContract`] its input and rendered result are schema-validated.
//! [`evaluate`] then answers calls from the compiled form without re-parsing
//! anything: it is the entry point of a call, and the others are named for
//! what they add to it — [`evaluate_with_contract`] (the contract's schemas),
//! [`evaluate_json`] (the result written as JSON text), [`evaluate_into`]
//! (the result built in the caller's own form), [`evaluate_layered`]
//! (a shared base state with an attempt's overlay) — or are a call in two
//! halves ([`Prepared`]: what the input decides alone, then the rest
//! against the state).
//!
//! This crate is not a runtime: it does no I/O, reads no clock, spawns nothing
//! and is not async. State is passed in and the updates come back in the
//! [`Outcome`]; storing them, under whatever lock, is the caller's job.
//!
//! ```
//! use serde_json::{json, Map};
//! use toolmock_evaluator::{Call, compile_checked, evaluate};
//!
//! let definition = json!({
//!     "schema_version": 1,
//!     "default_variant": "success",
//!     "initial_state": {"reference": "TEST-742"},
//!     "variants": {"success": {
//!         "result": {"reference": {"$state": "reference"}},
//!         "set_state": {"booked": true}
//!     }},
//!     "examples": [{"variant": "success", "input": {}, "expected": {"reference": "TEST-742"}}]
//! });
//! let compiled = compile_checked(&definition, None).expect("the definition passes its check");
//!
//! let mut state: Map<_, _> = compiled.initial_state().clone();
//! let input = json!({});
//! let outcome = evaluate(&compiled, &Call { input: &input, state: &state, variant: None })?;
//! assert_eq!(outcome.result, json!({"reference": "TEST-742"}));
//! outcome.apply_to(&mut state);
//! assert_eq!(state["booked"], json!(true));
//! # Ok::<(), toolmock_evaluator::CallError>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

// The crate's rooms, by concept (ARCHITECTURE.md, `crates/evaluator`); the
// layers they form are tested by `tests/modules.rs`.
mod call;
mod check;
mod complexity;
mod conditions;
mod contract;
mod definition;
mod domain;
mod error;
mod expr;
mod json;
mod language;
mod nul;
// The operators as pure functions are an API only for parity tests and
// fuzzing.
#[cfg(feature = "operators")]
pub mod operators;
mod paths;
mod render;
mod rule_index;
mod scope;
mod state;

pub use call::built::{BuiltOutcome, evaluate_into};
pub use call::evaluate::{evaluate, evaluate_json, evaluate_with_contract};
pub use call::layered::{LayeredOutcome, evaluate_layered};
pub use call::outcome::{Call, JsonOutcome, Outcome};
pub use call::prepared::{Prepared, Rendering, Workspace};
pub use check::diagnostics::{Diagnostic, DiagnosticCode, Diagnostics};
pub use check::warnings::{WarningCode, Warnings, warnings};
pub use check::{check, compile, compile_checked, compile_slice, parse_definition};
pub use complexity::MAX_SCHEMA_SIZE;
pub use contract::{CompiledContract, SchemaCode, SchemaError, compile_schema};
pub use definition::{
    CompiledDefinition, MAX_DEFINITION_BYTES, MAX_DELAY_MS, MAX_EXAMPLES, MAX_RULES, MAX_VARIANTS,
};
pub use domain::answer::DomainError;
pub use error::{CallCode, CallError, ErrorClass, Violation};
pub use json::{json_equal, maps_equal};
pub use render::build::{Build, Constant, Shape};
pub use state::overlay::{Overlay, Patch};
pub use state::view::StateView;

#[cfg(test)]
mod send_sync {
    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn compiled_forms_are_shareable() {
        assert_send_sync::<super::CompiledDefinition>();
        assert_send_sync::<super::CompiledContract>();
    }
}

#[cfg(test)]
mod error_codes {
    #[test]
    fn every_code_is_documented_and_every_documented_code_exists() {
        let doc = include_str!("../../../docs/error-codes.md");
        let mut codes = toolmock_contract::code_strings::<crate::DiagnosticCode>();
        codes.extend(toolmock_contract::code_strings::<crate::CallCode>());
        codes.extend(toolmock_contract::code_strings::<crate::SchemaCode>());
        codes.extend(toolmock_contract::code_strings::<crate::WarningCode>());
        toolmock_contract::check_documented_codes(doc, "toolmock-evaluator", &codes)
            .unwrap_or_else(|e| panic!("{e}"));
    }
}
