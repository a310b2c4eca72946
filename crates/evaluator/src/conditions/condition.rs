//! A compiled condition (docs/spec.md §6 step 2: `{source, path, op,
//! value}`) and whether it holds for a call. Version 1's ops are variants
//! of [`Test`]; every later op is a [`ConditionOp`] of its own room
//! (`crate::conditions::membership`, `folding`), so a new op adds a room and
//! a row of `crate::conditions::when`'s table, not a variant here.

use crate::error::CallError;
use crate::expr::naming::NamedPath;
use crate::json::json_equal;
use crate::paths::dotted::{Path, Resolved};
use crate::paths::reference::{ComputedPath, Reference};
use crate::paths::steps::{Found, Steps, pointer_of};
use crate::scope::{Scope, Source};
use serde_json::Value;

#[derive(Debug, Clone)]
pub(crate) struct CompiledCondition {
    pub(crate) source: Source,
    pub(crate) path: Path,
    /// A version-2 path written as an array (then `path` is empty and
    /// unused, and the condition has no memo slot).
    pub(crate) computed: Option<Box<ComputedPath>>,
    /// (Version 3) a condition whose `source` is `let`: the path inside a
    /// named value it reads (then `path` is empty and unused, `source` says
    /// who supplied the value, and the condition has no memo slot).
    pub(crate) named: Option<Box<NamedPath>>,
    pub(crate) test: Test,
    /// Conditions of one variant that read the same source and path share a
    /// slot, so one call resolves each distinct path once.
    pub(crate) slot: usize,
}

#[derive(Debug, Clone)]
pub(crate) enum Test {
    Eq(Value),
    Ne(Value),
    In(Box<[Value]>),
    Exists(bool),
    /// Version 2: `eq` (true) or `ne` (false) against a reference's value.
    Ref(bool, Box<Reference>),
    /// An op of a later version (see [`ConditionOp`]).
    Op(Box<dyn ConditionOp>),
}

/// A condition op beyond version 1's.
pub(crate) trait ConditionOp: std::fmt::Debug + Send + Sync {
    /// Whether it holds of `found` (the condition's path's value, if it
    /// resolves; `subject` says where it came from, and for which call). A value it reads that
    /// is not what it compares with ends the call with an error, even when
    /// `found` is `None`.
    fn holds(&self, found: Option<&Value>, subject: &Subject<'_, '_>) -> Result<bool, CallError>;

    /// Whether it reads `found` at all: `$any`/`$all` as a condition test
    /// an expression of their own, and resolving their (whole-state) path
    /// would copy the whole state each time they are tried.
    fn reads_found(&self) -> bool {
        true
    }

    /// A copy (compiled definitions are `Clone`).
    fn clone_op(&self) -> Box<dyn ConditionOp>;
}

impl Clone for Box<dyn ConditionOp> {
    fn clone(&self) -> Self {
        self.clone_op()
    }
}

/// One of two things, chosen per call by conditions (version 3's `$if`,
/// docs/mock-language.md "Conditional expressions"): `then` when every
/// condition of `when` holds (in order, the first that fails ending the
/// test, as a rule's), else `otherwise`.
#[derive(Debug, Clone)]
pub(crate) struct Choice<T> {
    pub(crate) when: Box<[CompiledCondition]>,
    pub(crate) then: T,
    pub(crate) otherwise: T,
}

impl<T> Choice<T> {
    /// The branch this call takes.
    pub(crate) fn pick(&self, scope: &Scope<'_>) -> Result<&T, CallError> {
        for condition in self.when.iter() {
            if !holds(condition, scope)? {
                return Ok(&self.otherwise);
            }
        }
        Ok(&self.then)
    }
}

/// The condition's own side of a comparison: its path's value, read from
/// the input or the state — who is blamed when that value cannot be
/// compared.
pub(crate) struct Subject<'c, 's> {
    condition: &'c CompiledCondition,
    /// The call the condition is tried for.
    pub(crate) scope: &'c Scope<'s>,
}

impl Subject<'_, '_> {
    /// Where the path's value came from.
    pub(crate) fn source(&self) -> Source {
        self.condition.source
    }

    /// The path's JSON pointer into its source for this call (computed
    /// again: it is needed only for an error).
    pub(crate) fn pointer(&self) -> String {
        if let Some(named) = &self.condition.named {
            return named.pointer();
        }
        match &self.condition.computed {
            None => self.condition.path.to_pointer(),
            Some(computed) => match computed.steps(self.scope) {
                Ok(Steps::All(steps)) => pointer_of(&steps),
                _ => String::new(),
            },
        }
    }
}

/// Whether `condition` holds for this call; a condition that cannot be
/// decided (a computed path's segment that fails) ends the call with its error.
pub(crate) fn holds(condition: &CompiledCondition, scope: &Scope<'_>) -> Result<bool, CallError> {
    if let Test::Op(op) = &condition.test
        && !op.reads_found()
    {
        return op.holds(None, &Subject { condition, scope });
    }
    let state_whole;
    let resolved = match (&condition.named, &condition.computed) {
        (Some(named), _) => match named.find(scope)? {
            Some(value) => Resolved::Built(value),
            None => Resolved::Missing,
        },
        (None, None) => scope.lookup(condition.source, &condition.path, condition.slot),
        (None, Some(computed)) => match computed.resolve(condition.source, scope)? {
            Found::Whole => Resolved::Whole,
            Found::Value(v) => Resolved::Found(v),
            Found::Built(v) => Resolved::Built(v),
            Found::Missing { .. } => Resolved::Missing,
        },
    };
    let built;
    let found = match resolved {
        Resolved::Found(v) => Some(v),
        Resolved::Built(v) => {
            built = v;
            Some(&built)
        }
        Resolved::Missing => None,
        // Rebuilt each time: a rare condition (`exists` on state "").
        Resolved::Whole => {
            state_whole = Value::Object(scope.state.whole());
            Some(&state_whole)
        }
    };
    Ok(match &condition.test {
        Test::Eq(want) => found.is_some_and(|v| json_equal(v, want)),
        Test::Ne(want) => !found.is_some_and(|v| json_equal(v, want)),
        Test::In(options) => found.is_some_and(|v| options.iter().any(|o| json_equal(v, o))),
        Test::Exists(want) => found.is_some() == *want,
        Test::Ref(eq, reference) => {
            let want = reference.resolve(scope)?;
            found.is_some_and(|v| json_equal(v, &want)) == *eq
        }
        Test::Op(op) => op.holds(found, &Subject { condition, scope })?,
    })
}
