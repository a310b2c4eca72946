//! The ordering condition ops `lt`, `le`, `gt`, `ge` (version 3): the
//! path's value against the condition's value — numbers by exact decimal
//! value, two dates or date-times by their instant in UTC, other strings
//! by Unicode code point (docs/mock-language.md, "Ordering conditions").

use crate::check::context::Checker;
use crate::conditions::condition::{ConditionOp, Subject, Test};
use crate::conditions::want::{Needs, Want};
use crate::error::{CallError, OperandFault};
use crate::expr::dates::{Instant, parse_utc_instant};
use crate::expr::decimals::to_decimal;
use crate::scope::Source;
use serde_json::Value;
use std::cmp::Ordering;
use toolmock_contract::json_kind;

/// Which ordering an op asks for.
#[derive(Debug, Clone, Copy)]
enum Order {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Order {
    fn name(self) -> &'static str {
        match self {
            Order::Lt => "lt",
            Order::Le => "le",
            Order::Gt => "gt",
            Order::Ge => "ge",
        }
    }

    fn admits(self, ordering: Ordering) -> bool {
        match self {
            Order::Lt => ordering.is_lt(),
            Order::Le => ordering.is_le(),
            Order::Gt => ordering.is_gt(),
            Order::Ge => ordering.is_ge(),
        }
    }
}

/// One ordering condition: the op and the value compared with.
#[derive(Debug, Clone)]
struct Compare {
    order: Order,
    want: Want,
}

/// Compiles `lt`, `le`, `gt` or `ge` with its `value` (at `at`): a literal
/// number or string, or one `$input`/`$state` reference.
pub(crate) fn compare(c: &mut Checker, op: &str, value: &Value, at: &str) -> Option<Test> {
    let order = match op {
        "lt" => Order::Lt,
        "le" => Order::Le,
        "gt" => Order::Gt,
        _ => Order::Ge,
    };
    let want = c.want(op, Needs::Ordered, false, value, at)?;
    Some(Test::Op(Box::new(Compare { order, want })))
}

/// A value as an ordering op compares it.
enum Key<'v> {
    Number(&'v Value),
    Text(&'v str),
}

fn key(value: &Value) -> Option<Key<'_>> {
    match value {
        Value::Number(_) => Some(Key::Number(value)),
        Value::String(text) => Some(Key::Text(text)),
        _ => None,
    }
}

/// Two numbers by exact value: each read as the decimal it is written as
/// (`0.1` is one tenth); one beyond 28 significant digits or ±7.9 × 10^28
/// by its double.
pub(crate) fn numbers(a: &Value, b: &Value) -> Ordering {
    match (to_decimal(a, "compare"), to_decimal(b, "compare")) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        _ => {
            let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
            x.total_cmp(&y)
        }
    }
}

/// Two strings: by instant when both are dates or date-times, else by
/// Unicode code point.
fn texts(a: &str, b: &str) -> Ordering {
    let instant = |t| parse_utc_instant(t).ok();
    match (instant(a), instant(b)) {
        (Some(x), Some(y)) => Instant::cmp(&x, &y),
        _ => a.cmp(b),
    }
}

impl ConditionOp for Compare {
    fn holds(&self, found: Option<&Value>, subject: &Subject<'_, '_>) -> Result<bool, CallError> {
        let op = self.order.name();
        // The value is read (and its kind checked) even when the path does
        // not resolve, so a broken reference is never hidden.
        let want = self.want.read(subject.scope, op, Needs::Ordered)?;
        let Some(found) = found else {
            return Ok(false);
        };
        let ordering = match (key(found), key(&want)) {
            (Some(Key::Number(a)), Some(Key::Number(b))) => numbers(a, b),
            (Some(Key::Text(a)), Some(Key::Text(b))) => texts(a, b),
            _ => return Err(self.mismatch(found, &want, subject)),
        };
        Ok(self.order.admits(ordering))
    }

    fn clone_op(&self) -> Box<dyn ConditionOp> {
        Box::new(self.clone())
    }
}

impl Compare {
    /// A path value that cannot be compared with the value: blamed on the
    /// input when either side came from it, else on the state.
    fn mismatch(&self, found: &Value, want: &Value, subject: &Subject<'_, '_>) -> CallError {
        let message = format!(
            "the condition op {} compares a number with a number or a string with a string; the path's value is {} and the value is {}",
            self.order.name(),
            json_kind(found),
            json_kind(want)
        );
        let value_source = match &self.want {
            Want::Reference(r) => Some((r.source, r.data_pointer())),
            Want::Literal(_) | Want::Pluck(_) => None,
        };
        let (source, pointer) = match (subject.source(), value_source) {
            (Source::State, Some((Source::Input, pointer))) => (Source::Input, pointer),
            (source, _) => (source, subject.pointer()),
        };
        match source {
            Source::Input => {
                CallError::input_operand(OperandFault::InvalidOperand, pointer, message)
            }
            Source::State => CallError::InvalidFixtureLiteral {
                fault: OperandFault::InvalidOperand,
                path: pointer,
                message,
            },
        }
    }
}
