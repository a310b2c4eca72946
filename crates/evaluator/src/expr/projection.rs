//! Projections (version 3, docs/mock-language.md "Objects and JSON text"):
//! `$object` (an object from key/value pairs, its keys computed) and
//! `$json` (the canonical JSON text of a value, RFC 8785), for tools that
//! answer a serialized projection of their data.

use crate::check::context::Checker;
use crate::check::diagnostics::{DiagnosticCode, pointer_index, pointer_push};
use crate::error::{CallError, OperandFault, Origin, reject};
use crate::expr::tree::{Expr, Operator};
use crate::language::Feature;
use crate::paths::reference::Reference;
use crate::scope::{Memo, Render, Scope};
use serde_json::{Map, Value};
use toolmock_contract::json_kind;

/// At most this many pairs in one `$object`.
pub(crate) const MAX_PAIRS: usize = 64;

/// A compiled `$object` or `$json`.
#[derive(Debug, Clone)]
enum ProjectionOp {
    /// Key/value pairs, a later pair's key replacing an earlier one's.
    Object { pairs: Box<[(Expr, Expr)]> },
    /// (Version 3) pairs an operator gives per call (a `$map`, `$zip`, …).
    Pairs { list: Expr },
    /// The canonical JSON text of a value.
    Json { value: Expr },
}

/// A computed part that is not what its place takes: blamed on a
/// reference's source, else on the fixture.
fn blame(expr: &Expr, message: String, at: &str) -> CallError {
    let rejection = reject(OperandFault::InvalidOperand, message);
    match expr {
        Expr::Reference(r) => r.blame(rejection),
        _ => CallError::refused_operand(Origin::State, None, rejection, at),
    }
}

#[derive(Debug, Clone)]
struct Projection {
    op: ProjectionOp,
    at: Box<str>,
}

impl Render for Projection {
    fn render(&self, scope: &Scope<'_>) -> Result<Value, CallError> {
        match &self.op {
            ProjectionOp::Object { pairs } => {
                let mut object = Map::new();
                for (key, value) in pairs.iter() {
                    let name = match key.render(scope)? {
                        Value::String(name) => name,
                        other => {
                            let message =
                                format!("$object's keys are strings, not {}", json_kind(&other));
                            return Err(blame(key, message, &self.at));
                        }
                    };
                    object.insert(name, value.render(scope)?);
                }
                Ok(Value::Object(object))
            }
            ProjectionOp::Pairs { list } => {
                let pairs = match list.render(scope)? {
                    Value::Array(pairs) => pairs,
                    other => {
                        let message = format!(
                            "$object takes an array of pairs [key, value], not {}",
                            json_kind(&other)
                        );
                        return Err(blame(list, message, &self.at));
                    }
                };
                scope.visit(pairs.len(), &self.at)?;
                let mut object = Map::new();
                for pair in pairs {
                    match pair {
                        Value::Array(two) if two.len() == 2 => {
                            let mut two = two.into_iter();
                            match (two.next(), two.next()) {
                                (Some(Value::String(name)), Some(value)) => {
                                    object.insert(name, value);
                                }
                                (key, _) => {
                                    let message = format!(
                                        "$object's keys are strings, not {}",
                                        key.as_ref().map_or("nothing", json_kind)
                                    );
                                    return Err(blame(list, message, &self.at));
                                }
                            }
                        }
                        other => {
                            let message = format!(
                                "$object takes pairs [key, value], not {}",
                                json_kind(&other)
                            );
                            return Err(blame(list, message, &self.at));
                        }
                    }
                }
                Ok(Value::Object(object))
            }
            ProjectionOp::Json { value } => {
                let rendered = value.render(scope)?;
                match toolmock_contract::canonical_json(&rendered) {
                    Ok(bytes) => Ok(Value::String(String::from_utf8_lossy(&bytes).into_owned())),
                    Err(e) => Err(blame(value, format!("$json: {e}"), &self.at)),
                }
            }
        }
    }

    fn clone_render(&self) -> Box<dyn Render> {
        Box::new(self.clone())
    }
}

impl Operator for Projection {
    fn name(&self) -> &'static str {
        match self.op {
            ProjectionOp::Object { .. } | ProjectionOp::Pairs { .. } => "$object",
            ProjectionOp::Json { .. } => "$json",
        }
    }

    fn for_each_reference(&mut self, f: &mut dyn FnMut(&mut Reference)) {
        match &mut self.op {
            ProjectionOp::Object { pairs } => {
                for (key, value) in pairs.iter_mut() {
                    key.for_each_reference(f);
                    value.for_each_reference(f);
                }
            }
            ProjectionOp::Json { value } | ProjectionOp::Pairs { list: value } => {
                value.for_each_reference(f)
            }
        }
    }

    fn clone_operator(&self) -> Box<dyn Operator> {
        Box::new(self.clone())
    }
}

/// `$object` or `$json` (`key`) with its operand, the object being at `at`.
pub(crate) fn compile(c: &mut Checker, key: &str, operand: &Value, at: &str) -> Option<Expr> {
    c.feature(at, Feature::Operator(key));
    let operand_at = pointer_push(at, key);
    let op = if key == "$json" {
        let before = c.diagnostics.len();
        let value = c.node(operand, &operand_at);
        if c.diagnostics.len() != before {
            return None;
        }
        ProjectionOp::Json { value }
    } else if computed_pairs(operand) {
        let before = c.diagnostics.len();
        let list = c.node(operand, &operand_at);
        if c.diagnostics.len() != before {
            return None;
        }
        ProjectionOp::Pairs { list }
    } else {
        ProjectionOp::Object {
            pairs: pairs(c, operand, &operand_at)?,
        }
    };
    let projection = Projection { op, at: at.into() };
    let literal = |e: &Expr| matches!(e, Expr::Literal(_));
    let foldable = match &projection.op {
        ProjectionOp::Object { pairs } => pairs.iter().all(|(k, v)| literal(k) && literal(v)),
        ProjectionOp::Json { value } | ProjectionOp::Pairs { list: value } => literal(value),
    };
    if foldable {
        // Nothing here reads the call, so an empty scope serves.
        let state = Map::new();
        let memo = Memo::new();
        let scope = Scope::new(&Value::Null, &state, &memo);
        match projection.render(&scope) {
            Ok(value) => return Some(Expr::Literal(value)),
            Err(e) => {
                c.diagnostics
                    .push(DiagnosticCode::InvalidLiteral, at, e.to_string());
                return None;
            }
        }
    }
    Some(Expr::Op(Box::new(projection)))
}

/// Whether `$object`'s operand is one operator (or reference) that gives
/// the pairs per call, rather than the pairs written out.
fn computed_pairs(operand: &Value) -> bool {
    matches!(operand, Value::Object(map) if map.len() == 1 && map.keys().all(|k| k.starts_with('$')))
}

/// `$object`'s operand: an array of 1 to 64 pairs `[key, value]`.
fn pairs(c: &mut Checker, operand: &Value, at: &str) -> Option<Box<[(Expr, Expr)]>> {
    let list = match operand {
        Value::Array(list) if (1..=MAX_PAIRS).contains(&list.len()) => list,
        other => {
            c.diagnostics.push(
                DiagnosticCode::WrongType,
                at,
                format!(
                    "$object takes an array of 1 to {MAX_PAIRS} pairs [key, value], not {}",
                    match other {
                        Value::Array(list) => format!("{} pairs", list.len()),
                        _ => json_kind(other).to_owned(),
                    }
                ),
            );
            return None;
        }
    };
    let before = c.diagnostics.len();
    let mut pairs = Vec::with_capacity(list.len());
    for (i, pair) in list.iter().enumerate() {
        let pair_at = pointer_index(at, i);
        let Value::Array(two) = pair else {
            c.wrong_type(&pair_at, "a pair [key, value]", pair);
            continue;
        };
        let [key, value] = two.as_slice() else {
            c.diagnostics.push(
                DiagnosticCode::WrongType,
                &pair_at,
                format!("a pair is [key, value], not an array of {}", two.len()),
            );
            continue;
        };
        let key_at = pointer_index(&pair_at, 0);
        let key = c.node(key, &key_at);
        if let Expr::Literal(other) = &key
            && !other.is_string()
        {
            c.diagnostics.push(
                DiagnosticCode::WrongType,
                &key_at,
                format!("$object's keys are strings, not {}", json_kind(other)),
            );
        }
        let value = c.node(value, &pointer_index(&pair_at, 1));
        pairs.push((key, value));
    }
    (c.diagnostics.len() == before).then(|| pairs.into_boxed_slice())
}
