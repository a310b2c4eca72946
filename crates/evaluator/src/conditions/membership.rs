//! The condition ops `contains` (the path's array has an element equal to
//! the value) and `subset_of` (each element of the path's array pairs with
//! a distinct equal element of the value's; multiset inclusion) —
//! docs/mock-language.md, "More condition ops".

use crate::check::context::Checker;
use crate::conditions::condition::{ConditionOp, Subject, Test};
use crate::conditions::want::{Needs, Want};
use crate::error::CallError;
use crate::json::json_equal;
use serde_json::Value;

/// `contains`.
#[derive(Debug, Clone)]
struct Contains(Want);

/// `subset_of`.
#[derive(Debug, Clone)]
struct SubsetOf(Want);

/// Compiles `contains` with its `value` (at `at`).
pub(crate) fn contains(c: &mut Checker, op: &str, value: &Value, at: &str) -> Option<Test> {
    let want = c.want(op, Needs::Any, false, value, at)?;
    Some(Test::Op(Box::new(Contains(want))))
}

/// Compiles `subset_of` with its `value` (at `at`), which may be a `$pluck`.
pub(crate) fn subset_of(c: &mut Checker, op: &str, value: &Value, at: &str) -> Option<Test> {
    let want = c.want(op, Needs::Array, true, value, at)?;
    Some(Test::Op(Box::new(SubsetOf(want))))
}

impl ConditionOp for Contains {
    fn holds(&self, found: Option<&Value>, subject: &Subject<'_, '_>) -> Result<bool, CallError> {
        let scope = subject.scope;
        // The value is read even when the path does not resolve, so a
        // broken reference is never hidden.
        let want = self.0.read(scope, "contains", Needs::Any)?;
        Ok(found
            .and_then(Value::as_array)
            .is_some_and(|items| items.iter().any(|item| json_equal(item, &want))))
    }

    fn clone_op(&self) -> Box<dyn ConditionOp> {
        Box::new(self.clone())
    }
}

impl ConditionOp for SubsetOf {
    fn holds(&self, found: Option<&Value>, subject: &Subject<'_, '_>) -> Result<bool, CallError> {
        let scope = subject.scope;
        let want = self.0.read(scope, "subset_of", Needs::Array)?;
        Ok(match (found, &*want) {
            (Some(Value::Array(part)), Value::Array(whole)) => multiset_included(part, whole),
            _ => false,
        })
    }

    fn clone_op(&self) -> Box<dyn ConditionOp> {
        Box::new(self.clone())
    }
}

/// Whether every element of `part` can be paired with a distinct equal
/// element of `whole` (each element counts as often as it occurs).
/// At most `part.len() × whole.len()` comparisons.
pub(crate) fn multiset_included(part: &[Value], whole: &[Value]) -> bool {
    if part.len() > whole.len() {
        return false;
    }
    let mut used = vec![false; whole.len()];
    part.iter().all(|item| {
        let free = whole
            .iter()
            .zip(used.iter())
            .position(|(w, taken)| !taken && json_equal(item, w));
        match free.and_then(|i| used.get_mut(i)) {
            Some(slot) => {
                *slot = true;
                true
            }
            None => false,
        }
    })
}
