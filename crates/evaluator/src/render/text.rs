//! Writing an expression's rendering as compact JSON text, byte for byte
//! what `serde_json` writes for the rendered value, without building it:
//! a template's literal runs were serialized when the definition was
//! compiled (`crate::render::template`).

use crate::error::CallError;
use crate::expr::tree::{Expr, Piece};
use crate::scope::Scope;

impl Expr {
    /// Appends the rendered value as compact JSON: byte for byte what
    /// `serde_json` writes for [`Expr::render`]'s value, and the same error
    /// (operators are met in the same order). On error `out` may hold a
    /// partial rendering; the caller truncates it.
    pub(crate) fn write_json(&self, scope: &Scope<'_>, out: &mut Vec<u8>) -> Result<(), CallError> {
        match self {
            Expr::Template(template) => {
                for piece in template.pieces.iter() {
                    match piece {
                        Piece::Text(text) => out.extend_from_slice(text.as_bytes()),
                        Piece::Hole(expr) => expr.write_json(scope, out)?,
                    }
                }
            }
            Expr::Reference(r) => write_value(out, &r.resolve(scope)?),
            Expr::Array(items) => {
                out.push(b'[');
                for (i, item) in items.list.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    item.write_json(scope, out)?;
                }
                out.push(b']');
            }
            Expr::Object(fields) => {
                out.push(b'{');
                for (i, (key, value)) in fields.list.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write_value(out, &**key);
                    out.push(b':');
                    value.write_json(scope, out)?;
                }
                out.push(b'}');
            }
            Expr::Literal(value) => write_value(out, value),
            Expr::Number(_) | Expr::DateAdd(_) | Expr::Op(_) => {
                write_value(out, &self.render(scope)?);
            }
            Expr::Input(hole) => match scope.ahead.and_then(|a| a.text(hole.id)) {
                Some(text) => out.extend_from_slice(text),
                None => hole.expr.write_json(scope, out)?,
            },
        }
        Ok(())
    }
}

/// Compact JSON of a value into a buffer; writing into a `Vec` cannot fail.
pub(crate) fn write_value<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let _ = serde_json::to_writer(out, value);
}
