//! Arbitrary strings and offsets → `parse_utc_date` and `date_add` (docs/spec.md §4 `$dateAdd`).
//!
//! The first byte chooses the JSON shape of `days` and of `hours` (absent, an
//! integer, an integral float, a fractional float, a string), the next four
//! bytes their values, and the rest is the date text. Accepted ⇒ the text has
//! the strict syntax (`YYYY-MM-DD` or `YYYY-MM-DDTHH:MM:SS[.f](Z|±HH:MM)`,
//! checked here independently), the date is the text's UTC date, and the
//! result is `YYYY-MM-DDTHH:00:00.000Z` at that date plus the offsets.
//! The converse holds too: strict syntax in range ⇒ accepted.
#![no_main]

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use toolmock_evaluator::operators::{DateAddError, DateAddOperand, date_add, parse_utc_date};

fn num(b: &[u8]) -> Option<u32> {
    b.iter().try_fold(0u32, |acc, c| {
        c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
    })
}

/// An independent strict reading: `Some(Ok(utc date))`, `Some(Err(()))` for a
/// well-formed text outside years 1…9999, `None` for bad syntax.
fn strict(text: &str) -> Option<Result<NaiveDate, ()>> {
    let b = text.as_bytes();
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, m, d) = (num(&b[0..4])?, num(&b[5..7])?, num(&b[8..10])?);
    if y == 0 {
        // Well formed apart from the year when the rest is valid; the spec
        // calls year 0000 date_out_of_range, checked by the caller.
        return Some(Err(()));
    }
    let date = NaiveDate::from_ymd_opt(y as i32, m, d)?;
    if b.len() == 10 {
        return Some(Ok(date));
    }
    let t = &b[10..];
    if t.len() < 10 || !(t[0] == b'T' || t[0] == b't') || t[3] != b':' || t[6] != b':' {
        return None;
    }
    let (hh, mm, ss) = (num(&t[1..3])?, num(&t[4..6])?, num(&t[7..9])?);
    if hh > 23 || mm > 59 || ss > 59 {
        return None;
    }
    let mut rest = &t[9..];
    if rest.first() == Some(&b'.') {
        let n = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        rest = &rest[1 + n..];
    }
    let offset = match rest {
        [b'Z' | b'z'] => 0i64,
        [s @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let (oh, om) = (num(&[*h1, *h2])?, num(&[*m1, *m2])?);
            if oh > 23 || om > 59 {
                return None;
            }
            let minutes = i64::from(oh * 60 + om);
            if *s == b'-' { -minutes } else { minutes }
        }
        _ => return None,
    };
    let time = NaiveTime::from_hms_opt(hh, mm, ss)?;
    let utc = (NaiveDateTime::new(date, time) - Duration::minutes(offset)).date();
    Some(if (1..=9999).contains(&utc.year()) {
        Ok(utc)
    } else {
        Err(())
    })
}

fn operand(kind: u8, raw: i16) -> Option<Value> {
    match kind % 5 {
        0 => None,
        1 => Some(json!(raw / 8)),
        2 => Some(json!(f64::from(raw / 8))),
        3 => Some(json!(f64::from(raw) / 7.0)),
        _ => Some(json!(raw.to_string())),
    }
}

/// The offset as `date_add` must read it: `Ok(n)` when integer-valued and in bounds.
fn offset_value(value: Option<&Value>, bound: i64) -> Result<i64, &'static str> {
    let Some(value) = value else { return Ok(0) };
    let f = value.as_f64().ok_or("invalid_number")?;
    if f.fract() != 0.0 {
        return Err("invalid_number");
    }
    if f.abs() > bound as f64 {
        return Err("offset_out_of_range");
    }
    Ok(f as i64)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 5 {
        return;
    }
    let Ok(text) = std::str::from_utf8(&data[5..]) else {
        return;
    };
    let days = operand(data[0], i16::from_le_bytes([data[1], data[2]]));
    let hours = operand(data[0] / 5, i16::from_le_bytes([data[3], data[4]]));

    let parsed = parse_utc_date(text);
    let reference = strict(text);
    match (&parsed, reference) {
        (Ok(date), Some(Ok(want))) => assert_eq!(*date, want, "{text:?}"),
        (Ok(_), _) => panic!("accepted {text:?}, which is not a strict date in range"),
        (Err(r), Some(Err(()))) => assert_eq!(r.fault.code(), "date_out_of_range", "{text:?}"),
        (Err(r), Some(Ok(_))) => panic!("rejected the strict date {text:?}: {r:?}"),
        (Err(r), None) => assert!(
            matches!(r.fault.code(), "invalid_date" | "date_out_of_range"),
            "{text:?}: {r:?}"
        ),
    }

    let value = Value::String(text.to_owned());
    let result = date_add(&value, days.as_ref(), hours.as_ref());
    let d = offset_value(days.as_ref(), 3660);
    let h = offset_value(hours.as_ref(), 24);
    match result {
        Ok(out) => {
            let date = parsed.expect("date_add accepted a date parse_utc_date rejects");
            let (d, h) = (d.expect("days accepted"), h.expect("hours accepted"));
            let b = out.as_bytes();
            assert_eq!(b.len(), 24, "{out}");
            assert!(out.ends_with(":00:00.000Z") && b[10] == b'T', "{out}");
            assert!(b[4] == b'-' && b[7] == b'-' && b[13] == b':', "{out}");
            assert!(num(&b[0..4]).is_some() && num(&b[5..7]).is_some(), "{out}");
            assert!(
                num(&b[8..10]).is_some() && num(&b[11..13]).is_some(),
                "{out}"
            );
            let at =
                NaiveDateTime::new(date, NaiveTime::MIN) + Duration::days(d) + Duration::hours(h);
            assert_eq!(out, at.format("%Y-%m-%dT%H:00:00.000Z").to_string());
            assert!((1..=9999).contains(&at.year()));
        }
        Err(DateAddError::Operand {
            operand: DateAddOperand::Value,
            rejection,
        }) => {
            assert_eq!(Err(rejection), parsed.map(|_| ()));
        }
        Err(DateAddError::Operand { operand, rejection }) => {
            assert!(parsed.is_ok());
            let want = if operand == DateAddOperand::Days {
                d.expect_err("days rejected")
            } else {
                assert!(d.is_ok(), "days are checked before hours");
                h.expect_err("hours rejected")
            };
            assert_eq!(rejection.fault.code(), want);
        }
        Err(DateAddError::Result(rejection)) => {
            let date = parsed.expect("the value was accepted");
            let at = NaiveDateTime::new(date, NaiveTime::MIN)
                + Duration::days(d.expect("days accepted"))
                + Duration::hours(h.expect("hours accepted"));
            assert!(!(1..=9999).contains(&at.year()));
            assert_eq!(rejection.fault.code(), "date_out_of_range");
        }
    }
});
