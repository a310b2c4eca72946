//! Duplicate object keys in JSON text.
//!
//! `serde_json` keeps the last of two equal keys silently. A document where
//! `"delay_ms"` appears twice is ambiguous — another reader may keep the first —
//! so toolmock refuses it instead of guessing (fail closed).

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::collections::HashSet;
use std::fmt;

/// The JSON pointers of every key that repeats an earlier key of the same
/// object, in document order. Text that is not JSON yields no pointers (the
/// caller's own parse reports that).
pub fn duplicate_keys(text: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let mut deserializer = serde_json::Deserializer::from_slice(text);
    // A syntax error is not ours to report; whatever was found before it stands.
    let _ = Finder {
        path: String::new(),
        found: &mut found,
    }
    .deserialize(&mut deserializer);
    found
}

struct Finder<'a> {
    path: String,
    found: &'a mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for Finder<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Finder<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Finder { path, found } = self;
        let mut index = 0usize;
        while seq
            .next_element_seed(Finder {
                path: format!("{path}/{index}"),
                found: &mut *found,
            })?
            .is_some()
        {
            index += 1;
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Finder { path, found } = self;
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let mut child = path.clone();
            child.push('/');
            crate::pointer::push_token(&mut child, &key);
            if !seen.insert(key) {
                found.push(child.clone());
            }
            map.next_value_seed(Finder {
                path: child,
                found: &mut *found,
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::duplicate_keys;

    #[test]
    fn finds_every_duplicate_with_its_pointer() {
        let text = br#"{"a": 1, "b": [{"x": 1, "x": 2}], "a": 3, "c/d": {"~": 1, "~": 2}}"#;
        assert_eq!(duplicate_keys(text), ["/b/0/x", "/a", "/c~1d/~0"]);
        assert!(duplicate_keys(br#"{"a": {"a": {"a": 1}}}"#).is_empty());
        assert!(duplicate_keys(b"{not json").is_empty());
    }

    #[test]
    fn a_contract_with_a_repeated_key_is_refused() {
        let text = br#"{"operation": {"source": "mcp", "name": "a", "name": "b"},
                        "input_schema": {}, "output_schema": {}}"#;
        let err = crate::OperationContract::from_json_slice(text).unwrap_err();
        assert_eq!(err.code(), "duplicate_key");
        assert_eq!(err.path(), Some("/operation/name"));
    }
}
