//! Computed text (version 3, docs/mock-language.md "Computed text"):
//! `$concat` (parts joined) and `$format` (a text with holes filled by
//! name or position). Each value is written as a JSON scalar: a string as
//! it is, a number, boolean or `null` as its JSON text; an object or an
//! array cannot be text.

use crate::check::context::Checker;
use crate::check::diagnostics::{DiagnosticCode, pointer_index, pointer_push};
use crate::error::{CallError, OperandFault, Origin, reject};
use crate::expr::tree::{Expr, Operator};
use crate::language::Feature;
use crate::paths::reference::Reference;
use crate::scope::{Memo, Render, Scope};
use serde_json::{Map, Value};
use toolmock_contract::json_kind;

/// At most this many parts of one `$concat`, values of one `$format`.
pub(crate) const MAX_PARTS: usize = 16;

/// One piece of a text: written as it is, or a value written as a scalar.
#[derive(Debug, Clone)]
enum Piece {
    Text(Box<str>),
    Value(Expr),
}

/// A compiled `$concat` or `$format`: its pieces in order.
#[derive(Debug, Clone)]
struct TextOp {
    name: &'static str,
    pieces: Box<[Piece]>,
    at: Box<str>,
}

impl TextOp {
    fn write(&self, scope: &Scope<'_>) -> Result<String, CallError> {
        let mut out = String::new();
        for piece in self.pieces.iter() {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Value(expr) => {
                    let value = expr.render(scope)?;
                    if !scalar_into(&value, &mut out) {
                        return Err(self.not_scalar(expr, &value));
                    }
                }
            }
        }
        Ok(out)
    }

    /// An object or array where text is wanted: blamed on where it came
    /// from (a reference's source; an operator's value on the fixture).
    fn not_scalar(&self, expr: &Expr, value: &Value) -> CallError {
        let rejection = reject(
            OperandFault::InvalidOperand,
            format!(
                "{} writes strings, numbers, booleans and null, not {}",
                self.name,
                json_kind(value)
            ),
        );
        match expr {
            Expr::Reference(r) => r.blame(rejection),
            _ => CallError::refused_operand(Origin::State, None, rejection, &self.at),
        }
    }
}

/// Writes a scalar as text; `false` for an object or an array.
fn scalar_into(value: &Value, out: &mut String) -> bool {
    match value {
        Value::String(text) => out.push_str(text),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Null => out.push_str("null"),
        Value::Array(_) | Value::Object(_) => return false,
    }
    true
}

impl Render for TextOp {
    fn render(&self, scope: &Scope<'_>) -> Result<Value, CallError> {
        self.write(scope).map(Value::String)
    }

    fn clone_render(&self) -> Box<dyn Render> {
        Box::new(self.clone())
    }
}

impl Operator for TextOp {
    fn name(&self) -> &'static str {
        self.name
    }

    fn for_each_reference(&mut self, f: &mut dyn FnMut(&mut Reference)) {
        for piece in self.pieces.iter_mut() {
            if let Piece::Value(expr) = piece {
                expr.for_each_reference(f);
            }
        }
    }

    fn clone_operator(&self) -> Box<dyn Operator> {
        Box::new(self.clone())
    }
}

/// `$concat` or `$format` (`key`) with its operand, the object being at `at`.
pub(crate) fn compile(c: &mut Checker, key: &str, operand: &Value, at: &str) -> Option<Expr> {
    c.feature(at, Feature::Operator(key));
    let operand_at = pointer_push(at, key);
    let (name, pieces) = if key == "$concat" {
        ("$concat", concat(c, operand, &operand_at)?)
    } else {
        ("$format", format(c, operand, &operand_at)?)
    };
    let op = TextOp {
        name,
        pieces: pieces.into_boxed_slice(),
        at: at.into(),
    };
    if op
        .pieces
        .iter()
        .all(|p| matches!(p, Piece::Text(_) | Piece::Value(Expr::Literal(_))))
    {
        // Nothing here reads the call, so an empty scope serves.
        let state = Map::new();
        let memo = Memo::new();
        let scope = Scope::new(&Value::Null, &state, &memo);
        if let Ok(text) = op.write(&scope) {
            return Some(Expr::Literal(Value::String(text)));
        }
    }
    Some(Expr::Op(Box::new(op)))
}

/// A value to write as text at `at`: any expression but a literal object
/// or array, or an operator known to give one.
fn part(c: &mut Checker, value: &Value, at: &str, key: &str) -> Option<Expr> {
    let before = c.diagnostics.len();
    let expr = c.node(value, at);
    if c.diagnostics.len() != before {
        return None;
    }
    let not_text = match &expr {
        Expr::Literal(v @ (Value::Array(_) | Value::Object(_))) => Some(json_kind(v)),
        Expr::Array(_) => Some("an array"),
        Expr::Object(_) => Some("an object"),
        Expr::Op(op) if matches!(op.name(), "$append" | "$merge" | "$sort" | "$pluck") => {
            Some("an operator that gives an array or an object")
        }
        _ => None,
    };
    if let Some(kind) = not_text {
        c.diagnostics.push(
            DiagnosticCode::WrongType,
            at,
            format!("{key} writes strings, numbers, booleans and null, not {kind}"),
        );
        return None;
    }
    Some(expr)
}

/// `$concat`'s operand: an array of 2 to 16 parts.
fn concat(c: &mut Checker, operand: &Value, at: &str) -> Option<Vec<Piece>> {
    let list = match operand {
        Value::Array(list) if (2..=MAX_PARTS).contains(&list.len()) => list,
        other => {
            c.diagnostics.push(
                DiagnosticCode::WrongType,
                at,
                format!(
                    "$concat takes an array of 2 to {MAX_PARTS} parts, not {}",
                    match other {
                        Value::Array(list) => format!("{} parts", list.len()),
                        _ => json_kind(other).to_owned(),
                    }
                ),
            );
            return None;
        }
    };
    let before = c.diagnostics.len();
    let pieces: Vec<Piece> = list
        .iter()
        .enumerate()
        .filter_map(|(i, v)| part(c, v, &pointer_index(at, i), "$concat").map(Piece::Value))
        .collect();
    (c.diagnostics.len() == before).then_some(pieces)
}

/// `$format`'s operand: `{"text": "… {hole} …", "values": {…} or […]}`.
fn format(c: &mut Checker, operand: &Value, at: &str) -> Option<Vec<Piece>> {
    let Value::Object(fields) = operand else {
        c.diagnostics.push(
            DiagnosticCode::WrongType,
            at,
            format!(
                "$format takes an object {{text, values}}, not {}",
                json_kind(operand)
            ),
        );
        return None;
    };
    let before = c.diagnostics.len();
    for key in fields.keys() {
        if !matches!(key.as_str(), "text" | "values") {
            c.diagnostics.push(
                DiagnosticCode::UnknownField,
                pointer_push(at, key),
                format!("$format has no field {key:?}; its fields are text and values"),
            );
        }
    }
    for name in ["text", "values"] {
        if !fields.contains_key(name) {
            c.diagnostics.push(
                DiagnosticCode::MissingField,
                at,
                format!("$format needs {name}"),
            );
        }
    }
    let values_at = pointer_push(at, "values");
    let values: Vec<(String, Option<Expr>)> = match fields.get("values") {
        Some(Value::Object(m)) if (1..=MAX_PARTS).contains(&m.len()) => m
            .iter()
            .map(|(k, v)| {
                let expr = part(c, v, &pointer_push(&values_at, k), "$format");
                (k.clone(), expr)
            })
            .collect(),
        Some(Value::Array(list)) if (1..=MAX_PARTS).contains(&list.len()) => list
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let expr = part(c, v, &pointer_index(&values_at, i), "$format");
                (i.to_string(), expr)
            })
            .collect(),
        Some(other) => {
            c.diagnostics.push(
                DiagnosticCode::WrongType,
                &values_at,
                format!(
                    "$format's values are an object (named holes) or an array (numbered holes) of 1 to {MAX_PARTS} values, not {}",
                    match other {
                        Value::Array(l) => format!("an array of {}", l.len()),
                        Value::Object(m) => format!("an object of {}", m.len()),
                        _ => json_kind(other).to_owned(),
                    }
                ),
            );
            Vec::new()
        }
        None => Vec::new(),
    };
    let text_at = pointer_push(at, "text");
    let text = match fields.get("text") {
        Some(Value::String(text)) => Some(text),
        Some(other) => {
            c.wrong_type(&text_at, "a string with {holes}", other);
            None
        }
        None => None,
    };
    let pieces = match text {
        Some(text) if c.diagnostics.len() == before => match holes(text, &values) {
            Ok(pieces) => pieces,
            Err(why) => {
                c.diagnostics
                    .push(DiagnosticCode::InvalidLiteral, &text_at, why);
                return None;
            }
        },
        _ => return None,
    };
    (c.diagnostics.len() == before).then_some(pieces)
}

/// Cuts a `$format` text at its holes: `{name}` or `{0}` names a value,
/// `{{` and `}}` are the braces themselves.
fn holes(text: &str, values: &[(String, Option<Expr>)]) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                literal.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                literal.push('}');
            }
            '{' => {
                let mut name = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(c) if c.is_ascii_alphanumeric() || c == '_' => name.push(c),
                        _ => {
                            return Err(format!(
                                "$format's text has a '{{' not closed by '}}' after a name of letters, digits and '_' (write '{{{{' for a brace); at {{{name}"
                            ));
                        }
                    }
                }
                let Some((_, Some(expr))) = values.iter().find(|(k, _)| *k == name) else {
                    return Err(format!(
                        "$format's text names the hole {{{name}}}, which its values do not have"
                    ));
                };
                if !literal.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut literal).into()));
                }
                pieces.push(Piece::Value(expr.clone()));
            }
            '}' => {
                return Err(
                    "$format's text has a '}' that closes no hole (write '}}' for a brace)".into(),
                );
            }
            other => literal.push(other),
        }
    }
    if !literal.is_empty() {
        pieces.push(Piece::Text(literal.into()));
    }
    Ok(pieces)
}
