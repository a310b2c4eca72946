//! Dot-separated paths (docs/spec.md §5): parsed and split once when the
//! definition is compiled, and followed through a value per call.

use crate::check::diagnostics::pointer_push;
use serde_json::Value;

/// One segment: a key, and the array index it also denotes when it is a
/// decimal number without leading zeros.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Segment {
    pub(crate) key: Box<str>,
    pub(crate) index: Option<usize>,
}

impl Segment {
    /// A segment named by its text, as a dot-separated path's segments are.
    pub(crate) fn of_key(key: &str) -> Segment {
        Segment {
            key: key.into(),
            index: array_index(key),
        }
    }
}

/// A parsed path. `""` is the whole document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Path {
    raw: Box<str>,
    segments: Box<[Segment]>,
}

/// Why a path is not valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InvalidPath {
    pub(crate) message: String,
}

impl Path {
    pub(crate) fn parse(raw: &str) -> Result<Path, InvalidPath> {
        if raw.is_empty() {
            return Ok(Path {
                raw: raw.into(),
                segments: Box::new([]),
            });
        }
        let mut segments = Vec::new();
        for (i, segment) in raw.split('.').enumerate() {
            if segment.is_empty() {
                return Err(InvalidPath {
                    message: format!(
                        "path {raw:?} has an empty segment (segment {}); segments are separated by single dots and \"\" alone means the whole document",
                        i + 1
                    ),
                });
            }
            segments.push(Segment {
                key: segment.into(),
                index: array_index(segment),
            });
        }
        Ok(Path {
            raw: raw.into(),
            segments: segments.into_boxed_slice(),
        })
    }

    /// The empty path: the whole document.
    pub(crate) fn whole() -> Path {
        Path {
            raw: "".into(),
            segments: Box::new([]),
        }
    }

    /// The path as written.
    pub(crate) fn as_str(&self) -> &str {
        &self.raw
    }

    /// The path as a JSON pointer (`records.0.Id` → `/records/0/Id`).
    pub(crate) fn to_pointer(&self) -> String {
        let mut out = String::new();
        for segment in self.segments.iter() {
            out = pointer_push(&out, &segment.key);
        }
        out
    }

    /// Resolves against a value; `None` when any segment finds nothing.
    pub(crate) fn resolve<'v>(&self, root: &'v Value) -> Option<&'v Value> {
        self.segments
            .iter()
            .try_fold(root, |value, segment| step(value, segment))
    }

    /// The segments, in order.
    pub(crate) fn segments(&self) -> &[Segment] {
        &self.segments
    }
}

/// The outcome of resolving a path in an object that is not itself a `Value`.
#[derive(Debug)]
pub(crate) enum Resolved<'v> {
    /// The empty path: the whole object.
    Whole,
    /// The value found.
    Found(&'v Value),
    /// The value found, built from a layered state's base and overlay
    /// (never remembered).
    Built(Value),
    /// Nothing at that path.
    Missing,
}

pub(crate) fn step<'v>(value: &'v Value, segment: &Segment) -> Option<&'v Value> {
    match value {
        Value::Object(map) => map.get(&*segment.key),
        Value::Array(items) => segment.index.and_then(|i| items.get(i)),
        _ => None,
    }
}

fn array_index(segment: &str) -> Option<usize> {
    let bytes = segment.as_bytes();
    let digits = !bytes.is_empty() && bytes.iter().all(u8::is_ascii_digit);
    let leading_zero = bytes.len() > 1 && bytes[0] == b'0';
    if digits && !leading_zero {
        segment.parse().ok()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_and_resolves() {
        let doc = json!({"records": [{"Id": "a"}, {"Id": "b"}], "01": 1, "m": {"0": "zero"}});
        let p = |s: &str| Path::parse(s).unwrap();
        assert_eq!(p("records.1.Id").resolve(&doc), Some(&json!("b")));
        assert_eq!(p("records.01.Id").resolve(&doc), None);
        assert_eq!(p("01").resolve(&doc), Some(&json!(1)));
        assert_eq!(p("m.0").resolve(&doc), Some(&json!("zero")));
        assert_eq!(p("").resolve(&doc), Some(&doc));
        assert_eq!(p("records.2").resolve(&doc), None);
        assert_eq!(p("records.1.Id").to_pointer(), "/records/1/Id");
    }

    #[test]
    fn refuses_empty_segments() {
        for bad in [".", "a.", ".a", "a..b"] {
            assert!(Path::parse(bad).is_err(), "{bad}");
        }
    }
}
