//! The pure evaluator and definition check of toolmock.
//!
//! A mock definition (docs/spec.md §3; version 2, with computed paths, nested
//! writes and conditions against references, in §12) is parsed and compiled **once** into
//! an immutable [`CompiledDefinition`]: unknown fields, types, limits,
//! operators, paths and operator literals are all checked then, and every
//! problem is reported at once with a JSON-pointer path ([`Diagnostics`]).
//! [`check`] adds the examples: each is evaluated, and with a
//! [`CompiledContract`] its input and rendered result are schema-validated.
//! [`evaluate`] then answers calls from the compiled form without re-parsing
//! anything.
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

mod check;
mod compile;
mod complexity;
mod computed;
mod conditions_v2;
mod contract;
mod diagnostics;
mod domain;
mod error;
mod eval;
mod expr;
mod json;
mod language;
mod layered;
mod nul;
mod segments_v2;
// The operators are an API only for parity tests and fuzzing; without the
// feature they are the evaluator's own, and what only that API uses is unused.
#[cfg(feature = "operators")]
pub mod operators;
#[cfg(not(feature = "operators"))]
#[allow(unreachable_pub, dead_code)]
mod operators;
mod path;
mod warnings;

pub use check::{check, compile, compile_checked, compile_slice, parse_definition};
pub use compile::{
    CompiledDefinition, MAX_DEFINITION_BYTES, MAX_DELAY_MS, MAX_EXAMPLES, MAX_RULES, MAX_VARIANTS,
};
pub use complexity::MAX_SCHEMA_SIZE;
pub use contract::SchemaCode;
pub use contract::{CompiledContract, SchemaError, compile_schema};
pub use diagnostics::{Diagnostic, DiagnosticCode, Diagnostics};
pub use domain::DomainError;
pub use error::{CallCode, CallError, ErrorClass, Violation};
pub use eval::{
    Call, JsonOutcome, Outcome, Prepared, Rendering, Workspace, evaluate, evaluate_json,
    evaluate_prepared, evaluate_prepared_checked, evaluate_prepared_json, evaluate_with_contract,
    prepare,
};
pub use json::{json_equal, maps_equal};
pub use layered::{LayeredOutcome, Overlay, Patch, StateView, evaluate_layered};
pub use warnings::{WarningCode, Warnings, warnings};

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
