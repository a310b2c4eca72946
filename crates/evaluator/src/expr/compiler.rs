//! Compiling an expression: every problem of the definition is collected, not just the first.

use super::{Expr, Fields, Items, NO_SLOT, Operand, Reference, Source, Template};
use crate::computed::ComputedPath;
use crate::diagnostics::{DiagnosticCode, Diagnostics, pointer_push};
use crate::language::{Feature, Language};
use crate::operators::{self, DateAddError, OperandFault, Rejection, json_kind};
use crate::path::Path;
use serde_json::{Map, Value};

/// Compiles expressions, collecting every problem.
pub(crate) struct ExprCompiler<'d> {
    pub(crate) diagnostics: &'d mut Diagnostics,
    pub(crate) language: &'d mut Language,
}

impl ExprCompiler<'_> {
    /// Compiles the root expression at `at` (a JSON pointer into the definition).
    pub(crate) fn compile(&mut self, value: &Value, at: &str) -> Expr {
        Template::wrap(self.node(value, at))
    }

    pub(crate) fn node(&mut self, value: &Value, at: &str) -> Expr {
        match value {
            Value::Object(map) if map.keys().any(|k| k.starts_with('$')) => self.operator(map, at),
            Value::Object(map) => {
                let fields: Vec<(Box<str>, Expr)> = map
                    .iter()
                    .map(|(k, v)| (Box::from(k.as_str()), self.node(v, &pointer_push(at, k))))
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
                    Expr::Object(Box::new(Fields::new(fields)))
                }
            }
            Value::Array(items) => {
                let compiled: Vec<Expr> = items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| self.node(v, &format!("{at}/{i}")))
                    .collect();
                if compiled.iter().all(|e| matches!(e, Expr::Literal(_))) {
                    Expr::Literal(Value::Array(
                        compiled.into_iter().map(Expr::into_literal).collect(),
                    ))
                } else {
                    Expr::Array(Box::new(Items::new(compiled)))
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
                    "an object with '$' keys must be exactly one operator ({}) with one key; found keys {keys:?}",
                    crate::language::core_operators().join(", ")
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
                .reference(Source::Input, operand, &operand_at, true)
                .map_or(placeholder, Expr::Reference),
            "$state" => self
                .reference(Source::State, operand, &operand_at, true)
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
            key if super::decimal::OPERATORS.contains(&key) => {
                self.decimal(key, operand, at).unwrap_or(placeholder)
            }
            key if super::collections::OPERATORS.contains(&key) => {
                self.collection(key, operand, at).unwrap_or(placeholder)
            }
            "$find" => self.find(operand, at).unwrap_or(placeholder),
            key if super::lists::OPERATORS.contains(&key) => {
                self.list(key, operand, at).unwrap_or(placeholder)
            }
            other => {
                self.diagnostics.push(
                    DiagnosticCode::UnknownOperator,
                    &operand_at,
                    format!(
                        "unknown operator {other:?}; the operators are {} (definitions never execute code or templates)",
                        crate::language::core_operators_listed()
                    ),
                );
                placeholder
            }
        }
    }

    pub(crate) fn reference(
        &mut self,
        source: Source,
        operand: &Value,
        at: &str,
        computed: bool,
    ) -> Option<Reference> {
        if let (Value::Array(items), true) = (operand, computed) {
            self.language
                .feature(self.diagnostics, at, Feature::ArrayPath);
            let path = ComputedPath::compile(items, at, self.diagnostics)?;
            return Some(Reference {
                source,
                path: Path::whole(),
                computed: Some(Box::new(path)),
                at: at.into(),
                slot: NO_SLOT,
            });
        }
        let Value::String(raw) = operand else {
            self.diagnostics.push(
                DiagnosticCode::WrongType,
                at,
                format!(
                    "{} takes a path string, not {}",
                    source.operator(),
                    json_kind(operand)
                ),
            );
            return None;
        };
        match Path::parse(raw) {
            Ok(path) => Some(Reference {
                source,
                path,
                computed: None,
                at: at.into(),
                slot: NO_SLOT,
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
                        self.reference(source, path, &pointer_push(at, key), false)
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
                    json_kind(operand)
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

    pub(super) fn invalid_literal(&mut self, at: &str, rejection: Rejection) {
        let Rejection { fault, message } = rejection;
        let fault: OperandFault = fault;
        self.diagnostics.push(
            DiagnosticCode::InvalidLiteral,
            at,
            format!("{message} ({})", fault.code()),
        );
    }
}
