//! Money arithmetic (version 2's `$add`, `$sub`, `$mul`, `$round`;
//! docs/mock-language.md, "Money arithmetic"): exact decimal arithmetic as
//! pure functions (public behind the `operators` feature, as
//! `operators::decimal`), the operators' check, and their evaluation.
//! Every operand is read as the decimal it is written as and every step is
//! exact, or the step is refused: no binary floating-point error ever
//! reaches a result.

use crate::check::context::Checker;
use crate::check::diagnostics::{DiagnosticCode, pointer_index, pointer_push};
use crate::error::{CallError, OperandFault, Origin, Rejection, reject, truncate};
use crate::expr::numbers::is_decimal;
use crate::expr::tree::{Expr, Operator};
use crate::language::Feature;
use crate::paths::reference::Reference;
use crate::scope::{Memo, Render, Scope, Source};
use rust_decimal::{Decimal, RoundingStrategy};
use serde_json::{Number, Value};
use toolmock_contract::json_kind;

/// At most this many decimal places in `$round`.
pub const MAX_PLACES: u32 = 28;

/// A JSON number written with more significant digits than this is not
/// always the same number once read back, so results must fit in it.
pub const MAX_RESULT_DIGITS: usize = 15;

/// The decimal an operand is written as: a JSON number (by its shortest
/// text: `0.1` is one tenth, not the double nearest it) or a string of
/// `$number`'s grammar (`^-?[0-9]+(\.[0-9]+)?$`). Anything else, or a value
/// beyond 28 significant digits, is `invalid_number`.
pub fn to_decimal(value: &Value, operator: &str) -> Result<Decimal, Rejection> {
    let parsed = match value {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                return Ok(Decimal::from(i));
            }
            if let Some(u) = n.as_u64() {
                return Ok(Decimal::from(u));
            }
            let text = n.to_string();
            if text.contains(['e', 'E']) {
                Decimal::from_scientific(&text).ok()
            } else {
                Decimal::from_str_exact(&text).ok()
            }
            .map(|d| d.normalize())
            .ok_or_else(|| out_of_range(operator, &text))
        }
        Value::String(text) if is_decimal(text) => Decimal::from_str_exact(text)
            .map(|d| d.normalize())
            .map_err(|_| out_of_range(operator, text)),
        Value::String(text) => Err(reject(
            OperandFault::InvalidNumber,
            format!(
                "{operator}: {:?} is not a decimal number (digits, an optional leading '-', an optional fraction after '.'; no exponent, sign '+', spaces or separators)",
                truncate(text)
            ),
        )),
        other => Err(reject(
            OperandFault::InvalidNumber,
            format!(
                "{operator} takes numbers or decimal strings, not {}",
                json_kind(other)
            ),
        )),
    }?;
    Ok(parsed)
}

fn out_of_range(operator: &str, text: &str) -> Rejection {
    reject(
        OperandFault::InvalidNumber,
        format!(
            "{operator}: {:?} does not fit an exact decimal (at most 28 significant digits, magnitude below 7.9e28)",
            truncate(text)
        ),
    )
}

fn inexact(operator: &str) -> Rejection {
    reject(
        OperandFault::InvalidNumber,
        format!(
            "{operator}: the exact result does not fit an exact decimal (at most 28 significant digits, magnitude below 7.9e28)"
        ),
    )
}

/// `a + b`, exactly.
pub fn add(a: Decimal, b: Decimal) -> Result<Decimal, Rejection> {
    // The decimal type rounds a sum it cannot hold at full scale; a scale
    // below the operands' means it did, and the sum is refused instead.
    a.checked_add(b)
        .filter(|r| r.scale() >= a.scale().max(b.scale()))
        .ok_or_else(|| inexact("$add"))
}

/// `a - b`, exactly.
pub fn sub(a: Decimal, b: Decimal) -> Result<Decimal, Rejection> {
    a.checked_sub(b)
        .filter(|r| r.scale() >= a.scale().max(b.scale()))
        .ok_or_else(|| inexact("$sub"))
}

/// `a × b`, exactly.
pub fn mul(a: Decimal, b: Decimal) -> Result<Decimal, Rejection> {
    let (a, b) = (a.normalize(), b.normalize());
    a.checked_mul(b)
        .filter(|r| {
            // A zero product is exact only from a zero operand; else it was rounded away.
            (a.is_zero() || b.is_zero()) && r.is_zero() || r.scale() == a.scale() + b.scale()
        })
        .ok_or_else(|| inexact("$mul"))
}

/// `value` rounded to `places` decimal places, a tie to the even neighbour
/// (`0.125` → `0.12`, `0.135` → `0.14`), as Python's `round` and its
/// `decimal` module do.
pub fn round(value: Decimal, places: u32) -> Decimal {
    value.round_dp_with_strategy(
        places.min(MAX_PLACES),
        RoundingStrategy::MidpointNearestEven,
    )
}

/// A result as JSON: an integer when integral and within ±(2^63 − 1),
/// else the number with at most [`MAX_RESULT_DIGITS`] significant digits
/// written as its shortest text (which is exactly the decimal); a result
/// needing more digits is `invalid_number` (round it first).
pub fn to_json(value: Decimal) -> Result<Value, Rejection> {
    let value = value.normalize();
    if value.scale() == 0
        && let Ok(i) = i64::try_from(value.mantissa())
    {
        return Ok(Value::from(i));
    }
    let digits = value.mantissa().unsigned_abs().to_string().len();
    if digits > MAX_RESULT_DIGITS {
        return Err(reject(
            OperandFault::InvalidNumber,
            format!(
                "the result {value} has {digits} significant digits; a JSON number holds {MAX_RESULT_DIGITS} exactly: round it first with $round"
            ),
        ));
    }
    value
        .to_string()
        .parse::<f64>()
        .ok()
        .and_then(Number::from_f64)
        .map(Value::Number)
        .ok_or_else(|| inexact("the result"))
}

/// At most this many operands of one `$add` or `$mul`.
pub(crate) const MAX_OPERANDS: usize = 16;

/// The operator names: version 2's four, and version 3's `$abs` and `$neg`.
pub(crate) const OPERATORS: [&str; 6] = ["$add", "$sub", "$mul", "$round", "$abs", "$neg"];

#[derive(Debug, Clone, Copy)]
enum Kind {
    Add,
    Sub,
    Mul,
    Round(u32),
    /// (Version 3) the absolute value of one operand.
    Abs,
    /// (Version 3) one operand negated.
    Neg,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Add => "$add",
            Kind::Sub => "$sub",
            Kind::Mul => "$mul",
            Kind::Round(_) => "$round",
            Kind::Abs => "$abs",
            Kind::Neg => "$neg",
        }
    }
}

/// One operand: an exact literal, a reference, or another of the four.
#[derive(Debug, Clone)]
enum Arg {
    Literal(Decimal),
    Reference(Reference),
    Op(Box<DecimalOp>),
    /// (Version 3) a `$let`, rendered per call: a value it gives that is
    /// not a decimal is the fixture's fault (the definition computed it).
    Named(Box<Expr>),
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
                to_decimal(&value, operator).map_err(|rejection| r.blame(rejection))
            }
            Arg::Op(op) => op.eval(scope),
            Arg::Named(expr) => {
                let value = expr.render(scope)?;
                to_decimal(&value, operator).map_err(|rejection| {
                    CallError::refused_operand(Origin::State, None, rejection, operator)
                })
            }
        }
    }

    /// The operand that decides the blame for a result: the input over the
    /// state over the definition, the first of equals.
    fn culprit(&self) -> (Origin, Option<String>) {
        match self {
            Arg::Literal(_) => (Origin::Literal, None),
            Arg::Named(_) => (Origin::State, None),
            Arg::Reference(r) => (r.source.origin(), Some(r.data_pointer())),
            Arg::Op(op) => op.culprit(),
        }
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
                Kind::Add => add(acc, next),
                Kind::Sub => sub(acc, next),
                Kind::Mul | Kind::Round(_) | Kind::Abs | Kind::Neg => mul(acc, next),
            }
            .map_err(|rejection| self.blame_result(rejection))?;
        }
        Ok(match self.kind {
            Kind::Round(places) => round(acc, places),
            Kind::Abs => acc.abs(),
            Kind::Neg => -acc,
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
        CallError::refused_operand(origin, pointer, rejection, &self.at)
    }
}

impl Render for DecimalOp {
    /// The operator's value for this call, as JSON.
    fn render(&self, scope: &Scope<'_>) -> Result<Value, CallError> {
        let value = self.eval(scope)?;
        to_json(value).map_err(|rejection| self.blame_result(rejection))
    }

    fn clone_render(&self) -> Box<dyn Render> {
        Box::new(self.clone())
    }
}

impl Operator for DecimalOp {
    fn name(&self) -> &'static str {
        self.kind.name()
    }

    fn for_each_reference(&mut self, f: &mut dyn FnMut(&mut Reference)) {
        for arg in self.args.iter_mut() {
            match arg {
                Arg::Literal(_) | Arg::Named(_) => {}
                Arg::Reference(r) => f(r),
                Arg::Op(op) => Operator::for_each_reference(&mut **op, f),
            }
        }
    }

    fn clone_operator(&self) -> Box<dyn Operator> {
        Box::new(self.clone())
    }
}

/// A compiled operator: folded to its exact value when every operand is a
/// literal, else kept for each call.
enum Compiled {
    Folded(Decimal),
    Op(DecimalOp),
}

/// `$add`, `$sub`, `$mul` or `$round` (`key`) with its operand, the
/// object being at `at`.
pub(crate) fn compile(c: &mut Checker, key: &str, operand: &Value, at: &str) -> Option<Expr> {
    match decimal_op(c, key, operand, at)? {
        Compiled::Folded(value) => match to_json(value) {
            Ok(json) => Some(Expr::Literal(json)),
            Err(rejection) => {
                c.invalid_literal(at, rejection);
                None
            }
        },
        Compiled::Op(op) => Some(Expr::Op(Box::new(op))),
    }
}

fn decimal_op(c: &mut Checker, key: &str, operand: &Value, at: &str) -> Option<Compiled> {
    c.feature(at, Feature::Operator(key));
    let operand_at = pointer_push(at, key);
    let (kind, items): (Kind, Vec<(&Value, String)>) = match key {
        "$round" => {
            let (value, places) = round_operand(c, operand, &operand_at)?;
            (
                Kind::Round(places),
                vec![(value, pointer_push(&operand_at, "value"))],
            )
        }
        "$abs" | "$neg" => {
            let kind = if key == "$abs" { Kind::Abs } else { Kind::Neg };
            (kind, vec![(operand, operand_at.clone())])
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
                    c.diagnostics.push(
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
        match decimal_arg(c, value, &item_at, kind.name()) {
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
        let memo = Memo::new();
        let scope = Scope::new(&Value::Null, &state, &memo);
        return match op.eval(&scope) {
            Ok(value) => Some(Compiled::Folded(value)),
            Err(e) => {
                c.diagnostics.push(
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
fn round_operand<'v>(c: &mut Checker, operand: &'v Value, at: &str) -> Option<(&'v Value, u32)> {
    let Value::Object(fields) = operand else {
        c.diagnostics.push(
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
            c.diagnostics.push(
                DiagnosticCode::UnknownField,
                pointer_push(at, key),
                format!("$round has no field {key:?}; its fields are value and places"),
            );
            ok = false;
        }
    }
    for name in ["value", "places"] {
        if !fields.contains_key(name) {
            c.diagnostics.push(
                DiagnosticCode::MissingField,
                at,
                format!("$round needs {name}"),
            );
            ok = false;
        }
    }
    let places = fields
        .get("places")
        .and_then(|p| places_literal(c, p, &pointer_push(at, "places"), "$round"));
    match (ok, fields.get("value"), places) {
        (true, Some(value), Some(places)) => Some((value, places)),
        _ => None,
    }
}

/// A decimal operator's `places` at `at`: a literal integer from 0 to
/// [`MAX_PLACES`] (an integral float such as `2.0` counts); anything else is
/// reported as `invalid_literal` for `operator`.
pub(crate) fn places_literal(
    c: &mut Checker,
    places: &Value,
    at: &str,
    operator: &str,
) -> Option<u32> {
    let literal = places
        .as_u64()
        .or_else(|| {
            places
                .as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                .map(|f| f as u64)
        })
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| *n <= MAX_PLACES);
    if literal.is_none() {
        c.diagnostics.push(
            DiagnosticCode::InvalidLiteral,
            at,
            format!(
                "{operator}'s places is a literal integer from 0 to {MAX_PLACES}, not {places}"
            ),
        );
    }
    literal
}

fn decimal_arg(c: &mut Checker, value: &Value, at: &str, operator: &str) -> Option<Arg> {
    let Value::Object(map) = value else {
        return match to_decimal(value, operator) {
            Ok(d) => Some(Arg::Literal(d)),
            Err(rejection) => {
                c.invalid_literal(at, rejection);
                None
            }
        };
    };
    let mut entries = map.iter();
    let (key, inner) = match (entries.next(), entries.next()) {
        (Some((key, inner)), None) if key.starts_with('$') => (key.as_str(), inner),
        _ if map.keys().any(|k| k.starts_with('$')) => {
            c.diagnostics.push(
                DiagnosticCode::UnknownOperator,
                at,
                format!(
                    "an operand of {operator} with '$' keys is exactly one operator with one key"
                ),
            );
            return None;
        }
        _ => {
            c.diagnostics.push(
                DiagnosticCode::WrongType,
                at,
                format!(
                    "an operand of {operator} is a number, a decimal string, one $input/$state reference or one of $add, $sub, $mul, $round, $abs, $neg; not an object"
                ),
            );
            return None;
        }
    };
    let key_at = pointer_push(at, key);
    match key {
        "$input" => c
            .reference(Source::Input, inner, &key_at, true)
            .map(Arg::Reference),
        "$state" => c
            .reference(Source::State, inner, &key_at, true)
            .map(Arg::Reference),
        k if OPERATORS.contains(&k) => match decimal_op(c, k, inner, at)? {
            Compiled::Folded(d) => Some(Arg::Literal(d)),
            Compiled::Op(op) => Some(Arg::Op(Box::new(op))),
        },
        // (Version 3) a named sub-expression, or an operator that gives a
        // number: its value read per call.
        "$let" | "$sum" | "$count" | "$min" | "$max" | "$calc" => match c.node(value, at) {
            Expr::Literal(v) => match to_decimal(&v, operator) {
                Ok(d) => Some(Arg::Literal(d)),
                Err(rejection) => {
                    c.invalid_literal(at, rejection);
                    None
                }
            },
            Expr::Reference(r) => Some(Arg::Reference(r)),
            Expr::Op(op) => Some(Arg::Named(Box::new(Expr::Op(op)))),
            // The compiler gives one of those three, or a problem.
            _ => None,
        },
        other => {
            c.diagnostics.push(
                DiagnosticCode::UnknownOperator,
                &key_at,
                format!(
                    "{other:?} cannot be an operand of {operator}: its operands are numbers, decimal strings, $input/$state references and $add, $sub, $mul, $round{}",
                    if c.language.admits(Feature::Operator("$let")) {
                        ", $abs, $neg, $let, $sum, $count, $min, $max, $calc"
                    } else {
                        ""
                    }
                ),
            );
            None
        }
    }
}
