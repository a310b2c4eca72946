//! `$number` (docs/spec.md §4): a number, or a decimal string read as the
//! nearest double. The operator as a pure function ([`to_number`], public
//! behind the `operators` feature), its check and its rendering.

use crate::check::context::Checker;
use crate::check::diagnostics::pointer_push;
use crate::error::{CallError, OperandFault, Rejection, reject, truncate};
use crate::expr::tree::{Expr, Operand};
use crate::scope::Scope;
use serde_json::{Number, Value};
use toolmock_contract::json_kind;

/// The largest integer magnitude written as an integer (2^53).
const EXACT_INTEGER_LIMIT: f64 = 9_007_199_254_740_992.0;

/// `$number`: a JSON number as it is, or a decimal string
/// `^-?[0-9]+(\.[0-9]+)?$` converted to the nearest double, written as an
/// integer when integral and below 2^53 in magnitude.
///
/// ```
/// use serde_json::json;
/// use toolmock_evaluator::operators::to_number;
/// assert_eq!(to_number(&json!("1234.50")).unwrap(), json!(1234.5));
/// assert_eq!(to_number(&json!("0042")).unwrap(), json!(42));
/// assert!(to_number(&json!("1e3")).is_err());
/// ```
pub fn to_number(value: &Value) -> Result<Value, Rejection> {
    match value {
        Value::Number(_) => Ok(value.clone()),
        Value::String(text) => parse_decimal(text).map(Value::Number),
        other => Err(reject(
            OperandFault::InvalidNumber,
            format!(
                "$number takes a number or a decimal string, not {}",
                json_kind(other)
            ),
        )),
    }
}

/// Parses the decimal grammar of `$number` (see [`to_number`]).
pub fn parse_decimal(text: &str) -> Result<Number, Rejection> {
    if !is_decimal(text) {
        return Err(reject(
            OperandFault::InvalidNumber,
            format!(
                "{:?} is not a decimal number (digits, an optional leading '-', an optional fraction after '.'; no exponent, sign '+', spaces or separators)",
                truncate(text)
            ),
        ));
    }
    let parsed: f64 = text.parse().map_err(|_| {
        reject(
            OperandFault::InvalidNumber,
            format!("{:?} is not a number", truncate(text)),
        )
    })?;
    if !parsed.is_finite() {
        return Err(reject(
            OperandFault::InvalidNumber,
            format!("{:?} overflows a double", truncate(text)),
        ));
    }
    Ok(number_from_f64(parsed))
}

/// A double as JSON: an integer when integral and below 2^53, else a float.
fn number_from_f64(x: f64) -> Number {
    if x.fract() == 0.0 && x.abs() < EXACT_INTEGER_LIMIT {
        // Exact: integral and within i64. `-0.0` becomes 0.
        Number::from(x as i64)
    } else {
        // Finite, so `from_f64` cannot fail; 0 is an unreachable fallback.
        Number::from_f64(x).unwrap_or_else(|| Number::from(0))
    }
}

pub(crate) fn is_decimal(text: &str) -> bool {
    let bytes = text.strip_prefix('-').unwrap_or(text).as_bytes();
    let int_len = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    if int_len == 0 {
        return false;
    }
    match &bytes[int_len..] {
        [] => true,
        [b'.', fraction @ ..] => !fraction.is_empty() && fraction.iter().all(u8::is_ascii_digit),
        _ => false,
    }
}

/// Compiles `{"$number": operand}` at `at`: over a literal it is folded.
pub(crate) fn compile(c: &mut Checker, name: &str, operand: &Value, at: &str) -> Option<Expr> {
    let operand_at = pointer_push(at, name);
    match c.operand(operand, &operand_at, name)? {
        Operand::Literal(literal) => match to_number(&literal) {
            Ok(number) => Some(Expr::Literal(number)),
            Err(rejection) => {
                c.invalid_literal(&operand_at, rejection);
                None
            }
        },
        reference => Some(Expr::Number(reference)),
    }
}

// Kept out of line so that rendering the common parts (literals, objects,
// arrays, references) runs in a small stack frame.
#[inline(never)]
pub(crate) fn render(operand: &Operand, scope: &Scope<'_>) -> Result<Value, CallError> {
    let value = operand.value(scope)?;
    let at = match operand {
        Operand::Reference(r) => &*r.at,
        Operand::Literal(_) => "",
    };
    to_number(&value).map_err(|rejection| operand.blame(rejection, at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers() {
        for (text, want) in [
            ("1234.50", json!(1234.5)),
            ("0042", json!(42)),
            ("5.0", json!(5)),
            ("-0", json!(0)),
            ("-12.25", json!(-12.25)),
            ("9007199254740993", json!(9007199254740992.0)),
        ] {
            assert_eq!(to_number(&json!(text)).unwrap(), want, "{text}");
        }
        for bad in [
            "", " 1", "+5", ".5", "5.", "1e3", "0x10", "1,000", "NaN", "Infinity", "-", "1.2.3",
        ] {
            assert_eq!(
                to_number(&json!(bad)).unwrap_err().fault,
                OperandFault::InvalidNumber,
                "{bad:?}"
            );
        }
        let huge = "9".repeat(400);
        assert!(to_number(&json!(huge)).is_err());
        for bad in [json!(true), json!(null), json!([]), json!({})] {
            assert!(to_number(&bad).is_err());
        }
    }
}
