//! A call's result built straight as Python objects (the evaluator's
//! `evaluate_into`), from Python objects a compiled definition made once.
//!
//! `str`, `int`, `float`, `bool` and `None` are immutable, so the objects of
//! everything constant in a definition's results — every key of an object
//! (interned strings, their hashes computed once) and every literal scalar
//! — are built when the definition is compiled ([`Constants`]) and shared
//! by every call. What the caller may change is never shared: each call
//! gets new `dict`s and `list`s, a literal object or array included (built
//! from its prepared keys and scalars). Only the operators are rendered,
//! and what they give is converted as `convert::to_python` converts it.

use crate::convert;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use serde_json::Value;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use toolmock_evaluator::{Build, CallError, CompiledDefinition, Constant, Shape};

/// A literal part of a result, as the Python objects that make it.
#[derive(Debug)]
enum Plan {
    /// An immutable object, shared by every call.
    Shared(Py<PyAny>),
    /// A new `list` per call.
    List(Box<[Plan]>),
    /// A new `dict` per call, with these keys in this order.
    Dict(Box<[(Py<PyString>, Plan)]>),
}

impl Plan {
    fn of(py: Python<'_>, value: &Value) -> PyResult<Plan> {
        Ok(match value {
            Value::Array(items) => Plan::List(
                items
                    .iter()
                    .map(|item| Plan::of(py, item))
                    .collect::<PyResult<_>>()?,
            ),
            Value::Object(map) => Plan::Dict(
                map.iter()
                    .map(|(key, item)| {
                        Ok((PyString::intern(py, key).unbind(), Plan::of(py, item)?))
                    })
                    .collect::<PyResult<_>>()?,
            ),
            scalar => Plan::Shared(convert::to_python(py, scalar)?.unbind()),
        })
    }

    fn build<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(match self {
            Plan::Shared(object) => object.bind(py).clone(),
            Plan::List(items) => {
                let built = items
                    .iter()
                    .map(|item| item.build(py))
                    .collect::<PyResult<Vec<_>>>()?;
                PyList::new(py, built)?.into_any()
            }
            Plan::Dict(fields) => {
                let dict = PyDict::new(py);
                for (key, item) in fields.iter() {
                    dict.set_item(key.bind(py), item.build(py)?)?;
                }
                dict.into_any()
            }
        })
    }
}

/// Hashes an address, which is already as good as a hash.
#[derive(Debug, Default, Clone, Copy)]
struct Address(u64);

impl Hasher for Address {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, n: usize) {
        // Fibonacci hashing: the low bits of an aligned address are zeros.
        self.0 = (n as u64)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(32);
    }
}

type ByAddress<T> = HashMap<usize, T, BuildHasherDefault<Address>>;

/// The Python objects of a compiled definition's constant result parts,
/// by the address the evaluator hands them over at: built once, when the
/// definition is compiled, then only read (shared between threads like the
/// definition itself).
#[derive(Debug, Default)]
pub(crate) struct Constants {
    values: ByAddress<Plan>,
    keys: ByAddress<Box<[Py<PyString>]>>,
}

impl Constants {
    /// Prepares every constant part of `definition`'s results.
    pub(crate) fn of(py: Python<'_>, definition: &CompiledDefinition) -> PyResult<Constants> {
        let mut constants = Constants::default();
        let mut failed = None;
        definition.for_each_constant(|part| {
            if failed.is_some() {
                return;
            }
            let made = match part {
                Constant::Value(value) => Plan::of(py, value).map(|plan| {
                    constants
                        .values
                        .insert(std::ptr::from_ref(value).addr(), plan);
                }),
                Constant::Shape(shape) => {
                    let keys = shape
                        .keys()
                        .map(|key| PyString::intern(py, key).unbind())
                        .collect();
                    constants.keys.insert(shape.id(), keys);
                    Ok(())
                }
            };
            failed = made.err();
        });
        match failed {
            Some(e) => Err(e),
            None => Ok(constants),
        }
    }
}

/// Why building a result stopped: the call failed, or Python raised.
#[derive(Debug)]
pub(crate) enum Failed {
    Call(CallError),
    Python(PyErr),
}

impl From<CallError> for Failed {
    fn from(e: CallError) -> Self {
        Failed::Call(e)
    }
}

impl From<PyErr> for Failed {
    fn from(e: PyErr) -> Self {
        Failed::Python(e)
    }
}

/// Builds one call's result as Python objects.
pub(crate) struct Builder<'py, 'c> {
    pub(crate) py: Python<'py>,
    pub(crate) constants: &'c Constants,
}

/// An object being built, with its keys when they were prepared.
pub(crate) struct Object<'py, 'k, 'd> {
    dict: Bound<'py, PyDict>,
    keys: Option<&'k [Py<PyString>]>,
    shape: Shape<'d>,
}

impl<'d, 'py, 'c> Build<'d> for Builder<'py, 'c> {
    type Node = Bound<'py, PyAny>;
    type Array = Vec<Bound<'py, PyAny>>;
    type Object = Object<'py, 'c, 'd>;
    type Error = Failed;

    fn constant(&mut self, value: &'d Value) -> Result<Self::Node, Failed> {
        let built = match self.constants.values.get(&std::ptr::from_ref(value).addr()) {
            Some(plan) => plan.build(self.py),
            None => convert::to_python(self.py, value),
        };
        Ok(built?)
    }

    fn rendered(&mut self, value: &Value) -> Result<Self::Node, Failed> {
        Ok(convert::to_python(self.py, value)?)
    }

    fn begin_array(&mut self, len: usize) -> Result<Self::Array, Failed> {
        Ok(Vec::with_capacity(len))
    }

    fn push(&mut self, array: &mut Self::Array, item: Self::Node) -> Result<(), Failed> {
        array.push(item);
        Ok(())
    }

    fn end_array(&mut self, array: Self::Array) -> Result<Self::Node, Failed> {
        Ok(PyList::new(self.py, array)?.into_any())
    }

    fn begin_object(&mut self, shape: Shape<'d>) -> Result<Self::Object, Failed> {
        Ok(Object {
            dict: PyDict::new(self.py),
            keys: self.constants.keys.get(&shape.id()).map(|k| &**k),
            shape,
        })
    }

    fn field(
        &mut self,
        object: &mut Self::Object,
        index: usize,
        value: Self::Node,
    ) -> Result<(), Failed> {
        match object.keys.and_then(|keys| keys.get(index)) {
            Some(key) => object.dict.set_item(key.bind(self.py), value)?,
            None => {
                let key = object.shape.keys().nth(index).unwrap_or_default();
                object.dict.set_item(PyString::new(self.py, key), value)?;
            }
        }
        Ok(())
    }

    fn end_object(&mut self, object: Self::Object) -> Result<Self::Node, Failed> {
        Ok(object.dict.into_any())
    }
}
