//! One attempt's state across calls, as the dispatcher keeps it: each call
//! answered by the dispatcher's own sandbox step
//! (`toolmock_runtime::dispatcher::sandbox_answer`), its writes committed
//! only when it passed.

use crate::convert::{self, Ints};
use crate::definition::{self, CompiledDefinition};
use crate::errors::{self, AttemptError, BindingCode};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use toolmock_evaluator::{
    CallError, CompiledContract, LayeredOutcome, Overlay, StateView, json_equal,
};
use toolmock_runtime::dispatcher::sandbox_answer;

/// One operation of an attempt: its contract and, unless it was left
/// without one, its checked definition.
#[derive(Debug)]
struct Operation {
    definition: Option<Arc<toolmock_evaluator::CompiledDefinition>>,
    contract: Arc<CompiledContract>,
}

/// What one call of an attempt answered.
#[derive(Debug)]
enum Answer {
    Ok {
        variant: String,
        rule: Option<usize>,
        result: Value,
        delay_ms: u32,
    },
    Failed {
        class: &'static str,
        code: &'static str,
        path: Option<String>,
        message: String,
    },
    /// (Version 2) the mock answered a domain error; no state changed.
    Domain {
        variant: String,
        rule: Option<usize>,
        error: toolmock_evaluator::DomainError,
        delay_ms: u32,
    },
}

/// One recorded call.
#[derive(Debug)]
struct Record {
    operation: String,
    arguments: Value,
    answer: Answer,
}

/// The operations one attempt can call and its fixture state, kept across
/// calls the way toolmock's dispatcher keeps them.
#[pyclass(module = "toolmock", name = "Attempt")]
#[derive(Debug)]
pub(crate) struct Attempt {
    /// By name, in the order given.
    operations: Arc<Vec<(String, Operation)>>,
    index: Arc<HashMap<String, usize>>,
    variants: HashMap<String, String>,
    initial: Arc<Map<String, Value>>,
    state: Map<String, Value>,
    records: Vec<Record>,
    elapsed_ms: u64,
}

impl Attempt {
    fn record_failure(
        &mut self,
        operation: &str,
        arguments: Value,
        class: &'static str,
        code: &'static str,
        path: Option<String>,
        message: String,
    ) {
        self.records.push(Record {
            operation: operation.to_owned(),
            arguments,
            answer: Answer::Failed {
                class,
                code,
                path,
                message,
            },
        });
    }
}

impl Attempt {
    /// A call the attempt cannot route (`unknown_tool`, `missing_definition`),
    /// recorded like every call, as the harness error it is.
    fn routing_fault(
        &mut self,
        py: Python<'_>,
        operation: &str,
        arguments: Value,
        code: BindingCode,
        message: String,
    ) -> PyErr {
        let err = errors::harness(py, code, None, message.clone());
        self.record_failure(
            operation,
            arguments,
            "harness_error",
            code.as_str(),
            None,
            message,
        );
        err
    }
}

fn call_failed(
    py: Python<'_>,
    e: &CallError,
) -> (PyErr, &'static str, &'static str, Option<String>, String) {
    (
        errors::call_error(py, e),
        e.class().as_str(),
        e.code(),
        e.path().map(str::to_owned),
        e.to_string(),
    )
}

#[pymethods]
impl Attempt {
    /// Starts an attempt.
    ///
    /// `contracts` maps each operation's name to its contract (a `dict`, JSON
    /// text or a `Contract`); `definitions` maps names to definitions (a
    /// `dict`, JSON text, or a `CompiledDefinition` compiled against the same
    /// contract), each checked against its contract. An operation with a
    /// contract and no definition answers every call with the harness error
    /// `missing_definition`. The initial state is the union of the
    /// definitions' `initial_state`s; two giving one key different values
    /// raise `AttemptError` (`state_conflict`, naming both). `variants` maps
    /// names to the variant their calls use (default: each definition's
    /// `default_variant`).
    #[new]
    #[pyo3(signature = (definitions, contracts, variants=None))]
    fn new(
        py: Python<'_>,
        definitions: &Bound<'_, PyDict>,
        contracts: &Bound<'_, PyDict>,
        variants: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let mut compiled_contracts: HashMap<String, Arc<CompiledContract>> = HashMap::new();
        let mut order: Vec<String> = Vec::new();
        for (name, contract) in contracts.iter() {
            let name: String = name.extract()?;
            let compiled = definition::compile_contract(py, Some(&contract))?.ok_or_else(|| {
                errors::raise::<AttemptError>(
                    py,
                    BindingCode::MissingContract.as_str(),
                    None,
                    format!("{name:?}: the contract is None"),
                )
            })?;
            order.push(name.clone());
            compiled_contracts.insert(name, compiled);
        }
        let mut compiled_definitions: HashMap<String, Arc<toolmock_evaluator::CompiledDefinition>> =
            HashMap::new();
        let mut definition_order: Vec<String> = Vec::new();
        for (name, given) in definitions.iter() {
            let name: String = name.extract()?;
            let Some(contract) = compiled_contracts.get(&name) else {
                return Err(errors::raise::<AttemptError>(
                    py,
                    BindingCode::MissingContract.as_str(),
                    None,
                    format!("the definition of {name:?} has no contract in `contracts`"),
                ));
            };
            let compiled = if let Ok(already) = given.cast::<CompiledDefinition>() {
                let already = already.get();
                match &already.contract {
                    Some(c) if c.hash() == contract.hash() => already.definition.clone(),
                    _ => {
                        return Err(errors::raise::<AttemptError>(
                            py,
                            BindingCode::MissingContract.as_str(),
                            None,
                            format!(
                                "the CompiledDefinition given for {name:?} was not compiled against its contract; pass the definition itself, or compile it with that contract"
                            ),
                        ));
                    }
                }
            } else {
                Arc::new(crate::compile_checked(
                    py,
                    &given,
                    Some(contract),
                    &format!("the definition of {name:?}"),
                )?)
            };
            definition_order.push(name.clone());
            compiled_definitions.insert(name, compiled);
        }
        // The union of the initial states, in the order the definitions were given.
        let mut initial = Map::new();
        let mut owner: HashMap<String, String> = HashMap::new();
        let mut conflicts = Vec::new();
        for name in &definition_order {
            for (key, value) in compiled_definitions[name].initial_state() {
                match initial.get(key) {
                    Some(existing) if !json_equal(existing, value) => conflicts.push(format!(
                        "state_conflict on {key:?} between {} and {name}",
                        owner.get(key).map_or("?", String::as_str)
                    )),
                    Some(_) => {}
                    None => {
                        initial.insert(key.clone(), value.clone());
                        owner.insert(key.clone(), name.clone());
                    }
                }
            }
        }
        if !conflicts.is_empty() {
            return Err(errors::raise::<AttemptError>(
                py,
                BindingCode::StateConflict.as_str(),
                None,
                conflicts.join("; "),
            ));
        }
        let mut operations = Vec::with_capacity(order.len());
        let mut index = HashMap::with_capacity(order.len());
        for name in order {
            let contract = compiled_contracts
                .remove(&name)
                .expect("every name in order has its contract");
            index.insert(name.clone(), operations.len());
            operations.push((
                name.clone(),
                Operation {
                    definition: compiled_definitions.remove(&name),
                    contract,
                },
            ));
        }
        let chosen = match variants {
            Some(variants) => read_variants(variants)?,
            None => HashMap::new(),
        };
        Ok(Attempt {
            operations: Arc::new(operations),
            index: Arc::new(index),
            variants: chosen,
            state: initial.clone(),
            initial: Arc::new(initial),
            records: Vec::new(),
            elapsed_ms: 0,
        })
    }

    /// Calls an operation and returns exactly its rendered result.
    ///
    /// As the dispatcher does: the operation must be one of the attempt's
    /// (else `HarnessError` `unknown_tool`) with a definition (else
    /// `missing_definition`); the arguments are validated against the input
    /// schema first (`ToolInputError`), the mock is evaluated against the
    /// attempt's state, the result is validated against the output schema
    /// (`HarnessError` `output_schema_violation`), and only then is the
    /// state updated. A failed call changes no state. Every call, failed or
    /// not, is recorded in `calls`. `variant` overrides the attempt's
    /// variant for this call.
    #[pyo3(signature = (operation, arguments=None, variant=None))]
    fn call<'py>(
        &mut self,
        py: Python<'py>,
        operation: &str,
        arguments: Option<&Bound<'py, PyAny>>,
        variant: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let arguments = match arguments {
            Some(a) => convert::to_value(a, Ints::Nearest)
                .map_err(|e| errors::refused(py, e, "the arguments"))?,
            None => Value::Object(Map::new()),
        };
        let operations = Arc::clone(&self.operations);
        let Some(&at) = self.index.get(operation) else {
            let message = format!(
                "the attempt has no operation {operation:?}; it has {}",
                operations
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            return Err(self.routing_fault(
                py,
                operation,
                arguments,
                BindingCode::UnknownTool,
                message,
            ));
        };
        let slot = &operations[at].1;
        let Some(definition) = &slot.definition else {
            let message = format!(
                "{operation:?} has no definition in this attempt, so no call to it can be answered"
            );
            return Err(self.routing_fault(
                py,
                operation,
                arguments,
                BindingCode::MissingDefinition,
                message,
            ));
        };
        let variant = variant.or_else(|| self.variants.get(operation).map(String::as_str));
        // The dispatcher's own sandbox step, over this attempt's state.
        let answered = sandbox_answer(
            &slot.contract,
            definition,
            &arguments,
            StateView::plain(&self.state),
            variant,
        );
        match answered {
            Ok(LayeredOutcome {
                variant,
                rule,
                error: Some(error),
                delay_ms,
                ..
            }) => {
                let variant = variant.to_owned();
                let raised = errors::domain_error(py, &error);
                self.elapsed_ms += u64::from(delay_ms);
                self.records.push(Record {
                    operation: operation.to_owned(),
                    arguments,
                    answer: Answer::Domain {
                        variant,
                        rule,
                        error,
                        delay_ms,
                    },
                });
                Err(raised)
            }
            Ok(outcome) => {
                let result = convert::to_python(py, &outcome.result)?;
                let variant = outcome.variant.to_owned();
                // Committed only now that the call passed every check, as
                // the backend's locked step commits it.
                let mut written = Overlay::new();
                for (key, patch) in outcome.patches {
                    written.set(key, patch);
                }
                written.apply_onto(&mut self.state);
                self.elapsed_ms += u64::from(outcome.delay_ms);
                self.records.push(Record {
                    operation: operation.to_owned(),
                    arguments,
                    answer: Answer::Ok {
                        variant,
                        rule: outcome.rule,
                        result: outcome.result,
                        delay_ms: outcome.delay_ms,
                    },
                });
                Ok(result)
            }
            Err(e) => {
                let (err, class, code, path, message) = call_failed(py, &e);
                self.record_failure(operation, arguments, class, code, path, message);
                Err(err)
            }
        }
    }

    /// The attempt's fixture state now (a new dict).
    #[getter]
    fn state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        convert::map_to_python(py, &self.state)
    }

    /// The state the attempt started with (a new dict).
    #[getter]
    fn initial_state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        convert::map_to_python(py, &self.initial)
    }

    /// The operations' names, in the order the contracts were given.
    #[getter]
    fn operations(&self) -> Vec<String> {
        self.operations.iter().map(|(n, _)| n.clone()).collect()
    }

    /// The sum of the simulated delays of the calls answered so far.
    #[getter]
    fn elapsed_ms(&self) -> u64 {
        self.elapsed_ms
    }

    /// Every call so far, in order: a dict with `operation`, `arguments`,
    /// `status` (`"ok"`, `"tool_input_error"`, `"harness_error"` or, in
    /// version 2, `"domain_error"`) and either `variant`, `rule`, `result`,
    /// `delay_ms`, or `error` (`class`, `code`, `path`, `message`), or for a
    /// domain error `variant`, `rule`, `error` (`code`, `message`, `data`?)
    /// and `delay_ms`.
    #[getter]
    fn calls<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for record in &self.records {
            list.append(record_dict(py, record)?)?;
        }
        Ok(list)
    }

    /// The recorded calls that ended in a harness error: an attempt with
    /// any can never pass.
    #[getter]
    fn harness_errors<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for record in &self.records {
            if matches!(
                record.answer,
                Answer::Failed {
                    class: "harness_error",
                    ..
                }
            ) {
                list.append(record_dict(py, record)?)?;
            }
        }
        Ok(list)
    }

    /// A new attempt over the same compiled operations and variants, from
    /// the initial state, with no calls (nothing is compiled again).
    #[pyo3(signature = (variants=None))]
    fn restart(&self, variants: Option<&Bound<'_, PyDict>>) -> PyResult<Attempt> {
        let variants = match variants {
            Some(variants) => read_variants(variants)?,
            None => self.variants.clone(),
        };
        Ok(Attempt {
            operations: Arc::clone(&self.operations),
            index: Arc::clone(&self.index),
            variants,
            initial: Arc::clone(&self.initial),
            state: (*self.initial).clone(),
            records: Vec::new(),
            elapsed_ms: 0,
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "Attempt(operations={:?}, calls={}, harness_errors={})",
            self.operations(),
            self.records.len(),
            self.records
                .iter()
                .filter(|r| matches!(
                    r.answer,
                    Answer::Failed {
                        class: "harness_error",
                        ..
                    }
                ))
                .count()
        )
    }
}

/// `{"operation": "variant"}` as a map.
fn read_variants(variants: &Bound<'_, PyDict>) -> PyResult<HashMap<String, String>> {
    let mut chosen = HashMap::new();
    for (name, variant) in variants.iter() {
        chosen.insert(name.extract::<String>()?, variant.extract::<String>()?);
    }
    Ok(chosen)
}

fn record_dict<'py>(py: Python<'py>, record: &Record) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("operation", PyString::new(py, &record.operation))?;
    dict.set_item("arguments", convert::to_python(py, &record.arguments)?)?;
    match &record.answer {
        Answer::Ok {
            variant,
            rule,
            result,
            delay_ms,
        } => {
            dict.set_item("status", "ok")?;
            dict.set_item("variant", variant)?;
            dict.set_item("rule", rule)?;
            dict.set_item("result", convert::to_python(py, result)?)?;
            dict.set_item("delay_ms", delay_ms)?;
        }
        Answer::Failed {
            class,
            code,
            path,
            message,
        } => {
            dict.set_item("status", class)?;
            let error = PyDict::new(py);
            error.set_item("class", class)?;
            error.set_item("code", code)?;
            error.set_item("path", path)?;
            error.set_item("message", message)?;
            dict.set_item("error", error)?;
        }
        Answer::Domain {
            variant,
            rule,
            error,
            delay_ms,
        } => {
            dict.set_item("status", "domain_error")?;
            dict.set_item("variant", variant)?;
            dict.set_item("rule", rule)?;
            dict.set_item("error", convert::to_python(py, &error.to_json())?)?;
            dict.set_item("delay_ms", delay_ms)?;
        }
    }
    Ok(dict)
}
