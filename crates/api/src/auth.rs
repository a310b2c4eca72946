//! Authentication and tenancy: bearer JWTs for people and tools, attempt
//! capabilities for the dispatcher endpoint.
//!
//! A token is verified with `jsonwebtoken` (HS256 with a shared secret, or
//! RS256 with a public key); `exp` is required, `nbf` and `iat` may not lie
//! in the future, each within a small leeway ([`DEFAULT_LEEWAY`]), and
//! `iss`/`aud` are required and checked when configured. `sub` and `tenant`
//! are validated like any input (no U+0000, bounded length). Its claims carry the subject, the tenant and
//! the permissions. The tenant claim is the tenant's UUID, or any other string
//! naming it, which maps to a stable UUID (v5 in [`TENANT_NAMESPACE`]) so a
//! development token can say `--tenant acme`.

use crate::error::ApiError;
use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use std::marker::PhantomData;
use toolmock_runtime::model::TenantId;
use uuid::Uuid;

/// The namespace of tenant names that are not UUIDs themselves.
pub const TENANT_NAMESPACE: Uuid = Uuid::from_u128(0x7a1c_6d2e_3b4f_4c8a_9e0d_5f6a_7b8c_9d0e);

/// Managing library tools and their mocks (every tool and testing route).
pub const MANAGE_TOOLS: &str = "AIManager:ManageTools";
/// Creating agents and running simulations.
pub const RUN_SIMULATIONS: &str = "AIManager:RunSimulations";

/// How tokens are verified.
#[derive(Clone)]
pub struct AuthConfig {
    key: DecodingKey,
    algorithm: Algorithm,
    issuer: Option<String>,
    audience: Option<String>,
    /// How far `exp`, `nbf` and `iat` may be off the server's clock.
    leeway: std::time::Duration,
    /// The rules above as `jsonwebtoken` checks them, built once rather
    /// than per request.
    validation: Validation,
}

/// How far a token's time claims may be off the server's clock by default:
/// a token expired longer ago, or valid (`nbf`) or issued (`iat`) further in
/// the future, is refused.
pub const DEFAULT_LEEWAY: std::time::Duration = std::time::Duration::from_secs(5);

/// The longest `sub` or `tenant` claim accepted, in characters.
pub const MAX_CLAIM_CHARS: usize = 256;

impl std::fmt::Debug for AuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthConfig")
            .field("algorithm", &self.algorithm)
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

/// Why an authentication configuration is unusable.
#[derive(Debug, thiserror::Error)]
pub enum AuthConfigError {
    /// The HS256 secret is shorter than 32 bytes.
    #[error("the HS256 secret must be at least 32 bytes (it has {0})")]
    ShortSecret(usize),
    /// The RS256 public key is not a PEM RSA public key.
    #[error("the RS256 public key is unusable: {0}")]
    BadPublicKey(String),
}

impl AuthConfig {
    /// HS256 with a shared secret (at least 32 bytes).
    pub fn hs256(secret: &[u8]) -> Result<Self, AuthConfigError> {
        if secret.len() < 32 {
            return Err(AuthConfigError::ShortSecret(secret.len()));
        }
        Ok(Self::new(
            DecodingKey::from_secret(secret),
            Algorithm::HS256,
        ))
    }

    /// RS256 with a PEM public key.
    pub fn rs256_pem(public_key: &[u8]) -> Result<Self, AuthConfigError> {
        let key = DecodingKey::from_rsa_pem(public_key)
            .map_err(|e| AuthConfigError::BadPublicKey(e.to_string()))?;
        Ok(Self::new(key, Algorithm::RS256))
    }

    fn new(key: DecodingKey, algorithm: Algorithm) -> Self {
        let mut config = Self {
            key,
            algorithm,
            issuer: None,
            audience: None,
            leeway: DEFAULT_LEEWAY,
            validation: Validation::new(algorithm),
        };
        config.validation = config.build_validation();
        config
    }

    /// Requires and checks `iss`.
    pub fn with_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self.validation = self.build_validation();
        self
    }

    /// Requires and checks `aud`.
    pub fn with_audience(mut self, audience: impl Into<String>) -> Self {
        self.audience = Some(audience.into());
        self.validation = self.build_validation();
        self
    }

    /// Allows `leeway` of clock difference on `exp`, `nbf` and `iat`
    /// (default [`DEFAULT_LEEWAY`]).
    pub fn with_leeway(mut self, leeway: std::time::Duration) -> Self {
        self.leeway = leeway;
        self.validation = self.build_validation();
        self
    }

    /// What `verify` checks: `exp` and `sub` always, `nbf` when present,
    /// `iss` and `aud` when configured.
    fn build_validation(&self) -> Validation {
        let mut validation = Validation::new(self.algorithm);
        validation.leeway = self.leeway.as_secs();
        validation.validate_nbf = true;
        let mut required = vec!["exp", "sub"];
        match &self.issuer {
            Some(issuer) => {
                validation.set_issuer(&[issuer]);
                required.push("iss");
            }
            None => validation.iss = None,
        }
        match &self.audience {
            Some(audience) => {
                validation.set_audience(&[audience]);
                required.push("aud");
            }
            None => validation.validate_aud = false,
        }
        validation.set_required_spec_claims(&required);
        validation
    }

    /// Verifies a token and returns its principal.
    pub fn verify(&self, token: &str) -> Result<Principal, ApiError> {
        let data =
            jsonwebtoken::decode::<Claims>(token, &self.key, &self.validation).map_err(|e| {
                use jsonwebtoken::errors::ErrorKind;
                let reason = match e.kind() {
                    ErrorKind::ExpiredSignature => "the token has expired",
                    ErrorKind::ImmatureSignature => "the token is not valid yet (`nbf`)",
                    ErrorKind::InvalidSignature => "the token's signature is not valid",
                    ErrorKind::InvalidIssuer => "the token's issuer is not accepted",
                    ErrorKind::InvalidAudience => "the token's audience is not accepted",
                    ErrorKind::MissingRequiredClaim(_) => "the token lacks a required claim",
                    ErrorKind::InvalidAlgorithm => "the token's algorithm is not accepted",
                    _ => "the token is malformed",
                };
                ApiError::Unauthenticated {
                    reason: reason.into(),
                }
            })?;
        let claims = data.claims;
        self.check_issued_at(claims.iat)?;
        for (name, value) in [("sub", &claims.sub), ("tenant", &claims.tenant)] {
            check_claim_text(name, value)?;
        }
        Ok(Principal {
            subject: claims.sub,
            tenant: tenant_id(&claims.tenant),
            tenant_name: claims.tenant,
            permissions: claims.permissions,
        })
    }
}

impl AuthConfig {
    /// `jsonwebtoken` does not check `iat`: a token issued in the future
    /// (beyond the leeway) was minted by a clock that cannot be trusted.
    fn check_issued_at(&self, iat: Option<u64>) -> Result<(), ApiError> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        match iat {
            Some(iat) if iat > now.saturating_add(self.leeway.as_secs()) => {
                Err(ApiError::Unauthenticated {
                    reason: "the token is issued in the future (`iat`)".into(),
                })
            }
            _ => Ok(()),
        }
    }
}

/// A `sub` or `tenant` claim is input like any other: not empty, at most
/// [`MAX_CLAIM_CHARS`] characters, and no U+0000 (which PostgreSQL cannot
/// store, so it would fail every write as an internal error).
fn check_claim_text(name: &str, value: &str) -> Result<(), ApiError> {
    let reason = if value.is_empty() {
        format!("the token's `{name}` claim is empty")
    } else if value.contains('\0') {
        format!("the token's `{name}` claim holds U+0000")
    } else if value.chars().count() > MAX_CLAIM_CHARS {
        format!("the token's `{name}` claim is longer than {MAX_CLAIM_CHARS} characters")
    } else {
        return Ok(());
    };
    Err(ApiError::Unauthenticated { reason })
}

/// The claims of an API token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Who: written as the author of revisions.
    pub sub: String,
    /// The tenant: a UUID, or a name mapped to one.
    pub tenant: String,
    /// Granted permissions, e.g. `AIManager:ManageTools`.
    #[serde(default)]
    pub permissions: Vec<String>,
    /// Expiry (seconds since the epoch); required.
    pub exp: u64,
    /// Issued at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<u64>,
    /// Issuer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iss: Option<String>,
    /// Audience.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aud: Option<String>,
}

/// Signs claims with HS256: development tokens (`toolmock-api token`) and tests.
pub fn mint_hs256(secret: &[u8], claims: &Claims) -> Result<String, jsonwebtoken::errors::Error> {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(secret),
    )
}

/// The tenant id a tenant claim names.
pub fn tenant_id(claim: &str) -> TenantId {
    match Uuid::parse_str(claim) {
        Ok(id) => TenantId(id),
        Err(_) => TenantId(Uuid::new_v5(&TENANT_NAMESPACE, claim.as_bytes())),
    }
}

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The subject.
    pub subject: String,
    /// The tenant every read and write is scoped to.
    pub tenant: TenantId,
    /// The tenant claim as sent.
    pub tenant_name: String,
    /// Granted permissions.
    pub permissions: Vec<String>,
}

impl Principal {
    /// Whether the principal holds `permission`.
    pub fn has(&self, permission: &str) -> bool {
        self.permissions.iter().any(|p| p == permission)
    }
}

/// A permission a route requires, as a type, so that the route's handler
/// signature states it.
pub trait Permission: Send + Sync + 'static {
    /// Its name in tokens.
    const NAME: &'static str;
}

/// [`MANAGE_TOOLS`].
#[derive(Debug)]
pub struct ManageTools;
impl Permission for ManageTools {
    const NAME: &'static str = MANAGE_TOOLS;
}

/// [`RUN_SIMULATIONS`].
#[derive(Debug)]
pub struct RunSimulations;
impl Permission for RunSimulations {
    const NAME: &'static str = RUN_SIMULATIONS;
}

/// A principal holding permission `P`; extracting it answers 401 without a
/// valid token and 403 without the permission.
#[derive(Debug)]
pub struct Authorized<P> {
    /// The caller.
    pub principal: Principal,
    _permission: PhantomData<P>,
}

/// The bearer token of a request, if it has one.
pub(crate) fn bearer(parts: &Parts) -> Result<&str, ApiError> {
    let value = parts
        .headers
        .get(AUTHORIZATION)
        .ok_or_else(|| ApiError::Unauthenticated {
            reason: "no Authorization header".into(),
        })?;
    let text = value.to_str().map_err(|_| ApiError::Unauthenticated {
        reason: "the Authorization header is not text".into(),
    })?;
    let (scheme, token) = text.split_once(' ').ok_or(ApiError::Unauthenticated {
        reason: "the Authorization header is not `Bearer <token>`".into(),
    })?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(ApiError::Unauthenticated {
            reason: "the Authorization header is not `Bearer <token>`".into(),
        });
    }
    Ok(token.trim())
}

// Generic over the state so that auth sits below it (the state holds an
// `AuthConfig`, and says so with `AsRef`).
impl<P: Permission, S: AsRef<AuthConfig> + Send + Sync> FromRequestParts<S> for Authorized<P> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let principal = state.as_ref().verify(bearer(parts)?)?;
        if !principal.has(P::NAME) {
            return Err(ApiError::Forbidden {
                permission: P::NAME,
            });
        }
        Ok(Self {
            principal,
            _permission: PhantomData,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_names_map_to_stable_ids_and_uuids_stay_themselves() {
        assert_eq!(tenant_id("acme"), tenant_id("acme"));
        assert_ne!(tenant_id("acme"), tenant_id("globex"));
        let id = Uuid::new_v4();
        assert_eq!(tenant_id(&id.to_string()), TenantId(id));
    }

    #[test]
    fn short_secrets_are_refused() {
        assert!(matches!(
            AuthConfig::hs256(b"short"),
            Err(AuthConfigError::ShortSecret(5))
        ));
    }
}
