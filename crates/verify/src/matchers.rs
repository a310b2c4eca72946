//! How a real answer is compared with the mock's: exactly by default
//! (docs/spec.md §5 equality: numbers by value, key order free), or as a
//! matcher says at a path and below — `type` (the same JSON kinds,
//! recursively), `ignore`, `number` (within a tolerance), `regex` (both
//! values match a pattern: generated ids and times). Every difference is a
//! [`Divergence`] at its JSON pointer into the answer. Pure.

use crate::DivergenceKind;
use serde::Serialize;
use serde_json::{Map, Value};
use toolmock_contract::{json_kind, pointer};
use toolmock_simulation::document::MatchKind;

/// One difference between the mock's answer and the real tool's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Divergence {
    /// A JSON pointer into the answer (`""`: the whole answer).
    pub path: String,
    /// What kind of difference.
    pub kind: DivergenceKind,
    /// The mock's value there, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mock: Option<Value>,
    /// The real tool's value there, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub real: Option<Value>,
    /// In words.
    pub message: String,
}

impl Divergence {
    pub(crate) fn new(
        path: impl Into<String>,
        kind: DivergenceKind,
        mock: Option<&Value>,
        real: Option<&Value>,
        message: impl Into<String>,
    ) -> Self {
        Divergence {
            path: path.into(),
            kind,
            mock: mock.cloned(),
            real: real.cloned(),
            message: message.into(),
        }
    }
}

/// One compiled matcher.
#[derive(Debug, Clone)]
pub struct Matcher {
    operation: Option<String>,
    /// The pointer's segments; `*` matches any one.
    segments: Vec<String>,
    kind: MatchKind,
    tolerance: f64,
    pattern: Option<regex::Regex>,
}

impl Matcher {
    /// A matcher (its fields already checked, `path` a JSON pointer).
    pub(crate) fn new(
        operation: Option<String>,
        path: &str,
        kind: MatchKind,
        tolerance: f64,
        pattern: Option<regex::Regex>,
    ) -> Self {
        Matcher {
            operation,
            segments: segments(path),
            kind,
            tolerance,
            pattern,
        }
    }

    fn applies_to(&self, operation: &str) -> bool {
        self.operation.as_deref().is_none_or(|o| o == operation)
    }

    fn matches(&self, at: &[String]) -> bool {
        self.segments.len() == at.len()
            && self
                .segments
                .iter()
                .zip(at)
                .all(|(pattern, segment)| pattern == "*" || pattern == segment)
    }
}

/// The unescaped segments of a JSON pointer (`""` has none).
pub(crate) fn segments(path: &str) -> Vec<String> {
    if path.is_empty() {
        return Vec::new();
    }
    path.split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// A tool's matchers.
#[derive(Debug, Clone, Default)]
pub struct Matchers {
    all: Vec<Matcher>,
}

/// The matchers that apply to one operation's answers.
struct Applicable<'a>(Vec<&'a Matcher>);

impl Applicable<'_> {
    /// The first matcher whose path is exactly `at`, if any.
    fn at(&self, at: &[String]) -> Option<&Matcher> {
        self.0.iter().copied().find(|m| m.matches(at))
    }
}

impl Matchers {
    /// The matchers, in the order given (the first of several at one path applies).
    pub fn new(all: Vec<Matcher>) -> Self {
        Matchers { all }
    }

    /// Every difference between `mock` and `real`, answers of `operation`.
    pub fn compare(&self, operation: &str, mock: &Value, real: &Value) -> Vec<Divergence> {
        let applicable = Applicable(
            self.all
                .iter()
                .filter(|m| m.applies_to(operation))
                .collect(),
        );
        let mut out = Vec::new();
        let mut at = Vec::new();
        compare(&applicable, mock, real, &mut at, None, &mut out);
        out
    }
}

fn path_of(at: &[String]) -> String {
    at.iter()
        .fold(String::new(), |path, segment| pointer::push(&path, segment))
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 80 {
        format!("{}…", text.chars().take(79).collect::<String>())
    } else {
        text
    }
}

/// Compares at `at`, where `inherited` is the matcher of the nearest
/// ancestor that had one.
fn compare(
    matchers: &Applicable<'_>,
    mock: &Value,
    real: &Value,
    at: &mut Vec<String>,
    inherited: Option<&Matcher>,
    out: &mut Vec<Divergence>,
) {
    let here = matchers.at(at).or(inherited);
    let kind = here.map_or(MatchKind::Exact, |m| m.kind);
    match kind {
        MatchKind::Ignore => {}
        MatchKind::Regex => {
            let pattern = here.and_then(|m| m.pattern.as_ref());
            for (side, value) in [("the mock's", mock), ("the real", real)] {
                let fits =
                    pattern.is_some_and(|p| value.as_str().is_some_and(|text| p.is_match(text)));
                if !fits {
                    out.push(Divergence::new(
                        path_of(at),
                        DivergenceKind::PatternMismatch,
                        Some(mock),
                        Some(real),
                        format!(
                            "{side} value {} does not match {}",
                            short(value),
                            pattern.map_or(String::new(), |p| format!("{:?}", p.as_str()))
                        ),
                    ));
                }
            }
        }
        MatchKind::Number => match (mock.as_f64(), real.as_f64()) {
            (Some(a), Some(b)) => {
                let tolerance = here.map_or(0.0, |m| m.tolerance);
                if (a - b).abs() > tolerance {
                    out.push(Divergence::new(
                        path_of(at),
                        DivergenceKind::OutOfTolerance,
                        Some(mock),
                        Some(real),
                        format!("the mock says {mock}, the real tool {real}: more than {tolerance} apart"),
                    ));
                }
            }
            _ => out.push(kind_differs(at, mock, real)),
        },
        MatchKind::Exact | MatchKind::Type => {
            let typed = kind == MatchKind::Type;
            match (mock, real) {
                (Value::Object(m), Value::Object(r)) => objects(matchers, m, r, at, here, out),
                (Value::Array(m), Value::Array(r)) => {
                    for (i, real_item) in r.iter().enumerate() {
                        let mock_item = match m.get(i) {
                            Some(item) => Some(item),
                            // Type-only: the mock's first element shows the elements' shape.
                            None if typed => m.first(),
                            None => None,
                        };
                        at.push(i.to_string());
                        match mock_item {
                            Some(mock_item) => {
                                compare(matchers, mock_item, real_item, at, here, out)
                            }
                            None => unexpected(matchers, at, real_item, out),
                        }
                        at.pop();
                    }
                    if !typed {
                        for (i, mock_item) in m.iter().enumerate().skip(r.len()) {
                            at.push(i.to_string());
                            missing(matchers, at, mock_item, out);
                            at.pop();
                        }
                    }
                }
                (a, b) if same_kind(a, b) => {
                    if !typed && !toolmock_evaluator::json_equal(a, b) {
                        out.push(Divergence::new(
                            path_of(at),
                            DivergenceKind::ValueDiffers,
                            Some(a),
                            Some(b),
                            format!("the mock says {}, the real tool {}", short(a), short(b)),
                        ));
                    }
                }
                _ => out.push(kind_differs(at, mock, real)),
            }
        }
    }
}

fn same_kind(a: &Value, b: &Value) -> bool {
    json_kind(a) == json_kind(b)
}

fn kind_differs(at: &[String], mock: &Value, real: &Value) -> Divergence {
    Divergence::new(
        path_of(at),
        DivergenceKind::KindDiffers,
        Some(mock),
        Some(real),
        format!(
            "the mock answers {}, the real tool {}",
            json_kind(mock),
            json_kind(real)
        ),
    )
}

fn objects(
    matchers: &Applicable<'_>,
    mock: &Map<String, Value>,
    real: &Map<String, Value>,
    at: &mut Vec<String>,
    here: Option<&Matcher>,
    out: &mut Vec<Divergence>,
) {
    // The union of the keys, in order, so divergences read top to bottom.
    let keys: std::collections::BTreeSet<&String> = mock.keys().chain(real.keys()).collect();
    for key in keys {
        at.push(key.clone());
        match (mock.get(key), real.get(key)) {
            (Some(m), Some(r)) => compare(matchers, m, r, at, here, out),
            (Some(m), None) => missing(matchers, at, m, out),
            (None, Some(r)) => unexpected(matchers, at, r, out),
            (None, None) => {}
        }
        at.pop();
    }
}

/// Whether an `ignore` matcher covers `at` (so a member only one side has
/// is no divergence).
fn ignored(matchers: &Applicable<'_>, at: &[String]) -> bool {
    (0..=at.len())
        .rev()
        .find_map(|n| matchers.at(&at[..n]))
        .is_some_and(|m| m.kind == MatchKind::Ignore)
}

fn missing(matchers: &Applicable<'_>, at: &[String], mock: &Value, out: &mut Vec<Divergence>) {
    if !ignored(matchers, at) {
        out.push(Divergence::new(
            path_of(at),
            DivergenceKind::MissingMember,
            Some(mock),
            None,
            format!("the mock has {}, the real answer nothing here", short(mock)),
        ));
    }
}

fn unexpected(matchers: &Applicable<'_>, at: &[String], real: &Value, out: &mut Vec<Divergence>) {
    if !ignored(matchers, at) {
        out.push(Divergence::new(
            path_of(at),
            DivergenceKind::UnexpectedMember,
            None,
            Some(real),
            format!("the real answer has {}, the mock nothing here", short(real)),
        ));
    }
}
