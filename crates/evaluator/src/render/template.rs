//! A root expression's JSON text cut, once when the definition is
//! compiled, into literal runs and holes (see [`Template`]).

use crate::expr::tree::{Expr, Piece, Template};

impl Template {
    /// Wraps a compiled root; a bare operator needs no template.
    pub(crate) fn wrap(tree: Expr) -> Expr {
        if matches!(
            tree,
            Expr::Reference(_)
                | Expr::Number(_)
                | Expr::DateAdd(_)
                | Expr::Op(_)
                | Expr::Template(_)
                | Expr::Input(_)
        ) {
            return tree;
        }
        let mut pieces = Vec::new();
        let mut text = String::new();
        Template::cut(&tree, &mut pieces, &mut text);
        if !text.is_empty() {
            pieces.push(Piece::Text(text.into_boxed_str()));
        }
        Expr::Template(Box::new(Template {
            tree,
            pieces: pieces.into_boxed_slice(),
        }))
    }

    fn cut(expr: &Expr, pieces: &mut Vec<Piece>, text: &mut String) {
        match expr {
            Expr::Literal(value) => text.push_str(&value.to_string()),
            Expr::Array(items) => {
                text.push('[');
                for (i, item) in items.list.iter().enumerate() {
                    if i > 0 {
                        text.push(',');
                    }
                    Template::cut(item, pieces, text);
                }
                text.push(']');
            }
            Expr::Object(fields) => {
                text.push('{');
                for (i, (key, value)) in fields.list.iter().enumerate() {
                    if i > 0 {
                        text.push(',');
                    }
                    // Serializing a `str` cannot fail.
                    text.push_str(&serde_json::to_string(&**key).unwrap_or_default());
                    text.push(':');
                    Template::cut(value, pieces, text);
                }
                text.push('}');
            }
            Expr::Template(inner) => Template::cut(&inner.tree, pieces, text),
            Expr::Reference(_)
            | Expr::Number(_)
            | Expr::DateAdd(_)
            | Expr::Op(_)
            | Expr::Input(_) => {
                if !text.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(text).into_boxed_str()));
                }
                pieces.push(Piece::Hole(expr.clone()));
            }
        }
    }
}
