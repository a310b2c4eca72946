//! Rendering an expression as a value against one call: the literal parts
//! are cloned whole, the holes filled in document order, so the first error
//! is the one a field-by-field rendering would meet first.

use crate::error::CallError;
use crate::expr::dates;
use crate::expr::numbers;
use crate::expr::tree::Expr;
use crate::scope::Scope;
use serde_json::Value;

/// An expression is what renders (a path segment a `$let` gives).
impl crate::scope::Render for Expr {
    fn render(&self, scope: &Scope<'_>) -> Result<Value, CallError> {
        Expr::render(self, scope)
    }

    fn clone_render(&self) -> Box<dyn crate::scope::Render> {
        Box::new(self.clone())
    }
}

impl Expr {
    /// Renders against a scope: references read the pre-call input and state.
    pub(crate) fn render(&self, scope: &Scope<'_>) -> Result<Value, CallError> {
        match self {
            Expr::Literal(v) => Ok(v.clone()),
            // Holes are filled in document order, so the first error is the
            // one a field-by-field rendering would meet first.
            Expr::Array(items) => {
                let mut rendered = items.skeleton.clone();
                for &i in items.holes.iter() {
                    if let (Some(slot), Some(expr)) = (rendered.get_mut(i), items.list.get(i)) {
                        *slot = expr.render(scope)?;
                    }
                }
                Ok(Value::Array(rendered))
            }
            Expr::Object(fields) => {
                // The skeleton holds the fields in the list's order, so the
                // holes are filled by position, without a key search.
                let mut rendered = fields.skeleton.clone();
                let mut holes = fields.holes.iter().copied().peekable();
                for (i, slot) in rendered.values_mut().enumerate() {
                    match holes.peek() {
                        Some(&hole) if hole == i => holes.next(),
                        Some(_) => continue,
                        None => break,
                    };
                    if let Some((_, expr)) = fields.list.get(i) {
                        *slot = expr.render(scope)?;
                    }
                }
                Ok(Value::Object(rendered))
            }
            Expr::Reference(r) => r.resolve(scope).map(std::borrow::Cow::into_owned),
            Expr::Number(operand) => numbers::render(operand, scope),
            Expr::DateAdd(operands) => dates::render(operands, scope),
            Expr::Op(op) => op.render(scope),
            Expr::Template(template) => template.tree.render(scope),
            Expr::Input(hole) => match scope.ahead.and_then(|a| a.take_value(hole.id)) {
                Some(value) => Ok(value),
                None => hole.expr.render(scope),
            },
        }
    }

    /// [`Expr::render`] into `target`, which holds this expression's last
    /// rendering: the literal parts are left in place and only the operators
    /// are rendered again, so a large result is not rebuilt (allocated,
    /// copied, freed) per call. Anything else in `target` is replaced by a
    /// whole rendering. On error `target` is left half rendered; the next
    /// call renders every operator again anyway.
    pub(crate) fn render_into(
        &self,
        scope: &Scope<'_>,
        target: &mut Value,
    ) -> Result<(), CallError> {
        match (self, &mut *target) {
            (Expr::Template(template), _) => template.tree.render_into(scope, target),
            (Expr::Array(items), Value::Array(rendered)) if rendered.len() == items.list.len() => {
                for &i in items.holes.iter() {
                    if let (Some(slot), Some(expr)) = (rendered.get_mut(i), items.list.get(i)) {
                        expr.render_into(scope, slot)?;
                    }
                }
                Ok(())
            }
            (Expr::Object(fields), Value::Object(rendered))
                if rendered.len() == fields.list.len() =>
            {
                for &i in fields.holes.iter() {
                    let Some((key, expr)) = fields.list.get(i) else {
                        continue;
                    };
                    match rendered.get_mut(&**key) {
                        Some(slot) => expr.render_into(scope, slot)?,
                        None => {
                            *target = self.render(scope)?;
                            return Ok(());
                        }
                    }
                }
                Ok(())
            }
            _ => {
                *target = self.render(scope)?;
                Ok(())
            }
        }
    }
}
