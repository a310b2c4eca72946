//! Problems of a simulation, each in its file, reported compiler-style:
//! `FILE: /json/pointer: code: message`.

use serde::Serialize;
use std::fmt;
use toolmock_contract::{Problem, ProblemCode, problem_codes};

problem_codes! {
    /// The simulation loader's own problem codes. Problems found inside a
    /// definition or a manifest carry that checker's code instead (docs/spec.md §7,
    /// §9), and start refusals carry the start's (`stale`, `missing`,
    /// `state_conflict`, `effect_node`, …).
    pub enum LoadCode {
        /// A file is not valid JSON.
        InvalidJson => "invalid_json",
        /// A referenced file cannot be read (or does not exist).
        MissingFile => "missing_file",
        /// A file path is given where only inline documents are accepted (the API).
        FileNotAllowed => "file_not_allowed",
        /// A field the format does not define.
        UnknownField => "unknown_field",
        /// A required field is absent.
        MissingField => "missing_field",
        /// A value of the wrong JSON type.
        WrongType => "wrong_type",
        /// A value outside what the field allows (enum, bounds, length).
        InvalidValue => "invalid_value",
        /// `simulation_version` is not 1.
        UnsupportedVersion => "unsupported_version",
        /// Two tools, cases, workflows, steps or nodes share one name.
        DuplicateName => "duplicate_name",
        /// A tool lacks the field its `from` needs, or has one of another `from`.
        ToolSourceMismatch => "tool_source_mismatch",
        /// `from: library` tools exist only in the API's tenant, not in an embedded run.
        LibraryToolNotEmbedded => "library_tool_not_embedded",
        /// A contracts array entry's `contract_hash` is not its contract's hash.
        ContractHashMismatch => "contract_hash_mismatch",
        /// A definition is given for an operation the tool does not have.
        UnknownOperation => "unknown_operation",
        /// A step, agent tool list or workflow node names no known tool/operation.
        UnknownTool => "unknown_tool",
        /// A step or node names no workflow of the agent.
        UnknownWorkflow => "unknown_workflow",
        /// A variant choice names no variant of its operation's definition.
        UnknownVariant => "unknown_variant",
        /// A `$step` reference names no earlier step.
        DanglingStepReference => "dangling_step_reference",
        /// A `$case` reference names nothing in the case's data.
        UnknownCaseData => "unknown_case_data",
        /// An object with `$` keys that is not exactly one reference.
        InvalidReference => "invalid_reference",
        /// A workflow node names a node its workflow lacks.
        UnknownNode => "unknown_node",
        /// Workflows call each other in a cycle.
        WorkflowCycle => "workflow_cycle",
        /// A tool node that names both or neither of `tool`+`operation` and `workflow`.
        InvalidNode => "invalid_node",
        /// `mode: real_tools` with an operation or an effect node that nothing
        /// executes for real (a platform operation, one with neither an
        /// `endpoint` nor a tool `server`, a `db_write` or `email` node).
        NoRealHandler => "no_real_handler",
        /// `mode: real_tools` with a case whose agent calls through the API's
        /// attempt endpoints (an `external` or `http` driver), which answer
        /// with the pinned mocks only: nothing would execute for real.
        RealToolsThroughApi => "real_tools_through_api",
        /// A case with an `external` driver in an embedded run, where no outside
        /// agent can play it.
        ExternalDriverNotEmbedded => "external_driver_not_embedded",
        /// A case with a `model` driver, run without a model endpoint configured.
        ModelNotConfigured => "model_not_configured",
        /// A case with a `judge` rubric, run without a judge model configured.
        JudgeNotConfigured => "judge_not_configured",
        /// A `final_answer.matches` that is not a regular expression.
        InvalidRegex => "invalid_regex",
        /// A case's simulated user on a driver that holds no conversation
        /// (`scripted`): only a `model` agent, or one outside toolmock (an
        /// `external` or `http` driver, through `toolmock serve` or the
        /// API's `ask-user`), talks with it.
        UserNotSupported => "user_not_supported",
        /// A `model` driver with neither `messages` nor a simulated user:
        /// nobody would say anything to the agent.
        NoUserTurns => "no_user_turns",
        /// A simulated user's tool is also the agent's: every tool belongs
        /// to one side, so that its calls are the agent's or the user's.
        UserToolOfAgent => "user_tool_of_agent",
        /// A case with a simulated user, run where no user model is
        /// configured (`toolmock serve` without `--user-model`).
        UserModelNotConfigured => "user_model_not_configured",
    }
}

/// One problem of a simulation, in the file it is in: the loader's own
/// (a `Problem<LoadCode>`) or one that another checker found in a file of
/// the simulation (a definition's docs/spec.md §7 problem, a manifest's docs/spec.md §9
/// problem, a start refusal), with that checker's code. Printed
/// compiler-style: `FILE: /json/pointer: code: message`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileProblem {
    /// The file, as given (relative to the working directory or the
    /// simulation file's folder).
    pub file: String,
    /// JSON pointer into that file (`""` is the whole file).
    pub path: String,
    /// The stable code, from the code list of the checker that found it.
    pub code: &'static str,
    /// A sentence for people.
    pub message: String,
}

impl FileProblem {
    /// `problem`, found in `file`.
    pub fn new<C: ProblemCode>(file: impl Into<String>, problem: Problem<C>) -> Self {
        Self {
            file: file.into(),
            path: problem.path,
            code: problem.code.as_str(),
            message: problem.message,
        }
    }

    /// A problem of the loader itself.
    pub(crate) fn load(
        file: impl Into<String>,
        path: impl Into<String>,
        code: LoadCode,
        message: impl Into<String>,
    ) -> Self {
        Self::new(file, Problem::new(code, path, message))
    }
}

impl fmt::Display for FileProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "/"
        } else {
            &self.path
        };
        write!(f, "{}: {path}: {}: {}", self.file, self.code, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::LoadCode;

    /// Every loader code is documented for users, and nothing else is listed
    /// as one.
    #[test]
    fn every_code_is_documented() {
        let docs = include_str!("../../../docs/simulations.md");
        let section = docs
            .split("Codes of the loader:")
            .nth(1)
            .and_then(|rest| rest.split("\n\n").nth(1))
            .expect("the loader's code table in docs/simulations.md");
        let mut listed: Vec<&str> = section
            .lines()
            .filter_map(|line| line.strip_prefix("| `"))
            .flat_map(|cell| cell.split(" |").next())
            .flat_map(|cell| cell.split(", "))
            .map(|code| code.trim_matches('`'))
            .collect();
        listed.sort_unstable();
        let mut codes: Vec<&str> = LoadCode::ALL.iter().map(|c| c.as_str()).collect();
        codes.sort_unstable();
        assert_eq!(listed, codes);
    }

    /// The loader's codes stand in `docs/error-codes.md` too, with every
    /// other code of the project, both ways.
    #[test]
    fn every_code_is_in_the_error_code_table() {
        let doc = include_str!("../../../docs/error-codes.md");
        let codes: Vec<&str> = LoadCode::ALL.iter().map(|c| c.as_str()).collect();
        toolmock_contract::check_documented_codes(doc, "toolmock-simulation", &codes)
            .unwrap_or_else(|e| panic!("{e}"));
    }
}
