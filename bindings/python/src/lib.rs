//! toolmock as the Python extension module `toolmock._toolmock` (pyo3, the
//! stable ABI): the evaluator, definition check and contract hashing; the
//! runner and the MCP server of the embedded runtime; and the `toolmock`
//! command itself.
//!
//! Python harnesses — pytest suites, agent frameworks' tool sources,
//! tau-bench-style environments — call the very code `toolmock eval`,
//! `check` and `hash` run, in-process: the same answers, errors and hashes
//! by construction. Values cross as Python objects, converted directly to
//! and from `serde_json::Value` (no JSON text in between), with the
//! project's number rules (`convert`). `toolmock.run`, `toolmock.serve` and
//! the wheel's console script call the CLI's own crate (`runner`:
//! `toolmock_cli::run_results`, `Background`, `main`), with the command's
//! arguments.
//!
//! It is only glue: every rule lives in `toolmock-evaluator`,
//! `toolmock-contract`, `toolmock-schema` and the CLI's crate. The
//! evaluator's side keeps no state beyond the objects the caller holds (an
//! `Attempt` is one such object), does no I/O and starts no thread; `run`
//! and `serve` start a runtime of their own, as the command does. The Python
//! side (the `toolmock` package, its type stubs and the pytest plugin) is in
//! `python/toolmock/`; the tests are Python tests in `tests/`, run by
//! `scripts/python-tests.sh`. The main path, from Python:
//!
//! ```python
//! import toolmock
//! mock = toolmock.compile({
//!     "schema_version": 1, "default_variant": "ok",
//!     "variants": {"ok": {"result": {"id": {"$input": "id"}}, "set_state": {"seen": True}}},
//!     "examples": [{"variant": "ok", "input": {"id": 1}, "expected": {"id": 1}}],
//! })
//! result, state, delay_ms = mock.evaluate({"id": 7}, {})
//! assert result == {"id": 7} and state == {"seen": True} and delay_ms == 0
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

// Rendering a result builds and frees a tree of small allocations; mimalloc
// serves the Rust side of that (Python objects keep Python's allocator).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod attempt;
mod build;
mod convert;
mod definition;
mod errors;
mod runner;

use convert::Ints;
use definition::{CompiledDefinition, Contract, Outcome, Problem};
use errors::{BindingCode, DefinitionError, ManifestError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};
use std::sync::Arc;
use toolmock_evaluator::CompiledContract;
use toolmock_schema::{NormalizeCode, NormalizeProblems, PlatformManifest};

/// Reads and checks a definition (`context` names it in the error).
fn compile_checked(
    py: Python<'_>,
    definition: &Bound<'_, PyAny>,
    contract: Option<&Arc<CompiledContract>>,
    context: &str,
) -> PyResult<toolmock_evaluator::CompiledDefinition> {
    definition::read_definition(py, definition)?
        .and_then(|doc| toolmock_evaluator::compile_checked(&doc, contract.map(|c| &**c)))
        .map_err(|diagnostics| {
            errors::with_problems::<DefinitionError, _>(
                py,
                BindingCode::InvalidDefinition,
                &format!("{context} fails its check"),
                diagnostics.as_slice(),
            )
        })
}

/// Checks a definition (every example evaluated; with a contract, inputs and
/// results validated) and returns it compiled.
///
/// `definition` is a `dict` or JSON text (`str`/`bytes`); `contract` a
/// `dict`, JSON text, a `Contract`, or None. A definition that fails its
/// check raises `DefinitionError` whose `problems` lists every problem;
/// an unusable contract raises `ContractError`.
#[pyfunction]
#[pyo3(signature = (definition, contract=None))]
fn compile(
    py: Python<'_>,
    definition: &Bound<'_, PyAny>,
    contract: Option<&Bound<'_, PyAny>>,
) -> PyResult<CompiledDefinition> {
    let contract = definition::compile_contract(py, contract)?;
    let compiled = compile_checked(py, definition, contract.as_ref(), "the definition")?;
    Ok(CompiledDefinition {
        constants: build::Constants::of(py, &compiled)?,
        definition: Arc::new(compiled),
        contract,
    })
}

/// Checks a definition against its contract and returns every problem, as
/// `toolmock check --json` lists them: the errors, or — when there are none
/// — the warnings (`severity == "warning"`). An empty list means it passes
/// without warnings; it passes whenever no problem has severity `"error"`.
#[pyfunction]
fn check(
    py: Python<'_>,
    definition: &Bound<'_, PyAny>,
    contract: &Bound<'_, PyAny>,
) -> PyResult<Vec<Problem>> {
    let contract = definition::compile_contract(py, Some(contract))?;
    let contract = contract.as_deref();
    let doc = match definition::read_definition(py, definition)? {
        Ok(doc) => doc,
        Err(diagnostics) => return Ok(problems(diagnostics.as_slice(), "error")),
    };
    match toolmock_evaluator::compile_checked(&doc, contract) {
        Ok(_) => Ok(problems(
            toolmock_evaluator::warnings(&doc, contract).as_slice(),
            "warning",
        )),
        Err(diagnostics) => Ok(problems(diagnostics.as_slice(), "error")),
    }
}

fn problems<C: toolmock_contract::ProblemCode>(
    list: &[toolmock_contract::Problem<C>],
    severity: &'static str,
) -> Vec<Problem> {
    list.iter().map(|p| Problem::of(p, severity)).collect()
}

/// The contract hash: the lowercase hex SHA-256 of the RFC 8785 canonical
/// form of `{description, input_schema, operation, output_schema}`.
///
/// `contract` is a `dict` or JSON text. An integer no double holds exactly
/// raises `ContractError` with code `inexact_number` and its path.
#[pyfunction]
fn contract_hash(py: Python<'_>, contract: &Bound<'_, PyAny>) -> PyResult<String> {
    let contract = definition::read_contract(py, contract)?;
    contract
        .hash()
        .map(|h| h.as_str().to_owned())
        .map_err(|e| errors::contract_error(py, &e))
}

/// Normalizes a platform manifest (version 1) to its operation contracts,
/// exactly as `toolmock normalize` does: a list with one
/// `{"contract": …, "contract_hash": …}` per operation, in manifest order.
/// A manifest with problems raises `ManifestError` listing every one.
#[pyfunction]
fn normalize_manifest<'py>(
    py: Python<'py>,
    manifest: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let read = if let Ok(text) = manifest.cast::<PyString>() {
        PlatformManifest::from_json_slice(text.to_str()?.as_bytes())
    } else if let Ok(bytes) = manifest.cast::<PyBytes>() {
        PlatformManifest::from_json_slice(bytes.as_bytes())
    } else {
        match convert::to_value(manifest, Ints::Exact) {
            Ok(value) => PlatformManifest::from_value(&value),
            Err(convert::Refused::Inexact { at, number }) => {
                Err(NormalizeProblems::from(toolmock_contract::Problem::new(
                    NormalizeCode::InexactNumber,
                    convert::Refused::path(&at),
                    format!("the integer {number} cannot be represented exactly by a double"),
                )))
            }
            Err(other) => return Err(errors::refused(py, other, "the manifest")),
        }
    };
    let manifest = read.map_err(|problems| {
        errors::with_problems::<ManifestError, _>(
            py,
            BindingCode::InvalidManifest,
            "the manifest",
            problems.as_slice(),
        )
    })?;
    let list = PyList::empty(py);
    for contract in manifest.into_contracts() {
        let entry = toolmock_schema::ContractEntry::of_contract(&contract)
            .map_err(|e| errors::contract_error(py, &e))?;
        let value = serde_json::to_value(&entry).map_err(|e| {
            errors::raise::<errors::ContractError>(
                py,
                "canonicalization_failed",
                None,
                e.to_string(),
            )
        })?;
        list.append(convert::to_python(py, &value)?)?;
    }
    Ok(list)
}

/// Compares the package's section of `docs/error-codes.md` (given as text)
/// with the codes it reports, both ways; raises `AssertionError` naming
/// what differs. For the package's own tests.
#[pyfunction]
fn _check_documented_codes(markdown: &str) -> PyResult<()> {
    let codes = toolmock_contract::code_strings::<BindingCode>();
    toolmock_contract::check_documented_codes(markdown, "toolmock-python", &codes)
        .map_err(pyo3::exceptions::PyAssertionError::new_err)
}

/// The extension module.
#[pymodule]
fn _toolmock(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(contract_hash, m)?)?;
    m.add_function(wrap_pyfunction!(normalize_manifest, m)?)?;
    m.add_function(wrap_pyfunction!(_check_documented_codes, m)?)?;
    m.add_function(wrap_pyfunction!(runner::_main, m)?)?;
    m.add_function(wrap_pyfunction!(runner::_run, m)?)?;
    m.add_function(wrap_pyfunction!(runner::_plan, m)?)?;
    m.add_class::<runner::Server>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // What `toolmock --version` prints after `toolmock `.
    m.add("_version_line", toolmock_cli::VERSION)?;
    m.add_class::<CompiledDefinition>()?;
    m.add_class::<Contract>()?;
    m.add_class::<Outcome>()?;
    m.add_class::<Problem>()?;
    m.add_class::<attempt::Attempt>()?;
    m.add("ToolmockError", py.get_type::<errors::ToolmockError>())?;
    m.add("CallFailed", py.get_type::<errors::CallFailed>())?;
    m.add("ToolInputError", py.get_type::<errors::ToolInputError>())?;
    m.add("HarnessError", py.get_type::<errors::HarnessError>())?;
    m.add("DomainError", py.get_type::<errors::DomainError>())?;
    m.add("DefinitionError", py.get_type::<DefinitionError>())?;
    m.add("ContractError", py.get_type::<errors::ContractError>())?;
    m.add("ManifestError", py.get_type::<ManifestError>())?;
    m.add("AttemptError", py.get_type::<errors::AttemptError>())?;
    m.add("NotJsonError", py.get_type::<errors::NotJsonError>())?;
    Ok(())
}
