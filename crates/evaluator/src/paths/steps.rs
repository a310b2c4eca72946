//! A computed path's segments for one call: each segment's key (and index),
//! and where its text came from, which decides who is blamed when the
//! segment cannot be followed.

use crate::check::diagnostics::pointer_push;
use crate::error::Origin;
use crate::paths::dotted::Segment;
use serde_json::Value;

/// One segment of one call.
#[derive(Debug)]
pub(crate) struct Step {
    pub(crate) segment: Segment,
    pub(crate) origin: Origin,
    /// For a reference segment: where its value is, as a JSON pointer into the
    /// input or the state.
    pub(crate) from: Option<String>,
}

/// A computed path's segments for one call, or where it stopped: a `$find`
/// segment that found nothing leaves the path unresolved.
pub(crate) enum Steps {
    All(Vec<Step>),
    Unfound { pointer: String },
}

/// A computed path resolved for one call.
pub(crate) enum Found<'v> {
    /// The empty path in the state: the whole state.
    Whole,
    /// The value found.
    Value(&'v Value),
    /// The value found, built from a layered state's base and overlay.
    Built(Value),
    /// Nothing at the path; `pointer` is where it was looked for.
    Missing { pointer: String },
}

/// A non-negative integer (integral floats count, as everywhere in the
/// language) as the segment of its decimal text.
pub(crate) fn index_segment(value: &Value) -> Option<Segment> {
    let n = value.as_u64().or_else(|| {
        let f = value.as_f64()?;
        // Below 2^53 every integer is exact, so the text is the integer's.
        (f.fract() == 0.0 && (0.0..9_007_199_254_740_992.0).contains(&f)).then_some(f as u64)
    })?;
    Some(Segment {
        key: n.to_string().into(),
        index: usize::try_from(n).ok(),
    })
}

/// A segment's value as a segment: a string is a key (and an index when it
/// is decimal digits without leading zeros), a non-negative integer an
/// index (and the key of its decimal text); anything else is none.
pub(crate) fn segment_of(value: &Value) -> Option<Segment> {
    match value {
        Value::String(key) => Some(Segment::of_key(key)),
        Value::Number(_) => index_segment(value),
        _ => None,
    }
}

/// What a value is, for a message about a segment it cannot be.
pub(crate) fn describe(value: &Value) -> String {
    match value {
        Value::Number(_) => format!("the number {value}"),
        other => toolmock_contract::json_kind(other).to_owned(),
    }
}

/// The JSON pointer of the segments taken.
pub(crate) fn pointer_of(steps: &[Step]) -> String {
    steps
        .iter()
        .fold(String::new(), |out, s| pointer_push(&out, &s.segment.key))
}
