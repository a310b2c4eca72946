//! Strings and numbers: formats, lengths, numeric bounds and `multipleOf`.

use super::Gen;
use crate::draft::errors::DraftCode;
use crate::pointer::{self, type_name};
use serde_json::{Map, Number, Value, json};
use toolmock_contract::Problem;

impl Gen<'_> {
    pub(super) fn string(&mut self, map: &Map<String, Value>, ptr: &str) -> Option<Value> {
        let (min, max) = self.size_bounds(map, ptr, "minLength", "maxLength")?;
        let fits = |len: usize| len >= min && max.is_none_or(|m| len <= m);
        if let Some(Value::String(format)) = map.get("format")
            && let Some(sample) = format_sample(format)
        {
            let len = sample.chars().count();
            if fits(len) {
                return Some(json!(sample));
            }
            if len < min
                && let Some(padded) = format_padding(format, sample, min - len)
                && fits(padded.chars().count())
            {
                return Some(json!(padded));
            }
            self.problems.push(Problem::new(
                DraftCode::UnsupportedFormat,
                self.at(&pointer::push(ptr, "format")),
                format!(
                    "no value of format {format:?} can be derived: its sample {sample:?} does not fit minLength {min}{}",
                    max.map(|m| format!(" and maxLength {m}"))
                        .unwrap_or_default()
                ),
            ));
            return None;
        }
        // Formats the validator does not know are annotations only.
        let mut text = String::from("example");
        if text.len() < min {
            text.push_str(&"x".repeat(min - text.len()));
        }
        if let Some(max) = max {
            text.truncate(max);
        }
        Some(Value::String(text))
    }

    fn number_keyword(
        &mut self,
        map: &Map<String, Value>,
        ptr: &str,
        keyword: &str,
    ) -> Option<Option<f64>> {
        match map.get(keyword) {
            None => Some(None),
            Some(Value::Number(n)) => Some(n.as_f64()),
            // Draft 4's boolean exclusive bounds modify minimum/maximum.
            Some(Value::Bool(_)) if keyword.starts_with("exclusive") => Some(None),
            Some(other) => {
                self.problems.push(Problem::new(
                    DraftCode::MalformedSchema,
                    self.at(&pointer::push(ptr, keyword)),
                    format!(
                        "not a usable JSON Schema: {keyword} must be a number, found {}",
                        type_name(other)
                    ),
                ));
                None
            }
        }
    }

    /// The bounds of a number: (lower, lower exclusive, upper, upper exclusive).
    fn bounds(&mut self, map: &Map<String, Value>, ptr: &str) -> Option<Bounds> {
        let minimum = self.number_keyword(map, ptr, "minimum")?;
        let maximum = self.number_keyword(map, ptr, "maximum")?;
        let ex_min = self.number_keyword(map, ptr, "exclusiveMinimum")?;
        let ex_max = self.number_keyword(map, ptr, "exclusiveMaximum")?;
        let draft4_ex_min = map.get("exclusiveMinimum") == Some(&Value::Bool(true));
        let draft4_ex_max = map.get("exclusiveMaximum") == Some(&Value::Bool(true));
        let mut lo: Option<(f64, bool, &'static str)> =
            minimum.map(|m| (m, draft4_ex_min, "minimum"));
        if let Some(x) = ex_min
            && lo.is_none_or(|(m, _, _)| x >= m)
        {
            lo = Some((x, true, "exclusiveMinimum"));
        }
        let mut hi: Option<(f64, bool, &'static str)> =
            maximum.map(|m| (m, draft4_ex_max, "maximum"));
        if let Some(x) = ex_max
            && hi.is_none_or(|(m, _, _)| x <= m)
        {
            hi = Some((x, true, "exclusiveMaximum"));
        }
        let multiple = match self.number_keyword(map, ptr, "multipleOf")? {
            Some(m) if m > 0.0 && m.is_finite() => Some(m),
            Some(_) => {
                self.problems.push(Problem::new(
                    DraftCode::MalformedSchema,
                    self.at(&pointer::push(ptr, "multipleOf")),
                    format!(
                        "not a usable JSON Schema: {message}",
                        message = "multipleOf must be greater than 0"
                    ),
                ));
                return None;
            }
            None => None,
        };
        Some(Bounds { lo, hi, multiple })
    }

    pub(super) fn integer(&mut self, map: &Map<String, Value>, ptr: &str) -> Option<Value> {
        let b = self.bounds(map, ptr)?;
        let lo =
            b.lo.map(|(x, ex, _)| if ex { x.floor() + 1.0 } else { x.ceil() });
        let hi =
            b.hi.map(|(x, ex, _)| if ex { x.ceil() - 1.0 } else { x.floor() });
        let step = match b.multiple {
            None => 1.0,
            Some(m) if m.fract() == 0.0 => m,
            Some(m) => match (1..=1000u32).map(f64::from).find(|q| {
                let r = q / m;
                (r - r.round()).abs() < 1e-9
            }) {
                Some(q) => q,
                None => {
                    self.problems.push(Problem::new(
                        DraftCode::UnsupportedKeyword,
                        self.at(&pointer::push(ptr, "multipleOf")),
                        format!(
                            "multipleOf cannot be satisfied by a derived value: no small integer is a multiple of {m}"
                        ),
                    ));
                    return None;
                }
            },
        };
        let k = self.pick_multiple(lo, hi, step, &b, ptr)?;
        let v = k * step;
        if v.abs() > 9_007_199_254_740_992.0 {
            let keyword = b.lo.or(b.hi).map(|(_, _, k)| k).unwrap_or("minimum");
            self.contradiction(ptr, keyword, "the bounds lie beyond ±2^53".into());
            return None;
        }
        Some(Value::Number(Number::from(v as i64)))
    }

    /// The multiplier `k` of `step` to use: 1 when in range, else the
    /// nearest bound.
    fn pick_multiple(
        &mut self,
        lo: Option<f64>,
        hi: Option<f64>,
        step: f64,
        b: &Bounds,
        ptr: &str,
    ) -> Option<f64> {
        let kmin = lo.map(|l| (l / step).ceil());
        let kmax = hi.map(|h| (h / step).floor());
        // 1 × step when it lies in range (a count of 1 reads better than 0),
        // else the bound nearest to it.
        let k = match (kmin, kmax) {
            (a, z) if a.is_none_or(|a| a <= 1.0) && z.is_none_or(|z| z >= 1.0) => 1.0,
            (Some(a), _) if a > 1.0 => a,
            (_, Some(z)) => z,
            (Some(a), None) => a,
            (None, None) => 1.0,
        };
        if let (Some(a), Some(z)) = (kmin, kmax)
            && a > z
        {
            let keyword = b.lo.map(|(_, _, k)| k).unwrap_or("minimum");
            let detail = match b.multiple {
                Some(m) => format!("no multiple of {m} lies between the lower and upper bounds"),
                None => "the lower bound exceeds the upper bound".into(),
            };
            self.contradiction(ptr, keyword, detail);
            return None;
        }
        Some(k)
    }

    pub(super) fn number(&mut self, map: &Map<String, Value>, ptr: &str) -> Option<Value> {
        let b = self.bounds(map, ptr)?;
        if let (Some((l, lex, lk)), Some((h, hex, _))) = (b.lo, b.hi)
            && (l > h || (l == h && (lex || hex)))
        {
            self.contradiction(
                ptr,
                lk,
                format!("the lower bound {l} is not below the upper bound {h}"),
            );
            return None;
        }
        match b.multiple {
            Some(m) => {
                let lo = b.lo.map(|(x, ex, _)| {
                    let k = (x / m).ceil();
                    if ex && k * m <= x { k + 1.0 } else { k }
                });
                let hi = b.hi.map(|(x, ex, _)| {
                    let k = (x / m).floor();
                    if ex && k * m >= x { k - 1.0 } else { k }
                });
                let k = self.pick_multiple(lo, hi, 1.0, &b, ptr)?;
                // Rounding to m's decimals can cross a bound written with more
                // digits: take the first candidate that lies within the bounds.
                let within = |v: f64| {
                    b.lo.is_none_or(|(x, ex, _)| if ex { v > x } else { v >= x })
                        && b.hi
                            .is_none_or(|(x, ex, _)| if ex { v < x } else { v <= x })
                };
                let ks = [k, k - 1.0, k + 1.0];
                let candidates = ks
                    .iter()
                    .map(|k| round_like(k * m, m))
                    .chain(ks.iter().map(|k| k * m));
                for v in candidates {
                    if within(v) {
                        return Some(number_value(v));
                    }
                }
                self.problems.push(Problem::new(
                    DraftCode::UnsupportedKeyword,
                    self.at(&pointer::push(ptr, "multipleOf")),
                    format!(
                        "multipleOf cannot be satisfied by a derived value: no multiple of {m} can be written exactly within the bounds"
                    ),
                ));
                None
            }
            None => {
                // An integer when one lies in range, else the midpoint.
                let lo =
                    b.lo.map(|(x, ex, _)| if ex { x.floor() + 1.0 } else { x.ceil() });
                let hi =
                    b.hi.map(|(x, ex, _)| if ex { x.ceil() - 1.0 } else { x.floor() });
                match (lo, hi) {
                    (Some(a), Some(z)) if a > z => {
                        let (l, _, _) = b.lo.unwrap_or((0.0, false, ""));
                        let (h, _, _) = b.hi.unwrap_or((0.0, false, ""));
                        Some(number_value((l + h) / 2.0))
                    }
                    (a, z) if a.is_none_or(|a| a <= 1.0) && z.is_none_or(|z| z >= 1.0) => {
                        Some(number_value(1.0))
                    }
                    (Some(a), _) if a > 1.0 => Some(number_value(a)),
                    (_, Some(z)) => Some(number_value(z)),
                    (Some(a), None) => Some(number_value(a)),
                    (None, None) => Some(number_value(1.0)),
                }
            }
        }
    }
}

/// Numeric bounds of one schema node.
struct Bounds {
    lo: Option<(f64, bool, &'static str)>,
    hi: Option<(f64, bool, &'static str)>,
    multiple: Option<f64>,
}

/// A finite double as a JSON number, written as an integer when it is one.
fn number_value(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0 {
        Value::Number(Number::from(v as i64))
    } else {
        Number::from_f64(v)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}

/// Rounds `v` to as many decimals as `m` has, so `3 × 0.1` is written `0.3`.
fn round_like(v: f64, m: f64) -> f64 {
    let text = format!("{m}");
    let decimals = text.split_once('.').map(|(_, d)| d.len()).unwrap_or(0);
    if decimals == 0 || decimals > 15 {
        return v;
    }
    let scale = 10f64.powi(decimals as i32);
    (v * scale).round() / scale
}

/// The sample value of each string format the generator knows.
fn format_sample(format: &str) -> Option<&'static str> {
    Some(match format {
        "date" => "2026-01-15",
        "date-time" => "2026-01-15T09:30:00Z",
        "time" => "09:30:00Z",
        "email" | "idn-email" => "user@example.com",
        "uuid" => "3f2c8a4e-9b1d-4c7e-8f6a-2d5b7c9e1a30",
        "uri" | "iri" => "https://example.com/resource",
        "uri-reference" | "iri-reference" => "/resource",
        "uri-template" => "https://example.com/{id}",
        "hostname" | "idn-hostname" => "example.com",
        "ipv4" => "192.0.2.10",
        "ipv6" => "2001:db8::10",
        "duration" => "P1D",
        "json-pointer" => "/example",
        "relative-json-pointer" => "0",
        "regex" => "^example$",
        _ => return None,
    })
}

/// Formats whose sample can be lengthened by padding (before, after).
fn format_padding(format: &str, sample: &str, extra: usize) -> Option<String> {
    let pad = "x".repeat(extra);
    match format {
        "email" | "idn-email" => Some(format!("user{pad}@example.com")),
        "uri" | "iri" | "uri-reference" | "iri-reference" | "json-pointer" => {
            Some(format!("{sample}{pad}"))
        }
        _ => None,
    }
}
