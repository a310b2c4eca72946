//! Expressions (docs/spec.md §4): compiled once, rendered per call.

use crate::computed::{ComputedPath, Found};
use crate::error::CallError;
use crate::layered::StateView;
use crate::operators::{self, DateAddError, Rejection};
use crate::path::{Path, Resolved};
use serde_json::{Map, Value};
use std::cell::{Cell, RefCell};

/// Where a reference reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Input,
    State,
}

impl Source {
    pub(crate) fn operator(self) -> &'static str {
        match self {
            Source::Input => "$input",
            Source::State => "$state",
        }
    }
}

/// `{"$input": path}` or `{"$state": path}`, with the definition location for messages.
#[derive(Debug, Clone)]
pub(crate) struct Reference {
    source: Source,
    path: Path,
    /// A version-2 path written as an array (then `path` is empty and unused).
    computed: Option<Box<ComputedPath>>,
    at: Box<str>,
    /// The variant's memo slot for this source and path (see [`Memo`]).
    pub(crate) slot: usize,
}

/// An operand of `$number` or `$dateAdd`: a literal or a reference, nothing deeper.
#[derive(Debug, Clone)]
pub(crate) enum Operand {
    Literal(Value),
    Reference(Reference),
}

/// Where an operand's value came from, which decides who is blamed for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Origin {
    Literal,
    State,
    Input,
}

/// A compiled expression. Subtrees without operators are kept whole as
/// literals, so rendering them is a single clone.
#[derive(Debug, Clone)]
pub(crate) enum Expr {
    Literal(Value),
    Array(Box<Items>),
    Object(Box<Fields>),
    Reference(Reference),
    Number(Operand),
    DateAdd(Box<[Option<Operand>; 3]>),
    /// Version 2's money arithmetic (see [`decimal`]).
    Decimal(Box<decimal::DecimalOp>),
    /// Version 2's `$append` and `$merge` (see [`collections`]).
    Collection(Box<collections::CollectionOp>),
    /// Version 2's `$find` (see [`find`]).
    Find(Box<find::FindOp>),
    /// Version 2's `$sort` and `$pluck` (see [`lists`]).
    List(Box<lists::ListOp>),
    /// A root expression with its JSON text prepared (see [`Template`]).
    Template(Box<Template>),
    /// An operator that reads the input alone (see [`InputHole`]).
    Input(Box<InputHole>),
}

/// An operator that reads only the input, never the state: its rendering is
/// the same whatever the state, so it can be done once per call before the
/// state is known, on another thread ([`crate::prepare`]). Operators of one
/// variant that render alike share an `id`.
#[derive(Debug, Clone)]
pub(crate) struct InputHole {
    pub(crate) id: usize,
    pub(crate) expr: Expr,
}

/// At most this many distinct input operators of one variant are rendered
/// ahead: a variant whose rules read many different ones would otherwise
/// render, every call, operators its matched rule never uses.
pub(crate) const MAX_INPUT_HOLES: usize = 16;

/// One call's input operators rendered ahead, by [`InputHole::id`], as JSON
/// text, as values, or both; `None` where there is nothing ahead: the
/// operator failed (its error is then met by rendering it in place, with its
/// own location), or it is a plain reference among texts rendered without
/// values, which costs no more to write in place than to copy from here. A value is moved out, not
/// copied, by the first rendering that uses it; a second use of the same
/// operator renders it in place.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ahead {
    text: Vec<u8>,
    /// The range of each operator's text in `text`.
    spans: Vec<Option<(u32, u32)>>,
    values: Vec<RefCell<Option<Value>>>,
}

impl Ahead {
    fn text(&self, id: usize) -> Option<&[u8]> {
        let (start, end) = (*self.spans.get(id)?)?;
        self.text.get(start as usize..end as usize)
    }

    fn take_value(&self, id: usize) -> Option<Value> {
        self.values.get(id)?.take()
    }

    /// Renders a variant's input operators (`holes`, by id) against `input`.
    pub(crate) fn render(holes: &[Expr], input: &Value, text: bool, values: bool) -> Ahead {
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
}

/// An array with at least one operator inside.
#[derive(Debug, Clone)]
pub(crate) struct Items {
    list: Box<[Expr]>,
    /// The array with every literal item in place and `null` at each hole:
    /// rendering clones it and fills the holes.
    skeleton: Vec<Value>,
    holes: Box<[usize]>,
}

/// An object with at least one operator inside, fields in the map's order.
#[derive(Debug, Clone)]
pub(crate) struct Fields {
    list: Box<[(Box<str>, Expr)]>,
    /// The object with every literal field in place and `null` at each hole:
    /// rendering clones it (no key search, no re-sorting) and fills the holes.
    skeleton: Map<String, Value>,
    holes: Box<[usize]>,
}

impl Items {
    fn new(list: Vec<Expr>) -> Items {
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
    fn new(list: Vec<(Box<str>, Expr)>) -> Fields {
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

/// A root expression together with its compact JSON text cut into pieces:
/// the literal runs (braces, keys, commas and literal values, serialized
/// once at compile time) and, between them, the operators in document order.
/// Writing a call's result is then a copy of each run and the rendering of
/// each hole, with no intermediate `Value`.
#[derive(Debug, Clone)]
pub(crate) struct Template {
    tree: Expr,
    pieces: Box<[Piece]>,
}

#[derive(Debug, Clone)]
enum Piece {
    Text(Box<str>),
    Hole(Expr),
}

impl Template {
    /// Wraps a compiled root; a bare operator needs no template.
    fn wrap(tree: Expr) -> Expr {
        if matches!(
            tree,
            Expr::Reference(_)
                | Expr::Number(_)
                | Expr::DateAdd(_)
                | Expr::Decimal(_)
                | Expr::Collection(_)
                | Expr::Find(_)
                | Expr::List(_)
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
            | Expr::Decimal(_)
            | Expr::Collection(_)
            | Expr::Find(_)
            | Expr::List(_)
            | Expr::Input(_) => {
                if !text.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(text).into_boxed_str()));
                }
                pieces.push(Piece::Hole(expr.clone()));
            }
        }
    }
}

/// How many distinct paths of one variant (read by its conditions and
/// references) are remembered per call; paths beyond that are resolved each
/// time they are read.
const PATH_MEMO: usize = 16;

/// The slot of a path that has none.
pub(crate) const NO_SLOT: usize = usize::MAX;

/// One call's remembered lookups, one slot per distinct source and path of
/// the variant (slots are assigned when the definition is compiled): `None`
/// not yet resolved, `Some(found)` resolved. The input and state do not change
/// during a call, so a path resolved once serves every condition and
/// reference that reads it.
pub(crate) struct Memo<'a>([Cell<Option<Option<&'a Value>>>; PATH_MEMO]);

impl<'a> Memo<'a> {
    pub(crate) fn new() -> Memo<'a> {
        Memo([const { Cell::new(None) }; PATH_MEMO])
    }
}

/// What one call reads: the input, the pre-call state, and the memo of paths
/// already resolved in them.
#[derive(Clone, Copy)]
pub(crate) struct Scope<'a> {
    pub(crate) input: &'a Value,
    pub(crate) state: StateView<'a>,
    memo: &'a [Cell<Option<Option<&'a Value>>>],
    /// The input operators already rendered for this call, if any.
    ahead: Option<&'a Ahead>,
}

impl<'a> Scope<'a> {
    pub(crate) fn new(input: &'a Value, state: &'a Map<String, Value>, memo: &'a Memo<'a>) -> Self {
        Scope {
            input,
            state: StateView::plain(state),
            memo: &memo.0,
            ahead: None,
        }
    }

    pub(crate) fn with_ahead(
        input: &'a Value,
        state: &'a Map<String, Value>,
        memo: &'a Memo<'a>,
        ahead: &'a Ahead,
    ) -> Self {
        Scope {
            input,
            state: StateView::plain(state),
            memo: &memo.0,
            ahead: Some(ahead),
        }
    }

    /// A scope over a layered state (a shared base and an attempt's overlay).
    pub(crate) fn layered(input: &'a Value, state: StateView<'a>, memo: &'a Memo<'a>) -> Self {
        Scope {
            input,
            state,
            memo: &memo.0,
            ahead: None,
        }
    }

    /// The value at `path` of `source`, through the memo.
    pub(crate) fn lookup(&self, source: Source, path: &Path, slot: usize) -> Resolved<'a> {
        let memo = self.memo.get(slot);
        if let Some(found) = memo.and_then(Cell::get) {
            return found.map_or(Resolved::Missing, Resolved::Found);
        }
        let resolved = match source {
            Source::Input => path
                .resolve(self.input)
                .map_or(Resolved::Missing, Resolved::Found),
            Source::State => self.state.resolve(path.segments()),
        };
        let found = match resolved {
            // The whole state is not a borrowed value; it is not remembered.
            Resolved::Whole => return Resolved::Whole,
            Resolved::Built(v) => return Resolved::Built(v),
            Resolved::Found(v) => Some(v),
            Resolved::Missing => None,
        };
        if let Some(cell) = memo {
            cell.set(Some(found));
        }
        resolved
    }
}

impl Reference {
    /// A reference with a computed path, outside any memo slot.
    pub(crate) fn computed(source: Source, path: ComputedPath, at: &str) -> Reference {
        Reference {
            source,
            path: Path::whole(),
            computed: Some(Box::new(path)),
            at: at.into(),
            slot: NO_SLOT,
        }
    }

    /// The source and path this reference reads, as written; `None` for a
    /// computed path, which is resolved anew each time (never memoized).
    pub(crate) fn key(&self) -> Option<(Source, &str)> {
        match self.computed {
            None => Some((self.source, self.path.as_str())),
            Some(_) => None,
        }
    }

    pub(crate) fn resolve<'a>(
        &self,
        scope: &Scope<'a>,
    ) -> Result<std::borrow::Cow<'a, Value>, CallError> {
        use std::borrow::Cow;
        if let Some(computed) = &self.computed {
            return match computed.resolve(self.source, scope)? {
                Found::Whole => Ok(Cow::Owned(Value::Object(scope.state.whole()))),
                Found::Value(v) => Ok(Cow::Borrowed(v)),
                Found::Built(v) => Ok(Cow::Owned(v)),
                Found::Missing { pointer } => Err(CallError::MissingReference {
                    path: pointer,
                    message: format!(
                        "{} (a computed path, at {}) does not resolve in the call's {}",
                        self.source.operator(),
                        display_pointer(&self.at),
                        match self.source {
                            Source::Input => "input",
                            Source::State => "pre-call state",
                        }
                    ),
                }),
            };
        }
        let found = match scope.lookup(self.source, &self.path, self.slot) {
            Resolved::Whole => Some(Cow::Owned(Value::Object(scope.state.whole()))),
            Resolved::Found(v) => Some(Cow::Borrowed(v)),
            Resolved::Built(v) => Some(Cow::Owned(v)),
            Resolved::Missing => None,
        };
        found.ok_or_else(|| CallError::MissingReference {
            path: self.data_pointer(),
            message: format!(
                "{} {:?} (at {}) does not resolve in the call's {}",
                self.source.operator(),
                self.path.as_str(),
                display_pointer(&self.at),
                match self.source {
                    Source::Input => "input",
                    Source::State => "pre-call state",
                }
            ),
        })
    }

    /// A value this reference read, refused by an operator, blamed on where
    /// it came from.
    pub(crate) fn blame(&self, rejection: Rejection) -> CallError {
        let origin = match self.source {
            Source::Input => Origin::Input,
            Source::State => Origin::State,
        };
        blame(origin, Some(self.data_pointer()), rejection, &self.at)
    }

    /// Where the reference points, as a JSON pointer into the input or the state.
    fn data_pointer(&self) -> String {
        self.path.to_pointer()
    }
}

fn display_pointer(at: &str) -> &str {
    if at.is_empty() { "/" } else { at }
}

impl Operand {
    fn origin(&self) -> Origin {
        match self {
            Operand::Literal(_) => Origin::Literal,
            Operand::Reference(r) => match r.source {
                Source::Input => Origin::Input,
                Source::State => Origin::State,
            },
        }
    }

    fn value<'s, 'a: 's>(
        &'s self,
        scope: &Scope<'a>,
    ) -> Result<std::borrow::Cow<'s, Value>, CallError> {
        match self {
            Operand::Literal(v) => Ok(std::borrow::Cow::Borrowed(v)),
            Operand::Reference(r) => r.resolve(scope),
        }
    }

    /// Turns a rejection of this operand into the error its origin calls for.
    fn blame(&self, rejection: Rejection, at: &str) -> CallError {
        blame(self.origin(), self.pointer(), rejection, at)
    }

    fn pointer(&self) -> Option<String> {
        match self {
            Operand::Literal(_) => None,
            Operand::Reference(r) => Some(r.data_pointer()),
        }
    }
}

fn blame(origin: Origin, pointer: Option<String>, rejection: Rejection, at: &str) -> CallError {
    let Rejection { fault, message } = rejection;
    let path = pointer.unwrap_or_default();
    let message = format!("{message} (at {})", display_pointer(at));
    match origin {
        Origin::Input => CallError::input_operand(fault, path, message),
        Origin::State => CallError::InvalidFixtureLiteral {
            fault,
            path,
            message,
        },
        // Literal operands are checked when the definition is compiled, so a
        // rejection here means the definition was not compiled by us.
        Origin::Literal => CallError::InvalidFixtureLiteral {
            fault,
            path,
            message,
        },
    }
}

impl Expr {
    /// Calls `f` on every reference in the expression, the copies a
    /// template keeps of its holes included.
    pub(crate) fn for_each_reference(&mut self, f: &mut impl FnMut(&mut Reference)) {
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
            Expr::Decimal(op) => op.for_each_reference(f),
            Expr::Collection(op) => op.for_each_reference(f),
            Expr::Find(op) => op.for_each_reference(f),
            Expr::List(op) => op.for_each_reference(f),
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

    /// Wraps every operator that reads the input alone in an [`InputHole`],
    /// the copies a template keeps of its holes included; `holes` collects one
    /// copy of each distinct operator, its index being the id (at most
    /// [`MAX_INPUT_HOLES`]; the rest are left as they are).
    pub(crate) fn mark_input_holes(&mut self, holes: &mut Vec<(String, Expr)>) {
        match self {
            Expr::Literal(_) | Expr::Input(_) => {}
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
            Expr::Reference(_)
            | Expr::Number(_)
            | Expr::DateAdd(_)
            | Expr::Decimal(_)
            | Expr::Collection(_)
            | Expr::Find(_)
            | Expr::List(_) => {
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

    /// A copy of a literal's value; `null` for anything else.
    fn literal_or_null(&self) -> Value {
        match self {
            Expr::Literal(v) => v.clone(),
            _ => Value::Null,
        }
    }

    /// The value of a literal; `null` for anything else (callers check first).
    fn into_literal(self) -> Value {
        match self {
            Expr::Literal(v) => v,
            _ => Value::Null,
        }
    }

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
            Expr::Number(operand) => render_number(operand, scope),
            Expr::DateAdd(operands) => render_date_add(operands, scope),
            Expr::Decimal(op) => op.render(scope),
            Expr::Collection(op) => op.render(scope),
            Expr::Find(op) => op.render(scope),
            Expr::List(op) => op.render(scope),
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
            Expr::Number(_)
            | Expr::DateAdd(_)
            | Expr::Decimal(_)
            | Expr::Collection(_)
            | Expr::Find(_)
            | Expr::List(_) => {
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
fn write_value<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let _ = serde_json::to_writer(out, value);
}

// The operators are kept out of line so that rendering the common parts
// (literals, objects, arrays, references) runs in a small stack frame.
#[inline(never)]
fn render_number(operand: &Operand, scope: &Scope<'_>) -> Result<Value, CallError> {
    let value = operand.value(scope)?;
    let at = match operand {
        Operand::Reference(r) => &*r.at,
        Operand::Literal(_) => "",
    };
    operators::to_number(&value).map_err(|rejection| operand.blame(rejection, at))
}

#[inline(never)]
fn render_date_add(operands: &[Option<Operand>; 3], scope: &Scope<'_>) -> Result<Value, CallError> {
    let mut values = [None, None, None];
    for (slot, operand) in values.iter_mut().zip(operands.iter()) {
        if let Some(operand) = operand {
            *slot = Some(operand.value(scope)?);
        }
    }
    let [value, days, hours] = &values;
    let value = value.as_deref().unwrap_or(&Value::Null);
    match operators::date_add(value, days.as_deref(), hours.as_deref()) {
        Ok(text) => Ok(Value::String(text)),
        Err(DateAddError::Operand { operand, rejection }) => {
            let operand = operands[operand.position()].as_ref();
            let origin = operand.map_or(Origin::Literal, Operand::origin);
            let pointer = operand.and_then(Operand::pointer);
            Err(blame(origin, pointer, rejection, "$dateAdd"))
        }
        Err(DateAddError::Result(rejection)) => {
            // Blame the input if any operand came from it, else the state, else the definition.
            let culprit = operands
                .iter()
                .flatten()
                .max_by_key(|operand| operand.origin());
            let origin = culprit.map_or(Origin::Literal, Operand::origin);
            Err(blame(
                origin,
                culprit.and_then(Operand::pointer),
                rejection,
                "$dateAdd",
            ))
        }
    }
}

mod collections;
mod compiler;
mod decimal;
mod find;
mod lists;
pub(crate) use compiler::ExprCompiler;
