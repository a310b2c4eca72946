//! Version 2's money arithmetic in expressions: `$add`, `$sub`, `$mul` and
//! `$round` (docs/mock-language.md, "Money arithmetic"), compiled once and
//! evaluated exactly per call by [`crate::operators::decimal`].

use super::{Expr, ExprCompiler, Origin, Reference, Scope, Source, blame};
use crate::diagnostics::{DiagnosticCode, pointer_index, pointer_push};
use crate::error::CallError;
use crate::language::Feature;
use crate::operators::decimal::{self, MAX_PLACES};
use crate::operators::{Rejection, json_kind};
use rust_decimal::Decimal;
use serde_json::Value;

/// At most this many operands of one `$add` or `$mul`.
pub(crate) const MAX_OPERANDS: usize = 16;

/// The four operator names.
pub(crate) const OPERATORS: [&str; 4] = ["$add", "$sub", "$mul", "$round"];

#[derive(Debug, Clone, Copy)]
enum Kind {
    Add,
    Sub,
    Mul,
    Round(u32),
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Add => "$add",
            Kind::Sub => "$sub",
            Kind::Mul => "$mul",
            Kind::Round(_) => "$round",
        }
    }
}

/// One operand: an exact literal, a reference, or another of the four.
#[derive(Debug, Clone)]
enum Arg {
    Literal(Decimal),
    Reference(Reference),
    Op(Box<DecimalOp>),
}

/// A compiled `$add`, `$sub`, `$mul` or `$round` with at least one
/// reference below it (an operator over literals alone is folded).
#[derive(Debug, Clone)]
pub(crate) struct DecimalOp {
    kind: Kind,
    args: Box<[Arg]>,
    at: Box<str>,
}

impl Arg {
    fn eval(&self, scope: &Scope<'_>, operator: &str) -> Result<Decimal, CallError> {
        match self {
            Arg::Literal(d) => Ok(*d),
            Arg::Reference(r) => {
                let value = r.resolve(scope)?;
                decimal::to_decimal(&value, operator)
                    .map_err(|rejection| blame(origin(r), Some(r.data_pointer()), rejection, &r.at))
            }
            Arg::Op(op) => op.eval(scope),
        }
    }

    /// The operand that decides the blame for a result: the input over the
    /// state over the definition, the first of equals.
    fn culprit(&self) -> (Origin, Option<String>) {
        match self {
            Arg::Literal(_) => (Origin::Literal, None),
            Arg::Reference(r) => (origin(r), Some(r.data_pointer())),
            Arg::Op(op) => op.culprit(),
        }
    }
}

fn origin(r: &Reference) -> Origin {
    match r.source {
        Source::Input => Origin::Input,
        Source::State => Origin::State,
    }
}

impl DecimalOp {
    fn eval(&self, scope: &Scope<'_>) -> Result<Decimal, CallError> {
        let name = self.kind.name();
        let mut args = self.args.iter();
        let Some(first) = args.next() else {
            return Ok(Decimal::ZERO);
        };
        let mut acc = first.eval(scope, name)?;
        for arg in args {
            let next = arg.eval(scope, name)?;
            acc = match self.kind {
                Kind::Add => decimal::add(acc, next),
                Kind::Sub => decimal::sub(acc, next),
                Kind::Mul | Kind::Round(_) => decimal::mul(acc, next),
            }
            .map_err(|rejection| self.blame_result(rejection))?;
        }
        Ok(match self.kind {
            Kind::Round(places) => decimal::round(acc, places),
            _ => acc,
        })
    }

    fn culprit(&self) -> (Origin, Option<String>) {
        let mut best = (Origin::Literal, None);
        for arg in self.args.iter() {
            let found = arg.culprit();
            if found.0 > best.0 {
                best = found;
            }
        }
        best
    }

    fn blame_result(&self, rejection: Rejection) -> CallError {
        let (origin, pointer) = self.culprit();
        blame(origin, pointer, rejection, &self.at)
    }

    /// The operator's value for this call, as JSON.
    #[inline(never)]
    pub(crate) fn render(&self, scope: &Scope<'_>) -> Result<Value, CallError> {
        let value = self.eval(scope)?;
        decimal::to_json(value).map_err(|rejection| self.blame_result(rejection))
    }

    pub(crate) fn for_each_reference(&mut self, f: &mut impl FnMut(&mut Reference)) {
        for arg in self.args.iter_mut() {
            match arg {
                Arg::Literal(_) => {}
                Arg::Reference(r) => f(r),
                Arg::Op(op) => op.for_each_reference(f),
            }
        }
    }
}

/// A compiled operator: folded to its exact value when every operand is a
/// literal, else kept for each call.
enum Compiled {
    Folded(Decimal),
    Op(DecimalOp),
}

impl ExprCompiler<'_> {
    /// `$add`, `$sub`, `$mul` or `$round` (`key`) with its operand, the
    /// object being at `at`.
    pub(super) fn decimal(&mut self, key: &str, operand: &Value, at: &str) -> Option<Expr> {
        match self.decimal_op(key, operand, at)? {
            Compiled::Folded(value) => match decimal::to_json(value) {
                Ok(json) => Some(Expr::Literal(json)),
                Err(rejection) => {
                    self.invalid_literal(at, rejection);
                    None
                }
            },
            Compiled::Op(op) => Some(Expr::Decimal(Box::new(op))),
        }
    }

    fn decimal_op(&mut self, key: &str, operand: &Value, at: &str) -> Option<Compiled> {
        self.language
            .feature(self.diagnostics, at, Feature::Operator(key));
        let operand_at = pointer_push(at, key);
        let (kind, items): (Kind, Vec<(&Value, String)>) = match key {
            "$round" => {
                let (value, places) = self.round_operand(operand, &operand_at)?;
                (
                    Kind::Round(places),
                    vec![(value, pointer_push(&operand_at, "value"))],
                )
            }
            _ => {
                let (kind, min, max) = match key {
                    "$add" => (Kind::Add, 2, MAX_OPERANDS),
                    "$sub" => (Kind::Sub, 2, 2),
                    _ => (Kind::Mul, 2, MAX_OPERANDS),
                };
                let list = match operand {
                    Value::Array(list) if (min..=max).contains(&list.len()) => list,
                    other => {
                        let wanted = if min == max {
                            format!("an array of exactly {min} operands")
                        } else {
                            format!("an array of {min} to {max} operands")
                        };
                        let found = match other {
                            Value::Array(list) => format!("{} operands", list.len()),
                            _ => json_kind(other).to_owned(),
                        };
                        self.diagnostics.push(
                            DiagnosticCode::WrongType,
                            &operand_at,
                            format!("{key} takes {wanted}, not {found}"),
                        );
                        return None;
                    }
                };
                let items = list
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (v, pointer_index(&operand_at, i)))
                    .collect();
                (kind, items)
            }
        };
        let mut args = Vec::with_capacity(items.len());
        let mut ok = true;
        for (value, item_at) in items {
            match self.decimal_arg(value, &item_at, kind.name()) {
                Some(arg) => args.push(arg),
                None => ok = false,
            }
        }
        if !ok {
            return None;
        }
        let op = DecimalOp {
            kind,
            args: args.into_boxed_slice(),
            at: at.into(),
        };
        if op.args.iter().all(|a| matches!(a, Arg::Literal(_))) {
            // Nothing here reads the call, so an empty scope serves.
            let state = serde_json::Map::new();
            let memo = super::Memo::new();
            let scope = Scope::new(&Value::Null, &state, &memo);
            return match op.eval(&scope) {
                Ok(value) => Some(Compiled::Folded(value)),
                Err(e) => {
                    self.diagnostics.push(
                        DiagnosticCode::InvalidLiteral,
                        at,
                        format!("{e} (invalid_number)"),
                    );
                    None
                }
            };
        }
        Some(Compiled::Op(op))
    }

    /// `{"value": …, "places": N}` of `$round`.
    fn round_operand<'v>(&mut self, operand: &'v Value, at: &str) -> Option<(&'v Value, u32)> {
        let Value::Object(fields) = operand else {
            self.diagnostics.push(
                DiagnosticCode::WrongType,
                at,
                format!(
                    "$round takes an object {{value, places}}, not {}",
                    json_kind(operand)
                ),
            );
            return None;
        };
        let mut ok = true;
        for key in fields.keys() {
            if !matches!(key.as_str(), "value" | "places") {
                self.diagnostics.push(
                    DiagnosticCode::UnknownField,
                    pointer_push(at, key),
                    format!("$round has no field {key:?}; its fields are value and places"),
                );
                ok = false;
            }
        }
        for name in ["value", "places"] {
            if !fields.contains_key(name) {
                self.diagnostics.push(
                    DiagnosticCode::MissingField,
                    at,
                    format!("$round needs {name}"),
                );
                ok = false;
            }
        }
        let places = fields.get("places").and_then(|p| {
            let places = p
                .as_u64()
                .or_else(|| {
                    p.as_f64()
                        .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                        .map(|f| f as u64)
                })
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| *n <= MAX_PLACES);
            if places.is_none() {
                self.diagnostics.push(
                    DiagnosticCode::InvalidLiteral,
                    pointer_push(at, "places"),
                    format!("$round's places is a literal integer from 0 to {MAX_PLACES}, not {p}"),
                );
            }
            places
        });
        match (ok, fields.get("value"), places) {
            (true, Some(value), Some(places)) => Some((value, places)),
            _ => None,
        }
    }

    fn decimal_arg(&mut self, value: &Value, at: &str, operator: &str) -> Option<Arg> {
        let Value::Object(map) = value else {
            return match decimal::to_decimal(value, operator) {
                Ok(d) => Some(Arg::Literal(d)),
                Err(rejection) => {
                    self.invalid_literal(at, rejection);
                    None
                }
            };
        };
        let mut entries = map.iter();
        let (key, inner) = match (entries.next(), entries.next()) {
            (Some((key, inner)), None) if key.starts_with('$') => (key.as_str(), inner),
            _ if map.keys().any(|k| k.starts_with('$')) => {
                self.diagnostics.push(
                    DiagnosticCode::UnknownOperator,
                    at,
                    format!(
                        "an operand of {operator} with '$' keys is exactly one operator with one key"
                    ),
                );
                return None;
            }
            _ => {
                self.diagnostics.push(
                    DiagnosticCode::WrongType,
                    at,
                    format!(
                        "an operand of {operator} is a number, a decimal string, one $input/$state reference or one of $add, $sub, $mul, $round; not an object"
                    ),
                );
                return None;
            }
        };
        let key_at = pointer_push(at, key);
        match key {
            "$input" => self
                .reference(Source::Input, inner, &key_at, true)
                .map(Arg::Reference),
            "$state" => self
                .reference(Source::State, inner, &key_at, true)
                .map(Arg::Reference),
            k if OPERATORS.contains(&k) => match self.decimal_op(k, inner, at)? {
                Compiled::Folded(d) => Some(Arg::Literal(d)),
                Compiled::Op(op) => Some(Arg::Op(Box::new(op))),
            },
            other => {
                self.diagnostics.push(
                    DiagnosticCode::UnknownOperator,
                    &key_at,
                    format!(
                        "{other:?} cannot be an operand of {operator}: its operands are numbers, decimal strings, $input/$state references and $add, $sub, $mul, $round"
                    ),
                );
                None
            }
        }
    }
}
