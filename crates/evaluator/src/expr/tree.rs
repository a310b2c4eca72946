//! The compiled form of an expression (docs/spec.md §4): what the
//! expression compiler (`crate::expr::compiler`) builds once and the
//! rendering room (`crate::render`) renders per call.
//!
//! Version 1's nodes are variants of [`Expr`], rendered without an
//! indirection; every other operator family is an [`Operator`] of its own
//! room (`crate::expr::decimals`, `collections`, `find`, `lists`, …), so
//! a new family adds a room and a row of `crate::expr::OPERATORS`, not a
//! variant here.

use crate::error::{CallError, Origin, Rejection};
use crate::paths::reference::Reference;
use crate::scope::{Render, Scope};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// A compiled expression. Subtrees without operators are kept whole as
/// literals, so rendering them is a single clone.
#[derive(Debug, Clone)]
pub(crate) enum Expr {
    Literal(Value),
    Array(Box<Items>),
    Object(Box<Fields>),
    Reference(Reference),
    /// `$number` (see `crate::expr::numbers`).
    Number(Operand),
    /// `$dateAdd`: value, days, hours (see `crate::expr::dates`).
    DateAdd(Box<[Option<Operand>; 3]>),
    /// An operator of a later family (see [`Operator`]).
    Op(Box<dyn Operator>),
    /// A root expression with its JSON text prepared (see [`Template`]).
    Template(Box<Template>),
    /// An operator that reads the input alone (see [`InputHole`]).
    Input(Box<InputHole>),
}

/// An operator of a family beyond version 1's: compiled by its room,
/// rendered out of line.
pub(crate) trait Operator: Render {
    /// The operator as written (`$add`, `$find`, …): what the checks of
    /// the operators that take another operator's value match on.
    fn name(&self) -> &'static str;

    /// Calls `f` on every reference below it.
    fn for_each_reference(&mut self, f: &mut dyn FnMut(&mut Reference));

    /// A copy (compiled definitions are `Clone`).
    fn clone_operator(&self) -> Box<dyn Operator>;

    /// Whether its value names a path segment (a `$find` that gives the key).
    fn names_segment(&self) -> bool {
        false
    }

    /// Who supplied its value, for the blame of an element or a segment
    /// taken from it: the definition computed it (the state's fault), unless
    /// the operator passes on the input's or a literal's values (an
    /// iteration's element, `$filter`, `$zip`).
    fn origin(&self) -> Origin {
        Origin::State
    }
}

impl Clone for Box<dyn Operator> {
    fn clone(&self) -> Self {
        self.clone_operator()
    }
}

/// An operand of `$number` or `$dateAdd`: a literal or a reference, nothing deeper.
#[derive(Debug, Clone)]
pub(crate) enum Operand {
    Literal(Value),
    Reference(Reference),
}

/// An operator that reads only the input, never the state: its rendering is
/// the same whatever the state, so it can be done once per call before the
/// state is known, on another thread (`crate::render::ahead`). Operators of
/// one variant that render alike share an `id`.
#[derive(Debug, Clone)]
pub(crate) struct InputHole {
    pub(crate) id: usize,
    pub(crate) expr: Expr,
}

/// An array with at least one operator inside.
#[derive(Debug, Clone)]
pub(crate) struct Items {
    pub(crate) list: Box<[Expr]>,
    /// The array with every literal item in place and `null` at each hole:
    /// rendering clones it and fills the holes.
    pub(crate) skeleton: Vec<Value>,
    pub(crate) holes: Box<[usize]>,
}

/// An object with at least one operator inside, fields in the map's order.
#[derive(Debug, Clone)]
pub(crate) struct Fields {
    pub(crate) list: Box<[(Box<str>, Expr)]>,
    /// The object with every literal field in place and `null` at each hole:
    /// rendering clones it (no key search, no re-sorting) and fills the holes.
    pub(crate) skeleton: Map<String, Value>,
    pub(crate) holes: Box<[usize]>,
}

impl Items {
    pub(crate) fn new(list: Vec<Expr>) -> Items {
        let skeleton = list.iter().map(Expr::literal_or_null).collect();
        let holes = list
            .iter()
            .enumerate()
            .filter(|(_, e)| !matches!(e, Expr::Literal(_)))
            .map(|(i, _)| i)
            .collect();
        Items {
            list: list.into_boxed_slice(),
            skeleton,
            holes,
        }
    }
}

impl Fields {
    pub(crate) fn new(list: Vec<(Box<str>, Expr)>) -> Fields {
        let skeleton = list
            .iter()
            .map(|(k, e)| (String::from(&**k), e.literal_or_null()))
            .collect();
        let holes = list
            .iter()
            .enumerate()
            .filter(|(_, (_, e))| !matches!(e, Expr::Literal(_)))
            .map(|(i, _)| i)
            .collect();
        Fields {
            list: list.into_boxed_slice(),
            skeleton,
            holes,
        }
    }
}

/// A root expression together with its compact JSON text cut into pieces
/// (`crate::render::template`): the literal runs (braces, keys, commas and
/// literal values, serialized once at compile time) and, between them, the
/// operators in document order. Writing a call's result is then a copy of
/// each run and the rendering of each hole, with no intermediate `Value`.
#[derive(Debug, Clone)]
pub(crate) struct Template {
    pub(crate) tree: Expr,
    pub(crate) pieces: Box<[Piece]>,
}

#[derive(Debug, Clone)]
pub(crate) enum Piece {
    Text(Box<str>),
    Hole(Expr),
}

impl Expr {
    /// A copy of a literal's value; `null` for anything else.
    pub(crate) fn literal_or_null(&self) -> Value {
        match self {
            Expr::Literal(v) => v.clone(),
            _ => Value::Null,
        }
    }

    /// The value of a literal; `null` for anything else (callers check first).
    pub(crate) fn into_literal(self) -> Value {
        match self {
            Expr::Literal(v) => v,
            _ => Value::Null,
        }
    }

    /// Calls `f` on every reference in the expression, the copies a
    /// template keeps of its holes included.
    pub(crate) fn for_each_reference(&mut self, f: &mut dyn FnMut(&mut Reference)) {
        let mut operand = |o: &mut Operand| {
            if let Operand::Reference(r) = o {
                f(r);
            }
        };
        match self {
            Expr::Literal(_) => {}
            Expr::Array(items) => items.list.iter_mut().for_each(|e| e.for_each_reference(f)),
            Expr::Object(fields) => fields
                .list
                .iter_mut()
                .for_each(|(_, e)| e.for_each_reference(f)),
            Expr::Reference(r) => f(r),
            Expr::Number(o) => operand(o),
            Expr::DateAdd(operands) => operands.iter_mut().flatten().for_each(operand),
            Expr::Op(op) => op.for_each_reference(f),
            Expr::Template(template) => {
                template.tree.for_each_reference(f);
                for piece in template.pieces.iter_mut() {
                    if let Piece::Hole(e) = piece {
                        e.for_each_reference(f);
                    }
                }
            }
            Expr::Input(hole) => hole.expr.for_each_reference(f),
        }
    }
}

impl Expr {
    /// Who supplied its value: a reference's source, an operator's own
    /// answer (an element of a collection it passes on), a literal the
    /// definition's, anything else the definition computed (the state's).
    pub(crate) fn origin(&self) -> Origin {
        match self {
            Expr::Reference(r) => r.source.origin(),
            Expr::Op(op) => op.origin(),
            Expr::Literal(_) => Origin::Literal,
            _ => Origin::State,
        }
    }
}

impl Operand {
    /// Who supplied its value.
    pub(crate) fn origin(&self) -> Origin {
        match self {
            Operand::Literal(_) => Origin::Literal,
            Operand::Reference(r) => r.source.origin(),
        }
    }

    /// Its value for this call.
    pub(crate) fn value<'s, 'a: 's>(
        &'s self,
        scope: &Scope<'a>,
    ) -> Result<Cow<'s, Value>, CallError> {
        match self {
            Operand::Literal(v) => Ok(Cow::Borrowed(v)),
            Operand::Reference(r) => r.resolve(scope),
        }
    }

    /// Turns a rejection of this operand into the error its origin calls for.
    pub(crate) fn blame(&self, rejection: Rejection, at: &str) -> CallError {
        CallError::refused_operand(self.origin(), self.pointer(), rejection, at)
    }

    /// Where its value is in the input or the state; `None` for a literal.
    pub(crate) fn pointer(&self) -> Option<String> {
        match self {
            Operand::Literal(_) => None,
            Operand::Reference(r) => Some(r.data_pointer()),
        }
    }
}
