//! Exact decimal arithmetic for money (version 2's `$add`, `$sub`, `$mul`,
//! `$round`; docs/mock-language.md, "Money arithmetic"). Every operand is
//! read as the decimal it is written as and every step is exact, or the
//! step is refused: no binary floating-point error ever reaches a result.
//!
//! ```
//! use serde_json::json;
//! use toolmock_evaluator::operators::decimal::{add, to_decimal, to_json};
//! let a = to_decimal(&json!(0.1), "$add").unwrap();
//! let b = to_decimal(&json!("0.2"), "$add").unwrap();
//! assert_eq!(to_json(add(a, b).unwrap()).unwrap(), json!(0.3));
//! ```

use super::{OperandFault, Rejection, is_decimal, json_kind, reject, truncate};
use rust_decimal::{Decimal, RoundingStrategy};
use serde_json::{Number, Value};

/// At most this many decimal places in `$round`.
pub const MAX_PLACES: u32 = 28;

/// A JSON number written with more significant digits than this is not
/// always the same number once read back, so results must fit in it.
pub const MAX_RESULT_DIGITS: usize = 15;

/// The decimal an operand is written as: a JSON number (by its shortest
/// text: `0.1` is one tenth, not the double nearest it) or a string of
/// `$number`'s grammar (`^-?[0-9]+(\.[0-9]+)?$`). Anything else, or a value
/// beyond 28 significant digits, is `invalid_number`.
pub fn to_decimal(value: &Value, operator: &str) -> Result<Decimal, Rejection> {
    let parsed = match value {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                return Ok(Decimal::from(i));
            }
            if let Some(u) = n.as_u64() {
                return Ok(Decimal::from(u));
            }
            let text = n.to_string();
            if text.contains(['e', 'E']) {
                Decimal::from_scientific(&text).ok()
            } else {
                Decimal::from_str_exact(&text).ok()
            }
            .map(|d| d.normalize())
            .ok_or_else(|| out_of_range(operator, &text))
        }
        Value::String(text) if is_decimal(text) => Decimal::from_str_exact(text)
            .map(|d| d.normalize())
            .map_err(|_| out_of_range(operator, text)),
        Value::String(text) => Err(reject(
            OperandFault::InvalidNumber,
            format!(
                "{operator}: {:?} is not a decimal number (digits, an optional leading '-', an optional fraction after '.'; no exponent, sign '+', spaces or separators)",
                truncate(text)
            ),
        )),
        other => Err(reject(
            OperandFault::InvalidNumber,
            format!(
                "{operator} takes numbers or decimal strings, not {}",
                json_kind(other)
            ),
        )),
    }?;
    Ok(parsed)
}

fn out_of_range(operator: &str, text: &str) -> Rejection {
    reject(
        OperandFault::InvalidNumber,
        format!(
            "{operator}: {:?} does not fit an exact decimal (at most 28 significant digits, magnitude below 7.9e28)",
            truncate(text)
        ),
    )
}

fn inexact(operator: &str) -> Rejection {
    reject(
        OperandFault::InvalidNumber,
        format!(
            "{operator}: the exact result does not fit an exact decimal (at most 28 significant digits, magnitude below 7.9e28)"
        ),
    )
}

/// `a + b`, exactly.
pub fn add(a: Decimal, b: Decimal) -> Result<Decimal, Rejection> {
    // The decimal type rounds a sum it cannot hold at full scale; a scale
    // below the operands' means it did, and the sum is refused instead.
    a.checked_add(b)
        .filter(|r| r.scale() >= a.scale().max(b.scale()))
        .ok_or_else(|| inexact("$add"))
}

/// `a - b`, exactly.
pub fn sub(a: Decimal, b: Decimal) -> Result<Decimal, Rejection> {
    a.checked_sub(b)
        .filter(|r| r.scale() >= a.scale().max(b.scale()))
        .ok_or_else(|| inexact("$sub"))
}

/// `a × b`, exactly.
pub fn mul(a: Decimal, b: Decimal) -> Result<Decimal, Rejection> {
    let (a, b) = (a.normalize(), b.normalize());
    a.checked_mul(b)
        .filter(|r| {
            // A zero product is exact only from a zero operand; else it was rounded away.
            (a.is_zero() || b.is_zero()) && r.is_zero() || r.scale() == a.scale() + b.scale()
        })
        .ok_or_else(|| inexact("$mul"))
}

/// `value` rounded to `places` decimal places, a tie to the even neighbour
/// (`0.125` → `0.12`, `0.135` → `0.14`), as Python's `round` and its
/// `decimal` module do.
pub fn round(value: Decimal, places: u32) -> Decimal {
    value.round_dp_with_strategy(
        places.min(MAX_PLACES),
        RoundingStrategy::MidpointNearestEven,
    )
}

/// A result as JSON: an integer when integral and within ±(2^63 − 1),
/// else the number with at most [`MAX_RESULT_DIGITS`] significant digits
/// written as its shortest text (which is exactly the decimal); a result
/// needing more digits is `invalid_number` (round it first).
pub fn to_json(value: Decimal) -> Result<Value, Rejection> {
    let value = value.normalize();
    if value.scale() == 0
        && let Ok(i) = i64::try_from(value.mantissa())
    {
        return Ok(Value::from(i));
    }
    let digits = value.mantissa().unsigned_abs().to_string().len();
    if digits > MAX_RESULT_DIGITS {
        return Err(reject(
            OperandFault::InvalidNumber,
            format!(
                "the result {value} has {digits} significant digits; a JSON number holds {MAX_RESULT_DIGITS} exactly: round it first with $round"
            ),
        ));
    }
    value
        .to_string()
        .parse::<f64>()
        .ok()
        .and_then(Number::from_f64)
        .map(Value::Number)
        .ok_or_else(|| inexact("the result"))
}
