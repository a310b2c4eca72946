//! A compiled definition (docs/spec.md §3): immutable, `Send + Sync`,
//! evaluated without re-parsing anything — its variants with their rules,
//! answers and writes, its initial state, its examples — and the limits the
//! check holds a definition to.

use crate::conditions::condition::CompiledCondition;
use crate::domain::answer::{Answer, DomainError};
use crate::expr::tree::Expr;
use crate::rule_index::RuleIndex;
use crate::state::writes::{StateUpdates, Write};
use serde_json::{Map, Value};

/// The compact document may be at most this many bytes.
pub const MAX_DEFINITION_BYTES: usize = 102_400;
/// At most this many variants.
pub const MAX_VARIANTS: usize = 30;
/// At most this many rules per variant.
pub const MAX_RULES: usize = 100;
/// At most this many examples.
pub const MAX_EXAMPLES: usize = 100;
/// The largest simulated delay.
pub const MAX_DELAY_MS: u32 = 30_000;

/// A definition parsed, checked for structure and compiled: immutable,
/// `Send + Sync`, evaluated without re-parsing anything.
#[derive(Debug, Clone)]
pub struct CompiledDefinition {
    pub(crate) default_variant: usize,
    /// Sorted by name, for binary search.
    pub(crate) variants: Box<[CompiledVariant]>,
    pub(crate) initial_state: Map<String, Value>,
    pub(crate) examples: Box<[CompiledExample]>,
}

#[derive(Debug, Clone)]
pub(crate) struct CompiledVariant {
    pub(crate) name: Box<str>,
    /// `result`, or (version 2) `error`.
    pub(crate) result: Answer,
    pub(crate) set_state: StateUpdates,
    /// The list form of `set_state` (version 2); empty for the object form.
    pub(crate) writes: Box<[Write]>,
    pub(crate) delay_ms: u32,
    pub(crate) rules: Box<[CompiledRule]>,
    /// Set when enough rules test one path against distinct strings.
    pub(crate) index: Option<RuleIndex>,
    /// One copy of each distinct operator of the variant that reads the
    /// input alone, by input-hole id (`crate::render::ahead`).
    pub(crate) input_holes: Box<[Expr]>,
}

#[derive(Debug, Clone)]
pub(crate) struct CompiledRule {
    pub(crate) when: Box<[CompiledCondition]>,
    pub(crate) result: Option<Answer>,
    pub(crate) set_state: Option<StateUpdates>,
    /// Set exactly when `set_state` is (see [`CompiledVariant::writes`]).
    pub(crate) writes: Option<Box<[Write]>>,
    pub(crate) delay_ms: Option<u32>,
}

#[derive(Debug, Clone)]
pub(crate) struct CompiledExample {
    pub(crate) index: usize,
    pub(crate) variant: Box<str>,
    pub(crate) input: Value,
    pub(crate) state: Option<Map<String, Value>>,
    pub(crate) expected: Expected,
    pub(crate) expected_state: Option<Map<String, Value>>,
}

/// What an example expects its call to answer.
#[derive(Debug, Clone)]
pub(crate) enum Expected {
    /// `expected`: the rendered result.
    Result(Value),
    /// `expected_error` (version 2): the domain error.
    Error(DomainError),
}

impl CompiledDefinition {
    /// The state a fresh attempt starts with.
    pub fn initial_state(&self) -> &Map<String, Value> {
        &self.initial_state
    }

    /// The variant names, sorted.
    pub fn variant_names(&self) -> impl Iterator<Item = &str> {
        self.variants.iter().map(|v| &*v.name)
    }

    /// The name of the default variant.
    pub fn default_variant(&self) -> &str {
        &self.variants[self.default_variant].name
    }

    pub(crate) fn variant(&self, name: Option<&str>) -> Option<&CompiledVariant> {
        self.variant_index(name).and_then(|i| self.variants.get(i))
    }

    pub(crate) fn variant_index(&self, name: Option<&str>) -> Option<usize> {
        match name {
            None => Some(self.default_variant),
            Some(name) => self.variants.binary_search_by(|v| (*v.name).cmp(name)).ok(),
        }
    }
}
