//! The runtime's stable codes, one enum per family, so that a typo is a
//! compile error and the API, the worker and the UI match on variants.
//!
//! Every enum is declared with `toolmock_contract::problem_codes!` (as every
//! crate's codes are), so it lists its variants in `ALL` and cannot miss one;
//! `tests` compares them, with their classes, with the `toolmock-runtime`
//! section of `docs/error-codes.md`, both ways.

use toolmock_contract::problem_codes;
use toolmock_evaluator::{CallCode, CallError, ErrorClass};

problem_codes! {
    /// A harness fault: the harness (pin, definition, fixture state, lease,
    /// storage) is at fault; recorded in `harness_errors`, and the attempt
    /// can never pass.
    pub enum HarnessCode {
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
        /// A state value used as a computed path's segment is not a string or a
        /// non-negative integer, or a write's path cannot be followed in the state.
        InvalidStatePath => "invalid_state_path",
        /// The rendered (or real) result fails the output schema.
        OutputSchemaViolation => "output_schema_violation",
        /// The mock's iterations would visit more elements in one call than
        /// the work budget allows.
        WorkBudgetExceeded => "work_budget_exceeded",
        /// The real external handler failed, or returned what cannot be recorded (real-tools runs).
        ExternalFailed => "external_failed",
        /// Storage failed during the call (the cause is in the record's detail), or
        /// the attempt's records fall short of the calls the dispatcher answered.
        StorageFailed => "storage_failed",
        /// The call ran, but its answer never reached the caller: the HTTP
        /// request timed out or the connection closed while it ran, or a
        /// stdio answer could not be written.
        AnswerLost => "answer_lost",
        /// A workflow ran more nodes than its `max_steps` allows (a run-away loop).
        WorkflowStepLimit => "workflow_step_limit",
        /// A workflow's `$input` or `$node` reference does not resolve.
        WorkflowReferenceUnresolved => "workflow_reference_unresolved",
        /// A workflow reached an effect node with no handler to execute it.
        EffectNotExecuted => "effect_not_executed",
        /// A call names a workflow or node the agent lacks (unchecked documents only).
        InvalidWorkflow => "invalid_workflow",
        /// The model endpoint that plays the agent could not be reached or kept
        /// failing (time-outs, connection errors, 429 and 5xx answers) after its retries.
        AgentUnavailable => "agent_unavailable",
        /// The model endpoint answered, but not with a usable chat completion (a
        /// refused request, an unreadable body, no choice).
        ModelFailed => "model_failed",
        /// The judge model could not grade a rubric: unreachable, or its answer is
        /// not the verdict asked for.
        JudgeFailed => "judge_failed",
        /// The model endpoint that plays a case's simulated user could not be
        /// reached or kept failing after its retries.
        UserUnavailable => "user_unavailable",
        /// The user model answered, but not with a usable user turn (a refused
        /// request, an unreadable body, an empty message, tool calls from a
        /// user without tools).
        UserFailed => "user_failed",
        /// A `model` case reached a process with no model endpoint configured
        /// (a worker started without `--model-url` and `--model`).
        ModelNotConfigured => "model_not_configured",
        /// A model-driven attempt ran past its overall deadline
        /// (`--attempt-timeout-secs`): the model kept it waiting (slow answers,
        /// retries) longer than any attempt may run.
        AttemptTimeout => "attempt_timeout",
        /// An `http` case's agent service could not be reached (connection
        /// refused, DNS, time-out before it answered the hand-over).
        AgentServiceUnreachable => "agent_service_unreachable",
        /// An `http` case's agent service answered the hand-over with a status
        /// other than 2xx.
        AgentServiceRefused => "agent_service_refused",
        /// An `http` case's agent service took the attempt but did not finish
        /// it within the worker's time-out.
        AgentServiceTimeout => "agent_service_timeout",
        /// A model cassette replaying a run has no recorded answer for a
        /// request of the agent model or the judge (never a live call).
        CassetteMiss => "cassette_miss",
        /// The run's budget of model tokens or cost (`--max-tokens`,
        /// `--max-cost`) is spent: the model request was not sent.
        BudgetExhausted => "budget_exhausted",
    }
}

problem_codes! {
    /// A tool input error: the agent's arguments are wrong; recorded in
    /// `tool_input_errors`, returned to the agent as an ordinary tool error.
    pub enum ToolInputCode {
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
        /// An input value given to a version-2 operator has the wrong JSON type
        /// (`$append` to a non-array, `$merge` of a non-object).
        InvalidOperand => "invalid_operand",
        /// An input value used as a computed path's segment is not a string or a
        /// non-negative integer, or names an array element a write cannot reach.
        InvalidPathSegment => "invalid_path_segment",
        /// An input text given to `$calc` is not an arithmetic expression it evaluates.
        InvalidExpression => "invalid_expression",
        /// A model-driven agent called a function toolmock did not offer it (never executed).
        UnknownFunction => "unknown_function",
        /// A model-driven agent's function arguments are not a JSON object.
        InvalidArgumentsJson => "invalid_arguments_json",
    }
}

/// What a failed evaluation is in the runtime's terms: the runtime code
/// with the text of the evaluator's code, in the family of the evaluator's
/// class. The class table is the evaluator's alone
/// (`toolmock_evaluator::CallCode::class`); [`FILED`] reads it when this
/// crate compiles, so an evaluator code that the family of its class lacks
/// does not compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum CallFault {
    /// The agent's fault.
    ToolInput(ToolInputCode),
    /// The harness's fault.
    Harness(HarnessCode),
}

impl CallFault {
    /// The runtime code of an evaluator error.
    pub(crate) fn of(error: &CallError) -> Self {
        // In bounds: `FILED` has one entry per code, in declaration order.
        FILED[CallCode::from(error) as usize]
    }

    /// The stable text (the evaluator code's).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            CallFault::ToolInput(code) => code.as_str(),
            CallFault::Harness(code) => code.as_str(),
        }
    }
}

/// The position in `$family::ALL` of the code written `$text`, if any
/// (a macro: a `const fn` cannot be generic over the code enums).
macro_rules! position_of {
    ($family:ty, $text:expr) => {{
        let mut found = None;
        let mut k = 0;
        while k < <$family>::ALL.len() {
            if same(<$family>::ALL[k].as_str(), $text) {
                found = Some(k);
                break;
            }
            k += 1;
        }
        found
    }};
}

/// Every evaluator code filed under its runtime code, by the evaluator
/// code's position (the table is built, and checked, at compile time).
const FILED: [CallFault; CallCode::ALL.len()] = file_every_call_code();

const fn file_every_call_code() -> [CallFault; CallCode::ALL.len()] {
    // Every entry is overwritten below; the loop covers every position.
    let mut filed = [CallFault::Harness(HarnessCode::StorageFailed); CallCode::ALL.len()];
    let mut i = 0;
    while i < CallCode::ALL.len() {
        let code = CallCode::ALL[i];
        filed[code as usize] = match code.class() {
            ErrorClass::ToolInputError => match position_of!(ToolInputCode, code.as_str()) {
                Some(k) => CallFault::ToolInput(ToolInputCode::ALL[k]),
                None => panic!("an evaluator tool input code is missing from ToolInputCode"),
            },
            ErrorClass::HarnessError => match position_of!(HarnessCode, code.as_str()) {
                Some(k) => CallFault::Harness(HarnessCode::ALL[k]),
                None => panic!("an evaluator harness code is missing from HarnessCode"),
            },
        };
        i += 1;
    }
    filed
}

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

problem_codes! {
    /// Why an operation could not be pinned at a start: the `status` of a
    /// `StartProblem::Incomplete`, and the reason an unpinned operation
    /// records under `allow_incomplete`.
    pub enum IncompleteStatus {
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

problem_codes! {
    /// A storage failure, the same for every backend.
    pub(crate) enum StoreCode {
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
        /// A write was refused by the attempt's lease fence (the writer's lease is no longer current).
        Fenced => "fenced",
    }
}

problem_codes! {
    /// Why a revision was not saved.
    pub(crate) enum SaveRevisionCode {
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

problem_codes! {
    /// One reason a simulation start is refused.
    pub(crate) enum StartProblemCode {
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
        /// Workflows call each other in a cycle.
        WorkflowCycle => "workflow_cycle",
    }
}

problem_codes! {
    /// Why a simulation did not start (besides storage failures).
    pub(crate) enum StartCode {
        /// The start is refused; every problem is listed.
        StartRefused => "start_refused",
        /// The request itself is unusable (no test case, zero attempts, …).
        InvalidRequest => "invalid_request",
        /// The start would create more than one start may (attempts, state bytes).
        StartTooLarge => "start_too_large",
    }
}

problem_codes! {
    /// Why a call returned no result without anything being recorded.
    pub(crate) enum DispatchCode {
        /// The capability is unknown or belongs to another tenant.
        CapabilityRejected => "capability_rejected",
        /// (Version 2) the mock answered a domain error: recorded as evidence,
        /// neither a tool input error nor a harness error.
        DomainError => "domain_error",
    }
}

problem_codes! {
    /// Why an attempt could not be finished (besides storage failures).
    pub(crate) enum FinishCode {
        /// It was already finished.
        AlreadyFinished => "already_finished",
    }
}

problem_codes! {
    /// Why an agent cannot be created: each problem of the agent a caller
    /// describes (`toolmock_runtime::model::AgentSpec::check`).
    pub enum AgentCode {
        /// The agent's name is empty.
        InvalidName => "invalid_name",
        /// A tool entry is none of the documented shapes (library, inline, workflow).
        MalformedTool => "malformed_tool",
        /// A workflow is not in the documented workflow format.
        MalformedWorkflow => "malformed_workflow",
        /// A library tool the agent names is not the tenant's, or a workflow's tool node names a tool the agent lacks.
        UnknownTool => "unknown_tool",
    }
}

problem_codes! {
    /// Why a tool's operations cannot be stored: each problem of the list
    /// (`toolmock_runtime::model::NewOperation::check_list`).
    pub enum OperationsCode {
        /// The source lists no operation.
        NoOperations => "no_operations",
        /// An operation name that is not a usable runtime name.
        InvalidName => "invalid_name",
        /// Two operations share one name.
        DuplicateOperation => "duplicate_operation",
        /// An input or output schema that is neither an object nor a boolean.
        InvalidSchema => "invalid_schema",
        /// An integer no double holds exactly, so the contract cannot be hashed.
        InexactNumber => "inexact_number",
    }
}

/// Every `(code, class)` pair of the runtime, for the documentation test:
/// each family with the class column `docs/error-codes.md` gives it.
#[cfg(test)]
fn all_codes() -> Vec<(&'static str, &'static str)> {
    use toolmock_contract::ProblemCode;
    fn family<C: ProblemCode>(class: &'static str) -> Vec<(&'static str, &'static str)> {
        C::ALL.iter().map(|c| (c.as_str(), class)).collect()
    }
    [
        family::<HarnessCode>("harness_error"),
        family::<ToolInputCode>("tool_input_error"),
        family::<IncompleteStatus>("incomplete_status"),
        family::<StoreCode>("storage"),
        family::<SaveRevisionCode>("save_revision"),
        family::<StartProblemCode>("start_problem"),
        family::<StartCode>("start"),
        family::<DispatchCode>("dispatch"),
        family::<FinishCode>("finish"),
        family::<AgentCode>("agent"),
        family::<OperationsCode>("operations"),
    ]
    .concat()
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolmock_contract::ProblemCode;

    #[test]
    fn every_code_is_documented_and_every_documented_code_exists() {
        let doc = include_str!("../../../../docs/error-codes.md");
        toolmock_contract::check_documented_classes(doc, "toolmock-runtime", &all_codes())
            .unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn every_evaluator_code_is_filed_under_its_class() {
        for code in CallCode::ALL {
            let filed = FILED[*code as usize];
            assert_eq!(filed.as_str(), code.as_str());
            let class = match filed {
                CallFault::ToolInput(_) => ErrorClass::ToolInputError,
                CallFault::Harness(_) => ErrorClass::HarnessError,
            };
            assert_eq!(class, code.class(), "{code}");
        }
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
        assert_eq!(HarnessCode::parse("no_such_code"), None);
    }
}
