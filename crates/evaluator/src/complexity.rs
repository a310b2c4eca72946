//! The expanded size of a JSON Schema: a deterministic bound on what
//! validating one value against it can cost.
//!
//! A schema can reach the same subschema many times through `$ref`, `anyOf`,
//! `oneOf` and `allOf`; a chain of `$defs` levels that each reach the next
//! twice is 2 KB of text and doubles the work of validating an invalid value
//! per level (22 levels took 52 s). The size counted here is the number of
//! subschemas a validator may visit: every subschema once per way it is
//! reached, a `$ref` expanded where it stands. A `$ref` back into a schema
//! that is being expanded counts once, since recursion is bounded by the
//! value validated, not by the schema. Sizes are remembered per target (so
//! measuring is linear in the text) and capped just past the limit, so the
//! same schema always gets the same answer, fast, whatever it is.

use serde_json::{Map, Value};
use std::collections::HashMap;

/// The largest expanded size a contract schema may have (see
/// [`crate::SchemaError::TooComplex`]). Real tool schemas stay far below it
/// (the largest in `fixtures/` and the MCP fixture servers is in the
/// hundreds); at the limit an invalid value costs a few milliseconds.
pub const MAX_SCHEMA_SIZE: u64 = 5_000;

/// A schema past the limit: where it first grew past it, and how far the
/// count got before it stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TooComplex {
    /// JSON pointer (into the schema) of the deepest subschema whose own
    /// expansion is past the limit.
    pub(crate) path: String,
    /// The count when measuring stopped (just past the limit).
    pub(crate) size: u64,
}

/// Measures `schema`, refusing it when its expanded size exceeds `limit`.
pub(crate) fn measure(schema: &Value, limit: u64) -> Result<u64, TooComplex> {
    let mut walk = Walk {
        root: schema,
        limit,
        memo: HashMap::new(),
        // The root is being expanded: `"$ref": "#"` inside it is recursion.
        expanding: vec![String::new()],
        over: None,
    };
    let size = walk.size(schema, "");
    match walk.over {
        Some(path) => Err(TooComplex { path, size }),
        None => Ok(size),
    }
}

struct Walk<'s> {
    root: &'s Value,
    limit: u64,
    /// Expanded size of each `$ref` target already measured, by pointer.
    memo: HashMap<String, u64>,
    /// Pointers of the `$ref` targets being expanded (a cycle counts once).
    expanding: Vec<String>,
    over: Option<String>,
}

/// Keywords whose value is one subschema.
const ONE: &[&str] = &[
    "additionalProperties",
    "additionalItems",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "contentSchema",
];

/// Keywords whose value is an array of subschemas.
const MANY: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];

/// Keywords whose value is an object of subschemas. `$defs` and
/// `definitions` are not here: they are reached through `$ref`, where they
/// are used, as often as they are used.
const NAMED: &[&str] = &["properties", "patternProperties", "dependentSchemas"];

impl Walk<'_> {
    fn size(&mut self, node: &Value, path: &str) -> u64 {
        let Value::Object(map) = node else {
            return 1;
        };
        let mut total: u64 = 1;
        for (keyword, value) in map {
            let at = || toolmock_contract::pointer::push(path, keyword);
            let added = match keyword.as_str() {
                "$ref" => self.reference(value),
                "items" => match value {
                    // Draft 4 … 2019-09 tuples.
                    Value::Array(items) => self.each(items.iter().enumerate(), &at()),
                    other => self.size(other, &at()),
                },
                k if ONE.contains(&k) => self.size(value, &at()),
                k if MANY.contains(&k) => match value {
                    Value::Array(items) => self.each(items.iter().enumerate(), &at()),
                    _ => 0,
                },
                k if NAMED.contains(&k) => match value {
                    Value::Object(members) => self.members(members, &at()),
                    _ => 0,
                },
                _ => 0,
            };
            total = total.saturating_add(added);
            if total > self.limit {
                break;
            }
        }
        self.capped(total, path)
    }

    fn each<'v>(&mut self, items: impl Iterator<Item = (usize, &'v Value)>, path: &str) -> u64 {
        let mut total: u64 = 0;
        for (i, item) in items {
            total =
                total.saturating_add(self.size(item, &toolmock_contract::pointer::index(path, i)));
            if total > self.limit {
                break;
            }
        }
        total
    }

    fn members(&mut self, members: &Map<String, Value>, path: &str) -> u64 {
        let mut total: u64 = 0;
        for (name, item) in members {
            total = total
                .saturating_add(self.size(item, &toolmock_contract::pointer::push(path, name)));
            if total > self.limit {
                break;
            }
        }
        total
    }

    /// A local `$ref` is expanded where it stands (from the memo when its
    /// target was measured before); one that does not resolve here (remote,
    /// an anchor, a `$id`-relative URI) counts as one node: the compiler
    /// resolves or refuses it.
    fn reference(&mut self, value: &Value) -> u64 {
        let Some(target) = value.as_str().and_then(|r| r.strip_prefix('#')) else {
            return 1;
        };
        let pointer = percent_decode(target);
        if let Some(&size) = self.memo.get(&pointer) {
            return size;
        }
        if self.expanding.contains(&pointer) {
            return 1;
        }
        let Some(node) = self.root.pointer(&pointer) else {
            return 1;
        };
        self.expanding.push(pointer.clone());
        let size = self.size(node, &pointer);
        self.expanding.pop();
        self.memo.insert(pointer, size);
        size
    }

    /// Caps a count just past the limit, remembering the first (deepest)
    /// subschema that went past it.
    fn capped(&mut self, total: u64, path: &str) -> u64 {
        if total > self.limit {
            if self.over.is_none() {
                self.over = Some(path.to_owned());
            }
            self.limit + 1
        } else {
            total
        }
    }
}

/// Decodes `%XX` escapes of a URI fragment (a JSON pointer in a `$ref`).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Some(byte) = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `levels` `$defs` levels, each reaching the next twice (once through
    /// `anyOf`, once through `allOf`): expanded size 2^levels.
    pub(crate) fn chain(levels: usize) -> Value {
        let mut defs = Map::new();
        for level in 0..levels {
            let next = format!("#/$defs/l{}", level + 1);
            defs.insert(
                format!("l{level}"),
                json!({"anyOf": [{"$ref": next}, {"allOf": [{"$ref": next}, {"type": "object"}]}]}),
            );
        }
        defs.insert(
            format!("l{levels}"),
            json!({"type": "string", "minLength": 3}),
        );
        json!({"$defs": defs, "$ref": "#/$defs/l0"})
    }

    #[test]
    fn a_doubling_chain_is_refused_at_the_level_that_passes_the_limit() {
        for levels in [20, 26, 200] {
            let refused = measure(&chain(levels), MAX_SCHEMA_SIZE).expect_err("too complex");
            assert_eq!(refused.size, MAX_SCHEMA_SIZE + 1);
            // Level k expands to 2·(level k+1) + 5 and the last to 1: the
            // deepest past 5,000 is 10 levels above the end (6,139).
            assert_eq!(refused.path, format!("/$defs/l{}", levels - 10), "{levels}");
        }
        assert!(measure(&chain(8), MAX_SCHEMA_SIZE).is_ok());
    }

    #[test]
    fn sizes_count_every_way_a_subschema_is_reached() {
        let schema = json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/x"}, "b": {"$ref": "#/$defs/x"}},
            "$defs": {"x": {"type": "array", "items": {"type": "string"}}}
        });
        // root + a + b + 2 × (x + its items)
        assert_eq!(measure(&schema, MAX_SCHEMA_SIZE), Ok(1 + 2 * (1 + 2)));
    }

    #[test]
    fn recursion_counts_once_and_unresolved_references_count_one() {
        let tree = json!({
            "type": "object",
            "properties": {"children": {"type": "array", "items": {"$ref": "#"}}},
        });
        assert_eq!(measure(&tree, MAX_SCHEMA_SIZE), Ok(4));
        let remote = json!({"$ref": "https://example.com/s.json", "anyOf": [true, false]});
        assert_eq!(measure(&remote, MAX_SCHEMA_SIZE), Ok(4));
        let escaped = json!({"$ref": "#/$defs/a%25b~1c", "$defs": {"a%b/c": {"not": true}}});
        assert_eq!(measure(&escaped, MAX_SCHEMA_SIZE), Ok(3));
    }
}
