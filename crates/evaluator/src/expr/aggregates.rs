//! Aggregates (version 3, docs/mock-language.md "Aggregates"): `$sum`
//! (exact, as `$add`), `$count`, `$min`, `$max` (ordered as the ordering
//! conditions order) and `$zip` (tuples of several arrays, as long as the
//! shortest). Each reads collections the call already holds; every element
//! visited counts against the call's work budget (`$count` visits none).

use crate::check::context::Checker;
use crate::check::diagnostics::{DiagnosticCode, pointer_index, pointer_push};
use crate::conditions::ordering::numbers;
use crate::error::{CallError, OperandFault, Origin, Rejection, reject};
use crate::expr::dates::parse_utc_instant;
use crate::expr::decimals::{add, to_decimal, to_json};
use crate::expr::tree::{Expr, Operator};
use crate::language::Feature;
use crate::paths::reference::Reference;
use crate::scope::{Memo, Render, Scope};
use rust_decimal::Decimal;
use serde_json::Value;
use std::borrow::Cow;
use std::cmp::Ordering;
use toolmock_contract::json_kind;

/// At most this many arrays in one `$zip`.
pub(crate) const MAX_ZIPPED: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Sum,
    Count,
    Min,
    Max,
    Zip,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Sum => "$sum",
            Kind::Count => "$count",
            Kind::Min => "$min",
            Kind::Max => "$max",
            Kind::Zip => "$zip",
        }
    }
}

/// A compiled aggregate: its operand (for `$zip`, one per array).
#[derive(Debug, Clone)]
struct Aggregate {
    kind: Kind,
    operands: Box<[Expr]>,
    at: Box<str>,
}

/// An operand's value for this call, without a copy when it is a reference.
fn operand<'s>(expr: &Expr, scope: &Scope<'s>) -> Result<Cow<'s, Value>, CallError> {
    match expr {
        Expr::Reference(r) => r.resolve(scope),
        other => other.render(scope).map(Cow::Owned),
    }
}

impl Aggregate {
    /// A refusal of what `expr` gave, blamed on who supplied it.
    fn blame(&self, expr: &Expr, rejection: Rejection) -> CallError {
        match expr {
            Expr::Reference(r) => r.blame(rejection),
            other => CallError::refused_operand(
                other.origin().max(Origin::State),
                None,
                rejection,
                &self.at,
            ),
        }
    }

    /// The array `expr` gave, or the refusal of anything else.
    fn array<'v>(&self, expr: &Expr, value: &'v Value) -> Result<&'v [Value], CallError> {
        match value {
            Value::Array(items) => Ok(items),
            other => Err(self.blame(
                expr,
                reject(
                    OperandFault::InvalidOperand,
                    format!(
                        "{} takes an array, not {}",
                        self.kind.name(),
                        json_kind(other)
                    ),
                ),
            )),
        }
    }

    fn eval(&self, scope: &Scope<'_>) -> Result<Value, CallError> {
        let Some(first) = self.operands.first() else {
            return Ok(Value::Null);
        };
        let value = operand(first, scope)?;
        match self.kind {
            Kind::Count => match &*value {
                Value::Array(items) => Ok(Value::from(items.len())),
                Value::Object(map) => Ok(Value::from(map.len())),
                other => Err(self.blame(
                    first,
                    reject(
                        OperandFault::InvalidOperand,
                        format!(
                            "$count counts an array or an object, not {}",
                            json_kind(other)
                        ),
                    ),
                )),
            },
            Kind::Sum => {
                let items = self.array(first, &value)?;
                scope.visit(items.len(), &self.at)?;
                let mut total = Decimal::ZERO;
                for item in items {
                    let next = to_decimal(item, "$sum").map_err(|r| self.blame(first, r))?;
                    total = add(total, next).map_err(|r| self.blame(first, r))?;
                }
                to_json(total).map_err(|r| self.blame(first, r))
            }
            Kind::Min | Kind::Max => {
                let items = self.array(first, &value)?;
                scope.visit(items.len(), &self.at)?;
                let order = extreme_order(items)
                    .map_err(|r| self.blame(first, reject(OperandFault::InvalidOperand, r)))?;
                let mut best: Option<&Value> = None;
                for item in items {
                    best = match best {
                        Some(b) => {
                            let ordering = order(item, b);
                            let better = if self.kind == Kind::Min {
                                ordering.is_lt()
                            } else {
                                ordering.is_gt()
                            };
                            Some(if better { item } else { b })
                        }
                        None => Some(item),
                    };
                }
                Ok(best.cloned().unwrap_or(Value::Null))
            }
            Kind::Zip => {
                let mut arrays = Vec::with_capacity(self.operands.len());
                arrays.push(value);
                for expr in self.operands.iter().skip(1) {
                    arrays.push(operand(expr, scope)?);
                }
                let mut lists = Vec::with_capacity(arrays.len());
                for (expr, value) in self.operands.iter().zip(&arrays) {
                    lists.push(self.array(expr, value)?);
                }
                let len = lists.iter().map(|l| l.len()).min().unwrap_or(0);
                scope.visit(len, &self.at)?;
                Ok(Value::Array(
                    (0..len)
                        .map(|i| {
                            Value::Array(
                                lists
                                    .iter()
                                    .map(|l| l.get(i).cloned().unwrap_or(Value::Null))
                                    .collect(),
                            )
                        })
                        .collect(),
                ))
            }
        }
    }
}

/// How `$min`/`$max` order `items`: numbers alone by exact value; strings
/// alone by instant when every one is a date or date-time, else by code
/// point. Any other mix is refused (the message says why).
#[allow(clippy::type_complexity)]
fn extreme_order(items: &[Value]) -> Result<fn(&Value, &Value) -> Ordering, String> {
    if items.iter().all(Value::is_number) {
        return Ok(numbers);
    }
    if items.iter().all(Value::is_string) {
        let dates = items
            .iter()
            .all(|v| v.as_str().is_some_and(|t| parse_utc_instant(t).is_ok()));
        return Ok(if dates { by_instant } else { by_code_point });
    }
    let odd = items
        .iter()
        .find(|v| !v.is_number() && !v.is_string())
        .map_or("numbers and strings together", json_kind);
    Err(format!(
        "$min and $max compare numbers alone or strings alone, not {odd}"
    ))
}

fn by_code_point(a: &Value, b: &Value) -> Ordering {
    a.as_str().cmp(&b.as_str())
}

fn by_instant(a: &Value, b: &Value) -> Ordering {
    let instants = (
        a.as_str().and_then(|t| parse_utc_instant(t).ok()),
        b.as_str().and_then(|t| parse_utc_instant(t).ok()),
    );
    match instants {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => by_code_point(a, b),
    }
}

impl Render for Aggregate {
    fn render(&self, scope: &Scope<'_>) -> Result<Value, CallError> {
        self.eval(scope)
    }

    fn clone_render(&self) -> Box<dyn Render> {
        Box::new(self.clone())
    }
}

impl Operator for Aggregate {
    fn name(&self) -> &'static str {
        self.kind.name()
    }

    fn for_each_reference(&mut self, f: &mut dyn FnMut(&mut Reference)) {
        for expr in self.operands.iter_mut() {
            expr.for_each_reference(f);
        }
    }

    fn clone_operator(&self) -> Box<dyn Operator> {
        Box::new(self.clone())
    }

    /// `$zip`'s tuples hold its arrays' elements, blamed as they are (the
    /// input's when every array is the input's).
    fn origin(&self) -> Origin {
        match self.kind {
            Kind::Zip => self
                .operands
                .iter()
                .map(Expr::origin)
                .min()
                .unwrap_or(Origin::State)
                .max(Origin::State),
            _ => Origin::State,
        }
    }
}

/// `$sum`, `$count`, `$min`, `$max` or `$zip` (`key`) at `at`.
pub(crate) fn compile(c: &mut Checker, key: &str, operand: &Value, at: &str) -> Option<Expr> {
    c.feature(at, Feature::Operator(key));
    let kind = match key {
        "$sum" => Kind::Sum,
        "$count" => Kind::Count,
        "$min" => Kind::Min,
        "$max" => Kind::Max,
        _ => Kind::Zip,
    };
    let operand_at = pointer_push(at, key);
    let before = c.diagnostics.len();
    let operands: Vec<Expr> = if kind == Kind::Zip {
        match operand {
            Value::Array(list) if (2..=MAX_ZIPPED).contains(&list.len()) => list
                .iter()
                .enumerate()
                .map(|(i, v)| collection_operand(c, kind, v, &pointer_index(&operand_at, i)))
                .collect(),
            other => {
                c.push(
                    DiagnosticCode::WrongType,
                    &operand_at,
                    format!(
                        "$zip takes an array of 2 to {MAX_ZIPPED} arrays, not {}",
                        match other {
                            Value::Array(l) => format!("an array of {}", l.len()),
                            _ => json_kind(other).to_owned(),
                        }
                    ),
                );
                return None;
            }
        }
    } else {
        vec![collection_operand(c, kind, operand, &operand_at)]
    };
    if c.diagnostics.len() != before {
        return None;
    }
    let op = Aggregate {
        kind,
        operands: operands.into_boxed_slice(),
        at: at.into(),
    };
    if op.operands.iter().all(|e| matches!(e, Expr::Literal(_))) {
        // Nothing here reads the call, so an empty scope serves.
        let state = serde_json::Map::new();
        let memo = Memo::new();
        let scope = Scope::new(&Value::Null, &state, &memo);
        return match op.eval(&scope) {
            Ok(value) => Some(Expr::Literal(value)),
            Err(e) => {
                c.push(
                    DiagnosticCode::InvalidLiteral,
                    at,
                    format!("{e} ({})", e.code()),
                );
                None
            }
        };
    }
    Some(Expr::Op(Box::new(op)))
}

/// One operand, which must give an array (an object too, for `$count`):
/// a literal of another kind is refused.
fn collection_operand(c: &mut Checker, kind: Kind, value: &Value, at: &str) -> Expr {
    let expr = c.node(value, at);
    if let Expr::Literal(literal) = &expr {
        let fits = literal.is_array() || (kind == Kind::Count && literal.is_object());
        if !fits {
            c.wrong_type(
                at,
                if kind == Kind::Count {
                    "an array or an object"
                } else {
                    "an array"
                },
                literal,
            );
        }
    }
    expr
}
