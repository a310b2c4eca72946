//! Why a call failed, and whose fault it was: a [`CallError`] with its
//! class and code, and the operand faults ([`OperandFault`]) an operator
//! reports before the origin of the value decides whom to blame.

use serde::Serialize;
use std::fmt;
use toolmock_contract::problem_codes;

/// Who is to blame for a failed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// The caller (the agent) sent something the contract or an operator
    /// refuses. It reaches the agent as an ordinary, recoverable tool error.
    ToolInputError,
    /// The harness (definition, fixture state, pin) is at fault. An attempt
    /// with one can never pass.
    HarnessError,
}

impl ErrorClass {
    /// `tool_input_error` or `harness_error`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::ToolInputError => "tool_input_error",
            ErrorClass::HarnessError => "harness_error",
        }
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One JSON Schema violation: where in the instance, and what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// JSON pointer into the validated instance.
    pub path: String,
    /// JSON pointer into the schema, at the failing keyword.
    pub schema_path: String,
    /// What is wrong.
    pub message: String,
}

/// A failed call. A call that fails changes no state.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallError {
    /// The input fails the contract's input schema (every violation is listed).
    #[error("the arguments do not match the input schema: {}", join_violations(.violations))]
    InvalidArguments {
        /// Every violation, each with its JSON pointer into the input.
        violations: Vec<Violation>,
    },
    /// An input value given to `$number` (or as a `$dateAdd` offset) is not an accepted number.
    #[error("{message}")]
    InvalidNumber {
        /// JSON pointer into the input.
        path: String,
        /// Why.
        message: String,
    },
    /// An input value given to `$dateAdd` is not a date or date-time.
    #[error("{message}")]
    InvalidDate {
        /// JSON pointer into the input.
        path: String,
        /// Why.
        message: String,
    },
    /// An input offset given to `$dateAdd` is beyond ±3660 days or ±24 hours.
    #[error("{message}")]
    OffsetOutOfRange {
        /// JSON pointer into the input.
        path: String,
        /// Why.
        message: String,
    },
    /// An input date, or a result computed from input, lies outside years 1…9999.
    #[error("{message}")]
    DateOutOfRange {
        /// JSON pointer into the input.
        path: String,
        /// Why.
        message: String,
    },
    /// An input value given to a version-2 operator has the wrong JSON type
    /// (`$append` to a non-array, `$merge` of a non-object).
    #[error("{message}")]
    InvalidOperand {
        /// JSON pointer into the input.
        path: String,
        /// Why.
        message: String,
    },
    /// A value from the fixture state is rejected by `$number` or `$dateAdd`.
    #[error("{message}")]
    InvalidFixtureLiteral {
        /// What the operator rejected.
        fault: OperandFault,
        /// JSON pointer into the state.
        path: String,
        /// Why.
        message: String,
    },
    /// A `$input` or `$state` reference does not resolve.
    #[error("{message}")]
    MissingReference {
        /// JSON pointer into the input or the state.
        path: String,
        /// Which reference, where.
        message: String,
    },
    /// An input value used as a segment of a version-2 computed path is not a
    /// string or a non-negative integer, or names what a write cannot reach.
    #[error("{message}")]
    InvalidPathSegment {
        /// JSON pointer into the input.
        path: String,
        /// Why.
        message: String,
    },
    /// A state value used as a segment of a version-2 computed path is not a
    /// string or a non-negative integer, or a write's path cannot be followed
    /// in the state.
    #[error("{message}")]
    InvalidStatePath {
        /// JSON pointer into the state.
        path: String,
        /// Why.
        message: String,
    },
    /// The call names a variant the definition lacks.
    #[error("the definition has no variant {variant:?}")]
    UnknownVariant {
        /// The name asked for.
        variant: String,
    },
    /// (Version 3) an input text given to `$calc` is not an arithmetic
    /// expression it evaluates (malformed, a division by zero, a step
    /// beyond exact decimals).
    #[error("{message}")]
    InvalidExpression {
        /// JSON pointer into the input.
        path: String,
        /// What is wrong, and where in the text.
        message: String,
    },
    /// (Version 3) the call would visit more elements than the per-call
    /// work budget allows.
    #[error("{message}")]
    WorkBudgetExceeded {
        /// Which operator would have gone over, and the budget.
        message: String,
    },
    /// The rendered result fails the contract's output schema.
    #[error("the mock's result does not match the output schema: {}", join_violations(.violations))]
    OutputSchemaViolation {
        /// Every violation, each with its JSON pointer into the result.
        violations: Vec<Violation>,
    },
}

fn join_violations(violations: &[Violation]) -> String {
    let parts: Vec<String> = violations
        .iter()
        .map(|v| {
            let path = if v.path.is_empty() { "/" } else { &v.path };
            format!("{path}: {}", v.message)
        })
        .collect();
    parts.join("; ")
}

/// Who supplied a value that an operator or a path refuses: the caller's
/// input is a tool input error; the state, or a value the definition wrote
/// itself, is the harness's. Ordered so that of several operands the input
/// is blamed first, then the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Origin {
    Literal,
    State,
    Input,
}

/// A location in the definition for a message: `/` for the root.
pub(crate) fn display_pointer(at: &str) -> &str {
    if at.is_empty() { "/" } else { at }
}

impl CallError {
    pub(crate) fn input_operand(fault: OperandFault, path: String, message: String) -> CallError {
        match fault {
            OperandFault::InvalidNumber => CallError::InvalidNumber { path, message },
            OperandFault::InvalidDate => CallError::InvalidDate { path, message },
            OperandFault::OffsetOutOfRange => CallError::OffsetOutOfRange { path, message },
            OperandFault::DateOutOfRange => CallError::DateOutOfRange { path, message },
            OperandFault::InvalidOperand => CallError::InvalidOperand { path, message },
            OperandFault::InvalidExpression => CallError::InvalidExpression { path, message },
        }
    }

    /// An operand an operator refused (`rejection`), read from `pointer` of
    /// the input or the state, by the operator at `at` in the definition.
    pub(crate) fn refused_operand(
        origin: Origin,
        pointer: Option<String>,
        rejection: Rejection,
        at: &str,
    ) -> CallError {
        let Rejection { fault, message } = rejection;
        let path = pointer.unwrap_or_default();
        let message = format!("{message} (at {})", display_pointer(at));
        match origin {
            Origin::Input => CallError::input_operand(fault, path, message),
            Origin::State => CallError::InvalidFixtureLiteral {
                fault,
                path,
                message,
            },
            // Literal operands are checked when the definition is compiled, so a
            // rejection here means the definition was not compiled by us.
            Origin::Literal => CallError::InvalidFixtureLiteral {
                fault,
                path,
                message,
            },
        }
    }

    /// A path segment that cannot be used (or a write it cannot make),
    /// blamed on where the segment's text came from: the agent's input is a
    /// tool input error; the state, or the definition's own literal against
    /// the state's shape, is the harness's.
    pub(crate) fn refused_segment(origin: Origin, path: String, message: String) -> CallError {
        match origin {
            Origin::Input => CallError::InvalidPathSegment { path, message },
            Origin::State | Origin::Literal => CallError::InvalidStatePath { path, message },
        }
    }

    /// Whose fault the failure is.
    pub fn class(&self) -> ErrorClass {
        CallCode::from(self).class()
    }

    /// The stable code, e.g. `invalid_arguments` or `missing_reference`.
    pub fn code(&self) -> &'static str {
        CallCode::from(self).as_str()
    }

    /// A JSON pointer into the input (tool input errors, `$input` references)
    /// or the state (fixture faults, `$state` references), where one applies.
    /// For schema violations it is the first violation's.
    pub fn path(&self) -> Option<&str> {
        match self {
            CallError::InvalidNumber { path, .. }
            | CallError::InvalidDate { path, .. }
            | CallError::OffsetOutOfRange { path, .. }
            | CallError::DateOutOfRange { path, .. }
            | CallError::InvalidOperand { path, .. }
            | CallError::InvalidFixtureLiteral { path, .. }
            | CallError::MissingReference { path, .. }
            | CallError::InvalidPathSegment { path, .. }
            | CallError::InvalidStatePath { path, .. }
            | CallError::InvalidExpression { path, .. } => Some(path),
            CallError::WorkBudgetExceeded { .. } => Some(""),
            CallError::InvalidArguments { violations }
            | CallError::OutputSchemaViolation { violations } => {
                violations.first().map(|v| v.path.as_str())
            }
            CallError::UnknownVariant { .. } => None,
        }
    }

    /// The schema violations, for the two schema errors; empty otherwise.
    pub fn violations(&self) -> &[Violation] {
        match self {
            CallError::InvalidArguments { violations }
            | CallError::OutputSchemaViolation { violations } => violations,
            _ => &[],
        }
    }
}

problem_codes! {
    /// The codes of [`CallError`]: why one call failed.
    pub enum CallCode {
        /// The input fails the contract's input schema.
        InvalidArguments => "invalid_arguments",
        /// An input value given to `$number` (or as a `$dateAdd` offset) is not an accepted number.
        InvalidNumber => "invalid_number",
        /// An input value given to `$dateAdd` is not a date or date-time.
        InvalidDate => "invalid_date",
        /// An input offset of `$dateAdd` beyond ±3660 days or ±24 hours.
        OffsetOutOfRange => "offset_out_of_range",
        /// An input date, or a result computed from input, outside years 1…9999.
        DateOutOfRange => "date_out_of_range",
        /// An input value given to a version-2 operator has the wrong JSON type.
        InvalidOperand => "invalid_operand",
        /// A value from the fixture state is rejected by `$number` or `$dateAdd`.
        InvalidFixtureLiteral => "invalid_fixture_literal",
        /// A `$input` or `$state` reference does not resolve.
        MissingReference => "missing_reference",
        /// The call names a variant the definition lacks.
        UnknownVariant => "unknown_variant",
        /// An input value used as a computed path's segment is not a string or
        /// a non-negative integer, or names what a write cannot reach.
        InvalidPathSegment => "invalid_path_segment",
        /// A state value used as a computed path's segment is not a string or
        /// a non-negative integer, or a write's path cannot be followed in the state.
        InvalidStatePath => "invalid_state_path",
        /// The rendered result fails the contract's output schema.
        OutputSchemaViolation => "output_schema_violation",
        /// (Version 3) an input text given to `$calc` is not an arithmetic expression it evaluates.
        InvalidExpression => "invalid_expression",
        /// (Version 3) the call would visit more elements than the per-call work budget allows.
        WorkBudgetExceeded => "work_budget_exceeded",
    }
}

impl From<&CallError> for CallCode {
    fn from(error: &CallError) -> Self {
        match error {
            CallError::InvalidArguments { .. } => CallCode::InvalidArguments,
            CallError::InvalidNumber { .. } => CallCode::InvalidNumber,
            CallError::InvalidDate { .. } => CallCode::InvalidDate,
            CallError::OffsetOutOfRange { .. } => CallCode::OffsetOutOfRange,
            CallError::DateOutOfRange { .. } => CallCode::DateOutOfRange,
            CallError::InvalidOperand { .. } => CallCode::InvalidOperand,
            CallError::InvalidFixtureLiteral { .. } => CallCode::InvalidFixtureLiteral,
            CallError::MissingReference { .. } => CallCode::MissingReference,
            CallError::UnknownVariant { .. } => CallCode::UnknownVariant,
            CallError::InvalidPathSegment { .. } => CallCode::InvalidPathSegment,
            CallError::InvalidStatePath { .. } => CallCode::InvalidStatePath,
            CallError::OutputSchemaViolation { .. } => CallCode::OutputSchemaViolation,
            CallError::InvalidExpression { .. } => CallCode::InvalidExpression,
            CallError::WorkBudgetExceeded { .. } => CallCode::WorkBudgetExceeded,
        }
    }
}

impl CallCode {
    /// Whose fault a failure of this code is (the one class table: the
    /// runtime reads it, at compile time, to file each code).
    pub const fn class(self) -> ErrorClass {
        match self {
            CallCode::InvalidArguments
            | CallCode::InvalidNumber
            | CallCode::InvalidDate
            | CallCode::OffsetOutOfRange
            | CallCode::DateOutOfRange
            | CallCode::InvalidOperand
            | CallCode::InvalidPathSegment
            | CallCode::InvalidExpression => ErrorClass::ToolInputError,
            CallCode::InvalidFixtureLiteral
            | CallCode::MissingReference
            | CallCode::UnknownVariant
            | CallCode::InvalidStatePath
            | CallCode::OutputSchemaViolation
            | CallCode::WorkBudgetExceeded => ErrorClass::HarnessError,
        }
    }
}

/// Why an operand was rejected. Who is blamed (input, state or definition)
/// depends on where the operand came from, not on the fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(not(feature = "operators"), allow(unreachable_pub))]
pub enum OperandFault {
    /// Not a number `$number` accepts, or an offset that is not an integer-valued number.
    InvalidNumber,
    /// Not a calendar date or RFC 3339 date-time.
    InvalidDate,
    /// A `days` or `hours` offset beyond its bound.
    OffsetOutOfRange,
    /// A date, or a result, outside years 1…9999.
    DateOutOfRange,
    /// A value of the wrong JSON type for a version-2 operator (`$append`
    /// of something that is not an array, `$merge` of a non-object).
    InvalidOperand,
    /// (Version 3) a text `$calc` cannot evaluate.
    InvalidExpression,
}

#[cfg_attr(not(feature = "operators"), allow(unreachable_pub))]
impl OperandFault {
    /// The stable code: `invalid_number`, `invalid_date`, `offset_out_of_range`, `date_out_of_range`.
    pub fn code(self) -> &'static str {
        match self {
            OperandFault::InvalidNumber => "invalid_number",
            OperandFault::InvalidDate => "invalid_date",
            OperandFault::OffsetOutOfRange => "offset_out_of_range",
            OperandFault::DateOutOfRange => "date_out_of_range",
            OperandFault::InvalidOperand => "invalid_operand",
            OperandFault::InvalidExpression => "invalid_expression",
        }
    }
}

impl fmt::Display for OperandFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// A rejected operand: the fault and a sentence saying why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(not(feature = "operators"), allow(unreachable_pub))]
pub struct Rejection {
    /// What is wrong.
    pub fault: OperandFault,
    /// Why, for humans.
    pub message: String,
}

pub(crate) fn reject(fault: OperandFault, message: impl Into<String>) -> Rejection {
    Rejection {
        fault,
        message: message.into(),
    }
}

/// Keeps messages short when a hostile operand is huge.
pub(crate) fn truncate(text: &str) -> &str {
    match text.char_indices().nth(64) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}
