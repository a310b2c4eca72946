//! Verification: proves that saved mocks still tell the truth about the
//! real tools they stand for (docs/verify.md).
//!
//! A verification takes [`Subject`]s — a real tool (an MCP server over
//! stdio or streamable HTTP, custom operations' HTTP endpoints, an OpenAPI
//! document), its operations with the contracts and mocks saved for them,
//! recordings and its `verify` [`Settings`] — and checks two things:
//!
//! - **contract drift**: each pinned contract against the real tool's
//!   current one (`tools/list`, the OpenAPI document): unchanged, changed
//!   (with `toolmock diff`'s report), gone;
//! - **behaviour**: for each operation the settings mark safe, each example
//!   of a replayed variant, each recorded call of a `toolmock record`
//!   folder and each chain (in order, the mock carrying its state) is
//!   replayed against the real tool with the same executor real-tools runs
//!   use ([`toolmock_discovery::RealExecutor`]); the real answer is compared
//!   with the mock's by the settings' matchers (exact, type-only, ignored
//!   paths, numbers within a tolerance, a regex) and validated against the
//!   contract's output schema; every [`Divergence`] has its JSON pointer.
//!
//! It never calls an operation its settings do not mark safe: the executor
//! it builds has no handler for one. It stores nothing: `toolmock verify`
//! prints the [`Report`], a worker stores it (`toolmock-worker`). It is not
//! the dispatcher: what it calls for real is no simulated attempt, and
//! nothing here judges an agent.
//!
//! ```
//! use serde_json::json;
//! use toolmock_simulation::document::VerifyDoc;
//! use toolmock_verify::Settings;
//!
//! // A block: `read` may be called; ids are generated, so a regex compares them.
//! let block: VerifyDoc = serde_json::from_value(json!({
//!     "safe": ["read"],
//!     "matchers": [{"path": "/id", "match": "regex", "pattern": "^N-[0-9]+$"}]
//! }))?;
//! let settings = Settings::compile(&block, &["read", "write"], "/tools/0/verify")
//!     .map_err(|p| format!("{p:?}"))?;
//! assert!(settings.safe.allows("read") && !settings.safe.allows("write"));
//! let divergences = settings.matchers.compare(
//!     "read",
//!     &json!({"id": "N-1", "text": "hi"}),
//!     &json!({"id": "N-77", "text": "hello"}),
//! );
//! // The ids agree by the pattern; the text does not.
//! assert_eq!(divergences.len(), 1);
//! assert_eq!(divergences[0].path, "/text");
//! assert_eq!(divergences[0].kind.as_str(), "value_differs");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod drift;
mod library;
mod matchers;
pub mod openapi;
mod propose;
mod replay;
mod report;
mod run;
mod settings;
mod simulation;
mod subject;

pub use library::ToolSettings;
pub use matchers::{Divergence, Matcher, Matchers};
pub use propose::{Proposal, ProposeError, propose};
pub use report::{
    Answer, CheckReport, CheckStatus, Drift, DriftStatus, OperationReport, Report, Sequence,
    Summary, ToolReport, VERIFY_VERSION, Verdict,
};
pub use run::{VerifyOptions, verify};
pub use settings::Settings;
pub use simulation::subjects;
pub use subject::{Mock, OpenApiSource, Recording, Source, Subject, SubjectOperation};

use toolmock_contract::problem_codes;

problem_codes! {
    /// Problems of what a verification is given (`toolmock verify` exits
    /// 2), and the codes of what could not be checked.
    pub enum VerifyCode {
        /// A `verify` block names an operation the tool does not have.
        UnknownOperation => "unknown_operation",
        /// `--sandbox-url` names no tool of the file.
        UnknownTool => "unknown_tool",
        /// A matcher's path is no JSON pointer, or its fields do not fit its kind.
        InvalidMatcher => "invalid_matcher",
        /// A `regex` matcher's pattern is not a regular expression.
        InvalidRegex => "invalid_regex",
        /// A chain calls an operation the block does not mark safe.
        UnsafeOperation => "unsafe_operation",
        /// Two chains, or two steps of one chain, share a name.
        DuplicateName => "duplicate_name",
        /// A chain's `$step` names no earlier step.
        DanglingStepReference => "dangling_step_reference",
        /// `verify.server` gives both or neither of `url` and `command`, or one that cannot be used.
        InvalidServer => "invalid_server",
        /// An OpenAPI document cannot be read, is not JSON, or is not OpenAPI 3.
        InvalidOpenapi => "invalid_openapi",
        /// An OpenAPI document's URL cannot be fetched.
        OpenapiUnreachable => "openapi_unreachable",
        /// A `verify` block on a tool with no real tool to check.
        NoRealTool => "no_real_tool",
        /// No tool of the file has a real tool to check.
        NothingToVerify => "nothing_to_verify",
        /// A setting the service does not take (`verify.server`, `verify.recordings`: a process to start, files to read).
        NotOnTheService => "not_on_the_service",
        /// `--sandbox-url` is not `TOOL=http(s)://…`, or the tool has nothing to point at it.
        InvalidSandboxUrl => "invalid_sandbox_url",
    }
}

problem_codes! {
    /// How a real answer differs from the mock's (a [`Divergence`]'s kind).
    pub enum DivergenceKind {
        /// The same kind of value, another value.
        ValueDiffers => "value_differs",
        /// Another kind of value (a string for a number, an object for an array…).
        KindDiffers => "kind_differs",
        /// A member or element the mock has and the real answer lacks.
        MissingMember => "missing_member",
        /// A member or element the real answer has and the mock lacks.
        UnexpectedMember => "unexpected_member",
        /// Numbers further apart than a `number` matcher's tolerance.
        OutOfTolerance => "out_of_tolerance",
        /// A value that does not match a `regex` matcher's pattern (either side).
        PatternMismatch => "pattern_mismatch",
        /// The mock answers a result; the real tool refused (`isError`, an HTTP status other than 2xx).
        RealRefused => "real_refused",
        /// The mock answers an error; the real tool a result.
        RealAnswered => "real_answered",
        /// The real tool answered without `structuredContent`.
        UnstructuredAnswer => "unstructured_answer",
        /// The real answer breaks the contract's output schema.
        OutputSchemaViolation => "output_schema_violation",
    }
}

problem_codes! {
    /// Why a replayed call was not made (a skipped check's reason).
    pub enum SkipReason {
        /// The operation is not marked safe to call (`verify.safe`).
        NotSafe => "not_safe",
        /// The operation has neither an MCP server nor an endpoint.
        NoRealHandler => "no_real_handler",
        /// The example's variant is neither the default nor in `verify.variants`.
        VariantNotReplayed => "variant_not_replayed",
        /// The example starts from a state of its own, which the real tool cannot be put in.
        NeedsState => "needs_state",
        /// A recorded call names no operation of the tool.
        UnknownOperation => "unknown_operation",
        /// A chain step's `$step` does not resolve against the real side's earlier answers.
        ReferenceUnresolved => "reference_unresolved",
        /// An earlier step of the chain or recording could not be called.
        StepNotReached => "step_not_reached",
    }
}

#[cfg(test)]
mod error_codes {
    #[test]
    fn every_code_is_documented_and_every_documented_code_exists() {
        let doc = include_str!("../../../docs/error-codes.md");
        let mut codes = toolmock_contract::code_strings::<crate::VerifyCode>();
        codes.extend(toolmock_contract::code_strings::<crate::DivergenceKind>());
        codes.extend(toolmock_contract::code_strings::<crate::SkipReason>());
        codes.sort_unstable();
        codes.dedup();
        toolmock_contract::check_documented_codes(doc, "toolmock-verify", &codes)
            .unwrap_or_else(|e| panic!("{e}"));
    }
}
