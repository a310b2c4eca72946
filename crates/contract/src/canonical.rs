//! RFC 8785 canonical JSON and the hashes built on it.

use crate::{ContractError, OperationContract, pointer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fmt;

/// The RFC 8785 (JCS) canonical form of a value: sorted keys (by UTF-16 code
/// units), no whitespace, ECMAScript number formatting.
///
/// Refuses integers no double holds exactly (docs/spec.md §2), because JCS writes
/// every number from its double and the hash would silently describe another
/// value; every other number is written from its double, as RFC 8785 says
/// (`18446744073709551616` as `18446744073709552000`).
pub fn canonical_json(value: &Value) -> Result<Vec<u8>, ContractError> {
    check_exact_numbers(value)?;
    serde_json_canonicalizer::to_vec(value).map_err(ContractError::Canonicalization)
}

/// Fails with [`ContractError::InexactNumber`] (naming its JSON pointer) on the
/// first integer no double holds exactly.
pub fn check_exact_numbers(value: &Value) -> Result<(), ContractError> {
    let mut found = Vec::new();
    pointer::inexact_numbers(value, "", &mut found);
    match found.into_iter().next() {
        Some((path, number)) => Err(ContractError::InexactNumber { path, number }),
        None => Ok(()),
    }
}

/// Fails with [`ContractError::InexactNumber`] on the first integer literal of
/// valid JSON `text` beyond the 64-bit range that no double holds exactly.
/// serde_json reads such a literal as the nearest double, so
/// [`check_exact_numbers`] on the parsed value can no longer tell
/// `100000000000000000001` from `100000000000000000000`; only the text can.
pub(crate) fn check_integer_literals(text: &[u8]) -> Result<(), ContractError> {
    // One frame per open container: the current key or index, and whether an
    // object expects a key next.
    enum Frame {
        Object { key: String, expect_key: bool },
        Array(usize),
    }
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'{' => stack.push(Frame::Object {
                key: String::new(),
                expect_key: true,
            }),
            b'[' => stack.push(Frame::Array(0)),
            b'}' | b']' => {
                stack.pop();
            }
            b':' => {
                if let Some(Frame::Object { expect_key, .. }) = stack.last_mut() {
                    *expect_key = false;
                }
            }
            b',' => match stack.last_mut() {
                Some(Frame::Object { expect_key, .. }) => *expect_key = true,
                Some(Frame::Array(index)) => *index += 1,
                None => {}
            },
            b'"' => {
                let start = i;
                i += 1;
                while i < text.len() && text[i] != b'"' {
                    i += if text[i] == b'\\' { 2 } else { 1 };
                }
                if let Some(Frame::Object {
                    key,
                    expect_key: true,
                }) = stack.last_mut()
                {
                    let raw = &text[start..(i + 1).min(text.len())];
                    *key = serde_json::from_slice(raw).unwrap_or_default();
                }
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i + 1 < text.len()
                    && matches!(text[i + 1], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                let literal = &text[start..=i];
                let integer = !literal.iter().any(|b| matches!(b, b'.' | b'e' | b'E'));
                // Within 64 bits, the parsed value keeps the integer and the
                // walk over it reports it (with its path) when it is inexact.
                let text = std::str::from_utf8(literal).unwrap_or_default();
                let fits = text.parse::<i64>().is_ok() || text.parse::<u64>().is_ok();
                if integer && !fits && !pointer::is_exact_integer_literal(text) {
                    let mut path = String::new();
                    for frame in &stack {
                        path.push('/');
                        match frame {
                            Frame::Object { key, .. } => pointer::push_token(&mut path, key),
                            Frame::Array(index) => path.push_str(&index.to_string()),
                        }
                    }
                    return Err(ContractError::InexactNumber {
                        path,
                        number: String::from_utf8_lossy(literal).into_owned(),
                    });
                }
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn is_lower_hex_sha256(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Why a string is not a hash.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a hash: expected 64 lowercase hexadecimal digits, got {0:?}")]
pub struct InvalidHash(pub String);

macro_rules! hash_newtype {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Parses 64 lowercase hexadecimal digits.
            pub fn parse(text: &str) -> Result<Self, InvalidHash> {
                if is_lower_hex_sha256(text) {
                    Ok(Self(text.to_owned()))
                } else {
                    Err(InvalidHash(text.to_owned()))
                }
            }

            /// The hash as 64 lowercase hexadecimal digits.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl TryFrom<String> for $name {
            type Error = InvalidHash;
            fn try_from(text: String) -> Result<Self, InvalidHash> {
                if is_lower_hex_sha256(&text) {
                    Ok(Self(text))
                } else {
                    Err(InvalidHash(text))
                }
            }
        }

        impl From<$name> for String {
            fn from(hash: $name) -> String {
                hash.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

hash_newtype!(
    /// The contract hash of docs/spec.md §2: lowercase hex SHA-256 of the canonical
    /// form of `{description, input_schema, operation: {name, source}, output_schema}`.
    ContractHash
);

hash_newtype!(
    /// The hash of a whole mock definition document (its canonical form),
    /// which pins an inline tool's definition.
    DefinitionHash
);

impl ContractHash {
    /// Hashes a contract. Borrows it: nothing is cloned.
    pub fn of(contract: &OperationContract) -> Result<Self, ContractError> {
        check_exact_numbers(&contract.input_schema)?;
        check_exact_numbers(&contract.output_schema)?;
        // Serializing the struct gives exactly the four members of docs/spec.md §2;
        // JCS sorts them, so field order in the struct does not matter.
        let bytes =
            serde_json_canonicalizer::to_vec(contract).map_err(ContractError::Canonicalization)?;
        Ok(Self(sha256_hex(&bytes)))
    }
}

impl DefinitionHash {
    /// Hashes a definition document as it is (canonical form, so layout never matters).
    pub fn of(definition: &Value) -> Result<Self, ContractError> {
        Ok(Self(sha256_hex(&canonical_json(definition)?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refuses_only_integers_no_double_holds() {
        let err = canonical_json(&json!({"a": [1, 9007199254740993u64]})).unwrap_err();
        assert_eq!(err.code(), "inexact_number");
        assert_eq!(err.path(), Some("/a/1"));
        assert!(canonical_json(&json!(9007199254740992u64)).is_ok());
        assert!(canonical_json(&json!(-9007199254740992i64)).is_ok());
        // Exact beyond 2^53: written from the double, as RFC 8785 says.
        assert_eq!(
            canonical_json(&json!([1u64 << 60, 1u64 << 63])).expect("exact"),
            b"[1152921504606847000,9223372036854776000]"
        );
        let text = br#"{"maximum": 18446744073709551616, "minimum": 100000000000000000000}"#;
        let value: Value = serde_json::from_slice(text).expect("JSON");
        check_integer_literals(text).expect("exact literals");
        assert_eq!(
            canonical_json(&value).expect("exact"),
            br#"{"maximum":18446744073709552000,"minimum":100000000000000000000}"#
        );
    }

    #[test]
    fn refuses_integer_literals_beyond_64_bits() {
        let text = br#"{"a~/b": [1, {"x": "1e400 \" 99999999999999999999999"}, -100000000000000000000000], "c": 1e30}"#;
        match check_integer_literals(text) {
            Err(ContractError::InexactNumber { path, number }) => {
                assert_eq!(path, "/a~0~1b/2");
                assert_eq!(number, "-100000000000000000000000");
            }
            other => panic!("{other:?}"),
        }
        assert!(
            check_integer_literals(
                br#"{"a": [1.5e300, 18446744073709551615, "123456789012345678901234"]}"#
            )
            .is_ok()
        );
        assert!(check_integer_literals(b"[-18446744073709551615]").is_err());
        // Beyond 64 bits, a literal a double holds exactly is accepted.
        assert!(check_integer_literals(b"[100000000000000000000, -18446744073709551616]").is_ok());
        assert!(check_integer_literals(b"[100000000000000000001]").is_err());
    }

    #[test]
    fn pointer_tokens_are_escaped() {
        let err = canonical_json(&json!({"a/b~c": 18446744073709551615u64})).unwrap_err();
        assert_eq!(err.path(), Some("/a~1b~0c"));
    }

    #[test]
    fn hash_parsing_is_strict() {
        assert!(ContractHash::parse(&"a".repeat(64)).is_ok());
        assert!(ContractHash::parse(&"A".repeat(64)).is_err());
        assert!(ContractHash::parse(&"a".repeat(63)).is_err());
    }
}
