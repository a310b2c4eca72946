//! Diagnostics of the definition check (SPEC §7).

use serde::{Serialize, Serializer};
use std::fmt;

macro_rules! codes {
    ($( $(#[$doc:meta])* $variant:ident => $code:literal, )*) => {
        /// A stable, machine-readable diagnostic code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum DiagnosticCode {
            $( $(#[$doc])* $variant, )*
        }

        impl DiagnosticCode {
            /// Every code, in declaration order.
            pub const ALL: &'static [DiagnosticCode] = &[$(DiagnosticCode::$variant,)*];

            /// The code as written in reports, e.g. `unknown_field`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( DiagnosticCode::$variant => $code, )*
                }
            }
        }
    };
}

codes! {
    /// The document is not JSON (or not UTF-8).
    InvalidJson => "invalid_json",
    /// An object repeats a key (readers could disagree on which one counts).
    DuplicateKey => "duplicate_key",
    /// The compact document exceeds 102,400 bytes.
    TooLarge => "too_large",
    /// `schema_version` is a number other than `1`.
    UnsupportedSchemaVersion => "unsupported_schema_version",
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
}

impl fmt::Display for DiagnosticCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for DiagnosticCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// One problem of a definition: `{code, path, message}`, `path` a JSON pointer
/// into the definition document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// What kind of problem.
    pub code: DiagnosticCode,
    /// JSON pointer into the definition (`""` is the whole document).
    pub path: String,
    /// A sentence for humans.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "/"
        } else {
            &self.path
        };
        write!(f, "{path}: {}: {}", self.code, self.message)
    }
}

/// Every problem found, in document order of discovery. Empty means the definition passed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Diagnostics(Vec<Diagnostic>);

impl Diagnostics {
    /// No problem found.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many problems.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The problems, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Diagnostic> {
        self.0.iter()
    }

    /// Whether any problem has this code.
    pub fn contains(&self, code: DiagnosticCode) -> bool {
        self.0.iter().any(|d| d.code == code)
    }

    /// The problems as a slice.
    pub fn as_slice(&self) -> &[Diagnostic] {
        &self.0
    }

    /// The problems as a vector.
    pub fn into_vec(self) -> Vec<Diagnostic> {
        self.0
    }

    pub(crate) fn push(
        &mut self,
        code: DiagnosticCode,
        path: impl Into<String>,
        message: impl Into<String>,
    ) {
        self.0.push(Diagnostic {
            code,
            path: path.into(),
            message: message.into(),
        });
    }

    pub(crate) fn extend(&mut self, other: Diagnostics) {
        self.0.extend(other.0);
    }
}

impl<'a> IntoIterator for &'a Diagnostics {
    type Item = &'a Diagnostic;
    type IntoIter = std::slice::Iter<'a, Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in &self.0 {
            writeln!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

pub(crate) use toolmock_contract::pointer::{index as pointer_index, push as pointer_push};
