//! `$find` (version 2): the key or element of a collection whose fields
//! equal given values (docs/mock-language.md, "Finding a record").

use crate::check::context::Checker;
use crate::check::diagnostics::{DiagnosticCode, pointer_push};
use crate::error::{CallError, OperandFault, reject};
use crate::expr::tree::{Expr, Operator};
use crate::json::{equal_folded, json_equal};
use crate::language::Feature;
use crate::paths::dotted::Path;
use crate::paths::reference::Reference;
use crate::scope::{Render, Scope};
use serde_json::{Map, Value};
use std::borrow::Cow;
use toolmock_contract::json_kind;

/// At most this many fields in one `$find`'s `where`.
pub(crate) const MAX_FIELDS: usize = 8;

/// What `$find` gives of the first match.
#[derive(Debug, Clone, Copy)]
enum Give {
    Key,
    Element,
}

/// A compiled `$find`.
#[derive(Debug, Clone)]
pub(crate) struct FindOp {
    /// The collection: a literal or one reference (checked per call).
    collection: Expr,
    selection: Selection,
    give: Give,
}

/// The members of a collection a `where`/`where_ci` pair selects: `$find`
/// takes the first, a removal (docs/mock-language.md "Removing from
/// state") every one.
#[derive(Debug, Clone)]
pub(crate) struct Selection {
    /// Each field's path inside an element, with the value it must equal and
    /// whether it is compared under case folding (`where_ci`).
    fields: Box<[(Path, Expr, bool)]>,
}

/// A [`Selection`] with its values rendered for one call.
pub(crate) struct Wanted<'s> {
    selection: &'s Selection,
    values: Vec<Value>,
}

impl Selection {
    /// Renders the values the fields must equal, once per call.
    pub(crate) fn wanted(&self, scope: &Scope<'_>) -> Result<Wanted<'_>, CallError> {
        let mut values = Vec::with_capacity(self.fields.len());
        for (_, expr, _) in self.fields.iter() {
            values.push(expr.render(scope)?);
        }
        Ok(Wanted {
            selection: self,
            values,
        })
    }

    /// Every expression of the selection.
    pub(crate) fn exprs_mut(&mut self) -> impl Iterator<Item = &mut Expr> {
        self.fields.iter_mut().map(|(_, expr, _)| expr)
    }
}

impl Wanted<'_> {
    /// Whether `element` matches: every field's path resolves in it to a
    /// value equal to the wanted one (under case folding, two strings).
    pub(crate) fn matches(&self, element: &Value) -> bool {
        self.selection
            .fields
            .iter()
            .zip(&self.values)
            .all(|((path, _, fold), want)| {
                path.resolve(element)
                    .is_some_and(|v| match (fold, v, want) {
                        (false, _, _) => json_equal(v, want),
                        (true, Value::String(a), Value::String(b)) => equal_folded(a, b),
                        (true, _, _) => false,
                    })
            })
    }
}

impl Render for FindOp {
    /// The first match's key or element for this call; `null` when none matches.
    fn render(&self, scope: &Scope<'_>) -> Result<Value, CallError> {
        let collection: Cow<'_, Value> = match &self.collection {
            Expr::Reference(r) => r.resolve(scope)?,
            other => Cow::Owned(other.render(scope)?),
        };
        let wanted = self.selection.wanted(scope)?;
        let matches = |element: &Value| wanted.matches(element);
        let found = match &*collection {
            Value::Object(members) => members
                .iter()
                .find(|(_, element)| matches(element))
                .map(|(key, element)| (Value::String(key.clone()), element)),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .find(|(_, element)| matches(element))
                .map(|(index, element)| (Value::from(index), element)),
            other => {
                let Expr::Reference(r) = &self.collection else {
                    // The check admits only literal objects and arrays.
                    return Ok(Value::Null);
                };
                let rejection = reject(
                    OperandFault::InvalidOperand,
                    format!(
                        "$find looks in an object or an array, not {}",
                        json_kind(other)
                    ),
                );
                return Err(r.blame(rejection));
            }
        };
        Ok(match (found, self.give) {
            (None, _) => Value::Null,
            (Some((key, _)), Give::Key) => key,
            (Some((_, element)), Give::Element) => element.clone(),
        })
    }

    fn clone_render(&self) -> Box<dyn Render> {
        Box::new(self.clone())
    }
}

impl Operator for FindOp {
    fn name(&self) -> &'static str {
        "$find"
    }

    fn for_each_reference(&mut self, f: &mut dyn FnMut(&mut Reference)) {
        self.collection.for_each_reference(f);
        for expr in self.selection.exprs_mut() {
            expr.for_each_reference(f);
        }
    }

    fn clone_operator(&self) -> Box<dyn Operator> {
        Box::new(self.clone())
    }

    /// It names a segment when it gives the key (not the element) of what it finds.
    fn names_segment(&self) -> bool {
        matches!(self.give, Give::Key)
    }
}

/// `{"$find": {"in": …, "where": {…}, "give": "key" | "element"}}` at `at`.
pub(crate) fn compile(c: &mut Checker, _key: &str, operand: &Value, at: &str) -> Option<Expr> {
    c.feature(at, Feature::Operator("$find"));
    let at = pointer_push(at, "$find");
    let Value::Object(fields) = operand else {
        c.diagnostics.push(
            DiagnosticCode::WrongType,
            &at,
            format!(
                "$find takes an object {{in, where, give}}, not {}",
                json_kind(operand)
            ),
        );
        return None;
    };
    let before = c.diagnostics.len();
    for key in fields.keys() {
        if !matches!(key.as_str(), "in" | "where" | "where_ci" | "give") {
            c.diagnostics.push(
                DiagnosticCode::UnknownField,
                pointer_push(&at, key),
                format!("$find has no field {key:?}; its fields are in, where, where_ci and give"),
            );
        }
    }
    needs_selection(c, fields, &at, "$find");
    for name in ["in", "give"] {
        if !fields.contains_key(name) {
            c.diagnostics.push(
                DiagnosticCode::MissingField,
                &at,
                format!("$find needs {name}"),
            );
        }
    }
    let collection = fields.get("in").map(|v| {
        let in_at = pointer_push(&at, "in");
        let expr = c.node(v, &in_at);
        match &expr {
            Expr::Reference(_)
            | Expr::Literal(Value::Object(_) | Value::Array(_))
            | Expr::Object(_)
            | Expr::Array(_) => {}
            Expr::Literal(other) => c.diagnostics.push(
                DiagnosticCode::WrongType,
                &in_at,
                format!(
                    "$find's in is an object, an array or one $input/$state reference, not {}",
                    json_kind(other)
                ),
            ),
            _ => c.diagnostics.push(
                DiagnosticCode::WrongType,
                &in_at,
                "$find's in is an object, an array or one $input/$state reference, not another operator",
            ),
        }
        expr
    });
    let give = match fields.get("give") {
        Some(Value::String(s)) if s == "key" => Some(Give::Key),
        Some(Value::String(s)) if s == "element" => Some(Give::Element),
        Some(other) => {
            c.diagnostics.push(
                DiagnosticCode::WrongType,
                pointer_push(&at, "give"),
                format!("$find's give is \"key\" or \"element\", not {other}"),
            );
            None
        }
        None => None,
    };
    let wanted = selection(c, fields, &at, "$find");
    match (collection, wanted, give) {
        (Some(collection), Some(fields), Some(give)) if c.diagnostics.len() == before => {
            Some(Expr::Op(Box::new(FindOp {
                collection,
                selection: fields,
                give,
            })))
        }
        _ => None,
    }
}

/// The `where` and `where_ci` members of `fields` (an operator's or a
/// removal's, `who` in messages) at `at`, with 1 to 8 fields together;
/// the caller reports a `fields` that has neither ([`needs_selection`]).
pub(crate) fn selection(
    c: &mut Checker,
    fields: &Map<String, Value>,
    at: &str,
    who: &str,
) -> Option<Selection> {
    let exact = match fields.get("where") {
        Some(w) => find_where(c, w, &pointer_push(at, "where"), false, who),
        None => Some(Vec::new()),
    };
    let folded = match fields.get("where_ci") {
        Some(w) => find_where(c, w, &pointer_push(at, "where_ci"), true, who),
        None => Some(Vec::new()),
    };
    match (exact, folded) {
        (Some(mut exact), Some(folded)) if !exact.is_empty() || !folded.is_empty() => {
            exact.extend(folded);
            if exact.len() > MAX_FIELDS {
                c.diagnostics.push(
                    DiagnosticCode::WrongType,
                    at,
                    format!(
                        "{who}'s where and where_ci have {} fields together; at most {MAX_FIELDS}",
                        exact.len()
                    ),
                );
            }
            Some(Selection {
                fields: exact.into_boxed_slice(),
            })
        }
        _ => None,
    }
}

/// `missing_field` when `fields` has neither `where` nor `where_ci`.
pub(crate) fn needs_selection(c: &mut Checker, fields: &Map<String, Value>, at: &str, who: &str) {
    if !fields.contains_key("where") && !fields.contains_key("where_ci") {
        c.diagnostics.push(
            DiagnosticCode::MissingField,
            at,
            format!("{who} needs where or where_ci"),
        );
    }
}

fn find_where(
    c: &mut Checker,
    value: &Value,
    at: &str,
    fold: bool,
    who: &str,
) -> Option<Vec<(Path, Expr, bool)>> {
    let members: &Map<String, Value> = match value {
        Value::Object(m)
            if (1..=MAX_FIELDS).contains(&m.len()) && !m.keys().any(|k| k.starts_with('$')) =>
        {
            m
        }
        other => {
            c.diagnostics.push(
                DiagnosticCode::WrongType,
                at,
                format!(
                    "{who}'s where is an object of 1 to {MAX_FIELDS} members, each a field path (keys without '$') and the value it must equal; not {}",
                    match other {
                        Value::Object(m) => format!("an object of {} members", m.len()),
                        _ => json_kind(other).to_owned(),
                    }
                ),
            );
            return None;
        }
    };
    let before = c.diagnostics.len();
    let mut fields = Vec::with_capacity(members.len());
    for (raw, want) in members {
        let field_at = pointer_push(at, raw);
        let path = match Path::parse(raw) {
            Ok(path) => path,
            Err(e) => {
                c.diagnostics
                    .push(DiagnosticCode::InvalidPath, &field_at, e.message);
                continue;
            }
        };
        fields.push((path, c.node(want, &field_at), fold));
    }
    (c.diagnostics.len() == before).then_some(fields)
}
