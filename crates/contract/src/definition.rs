//! The version-1 mock definition document (docs/spec.md §3), as typed data.
//!
//! This model is for building and serializing definitions (drafts, fixtures,
//! storage). Reading untrusted documents with full diagnostics is done by
//! `toolmock-evaluator`, which walks the raw JSON so that it can report every
//! problem with its path instead of stopping at the first.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The only `schema_version` this model describes.
pub const SCHEMA_VERSION: u32 = 1;

/// A version-1 mock definition. Expressions (`result`, `set_state` values) are
/// kept as raw JSON: their meaning is the evaluator's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockDefinition {
    /// Always [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Optional note; no meaning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The variant used when a call names none.
    pub default_variant: String,
    /// State of a fresh attempt (top-level keys).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub initial_state: Map<String, Value>,
    /// The variants by name.
    pub variants: BTreeMap<String, Variant>,
    /// Checked examples; every variant needs at least one.
    pub examples: Vec<Example>,
}

/// One behaviour of an operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    /// Optional note; no meaning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The result expression.
    pub result: Value,
    /// State updates: each top-level key is replaced by its rendered expression.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub set_state: Map<String, Value>,
    /// Simulated latency in milliseconds, 0…30000.
    #[serde(default)]
    pub delay_ms: u32,
    /// First-match rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<Rule>,
}

/// A rule: when all conditions hold, its fields replace the variant's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Optional note; no meaning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Conditions; empty matches always.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub when: Vec<Condition>,
    /// Result expression; falls back to the variant's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// State updates; fall back to the variant's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_state: Option<Map<String, Value>>,
    /// Delay; falls back to the variant's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u32>,
}

/// Where a condition reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConditionSource {
    /// The call's input.
    Input,
    /// The pre-call state.
    State,
}

/// A condition's comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConditionOp {
    /// Deep equality, numbers by value.
    Eq,
    /// Negation of `eq`.
    Ne,
    /// Equal to one element of an array value.
    In,
    /// Whether the path resolves equals the boolean value.
    Exists,
}

/// One condition of a rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    /// `input` or `state`.
    pub source: ConditionSource,
    /// Dot-separated path; `""` is the whole document.
    pub path: String,
    /// The comparison.
    pub op: ConditionOp,
    /// A literal (never evaluated).
    pub value: Value,
}

/// A checked example.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Example {
    /// Optional note; no meaning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The variant exercised.
    pub variant: String,
    /// The call's input.
    pub input: Map<String, Value>,
    /// Pre-call state; defaults to `initial_state`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Map<String, Value>>,
    /// The expected rendered result.
    pub expected: Value,
    /// The expected whole post-call state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_state: Option<Map<String, Value>>,
}

impl MockDefinition {
    /// The document as JSON (what is stored, hashed and checked).
    pub fn to_value(&self) -> Value {
        // Serializing plain data structures into a `Value` cannot fail.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_the_spec_example() {
        let doc = json!({
            "schema_version": 1,
            "default_variant": "success",
            "initial_state": {"reference": "TEST-742"},
            "variants": {"success": {
                "result": {"reference": {"$state": "reference"}},
                "set_state": {"booked": true},
                "delay_ms": 0
            }},
            "examples": [{"variant": "success", "input": {}, "expected": {"reference": "TEST-742"}}]
        });
        let def: MockDefinition = serde_json::from_value(doc.clone()).unwrap();
        assert_eq!(def.to_value(), doc);
    }

    #[test]
    fn unknown_fields_are_refused() {
        let doc = json!({"schema_version": 1, "default_variant": "a", "variants": {},
                         "examples": [], "extra": 1});
        assert!(serde_json::from_value::<MockDefinition>(doc).is_err());
    }
}
