//! Named sub-expressions (version 3, docs/mock-language.md "Named
//! sub-expressions"): a `let` block of a variant or a rule names
//! expressions; `{"$let": "name"}` stands for one's value, computed at most
//! once per call (on first use, kept in the call's memo) however often it
//! is named — in the result, the writes, an error, a condition's value.
//!
//! The elements an iteration visits (`"as": "x"`, `crate::expr::iteration`)
//! are named values too, put in their slot by the iteration while it
//! visits each; `{"$let": ["x", "price"]}` reads a path inside any named
//! value ([`NamedPath`], also what a condition with `"source": "let"` reads).

use crate::check::context::{Checker, Named};
use crate::check::diagnostics::{DiagnosticCode, pointer_index, pointer_push};
use crate::error::{CallError, Origin};
use crate::expr::tree::{Expr, Operator};
use crate::language::Feature;
use crate::paths::dotted::{Segment, step};
use crate::paths::parse::MAX_SEGMENTS;
use crate::paths::reference::Reference;
use crate::paths::steps::{describe, index_segment, segment_of};
use crate::scope::{Render, Scope};
use serde_json::Value;
use std::sync::Arc;
use toolmock_contract::json_kind;

/// At most this many names in one `let` block.
pub(crate) const MAX_NAMES: usize = 16;

/// `{"$let": "name"}`: the value of a named sub-expression.
#[derive(Debug, Clone)]
struct LetRef {
    slot: usize,
    expr: Arc<Expr>,
}

impl Render for LetRef {
    fn render(&self, scope: &Scope<'_>) -> Result<Value, CallError> {
        if let Some(Some(value)) = scope.lets.borrow().get(self.slot) {
            return Ok(value.clone());
        }
        // Rendered with no borrow held: it may name other sub-expressions.
        let value = self.expr.render(scope)?;
        let mut lets = scope.lets.borrow_mut();
        if lets.len() <= self.slot {
            lets.resize(self.slot + 1, None);
        }
        if let Some(cell) = lets.get_mut(self.slot) {
            *cell = Some(value.clone());
        }
        Ok(value)
    }

    fn clone_render(&self) -> Box<dyn Render> {
        Box::new(self.clone())
    }
}

impl Operator for LetRef {
    fn name(&self) -> &'static str {
        "$let"
    }

    /// The named expression is shared by every `$let` naming it; its own
    /// references are resolved without a memo slot.
    fn for_each_reference(&mut self, _f: &mut dyn FnMut(&mut Reference)) {}

    fn clone_operator(&self) -> Box<dyn Operator> {
        Box::new(self.clone())
    }
}

/// An iteration's element in sight: the value its slot holds while the
/// iteration visits it.
#[derive(Debug, Clone)]
struct Bound {
    slot: usize,
    origin: Origin,
    at: Box<str>,
}

impl Render for Bound {
    fn render(&self, scope: &Scope<'_>) -> Result<Value, CallError> {
        // The check puts an element's name in sight only inside its
        // iteration, which fills the slot first.
        scope
            .with_bound(self.slot, |value| value.cloned())
            .ok_or_else(|| unbound(&self.at))
    }

    fn clone_render(&self) -> Box<dyn Render> {
        Box::new(self.clone())
    }
}

impl Operator for Bound {
    fn name(&self) -> &'static str {
        "$let"
    }

    fn for_each_reference(&mut self, _f: &mut dyn FnMut(&mut Reference)) {}

    fn clone_operator(&self) -> Box<dyn Operator> {
        Box::new(self.clone())
    }

    fn origin(&self) -> Origin {
        self.origin
    }
}

fn unbound(at: &str) -> CallError {
    CallError::MissingReference {
        path: String::new(),
        message: format!("the named value at {at} is not in sight"),
    }
}

/// A segment of a path inside a named value.
#[derive(Debug, Clone)]
enum NamedPart {
    Literal(Segment),
    /// A reference or a `$let` whose value is the segment.
    Computed(Expr),
}

/// A path inside a named value (`{"$let": ["x", "price"]}`, or a condition
/// with `"source": "let"`): the name's value, then each segment.
#[derive(Debug, Clone)]
pub(crate) struct NamedPath {
    /// The named value (a [`Bound`] element, or a `let` name's value).
    head: Expr,
    /// The slot of a [`Bound`] head, read in place (no copy of the element).
    bound: Option<usize>,
    parts: Box<[NamedPart]>,
    name: Box<str>,
    origin: Origin,
    at: Box<str>,
}

impl NamedPath {
    /// The value at the path for this call; `None` when it does not resolve.
    pub(crate) fn find(&self, scope: &Scope<'_>) -> Result<Option<Value>, CallError> {
        if let Some(slot) = self.bound
            && self
                .parts
                .iter()
                .all(|p| matches!(p, NamedPart::Literal(_)))
        {
            // The common case (`["x", "price"]`): walked in place, no copy
            // but of what is found.
            let parts = &self.parts;
            let walk = |root: &Value| -> Option<Value> {
                let mut at = root;
                for part in parts.iter() {
                    at = match part {
                        NamedPart::Literal(segment) => step(at, segment)?,
                        NamedPart::Computed(_) => return None,
                    };
                }
                Some(at.clone())
            };
            return scope
                .with_bound(slot, |value| value.map(walk))
                .ok_or_else(|| unbound(&self.at));
        }
        let mut segments = Vec::with_capacity(self.parts.len());
        for part in self.parts.iter() {
            segments.push(match part {
                NamedPart::Literal(segment) => segment.clone(),
                NamedPart::Computed(expr) => {
                    let value = expr.render(scope)?;
                    segment_of(&value).ok_or_else(|| {
                        CallError::refused_segment(
                            expr.origin(),
                            String::new(),
                            format!(
                                "the path segment at {} is {}; a path segment is a string or a non-negative integer",
                                self.at,
                                describe(&value)
                            ),
                        )
                    })?
                }
            });
        }
        let walk = |root: &Value| segments.iter().try_fold(root, |v, s| step(v, s)).cloned();
        match self.bound {
            Some(slot) => scope
                .with_bound(slot, |value| value.map(walk))
                .ok_or_else(|| unbound(&self.at)),
            None => Ok(walk(&self.head.render(scope)?)),
        }
    }

    /// Who supplied the named value.
    pub(crate) fn origin(&self) -> Origin {
        self.origin
    }

    /// The pointer of the path inside the named value, for messages.
    pub(crate) fn pointer(&self) -> String {
        let mut out = String::new();
        for part in self.parts.iter() {
            out = pointer_push(
                &out,
                match part {
                    NamedPart::Literal(segment) => &segment.key,
                    NamedPart::Computed(_) => "*",
                },
            );
        }
        out
    }

    /// Every reference below it.
    pub(crate) fn for_each_reference(&mut self, f: &mut dyn FnMut(&mut Reference)) {
        self.head.for_each_reference(f);
        for part in self.parts.iter_mut() {
            if let NamedPart::Computed(expr) = part {
                expr.for_each_reference(f);
            }
        }
    }
}

impl Render for NamedPath {
    fn render(&self, scope: &Scope<'_>) -> Result<Value, CallError> {
        self.find(scope)?
            .ok_or_else(|| CallError::MissingReference {
                path: self.pointer(),
                message: format!(
                    "$let {:?} at {} does not resolve in the named value {:?}",
                    self.pointer(),
                    self.at,
                    &*self.name
                ),
            })
    }

    fn clone_render(&self) -> Box<dyn Render> {
        Box::new(self.clone())
    }
}

impl Operator for NamedPath {
    fn name(&self) -> &'static str {
        "$let"
    }

    fn for_each_reference(&mut self, f: &mut dyn FnMut(&mut Reference)) {
        NamedPath::for_each_reference(self, f);
    }

    fn clone_operator(&self) -> Box<dyn Operator> {
        Box::new(self.clone())
    }

    fn origin(&self) -> Origin {
        self.origin
    }
}

/// `{"$let": "name"}` or `{"$let": ["name", segment, …]}` at `at`.
pub(crate) fn compile(c: &mut Checker, key: &str, operand: &Value, at: &str) -> Option<Expr> {
    c.feature(at, Feature::Operator(key));
    let operand_at = pointer_push(at, key);
    match operand {
        Value::String(name) => {
            let named = c.named(name, &operand_at)?;
            Some(named_value(&named, &operand_at))
        }
        Value::Array(items) => {
            let (name, rest) = match items.split_first() {
                Some((Value::String(name), rest)) => (name, rest),
                _ => {
                    c.diagnostics.push(
                        DiagnosticCode::WrongType,
                        &operand_at,
                        "a $let path is an array whose first member is a name in sight",
                    );
                    return None;
                }
            };
            let path = c.named_path(name, rest, &operand_at, 1)?;
            Some(if path.parts.is_empty() {
                path.head
            } else {
                Expr::Op(Box::new(path))
            })
        }
        other => {
            c.diagnostics.push(
                DiagnosticCode::WrongType,
                &operand_at,
                format!(
                    "$let names a named value (a string) or a path inside one (an array), not {}",
                    json_kind(other)
                ),
            );
            None
        }
    }
}

/// The expression of a named value.
fn named_value(named: &Named, at: &str) -> Expr {
    match &named.expr {
        None => Expr::Op(Box::new(Bound {
            slot: named.slot,
            origin: named.origin,
            at: at.into(),
        })),
        Some(expr) => match &**expr {
            // A name for a constant is the constant; for a reference, the
            // reference (resolved through the memo, and blamed as one).
            Expr::Literal(value) => Expr::Literal(value.clone()),
            reference @ Expr::Reference(_) => reference.clone(),
            _ => Expr::Op(Box::new(LetRef {
                slot: named.slot,
                expr: Arc::clone(expr),
            })),
        },
    }
}

impl Checker {
    /// The named value `name` in sight at `at`, innermost first; an
    /// `unknown_name` diagnostic when there is none.
    pub(crate) fn named(&mut self, name: &str, at: &str) -> Option<Named> {
        if let Some(named) = self.lets.iter().rev().find(|n| *n.name == *name) {
            return Some(named.clone());
        }
        let known: Vec<&str> = self.lets.iter().map(|n| &*n.name).collect();
        self.diagnostics.push(
            DiagnosticCode::UnknownName,
            at,
            format!(
                "no let block or iteration in sight names {name:?}{}",
                if known.is_empty() {
                    String::new()
                } else {
                    format!("; the names are {}", known.join(", "))
                }
            ),
        );
        None
    }

    /// The path `rest` inside the named value `name` (written at `at`, its
    /// segments from index `first` of the array there; `first` is 0 for a
    /// dotted path, whose segments have no place of their own).
    pub(crate) fn named_path(
        &mut self,
        name: &str,
        rest: &[Value],
        at: &str,
        first: usize,
    ) -> Option<NamedPath> {
        // A path written as an array names its value at its first member.
        let name_at = if first > 0 {
            pointer_index(at, 0)
        } else {
            at.to_owned()
        };
        let named = self.named(name, &name_at)?;
        let before = self.diagnostics.len();
        if rest.len() + 1 > MAX_SEGMENTS {
            self.diagnostics.push(
                DiagnosticCode::InvalidPath,
                at,
                format!(
                    "a path has {} segments; at most {MAX_SEGMENTS} are allowed",
                    rest.len() + 1
                ),
            );
        }
        let mut parts = Vec::with_capacity(rest.len());
        for (i, item) in rest.iter().enumerate() {
            let item_at = pointer_index(at, i + first);
            match item {
                Value::String(key) => parts.push(NamedPart::Literal(Segment::of_key(key))),
                Value::Number(_) => match index_segment(item) {
                    Some(segment) => parts.push(NamedPart::Literal(segment)),
                    None => self.diagnostics.push(
                        DiagnosticCode::InvalidPath,
                        &item_at,
                        format!("a path segment is a string or a non-negative integer, not the number {item}"),
                    ),
                },
                Value::Object(map)
                    if map.len() == 1
                        && map.iter().all(|(k, v)| {
                            (k == "$input" || k == "$state" || k == "$let") && v.is_string()
                        }) =>
                {
                    let expr = self.node(item, &item_at);
                    parts.push(match expr {
                        Expr::Literal(value) => match segment_of(&value) {
                            Some(segment) => NamedPart::Literal(segment),
                            None => {
                                self.diagnostics.push(
                                    DiagnosticCode::InvalidPath,
                                    &item_at,
                                    format!("a path segment is a string or a non-negative integer, not {}", describe(&value)),
                                );
                                continue;
                            }
                        },
                        other => NamedPart::Computed(other),
                    });
                }
                other => self.diagnostics.push(
                    DiagnosticCode::InvalidPath,
                    &item_at,
                    format!(
                        "a segment of a path inside a named value is a string, a non-negative integer, or one $input, $state or $let with a plain path or name; not {}",
                        json_kind(other)
                    ),
                ),
            }
        }
        if self.diagnostics.len() != before {
            return None;
        }
        Some(NamedPath {
            head: named_value(&named, at),
            bound: named.expr.is_none().then_some(named.slot),
            parts: parts.into_boxed_slice(),
            name: named.name.clone(),
            origin: named.origin,
            at: at.into(),
        })
    }

    /// Puts an iteration's element name in sight (its own slot); the
    /// caller takes it out of sight with `self.lets.pop()`.
    pub(crate) fn bind_element(&mut self, name: &str, origin: Origin) -> usize {
        let slot = self.let_slots;
        self.let_slots += 1;
        self.lets.push(Named {
            name: name.into(),
            slot,
            expr: None,
            origin,
        });
        slot
    }
}

impl Checker {
    /// The `let` block of a variant or a rule (`map`, at `at`), if any: each
    /// name's expression compiled with the names already in sight (an
    /// enclosing variant's, never its own block's), then put in sight for
    /// what follows. The caller takes them out of sight again.
    pub(crate) fn let_block(&mut self, map: &serde_json::Map<String, Value>, at: &str) {
        let Some(block) = map.get("let") else {
            return;
        };
        let block_at = pointer_push(at, "let");
        self.feature(&block_at, Feature::Field("let"));
        let members = match block {
            Value::Object(m) if (1..=MAX_NAMES).contains(&m.len()) => m,
            other => {
                self.diagnostics.push(
                    DiagnosticCode::WrongType,
                    &block_at,
                    format!(
                        "let is an object of 1 to {MAX_NAMES} named expressions, not {}",
                        match other {
                            Value::Object(m) => format!("an object of {} members", m.len()),
                            _ => json_kind(other).to_owned(),
                        }
                    ),
                );
                return;
            }
        };
        let mut named = Vec::with_capacity(members.len());
        for (name, value) in members {
            let name_at = pointer_push(&block_at, name);
            if name.is_empty() || name.starts_with('$') {
                self.diagnostics.push(
                    DiagnosticCode::WrongType,
                    &name_at,
                    format!("a let name is a non-empty string not starting with '$', not {name:?}"),
                );
                continue;
            }
            let before = self.diagnostics.len();
            let expr = self.node(value, &name_at);
            if self.diagnostics.len() != before {
                continue;
            }
            named.push(Named {
                name: name.as_str().into(),
                slot: self.let_slots,
                origin: expr.origin(),
                expr: Some(Arc::new(expr)),
            });
            self.let_slots += 1;
        }
        self.lets.extend(named);
    }
}
