//! The two bounded operators, `$number` and `$dateAdd`, as pure functions.
//!
//! With the `operators` feature they are public, so that other runtimes can
//! test parity against them and fuzz targets reach them directly; the
//! evaluator calls the same code either way.

pub mod decimal;

use chrono::{Duration, NaiveDate, NaiveDateTime, NaiveTime};
use serde_json::{Number, Value};
use std::fmt;

/// The largest integer magnitude written as an integer (2^53).
const EXACT_INTEGER_LIMIT: f64 = 9_007_199_254_740_992.0;
/// `|days|` bound of `$dateAdd`.
pub const MAX_DAYS: i64 = 3660;
/// `|hours|` bound of `$dateAdd`.
pub const MAX_HOURS: i64 = 24;

/// Why an operand was rejected. Who is blamed (input, state or definition)
/// depends on where the operand came from, not on the fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OperandFault {
    /// Not a number `$number` accepts, or an offset that is not an integer-valued number.
    InvalidNumber,
    /// Not a calendar date or RFC 3339 date-time.
    InvalidDate,
    /// A `days` or `hours` offset beyond its bound.
    OffsetOutOfRange,
    /// A date, or a result, outside years 1…9999.
    DateOutOfRange,
    /// A value of the wrong JSON type for a version-2 operator (`$append`
    /// of something that is not an array, `$merge` of a non-object).
    InvalidOperand,
}

impl OperandFault {
    /// The stable code: `invalid_number`, `invalid_date`, `offset_out_of_range`, `date_out_of_range`.
    pub fn code(self) -> &'static str {
        match self {
            OperandFault::InvalidNumber => "invalid_number",
            OperandFault::InvalidDate => "invalid_date",
            OperandFault::OffsetOutOfRange => "offset_out_of_range",
            OperandFault::DateOutOfRange => "date_out_of_range",
            OperandFault::InvalidOperand => "invalid_operand",
        }
    }
}

impl fmt::Display for OperandFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// A rejected operand: the fault and a sentence saying why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// What is wrong.
    pub fault: OperandFault,
    /// Why, for humans.
    pub message: String,
}

pub(crate) fn reject(fault: OperandFault, message: impl Into<String>) -> Rejection {
    Rejection {
        fault,
        message: message.into(),
    }
}

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

/// `$dateAdd`: the UTC date of `value` at midnight, plus `days` and `hours`,
/// written `YYYY-MM-DDTHH:MM:SS.000Z`. The first operand at fault is
/// reported as [`DateAddError::Operand`] naming it; a result out of range as
/// [`DateAddError::Result`] (the caller decides whom to blame).
///
/// ```
/// use serde_json::json;
/// use toolmock_evaluator::operators::date_add;
/// let at = date_add(&json!("2026-03-01T23:30:00-05:00"), Some(&json!(7)), Some(&json!(16)));
/// assert_eq!(at.unwrap(), "2026-03-09T16:00:00.000Z");
/// ```
pub fn date_add(
    value: &Value,
    days: Option<&Value>,
    hours: Option<&Value>,
) -> Result<String, DateAddError> {
    let date = match value {
        Value::String(text) => parse_utc_date(text),
        other => Err(reject(
            OperandFault::InvalidDate,
            format!(
                "$dateAdd value must be a date string, not {}",
                json_kind(other)
            ),
        )),
    }
    .map_err(|rejection| DateAddError::Operand {
        operand: DateAddOperand::Value,
        rejection,
    })?;
    let days = offset(days, "days", MAX_DAYS).map_err(|rejection| DateAddError::Operand {
        operand: DateAddOperand::Days,
        rejection,
    })?;
    let hours = offset(hours, "hours", MAX_HOURS).map_err(|rejection| DateAddError::Operand {
        operand: DateAddOperand::Hours,
        rejection,
    })?;
    let result =
        NaiveDateTime::new(date, NaiveTime::MIN) + Duration::days(days) + Duration::hours(hours);
    format_utc(&result).ok_or_else(|| {
        DateAddError::Result(reject(
            OperandFault::DateOutOfRange,
            format!(
                "the result falls in year {}, outside years 1…9999",
                chrono::Datelike::year(&result)
            ),
        ))
    })
}

/// One operand of `$dateAdd`: `[value, days, hours]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DateAddOperand {
    /// The date or date-time (first).
    Value,
    /// The day offset (second).
    Days,
    /// The hour offset (third).
    Hours,
}

impl DateAddOperand {
    /// Its position in the operand array.
    pub fn position(self) -> usize {
        match self {
            DateAddOperand::Value => 0,
            DateAddOperand::Days => 1,
            DateAddOperand::Hours => 2,
        }
    }

    /// `value`, `days` or `hours`.
    pub fn as_str(self) -> &'static str {
        match self {
            DateAddOperand::Value => "value",
            DateAddOperand::Days => "days",
            DateAddOperand::Hours => "hours",
        }
    }
}

/// Why `$dateAdd` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DateAddError {
    /// One operand was rejected.
    #[error("$dateAdd {}: {}", operand.as_str(), rejection.message)]
    Operand {
        /// Which operand.
        operand: DateAddOperand,
        /// Why.
        rejection: Rejection,
    },
    /// The operands were fine but the result lies outside years 1…9999.
    #[error("$dateAdd: {}", .0.message)]
    Result(Rejection),
}

impl DateAddError {
    /// The stable code of the fault (`invalid_date`, `invalid_number`,
    /// `offset_out_of_range`, `date_out_of_range`).
    pub fn code(&self) -> &'static str {
        self.rejection().fault.code()
    }

    /// The rejection, whichever operand (or the result) it is about.
    pub fn rejection(&self) -> &Rejection {
        match self {
            DateAddError::Operand { rejection, .. } | DateAddError::Result(rejection) => rejection,
        }
    }
}

fn offset(value: Option<&Value>, name: &str, bound: i64) -> Result<i64, Rejection> {
    let Some(value) = value else { return Ok(0) };
    let Value::Number(n) = value else {
        return Err(reject(
            OperandFault::InvalidNumber,
            format!(
                "$dateAdd {name} must be an integer-valued number, not {}",
                json_kind(value)
            ),
        ));
    };
    let out_of_range = || {
        reject(
            OperandFault::OffsetOutOfRange,
            format!("$dateAdd {name} is {n}; it must lie within ±{bound}"),
        )
    };
    let whole = if let Some(i) = n.as_i64() {
        i
    } else if n.is_u64() {
        return Err(out_of_range());
    } else {
        let f = n.as_f64().unwrap_or(f64::NAN);
        if f.fract() != 0.0 || !f.is_finite() {
            return Err(reject(
                OperandFault::InvalidNumber,
                format!("$dateAdd {name} is {n}; it must be an integer"),
            ));
        }
        if f.abs() > bound as f64 {
            return Err(out_of_range());
        }
        f as i64
    };
    if whole.unsigned_abs() > bound.unsigned_abs() {
        return Err(out_of_range());
    }
    Ok(whole)
}

fn format_utc(at: &NaiveDateTime) -> Option<String> {
    use chrono::{Datelike, Timelike};
    let year = at.year();
    if !(1..=9999).contains(&year) {
        return None;
    }
    // Written digit by digit: `format!` was most of the cost of `$dateAdd`
    // (docs/performance.md), and every field has a fixed width.
    fn two(out: &mut [u8], n: u32) {
        out[0] = b'0' + (n / 10) as u8;
        out[1] = b'0' + (n % 10) as u8;
    }
    let mut text = *b"0000-00-00T00:00:00.000Z";
    let y = year as u32;
    two(&mut text[0..2], y / 100);
    two(&mut text[2..4], y % 100);
    two(&mut text[5..7], at.month());
    two(&mut text[8..10], at.day());
    two(&mut text[11..13], at.hour());
    two(&mut text[14..16], at.minute());
    two(&mut text[17..19], at.second());
    std::str::from_utf8(&text).ok().map(str::to_owned)
}

/// Parses `YYYY-MM-DD` or an RFC 3339 date-time strictly and returns its UTC date.
///
/// chrono's own parsers are lenient (one-digit fields, a space for `T`, second
/// 60), so the syntax is checked here byte by byte first.
pub fn parse_utc_date(text: &str) -> Result<NaiveDate, Rejection> {
    let invalid = |why: &str| {
        reject(
            OperandFault::InvalidDate,
            format!(
                "{:?} is not a date (YYYY-MM-DD) or RFC 3339 date-time: {why}",
                truncate(text)
            ),
        )
    };
    let b = text.as_bytes();
    if b.len() < 10 {
        return Err(invalid("too short"));
    }
    let year = digits(&b[0..4]).ok_or_else(|| invalid("the year must be four digits"))?;
    if b[4] != b'-' || b[7] != b'-' {
        return Err(invalid("expected '-' between year, month and day"));
    }
    let month = digits(&b[5..7]).ok_or_else(|| invalid("the month must be two digits"))?;
    let day = digits(&b[8..10]).ok_or_else(|| invalid("the day must be two digits"))?;
    if year == 0 {
        return Err(reject(
            OperandFault::DateOutOfRange,
            format!("{:?}: year 0000 is outside years 1…9999", truncate(text)),
        ));
    }
    let date = NaiveDate::from_ymd_opt(year as i32, month, day)
        .ok_or_else(|| invalid("no such calendar day"))?;
    if b.len() == 10 {
        return Ok(date);
    }
    let rest = &b[10..];
    if rest.len() < 10 || !matches!(rest[0], b'T' | b't') {
        return Err(invalid("a date-time needs 'T' then HH:MM:SS and an offset"));
    }
    if rest[3] != b':' || rest[6] != b':' {
        return Err(invalid("expected HH:MM:SS"));
    }
    let hour = digits(&rest[1..3]).ok_or_else(|| invalid("the hour must be two digits"))?;
    let minute = digits(&rest[4..6]).ok_or_else(|| invalid("the minute must be two digits"))?;
    let second = digits(&rest[7..9]).ok_or_else(|| invalid("the second must be two digits"))?;
    if hour > 23 || minute > 59 || second > 59 {
        return Err(invalid(
            "the time is out of range (00:00:00 to 23:59:59; no leap second)",
        ));
    }
    let mut tail = &rest[9..];
    if let [b'.', after @ ..] = tail {
        let fraction = after.iter().take_while(|c| c.is_ascii_digit()).count();
        if fraction == 0 {
            return Err(invalid("a fraction needs at least one digit after '.'"));
        }
        tail = &after[fraction..];
    }
    let offset_minutes: i64 = match tail {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let oh =
                digits(&[*h1, *h2]).ok_or_else(|| invalid("the offset hour must be two digits"))?;
            let om = digits(&[*m1, *m2])
                .ok_or_else(|| invalid("the offset minute must be two digits"))?;
            if oh > 23 || om > 59 {
                return Err(invalid("the offset is out of range"));
            }
            let magnitude = i64::from(oh * 60 + om);
            if *sign == b'-' { -magnitude } else { magnitude }
        }
        _ => return Err(invalid("expected 'Z' or an offset ±HH:MM at the end")),
    };
    let local = NaiveDateTime::new(
        date,
        NaiveTime::from_hms_opt(hour, minute, second).ok_or_else(|| invalid("no such time"))?,
    );
    let utc = local - Duration::minutes(offset_minutes);
    let utc_date = utc.date();
    use chrono::Datelike;
    if !(1..=9999).contains(&utc_date.year()) {
        return Err(reject(
            OperandFault::DateOutOfRange,
            format!("{:?} falls outside years 1…9999 in UTC", truncate(text)),
        ));
    }
    Ok(utc_date)
}

fn digits(bytes: &[u8]) -> Option<u32> {
    bytes.iter().try_fold(0u32, |acc, b| {
        b.is_ascii_digit().then(|| acc * 10 + u32::from(b - b'0'))
    })
}

pub(crate) use toolmock_contract::json_kind;

/// Keeps messages short when a hostile operand is huge.
pub(crate) fn truncate(text: &str) -> &str {
    match text.char_indices().nth(64) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    proptest::proptest! {
        /// The digit-by-digit writer agrees with chrono's formatter on every
        /// instant of years 1…9999.
        #[test]
        fn format_utc_writes_what_chrono_writes(days in 0i64..3_652_059, seconds in 0i64..86_400) {
            let start = NaiveDate::from_ymd_opt(1, 1, 1).expect("a date");
            let at = NaiveDateTime::new(start, NaiveTime::MIN)
                + Duration::days(days)
                + Duration::seconds(seconds);
            proptest::prop_assert_eq!(
                format_utc(&at),
                Some(at.format("%Y-%m-%dT%H:%M:%S.000Z").to_string())
            );
        }
    }

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

    #[test]
    fn dates() {
        let ok = |v: &str, d: i64, h: i64| {
            date_add(&json!(v), Some(&json!(d)), Some(&json!(h))).unwrap()
        };
        assert_eq!(ok("2026-01-31", 1, 0), "2026-02-01T00:00:00.000Z");
        assert_eq!(ok("2024-02-28", 1, 0), "2024-02-29T00:00:00.000Z");
        assert_eq!(ok("2026-03-01t23:30:00z", 0, 0), "2026-03-01T00:00:00.000Z");
        assert_eq!(
            ok("2026-03-01T23:30:00.123456-05:00", 0, 0),
            "2026-03-02T00:00:00.000Z"
        );
        assert_eq!(
            ok("2026-03-01T00:30:00+01:00", 0, -24),
            "2026-02-27T00:00:00.000Z"
        );
        assert_eq!(
            ok("2026-03-01T00:00:00-00:00", 0, 0),
            "2026-03-01T00:00:00.000Z"
        );
        let fault = |v: &str| match date_add(&json!(v), None, None) {
            Err(DateAddError::Operand { rejection, .. }) => rejection.fault,
            other => panic!("{v}: {other:?}"),
        };
        for bad in [
            "2026-02-30",
            "2026-2-03",
            "2026-02-03 10:00:00Z",
            "2026-02-03T24:00:00Z",
            "2026-02-03T23:59:60Z",
            "2026-02-03T10:00:00",
            "2026-02-03T10:00Z",
            "2026-02-03T10:00:00.Z",
            "2026-02-03T10:00:00+0100",
            "20260203",
            "2026-02-03Tx",
        ] {
            assert_eq!(fault(bad), OperandFault::InvalidDate, "{bad}");
        }
        assert_eq!(fault("0000-01-01"), OperandFault::DateOutOfRange);
        assert_eq!(
            fault("0001-01-01T00:30:00+01:00"),
            OperandFault::DateOutOfRange
        );
        assert_eq!(
            fault("9999-12-31T23:30:00-01:00"),
            OperandFault::DateOutOfRange
        );
        assert!(matches!(
            date_add(&json!("9999-12-31"), Some(&json!(1)), None),
            Err(DateAddError::Result(_))
        ));
        assert!(matches!(
            date_add(&json!("2026-01-01"), Some(&json!(7.5)), None),
            Err(DateAddError::Operand {
                operand: DateAddOperand::Days,
                rejection: Rejection {
                    fault: OperandFault::InvalidNumber,
                    ..
                }
            })
        ));
        assert!(matches!(
            date_add(&json!("2026-01-01"), Some(&json!(7.0)), Some(&json!(25))),
            Err(DateAddError::Operand {
                operand: DateAddOperand::Hours,
                rejection: Rejection {
                    fault: OperandFault::OffsetOutOfRange,
                    ..
                }
            })
        ));
    }
}
