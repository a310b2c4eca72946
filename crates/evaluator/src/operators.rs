//! The bounded operators as pure functions: `$number` ([`to_number`]),
//! `$dateAdd` ([`date_add`]) and, in [`decimal`], version 2's exact money
//! arithmetic.
//!
//! Public only with the `operators` feature, so that other runtimes can
//! test parity against them and fuzz targets reach them directly; the
//! evaluator calls the same code either way (each lives in the room of its
//! operator family, `crate::expr::numbers`, `dates` and `decimals`).

pub use crate::error::{OperandFault, Rejection};
pub use crate::expr::dates::{
    DateAddError, DateAddOperand, MAX_DAYS, MAX_HOURS, date_add, parse_utc_date,
};
pub use crate::expr::numbers::{parse_decimal, to_number};

/// Exact decimal arithmetic for money (version 2's `$add`, `$sub`, `$mul`,
/// `$round`; docs/mock-language.md, "Money arithmetic"). Every operand is
/// read as the decimal it is written as and every step is exact, or the
/// step is refused: no binary floating-point error ever reaches a result.
///
/// ```
/// use serde_json::json;
/// use toolmock_evaluator::operators::decimal::{add, to_decimal, to_json};
/// let a = to_decimal(&json!(0.1), "$add").unwrap();
/// let b = to_decimal(&json!("0.2"), "$add").unwrap();
/// assert_eq!(to_json(add(a, b).unwrap()).unwrap(), json!(0.3));
/// ```
pub mod decimal {
    pub use crate::expr::decimals::{
        MAX_PLACES, MAX_RESULT_DIGITS, add, mul, round, sub, to_decimal, to_json,
    };
}

/// `$calc` (version 3; docs/mock-language.md, "Arithmetic text"): the
/// exact value of arithmetic text, as the operator computes it.
///
/// ```
/// use toolmock_evaluator::operators::calc::calculate;
/// assert_eq!(calculate("(1 + 2) * 3", None).unwrap().to_string(), "9");
/// assert_eq!(calculate("10 / 3", Some(2)).unwrap().to_string(), "3.33");
/// assert!(calculate("2 ** 3", None).is_err());
/// ```
pub mod calc {
    pub use crate::expr::calc::{MAX_CHARS, MAX_TOKENS, calculate};
}
