//! Named sub-expressions (version 3, docs/mock-language.md "Named
//! sub-expressions"): a `let` block of a variant or a rule names
//! expressions; `{"$let": "name"}` stands for one's value, computed at most
//! once per call (on first use, kept in the call's memo) however often it
//! is named — in the result, the writes, an error, a condition's value.

use crate::check::context::{Checker, Named};
use crate::check::diagnostics::{DiagnosticCode, pointer_push};
use crate::error::CallError;
use crate::expr::tree::{Expr, Operator};
use crate::language::Feature;
use crate::paths::reference::Reference;
use crate::scope::{Render, Scope};
use serde_json::Value;
use std::sync::Arc;
use toolmock_contract::json_kind;

/// At most this many names in one `let` block.
pub(crate) const MAX_NAMES: usize = 16;

/// `{"$let": "name"}`: the value of a named sub-expression.
#[derive(Debug, Clone)]
struct LetRef {
    slot: usize,
    expr: Arc<Expr>,
}

impl Render for LetRef {
    fn render(&self, scope: &Scope<'_>) -> Result<Value, CallError> {
        if let Some(Some(value)) = scope.lets.borrow().get(self.slot) {
            return Ok(value.clone());
        }
        // Rendered with no borrow held: it may name other sub-expressions.
        let value = self.expr.render(scope)?;
        let mut lets = scope.lets.borrow_mut();
        if lets.len() <= self.slot {
            lets.resize(self.slot + 1, None);
        }
        if let Some(cell) = lets.get_mut(self.slot) {
            *cell = Some(value.clone());
        }
        Ok(value)
    }

    fn clone_render(&self) -> Box<dyn Render> {
        Box::new(self.clone())
    }
}

impl Operator for LetRef {
    fn name(&self) -> &'static str {
        "$let"
    }

    /// The named expression is shared by every `$let` naming it; its own
    /// references are resolved without a memo slot.
    fn for_each_reference(&mut self, _f: &mut dyn FnMut(&mut Reference)) {}

    fn clone_operator(&self) -> Box<dyn Operator> {
        Box::new(self.clone())
    }
}

/// `{"$let": "name"}` at `at`: a name in sight, innermost first.
pub(crate) fn compile(c: &mut Checker, key: &str, operand: &Value, at: &str) -> Option<Expr> {
    c.feature(at, Feature::Operator(key));
    let operand_at = pointer_push(at, key);
    let Value::String(name) = operand else {
        c.diagnostics.push(
            DiagnosticCode::WrongType,
            &operand_at,
            format!(
                "$let names a sub-expression of a let block: a string, not {}",
                json_kind(operand)
            ),
        );
        return None;
    };
    let Some(named) = c.lets.iter().rev().find(|n| *n.name == **name) else {
        let known: Vec<&str> = c.lets.iter().map(|n| &*n.name).collect();
        c.diagnostics.push(
            DiagnosticCode::UnknownName,
            &operand_at,
            format!(
                "no let block in sight names {name:?}{}",
                if known.is_empty() {
                    String::new()
                } else {
                    format!("; the names are {}", known.join(", "))
                }
            ),
        );
        return None;
    };
    Some(match &*named.expr {
        // A name for a constant is the constant; for a reference, the
        // reference (resolved through the memo, and blamed as one).
        Expr::Literal(value) => Expr::Literal(value.clone()),
        reference @ Expr::Reference(_) => reference.clone(),
        _ => Expr::Op(Box::new(LetRef {
            slot: named.slot,
            expr: Arc::clone(&named.expr),
        })),
    })
}

impl Checker {
    /// The `let` block of a variant or a rule (`map`, at `at`), if any: each
    /// name's expression compiled with the names already in sight (an
    /// enclosing variant's, never its own block's), then put in sight for
    /// what follows. The caller takes them out of sight again.
    pub(crate) fn let_block(&mut self, map: &serde_json::Map<String, Value>, at: &str) {
        let Some(block) = map.get("let") else {
            return;
        };
        let block_at = pointer_push(at, "let");
        self.feature(&block_at, Feature::Field("let"));
        let members = match block {
            Value::Object(m) if (1..=MAX_NAMES).contains(&m.len()) => m,
            other => {
                self.diagnostics.push(
                    DiagnosticCode::WrongType,
                    &block_at,
                    format!(
                        "let is an object of 1 to {MAX_NAMES} named expressions, not {}",
                        match other {
                            Value::Object(m) => format!("an object of {} members", m.len()),
                            _ => json_kind(other).to_owned(),
                        }
                    ),
                );
                return;
            }
        };
        let mut named = Vec::with_capacity(members.len());
        for (name, value) in members {
            let name_at = pointer_push(&block_at, name);
            if name.is_empty() || name.starts_with('$') {
                self.diagnostics.push(
                    DiagnosticCode::WrongType,
                    &name_at,
                    format!("a let name is a non-empty string not starting with '$', not {name:?}"),
                );
                continue;
            }
            let before = self.diagnostics.len();
            let expr = self.node(value, &name_at);
            if self.diagnostics.len() != before {
                continue;
            }
            named.push(Named {
                name: name.as_str().into(),
                slot: self.let_slots,
                expr: Arc::new(expr),
            });
            self.let_slots += 1;
        }
        self.lets.extend(named);
    }
}
