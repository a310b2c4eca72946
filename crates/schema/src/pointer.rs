//! JSON pointers (RFC 6901), built and read.

use serde_json::Value;

/// Appends `key` to a JSON pointer, escaped (`~` → `~0`, `/` → `~1`).
pub(crate) fn push(base: &str, key: &str) -> String {
    let mut out = String::with_capacity(base.len() + key.len() + 1);
    out.push_str(base);
    out.push('/');
    for c in key.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
    out
}

/// Appends an array index to a JSON pointer.
pub(crate) fn index(base: &str, i: usize) -> String {
    format!("{base}/{i}")
}

/// The largest integer magnitude a double holds exactly (2^53).
const EXACT_INTEGER_LIMIT: u64 = 1 << 53;

/// Every integer in `value` that a double cannot hold exactly, as
/// `(pointer, number)`; contract hashing refuses them. Pointers are only
/// built for the numbers found.
pub(crate) fn inexact_numbers(value: &Value, base: &str, out: &mut Vec<(String, String)>) {
    fn exact(n: &serde_json::Number) -> bool {
        if let Some(u) = n.as_u64() {
            u <= EXACT_INTEGER_LIMIT
        } else if let Some(i) = n.as_i64() {
            i.unsigned_abs() <= EXACT_INTEGER_LIMIT
        } else {
            true
        }
    }
    fn has_inexact(value: &Value) -> bool {
        match value {
            Value::Number(n) => !exact(n),
            Value::Array(items) => items.iter().any(has_inexact),
            Value::Object(map) => map.values().any(has_inexact),
            _ => false,
        }
    }
    if !has_inexact(value) {
        return;
    }
    match value {
        Value::Number(n) => out.push((base.to_owned(), n.to_string())),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                inexact_numbers(item, &index(base, i), out);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                inexact_numbers(item, &push(base, key), out);
            }
        }
        _ => {}
    }
}

/// The JSON type name of a value, as JSON Schema spells it.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
