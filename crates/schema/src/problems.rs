//! The codes of normalization problems, shared by platform manifests and MCP
//! `tools/list` results, and the problems both readers report alike.

use crate::pointer::{self, type_name};
use serde_json::Value;
use toolmock_contract::{Problem, Problems, problem_codes};

problem_codes! {
    /// Why a platform manifest or a `tools/list` result cannot be normalized.
    pub enum NormalizeCode {
        /// The bytes are not JSON (or not UTF-8).
        InvalidJson => "invalid_json",
        /// A member has the wrong JSON type.
        WrongType => "wrong_type",
        /// A required member is absent.
        MissingField => "missing_field",
        /// A member the format does not define (fail closed: a typo is never ignored).
        UnknownField => "unknown_field",
        /// `manifest_version` is not `1`.
        UnsupportedVersion => "unsupported_manifest_version",
        /// A tool, operation or parameter name is the empty string.
        EmptyName => "empty_name",
        /// `{tool}__{operation}` does not match `^[A-Za-z0-9_-]{1,64}$`.
        InvalidRuntimeName => "invalid_runtime_name",
        /// The manifest has no operation.
        NoOperations => "no_operations",
        /// Two operations expand to the same runtime name.
        DuplicateOperation => "duplicate_operation",
        /// Two parameters of one operation share a name.
        DuplicateParameter => "duplicate_parameter",
        /// A parameter type that is none of the eight (never silently `{}`).
        UnknownParameterType => "unknown_parameter_type",
        /// The operation-level `required` names something that is no parameter.
        RequiredNotAParameter => "required_not_a_parameter",
        /// `options` is an empty array.
        EmptyOptions => "empty_options",
        /// An option value does not have the parameter's type.
        OptionTypeMismatch => "option_type_mismatch",
        /// Two options of one parameter share a value.
        DuplicateOption => "duplicate_option",
        /// A `default` that does not have the parameter's type.
        DefaultTypeMismatch => "default_type_mismatch",
        /// A `default` that is none of the parameter's options.
        DefaultNotAnOption => "default_not_an_option",
        /// `items` on a parameter that is not an `array`.
        ItemsWithoutArray => "items_without_array",
        /// `output` has neither `schema` nor `envelope`.
        InvalidOutput => "invalid_output",
        /// An envelope other than `salesforce`.
        UnknownEnvelope => "unknown_envelope",
        /// A Salesforce status other than 200 or 201.
        InvalidStatus => "invalid_status",
        /// A schema of the manifest (`items`, `output.schema`,
        /// `output.data_schema`) that is not a usable JSON Schema, or that
        /// breaks the schema it is embedded in.
        InvalidManifestSchema => "invalid_manifest_schema",
        /// An integer no double holds exactly (the contract hash would not be reproducible).
        InexactNumber => "inexact_number",
        /// Two MCP tools share a name (within a page or across pages).
        DuplicateTool => "duplicate_tool",
        /// The library tool's fallback output schema is not an object or a boolean.
        InvalidFallback => "invalid_fallback",
    }
}

/// Every problem of a platform manifest or a `tools/list` result, in document order.
pub type NormalizeProblems = Problems<NormalizeCode>;

/// A member of the wrong JSON type.
pub(crate) fn wrong_type(path: &str, expected: &str, found: &Value) -> Problem<NormalizeCode> {
    Problem::new(
        NormalizeCode::WrongType,
        path,
        format!("expected {expected}, found {}", type_name(found)),
    )
}

/// A required member `field` absent from the object at `path`.
pub(crate) fn missing_field(path: &str, field: &str) -> Problem<NormalizeCode> {
    Problem::new(
        NormalizeCode::MissingField,
        path,
        format!("the member {field:?} is required"),
    )
}

/// Every integer of `value` (at `path`) that no double holds exactly.
pub(crate) fn inexact_numbers(value: &Value, path: &str) -> Vec<Problem<NormalizeCode>> {
    let mut found = Vec::new();
    pointer::inexact_numbers(value, path, &mut found);
    found
        .into_iter()
        .map(|(path, number)| {
            Problem::new(
                NormalizeCode::InexactNumber,
                path,
                format!(
                    "the integer {number} cannot be represented exactly by a double, so its canonical form would be another number"
                ),
            )
        })
        .collect()
}
