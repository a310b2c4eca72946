//! Rendering ahead (`crate::call::prepared`): every operator of a variant
//! that reads the input alone is marked as an input hole when the definition
//! is compiled, and rendered once per call before the state is known — as
//! JSON text, as a value, or both — into the call's [`Ahead`].

use crate::expr::tree::{Expr, InputHole, Operand, Piece};
use crate::scope::{Ahead, Memo, Scope, Source};
use serde_json::{Map, Value};
use std::cell::RefCell;

/// At most this many distinct input operators of one variant are rendered
/// ahead: a variant whose rules read many different ones would otherwise
/// render, every call, operators its matched rule never uses.
pub(crate) const MAX_INPUT_HOLES: usize = 16;

impl Expr {
    /// Wraps every operator that reads the input alone in an [`InputHole`],
    /// the copies a template keeps of its holes included; `holes` collects one
    /// copy of each distinct operator, its index being the id (at most
    /// [`MAX_INPUT_HOLES`]; the rest are left as they are).
    pub(crate) fn mark_input_holes(&mut self, holes: &mut Vec<(String, Expr)>) {
        match self {
            // A later family's operators are rendered in place.
            Expr::Literal(_) | Expr::Input(_) | Expr::Op(_) => {}
            Expr::Array(items) => items
                .list
                .iter_mut()
                .for_each(|e| e.mark_input_holes(holes)),
            Expr::Object(fields) => fields
                .list
                .iter_mut()
                .for_each(|(_, e)| e.mark_input_holes(holes)),
            Expr::Template(template) => {
                template.tree.mark_input_holes(holes);
                for piece in template.pieces.iter_mut() {
                    if let Piece::Hole(e) = piece {
                        e.mark_input_holes(holes);
                    }
                }
            }
            Expr::Reference(_) | Expr::Number(_) | Expr::DateAdd(_) => {
                let Some(key) = self.input_key() else {
                    return;
                };
                let id = match holes.iter().position(|(k, _)| *k == key) {
                    Some(id) => id,
                    None if holes.len() < MAX_INPUT_HOLES => {
                        holes.push((key, self.clone()));
                        holes.len() - 1
                    }
                    None => return,
                };
                let expr = std::mem::replace(self, Expr::Literal(Value::Null));
                *self = Expr::Input(Box::new(InputHole { id, expr }));
            }
        }
    }

    /// For an operator that reads the input alone, a text that two such
    /// operators share exactly when they render alike (their locations in
    /// the definition aside); `None` for anything else.
    fn input_key(&self) -> Option<String> {
        fn operand(o: Option<&Operand>) -> Option<String> {
            match o {
                None => Some("-".into()),
                Some(Operand::Literal(v)) => Some(format!("l{v}")),
                Some(Operand::Reference(r))
                    if r.source == Source::Input && r.computed.is_none() =>
                {
                    Some(format!("i{:?}", r.path.as_str()))
                }
                Some(Operand::Reference(_)) => None,
            }
        }
        match self {
            Expr::Reference(r) if r.source == Source::Input && r.computed.is_none() => {
                Some(format!("i{:?}", r.path.as_str()))
            }
            Expr::Number(o) => Some(format!("n({})", operand(Some(o))?)),
            Expr::DateAdd(operands) => {
                let [value, days, hours] = &**operands;
                Some(format!(
                    "d({},{},{})",
                    operand(value.as_ref())?,
                    operand(days.as_ref())?,
                    operand(hours.as_ref())?
                ))
            }
            _ => None,
        }
    }
}

/// Renders a variant's input operators (`holes`, by id) against `input`.
pub(crate) fn render_ahead(holes: &[Expr], input: &Value, text: bool, values: bool) -> Ahead {
    let mut ahead = Ahead::default();
    if holes.is_empty() || !(text || values) {
        return ahead;
    }
    let state = Map::new();
    let memo = Memo::new();
    let scope = Scope::new(input, &state, &memo);
    if text {
        ahead.text.reserve(64 * holes.len());
        ahead.spans = holes
            .iter()
            .map(|expr| {
                // With the values ahead too, nothing resolves a
                // reference's path on the evaluating thread to write it.
                if !values && matches!(expr, Expr::Reference(_)) {
                    return None;
                }
                let start = ahead.text.len();
                if expr.write_json(&scope, &mut ahead.text).is_err() {
                    ahead.text.truncate(start);
                    return None;
                }
                Some((
                    u32::try_from(start).ok()?,
                    u32::try_from(ahead.text.len()).ok()?,
                ))
            })
            .collect();
    }
    if values {
        ahead.values = holes
            .iter()
            .map(|expr| RefCell::new(expr.render(&scope).ok()))
            .collect();
    }
    ahead
}
