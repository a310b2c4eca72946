//! Diagnostics of the definition check (docs/spec.md §7).

use toolmock_contract::{Problem, Problems, problem_codes};

problem_codes! {
    /// A stable, machine-readable diagnostic code of the definition check.
    #[non_exhaustive]
    pub enum DiagnosticCode {
        /// The document is not JSON (or not UTF-8).
        InvalidJson => "invalid_json",
        /// An object repeats a key (readers could disagree on which one counts).
        DuplicateKey => "duplicate_key",
        /// The compact document exceeds 102,400 bytes.
        TooLarge => "too_large",
        /// `schema_version` is a number other than `1`, `2` and `3`.
        UnsupportedSchemaVersion => "unsupported_schema_version",
        /// A list-form `set_state` with more than 100 writes.
        TooManyWrites => "too_many_writes",
        /// A version-2 feature in a `schema_version: 1` document.
        Version2Feature => "version_2_feature",
        /// A version-3 feature (a removal, `$if`) in a document that declares an
        /// earlier version.
        Version3Feature => "version_3_feature",
        /// A string or object key contains U+0000, which no store can keep.
        NulCharacter => "nul_character",
        /// A member the format does not define.
        UnknownField => "unknown_field",
        /// A required member is absent.
        MissingField => "missing_field",
        /// A member has the wrong JSON type.
        WrongType => "wrong_type",
        /// `variants` has no entry.
        TooFewVariants => "too_few_variants",
        /// `variants` has more than 30 entries.
        TooManyVariants => "too_many_variants",
        /// A variant name is empty.
        InvalidVariantName => "invalid_variant_name",
        /// A variant has more than 100 rules.
        TooManyRules => "too_many_rules",
        /// `examples` is empty.
        TooFewExamples => "too_few_examples",
        /// `examples` has more than 100 entries.
        TooManyExamples => "too_many_examples",
        /// `delay_ms` is outside 0…30000.
        DelayOutOfRange => "delay_out_of_range",
        /// `default_variant` names no variant.
        UnknownDefaultVariant => "unknown_default_variant",
        /// A variant no example names.
        VariantWithoutExample => "variant_without_example",
        /// An example names a variant that does not exist.
        ExampleUnknownVariant => "example_unknown_variant",
        /// An object with `$` keys that is not exactly one operator.
        UnknownOperator => "unknown_operator",
        /// A path with an empty segment.
        InvalidPath => "invalid_path",
        /// (Version 3) a `$let` that names no sub-expression of a `let`
        /// block in sight.
        UnknownName => "unknown_name",
        /// (Version 3) an iteration (`$map`, `$filter`, …) nested more than
        /// three deep inside others.
        IterationTooDeep => "iteration_too_deep",
        /// A condition with an unknown source or op, or a value of the wrong kind for its op.
        InvalidCondition => "invalid_condition",
        /// A literal operand of `$number` or `$dateAdd` that the operator rejects.
        InvalidLiteral => "invalid_literal",
        /// An example's input fails the input schema.
        ExampleInputInvalid => "example_input_invalid",
        /// An example's rendered result fails the output schema.
        ExampleResultInvalid => "example_result_invalid",
        /// An example's rendered result differs from `expected`.
        ExampleMismatch => "example_mismatch",
        /// An example's post-call state differs from `expected_state`.
        ExampleStateMismatch => "example_state_mismatch",
        /// Evaluating an example failed.
        ExampleError => "example_error",
        /// (Version 2) an error's `code` does not match `^[A-Za-z][A-Za-z0-9_.:-]{0,63}$`.
        InvalidErrorCode => "invalid_error_code",
        /// (Version 2) a variant or rule gives both `result` and `error`, or an
        /// example both `expected` and `expected_error`.
        ResultAndError => "result_and_error",
        /// (Version 2) an explicit `set_state` in a variant or rule that answers
        /// a domain error, which never changes state.
        SetStateWithError => "set_state_with_error",
        /// (Version 2) an example's call answered a result where `expected_error`
        /// expects a domain error, or a domain error that differs from it.
        ExampleErrorMismatch => "example_error_mismatch",
    }
}

/// One problem of a definition: `{code, path, message}`, `path` a JSON pointer
/// into the definition document.
pub type Diagnostic = Problem<DiagnosticCode>;

/// Every problem found, in document order of discovery. Empty means the definition passed.
pub type Diagnostics = Problems<DiagnosticCode>;

pub(crate) use toolmock_contract::pointer::{index as pointer_index, push as pointer_push};
