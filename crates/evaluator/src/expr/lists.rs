//! The list operators (version 2): `$sort` (an array of strings or of numbers in
//! ascending order) and `$pluck` (each element's value at a path);
//! docs/mock-language.md, "Sorting and plucking".

use crate::check::context::Checker;
use crate::check::diagnostics::{DiagnosticCode, pointer_push};
use crate::error::{CallError, OperandFault, Origin, reject};
use crate::expr::tree::{Expr, Operator};
use crate::language::Feature;
use crate::paths::dotted::Path;
use crate::paths::reference::Reference;
use crate::scope::{Render, Scope};
use serde_json::Value;
use std::borrow::Cow;
use std::cmp::Ordering;
use toolmock_contract::json_kind;

/// A compiled `$sort` or `$pluck` (over a literal array it is folded).
#[derive(Debug, Clone)]
pub(crate) enum ListOp {
    /// The array, sorted.
    Sort { array: Expr },
    /// Each element's value at `path`, elements without it left out.
    Pluck { array: Expr, path: Path },
}

/// Why an array cannot be sorted.
fn unsortable(items: &[Value]) -> Option<String> {
    let all_strings = items.iter().all(Value::is_string);
    let all_numbers = items.iter().all(Value::is_number);
    if all_strings || all_numbers {
        return None;
    }
    let odd = items
        .iter()
        .find(|v| !v.is_string() && !v.is_number())
        .map_or("strings and numbers together", json_kind);
    Some(format!(
        "$sort sorts an array of strings or an array of numbers, not one with {odd}"
    ))
}

/// Sorts strings by Unicode code point (Rust's `str` order is UTF-8 byte
/// order, which is code point order) and numbers by value; stable.
fn sort(mut items: Vec<Value>) -> Vec<Value> {
    items.sort_by(|a, b| match (a, b) {
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Number(x), Value::Number(y)) => number_order(x, y),
        _ => Ordering::Equal,
    });
    items
}

fn number_order(x: &serde_json::Number, y: &serde_json::Number) -> Ordering {
    match (x.as_i64(), y.as_i64()) {
        (Some(a), Some(b)) => a.cmp(&b),
        _ => match (x.as_u64(), y.as_u64()) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => {
                let (a, b) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
                a.total_cmp(&b)
            }
        },
    }
}

fn pluck(items: &[Value], path: &Path) -> Vec<Value> {
    items
        .iter()
        .filter_map(|element| path.resolve(element).cloned())
        .collect()
}

impl Render for ListOp {
    /// The operator's value for this call.
    fn render(&self, scope: &Scope<'_>) -> Result<Value, CallError> {
        let (array, name) = match self {
            ListOp::Sort { array } => (array, "$sort"),
            ListOp::Pluck { array, .. } => (array, "$pluck"),
        };
        let (items, reference): (Cow<'_, Value>, _) = match array {
            Expr::Reference(r) => (r.resolve(scope)?, Some(r)),
            other => (Cow::Owned(other.render(scope)?), None),
        };
        let fault = |message: String| match reference {
            Some(r) => r.blame(reject(OperandFault::InvalidOperand, message)),
            // An operator below gave the array; its values came from the
            // state or the input it read, which the harness vouches for.
            None => CallError::refused_operand(
                Origin::State,
                None,
                reject(OperandFault::InvalidOperand, message),
                "",
            ),
        };
        let Value::Array(list) = &*items else {
            return Err(fault(format!(
                "{name} takes an array, not {}",
                json_kind(&items)
            )));
        };
        match self {
            ListOp::Sort { .. } => {
                if let Some(why) = unsortable(list) {
                    return Err(fault(why));
                }
                Ok(Value::Array(sort(list.clone())))
            }
            ListOp::Pluck { path, .. } => Ok(Value::Array(pluck(list, path))),
        }
    }

    fn clone_render(&self) -> Box<dyn Render> {
        Box::new(self.clone())
    }
}

impl Operator for ListOp {
    fn name(&self) -> &'static str {
        match self {
            ListOp::Sort { .. } => "$sort",
            ListOp::Pluck { .. } => "$pluck",
        }
    }

    fn for_each_reference(&mut self, f: &mut dyn FnMut(&mut Reference)) {
        match self {
            ListOp::Sort { array } | ListOp::Pluck { array, .. } => array.for_each_reference(f),
        }
    }

    fn clone_operator(&self) -> Box<dyn Operator> {
        Box::new(self.clone())
    }
}

/// `{"$sort": array}` or `{"$pluck": {"from": array, "path": "dotted.path"}}` at `at`.
pub(crate) fn compile(c: &mut Checker, key: &str, operand: &Value, at: &str) -> Option<Expr> {
    c.feature(at, Feature::Operator(key));
    let at = pointer_push(at, key);
    let before = c.diagnostics.len();
    let (array_value, array_at, path) = if key == "$sort" {
        (Some(operand), at.clone(), None)
    } else {
        let Value::Object(fields) = operand else {
            c.diagnostics.push(
                DiagnosticCode::WrongType,
                &at,
                format!(
                    "$pluck takes an object {{from, path}}, not {}",
                    json_kind(operand)
                ),
            );
            return None;
        };
        for field in fields.keys() {
            if !matches!(field.as_str(), "from" | "path") {
                c.diagnostics.push(
                    DiagnosticCode::UnknownField,
                    pointer_push(&at, field),
                    format!("$pluck has no field {field:?}; its fields are from and path"),
                );
            }
        }
        for name in ["from", "path"] {
            if !fields.contains_key(name) {
                c.diagnostics.push(
                    DiagnosticCode::MissingField,
                    &at,
                    format!("$pluck needs {name}"),
                );
            }
        }
        let path = match fields.get("path") {
            Some(Value::String(raw)) => match Path::parse(raw) {
                Ok(path) => Some(path),
                Err(e) => {
                    c.diagnostics.push(
                        DiagnosticCode::InvalidPath,
                        pointer_push(&at, "path"),
                        e.message,
                    );
                    None
                }
            },
            Some(other) => {
                c.diagnostics.push(
                    DiagnosticCode::WrongType,
                    pointer_push(&at, "path"),
                    format!(
                        "$pluck's path is a dot-separated path string, not {}",
                        json_kind(other)
                    ),
                );
                None
            }
            None => None,
        };
        (fields.get("from"), pointer_push(&at, "from"), path)
    };
    let array = array_value.map(|v| c.node(v, &array_at));
    match &array {
        Some(Expr::Literal(Value::Array(_)) | Expr::Array(_) | Expr::Reference(_)) | None => {}
        // The operators known to give an array.
        Some(Expr::Op(op)) if matches!(op.name(), "$sort" | "$pluck" | "$append") => {}
        Some(Expr::Literal(other)) => c.diagnostics.push(
            DiagnosticCode::WrongType,
            &array_at,
            format!(
                "{key} takes an array or one $input/$state reference, not {}",
                json_kind(other)
            ),
        ),
        Some(_) => c.diagnostics.push(
            DiagnosticCode::WrongType,
            &array_at,
            format!("{key} takes an array or one $input/$state reference, not an operator that gives no array"),
        ),
    }
    if c.diagnostics.len() != before {
        return None;
    }
    let array = array?;
    let op = if key == "$sort" {
        ListOp::Sort { array }
    } else {
        ListOp::Pluck { array, path: path? }
    };
    // Over a literal array the value is known now.
    if let ListOp::Sort {
        array: Expr::Literal(Value::Array(items)),
    } = &op
    {
        return match unsortable(items) {
            Some(why) => {
                c.diagnostics.push(DiagnosticCode::InvalidLiteral, &at, why);
                None
            }
            None => Some(Expr::Literal(Value::Array(sort(items.clone())))),
        };
    }
    if let ListOp::Pluck {
        array: Expr::Literal(Value::Array(items)),
        path,
    } = &op
    {
        return Some(Expr::Literal(Value::Array(pluck(items, path))));
    }
    Some(Expr::Op(Box::new(op)))
}
