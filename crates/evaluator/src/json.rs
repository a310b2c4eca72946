//! JSON values as the language compares them: deep equality with numbers
//! by value, and equality of text under simple case folding.

use icu_casemap::CaseMapper;
use serde_json::{Map, Value};

/// Deep JSON equality with numbers compared by value (`1` equals `1.0`);
/// booleans are never numbers; object key order does not matter.
pub fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => numbers_equal(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => maps_equal(x, y),
        _ => a == b,
    }
}

/// Numbers by exact value: an integer equals a float only when the float is
/// that very integer (`2^53 + 1` is not `2^53` written as a double).
fn numbers_equal(x: &serde_json::Number, y: &serde_json::Number) -> bool {
    let int = |n: &serde_json::Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    // `f as i128` is exact for integral doubles within range and saturates
    // beyond it, where no 64-bit integer can be equal anyway.
    let float_is = |f: f64, i: i128| f.fract() == 0.0 && f as i128 == i;
    match (int(x), int(y)) {
        (Some(i), Some(j)) => i == j,
        (Some(i), None) => y.as_f64().is_some_and(|g| float_is(g, i)),
        (None, Some(j)) => x.as_f64().is_some_and(|f| float_is(f, j)),
        (None, None) => x.as_f64() == y.as_f64(),
    }
}

/// [`json_equal`] for two objects.
pub fn maps_equal(x: &Map<String, Value>, y: &Map<String, Value>) -> bool {
    x.len() == y.len()
        && x.iter()
            .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
}

/// Equality of two strings after simple case folding of each character
/// (Unicode CaseFolding.txt, statuses C and S): one character never becomes
/// two, so `"ß"` and `"SS"` differ, and no normalization is applied. The
/// condition op `eq_ci` and `$find`'s `where_ci` compare with it.
pub(crate) fn equal_folded(a: &str, b: &str) -> bool {
    let folding = CaseMapper::new();
    let mut left = a.chars().map(|c| folding.simple_fold(c));
    let mut right = b.chars().map(|c| folding.simple_fold(c));
    loop {
        match (left.next(), right.next()) {
            (None, None) => return true,
            (Some(x), Some(y)) if x == y => {}
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::json_equal;
    use serde_json::json;

    #[test]
    fn equality_is_deep_and_by_value() {
        assert!(json_equal(&json!(1), &json!(1.0)));
        assert!(json_equal(
            &json!({"a": [1, {"b": 2.0}]}),
            &json!({"a": [1.0, {"b": 2}]})
        ));
        assert!(!json_equal(&json!(true), &json!(1)));
        assert!(!json_equal(&json!([1, 2]), &json!([2, 1])));
        assert!(!json_equal(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        assert!(!json_equal(&json!(u64::MAX), &json!(-1)));
        assert!(json_equal(&json!(null), &json!(null)));
    }
}
