//! `$if` (version 3, docs/mock-language.md "Conditional expressions"): one
//! of two expressions, chosen per call by conditions written as a rule's
//! `when` — so a rule need not repeat a whole result to vary one field.
//! How a definition writes one ([`choice`], also read by domain errors'
//! messages) and the operator in an expression ([`compile`]).

use crate::check::context::Checker;
use crate::check::diagnostics::{DiagnosticCode, pointer_push};
use crate::conditions::condition::Choice;
use crate::error::CallError;
use crate::expr::tree::{Expr, Operator};
use crate::language::Feature;
use crate::paths::reference::Reference;
use crate::scope::{Render, Scope};
use serde_json::Value;
use toolmock_contract::json_kind;

/// A compiled `$if` in an expression.
#[derive(Debug, Clone)]
struct IfOp(Choice<Expr>);

impl Render for IfOp {
    fn render(&self, scope: &Scope<'_>) -> Result<Value, CallError> {
        self.0.pick(scope)?.render(scope)
    }

    fn clone_render(&self) -> Box<dyn Render> {
        Box::new(self.clone())
    }
}

impl Operator for IfOp {
    fn name(&self) -> &'static str {
        "$if"
    }

    fn for_each_reference(&mut self, f: &mut dyn FnMut(&mut Reference)) {
        self.0.then.for_each_reference(f);
        self.0.otherwise.for_each_reference(f);
    }

    fn clone_operator(&self) -> Box<dyn Operator> {
        Box::new(self.clone())
    }
}

/// `{"$if": {"when": [...], "then": …, "else": …}}` at `at`, as an expression.
pub(crate) fn compile(c: &mut Checker, key: &str, operand: &Value, at: &str) -> Option<Expr> {
    let choice = choice(c, key, operand, at, &mut |c, value, at| {
        Some(c.node(value, at))
    })?;
    if choice.when.is_empty() {
        // No condition: always `then`.
        return Some(choice.then);
    }
    Some(Expr::Op(Box::new(IfOp(choice))))
}

/// A branch of a choice, compiled as its place wants it.
pub(crate) type Branch<'b, T> = dyn FnMut(&mut Checker, &Value, &str) -> Option<T> + 'b;

/// The operand of `$if` (the operator `key` at `at`): `when`, an array of
/// conditions as a rule's; `then` and `else`, each compiled by `branch`.
pub(crate) fn choice<T>(
    c: &mut Checker,
    key: &str,
    operand: &Value,
    at: &str,
    branch: &mut Branch<'_, T>,
) -> Option<Choice<T>> {
    c.feature(at, Feature::Operator(key));
    let at = pointer_push(at, key);
    let Value::Object(fields) = operand else {
        c.diagnostics.push(
            DiagnosticCode::WrongType,
            &at,
            format!(
                "$if takes an object {{when, then, else}}, not {}",
                json_kind(operand)
            ),
        );
        return None;
    };
    let before = c.diagnostics.len();
    for name in fields.keys() {
        if !matches!(name.as_str(), "when" | "then" | "else") {
            c.diagnostics.push(
                DiagnosticCode::UnknownField,
                pointer_push(&at, name),
                format!("$if has no field {name:?}; its fields are when, then and else"),
            );
        }
    }
    for name in ["when", "then", "else"] {
        if !fields.contains_key(name) {
            c.diagnostics.push(
                DiagnosticCode::MissingField,
                &at,
                format!("$if needs {name}"),
            );
        }
    }
    let when = fields
        .get("when")
        .map(|w| c.when_list(w, &pointer_push(&at, "when")));
    let then = fields
        .get("then")
        .and_then(|v| branch(c, v, &pointer_push(&at, "then")));
    let otherwise = fields
        .get("else")
        .and_then(|v| branch(c, v, &pointer_push(&at, "else")));
    match (when, then, otherwise) {
        (Some(when), Some(then), Some(otherwise)) if c.diagnostics.len() == before => {
            Some(Choice {
                when: when.into_boxed_slice(),
                then,
                otherwise,
            })
        }
        _ => None,
    }
}
