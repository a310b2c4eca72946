//! JSON Pointers (RFC 6901), built the way every toolmock diagnostic path is.
//!
//! ```
//! use toolmock_contract::pointer;
//! let at = pointer::push("/input_schema/properties", "a/b~c");
//! assert_eq!(at, "/input_schema/properties/a~1b~0c");
//! assert_eq!(pointer::index(&at, 2), "/input_schema/properties/a~1b~0c/2");
//! ```

use serde_json::{Number, Value};

/// Appends `key` escaped as one reference token (`~` → `~0`, `/` → `~1`),
/// without the leading `/`.
pub fn push_token(path: &mut String, key: &str) {
    for c in key.chars() {
        match c {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            c => path.push(c),
        }
    }
}

/// The pointer to member `key` of the value at `base`.
pub fn push(base: &str, key: &str) -> String {
    let mut out = String::with_capacity(base.len() + key.len() + 1);
    out.push_str(base);
    out.push('/');
    push_token(&mut out, key);
    out
}

/// The pointer to item `i` of the array at `base`.
pub fn index(base: &str, i: usize) -> String {
    format!("{base}/{i}")
}

/// The largest integer magnitude a double holds exactly (2^53).
const EXACT_INTEGER_LIMIT: u64 = 1 << 53;

/// Whether a double holds `n` exactly: every float does, an integer does
/// within ±2^53.
fn is_exact(n: &Number) -> bool {
    if let Some(u) = n.as_u64() {
        u <= EXACT_INTEGER_LIMIT
    } else if let Some(i) = n.as_i64() {
        i.unsigned_abs() <= EXACT_INTEGER_LIMIT
    } else {
        true
    }
}

/// Appends to `out`, in document order, every integer in `value` (which sits
/// at pointer `base`) that a double cannot hold exactly, as `(pointer,
/// number)`. Pointers are built only for the numbers found, so a value
/// without any costs one walk and no allocation.
pub fn inexact_numbers(value: &Value, base: &str, out: &mut Vec<(String, String)>) {
    fn has_inexact(value: &Value) -> bool {
        match value {
            Value::Number(n) => !is_exact(n),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_inexact_integer_is_found_with_its_pointer() {
        let value = json!({"a/b": [1, 9007199254740993_u64], "c": -9007199254740993_i64,
                           "d": 9007199254740992_u64, "e": 1e300});
        let mut found = Vec::new();
        inexact_numbers(&value, "/schema", &mut found);
        assert_eq!(
            found,
            [
                ("/schema/a~1b/1".to_owned(), "9007199254740993".to_owned()),
                ("/schema/c".to_owned(), "-9007199254740993".to_owned()),
            ]
        );
    }
}
