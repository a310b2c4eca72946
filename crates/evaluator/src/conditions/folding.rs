//! The condition op `eq_ci`: the path's string equals the value's under
//! Unicode simple case folding (`crate::json::equal_folded`) —
//! docs/mock-language.md, "More condition ops".

use crate::check::context::Checker;
use crate::conditions::condition::{ConditionOp, Subject, Test};
use crate::conditions::want::{Needs, Want};
use crate::error::CallError;
use crate::json::equal_folded;
use serde_json::Value;

/// `eq_ci`.
#[derive(Debug, Clone)]
struct EqCi(Want);

/// Compiles `eq_ci` with its `value` (at `at`).
pub(crate) fn eq_ci(c: &mut Checker, op: &str, value: &Value, at: &str) -> Option<Test> {
    let want = c.want(op, Needs::String, false, value, at)?;
    Some(Test::Op(Box::new(EqCi(want))))
}

impl ConditionOp for EqCi {
    fn holds(&self, found: Option<&Value>, subject: &Subject<'_, '_>) -> Result<bool, CallError> {
        let scope = subject.scope;
        // The value is read even when the path does not resolve, so a
        // broken reference is never hidden.
        let want = self.0.read(scope, "eq_ci", Needs::String)?;
        Ok(match (found, &*want) {
            (Some(Value::String(a)), Value::String(b)) => equal_folded(a, b),
            _ => false,
        })
    }

    fn clone_op(&self) -> Box<dyn ConditionOp> {
        Box::new(self.clone())
    }
}
