//! The `toolmock` command in-process: the command itself (the wheel's
//! console script and `python -m toolmock`), `toolmock run`'s results
//! document (`toolmock.run`) and `toolmock serve --http` in the background
//! (`toolmock.serve`) — each the CLI's own code (`toolmock_cli`), called
//! with the command's own arguments, so they behave as the command does.

use crate::convert;
use crate::errors::{self, BindingCode, ToolmockError};
use pyo3::prelude::*;
use pyo3::types::PyList;
use serde::Serialize;
use std::ffi::OsString;
use std::sync::{Mutex, PoisonError};
use toolmock_cli::{Background, Refusal};

/// What a panic ends a Rust binary with; `main` answers it too, after the
/// panic hook printed the panic as the binary's would.
const PANIC_EXIT: u8 = 101;

/// Runs the `toolmock` command with `argv` (`argv[0]` is the program) and
/// returns its exit status. Everything is printed on the process's stdout
/// and stderr, as the binary prints it.
#[pyfunction]
pub(crate) fn _main(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    py.detach(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| toolmock_cli::main(argv)))
            .unwrap_or(PANIC_EXIT)
    })
}

/// `toolmock run`'s results document (as `--json` prints it) as Python
/// objects; `args` are the command's arguments after `run`.
#[pyfunction]
pub(crate) fn _run(py: Python<'_>, args: Vec<OsString>) -> PyResult<Bound<'_, PyAny>> {
    let results = py.detach(|| toolmock_cli::run_results(args));
    match results {
        Ok(results) => document(py, &results),
        Err(refusal) => Err(refused(py, refusal)),
    }
}

/// The attempts `toolmock run` would play of the simulation file at `path`:
/// `(case, attempts)` per case, in document order, read by the simulation
/// loader (the pytest plugin's items). A file the loader finds problems in
/// raises `SimulationError` with every problem.
#[pyfunction]
pub(crate) fn _plan(py: Python<'_>, path: OsString) -> PyResult<Vec<(String, u32)>> {
    let read = py.detach(|| toolmock_simulation::read_file(std::path::Path::new(&path)));
    let loaded = match read {
        Ok(loaded) if loaded.problems.is_empty() => loaded,
        Ok(loaded) => return Err(refused(py, Refusal::Problems(loaded.problems))),
        Err(problems) => return Err(refused(py, Refusal::Problems(problems))),
    };
    let document = &loaded.simulation.document;
    Ok(document
        .cases
        .iter()
        .map(|c| (c.name.clone(), c.attempts.unwrap_or(document.attempts)))
        .collect())
}

/// A serialized document as Python objects (the values `json.loads` gives
/// for the text the CLI prints).
fn document<'py, T: Serialize>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    let value = serde_json::to_value(value).map_err(|e| {
        errors::raise::<ToolmockError>(py, BindingCode::CommandFailed.as_str(), None, e.to_string())
    })?;
    convert::to_python(py, &value)
}

/// A refusal as the package's exceptions: `SimulationError` with every
/// problem, `ToolmockError` otherwise.
fn refused(py: Python<'_>, refusal: Refusal) -> PyErr {
    match refusal {
        Refusal::Options(message) => {
            errors::raise::<ToolmockError>(py, BindingCode::InvalidOption.as_str(), None, message)
        }
        Refusal::Failed { code, message } => errors::raise::<ToolmockError>(
            py,
            code.unwrap_or(BindingCode::CommandFailed.as_str()),
            None,
            message,
        ),
        Refusal::Problems(problems) => match simulation_error(py, &problems) {
            Ok(err) | Err(err) => err,
        },
    }
}

/// `toolmock.simulation.SimulationError` (a Python class) with code
/// `invalid_simulation`, the problems in `problems` and in its message.
fn simulation_error(
    py: Python<'_>,
    problems: &[toolmock_simulation::FileProblem],
) -> PyResult<PyErr> {
    let file = problems.first().map_or("", |p| p.file.as_str());
    let mut message = format!(
        "the simulation cannot be used: {} problem{}",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    );
    for p in problems {
        message.push_str(&format!("\n  {p}"));
    }
    let class = py
        .import("toolmock.simulation")?
        .getattr("SimulationError")?;
    let error = class.call1((BindingCode::InvalidSimulation.as_str(), file, "", message))?;
    let list = PyList::new(py, problems.iter().map(crate::Problem::in_file))?;
    error.setattr("problems", list)?;
    Ok(PyErr::from_value(error))
}

/// `toolmock serve --http` running in the background (the Python class
/// `toolmock.Server` wraps it).
#[pyclass(module = "toolmock._toolmock", name = "_Server")]
#[derive(Debug)]
pub(crate) struct Server {
    /// `None` once stopped.
    running: Mutex<Option<Background>>,
    address: String,
    case: String,
}

impl Server {
    fn with<T>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Background) -> Result<T, Refusal> + Send,
    ) -> PyResult<T>
    where
        T: Send,
    {
        let outcome = py.detach(|| {
            let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
            running.as_ref().map(f)
        });
        match outcome {
            Some(Ok(value)) => Ok(value),
            Some(Err(refusal)) => Err(refused(py, refusal)),
            None => Err(errors::raise::<ToolmockError>(
                py,
                BindingCode::ServerStopped.as_str(),
                None,
                "the server was stopped".into(),
            )),
        }
    }
}

#[pymethods]
impl Server {
    /// Starts serving; `args` are the command's arguments after `serve`.
    #[new]
    fn new(py: Python<'_>, args: Vec<OsString>) -> PyResult<Self> {
        let started = py.detach(|| Background::start(args));
        let background = started.map_err(|refusal| refused(py, refusal))?;
        Ok(Server {
            address: background.addr().to_string(),
            case: background.case().to_owned(),
            running: Mutex::new(Some(background)),
        })
    }

    /// `HOST:PORT` it listens on (an IPv6 host in brackets).
    #[getter]
    fn address(&self) -> &str {
        &self.address
    }

    /// The served case.
    #[getter]
    fn case(&self) -> &str {
        &self.case
    }

    /// Starts a new attempt and returns its number.
    fn new_attempt(&self, py: Python<'_>) -> PyResult<u32> {
        self.with(py, Background::new_attempt)
    }

    /// Ends attempt `number`, judges it and returns its result.
    fn finish<'py>(&self, py: Python<'py>, number: u32) -> PyResult<Bound<'py, PyAny>> {
        let result = self.with(py, |b| b.finish(number))?;
        document(py, &result)
    }

    /// The results document of the attempts ended so far.
    fn results<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let results = self.with(py, Background::results)?;
        document(py, &results)
    }

    /// Stops serving, ends the open attempts and returns the results
    /// document; None when it was stopped already.
    fn stop<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let stopped = py.detach(|| {
            self.running
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
                .map(Background::stop)
        });
        match stopped {
            None => Ok(None),
            Some(Ok(results)) => document(py, &results).map(Some),
            Some(Err(refusal)) => Err(refused(py, refusal)),
        }
    }

    /// Whether it still serves.
    #[getter]
    fn running(&self) -> bool {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }
}
