//! The runtime's stable codes, one enum per family, so that a typo is a
//! compile error and the API, the worker and the UI match on variants.
//!
//! Every enum lists its variants in `ALL` (generated from the same list as
//! the enum, so it cannot miss one); `tests` compares them with the
//! `toolmock-runtime` section of `docs/error-codes.md`, both ways.

use serde::{Deserialize, Serialize};
use std::fmt;
use toolmock_evaluator::CallError;

macro_rules! code_enum {
    (
        $(#[$doc:meta])*
        $name:ident, class $class:literal {
            $( $(#[$vdoc:meta])* $variant:ident => $text:literal, )+
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $(
                $(#[$vdoc])*
                #[serde(rename = $text)]
                $variant,
            )+
        }

        impl $name {
            /// Every code of this family.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The class column of `docs/error-codes.md` for this family.
            pub const CLASS: &'static str = $class;

            /// The stable text.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            /// Parses the stable text (e.g. a stored code).
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

code_enum! {
    /// A harness fault: the harness (pin, definition, fixture state, lease,
    /// storage) is at fault; recorded in `harness_errors`, and the attempt
    /// can never pass.
    HarnessCode, class "harness_error" {
        /// The operation was left unpinned at the start (`allow_incomplete`).
        MissingDefinition => "missing_definition",
        /// The tool or operation is not one the simulation can reach; never executed.
        UnknownTool => "unknown_tool",
        /// The stored pin cannot be read or compiled.
        UnreadablePin => "unreadable_pin",
        /// The attempt is finished, its lease expired or its capability was revoked.
        LeaseExpired => "lease_expired",
        /// A `$input` or `$state` reference does not resolve.
        MissingReference => "missing_reference",
        /// The test case chose a variant the definition lacks.
        UnknownVariant => "unknown_variant",
        /// A fixture-state value is refused by `$number` or `$dateAdd`.
        InvalidFixtureLiteral => "invalid_fixture_literal",
        /// The rendered (or real) result fails the output schema.
        OutputSchemaViolation => "output_schema_violation",
    }
}

code_enum! {
    /// A tool input error: the agent's arguments are wrong; recorded in
    /// `tool_input_errors`, returned to the agent as an ordinary tool error.
    ToolInputCode, class "tool_input_error" {
        /// The arguments fail the input schema.
        InvalidArguments => "invalid_arguments",
        /// A value given to `$number` (or as a `$dateAdd` offset) is not an accepted number.
        InvalidNumber => "invalid_number",
        /// A value given to `$dateAdd` is not a date or date-time.
        InvalidDate => "invalid_date",
        /// A `$dateAdd` offset is beyond ±3660 days or ±24 hours.
        OffsetOutOfRange => "offset_out_of_range",
        /// An input date, or a date computed from input, lies outside years 1…9999.
        DateOutOfRange => "date_out_of_range",
    }
}

/// What a failed evaluation is, in the runtime's terms: the evaluator's
/// `CallError` codes, each mapped onto exactly one runtime code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallCode {
    /// The agent's fault.
    ToolInput(ToolInputCode),
    /// The harness's fault.
    Harness(HarnessCode),
}

impl CallCode {
    /// The runtime code of an evaluator error (an exhaustive match: a new
    /// `CallError` variant does not compile until it is classified here).
    pub fn of(error: &CallError) -> Self {
        match error {
            CallError::InvalidArguments { .. } => {
                CallCode::ToolInput(ToolInputCode::InvalidArguments)
            }
            CallError::InvalidNumber { .. } => CallCode::ToolInput(ToolInputCode::InvalidNumber),
            CallError::InvalidDate { .. } => CallCode::ToolInput(ToolInputCode::InvalidDate),
            CallError::OffsetOutOfRange { .. } => {
                CallCode::ToolInput(ToolInputCode::OffsetOutOfRange)
            }
            CallError::DateOutOfRange { .. } => CallCode::ToolInput(ToolInputCode::DateOutOfRange),
            CallError::InvalidFixtureLiteral { .. } => {
                CallCode::Harness(HarnessCode::InvalidFixtureLiteral)
            }
            CallError::MissingReference { .. } => CallCode::Harness(HarnessCode::MissingReference),
            CallError::UnknownVariant { .. } => CallCode::Harness(HarnessCode::UnknownVariant),
            CallError::OutputSchemaViolation { .. } => {
                CallCode::Harness(HarnessCode::OutputSchemaViolation)
            }
        }
    }

    /// The stable text.
    pub fn as_str(self) -> &'static str {
        match self {
            CallCode::ToolInput(code) => code.as_str(),
            CallCode::Harness(code) => code.as_str(),
        }
    }
}

code_enum! {
    /// Why an operation could not be pinned at a start: the `status` of a
    /// `StartProblem::Incomplete`, and the reason an unpinned operation
    /// records under `allow_incomplete`.
    IncompleteStatus, class "incomplete_status" {
        /// The latest revision was saved against another contract.
        Stale => "stale",
        /// No revision (or no inline testing definition) exists.
        Missing => "missing",
        /// Neither discovery nor the tool gives an output schema.
        NeedsOutputSchema => "needs_output_schema",
        /// The pinned definition fails its check against the contract.
        InvalidDefinition => "invalid_definition",
    }
}

code_enum! {
    /// A storage failure, the same for every backend.
    StoreCode, class "storage" {
        /// No such row for this tenant (a row of another tenant reads exactly so).
        NotFound => "not_found",
        /// The database refused to change or remove a row of an append-only table.
        AppendOnly => "append_only",
        /// A uniqueness rule was broken.
        Conflict => "conflict",
        /// A stored value could not be read back.
        CorruptRow => "corrupt_row",
        /// The backend itself failed (connection, I/O, SQL).
        BackendFailed => "backend_failed",
    }
}

code_enum! {
    /// Why a revision was not saved.
    SaveRevisionCode, class "save_revision" {
        /// The operation's contract changed since the caller checked (the API's 409).
        ContractChanged => "contract_changed",
        /// The operation has no output schema, so it cannot be mocked.
        NeedsOutputSchema => "needs_output_schema",
        /// The definition fails its check against the current contract (the API's 422).
        InvalidDefinition => "invalid_definition",
        /// The operation's contract itself cannot be compiled.
        UnusableContract => "unusable_contract",
        /// The definition cannot be hashed reproducibly.
        UnhashableDefinition => "unhashable_definition",
    }
}

code_enum! {
    /// One reason a simulation start is refused.
    StartProblemCode, class "start_problem" {
        /// A library tool the agent references does not exist for this tenant.
        UnknownTool => "unknown_tool",
        /// A workflow the agent references does not exist.
        UnknownWorkflow => "unknown_workflow",
        /// Two reachable tools share one name.
        DuplicateTool => "duplicate_tool",
        /// An operation is stale, missing, unmockable or invalid (see its status).
        Incomplete => "incomplete",
        /// Two pinned definitions give one initial-state key different values.
        StateConflict => "state_conflict",
        /// A workflow node causes an effect without the dispatcher (sandbox only).
        EffectNode => "effect_node",
    }
}

code_enum! {
    /// Why a simulation did not start (besides storage failures).
    StartCode, class "start" {
        /// The start is refused; every problem is listed.
        StartRefused => "start_refused",
        /// The request itself is unusable (no test case, zero attempts, …).
        InvalidRequest => "invalid_request",
    }
}

code_enum! {
    /// Why a call returned no result without anything being recorded.
    DispatchCode, class "dispatch" {
        /// The capability is unknown or belongs to another tenant.
        CapabilityRejected => "capability_rejected",
        /// The real external handler failed (real-tools runs only).
        ExternalFailed => "external_failed",
    }
}

code_enum! {
    /// Why an attempt could not be finished (besides storage failures).
    FinishCode, class "finish" {
        /// It was already finished.
        AlreadyFinished => "already_finished",
    }
}

/// Every `(code, class)` pair of the runtime, for the documentation test.
pub fn all_codes() -> Vec<(&'static str, &'static str)> {
    fn family<T: Copy>(
        all: &[T],
        class: &'static str,
        text: fn(T) -> &'static str,
    ) -> Vec<(&'static str, &'static str)> {
        all.iter().map(|c| (text(*c), class)).collect()
    }
    [
        family(HarnessCode::ALL, HarnessCode::CLASS, HarnessCode::as_str),
        family(
            ToolInputCode::ALL,
            ToolInputCode::CLASS,
            ToolInputCode::as_str,
        ),
        family(
            IncompleteStatus::ALL,
            IncompleteStatus::CLASS,
            IncompleteStatus::as_str,
        ),
        family(StoreCode::ALL, StoreCode::CLASS, StoreCode::as_str),
        family(
            SaveRevisionCode::ALL,
            SaveRevisionCode::CLASS,
            SaveRevisionCode::as_str,
        ),
        family(
            StartProblemCode::ALL,
            StartProblemCode::CLASS,
            StartProblemCode::as_str,
        ),
        family(StartCode::ALL, StartCode::CLASS, StartCode::as_str),
        family(DispatchCode::ALL, DispatchCode::CLASS, DispatchCode::as_str),
        family(FinishCode::ALL, FinishCode::CLASS, FinishCode::as_str),
    ]
    .concat()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The `(code, class)` rows of one crate's section of docs/error-codes.md.
    fn documented(section: &str) -> BTreeSet<(String, String)> {
        let doc = include_str!("../../../../docs/error-codes.md");
        let heading = format!("## {section}");
        let mut rows = BTreeSet::new();
        let mut inside = false;
        for line in doc.lines() {
            if line.starts_with("## ") {
                inside = line.trim() == heading;
                continue;
            }
            if !inside || !line.starts_with('|') || line.starts_with("|---") {
                continue;
            }
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let (code, class) = (cells[1].trim_matches('`'), cells[2]);
            if code == "code" {
                continue;
            }
            assert!(
                rows.insert((code.to_owned(), class.to_owned())),
                "{code} ({class}) is listed twice"
            );
        }
        rows
    }

    #[test]
    fn every_code_is_documented_and_every_documented_code_exists() {
        let documented = documented("toolmock-runtime");
        let actual: BTreeSet<(String, String)> = all_codes()
            .into_iter()
            .map(|(code, class)| (code.to_owned(), class.to_owned()))
            .collect();
        let undocumented: Vec<_> = actual.difference(&documented).collect();
        let stale: Vec<_> = documented.difference(&actual).collect();
        assert!(
            undocumented.is_empty(),
            "codes missing from docs/error-codes.md: {undocumented:?}"
        );
        assert!(
            stale.is_empty(),
            "docs/error-codes.md lists codes the runtime does not have: {stale:?}"
        );
    }

    #[test]
    fn codes_round_trip_through_their_text() {
        for code in HarnessCode::ALL {
            assert_eq!(HarnessCode::parse(code.as_str()), Some(*code));
            assert_eq!(
                serde_json::to_value(code).unwrap_or_default(),
                serde_json::Value::from(code.as_str())
            );
        }
        for code in ToolInputCode::ALL {
            assert_eq!(ToolInputCode::parse(code.as_str()), Some(*code));
        }
        for status in IncompleteStatus::ALL {
            assert_eq!(IncompleteStatus::parse(status.as_str()), Some(*status));
        }
    }
}
