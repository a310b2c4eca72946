//! Bounded iteration (version 3, docs/mock-language.md "Iterating",
//! "Tests over elements", "Updating elements"): `$map`, `$filter`, `$any`,
//! `$all` and `$update` visit the elements of a collection the call already
//! holds, each element in sight under its name (`as`, a named value of
//! `crate::expr::naming`) while `give`, `when`, `value` or `merge` is
//! rendered or tried for it. Every element visited counts against the
//! call's work budget (`crate::scope::WORK_BUDGET`), and the check refuses
//! iterations nested more than [`MAX_DEPTH`] deep.

use crate::check::context::Checker;
use crate::check::diagnostics::{DiagnosticCode, pointer_push};
use crate::conditions::condition::{CompiledCondition, holds};
use crate::error::{CallError, OperandFault, Origin, reject};
use crate::expr::find::{Selection, selection};
use crate::expr::tree::{Expr, Operator};
use crate::language::Feature;
use crate::paths::reference::Reference;
use crate::scope::{Render, Scope};
use serde_json::{Map, Value};
use std::borrow::Cow;
use toolmock_contract::json_kind;

/// Iterations nest at most this deep (one inside another's `give`, `when`,
/// `value` or `merge`).
pub(crate) const MAX_DEPTH: usize = 3;

/// An element's name in sight: the named-value slot it is kept in.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Element {
    pub(crate) slot: usize,
}

/// What an iteration does with each element.
#[derive(Debug, Clone)]
enum Kind {
    Map(Expr),
    Filter(Box<[CompiledCondition]>),
    Any(Box<[CompiledCondition]>),
    All(Box<[CompiledCondition]>),
    Update(Box<Change>),
}

/// Which elements an update selects and what it makes of each (`$update`
/// and the `update` write of `set_state`).
#[derive(Debug, Clone)]
pub(crate) struct Change {
    pub(crate) element: Option<Element>,
    pub(crate) selection: Option<Selection>,
    pub(crate) when: Option<Box<[CompiledCondition]>>,
    pub(crate) replace: Replace,
    pub(crate) at: Box<str>,
}

/// `value` (the element replaced) or `merge` (members set on it).
#[derive(Debug, Clone)]
pub(crate) enum Replace {
    Value(Expr),
    Merge(Expr),
}

/// A compiled `$map`, `$filter`, `$any`, `$all` or `$update`.
#[derive(Debug, Clone)]
struct IterOp {
    name: &'static str,
    collection: Expr,
    element: Option<Element>,
    kind: Kind,
    at: Box<str>,
}

/// The collection of an iteration for this call: what `collection` gives,
/// which must be an array or an object (else blamed on who supplied it).
pub(crate) fn collection<'s>(
    collection: &Expr,
    scope: &Scope<'s>,
    who: &str,
    at: &str,
) -> Result<Cow<'s, Value>, CallError> {
    let value = match collection {
        Expr::Reference(r) => r.resolve(scope)?,
        other => Cow::Owned(other.render(scope)?),
    };
    if value.is_array() || value.is_object() {
        return Ok(value);
    }
    let rejection = reject(
        OperandFault::InvalidOperand,
        format!(
            "{who} visits an array or an object, not {}",
            json_kind(&value)
        ),
    );
    Err(match collection {
        Expr::Reference(r) => r.blame(rejection),
        other => CallError::refused_operand(other.origin().max(Origin::State), None, rejection, at),
    })
}

/// An element in sight: moved out of a collection the call computed, or
/// read in place from the input or the state (no copy).
pub(crate) enum Held<'s> {
    Owned(Value),
    Borrowed(&'s Value),
}

impl Held<'_> {
    fn into_owned(self) -> Value {
        match self {
            Held::Owned(value) => value,
            Held::Borrowed(value) => value.clone(),
        }
    }
}

/// A member's key (an object's) and the member.
type Member<'s> = (Option<Cow<'s, str>>, Held<'s>);

/// The elements of a collection (an array's in order, an object's values
/// in key order) with their keys: moved out of an owned collection, read
/// in place from a borrowed one.
fn elements(collection: Cow<'_, Value>) -> Vec<Member<'_>> {
    match collection {
        Cow::Owned(Value::Array(items)) => {
            items.into_iter().map(|v| (None, Held::Owned(v))).collect()
        }
        Cow::Owned(Value::Object(map)) => map
            .into_iter()
            .map(|(k, v)| (Some(Cow::Owned(k)), Held::Owned(v)))
            .collect(),
        Cow::Borrowed(Value::Array(items)) => {
            items.iter().map(|v| (None, Held::Borrowed(v))).collect()
        }
        Cow::Borrowed(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| (Some(Cow::Borrowed(k.as_str())), Held::Borrowed(v)))
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether every condition holds with `element` in sight in `slot`; the
/// element is handed back.
fn test<'s>(
    when: &[CompiledCondition],
    slot: Option<usize>,
    element: Held<'s>,
    scope: &Scope<'s>,
) -> Result<(bool, Held<'s>), CallError> {
    with_element(slot, element, scope, |scope| {
        for condition in when {
            if !holds(condition, scope)? {
                return Ok(false);
            }
        }
        Ok(true)
    })
}

/// Runs `f` with `element` in sight in `slot` (when the iteration names
/// it); the element is handed back with the answer.
pub(crate) fn with_element<'s, T>(
    slot: Option<usize>,
    element: Held<'s>,
    scope: &Scope<'s>,
    f: impl FnOnce(&Scope<'s>) -> Result<T, CallError>,
) -> Result<(T, Held<'s>), CallError> {
    let Some(slot) = slot else {
        return f(scope).map(|out| (out, element));
    };
    match element {
        Held::Borrowed(value) => {
            let previous = scope.bind_borrowed(slot, Some(value));
            let out = f(scope);
            scope.bind_borrowed(slot, previous);
            out.map(|out| (out, Held::Borrowed(value)))
        }
        Held::Owned(value) => {
            let previous = scope.bind(slot, value);
            let out = f(scope);
            let element = scope.unbind(slot, previous).unwrap_or(Value::Null);
            out.map(|out| (out, Held::Owned(element)))
        }
    }
}

impl Change {
    /// Whether the update selects `element` (its `where` values rendered
    /// once as `wanted`); the element is handed back.
    fn selects(
        &self,
        wanted: Option<&crate::expr::find::Wanted<'_>>,
        element: Value,
        scope: &Scope<'_>,
    ) -> Result<(bool, Value), CallError> {
        if wanted.is_some_and(|w| !w.matches(&element)) {
            return Ok((false, element));
        }
        match &self.when {
            Some(when) => test(
                when,
                self.element.map(|e| e.slot),
                Held::Owned(element),
                scope,
            )
            .map(|(selected, held)| (selected, held.into_owned())),
            None => Ok((true, element)),
        }
    }

    /// Whether the update selects some elements (else it changes the one
    /// member its path names).
    pub(crate) fn has_selection(&self) -> bool {
        self.selection.is_some() || self.when.is_some()
    }

    /// The new value of one selected element.
    pub(crate) fn apply(&self, element: Value, scope: &Scope<'_>) -> Result<Value, CallError> {
        let slot = self.element.map(|e| e.slot);
        let (rendered, element) = with_element(slot, Held::Owned(element), scope, |scope| {
            match &self.replace {
                Replace::Value(expr) | Replace::Merge(expr) => expr.render(scope),
            }
        })?;
        match (&self.replace, element.into_owned()) {
            (Replace::Value(_), _) => Ok(rendered),
            (Replace::Merge(expr), Value::Object(mut members)) => match rendered {
                Value::Object(more) => {
                    members.extend(more);
                    Ok(Value::Object(members))
                }
                other => Err(CallError::refused_operand(
                    expr.origin().max(Origin::State),
                    None,
                    reject(
                        OperandFault::InvalidOperand,
                        format!(
                            "an update's merge gives an object, not {}",
                            json_kind(&other)
                        ),
                    ),
                    &self.at,
                )),
            },
            (Replace::Merge(_), other) => Err(CallError::InvalidStatePath {
                path: String::new(),
                message: format!(
                    "the update at {} merges into an element that is {}, not an object",
                    self.at,
                    json_kind(&other)
                ),
            }),
        }
    }

    /// Updates, in place, every selected element of `collection` (an
    /// array or an object; the caller checks), each one visit.
    pub(crate) fn update_all(
        &self,
        collection: &mut Value,
        scope: &Scope<'_>,
    ) -> Result<(), CallError> {
        let wanted = match &self.selection {
            Some(selection) => Some(selection.wanted(scope)?),
            None => None,
        };
        let slots: Vec<&mut Value> = match collection {
            Value::Array(items) => items.iter_mut().collect(),
            Value::Object(map) => map.values_mut().collect(),
            _ => Vec::new(),
        };
        scope.visit(slots.len(), &self.at)?;
        for slot in slots {
            let element = std::mem::take(slot);
            let (selected, element) = self.selects(wanted.as_ref(), element, scope)?;
            *slot = if selected {
                self.apply(element, scope)?
            } else {
                element
            };
        }
        Ok(())
    }

    /// Every expression of the update that is rendered with the call's
    /// scope as it is (the selection's values and the replacement).
    pub(crate) fn exprs_mut(&mut self) -> Box<dyn Iterator<Item = &mut Expr> + '_> {
        let selection: Box<dyn Iterator<Item = &mut Expr>> = match &mut self.selection {
            Some(selection) => Box::new(selection.exprs_mut()),
            None => Box::new(std::iter::empty()),
        };
        let replace = match &mut self.replace {
            Replace::Value(expr) | Replace::Merge(expr) => expr,
        };
        Box::new(selection.chain(std::iter::once(replace)))
    }

    /// Every expression of the update.
    pub(crate) fn for_each_reference(&mut self, f: &mut dyn FnMut(&mut Reference)) {
        if let Some(selection) = &mut self.selection {
            selection.exprs_mut().for_each(|e| e.for_each_reference(f));
        }
        match &mut self.replace {
            Replace::Value(expr) | Replace::Merge(expr) => expr.for_each_reference(f),
        }
    }
}

impl Render for IterOp {
    fn render(&self, scope: &Scope<'_>) -> Result<Value, CallError> {
        self.render_in(scope)
    }

    fn clone_render(&self) -> Box<dyn Render> {
        Box::new(self.clone())
    }
}

impl IterOp {
    fn render_in<'s>(&self, scope: &Scope<'s>) -> Result<Value, CallError> {
        let found = collection(&self.collection, scope, self.name, &self.at)?;
        if let Kind::Update(change) = &self.kind {
            let mut updated = found.into_owned();
            change.update_all(&mut updated, scope)?;
            return Ok(updated);
        }
        let is_object = found.is_object();
        let slot = self.element.map(|e| e.slot);
        let members = elements(found);
        match &self.kind {
            Kind::Map(give) => {
                scope.visit(members.len(), &self.at)?;
                let mut out = Vec::with_capacity(members.len());
                for (_, element) in members {
                    out.push(with_element(slot, element, scope, |scope| give.render(scope))?.0);
                }
                Ok(Value::Array(out))
            }
            Kind::Filter(when) => {
                scope.visit(members.len(), &self.at)?;
                let mut kept_items = Vec::new();
                let mut kept_members = Map::new();
                for (key, element) in members {
                    let (keep, element) = test(when, slot, element, scope)?;
                    match (keep, key) {
                        (false, _) => {}
                        (true, Some(key)) => {
                            kept_members.insert(key.into_owned(), element.into_owned());
                        }
                        (true, None) => kept_items.push(element.into_owned()),
                    }
                }
                Ok(if is_object {
                    Value::Object(kept_members)
                } else {
                    Value::Array(kept_items)
                })
            }
            Kind::Any(when) | Kind::All(when) => {
                let any = matches!(self.kind, Kind::Any(_));
                for (_, element) in members {
                    scope.visit(1, &self.at)?;
                    if test(when, slot, element, scope)?.0 == any {
                        return Ok(Value::Bool(any));
                    }
                }
                Ok(Value::Bool(!any))
            }
            Kind::Update(_) => Ok(Value::Null),
        }
    }
}

impl Operator for IterOp {
    fn name(&self) -> &'static str {
        self.name
    }

    fn for_each_reference(&mut self, f: &mut dyn FnMut(&mut Reference)) {
        self.collection.for_each_reference(f);
        match &mut self.kind {
            Kind::Map(give) => give.for_each_reference(f),
            Kind::Update(change) => change.for_each_reference(f),
            Kind::Filter(_) | Kind::Any(_) | Kind::All(_) => {}
        }
    }

    fn clone_operator(&self) -> Box<dyn Operator> {
        Box::new(self.clone())
    }

    /// `$filter` gives elements of its collection, blamed as they are.
    fn origin(&self) -> Origin {
        match self.kind {
            Kind::Filter(_) | Kind::Update(_) => self.collection.origin(),
            _ => Origin::State,
        }
    }
}

/// The fields each iteration takes.
fn fields_of(key: &str) -> (&'static [&'static str], &'static [&'static str]) {
    match key {
        "$map" => (&["in", "as", "give"], &["in", "as", "give"]),
        "$update" => (
            &["in", "as", "where", "where_ci", "when", "value", "merge"],
            &["in"],
        ),
        _ => (&["in", "as", "when"], &["in", "as", "when"]),
    }
}

/// `$map`, `$filter`, `$any`, `$all` or `$update` (`key`) at `at`.
pub(crate) fn compile(c: &mut Checker, key: &str, operand: &Value, at: &str) -> Option<Expr> {
    c.feature(at, Feature::Operator(key));
    let name: &'static str = match key {
        "$map" => "$map",
        "$filter" => "$filter",
        "$any" => "$any",
        "$all" => "$all",
        _ => "$update",
    };
    let op_at = pointer_push(at, key);
    let fields = c.object(operand, &op_at, &format!("{key}'s operand"))?;
    let before = c.diagnostics.len();
    let (allowed, required) = fields_of(key);
    c.shape(
        fields,
        &op_at,
        &crate::check::context::Shape {
            allowed,
            required,
            what: "the iteration",
        },
    );
    let collection = fields.get("in").map(|v| {
        let in_at = pointer_push(&op_at, "in");
        let expr = c.node(v, &in_at);
        if let Expr::Literal(literal) = &expr
            && !(literal.is_array() || literal.is_object())
        {
            c.wrong_type(&in_at, "an array or an object to visit", literal);
        }
        expr
    });
    let origin = collection.as_ref().map_or(Origin::State, element_origin);
    let body = enter(c, &op_at, |c| {
        if name == "$update" {
            let change = change(c, fields, &op_at, origin);
            return (
                change.as_ref().and_then(|ch| ch.element),
                change.map(|ch| Kind::Update(Box::new(ch))),
            );
        }
        let element = element_name(c, fields, &op_at, origin);
        let kind = match name {
            "$map" => fields
                .get("give")
                .map(|v| Kind::Map(c.node(v, &pointer_push(&op_at, "give")))),
            _ => fields.get("when").map(|w| {
                let when = c
                    .when_list(w, &pointer_push(&op_at, "when"))
                    .into_boxed_slice();
                match name {
                    "$filter" => Kind::Filter(when),
                    "$any" => Kind::Any(when),
                    _ => Kind::All(when),
                }
            }),
        };
        if element.is_some() {
            c.lets.pop();
        }
        (element, kind)
    });
    let (element, kind) = body?;
    if c.diagnostics.len() != before {
        return None;
    }
    Some(Expr::Op(Box::new(IterOp {
        name,
        collection: collection?,
        element,
        kind: kind?,
        at: at.into(),
    })))
}

/// Who supplied the elements of `collection`.
pub(crate) fn element_origin(collection: &Expr) -> Origin {
    collection.origin()
}

/// Runs `f` one iteration deeper; past [`MAX_DEPTH`], an
/// `iteration_too_deep` diagnostic at `at` (and `None`).
pub(crate) fn enter<T>(c: &mut Checker, at: &str, f: impl FnOnce(&mut Checker) -> T) -> Option<T> {
    if c.iteration_depth >= MAX_DEPTH {
        c.push(
            DiagnosticCode::IterationTooDeep,
            at,
            format!("iterations nest at most {MAX_DEPTH} deep (the work budget would be exceeded on ordinary data)"),
        );
        return None;
    }
    c.iteration_depth += 1;
    let out = f(c);
    c.iteration_depth -= 1;
    Some(out)
}

/// The element's name (`as`), put in sight; `None` when there is none
/// (or it is not a name, which is reported).
pub(crate) fn element_name(
    c: &mut Checker,
    fields: &Map<String, Value>,
    at: &str,
    origin: Origin,
) -> Option<Element> {
    let name = fields.get("as")?;
    match name {
        Value::String(name) if !name.is_empty() && !name.starts_with('$') => Some(Element {
            slot: c.bind_element(name, origin),
        }),
        other => {
            c.push(
                DiagnosticCode::WrongType,
                pointer_push(at, "as"),
                format!(
                    "as names the element: a non-empty string not starting with '$', not {other}"
                ),
            );
            None
        }
    }
}

/// The selection and replacement of an update (`$update`'s, or an
/// `update` write's, at `at`): `where` values first (rendered once,
/// before any element is seen), then the element (supplied by `origin`)
/// in sight for `when`, `value` and `merge`.
pub(crate) fn change(
    c: &mut Checker,
    fields: &Map<String, Value>,
    at: &str,
    origin: Origin,
) -> Option<Change> {
    let before = c.diagnostics.len();
    let selection = if fields.contains_key("where") || fields.contains_key("where_ci") {
        selection(c, fields, at, "an update")
    } else {
        None
    };
    let element = element_name(c, fields, at, origin);
    let change = rest_of_change(c, fields, at, element, selection, before);
    if element.is_some() {
        c.lets.pop();
    }
    change
}

fn rest_of_change(
    c: &mut Checker,
    fields: &Map<String, Value>,
    at: &str,
    element: Option<Element>,
    selection: Option<Selection>,
    before: usize,
) -> Option<Change> {
    let when = fields
        .get("when")
        .map(|w| c.when_list(w, &pointer_push(at, "when")).into_boxed_slice());
    let replace = match (fields.get("value"), fields.get("merge")) {
        (Some(v), None) => Some(Replace::Value(c.node(v, &pointer_push(at, "value")))),
        (None, Some(m)) => Some(Replace::Merge(c.node(m, &pointer_push(at, "merge")))),
        (Some(_), Some(_)) => {
            c.push(
                DiagnosticCode::UnknownField,
                pointer_push(at, "merge"),
                "an update gives value or merge, not both",
            );
            None
        }
        (None, None) => {
            c.push(
                DiagnosticCode::MissingField,
                at,
                "an update needs value or merge",
            );
            None
        }
    };
    if c.diagnostics.len() != before {
        return None;
    }
    Some(Change {
        element,
        selection,
        when,
        replace: replace?,
        at: at.into(),
    })
}
