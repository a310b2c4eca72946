//! The expression compiler: every expression of a definition is compiled
//! here into the tree of `crate::expr::tree`, every problem collected, not
//! just the first. References are read by the paths room
//! (`crate::paths::parse`); every other operator by the room of its family,
//! found in the checker's operator table (`crate::expr::OPERATORS`), so
//! this core names none of them.

use crate::check::context::Checker;
use crate::check::diagnostics::{DiagnosticCode, pointer_push};
use crate::error::{OperandFault, Rejection};
use crate::expr::tree::{Expr, Fields, Items, Operand, Template};
use crate::language::{core_operators, core_operators_listed};
use crate::scope::Source;
use serde_json::{Map, Value};

impl Checker {
    /// Compiles the root expression at `at` (a JSON pointer into the definition).
    pub(crate) fn compile(&mut self, value: &Value, at: &str) -> Expr {
        Template::wrap(self.node(value, at))
    }

    pub(crate) fn node(&mut self, value: &Value, at: &str) -> Expr {
        match value {
            Value::Object(map) if map.keys().any(|k| k.starts_with('$')) => {
                self.operator_node(map, at)
            }
            Value::Object(map) => {
                let fields: Vec<(Box<str>, Expr)> = map
                    .iter()
                    .map(|(k, v)| (Box::from(k.as_str()), self.node(v, &pointer_push(at, k))))
                    .collect();
                if fields.iter().all(|(_, e)| matches!(e, Expr::Literal(_))) {
                    // Folded operators (`{"$number": "5"}`) are literals now too,
                    // so the value is rebuilt from the children, not copied.
                    Expr::Literal(Value::Object(
                        fields
                            .into_iter()
                            .map(|(k, e)| (k.into_string(), e.into_literal()))
                            .collect(),
                    ))
                } else {
                    Expr::Object(Box::new(Fields::new(fields)))
                }
            }
            Value::Array(items) => {
                let compiled: Vec<Expr> = items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| self.node(v, &format!("{at}/{i}")))
                    .collect();
                if compiled.iter().all(|e| matches!(e, Expr::Literal(_))) {
                    Expr::Literal(Value::Array(
                        compiled.into_iter().map(Expr::into_literal).collect(),
                    ))
                } else {
                    Expr::Array(Box::new(Items::new(compiled)))
                }
            }
            _ => Expr::Literal(value.clone()),
        }
    }

    /// An object with `$` keys: exactly one operator.
    fn operator_node(&mut self, map: &Map<String, Value>, at: &str) -> Expr {
        let placeholder = Expr::Literal(Value::Null);
        if map.len() != 1 {
            let keys: Vec<&str> = map.keys().map(String::as_str).collect();
            self.diagnostics.push(
                DiagnosticCode::UnknownOperator,
                at,
                format!(
                    "an object with '$' keys must be exactly one operator ({}) with one key; found keys {keys:?}",
                    core_operators().join(", ")
                ),
            );
            return placeholder;
        }
        let Some((key, operand)) = map.iter().next() else {
            return placeholder;
        };
        let operand_at = pointer_push(at, key);
        match key.as_str() {
            "$input" => self
                .reference(Source::Input, operand, &operand_at, true)
                .map_or(placeholder, Expr::Reference),
            "$state" => self
                .reference(Source::State, operand, &operand_at, true)
                .map_or(placeholder, Expr::Reference),
            other => match self.compiler_of(other) {
                Some(compile) => compile(self, other, operand, at).unwrap_or(placeholder),
                None => {
                    self.diagnostics.push(
                        DiagnosticCode::UnknownOperator,
                        &operand_at,
                        format!(
                            "unknown operator {other:?}; the operators are {} (definitions never execute code or templates)",
                            core_operators_listed()
                        ),
                    );
                    placeholder
                }
            },
        }
    }

    /// The root expression at `at`, or `None` when it has a problem (which
    /// is reported).
    pub(crate) fn expression(&mut self, value: &Value, at: &str) -> Option<Expr> {
        let before = self.diagnostics.len();
        let expr = self.compile(value, at);
        (self.diagnostics.len() == before).then_some(expr)
    }

    /// A literal or a single `$input`/`$state` reference.
    pub(crate) fn operand(&mut self, value: &Value, at: &str, operator: &str) -> Option<Operand> {
        match value {
            Value::Object(map) if map.keys().any(|k| k.starts_with('$')) => {
                let mut entries = map.iter();
                match (entries.next(), entries.next()) {
                    (Some((key, path)), None) if key == "$input" || key == "$state" => {
                        let source = if key == "$input" {
                            Source::Input
                        } else {
                            Source::State
                        };
                        self.reference(source, path, &pointer_push(at, key), false)
                            .map(Operand::Reference)
                    }
                    _ => {
                        self.diagnostics.push(
                            DiagnosticCode::UnknownOperator,
                            at,
                            format!(
                                "an operand of {operator} is a literal or a single $input/$state reference, nothing deeper"
                            ),
                        );
                        None
                    }
                }
            }
            literal => Some(Operand::Literal(literal.clone())),
        }
    }

    pub(crate) fn invalid_literal(&mut self, at: &str, rejection: Rejection) {
        let Rejection { fault, message } = rejection;
        let fault: OperandFault = fault;
        self.diagnostics.push(
            DiagnosticCode::InvalidLiteral,
            at,
            format!("{message} ({})", fault.code()),
        );
    }
}
