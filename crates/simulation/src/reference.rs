//! Typed references in step and workflow arguments.
//!
//! An argument value is copied as it is, except objects with a key starting
//! with `$`: such an object must be exactly one reference (one key). The
//! referenced value replaces it with its JSON type kept — never a string
//! template. Scripts use `$case` (the case's data) and `$step` (an earlier
//! step: `ID.result.P`, `ID.arguments.P`, `ID.error.code`); workflows use
//! `$input` (the workflow's input) and `$node` (an earlier node's output:
//! `ID.P`). `{"$literal": V}` is V, unevaluated (a way to send `$` keys).

use serde_json::{Map, Value};
use toolmock_contract::pointer;

/// The reference operators of one context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// A scripted step: `$case`, `$step`, `$literal`.
    Step,
    /// A workflow node: `$input`, `$node`, `$literal`.
    Workflow,
}

impl Scope {
    fn allows(self, operator: &str) -> bool {
        match self {
            Scope::Step => matches!(operator, "$case" | "$step" | "$literal"),
            Scope::Workflow => matches!(operator, "$input" | "$node" | "$literal"),
        }
    }

    fn names(self) -> &'static str {
        match self {
            Scope::Step => "$case, $step or $literal",
            Scope::Workflow => "$input, $node or $literal",
        }
    }
}

/// One reference found in a template, for static checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FoundReference {
    /// `$case`, `$step`, `$input`, `$node`.
    pub operator: String,
    /// Its path text.
    pub path: String,
    /// JSON pointer of the reference object inside the template.
    pub at: String,
}

/// A malformed reference: JSON pointer (inside the template) and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadReference {
    /// Where.
    pub at: String,
    /// What is wrong.
    pub message: String,
}

/// Collects every reference of `template` (and every malformed one).
pub(crate) fn scan(
    template: &Value,
    scope: Scope,
    at: &str,
    found: &mut Vec<FoundReference>,
    bad: &mut Vec<BadReference>,
) {
    match template {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                scan(item, scope, &pointer::index(at, i), found, bad);
            }
        }
        Value::Object(map) => {
            if !map.keys().any(|k| k.starts_with('$')) {
                for (k, v) in map {
                    scan(v, scope, &pointer::push(at, k), found, bad);
                }
                return;
            }
            let Some((operator, value)) = single(map) else {
                bad.push(BadReference {
                    at: at.to_owned(),
                    message: format!(
                        "an object with a $ key must be exactly one reference ({})",
                        scope.names()
                    ),
                });
                return;
            };
            if !scope.allows(operator) {
                bad.push(BadReference {
                    at: pointer::push(at, operator),
                    message: format!("{operator} is not a reference here; use {}", scope.names()),
                });
                return;
            }
            if operator == "$literal" {
                return;
            }
            match value {
                Value::String(path) if valid_path(path) => found.push(FoundReference {
                    operator: operator.to_owned(),
                    path: path.clone(),
                    at: at.to_owned(),
                }),
                _ => bad.push(BadReference {
                    at: pointer::push(at, operator),
                    message: format!("{operator} takes a dot-separated path string"),
                }),
            }
        }
        _ => {}
    }
}

fn single(map: &Map<String, Value>) -> Option<(&str, &Value)> {
    let mut it = map.iter();
    let (k, v) = it.next()?;
    if it.next().is_some() {
        return None;
    }
    Some((k.as_str(), v))
}

/// Whether `path` is a docs/spec.md §5 path (`""` or non-empty dot-separated segments).
pub(crate) fn valid_path(path: &str) -> bool {
    path.is_empty() || path.split('.').all(|s| !s.is_empty())
}

/// The value at a docs/spec.md §5 path, or `None` when it does not resolve.
pub(crate) fn resolve_path<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    if path.is_empty() {
        return Some(value);
    }
    let mut current = value;
    for segment in path.split('.') {
        current = match current {
            Value::Object(map) => map.get(segment)?,
            Value::Array(items) => {
                let canonical = segment == "0"
                    || (!segment.starts_with('0') && segment.bytes().all(|b| b.is_ascii_digit()));
                if !canonical || segment.is_empty() {
                    return None;
                }
                items.get(segment.parse::<usize>().ok()?)?
            }
            _ => return None,
        };
    }
    Some(current)
}

/// Splits `ID.rest` into the id and the rest (`""` when there is none).
pub(crate) fn split_head(path: &str) -> (&str, &str) {
    path.split_once('.').unwrap_or((path, ""))
}

/// Renders a template: `lookup(operator, path)` answers each reference.
/// The first reference that does not resolve is returned as `Err((at, operator, path))`.
pub(crate) fn render<'a, F>(template: &Value, at: &str, lookup: &F) -> Result<Value, Unresolved>
where
    F: Fn(&str, &str) -> Option<Value> + 'a,
{
    match template {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| render(item, &pointer::index(at, i), lookup))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        Value::Object(map) => {
            if let Some((operator, value)) = single(map).filter(|(k, _)| k.starts_with('$')) {
                if operator == "$literal" {
                    return Ok(value.clone());
                }
                let path = value.as_str().unwrap_or_default();
                return lookup(operator, path).ok_or_else(|| Unresolved {
                    at: at.to_owned(),
                    operator: operator.to_owned(),
                    path: path.to_owned(),
                });
            }
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                out.insert(k.clone(), render(v, &pointer::push(at, k), lookup)?);
            }
            Ok(Value::Object(out))
        }
        other => Ok(other.clone()),
    }
}

/// A reference that did not resolve when rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unresolved {
    /// JSON pointer of the reference inside the template.
    pub at: String,
    /// The operator.
    pub operator: String,
    /// The path.
    pub path: String,
}

impl std::fmt::Display for Unresolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{{\"{}\": {:?}}} at {} does not resolve",
            self.operator,
            self.path,
            if self.at.is_empty() { "/" } else { &self.at }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn references_keep_their_types() {
        let data = json!({"id": "M-1", "age": 41, "tags": ["a"]});
        let template = json!({"member": {"$case": "id"}, "age": {"$case": "age"},
            "tags": {"$case": "tags"}, "raw": {"$literal": {"$case": "x"}}, "n": [1, {"$case": "tags.0"}]});
        let out = render(&template, "", &|op, p| {
            (op == "$case")
                .then(|| resolve_path(&data, p).cloned())
                .flatten()
        })
        .unwrap();
        assert_eq!(
            out,
            json!({"member": "M-1", "age": 41, "tags": ["a"], "raw": {"$case": "x"}, "n": [1, "a"]})
        );
    }

    #[test]
    fn unresolved_and_malformed_references_are_reported_with_pointers() {
        let template = json!({"a": [{"$case": "nope"}]});
        let err = render(&template, "/args", &|_, _| None).unwrap_err();
        assert_eq!(err.at, "/args/a/0");
        let (mut found, mut bad) = (vec![], vec![]);
        scan(
            &json!({"x": {"$case": "a", "y": 1}, "z": {"$input": "a"}, "w": {"$step": 3}, "ok": {"$step": "s.result"}}),
            Scope::Step,
            "",
            &mut found,
            &mut bad,
        );
        let at: Vec<&str> = bad.iter().map(|b| b.at.as_str()).collect();
        assert_eq!(at, vec!["/w/$step", "/x", "/z/$input"]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path, "s.result");
    }

    #[test]
    fn paths_follow_spec_section_5() {
        let v = json!({"records": [{"Id": "x"}], "0": "key"});
        assert_eq!(resolve_path(&v, "records.0.Id"), Some(&json!("x")));
        assert_eq!(resolve_path(&v, "records.00.Id"), None);
        assert_eq!(resolve_path(&v, "records.1"), None);
        assert_eq!(resolve_path(&v, "0"), Some(&json!("key")));
        assert_eq!(resolve_path(&v, ""), Some(&v));
    }
}
