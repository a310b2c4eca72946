//! Problems of a simulation file, reported compiler-style:
//! `FILE: /json/pointer: code: message`.

use serde::Serialize;
use std::fmt;

/// The simulation loader's own problem codes. Problems found inside a
/// definition or a manifest carry that checker's code instead (SPEC §7, §9),
/// and start refusals carry the start's (`stale`, `missing`, `state_conflict`,
/// `effect_node`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LoadCode {
    /// A file is not valid JSON.
    InvalidJson,
    /// A referenced file cannot be read (or does not exist).
    MissingFile,
    /// A file path is given where only inline documents are accepted (the API).
    FileNotAllowed,
    /// A field the format does not define.
    UnknownField,
    /// A required field is absent.
    MissingField,
    /// A value of the wrong JSON type.
    WrongType,
    /// A value outside what the field allows (enum, bounds, length).
    InvalidValue,
    /// `simulation_version` is not 1.
    UnsupportedVersion,
    /// Two tools, cases, workflows, steps or nodes share one name.
    DuplicateName,
    /// A tool lacks the field its `from` needs, or has one of another `from`.
    ToolSourceMismatch,
    /// `from: library` tools exist only in the API's tenant, not in an embedded run.
    LibraryToolNotEmbedded,
    /// A contracts array entry's `contract_hash` is not its contract's hash.
    ContractHashMismatch,
    /// A definition is given for an operation the tool does not have.
    UnknownOperation,
    /// A step, agent tool list or workflow node names no known tool/operation.
    UnknownTool,
    /// A step or node names no workflow of the agent.
    UnknownWorkflow,
    /// A variant choice names no variant of its operation's definition.
    UnknownVariant,
    /// A `$step` reference names no earlier step.
    DanglingStepReference,
    /// A `$case` reference names nothing in the case's data.
    UnknownCaseData,
    /// An object with `$` keys that is not exactly one reference.
    InvalidReference,
    /// A workflow node names a node its workflow lacks.
    UnknownNode,
    /// Workflows call each other in a cycle.
    WorkflowCycle,
    /// A tool node that names both or neither of `tool`+`operation` and `workflow`.
    InvalidNode,
    /// `mode: real_tools` in an embedded run, which has no real tool handlers.
    RealToolsNotEmbedded,
    /// A case with an `external` driver in an embedded run, where no outside
    /// agent can play it.
    ExternalDriverNotEmbedded,
}

impl LoadCode {
    /// The stable code.
    pub fn as_str(self) -> &'static str {
        match self {
            LoadCode::InvalidJson => "invalid_json",
            LoadCode::MissingFile => "missing_file",
            LoadCode::FileNotAllowed => "file_not_allowed",
            LoadCode::UnknownField => "unknown_field",
            LoadCode::MissingField => "missing_field",
            LoadCode::WrongType => "wrong_type",
            LoadCode::InvalidValue => "invalid_value",
            LoadCode::UnsupportedVersion => "unsupported_version",
            LoadCode::DuplicateName => "duplicate_name",
            LoadCode::ToolSourceMismatch => "tool_source_mismatch",
            LoadCode::LibraryToolNotEmbedded => "library_tool_not_embedded",
            LoadCode::ContractHashMismatch => "contract_hash_mismatch",
            LoadCode::UnknownOperation => "unknown_operation",
            LoadCode::UnknownTool => "unknown_tool",
            LoadCode::UnknownWorkflow => "unknown_workflow",
            LoadCode::UnknownVariant => "unknown_variant",
            LoadCode::DanglingStepReference => "dangling_step_reference",
            LoadCode::UnknownCaseData => "unknown_case_data",
            LoadCode::InvalidReference => "invalid_reference",
            LoadCode::UnknownNode => "unknown_node",
            LoadCode::WorkflowCycle => "workflow_cycle",
            LoadCode::InvalidNode => "invalid_node",
            LoadCode::RealToolsNotEmbedded => "real_tools_not_embedded",
            LoadCode::ExternalDriverNotEmbedded => "external_driver_not_embedded",
        }
    }

    /// Every code, for documentation tests.
    pub const ALL: [LoadCode; 24] = [
        LoadCode::InvalidJson,
        LoadCode::MissingFile,
        LoadCode::FileNotAllowed,
        LoadCode::UnknownField,
        LoadCode::MissingField,
        LoadCode::WrongType,
        LoadCode::InvalidValue,
        LoadCode::UnsupportedVersion,
        LoadCode::DuplicateName,
        LoadCode::ToolSourceMismatch,
        LoadCode::LibraryToolNotEmbedded,
        LoadCode::ContractHashMismatch,
        LoadCode::UnknownOperation,
        LoadCode::UnknownTool,
        LoadCode::UnknownWorkflow,
        LoadCode::UnknownVariant,
        LoadCode::DanglingStepReference,
        LoadCode::UnknownCaseData,
        LoadCode::InvalidReference,
        LoadCode::UnknownNode,
        LoadCode::WorkflowCycle,
        LoadCode::InvalidNode,
        LoadCode::RealToolsNotEmbedded,
        LoadCode::ExternalDriverNotEmbedded,
    ];
}

/// One problem: in which file, where (JSON pointer), what (code), and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The file, as given (relative to the working directory or the
    /// simulation file's folder).
    pub file: String,
    /// JSON pointer into that file (`""` is the whole file).
    pub path: String,
    /// A stable code.
    pub code: String,
    /// A sentence for people.
    pub message: String,
}

impl Problem {
    /// A loader problem.
    pub fn new(
        file: impl Into<String>,
        path: impl Into<String>,
        code: LoadCode,
        message: impl Into<String>,
    ) -> Self {
        Self {
            file: file.into(),
            path: path.into(),
            code: code.as_str().to_owned(),
            message: message.into(),
        }
    }

    /// A problem with another checker's code.
    pub fn foreign(
        file: impl Into<String>,
        path: impl Into<String>,
        code: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            file: file.into(),
            path: path.into(),
            code: code.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
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
        toolmock_contract::check_documented_codes(
            doc,
            "toolmock-runtime (simulation files)",
            &codes,
        )
        .unwrap_or_else(|e| panic!("{e}"));
    }
}
