//! A tool's `verify` block, compiled: which operations may be called,
//! which variants' examples are replayed, the matchers and the chains —
//! every problem of the block reported at once, each at its pointer.

use crate::VerifyCode;
use crate::matchers::{Matcher, Matchers};
use serde_json::Value;
use std::collections::BTreeSet;
use toolmock_contract::{Problem, pointer};
use toolmock_simulation::document::{ChainDoc, MatchKind, MatcherDoc, SafeDoc, VerifyDoc};

/// A `verify` block that passed its checks.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// Which operations may be called for real.
    pub safe: SafeDoc,
    /// Variants whose examples are replayed besides each default variant's.
    pub variants: Vec<String>,
    /// How answers are compared.
    pub matchers: Matchers,
    /// The chains, each step's operation known and safe, each `$step`
    /// reference naming an earlier step.
    pub chains: Vec<ChainDoc>,
}

impl Settings {
    /// Compiles the behaviour parts of `block` (`safe`, `variants`,
    /// `matchers`, `chains`) for a tool with `operations`; `at` is the
    /// block's pointer, which every problem's path starts with.
    pub fn compile(
        block: &VerifyDoc,
        operations: &[&str],
        at: &str,
    ) -> Result<Self, Vec<Problem<VerifyCode>>> {
        let mut problems = Vec::new();
        let known = |name: &str| operations.contains(&name);
        if let SafeDoc::Operations(names) = &block.safe {
            for (i, name) in names.iter().enumerate() {
                if !known(name) {
                    problems.push(unknown_operation(
                        &pointer::index(&pointer::push(at, "safe"), i),
                        name,
                    ));
                }
            }
        }
        let mut matchers = Vec::new();
        for (i, doc) in block.matchers.iter().enumerate() {
            let here = pointer::index(&pointer::push(at, "matchers"), i);
            if let Some(op) = &doc.operation
                && !known(op)
            {
                problems.push(unknown_operation(&pointer::push(&here, "operation"), op));
            }
            match matcher(doc, &here) {
                Ok(m) => matchers.push(m),
                Err(mut more) => problems.append(&mut more),
            }
        }
        let mut names = BTreeSet::new();
        for (c, chain) in block.chains.iter().enumerate() {
            let here = pointer::index(&pointer::push(at, "chains"), c);
            if !names.insert(chain.name.as_str()) {
                problems.push(Problem::new(
                    VerifyCode::DuplicateName,
                    pointer::push(&here, "name"),
                    format!("two chains are called {:?}", chain.name),
                ));
            }
            check_chain(chain, &here, &known, &block.safe, &mut problems);
        }
        if problems.is_empty() {
            Ok(Settings {
                safe: block.safe.clone(),
                variants: block.variants.clone(),
                matchers: Matchers::new(matchers),
                chains: block.chains.clone(),
            })
        } else {
            Err(problems)
        }
    }
}

fn unknown_operation(at: &str, name: &str) -> Problem<VerifyCode> {
    Problem::new(
        VerifyCode::UnknownOperation,
        at,
        format!("the tool has no operation {name:?}"),
    )
}

/// One matcher: its path a JSON pointer, the fields its kind needs and no
/// other, a pattern that compiles.
fn matcher(doc: &MatcherDoc, at: &str) -> Result<Matcher, Vec<Problem<VerifyCode>>> {
    let mut problems = Vec::new();
    let invalid = |member: &str, message: String| {
        Problem::new(
            VerifyCode::InvalidMatcher,
            pointer::push(at, member),
            message,
        )
    };
    if !(doc.path.is_empty() || doc.path.starts_with('/')) {
        problems.push(invalid(
            "path",
            format!(
                "{:?} is not a JSON pointer (\"\" for the whole answer, else it starts with /)",
                doc.path
            ),
        ));
    }
    let needs_tolerance = doc.kind == MatchKind::Number;
    let needs_pattern = doc.kind == MatchKind::Regex;
    match (needs_tolerance, doc.tolerance) {
        (true, None) => problems.push(invalid(
            "tolerance",
            "a number matcher needs a tolerance (0 or more)".into(),
        )),
        (true, Some(t)) if !(t.is_finite() && t >= 0.0) => problems.push(invalid(
            "tolerance",
            format!("the tolerance must be a number of 0 or more, not {t}"),
        )),
        (false, Some(_)) => problems.push(invalid(
            "tolerance",
            "only a number matcher takes a tolerance".into(),
        )),
        _ => {}
    }
    let mut pattern = None;
    match (needs_pattern, &doc.pattern) {
        (true, None) => problems.push(invalid("pattern", "a regex matcher needs a pattern".into())),
        (true, Some(text)) => match regex::Regex::new(text) {
            Ok(compiled) => pattern = Some(compiled),
            Err(e) => problems.push(Problem::new(
                VerifyCode::InvalidRegex,
                pointer::push(at, "pattern"),
                // The parser's last line names the fault (the lines
                // before draw the pattern with a caret under it).
                format!(
                    "not a regular expression: {}",
                    e.to_string()
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .unwrap_or("")
                        .trim_start_matches("error: ")
                ),
            )),
        },
        (false, Some(_)) => problems.push(invalid(
            "pattern",
            "only a regex matcher takes a pattern".into(),
        )),
        (false, None) => {}
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Matcher::new(
        doc.operation.clone(),
        &doc.path,
        doc.kind,
        doc.tolerance.unwrap_or(0.0),
        pattern,
    ))
}

fn check_chain(
    chain: &ChainDoc,
    at: &str,
    known: &dyn Fn(&str) -> bool,
    safe: &SafeDoc,
    problems: &mut Vec<Problem<VerifyCode>>,
) {
    let mut ids: Vec<&str> = Vec::new();
    for (s, step) in chain.steps.iter().enumerate() {
        let here = pointer::index(&pointer::push(at, "steps"), s);
        if !known(&step.operation) {
            problems.push(unknown_operation(
                &pointer::push(&here, "operation"),
                &step.operation,
            ));
        } else if !safe.allows(&step.operation) {
            problems.push(Problem::new(
                VerifyCode::UnsafeOperation,
                pointer::push(&here, "operation"),
                format!(
                    "chain {:?} calls {:?}, which the block's `safe` does not mark safe to call for real",
                    chain.name, step.operation
                ),
            ));
        }
        step_references(&step.input, &pointer::push(&here, "input"), &ids, problems);
        if let Some(id) = &step.id {
            if ids.contains(&id.as_str()) {
                problems.push(Problem::new(
                    VerifyCode::DuplicateName,
                    pointer::push(&here, "id"),
                    format!("two steps of chain {:?} have the id {id:?}", chain.name),
                ));
            }
            ids.push(id);
        }
    }
}

/// Every `{"$step": "ID.result.P"}` / `ID.arguments.P` in `value` names an
/// earlier step.
fn step_references(value: &Value, at: &str, ids: &[&str], problems: &mut Vec<Problem<VerifyCode>>) {
    match value {
        Value::Object(map) => {
            if let Some(reference) = map.get("$step") {
                let here = pointer::push(at, "$step");
                let target = reference.as_str().and_then(parse_step);
                match target {
                    Some((id, _, _)) if ids.contains(&id) => {}
                    Some((id, _, _)) => problems.push(Problem::new(
                        VerifyCode::DanglingStepReference,
                        here,
                        format!("no earlier step of the chain has the id {id:?}"),
                    )),
                    None => problems.push(Problem::new(
                        VerifyCode::DanglingStepReference,
                        here,
                        "a $step reference is \"ID.result.PATH\" or \"ID.arguments.PATH\"",
                    )),
                }
                if map.len() > 1 {
                    problems.push(Problem::new(
                        VerifyCode::DanglingStepReference,
                        at,
                        "an object with $step holds nothing else",
                    ));
                }
                return;
            }
            for (key, child) in map {
                step_references(child, &pointer::push(at, key), ids, problems);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                step_references(child, &pointer::index(at, i), ids, problems);
            }
        }
        _ => {}
    }
}

/// `ID.result.P` → (ID, "result", P); `P` may be empty (`ID.result`).
pub(crate) fn parse_step(text: &str) -> Option<(&str, &str, &str)> {
    let (id, rest) = text.split_once('.')?;
    let (part, path) = rest.split_once('.').unwrap_or((rest, ""));
    (!id.is_empty() && matches!(part, "result" | "arguments")).then_some((id, part, path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn compile(block: Value) -> Result<Settings, Vec<(String, &'static str)>> {
        let doc: VerifyDoc = serde_json::from_value(block).expect("a verify block");
        Settings::compile(&doc, &["book", "read", "delete"], "/tools/0/verify")
            .map_err(|p| p.into_iter().map(|p| (p.path, p.code.as_str())).collect())
    }

    #[test]
    fn every_problem_of_a_block_is_reported_at_its_pointer() {
        let problems = compile(json!({
            "safe": ["book", "nope"],
            "matchers": [
                {"path": "id", "match": "exact"},
                {"path": "/n", "match": "number"},
                {"path": "/id", "match": "regex", "pattern": "("},
                {"path": "/x", "match": "exact", "tolerance": 1},
                {"operation": "gone", "path": "", "match": "ignore"}
            ],
            "chains": [
                {"name": "c", "steps": [
                    {"id": "a", "operation": "book"},
                    {"operation": "delete", "input": {"ref": {"$step": "b.result.id"}}}
                ]},
                {"name": "c", "steps": [{"operation": "book", "input": {"x": {"$step": "bad"}}}]}
            ]
        }))
        .expect_err("problems");
        assert_eq!(
            problems,
            [
                ("/tools/0/verify/safe/1".into(), "unknown_operation"),
                ("/tools/0/verify/matchers/0/path".into(), "invalid_matcher"),
                (
                    "/tools/0/verify/matchers/1/tolerance".into(),
                    "invalid_matcher"
                ),
                ("/tools/0/verify/matchers/2/pattern".into(), "invalid_regex"),
                (
                    "/tools/0/verify/matchers/3/tolerance".into(),
                    "invalid_matcher"
                ),
                (
                    "/tools/0/verify/matchers/4/operation".into(),
                    "unknown_operation"
                ),
                (
                    "/tools/0/verify/chains/0/steps/1/operation".into(),
                    "unsafe_operation"
                ),
                (
                    "/tools/0/verify/chains/0/steps/1/input/ref/$step".into(),
                    "dangling_step_reference"
                ),
                ("/tools/0/verify/chains/1/name".into(), "duplicate_name"),
                (
                    "/tools/0/verify/chains/1/steps/0/input/x/$step".into(),
                    "dangling_step_reference"
                ),
            ]
        );
    }

    #[test]
    fn a_clean_block_compiles() {
        let settings = compile(json!({
            "safe": true,
            "variants": ["full"],
            "matchers": [{"path": "/reference", "match": "regex", "pattern": "^R-[0-9]+$"}],
            "chains": [{"name": "book_then_read", "steps": [
                {"id": "b", "operation": "book", "input": {"day": "2026-01-02"}},
                {"operation": "read", "input": {"reference": {"$step": "b.result.reference"}}}
            ]}]
        }))
        .expect("compiles");
        assert!(settings.safe.allows("delete"));
        assert_eq!(settings.chains.len(), 1);
        assert_eq!(
            parse_step("b.result.reference"),
            Some(("b", "result", "reference"))
        );
        assert_eq!(parse_step("b.arguments"), Some(("b", "arguments", "")));
        assert_eq!(parse_step("b.other.x"), None);
    }
}
