//! JSON pointers (RFC 6901) as toolmock-contract builds them, and JSON type names.

use serde_json::Value;

pub(crate) use toolmock_contract::pointer::{index, inexact_numbers, push};

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
