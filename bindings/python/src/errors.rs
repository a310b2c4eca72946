//! The exceptions the package raises, each with `code`, `path` and `message`.

use crate::convert::Refused;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyList;
use toolmock_contract::{ContractError as ContractFault, Problem, ProblemCode, problem_codes};
use toolmock_evaluator::{CallError, ErrorClass, SchemaError};

create_exception!(
    _toolmock,
    ToolmockError,
    PyException,
    "Every error the package raises: `code` (docs/error-codes.md), `path` (a JSON pointer, or None) and `message`."
);
create_exception!(
    _toolmock,
    CallFailed,
    ToolmockError,
    "A call that failed: ToolInputError or HarnessError. It changed no state."
);
create_exception!(
    _toolmock,
    ToolInputError,
    CallFailed,
    "The caller's input is at fault (class tool_input_error): an ordinary, recoverable tool error."
);
create_exception!(
    _toolmock,
    HarnessError,
    CallFailed,
    "The harness is at fault (class harness_error): definition, fixture state or contract. An attempt with one never passes."
);
create_exception!(
    _toolmock,
    DomainError,
    ToolmockError,
    "A version-2 domain error the mock answered (class domain_error): the operation's own error answer, not a failed call; it changed no state. `code` and `message` are the error's, `data` its data (or None), `path` None."
);
create_exception!(
    _toolmock,
    DefinitionError,
    ToolmockError,
    "A definition that fails its check; `problems` lists every problem."
);
create_exception!(
    _toolmock,
    ContractError,
    ToolmockError,
    "A contract that cannot be read, hashed or compiled."
);
create_exception!(
    _toolmock,
    ManifestError,
    ToolmockError,
    "A platform manifest with problems; `problems` lists every one."
);
create_exception!(
    _toolmock,
    AttemptError,
    ToolmockError,
    "An attempt that cannot start: a state conflict or a definition without a contract."
);
create_exception!(
    _toolmock,
    NotJsonError,
    ToolmockError,
    "A Python value without a JSON form (code not_json)."
);

problem_codes! {
    /// The codes this package reports itself (the others are the crates').
    pub(crate) enum BindingCode {
        /// A Python value has no JSON form.
        NotJson => "not_json",
        /// A definition fails its check (its `problems` hold the definition codes).
        InvalidDefinition => "invalid_definition",
        /// A platform manifest has problems (its `problems` hold the normalization codes).
        InvalidManifest => "invalid_manifest",
        /// An attempt's definition has no contract.
        MissingContract => "missing_contract",
        /// Two definitions of an attempt give one initial-state key different values.
        StateConflict => "state_conflict",
        /// An attempt's call names an operation the attempt does not have.
        UnknownTool => "unknown_tool",
        /// An attempt's call names an operation that has a contract but no definition.
        MissingDefinition => "missing_definition",
        /// A simulation file (or a file it names) is not JSON.
        InvalidJson => "invalid_json",
        /// A file a simulation names cannot be read.
        MissingFile => "missing_file",
        /// A simulation tool given by library id, which only the API resolves.
        LibraryToolNotEmbedded => "library_tool_not_embedded",
        /// An operation without an output schema, in a tool without a fallback one.
        NeedsOutputSchema => "needs_output_schema",
        /// A simulation gives a definition for an operation its tool does not have.
        UnknownOperation => "unknown_operation",
        /// A simulation's contracts document is not an array.
        WrongType => "wrong_type",
        /// A contracts entry's `contract_hash` is not its contract's hash.
        ContractHashMismatch => "contract_hash_mismatch",
        /// `toolmock.run` or `toolmock.serve` was given a file that cannot be used (its `problems` hold the simulation codes).
        InvalidSimulation => "invalid_simulation",
        /// `toolmock.run` or `toolmock.serve` was given options that are not the command's flags.
        InvalidOption => "invalid_option",
        /// `toolmock.run` or `toolmock.serve` failed otherwise, without a code of its own.
        CommandFailed => "command_failed",
        /// A `toolmock.Server` was used after it stopped.
        ServerStopped => "server_stopped",
    }
}

/// An exception of class `E` with its attributes set.
pub(crate) fn raise<E: pyo3::PyTypeInfo>(
    py: Python<'_>,
    code: &str,
    path: Option<&str>,
    message: String,
) -> PyErr {
    let err = PyErr::new::<E, _>(message.clone());
    let value = err.value(py);
    // Setting attributes on a fresh exception instance cannot fail.
    let _ = value.setattr("code", code);
    let _ = value.setattr("path", path);
    let _ = value.setattr("message", message);
    err
}

/// A conversion refusal as `NotJsonError` or `ContractError` (`inexact_number`).
pub(crate) fn refused(py: Python<'_>, refused: Refused, what: &str) -> PyErr {
    match refused {
        Refused::Python(e) => e,
        Refused::NotJson { at, message } => {
            let path = Refused::path(&at);
            raise::<NotJsonError>(
                py,
                BindingCode::NotJson.as_str(),
                Some(&path),
                format!("{what} at {}: {message}", show_path(&path)),
            )
        }
        Refused::Inexact { at, number } => contract_error(
            py,
            &ContractFault::InexactNumber {
                path: Refused::path(&at),
                number,
            },
        ),
    }
}

fn show_path(path: &str) -> &str {
    if path.is_empty() { "/" } else { path }
}

pub(crate) fn contract_error(py: Python<'_>, e: &ContractFault) -> PyErr {
    raise::<ContractError>(py, e.code(), e.path(), e.to_string())
}

pub(crate) fn schema_error(py: Python<'_>, e: &SchemaError) -> PyErr {
    raise::<ContractError>(py, e.code(), e.path(), e.to_string())
}

/// A failed call as `ToolInputError` or `HarnessError`, with its violations.
pub(crate) fn call_error(py: Python<'_>, e: &CallError) -> PyErr {
    let err = match e.class() {
        ErrorClass::ToolInputError => {
            raise::<ToolInputError>(py, e.code(), e.path(), e.to_string())
        }
        ErrorClass::HarnessError => raise::<HarnessError>(py, e.code(), e.path(), e.to_string()),
    };
    let value = err.value(py);
    let _ = value.setattr("error_class", e.class().as_str());
    let violations: Vec<(String, String, String)> = e
        .violations()
        .iter()
        .map(|v| (v.path.clone(), v.schema_path.clone(), v.message.clone()))
        .collect();
    let _ = value.setattr("violations", violations);
    err
}

/// A domain error the mock answered, as `DomainError`.
pub(crate) fn domain_error(py: Python<'_>, e: &toolmock_evaluator::DomainError) -> PyErr {
    let err = raise::<DomainError>(py, &e.code, None, e.message.clone());
    let value = err.value(py);
    let _ = value.setattr("error_class", "domain_error");
    let data = match &e.data {
        Some(data) => crate::convert::to_python(py, data).ok().map(Bound::unbind),
        None => None,
    };
    let _ = value.setattr("data", data);
    err
}

/// A harness error the package raises itself (an attempt's routing).
pub(crate) fn harness(
    py: Python<'_>,
    code: BindingCode,
    path: Option<&str>,
    message: String,
) -> PyErr {
    let err = raise::<HarnessError>(py, code.as_str(), path, message);
    let value = err.value(py);
    let _ = value.setattr("error_class", ErrorClass::HarnessError.as_str());
    let _ = value.setattr("violations", Vec::<(String, String, String)>::new());
    err
}

/// An exception carrying every problem (`problems`), coded by `code`.
pub(crate) fn with_problems<E: pyo3::PyTypeInfo, C: ProblemCode>(
    py: Python<'_>,
    code: BindingCode,
    what: &str,
    problems: &[Problem<C>],
) -> PyErr {
    let mut message = format!(
        "{what}: {} problem{}",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    );
    for p in problems {
        message.push_str(&format!(
            "\n  {}: {}: {}",
            p.display_path(),
            p.code.as_str(),
            p.message
        ));
    }
    let err = raise::<E>(py, code.as_str(), None, message);
    let list = problems
        .iter()
        .map(|p| crate::Problem::of(p, "error"))
        .collect::<Vec<_>>();
    let value = err.value(py);
    if let Ok(list) = PyList::new(py, list) {
        let _ = value.setattr("problems", list);
    }
    err
}
