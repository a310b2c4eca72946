//! `eq` and `ne` against a named sub-expression (version 3: a condition's
//! `value` that is `{"$let": "name"}`, docs/mock-language.md "Named
//! sub-expressions"), compared as `eq` compares a literal.

use crate::conditions::condition::{ConditionOp, Subject, Test};
use crate::conditions::want::Want;
use crate::error::CallError;
use crate::json::json_equal;
use serde_json::Value;

/// `eq` (`true`) or `ne` (`false`) against a value computed per call.
#[derive(Debug, Clone)]
struct Equals(bool, Want);

/// The test of `eq`/`ne` against `want`.
pub(crate) fn equals(eq: bool, want: Want) -> Test {
    Test::Op(Box::new(Equals(eq, want)))
}

impl ConditionOp for Equals {
    fn holds(&self, found: Option<&Value>, subject: &Subject<'_, '_>) -> Result<bool, CallError> {
        let want = self.1.read(
            subject.scope,
            if self.0 { "eq" } else { "ne" },
            crate::conditions::want::Needs::Any,
        )?;
        Ok(found.is_some_and(|v| json_equal(v, &want)) == self.0)
    }

    fn clone_op(&self) -> Box<dyn ConditionOp> {
        Box::new(self.clone())
    }
}
