//! Check warnings: what a definition that passes its check still gets wrong,
//! decided exactly from the definition and the contract.
//!
//! - `optional_input_reference`: a `$input` reference to a path the input
//!   schema does not guarantee (not required at every level, or required by
//!   only some `anyOf`/`oneOf` branches), outside a rule that tests that path
//!   with `exists: true`, `eq` or `in`. A valid call without it ends as the
//!   harness error `missing_reference`, however many examples happened to
//!   supply it. A rule's own conditions prove a path present, and so does
//!   the failure of an earlier rule whose only condition is `exists: false`
//!   or `ne` on it; a `$if`'s conditions prove paths in its `then`; a test
//!   of an array element proves its earlier siblings (`items.2` proves
//!   `items.0`); a variant's own `result` or `set_state` must be safe in
//!   every case it is rendered (no rule matched, or a matching rule left it
//!   out). One warning per input path: its pointer is the first place
//!   that reads the path unproven, and its message counts and lists the
//!   places (a port that reads one optional member in forty rules gets one
//!   warning, not forty). These warnings come first, in the order their
//!   first places are met.
//! - `unreachable_rule`: a rule whose conditions include every condition of
//!   an earlier rule of its variant: whenever it could hold, the earlier one
//!   holds first, so it never answers.
//! - `reference_like_value`: in a version-1 document, a condition whose
//!   `value` is exactly one `$input` or `$state` member; version 1 compares it
//!   as the literal object, so the rule is almost surely not what was meant
//!   (version 2 reads it as a reference).
//!
//! A variant cannot be unused: variants are chosen by name, and the check
//! already refuses one that no example names (`variant_without_example`).
//! Where a schema uses what cannot be followed exactly (`if`, `not`,
//! `dependentRequired`, a remote `$ref`, …) no warning is given.

use crate::check::diagnostics::{pointer_index, pointer_push};
use crate::contract::CompiledContract;
use crate::json::json_equal;
use serde_json::{Map, Value};
use toolmock_contract::{Problems, problem_codes};

problem_codes! {
    /// What a check warning is about. Warnings do not fail a check unless
    /// asked to (`toolmock check --deny-warnings`).
    pub enum WarningCode {
        /// A `$input` reference to a path the input schema does not guarantee,
        /// outside a rule that tests that path.
        OptionalInputReference => "optional_input_reference",
        /// A rule an earlier rule of its variant, with a subset of its
        /// conditions, always answers first.
        UnreachableRule => "unreachable_rule",
        /// In a version-1 document, a condition's `value` that looks like a
        /// `$input`/`$state` reference: it is compared as a literal.
        ReferenceLikeValue => "reference_like_value",
    }
}

/// Every warning of a definition, variant by variant.
pub type Warnings = Problems<WarningCode>;

/// The warnings of a definition that passed its check (on one that did not,
/// they are not meaningful). Without a contract there is no input schema, so
/// only `unreachable_rule` can be decided.
pub fn warnings(definition: &Value, contract: Option<&CompiledContract>) -> Warnings {
    let mut out = Warnings::new();
    let Some(variants) = definition.get("variants").and_then(Value::as_object) else {
        return out;
    };
    let input_schema = contract.map(|c| &c.contract().input_schema);
    let mut unproven = Unproven::default();
    let mut rest = Warnings::new();
    for (name, variant) in variants {
        let at = pointer_push("/variants", name);
        let rules: &[Value] = variant
            .get("rules")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice);
        if let Some(schema) = input_schema {
            // Paths proven present by the failure of each rule before: a
            // rule whose only condition is `exists: false` or `ne` on an
            // input path fails only when that path resolves.
            let mut failed: Vec<Vec<String>> = vec![Vec::new()];
            for rule in rules {
                let mut next = failed.last().cloned().unwrap_or_default();
                next.extend(proven_by_failure(rule));
                failed.push(next);
            }
            for (i, rule) in rules.iter().enumerate() {
                let rule_at = pointer_index(&pointer_push(&at, "rules"), i);
                let mut guards = guarded_paths(rule);
                guards.extend(failed[i].iter().cloned());
                for member in ["result", "error", "set_state"] {
                    if let Some(value) = rule.get(member) {
                        let scenarios = [guards.clone()];
                        optional_references(
                            value,
                            &pointer_push(&rule_at, member),
                            schema,
                            &scenarios,
                            &mut unproven,
                        );
                    }
                }
            }
            // The variant's own member answers when no rule matches, and when
            // a matching rule leaves that member out.
            for member in ["result", "error", "set_state"] {
                let Some(value) = variant.get(member) else {
                    continue;
                };
                // A rule's `result` or `error` replaces the variant's answer,
                // whichever of the two the variant gives.
                let leaves_out = |rule: &Value| match member {
                    "set_state" => rule.get(member).is_none(),
                    _ => rule.get("result").is_none() && rule.get("error").is_none(),
                };
                let mut scenarios = vec![failed[rules.len()].clone()];
                for (k, rule) in rules.iter().enumerate() {
                    if leaves_out(rule) {
                        let mut guards = guarded_paths(rule);
                        guards.extend(failed[k].iter().cloned());
                        scenarios.push(guards);
                    }
                }
                optional_references(
                    value,
                    &pointer_push(&at, member),
                    schema,
                    &scenarios,
                    &mut unproven,
                );
            }
        }
        unreachable_rules(rules, &pointer_push(&at, "rules"), &mut rest);
        if definition.get("schema_version").and_then(Value::as_u64) == Some(1) {
            reference_like_values(rules, &pointer_push(&at, "rules"), &mut rest);
        }
    }
    unproven.warn(&mut out);
    out.extend(rest);
    out
}

/// How many places a grouped `optional_input_reference` message lists.
const PLACES_LISTED: usize = 10;

/// The places reading each input path the schema does not guarantee,
/// unproven: input paths in the order first met, each with its pointers.
#[derive(Default)]
struct Unproven {
    paths: Vec<(String, Vec<String>)>,
}

impl Unproven {
    fn note(&mut self, path: &str, at: String) {
        match self.paths.iter_mut().find(|(p, _)| p == path) {
            Some((_, places)) => places.push(at),
            None => self.paths.push((path.to_owned(), vec![at])),
        }
    }

    /// One warning per input path, at its first place.
    fn warn(self, out: &mut Warnings) {
        for (path, places) in self.paths {
            let mut message = format!(
                "the input schema does not guarantee {path:?}, so a valid call without it ends as harness error missing_reference; make it required, or read it only in a rule that tests it (\"op\": \"exists\", \"value\": true)"
            );
            if places.len() > 1 {
                let listed = places[..places.len().min(PLACES_LISTED)].join(", ");
                let more = places.len().saturating_sub(PLACES_LISTED);
                message.push_str(&format!(
                    "; it is read so at {} places: {listed}{}",
                    places.len(),
                    if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    }
                ));
            }
            out.push(
                WarningCode::OptionalInputReference,
                places[0].clone(),
                message,
            );
        }
    }
}

/// The input path a rule's failure proves present: its only condition is
/// `exists: false` or `ne` on that path.
fn proven_by_failure(rule: &Value) -> Option<String> {
    let [condition] = rule.get("when")?.as_array()?.as_slice() else {
        return None;
    };
    if condition.get("source").and_then(Value::as_str) != Some("input") {
        return None;
    }
    let proves = match condition.get("op").and_then(Value::as_str) {
        Some("ne") => true,
        Some("exists") => condition.get("value") == Some(&Value::Bool(false)),
        _ => false,
    };
    proves.then(|| dotted(condition.get("path")?)).flatten()
}

/// Input paths a rule's conditions prove present: `exists: true`, `eq`,
/// `in` and (version 3) the ordering ops hold only on a path that resolves.
fn guarded_paths(rule: &Value) -> Vec<String> {
    guards_of(rule.get("when"))
}

/// The input paths the conditions of a `when` prove present, each as a
/// dotted path (a path written as an array of literal segments counts as
/// its dotted form; one with a computed segment proves nothing).
fn guards_of(when: Option<&Value>) -> Vec<String> {
    when.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c.get("source").and_then(Value::as_str) == Some("input"))
        .filter(|c| match c.get("op").and_then(Value::as_str) {
            Some("eq" | "in" | "contains" | "subset_of" | "eq_ci" | "lt" | "le" | "gt" | "ge") => {
                true
            }
            Some("exists") => c.get("value") == Some(&Value::Bool(true)),
            _ => false,
        })
        .filter_map(|c| dotted(c.get("path")?))
        .collect()
}

/// A condition's path as a dotted path: as written, or an array of
/// literal segments joined; `None` for a computed one.
fn dotted(path: &Value) -> Option<String> {
    match path {
        Value::String(path) => Some(path.clone()),
        Value::Array(items) => {
            let segments: Option<Vec<String>> = items
                .iter()
                .map(|s| match s {
                    Value::String(key) if !key.contains('.') && !key.is_empty() => {
                        Some(key.clone())
                    }
                    Value::Number(n) => n.as_u64().map(|n| n.to_string()),
                    _ => None,
                })
                .collect();
            segments.map(|s| s.join("."))
        }
        _ => None,
    }
}

/// Whether a guard on `guard` proves `path` present: the same path, a path
/// below it (which cannot resolve unless it does), or an earlier element of
/// an array an element of which it proves (an array has no holes: element
/// 3 there means elements 0 to 2 are there too).
fn proves(guard: &str, path: &str) -> bool {
    if guard == path
        || guard
            .strip_prefix(path)
            .is_some_and(|rest| rest.starts_with('.'))
    {
        return true;
    }
    let (g, p): (Vec<&str>, Vec<&str>) = (guard.split('.').collect(), path.split('.').collect());
    let Some((last, parents)) = p.split_last() else {
        return false;
    };
    parents.len() < g.len()
        && g.iter().zip(parents).all(|(a, b)| a == b)
        && match (index(last), g.get(parents.len()).and_then(|s| index(s))) {
            (Some(earlier), Some(proven)) => earlier <= proven,
            _ => false,
        }
}

/// An array index segment: decimal digits without a leading zero.
fn index(segment: &str) -> Option<u64> {
    let digits = !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit());
    (digits && (segment == "0" || !segment.starts_with('0')))
        .then(|| segment.parse().ok())
        .flatten()
}

/// Walks an expression, noting each `$input` reference the schema does
/// not guarantee and the guards of some scenario in which the expression is
/// rendered do not prove.
fn optional_references(
    value: &Value,
    at: &str,
    schema: &Value,
    scenarios: &[Vec<String>],
    out: &mut Unproven,
) {
    match value {
        Value::Object(map) => {
            if let (1, Some(Value::Object(choice))) = (map.len(), map.get("$if")) {
                // (Version 3) `then` is rendered only when `when` holds, so
                // its conditions prove paths there, in every scenario.
                let at = pointer_push(at, "$if");
                let proven = guards_of(choice.get("when"));
                let guarded: Vec<Vec<String>> = scenarios
                    .iter()
                    .map(|guards| {
                        guards
                            .iter()
                            .cloned()
                            .chain(proven.iter().cloned())
                            .collect()
                    })
                    .collect();
                for (key, item) in choice {
                    let inside = if key == "then" {
                        &guarded[..]
                    } else {
                        scenarios
                    };
                    optional_references(item, &pointer_push(&at, key), schema, inside, out);
                }
                return;
            }
            if let (1, Some(Value::String(path))) = (map.len(), map.get("$input")) {
                let segments: Vec<&str> = if path.is_empty() {
                    Vec::new()
                } else {
                    path.split('.').collect()
                };
                let proven = scenarios
                    .iter()
                    .all(|guards| guards.iter().any(|g| proves(g, path)));
                if !proven && guaranteed(schema, schema, &segments, 0) == Some(false) {
                    out.note(path, pointer_push(at, "$input"));
                }
                return;
            }
            for (key, item) in map {
                optional_references(item, &pointer_push(at, key), schema, scenarios, out);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                optional_references(item, &pointer_index(at, i), schema, scenarios, out);
            }
        }
        _ => {}
    }
}

/// Keywords whose effect on which members exist is not followed here.
const UNDECIDED: &[&str] = &[
    "if",
    "not",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "$dynamicRef",
    "$recursiveRef",
];

/// How deep `$ref`s and combinators are followed before giving up.
const MAX_DEPTH: usize = 32;

/// Whether every value valid against `schema` has `segments`: `Some(true)`
/// guaranteed, `Some(false)` some valid value lacks it, `None` undecided.
fn guaranteed(root: &Value, schema: &Value, segments: &[&str], depth: usize) -> Option<bool> {
    let Some((first, rest)) = segments.split_first() else {
        return Some(true);
    };
    if depth > MAX_DEPTH {
        return None;
    }
    let map = match schema {
        Value::Bool(accepts) => return Some(!accepts),
        Value::Object(map) => map,
        _ => return None,
    };
    // Everything that applies to the same value at once: this node, its
    // `$ref` and its `allOf` branches. One of them guaranteeing is enough.
    let mut conjuncts: Vec<Option<bool>> = vec![own(root, map, first, rest, depth)];
    if let Some(reference) = map.get("$ref") {
        conjuncts.push(
            resolve(root, reference)
                .and_then(|target| guaranteed(root, target, segments, depth + 1)),
        );
    }
    for branch in map
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        conjuncts.push(guaranteed(root, branch, segments, depth + 1));
    }
    // A value satisfies some branch of `anyOf` and `oneOf`: every branch
    // must guarantee the path.
    for keyword in ["anyOf", "oneOf"] {
        if let Some(branches) = map.get(keyword).and_then(Value::as_array) {
            let each: Vec<Option<bool>> = branches
                .iter()
                .map(|b| guaranteed(root, b, segments, depth + 1))
                .collect();
            conjuncts.push(if each.iter().all(|r| *r == Some(true)) {
                Some(true)
            } else if each.contains(&Some(false)) && !each.contains(&None) {
                Some(false)
            } else {
                None
            });
        }
    }
    if conjuncts.contains(&Some(true)) {
        Some(true)
    } else if conjuncts.contains(&None) || UNDECIDED.iter().any(|k| map.contains_key(*k)) {
        None
    } else {
        Some(false)
    }
}

/// What this node alone says: the member is required (or, for an array,
/// within `minItems`), and its own subschema guarantees the rest.
fn own(
    root: &Value,
    map: &Map<String, Value>,
    first: &str,
    rest: &[&str],
    depth: usize,
) -> Option<bool> {
    let (present, sub) = match first.parse::<usize>() {
        Ok(index) if is_array_schema(map) => (
            map.get("minItems")
                .and_then(Value::as_u64)
                .is_some_and(|min| (index as u64) < min),
            map.get("prefixItems")
                .and_then(Value::as_array)
                .and_then(|items| items.get(index))
                .or_else(|| map.get("items").filter(|i| !i.is_array())),
        ),
        _ => (
            map.get("required")
                .and_then(Value::as_array)
                .is_some_and(|r| r.iter().any(|n| n.as_str() == Some(first))),
            map.get("properties")
                .and_then(Value::as_object)
                .and_then(|p| p.get(first)),
        ),
    };
    if !present {
        return Some(false);
    }
    if rest.is_empty() {
        return Some(true);
    }
    match sub {
        Some(sub) => guaranteed(root, sub, rest, depth + 1),
        // Required, but what it holds is described elsewhere (another
        // `allOf` branch) or not at all.
        None => None,
    }
}

fn is_array_schema(map: &Map<String, Value>) -> bool {
    map.get("type").and_then(Value::as_str) == Some("array")
        || map.contains_key("items")
        || map.contains_key("prefixItems")
}

/// A local `$ref` (`#` or `#/json/pointer`) inside the schema.
fn resolve<'s>(root: &'s Value, reference: &Value) -> Option<&'s Value> {
    let fragment = reference.as_str()?.strip_prefix('#')?;
    if fragment.contains('%') {
        return None;
    }
    root.pointer(fragment)
}

/// `unreachable_rule`: rule `j` is shadowed when an earlier rule `i` has only
/// conditions that `j` also has.
fn unreachable_rules(rules: &[Value], at: &str, out: &mut Warnings) {
    let conditions = |rule: &Value| -> Vec<Value> {
        rule.get("when")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let all: Vec<Vec<Value>> = rules.iter().map(conditions).collect();
    for (j, later) in all.iter().enumerate() {
        let shadow = all[..j].iter().position(|earlier| {
            earlier
                .iter()
                .all(|c| later.iter().any(|d| same_condition(c, d)))
        });
        if let Some(i) = shadow {
            let why = if all[i].is_empty() {
                format!("rule {i} has no conditions, so it answers every call first")
            } else {
                format!(
                    "rule {i} has only conditions this rule also has, so it answers first whenever this rule could"
                )
            };
            out.push(
                WarningCode::UnreachableRule,
                pointer_index(at, j),
                format!("this rule can never answer: {why}"),
            );
        }
    }
}

/// `reference_like_value`: each condition value of a version-1 document
/// that is exactly one `$input` or `$state` member.
fn reference_like_values(rules: &[Value], at: &str, out: &mut Warnings) {
    for (i, rule) in rules.iter().enumerate() {
        let Some(when) = rule.get("when").and_then(Value::as_array) else {
            continue;
        };
        for (j, condition) in when.iter().enumerate() {
            let Some(value) = condition.get("value") else {
                continue;
            };
            if let Some((source, _)) = crate::paths::parse::reference_like(value) {
                out.push(
                    WarningCode::ReferenceLikeValue,
                    pointer_push(&pointer_index(&pointer_push(&pointer_index(at, i), "when"), j), "value"),
                    format!(
                        "in version 1 a condition's value is a literal: this {} object is compared as it is, never read; write \"schema_version\": 2 to compare with the value it names",
                        source.operator()
                    ),
                );
            }
        }
    }
}

fn same_condition(a: &Value, b: &Value) -> bool {
    ["source", "path", "op"]
        .iter()
        .all(|k| a.get(*k) == b.get(*k))
        && match (a.get("value"), b.get("value")) {
            (Some(x), Some(y)) => json_equal(x, y),
            (None, None) => true,
            _ => false,
        }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn guarantees_follow_required_refs_and_branches() {
        let schema = json!({
            "type": "object",
            "required": ["a", "c", "d"],
            "properties": {
                "a": {"type": "object", "required": ["b"], "properties": {"b": {}}},
                "c": {"$ref": "#/$defs/c"},
                "d": {"anyOf": [{"required": ["x"]}, {"required": ["x", "y"]}]},
                "e": {"type": "array", "minItems": 2, "items": {"required": ["z"]}}
            },
            "$defs": {"c": {"allOf": [{"required": ["k"]}]}}
        });
        let g = |path: &str| {
            let segments: Vec<&str> = path.split('.').collect();
            guaranteed(&schema, &schema, &segments, 0)
        };
        assert_eq!(g("a.b"), Some(true));
        assert_eq!(g("c.k"), Some(true));
        assert_eq!(g("d.x"), Some(true));
        assert_eq!(g("d.y"), Some(false), "one anyOf branch lacks it");
        assert_eq!(g("e"), Some(false), "e is not required");
        assert_eq!(g("zz"), Some(false));
        let conditional = json!({"if": {"required": ["p"]}, "then": {"required": ["q"]}});
        assert_eq!(guaranteed(&conditional, &conditional, &["q"], 0), None);
        let array = json!({"type": "object", "required": ["e"], "properties": {
            "e": {"type": "array", "minItems": 2, "items": {"required": ["z"]}}}});
        assert_eq!(guaranteed(&array, &array, &["e", "1", "z"], 0), Some(true));
        assert_eq!(guaranteed(&array, &array, &["e", "2", "z"], 0), Some(false));
    }

    #[test]
    fn repeated_unproven_reads_are_one_warning_per_input_path() {
        let schema = json!({"type": "object", "properties": {"a": {}, "b": {}}});
        let result = json!({"x": {"$input": "a"}, "y": [{"$input": "b"}, {"$input": "a"}],
                            "z": {"$input": "a"}});
        let mut unproven = Unproven::default();
        optional_references(
            &result,
            "/variants/v/result",
            &schema,
            &[Vec::new()],
            &mut unproven,
        );
        let mut out = Warnings::new();
        unproven.warn(&mut out);
        let found: Vec<(&str, &str)> = out
            .iter()
            .map(|w| (w.path.as_str(), w.message.as_str()))
            .collect();
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].0, "/variants/v/result/x/$input");
        assert!(found[0].1.ends_with(
            "; it is read so at 3 places: /variants/v/result/x/$input, /variants/v/result/y/1/$input, /variants/v/result/z/$input"
        ), "{}", found[0].1);
        assert_eq!(found[1].0, "/variants/v/result/y/0/$input");
        assert!(
            found[1]
                .1
                .ends_with("(\"op\": \"exists\", \"value\": true)"),
            "one place: the message as it was"
        );
        let many = Value::Array(vec![json!({"$input": "a"}); 12]);
        let mut unproven = Unproven::default();
        optional_references(&many, "", &schema, &[Vec::new()], &mut unproven);
        let mut out = Warnings::new();
        unproven.warn(&mut out);
        assert_eq!(out.len(), 1);
        assert!(
            out.iter()
                .all(|w| w.message.contains("at 12 places: /0/$input, ")
                    && w.message.ends_with("/9/$input and 2 more"))
        );
    }

    #[test]
    fn a_choice_proves_its_then_branch_and_array_paths_are_guards() {
        let schema =
            json!({"type": "object", "properties": {"a": {}, "b": {}, "items": {"type": "array"}}});
        let when =
            json!([{"source": "input", "path": ["items", 2], "op": "exists", "value": true}]);
        let result = json!({"$if": {"when": when, "then": [{"$input": "items.1"}, {"$input": "b"}],
                                    "else": {"$input": "items.0"}}});
        let mut unproven = Unproven::default();
        optional_references(&result, "/r", &schema, &[Vec::new()], &mut unproven);
        let paths: Vec<&str> = unproven.paths.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            ["items.0", "b"],
            "items.1 is proven in then, not items.0 in else"
        );
    }

    #[test]
    fn guards_and_shadowed_rules() {
        assert!(proves("a.b", "a"));
        assert!(proves("a", "a"));
        assert!(!proves("ab", "a"));
        // An element that exists implies its earlier siblings exist.
        assert!(proves("items.3", "items.1"));
        assert!(proves("items.3.id", "items.0"));
        assert!(proves("a.items.10", "a.items.9"));
        assert!(!proves("items.1", "items.3"));
        assert!(!proves("items.3", "items.1.id"), "element 1 may lack id");
        assert!(!proves("items.3", "other.1"));
        assert!(!proves("items.x", "items.0"));
        assert!(!proves("items.3", "items.01"));
        let when = |path: &str| json!({"source": "input", "path": path, "op": "eq", "value": 1.0});
        let rules = vec![
            json!({"when": [when("a")]}),
            json!({"when": [when("b")]}),
            json!({"when": [{"source": "input", "path": "a", "op": "eq", "value": 1}, when("b")]}),
            json!({}),
            json!({"when": [when("c")]}),
        ];
        let mut out = Warnings::new();
        unreachable_rules(&rules, "/variants/v/rules", &mut out);
        let paths: Vec<&str> = out.iter().map(|w| w.path.as_str()).collect();
        assert_eq!(paths, ["/variants/v/rules/2", "/variants/v/rules/4"]);
    }
}
