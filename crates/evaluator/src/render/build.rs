//! Rendering an expression straight into a caller's own form of JSON (a
//! [`Build`]), without a [`Value`] of the whole result in between: the
//! literal parts are handed over as the compiled definition's own values
//! (the same address every call, so a caller may keep what it made of
//! them), objects with operators inside as their [`Shape`] (the keys, known
//! when the definition was compiled), and only the operators are rendered.

use crate::error::CallError;
use crate::expr::tree::Expr;
use crate::scope::Scope;
use serde_json::Value;

/// How a caller builds a result in its own form; see
/// [`evaluate_into`](crate::evaluate_into). The parts are given in
/// document order, as [`evaluate`](crate::evaluate) renders them, so the
/// first error is the same.
pub trait Build<'d> {
    /// A built value.
    type Node;
    /// An array being built.
    type Array;
    /// An object being built.
    type Object;
    /// Why building failed; a [`CallError`] of an operator ends it too.
    type Error: From<CallError>;

    /// A literal part of a result: a value of the compiled definition,
    /// the same (at the same address) every call for as long as the
    /// definition lives.
    fn constant(&mut self, value: &'d Value) -> Result<Self::Node, Self::Error>;

    /// A part rendered for this call: an operator's value, or the input's
    /// or state's value a reference reads.
    fn rendered(&mut self, value: &Value) -> Result<Self::Node, Self::Error>;

    /// Starts an array with an operator inside, of `len` items.
    fn begin_array(&mut self, len: usize) -> Result<Self::Array, Self::Error>;

    /// The array's next item.
    fn push(&mut self, array: &mut Self::Array, item: Self::Node) -> Result<(), Self::Error>;

    /// The array, every item pushed.
    fn end_array(&mut self, array: Self::Array) -> Result<Self::Node, Self::Error>;

    /// Starts an object with an operator inside; its fields come in the
    /// shape's order.
    fn begin_object(&mut self, shape: Shape<'d>) -> Result<Self::Object, Self::Error>;

    /// The value of the shape's field `index`.
    fn field(
        &mut self,
        object: &mut Self::Object,
        index: usize,
        value: Self::Node,
    ) -> Result<(), Self::Error>;

    /// The object, every field given.
    fn end_object(&mut self, object: Self::Object) -> Result<Self::Node, Self::Error>;
}

/// An object of a result template that has an operator inside: its keys,
/// in the order its fields are given and rendered.
#[derive(Debug, Clone, Copy)]
pub struct Shape<'d> {
    pub(crate) fields: &'d [(Box<str>, Expr)],
}

impl<'d> Shape<'d> {
    /// Which object of the compiled definition this is: the same number
    /// every call, and no other object of the definition has it while the
    /// definition lives.
    pub fn id(&self) -> usize {
        self.fields.as_ptr().addr()
    }

    /// The number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// True for an object without fields (never: an empty object is a literal).
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &'d str> + use<'d> {
        self.fields.iter().map(|(key, _)| &**key)
    }
}

/// A part of a result template that is the same every call: what a
/// [`Build`] may prepare once (see
/// [`CompiledDefinition::for_each_constant`](crate::CompiledDefinition::for_each_constant)).
#[derive(Debug, Clone, Copy)]
pub enum Constant<'d> {
    /// A literal value, as [`Build::constant`] is given it.
    Value(&'d Value),
    /// An object with an operator inside, as [`Build::begin_object`] is given it.
    Shape(Shape<'d>),
}

impl Expr {
    /// Renders into `builder`: exactly [`Expr::render`]'s value and error.
    pub(crate) fn build<'d, B: Build<'d>>(
        &'d self,
        scope: &Scope<'_>,
        builder: &mut B,
    ) -> Result<B::Node, B::Error> {
        match self {
            Expr::Literal(value) => builder.constant(value),
            Expr::Array(items) => {
                let mut array = builder.begin_array(items.list.len())?;
                for item in items.list.iter() {
                    let node = item.build(scope, builder)?;
                    builder.push(&mut array, node)?;
                }
                builder.end_array(array)
            }
            Expr::Object(fields) => {
                let shape = Shape {
                    fields: &fields.list,
                };
                let mut object = builder.begin_object(shape)?;
                for (i, (_, expr)) in fields.list.iter().enumerate() {
                    let node = expr.build(scope, builder)?;
                    builder.field(&mut object, i, node)?;
                }
                builder.end_object(object)
            }
            Expr::Template(template) => template.tree.build(scope, builder),
            Expr::Reference(r) => {
                let value = r.resolve(scope)?;
                builder.rendered(&value)
            }
            Expr::Input(hole) => match scope.ahead.and_then(|a| a.take_value(hole.id)) {
                Some(value) => builder.rendered(&value),
                None => hole.expr.build(scope, builder),
            },
            Expr::Number(_) | Expr::DateAdd(_) | Expr::Op(_) => {
                builder.rendered(&self.render(scope)?)
            }
        }
    }

    /// Calls `f` on every part of the expression [`Expr::build`] hands over
    /// as the definition's own: literals and the shapes of objects.
    pub(crate) fn for_each_constant<'d>(&'d self, f: &mut dyn FnMut(Constant<'d>)) {
        match self {
            Expr::Literal(value) => f(Constant::Value(value)),
            Expr::Array(items) => items.list.iter().for_each(|e| e.for_each_constant(f)),
            Expr::Object(fields) => {
                f(Constant::Shape(Shape {
                    fields: &fields.list,
                }));
                fields.list.iter().for_each(|(_, e)| e.for_each_constant(f));
            }
            Expr::Template(template) => template.tree.for_each_constant(f),
            Expr::Input(hole) => hole.expr.for_each_constant(f),
            Expr::Reference(_) | Expr::Number(_) | Expr::DateAdd(_) | Expr::Op(_) => {}
        }
    }
}
