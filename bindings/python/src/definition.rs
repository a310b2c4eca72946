//! A compiled definition, what one call answers, and one problem.

use crate::build::{Builder, Constants, Failed};
use crate::convert::{self, Ints};
use crate::errors;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use serde_json::{Map, Value};
use std::sync::Arc;
use toolmock_contract::{OperationContract, ProblemCode};
use toolmock_evaluator::{
    BuiltOutcome, Call, CompiledContract, Diagnostics, Outcome as EvalOutcome,
};

/// One problem of a definition, a manifest or a simulation: `code`, `path`
/// (a JSON pointer, `""` for the whole document), `message`, `severity`
/// (`"error"`, or `"warning"` for the warnings of a passing check), and
/// `file`: for a simulation's problems, the file the pointer is in (the
/// simulation file or a file it names), else None.
#[pyclass(frozen, module = "toolmock", name = "Problem", get_all)]
#[derive(Debug, Clone)]
pub(crate) struct Problem {
    code: String,
    path: String,
    message: String,
    severity: &'static str,
    file: Option<String>,
}

impl Problem {
    pub(crate) fn of<C: ProblemCode>(
        p: &toolmock_contract::Problem<C>,
        severity: &'static str,
    ) -> Self {
        Problem {
            code: p.code.as_str().to_owned(),
            path: p.path.clone(),
            message: p.message.clone(),
            severity,
            file: None,
        }
    }

    /// A simulation file's problem, in its file.
    pub(crate) fn in_file(p: &toolmock_simulation::FileProblem) -> Self {
        Problem {
            code: p.code.to_owned(),
            path: p.path.clone(),
            message: p.message.clone(),
            severity: "error",
            file: Some(p.file.clone()),
        }
    }
}

#[pymethods]
impl Problem {
    fn __repr__(&self) -> String {
        let file = self
            .file
            .as_ref()
            .map_or(String::new(), |f| format!(", file={f:?}"));
        format!(
            "Problem(code={:?}, path={:?}, message={:?}, severity={:?}{file})",
            self.code, self.path, self.message, self.severity
        )
    }

    /// `PATH: code: message` (`PATH: warning: …` for a warning), after
    /// `FILE: ` for a simulation's problem: what the CLI prints.
    fn __str__(&self) -> String {
        let path = if self.path.is_empty() {
            "/"
        } else {
            &self.path
        };
        let file = self
            .file
            .as_ref()
            .map_or(String::new(), |f| format!("{f}: "));
        match self.severity {
            "warning" => format!("{file}{path}: warning: {}: {}", self.code, self.message),
            _ => format!("{file}{path}: {}: {}", self.code, self.message),
        }
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Problem>().is_ok_and(|o| {
            let o = o.get();
            (&o.code, &o.path, &o.message, o.severity, &o.file)
                == (
                    &self.code,
                    &self.path,
                    &self.message,
                    self.severity,
                    &self.file,
                )
        })
    }
}

/// A definition given as a `dict` (or any JSON value) or as JSON text
/// (`str`/`bytes`: repeated keys and syntax errors are then found exactly
/// as the CLI finds them in a file).
pub(crate) fn read_definition(
    py: Python<'_>,
    definition: &Bound<'_, PyAny>,
) -> PyResult<Result<Value, Diagnostics>> {
    if let Ok(text) = definition.cast::<PyString>() {
        return Ok(toolmock_evaluator::parse_definition(
            text.to_str()?.as_bytes(),
        ));
    }
    if let Ok(bytes) = definition.cast::<PyBytes>() {
        return Ok(toolmock_evaluator::parse_definition(bytes.as_bytes()));
    }
    convert::to_value(definition, Ints::Nearest)
        .map(Ok)
        .map_err(|e| errors::refused(py, e, "the definition"))
}

/// A contract given as a `dict` or as JSON text, read and compiled.
pub(crate) fn read_contract(
    py: Python<'_>,
    contract: &Bound<'_, PyAny>,
) -> PyResult<OperationContract> {
    let read = if let Ok(text) = contract.cast::<PyString>() {
        OperationContract::from_json_str(text.to_str()?)
    } else if let Ok(bytes) = contract.cast::<PyBytes>() {
        OperationContract::from_json_slice(bytes.as_bytes())
    } else {
        let value = convert::to_value(contract, Ints::Exact)
            .map_err(|e| errors::refused(py, e, "the contract"))?;
        OperationContract::from_value(value)
    };
    read.map_err(|e| errors::contract_error(py, &e))
}

/// A contract read and its schemas compiled (`None` stays `None`).
pub(crate) fn compile_contract(
    py: Python<'_>,
    contract: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<Arc<CompiledContract>>> {
    let Some(contract) = contract.filter(|c| !c.is_none()) else {
        return Ok(None);
    };
    if let Ok(compiled) = contract.cast::<Contract>() {
        return Ok(Some(compiled.get().compiled.clone()));
    }
    let contract = read_contract(py, contract)?;
    CompiledContract::new(contract)
        .map(|c| Some(Arc::new(c)))
        .map_err(|e| errors::schema_error(py, &e))
}

/// An operation contract with its schemas compiled once; pass it wherever a
/// contract is taken to skip reading and compiling it again.
#[pyclass(frozen, module = "toolmock", name = "Contract")]
#[derive(Debug)]
pub(crate) struct Contract {
    pub(crate) compiled: Arc<CompiledContract>,
}

#[pymethods]
impl Contract {
    /// Reads a contract (a `dict` or JSON text) and compiles its two schemas.
    #[new]
    fn new(py: Python<'_>, contract: &Bound<'_, PyAny>) -> PyResult<Self> {
        let compiled = compile_contract(py, Some(contract))?.ok_or_else(|| {
            errors::raise::<errors::ContractError>(
                py,
                "wrong_shape",
                None,
                "a contract is required, not None".into(),
            )
        })?;
        Ok(Contract { compiled })
    }

    /// The contract hash: 64 lowercase hex digits.
    #[getter]
    fn hash(&self) -> &str {
        self.compiled.hash().as_str()
    }

    /// The operation's runtime name.
    #[getter]
    fn name(&self) -> &str {
        &self.compiled.contract().operation.name
    }

    /// The contract as a `dict`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let c = self.compiled.contract();
        let value = serde_json::to_value(c).unwrap_or(Value::Null);
        convert::to_python(py, &value)
    }

    fn __repr__(&self) -> String {
        format!("Contract(name={:?}, hash={:?})", self.name(), self.hash())
    }
}

/// What one call answered, in full: the variant and rule used, the result,
/// the post-call state and the simulated delay; for a version-2 domain
/// error, `error` is `{"code", "message", "data"?}` and `result` is None.
#[pyclass(frozen, module = "toolmock", name = "Outcome", get_all)]
#[derive(Debug)]
pub(crate) struct Outcome {
    variant: String,
    rule: Option<usize>,
    result: Py<PyAny>,
    error: Py<PyAny>,
    state: Py<PyAny>,
    delay_ms: u32,
}

#[pymethods]
impl Outcome {
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Outcome(variant={:?}, rule={:?}, result={}, state={}, delay_ms={})",
            self.variant,
            self.rule,
            self.result
                .bind(py)
                .repr()
                .map(|r| r.to_string())
                .unwrap_or_default(),
            self.state
                .bind(py)
                .repr()
                .map(|r| r.to_string())
                .unwrap_or_default(),
            self.delay_ms
        )
    }
}

/// A mock definition that passed its check, compiled once; evaluate calls
/// with it as often as needed. Immutable and safe to share between threads.
#[pyclass(frozen, module = "toolmock", name = "CompiledDefinition")]
#[derive(Debug)]
pub(crate) struct CompiledDefinition {
    pub(crate) definition: Arc<toolmock_evaluator::CompiledDefinition>,
    pub(crate) contract: Option<Arc<CompiledContract>>,
    /// The Python objects of the results' constant parts (`crate::build`).
    pub(crate) constants: Constants,
}

impl CompiledDefinition {
    /// Evaluates one call: input validated first and result after when there
    /// is a contract.
    pub(crate) fn answer<'d>(
        &'d self,
        input: &Value,
        state: &Map<String, Value>,
        variant: Option<&str>,
    ) -> Result<EvalOutcome<'d>, toolmock_evaluator::CallError> {
        let call = Call {
            input,
            state,
            variant,
        };
        match &self.contract {
            Some(contract) => {
                toolmock_evaluator::evaluate_with_contract(&self.definition, contract, &call)
            }
            None => toolmock_evaluator::evaluate(&self.definition, &call),
        }
    }

    /// The call's input and pre-call state as values (`None`: the initial state).
    fn read_call(
        &self,
        py: Python<'_>,
        input: &Bound<'_, PyAny>,
        state: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<(Value, Option<Map<String, Value>>)> {
        let input = convert::to_value(input, Ints::Nearest)
            .map_err(|e| errors::refused(py, e, "the input"))?;
        let state = match state {
            Some(state) => Some(
                convert::dict_to_map(state, Ints::Nearest)
                    .map_err(|e| errors::refused(py, e, "the state"))?,
            ),
            None => None,
        };
        Ok((input, state))
    }
}

/// One call's answer, its result and post-call state as Python objects.
struct Answered<'d, 'py> {
    variant: &'d str,
    rule: Option<usize>,
    result: Bound<'py, PyAny>,
    /// The domain error answered instead of a result (version 2).
    error: Option<toolmock_evaluator::DomainError>,
    state: Bound<'py, PyDict>,
    delay_ms: u32,
}

impl CompiledDefinition {
    /// Evaluates one call given as Python objects. The post-call state is
    /// built from the state the evaluator read (the given one converted, or
    /// the initial state) with the updates applied, so it holds exactly the
    /// values the CLI would print — an `int` beyond 64 bits as the double
    /// the evaluator saw, a tuple as a list — sharing with the given state
    /// only the immutable objects that hold exactly those values. Without a
    /// contract the result is built straight as Python objects
    /// (`crate::build`).
    fn run<'d, 'py>(
        &'d self,
        py: Python<'py>,
        input: &Bound<'py, PyAny>,
        state: Option<&Bound<'py, PyDict>>,
        variant: Option<&str>,
    ) -> PyResult<Answered<'d, 'py>> {
        let (input, pre) = self.read_call(py, input, state)?;
        let mut post = pre.unwrap_or_else(|| self.definition.initial_state().clone());
        let built = if self.contract.is_some() {
            // The output schema reads the result as a value.
            let outcome = self
                .answer(&input, &post, variant)
                .map_err(|e| errors::call_error(py, &e))?;
            BuiltOutcome {
                result: Some(convert::to_python(py, &outcome.result)?),
                variant: outcome.variant,
                rule: outcome.rule,
                error: outcome.error,
                state_updates: outcome.state_updates,
                delay_ms: outcome.delay_ms,
            }
        } else {
            let call = Call {
                input: &input,
                state: &post,
                variant,
            };
            let mut builder = Builder {
                py,
                constants: &self.constants,
            };
            toolmock_evaluator::evaluate_into(&self.definition, &call, &mut builder).map_err(
                |failed| match failed {
                    Failed::Call(e) => errors::call_error(py, &e),
                    Failed::Python(e) => e,
                },
            )?
        };
        let (variant, rule, delay_ms) = (built.variant, built.rule, built.delay_ms);
        let error = built.error.clone();
        let changed: Vec<&str> = built.state_updates.iter().map(|(k, _)| *k).collect();
        // A domain error has no result (None) and no state updates: the
        // post-call state is the pre-call one.
        let result = built
            .commit_to(&mut post)
            .unwrap_or_else(|| py.None().into_bound(py));
        Ok(Answered {
            variant,
            rule,
            result,
            error,
            state: post_state(py, state, &post, &changed)?,
            delay_ms,
        })
    }
}

/// The post-call state as a new `dict`: made from the caller's pre-call
/// state where it is unchanged (its immutable objects shared, as they hold
/// exactly what the evaluator read), converted where the call changed it
/// or where no state was given.
fn post_state<'py>(
    py: Python<'py>,
    pre: Option<&Bound<'py, PyDict>>,
    post: &Map<String, Value>,
    changed: &[&str],
) -> PyResult<Bound<'py, PyDict>> {
    match pre {
        Some(pre) => convert::map_like(pre, post, changed),
        None => convert::map_to_python(py, post),
    }
}

#[pymethods]
impl CompiledDefinition {
    /// Evaluates one call and returns `(result, new_state, delay_ms)`.
    ///
    /// `state` is the pre-call state (default: the definition's
    /// `initial_state`); it is not changed: `new_state` is a new dict, the
    /// post-call state (each key the call set replaced). `variant`
    /// defaults to the definition's `default_variant`. With a contract, the
    /// input is validated before anything else and the result after it is
    /// rendered. Raises `ToolInputError` or `HarnessError`, or (version 2)
    /// `DomainError` when the mock answered a domain error.
    #[pyo3(signature = (input, state=None, variant=None))]
    fn evaluate<'py>(
        &self,
        py: Python<'py>,
        input: &Bound<'py, PyAny>,
        state: Option<&Bound<'py, PyDict>>,
        variant: Option<&str>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyDict>, u32)> {
        let answered = self.run(py, input, state, variant)?;
        if let Some(error) = &answered.error {
            return Err(errors::domain_error(py, error));
        }
        Ok((answered.result, answered.state, answered.delay_ms))
    }

    /// Like `evaluate`, but returns an `Outcome` that also names the
    /// variant and the rule (an index into the variant's `rules`, or None).
    #[pyo3(signature = (input, state=None, variant=None))]
    fn evaluate_outcome(
        &self,
        py: Python<'_>,
        input: &Bound<'_, PyAny>,
        state: Option<&Bound<'_, PyDict>>,
        variant: Option<&str>,
    ) -> PyResult<Outcome> {
        let answered = self.run(py, input, state, variant)?;
        let error = match &answered.error {
            Some(error) => convert::to_python(py, &error.to_json())?.unbind(),
            None => py.None(),
        };
        Ok(Outcome {
            variant: answered.variant.to_owned(),
            rule: answered.rule,
            result: answered.result.unbind(),
            error,
            state: answered.state.into_any().unbind(),
            delay_ms: answered.delay_ms,
        })
    }

    /// The definition's `initial_state` (a new dict).
    #[getter]
    fn initial_state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        convert::map_to_python(py, self.definition.initial_state())
    }

    /// The variant used when a call names none.
    #[getter]
    fn default_variant(&self) -> &str {
        self.definition.default_variant()
    }

    /// Every variant's name, in the definition's order.
    #[getter]
    fn variant_names(&self) -> Vec<String> {
        self.definition.variant_names().map(str::to_owned).collect()
    }

    /// The contract the definition was checked against, or None.
    #[getter]
    fn contract(&self) -> Option<Contract> {
        self.contract.as_ref().map(|c| Contract {
            compiled: c.clone(),
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "CompiledDefinition(variants={:?}, default_variant={:?}, contract={})",
            self.variant_names(),
            self.default_variant(),
            self.contract
                .as_ref()
                .map_or("None".to_owned(), |c| format!(
                    "{:?}",
                    c.contract().operation.name
                ))
        )
    }
}
