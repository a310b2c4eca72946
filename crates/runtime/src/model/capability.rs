//! Attempt capabilities: unguessable bearer tokens bound to one attempt.
//!
//! A token is 256 random bits from the operating system's CSPRNG (through
//! `rand`'s thread generator, which is seeded from it), shown to its holder
//! once as 64 hex digits. Only its SHA-256 ([`TokenHash`]) is ever stored, so a
//! leaked database does not leak usable capabilities.

use rand::Rng;
use sha2::{Digest, Sha256};
use std::fmt;

/// The secret half: what a nested service presents to the dispatcher.
///
/// `Debug` never prints the token. The hash is computed once, when the
/// capability is made or received.
#[derive(Clone, PartialEq, Eq)]
pub struct Capability {
    token: String,
    hash: TokenHash,
}

impl Capability {
    /// A fresh capability of 256 random bits.
    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        Self::from_token(hex::encode(bytes))
    }

    /// Wraps a token received from a caller (it is not validated: an unknown
    /// token is simply refused by the dispatcher).
    pub fn from_token(token: impl Into<String>) -> Self {
        let token = token.into();
        let hash = TokenHash(Sha256::digest(token.as_bytes()).into());
        Self { token, hash }
    }

    /// The token, to hand to the nested service.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The SHA-256 that is stored and looked up.
    pub fn hash(&self) -> TokenHash {
        self.hash
    }
}

impl fmt::Debug for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Capability(<redacted>)")
    }
}

/// SHA-256 of a capability token: the only form in which it is stored.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TokenHash(pub [u8; 32]);

impl TokenHash {
    /// The 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Reads 32 bytes (as stored); `None` for any other length.
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        <[u8; 32]>::try_from(bytes).ok().map(Self)
    }
}

impl fmt::Debug for TokenHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TokenHash({})", hex::encode(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_256_bit_and_distinct() {
        let a = Capability::generate();
        let b = Capability::generate();
        assert_eq!(a.token().len(), 64);
        assert_ne!(a, b);
        assert_ne!(a.hash(), b.hash());
        assert_eq!(a.hash(), Capability::from_token(a.token()).hash());
        assert!(!format!("{a:?}").contains(a.token()));
    }
}
