//! Python objects ↔ `serde_json::Value`, directly (no JSON text between).
//!
//! The number rules are the project's: `bool` is never a number; an `int`
//! within 64 bits stays an exact integer; a larger `int` becomes the nearest
//! double, exactly as the CLI reads the same literal from a file — except
//! where a value is hashed ([`Ints::Exact`]), where an integer no double
//! holds exactly is refused (`inexact_number`) rather than hashed as another
//! number; a `float` must be finite.

use pyo3::exceptions::PyOverflowError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};
use toolmock_contract::pointer;

/// What to do with an `int` beyond 64 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ints {
    /// The nearest double, as serde_json parses the same literal.
    Nearest,
    /// Refused unless a double holds it exactly (values that are hashed).
    Exact,
}

/// Why a Python object has no JSON value.
#[derive(Debug)]
pub(crate) enum Refused {
    /// Not a JSON type, a non-string key, a non-finite float, an integer
    /// beyond any double.
    NotJson {
        /// Keys and indexes from the innermost outwards.
        at: Vec<String>,
        message: String,
    },
    /// An integer no double holds exactly, where the value is hashed.
    Inexact { at: Vec<String>, number: String },
    /// Python raised while the object was read.
    Python(PyErr),
}

impl Refused {
    fn within(mut self, key: String) -> Refused {
        match &mut self {
            Refused::NotJson { at, .. } | Refused::Inexact { at, .. } => at.push(key),
            Refused::Python(_) => {}
        }
        self
    }

    /// The JSON pointer of the refused value.
    pub(crate) fn path(at: &[String]) -> String {
        let mut path = String::new();
        for key in at.iter().rev() {
            path.push('/');
            pointer::push_token(&mut path, key);
        }
        path
    }
}

impl From<PyErr> for Refused {
    fn from(e: PyErr) -> Self {
        Refused::Python(e)
    }
}

fn not_json(message: impl Into<String>) -> Refused {
    Refused::NotJson {
        at: Vec::new(),
        message: message.into(),
    }
}

/// The most arrays and objects one value may nest: what the JSON reader of
/// the CLI accepts in a document (serde_json's recursion limit). Deeper
/// values — a list that contains itself included — are refused rather than
/// allowed to exhaust the stack.
pub(crate) const MAX_DEPTH: usize = 127;

/// A Python object as a JSON value.
pub(crate) fn to_value(obj: &Bound<'_, PyAny>, ints: Ints) -> Result<Value, Refused> {
    value_at(obj, ints, 0)
}

/// `obj`, found inside `depth` arrays and objects, as a JSON value.
fn value_at(obj: &Bound<'_, PyAny>, ints: Ints, depth: usize) -> Result<Value, Refused> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_str()?.to_owned()));
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        return map_at(dict, ints, depth + 1).map(Value::Object);
    }
    if let Ok(list) = obj.cast::<PyList>() {
        too_deep(depth + 1)?;
        let mut items = Vec::with_capacity(list.len());
        for (i, item) in list.iter().enumerate() {
            items.push(value_at(&item, ints, depth + 1).map_err(|e| e.within(i.to_string()))?);
        }
        return Ok(Value::Array(items));
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(int) = obj.cast::<PyInt>() {
        return int_to_value(int, ints);
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        let x = f.value();
        return Number::from_f64(x).map(Value::Number).ok_or_else(|| {
            not_json(format!(
                "{x} is not a JSON number (JSON has no NaN or infinity)"
            ))
        });
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(tuple) = obj.cast::<PyTuple>() {
        too_deep(depth + 1)?;
        let mut items = Vec::with_capacity(tuple.len());
        for (i, item) in tuple.iter().enumerate() {
            items.push(value_at(&item, ints, depth + 1).map_err(|e| e.within(i.to_string()))?);
        }
        return Ok(Value::Array(items));
    }
    let type_name = obj
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".to_owned());
    Err(not_json(format!(
        "a {type_name} has no JSON form (JSON values are dict, list, tuple, str, int, float, bool and None)"
    )))
}

fn too_deep(depth: usize) -> Result<(), Refused> {
    if depth > MAX_DEPTH {
        return Err(not_json(format!(
            "arrays and objects nest deeper than {MAX_DEPTH} levels (the most a JSON document the CLI reads may nest)"
        )));
    }
    Ok(())
}

/// A Python `dict` as a JSON object (keys must be `str`).
pub(crate) fn dict_to_map(
    dict: &Bound<'_, PyDict>,
    ints: Ints,
) -> Result<Map<String, Value>, Refused> {
    map_at(dict, ints, 1)
}

/// A `dict` found at nesting level `depth` (itself counted).
fn map_at(
    dict: &Bound<'_, PyDict>,
    ints: Ints,
    depth: usize,
) -> Result<Map<String, Value>, Refused> {
    too_deep(depth)?;
    let mut map = Map::new();
    for (key, item) in dict.iter() {
        let Ok(key) = key.cast::<PyString>() else {
            let shown = key.repr().map(|r| r.to_string()).unwrap_or_default();
            return Err(not_json(format!(
                "the key {shown} is not a str: JSON object keys are strings"
            )));
        };
        let key = key.to_str()?;
        let value = value_at(&item, ints, depth).map_err(|e| e.within(key.to_owned()))?;
        map.insert(key.to_owned(), value);
    }
    Ok(map)
}

fn int_to_value(int: &Bound<'_, PyInt>, ints: Ints) -> Result<Value, Refused> {
    match int.extract::<i64>() {
        Ok(i) => return Ok(Value::from(i)),
        Err(e) if !e.is_instance_of::<PyOverflowError>(int.py()) => return Err(e.into()),
        Err(_) => {}
    }
    if let Ok(u) = int.extract::<u64>() {
        return Ok(Value::from(u));
    }
    // Beyond 64 bits: decided on the decimal text, as the CLI decides on the
    // literal it reads.
    let text = int.str()?.to_str()?.to_owned();
    if ints == Ints::Exact && !pointer::is_exact_integer_literal(&text) {
        return Err(Refused::Inexact {
            at: Vec::new(),
            number: text,
        });
    }
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(Number::from_f64(x).map_or(Value::Null, Value::Number)),
        _ => Err(not_json(format!(
            "the integer {text} is beyond the range of a JSON number (a double)"
        ))),
    }
}

/// A JSON value as a new Python object.
pub(crate) fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => number_to_python(py, n)?,
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_python(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => map_to_python(py, map)?.into_any(),
    })
}

/// A JSON object as a new Python `dict`.
pub(crate) fn map_to_python<'py>(
    py: Python<'py>,
    map: &Map<String, Value>,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (key, item) in map {
        dict.set_item(PyString::new(py, key), to_python(py, item)?)?;
    }
    Ok(dict)
}

fn number_to_python<'py>(py: Python<'py>, n: &Number) -> PyResult<Bound<'py, PyAny>> {
    if let Some(i) = n.as_i64() {
        Ok(i.into_pyobject(py)?.into_any())
    } else if let Some(u) = n.as_u64() {
        Ok(u.into_pyobject(py)?.into_any())
    } else {
        Ok(PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN)).into_any())
    }
}

/// [`map_to_python`] of `map`, a value converted from `dict` (and maybe
/// changed since: `changed` names the keys whose values were replaced),
/// sharing `dict`'s immutable objects — its keys, `str`s, `int`s and
/// `float`s — where they still hold exactly the value converted from them:
/// a new `dict`, and new `dict`s and `list`s all the way down, equal to
/// what `map_to_python` gives, without making every key and string again.
pub(crate) fn map_like<'py>(
    dict: &Bound<'py, PyDict>,
    map: &Map<String, Value>,
    changed: &[&str],
) -> PyResult<Bound<'py, PyDict>> {
    let py = dict.py();
    let built = PyDict::new(py);
    // Both are usually in the same order (a state `evaluate` returned is in
    // the map's): an item of `dict` is used only when it is next in both.
    let mut items = dict.iter().peekable();
    for (key, value) in map {
        let same = items.peek().is_some_and(|(k, _)| {
            k.cast::<PyString>()
                .is_ok_and(|k| k.to_str().is_ok_and(|k| k == key))
        });
        let item = if same { items.next() } else { None };
        let key_object = match &item {
            Some((k, _)) if k.is_exact_instance_of::<PyString>() => k.clone(),
            _ => PyString::new(py, key).into_any(),
        };
        let object = match item {
            Some((_, old)) if !changed.contains(&key.as_str()) => like(&old, value)?,
            _ => to_python(py, value)?,
        };
        built.set_item(key_object, object)?;
    }
    Ok(built)
}

/// `value`, converted from `object`, as a new Python object: `object`
/// itself when it is immutable and still holds exactly `value`, new
/// containers (of the same) otherwise.
fn like<'py>(object: &Bound<'py, PyAny>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    let py = object.py();
    let kept = match value {
        Value::String(s) => object
            .cast_exact::<PyString>()
            .is_ok_and(|o| o.to_str().is_ok_and(|o| o == s)),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => {
                object.is_exact_instance_of::<PyInt>()
                    && object.extract::<i64>().is_ok_and(|o| o == i)
            }
            (None, Some(u), _) => {
                object.is_exact_instance_of::<PyInt>()
                    && object.extract::<u64>().is_ok_and(|o| o == u)
            }
            (None, None, Some(x)) => object
                .cast_exact::<PyFloat>()
                .is_ok_and(|o| o.value().to_bits() == x.to_bits()),
            _ => false,
        },
        Value::Object(map) => {
            if let Ok(dict) = object.cast_exact::<PyDict>() {
                return Ok(map_like(dict, map, &[])?.into_any());
            }
            false
        }
        Value::Array(items) => {
            if let Ok(list) = object.cast_exact::<PyList>()
                && list.len() == items.len()
            {
                let built = items
                    .iter()
                    .zip(list.iter())
                    .map(|(item, old)| like(&old, item))
                    .collect::<PyResult<Vec<_>>>()?;
                return Ok(PyList::new(py, built)?.into_any());
            }
            false
        }
        Value::Bool(_) | Value::Null => false,
    };
    if kept {
        Ok(object.clone())
    } else {
        to_python(py, value)
    }
}
