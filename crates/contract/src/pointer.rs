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

/// Whether a double holds `n` exactly: every float does (it is one); an
/// integer does when converting it to the nearest double and back gives it
/// again (all within ±2^53, and beyond that the multiples of the spacing
/// there, such as 2^60 or 10^18).
pub fn is_exact(n: &Number) -> bool {
    if let Some(u) = n.as_u64() {
        // Through u128, so that 2^64 - 1 (which rounds to 2^64) is not
        // saturated back to itself.
        (u as f64) as u128 == u128::from(u)
    } else if let Some(i) = n.as_i64() {
        (i as f64) as i128 == i128::from(i)
    } else {
        true
    }
}

/// Whether the integer literal `text` (JSON syntax: optional `-`, digits
/// without leading zeros) names a value a double holds exactly. Any length:
/// the literal is compared digit for digit with the exact decimal expansion
/// of its nearest double.
pub fn is_exact_integer_literal(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    match digits.parse::<f64>() {
        Ok(nearest) if nearest.is_finite() => exact_decimal(nearest) == digits,
        _ => false,
    }
}

/// The exact decimal expansion of a finite, non-negative, integer-valued double.
fn exact_decimal(value: f64) -> String {
    const BASE: u64 = 1_000_000_000;
    let bits = value.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    let (mut mantissa, exponent) = if biased == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1 << 52), biased - 1075)
    };
    let mut shift = exponent;
    // Below 2^53 the value is its own mantissa, shifted right.
    while shift < 0 && mantissa % 2 == 0 && mantissa > 0 {
        mantissa /= 2;
        shift += 1;
    }
    if shift < 0 {
        return (value as u64).to_string();
    }
    // Little-endian limbs of nine decimal digits.
    let mut limbs = vec![
        mantissa % BASE,
        (mantissa / BASE) % BASE,
        mantissa / (BASE * BASE),
    ];
    for _ in 0..shift {
        let mut carry = 0;
        for limb in &mut limbs {
            let doubled = *limb * 2 + carry;
            *limb = doubled % BASE;
            carry = doubled / BASE;
        }
        if carry > 0 {
            limbs.push(carry);
        }
    }
    while limbs.len() > 1 && limbs.last() == Some(&0) {
        limbs.pop();
    }
    let mut out = limbs.last().map_or_else(String::new, u64::to_string);
    for limb in limbs.iter().rev().skip(1) {
        out.push_str(&format!("{limb:09}"));
    }
    out
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
    fn exact_integers_are_those_a_double_holds() {
        for (text, exact) in [
            ("0", true),
            ("-9007199254740992", true),
            ("9007199254740993", false),
            ("1152921504606846976", true),   // 2^60
            ("18446744073709551615", false), // 2^64 - 1
            ("18446744073709551616", true),  // 2^64
            ("100000000000000000000", true), // 10^20
            ("100000000000000000001", false),
            ("-9223372036854775808", true), // -2^63
            (
                "179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368",
                true,
            ), // f64::MAX
            (
                "179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858361",
                false,
            ),
            ("1e20", false),
        ] {
            assert_eq!(is_exact_integer_literal(text), exact, "{text}");
        }
        assert!(is_exact(&Number::from(1_u64 << 60)));
        assert!(!is_exact(&Number::from(u64::MAX)));
        assert!(is_exact(&Number::from(i64::MIN)));
        assert!(!is_exact(&Number::from(i64::MAX)));
    }

    #[test]
    fn every_inexact_integer_is_found_with_its_pointer() {
        let value = json!({"a/b": [1, 9007199254740993_u64], "c": -9007199254740993_i64,
                           "d": 9007199254740992_u64, "e": 1e300, "f": 1_u64 << 62});
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
