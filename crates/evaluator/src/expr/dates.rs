//! `$dateAdd` (docs/spec.md §4): the UTC date of a date or date-time at
//! midnight, plus days and hours. The operator as a pure function
//! ([`date_add`], public behind the `operators` feature), its check and
//! its rendering.

use crate::check::context::Checker;
use crate::check::diagnostics::{DiagnosticCode, pointer_push};
use crate::error::{CallError, OperandFault, Origin, Rejection, reject, truncate};
use crate::expr::tree::{Expr, Operand};
use crate::scope::Scope;
use chrono::{Duration, NaiveDate, NaiveDateTime, NaiveTime};
use serde_json::Value;
use toolmock_contract::json_kind;

/// `|days|` bound of `$dateAdd`.
pub const MAX_DAYS: i64 = 3660;
/// `|hours|` bound of `$dateAdd`.
pub const MAX_HOURS: i64 = 24;

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
    parse_utc_instant(text).map(|instant| instant.at.date())
}

/// A date or date-time as an instant in UTC: a calendar date is its
/// midnight; the fraction of a second is kept as its digits without
/// trailing zeros (compared as text, which orders fractions by value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Instant<'t> {
    pub(crate) at: NaiveDateTime,
    pub(crate) fraction: &'t str,
}

/// Parses `YYYY-MM-DD` or an RFC 3339 date-time strictly (as
/// [`parse_utc_date`]) and returns its instant in UTC.
pub(crate) fn parse_utc_instant(text: &str) -> Result<Instant<'_>, Rejection> {
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
        return Ok(Instant {
            at: date.and_time(NaiveTime::MIN),
            fraction: "",
        });
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
    let mut fraction = "";
    if let [b'.', after @ ..] = tail {
        let digits = after.iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return Err(invalid("a fraction needs at least one digit after '.'"));
        }
        // ASCII digits from byte 20 on: a char boundary.
        fraction = text
            .get(20..20 + digits)
            .unwrap_or_default()
            .trim_end_matches('0');
        tail = &after[digits..];
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
    Ok(Instant { at: utc, fraction })
}

fn digits(bytes: &[u8]) -> Option<u32> {
    bytes.iter().try_fold(0u32, |acc, b| {
        b.is_ascii_digit().then(|| acc * 10 + u32::from(b - b'0'))
    })
}

/// Compiles `{"$dateAdd": {value, days, hours}}` at `at`: over literals
/// alone it is folded, and each literal operand is checked on its own.
pub(crate) fn compile(c: &mut Checker, key: &str, operand: &Value, at: &str) -> Option<Expr> {
    let at = &pointer_push(at, key);
    let Value::Object(fields) = operand else {
        c.diagnostics.push(
            DiagnosticCode::WrongType,
            at,
            format!(
                "$dateAdd takes an object {{value, days, hours}}, not {}",
                json_kind(operand)
            ),
        );
        return None;
    };
    let mut ok = true;
    for key in fields.keys() {
        if !matches!(key.as_str(), "value" | "days" | "hours") {
            c.diagnostics.push(
                DiagnosticCode::UnknownField,
                pointer_push(at, key),
                format!("$dateAdd has no field {key:?}; its fields are value, days and hours"),
            );
            ok = false;
        }
    }
    if !fields.contains_key("value") {
        c.diagnostics
            .push(DiagnosticCode::MissingField, at, "$dateAdd needs a value");
        ok = false;
    }
    let mut operands: [Option<Operand>; 3] = [None, None, None];
    for (slot, name) in operands.iter_mut().zip(["value", "days", "hours"]) {
        if let Some(v) = fields.get(name) {
            match c.operand(v, &pointer_push(at, name), "$dateAdd") {
                Some(operand) => *slot = Some(operand),
                None => ok = false,
            }
        }
    }
    if !ok {
        return None;
    }
    let literal = |o: &Option<Operand>| match o {
        None => Some(None),
        Some(Operand::Literal(v)) => Some(Some(v.clone())),
        Some(Operand::Reference(_)) => None,
    };
    // Check each literal operand on its own, so a reference elsewhere cannot hide it.
    let probe = [
        Value::String("2000-01-01".into()),
        Value::from(0),
        Value::from(0),
    ];
    for (index, name) in ["value", "days", "hours"].iter().enumerate() {
        if let Some(Operand::Literal(v)) = &operands[index] {
            let mut args: [&Value; 3] = [&probe[0], &probe[1], &probe[2]];
            args[index] = v;
            if let Err(DateAddError::Operand { rejection, .. }) =
                date_add(args[0], Some(args[1]), Some(args[2]))
            {
                c.invalid_literal(&pointer_push(at, name), rejection);
                ok = false;
            }
        }
    }
    if !ok {
        return None;
    }
    match (
        literal(&operands[0]),
        literal(&operands[1]),
        literal(&operands[2]),
    ) {
        (Some(Some(value)), Some(days), Some(hours)) => {
            match date_add(&value, days.as_ref(), hours.as_ref()) {
                Ok(text) => Some(Expr::Literal(Value::String(text))),
                Err(DateAddError::Operand { rejection, .. } | DateAddError::Result(rejection)) => {
                    c.invalid_literal(at, rejection);
                    None
                }
            }
        }
        _ => Some(Expr::DateAdd(Box::new(operands))),
    }
}

#[inline(never)]
pub(crate) fn render(
    operands: &[Option<Operand>; 3],
    scope: &Scope<'_>,
) -> Result<Value, CallError> {
    let mut values = [None, None, None];
    for (slot, operand) in values.iter_mut().zip(operands.iter()) {
        if let Some(operand) = operand {
            *slot = Some(operand.value(scope)?);
        }
    }
    let [value, days, hours] = &values;
    let value = value.as_deref().unwrap_or(&Value::Null);
    match date_add(value, days.as_deref(), hours.as_deref()) {
        Ok(text) => Ok(Value::String(text)),
        Err(DateAddError::Operand { operand, rejection }) => {
            let operand = operands[operand.position()].as_ref();
            let origin = operand.map_or(Origin::Literal, Operand::origin);
            let pointer = operand.and_then(Operand::pointer);
            Err(CallError::refused_operand(
                origin, pointer, rejection, "$dateAdd",
            ))
        }
        Err(DateAddError::Result(rejection)) => {
            // Blame the input if any operand came from it, else the state, else the definition.
            let culprit = operands
                .iter()
                .flatten()
                .max_by_key(|operand| operand.origin());
            let origin = culprit.map_or(Origin::Literal, Operand::origin);
            Err(CallError::refused_operand(
                origin,
                culprit.and_then(Operand::pointer),
                rejection,
                "$dateAdd",
            ))
        }
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
