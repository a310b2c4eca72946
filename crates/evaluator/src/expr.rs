//! Expressions (SPEC §4): compiled once, rendered per call.

use crate::diagnostics::{DiagnosticCode, Diagnostics, pointer_push};
use crate::error::CallError;
use crate::operators::{self, DateAddError, OperandFault, Rejection, kind_of};
use crate::path::{Path, Resolved};
use serde_json::{Map, Value};

/// Where a reference reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Input,
    State,
}

impl Source {
    fn operator(self) -> &'static str {
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
    at: Box<str>,
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
    Array(Box<[Expr]>),
    Object(Box<[(Box<str>, Expr)]>),
    Reference(Reference),
    Number(Operand),
    DateAdd(Box<[Option<Operand>; 3]>),
}

/// The data a call reads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scope<'a> {
    pub(crate) input: &'a Value,
    pub(crate) state: &'a Map<String, Value>,
}

impl Reference {
    fn resolve<'a>(&self, scope: &Scope<'a>) -> Result<std::borrow::Cow<'a, Value>, CallError> {
        use std::borrow::Cow;
        let found = match self.source {
            Source::Input => self.path.resolve(scope.input).map(Cow::Borrowed),
            Source::State => match self.path.resolve_in_map(scope.state) {
                Resolved::Whole => Some(Cow::Owned(Value::Object(scope.state.clone()))),
                Resolved::Found(v) => Some(Cow::Borrowed(v)),
                Resolved::Missing => None,
            },
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

    fn value<'a>(&'a self, scope: &Scope<'a>) -> Result<std::borrow::Cow<'a, Value>, CallError> {
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
            Expr::Array(items) => {
                let mut rendered = Vec::with_capacity(items.len());
                for item in items.iter() {
                    rendered.push(item.render(scope)?);
                }
                Ok(Value::Array(rendered))
            }
            // The fields are stored in the map's own order, so collecting
            // builds the map in bulk instead of searching on every insert.
            Expr::Object(fields) => fields
                .iter()
                .map(|(key, expr)| Ok((String::from(&**key), expr.render(scope)?)))
                .collect::<Result<Map<_, _>, CallError>>()
                .map(Value::Object),
            Expr::Reference(r) => r.resolve(scope).map(std::borrow::Cow::into_owned),
            Expr::Number(operand) => {
                let value = operand.value(scope)?;
                let at = match operand {
                    Operand::Reference(r) => &*r.at,
                    Operand::Literal(_) => "",
                };
                operators::to_number(&value).map_err(|rejection| operand.blame(rejection, at))
            }
            Expr::DateAdd(operands) => render_date_add(operands, scope),
        }
    }
}

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
        Err(DateAddError::Operand { index, rejection }) => {
            let operand = operands[index].as_ref();
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

/// Compiles expressions, collecting every problem.
pub(crate) struct ExprCompiler<'d> {
    pub(crate) diagnostics: &'d mut Diagnostics,
}

impl ExprCompiler<'_> {
    /// Compiles the expression at `at` (a JSON pointer into the definition).
    pub(crate) fn compile(&mut self, value: &Value, at: &str) -> Expr {
        match value {
            Value::Object(map) if map.keys().any(|k| k.starts_with('$')) => self.operator(map, at),
            Value::Object(map) => {
                let fields: Vec<(Box<str>, Expr)> = map
                    .iter()
                    .map(|(k, v)| (Box::from(k.as_str()), self.compile(v, &pointer_push(at, k))))
                    .collect();
                if fields.iter().all(|(_, e)| matches!(e, Expr::Literal(_))) {
                    // Folded operators (`{"$number": "5"}`) are literals now too,
                    // so the value is rebuilt from the children, not copied.
                    Expr::Literal(Value::Object(
                        fields
                            .into_iter()
                            .map(|(k, e)| (k.into_string(), e.into_literal()))
                            .collect(),
                    ))
                } else {
                    Expr::Object(fields.into_boxed_slice())
                }
            }
            Value::Array(items) => {
                let compiled: Vec<Expr> = items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| self.compile(v, &format!("{at}/{i}")))
                    .collect();
                if compiled.iter().all(|e| matches!(e, Expr::Literal(_))) {
                    Expr::Literal(Value::Array(
                        compiled.into_iter().map(Expr::into_literal).collect(),
                    ))
                } else {
                    Expr::Array(compiled.into_boxed_slice())
                }
            }
            _ => Expr::Literal(value.clone()),
        }
    }

    fn operator(&mut self, map: &Map<String, Value>, at: &str) -> Expr {
        let placeholder = Expr::Literal(Value::Null);
        if map.len() != 1 {
            let keys: Vec<&str> = map.keys().map(String::as_str).collect();
            self.diagnostics.push(
                DiagnosticCode::UnknownOperator,
                at,
                format!(
                    "an object with '$' keys must be exactly one operator ($input, $state, $number, $dateAdd) with one key; found keys {keys:?}"
                ),
            );
            return placeholder;
        }
        let Some((key, operand)) = map.iter().next() else {
            return placeholder;
        };
        let operand_at = pointer_push(at, key);
        match key.as_str() {
            "$input" => self
                .reference(Source::Input, operand, &operand_at)
                .map_or(placeholder, Expr::Reference),
            "$state" => self
                .reference(Source::State, operand, &operand_at)
                .map_or(placeholder, Expr::Reference),
            "$number" => match self.operand(operand, &operand_at, "$number") {
                Some(Operand::Literal(literal)) => match operators::to_number(&literal) {
                    Ok(number) => Expr::Literal(number),
                    Err(rejection) => {
                        self.invalid_literal(&operand_at, rejection);
                        placeholder
                    }
                },
                Some(reference) => Expr::Number(reference),
                None => placeholder,
            },
            "$dateAdd" => self.date_add(operand, &operand_at).unwrap_or(placeholder),
            other => {
                self.diagnostics.push(
                    DiagnosticCode::UnknownOperator,
                    &operand_at,
                    format!(
                        "unknown operator {other:?}; the operators are $input, $state, $number and $dateAdd (definitions never execute code or templates)"
                    ),
                );
                placeholder
            }
        }
    }

    fn reference(&mut self, source: Source, operand: &Value, at: &str) -> Option<Reference> {
        let Value::String(raw) = operand else {
            self.diagnostics.push(
                DiagnosticCode::WrongType,
                at,
                format!(
                    "{} takes a path string, not {}",
                    source.operator(),
                    kind_of(operand)
                ),
            );
            return None;
        };
        match Path::parse(raw) {
            Ok(path) => Some(Reference {
                source,
                path,
                at: at.into(),
            }),
            Err(e) => {
                self.diagnostics
                    .push(DiagnosticCode::InvalidPath, at, e.message);
                None
            }
        }
    }

    /// A literal or a single `$input`/`$state` reference.
    fn operand(&mut self, value: &Value, at: &str, operator: &str) -> Option<Operand> {
        match value {
            Value::Object(map) if map.keys().any(|k| k.starts_with('$')) => {
                let mut entries = map.iter();
                match (entries.next(), entries.next()) {
                    (Some((key, path)), None) if key == "$input" || key == "$state" => {
                        let source = if key == "$input" {
                            Source::Input
                        } else {
                            Source::State
                        };
                        self.reference(source, path, &pointer_push(at, key))
                            .map(Operand::Reference)
                    }
                    _ => {
                        self.diagnostics.push(
                            DiagnosticCode::UnknownOperator,
                            at,
                            format!(
                                "an operand of {operator} is a literal or a single $input/$state reference, nothing deeper"
                            ),
                        );
                        None
                    }
                }
            }
            literal => Some(Operand::Literal(literal.clone())),
        }
    }

    fn date_add(&mut self, operand: &Value, at: &str) -> Option<Expr> {
        let Value::Object(fields) = operand else {
            self.diagnostics.push(
                DiagnosticCode::WrongType,
                at,
                format!(
                    "$dateAdd takes an object {{value, days, hours}}, not {}",
                    kind_of(operand)
                ),
            );
            return None;
        };
        let mut ok = true;
        for key in fields.keys() {
            if !matches!(key.as_str(), "value" | "days" | "hours") {
                self.diagnostics.push(
                    DiagnosticCode::UnknownField,
                    pointer_push(at, key),
                    format!("$dateAdd has no field {key:?}; its fields are value, days and hours"),
                );
                ok = false;
            }
        }
        if !fields.contains_key("value") {
            self.diagnostics
                .push(DiagnosticCode::MissingField, at, "$dateAdd needs a value");
            ok = false;
        }
        let mut operands: [Option<Operand>; 3] = [None, None, None];
        for (slot, name) in operands.iter_mut().zip(["value", "days", "hours"]) {
            if let Some(v) = fields.get(name) {
                match self.operand(v, &pointer_push(at, name), "$dateAdd") {
                    Some(operand) => *slot = Some(operand),
                    None => ok = false,
                }
            }
        }
        if !ok {
            return None;
        }
        let literal = |o: &Option<Operand>| match o {
            None => Some(None),
            Some(Operand::Literal(v)) => Some(Some(v.clone())),
            Some(Operand::Reference(_)) => None,
        };
        // Check each literal operand on its own, so a reference elsewhere cannot hide it.
        let probe = [
            Value::String("2000-01-01".into()),
            Value::from(0),
            Value::from(0),
        ];
        for (index, name) in ["value", "days", "hours"].iter().enumerate() {
            if let Some(Operand::Literal(v)) = &operands[index] {
                let mut args: [&Value; 3] = [&probe[0], &probe[1], &probe[2]];
                args[index] = v;
                if let Err(DateAddError::Operand { rejection, .. }) =
                    operators::date_add(args[0], Some(args[1]), Some(args[2]))
                {
                    self.invalid_literal(&pointer_push(at, name), rejection);
                    ok = false;
                }
            }
        }
        if !ok {
            return None;
        }
        match (
            literal(&operands[0]),
            literal(&operands[1]),
            literal(&operands[2]),
        ) {
            (Some(Some(value)), Some(days), Some(hours)) => {
                match operators::date_add(&value, days.as_ref(), hours.as_ref()) {
                    Ok(text) => Some(Expr::Literal(Value::String(text))),
                    Err(
                        DateAddError::Operand { rejection, .. } | DateAddError::Result(rejection),
                    ) => {
                        self.invalid_literal(at, rejection);
                        None
                    }
                }
            }
            _ => Some(Expr::DateAdd(Box::new(operands))),
        }
    }

    fn invalid_literal(&mut self, at: &str, rejection: Rejection) {
        let Rejection { fault, message } = rejection;
        let fault: OperandFault = fault;
        self.diagnostics.push(
            DiagnosticCode::InvalidLiteral,
            at,
            format!("{message} ({})", fault.code()),
        );
    }
}
