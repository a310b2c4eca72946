//! The collection operators (version 2): `$append` (an array with
//! one more element) and `$merge` (a shallow merge of objects);
//! docs/mock-language.md, "Appending and merging".

use crate::check::context::Checker;
use crate::check::diagnostics::{DiagnosticCode, pointer_index, pointer_push};
use crate::error::{CallError, OperandFault, Origin, Rejection, reject};
use crate::expr::tree::{Expr, Operator};
use crate::language::Feature;
use crate::paths::reference::Reference;
use crate::scope::{Memo, Render, Scope};
use serde_json::{Map, Value};
use std::borrow::Cow;
use toolmock_contract::json_kind;

/// At most this many objects in one `$merge`.
pub(crate) const MAX_MERGED: usize = 16;

/// A compiled `$append` or `$merge` with at least one operator below it
/// (over literals alone it is folded).
#[derive(Debug, Clone)]
pub(crate) enum CollectionOp {
    /// `to` with `value` added at its end; `at` is its operand's pointer.
    Append { to: Expr, value: Expr, at: Box<str> },
    /// The objects' members, a later object's member replacing an earlier
    /// one's; `at` is its operand's pointer.
    Merge { objects: Box<[Expr]>, at: Box<str> },
}

/// What a compiled operand is known to give.
#[derive(PartialEq)]
enum Shape {
    Array,
    Object,
    /// Read per call: checked then.
    Reference,
    Other(&'static str),
}

fn shape(expr: &Expr) -> Shape {
    match expr {
        Expr::Literal(Value::Array(_)) | Expr::Array(_) => Shape::Array,
        Expr::Literal(Value::Object(_)) | Expr::Object(_) => Shape::Object,
        Expr::Literal(other) => Shape::Other(json_kind(other)),
        Expr::Reference(_) => Shape::Reference,
        Expr::Op(op) => match op.name() {
            "$append" | "$sort" | "$pluck" | "$map" | "$filter" | "$zip" => Shape::Array,
            "$merge" | "$object" => Shape::Object,
            // A named value, a choice, a found record or element: any kind,
            // known only per call, so checked then.
            "$let" | "$if" | "$find" | "$min" | "$max" | "$update" => Shape::Reference,
            _ => Shape::Other("an operator that gives neither an array nor an object"),
        },
        _ => Shape::Other("an operator that gives neither an array nor an object"),
    }
}

/// An operator operand that gave the wrong kind this call (one whose kind
/// only the call tells: `$let`, `$if`, `$find`…), blamed on the data it
/// read, as a reference's would be.
fn wrong_operator_kind(
    expr: &Expr,
    wanted: &str,
    found: &Value,
    operator: &str,
    at: &str,
) -> CallError {
    CallError::refused_operand(
        expr.origin().max(Origin::State),
        None,
        reject(
            OperandFault::InvalidOperand,
            format!("{operator} takes {wanted} here, not {}", json_kind(found)),
        ),
        at,
    )
}

/// A value read by a reference that is not of the kind its operator takes,
/// blamed on where it came from.
fn wrong_kind(r: &Reference, wanted: &str, found: &Value, operator: &str) -> CallError {
    let rejection: Rejection = reject(
        OperandFault::InvalidOperand,
        format!("{operator} takes {wanted} here, not {}", json_kind(found)),
    );
    r.blame(rejection)
}

impl Render for CollectionOp {
    /// The operator's value for this call.
    fn render(&self, scope: &Scope<'_>) -> Result<Value, CallError> {
        match self {
            CollectionOp::Append { to, value, at } => {
                let mut items = match to {
                    Expr::Reference(r) => match r.resolve(scope)? {
                        Cow::Owned(Value::Array(items)) => items,
                        Cow::Borrowed(Value::Array(items)) => {
                            let mut copy = Vec::with_capacity(items.len() + 1);
                            copy.extend(items.iter().cloned());
                            copy
                        }
                        other => return Err(wrong_kind(r, "an array", &other, "$append")),
                    },
                    other => match other.render(scope)? {
                        Value::Array(items) => items,
                        found => {
                            return Err(wrong_operator_kind(
                                other, "an array", &found, "$append", at,
                            ));
                        }
                    },
                };
                items.push(value.render(scope)?);
                Ok(Value::Array(items))
            }
            CollectionOp::Merge { objects, at } => {
                let mut merged = Map::new();
                for object in objects.iter() {
                    let members = match object {
                        Expr::Reference(r) => match r.resolve(scope)? {
                            Cow::Owned(Value::Object(m)) => m,
                            Cow::Borrowed(Value::Object(m)) => {
                                for (k, v) in m {
                                    merged.insert(k.clone(), v.clone());
                                }
                                continue;
                            }
                            other => return Err(wrong_kind(r, "objects", &other, "$merge")),
                        },
                        other => match other.render(scope)? {
                            Value::Object(m) => m,
                            found => {
                                return Err(wrong_operator_kind(
                                    other, "objects", &found, "$merge", at,
                                ));
                            }
                        },
                    };
                    merged.extend(members);
                }
                Ok(Value::Object(merged))
            }
        }
    }

    fn clone_render(&self) -> Box<dyn Render> {
        Box::new(self.clone())
    }
}

impl Operator for CollectionOp {
    fn name(&self) -> &'static str {
        match self {
            CollectionOp::Append { .. } => "$append",
            CollectionOp::Merge { .. } => "$merge",
        }
    }

    fn for_each_reference(&mut self, f: &mut dyn FnMut(&mut Reference)) {
        match self {
            CollectionOp::Append { to, value, .. } => {
                to.for_each_reference(f);
                value.for_each_reference(f);
            }
            CollectionOp::Merge { objects, .. } => {
                objects.iter_mut().for_each(|o| o.for_each_reference(f));
            }
        }
    }

    fn clone_operator(&self) -> Box<dyn Operator> {
        Box::new(self.clone())
    }
}

/// `$append` or `$merge` (`key`) with its operand, the object being at `at`.
pub(crate) fn compile(c: &mut Checker, key: &str, operand: &Value, at: &str) -> Option<Expr> {
    c.feature(at, Feature::Operator(key));
    let operand_at = pointer_push(at, key);
    let op = if key == "$append" {
        append(c, operand, &operand_at)?
    } else {
        merge(c, operand, &operand_at)?
    };
    let literal = |e: &Expr| matches!(e, Expr::Literal(_));
    let foldable = match &op {
        CollectionOp::Append { to, value, .. } => literal(to) && literal(value),
        CollectionOp::Merge { objects, .. } => objects.iter().all(literal),
    };
    if foldable {
        // Nothing here reads the call, so an empty scope serves.
        let state = Map::new();
        let memo = Memo::new();
        let scope = Scope::new(&Value::Null, &state, &memo);
        if let Ok(value) = op.render(&scope) {
            return Some(Expr::Literal(value));
        }
    }
    Some(Expr::Op(Box::new(op)))
}

fn append(c: &mut Checker, operand: &Value, at: &str) -> Option<CollectionOp> {
    let Value::Object(fields) = operand else {
        c.diagnostics.push(
            DiagnosticCode::WrongType,
            at,
            format!(
                "$append takes an object {{to, value}}, not {}",
                json_kind(operand)
            ),
        );
        return None;
    };
    let before = c.diagnostics.len();
    for key in fields.keys() {
        if !matches!(key.as_str(), "to" | "value") {
            c.diagnostics.push(
                DiagnosticCode::UnknownField,
                pointer_push(at, key),
                format!("$append has no field {key:?}; its fields are to and value"),
            );
        }
    }
    for name in ["to", "value"] {
        if !fields.contains_key(name) {
            c.diagnostics.push(
                DiagnosticCode::MissingField,
                at,
                format!("$append needs {name}"),
            );
        }
    }
    let to = fields.get("to").map(|v| {
        let to_at = pointer_push(at, "to");
        let to = c.node(v, &to_at);
        expect_shape(c, &to, Shape::Array, "$append's to", "an array", &to_at);
        to
    });
    let value = fields
        .get("value")
        .map(|v| c.node(v, &pointer_push(at, "value")));
    match (to, value) {
        (Some(to), Some(value)) if c.diagnostics.len() == before => Some(CollectionOp::Append {
            to,
            value,
            at: at.into(),
        }),
        _ => None,
    }
}

fn merge(c: &mut Checker, operand: &Value, at: &str) -> Option<CollectionOp> {
    let list = match operand {
        Value::Array(list) if (2..=MAX_MERGED).contains(&list.len()) => list,
        other => {
            let found = match other {
                Value::Array(list) => format!("{} objects", list.len()),
                _ => json_kind(other).to_owned(),
            };
            c.diagnostics.push(
                DiagnosticCode::WrongType,
                at,
                format!("$merge takes an array of 2 to {MAX_MERGED} objects, not {found}"),
            );
            return None;
        }
    };
    let before = c.diagnostics.len();
    let objects: Vec<Expr> = list
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let item_at = pointer_index(at, i);
            let object = c.node(v, &item_at);
            expect_shape(
                c,
                &object,
                Shape::Object,
                "$merge's operand",
                "an object",
                &item_at,
            );
            object
        })
        .collect();
    (c.diagnostics.len() == before).then(|| CollectionOp::Merge {
        objects: objects.into_boxed_slice(),
        at: at.into(),
    })
}

/// An operand whose kind is known at check time must be `wanted`.
fn expect_shape(c: &mut Checker, expr: &Expr, wanted: Shape, what: &str, kind: &str, at: &str) {
    let found = shape(expr);
    if found == wanted || found == Shape::Reference {
        return;
    }
    let found = match found {
        Shape::Array => "an array",
        Shape::Object => "an object",
        Shape::Other(kind) => kind,
        Shape::Reference => return,
    };
    c.diagnostics.push(
        DiagnosticCode::WrongType,
        at,
        format!("{what} is {kind} (a literal, one $input/$state reference or an operator that gives one), not {found}"),
    );
}
