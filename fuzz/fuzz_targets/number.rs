//! Arbitrary strings → `parse_decimal` and `to_number` (docs/spec.md §4 `$number`).
//!
//! Accepted ⇒ the string matches `^-?[0-9]+(\.[0-9]+)?$`, its value equals
//! `str::parse::<f64>`, and it is written as an integer exactly when it is
//! integral and below 2^53 in magnitude. Rejected ⇒ it does not match the
//! grammar, or its value overflows a double.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolmock_evaluator::operators::{parse_decimal, to_number};

fn grammar(text: &str) -> bool {
    let body = text.strip_prefix('-').unwrap_or(text);
    let (int, fraction) = match body.split_once('.') {
        Some((int, fraction)) => (int, Some(fraction)),
        None => (body, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(int) && fraction.is_none_or(digits)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = parse_decimal(text);
    let via_value = to_number(&Value::String(text.to_owned()));
    assert_eq!(
        parsed.as_ref().ok().map(|n| Value::Number(n.clone())),
        via_value.as_ref().ok().cloned(),
        "to_number agrees with parse_decimal"
    );
    match parsed {
        Ok(number) => {
            assert!(grammar(text), "accepted {text:?} outside the grammar");
            let want: f64 = text
                .parse()
                .expect("the grammar is a subset of Rust's f64 syntax");
            assert!(want.is_finite());
            let got = number.as_f64().expect("a finite number");
            assert_eq!(got, want, "{text:?}");
            let integral = want.fract() == 0.0 && want.abs() < 9_007_199_254_740_992.0;
            assert_eq!(
                number.is_i64() || number.is_u64(),
                integral,
                "{text:?} → {number}"
            );
            if integral {
                assert_eq!(number.as_i64(), Some(want as i64));
            }
        }
        Err(rejection) => {
            assert_eq!(rejection.fault.code(), "invalid_number");
            if grammar(text) {
                let value: f64 = text
                    .parse()
                    .expect("the grammar is a subset of Rust's f64 syntax");
                assert!(
                    !value.is_finite(),
                    "rejected {text:?}, which is in the grammar"
                );
            }
        }
    }
});
