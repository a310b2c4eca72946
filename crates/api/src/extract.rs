//! Extractors whose every failure is an [`ApiError`]: JSON bodies (malformed
//! → 400 with line and column, over the limit → 413, unknown or wrong members
//! → 422), path and query parameters (400).

use crate::AppState;
use crate::error::ApiError;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

/// A JSON body, read under the configured body limit. No string in it may
/// hold U+0000 (PostgreSQL's text cannot store it): 422 `nul_character`.
#[derive(Debug)]
pub(crate) struct ApiJson<T>(pub T);

/// A JSON body taken as it is, U+0000 included: the dispatcher endpoint's
/// arguments, where the runtime answers it as a tool input error (docs/spec.md §8).
#[derive(Debug)]
pub(crate) struct ApiJsonVerbatim<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let bytes = body_bytes(request, state).await?;
        let value = parse(&bytes)?;
        // A NUL can only arrive escaped; the exact search runs only then.
        if bytes.windows(6).any(|w| w.eq_ignore_ascii_case(b"\\u0000"))
            && let Ok(document) = serde_json::from_slice::<serde_json::Value>(&bytes)
            && let Some(path) = nul_path(&document, String::new())
        {
            return Err(ApiError::NulCharacter { path });
        }
        Ok(ApiJson(value))
    }
}

impl<T: DeserializeOwned> FromRequest<AppState> for ApiJsonVerbatim<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let bytes = body_bytes(request, state).await?;
        parse(&bytes).map(ApiJsonVerbatim)
    }
}

/// The JSON pointer of the first key or string holding U+0000.
fn nul_path(value: &serde_json::Value, at: String) -> Option<String> {
    use serde_json::Value;
    match value {
        Value::String(s) => s.contains('\0').then_some(at),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| nul_path(v, format!("{at}/{i}"))),
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            let here = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
            if k.contains('\0') {
                Some(here)
            } else {
                nul_path(v, here)
            }
        }),
        _ => None,
    }
}

async fn body_bytes(request: Request, state: &AppState) -> Result<Bytes, ApiError> {
    let json = request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| {
            let v = v.trim().to_ascii_lowercase();
            v == "application/json" || (v.starts_with("application/") && v.ends_with("+json"))
        })
        .unwrap_or(false);
    if !json {
        return Err(ApiError::UnsupportedMediaType);
    }
    Bytes::from_request(request, state)
        .await
        .map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::BodyTooLarge {
                    limit: state.config().body_limit,
                }
            } else {
                ApiError::InvalidBody {
                    message: rejection.body_text(),
                }
            }
        })
}

/// Parses a JSON body, classifying serde's error. Every body of the API is
/// a JSON object: serde would also read a struct from an array of its
/// fields in order (and a struct without fields from `[]`), which no
/// schema of the API allows, so any other JSON value is refused.
pub(crate) fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let parsed = serde_json::from_slice(bytes).map_err(classify)?;
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => Ok(parsed),
        _ => Err(ApiError::InvalidBody {
            message: "the body must be a JSON object".into(),
        }),
    }
}

/// serde's error as the API's: malformed JSON, an unknown field, or a body
/// that does not fit.
fn classify(e: serde_json::Error) -> ApiError {
    use serde_json::error::Category;
    match e.classify() {
        Category::Syntax | Category::Eof | Category::Io => ApiError::MalformedJson {
            line: e.line(),
            column: e.column(),
            message: strip_position(&e),
        },
        Category::Data => {
            let message = strip_position(&e);
            if message.starts_with("unknown field") || message.starts_with("unknown variant") {
                ApiError::UnknownField { message }
            } else {
                ApiError::InvalidBody { message }
            }
        }
    }
}

/// serde_json appends " at line L column C"; the body carries them as numbers.
fn strip_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

/// Path parameters.
#[derive(Debug)]
pub(crate) struct ApiPath<T>(pub T);

impl<T: DeserializeOwned + Send> FromRequestParts<AppState> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| ApiPath(p.0))
            .map_err(|e| ApiError::InvalidPathParameter {
                message: e.body_text(),
            })
    }
}

/// Query parameters.
#[derive(Debug)]
pub(crate) struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned + Send> FromRequestParts<AppState> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        // U+0000 cannot reach PostgreSQL (no text holds it): refuse it here,
        // percent-encoded or not, rather than as a database error.
        let query = parts.uri.query().unwrap_or_default();
        if query.contains('\0') || query.to_ascii_lowercase().contains("%00") {
            return Err(ApiError::InvalidQuery {
                message: "a query parameter holds U+0000".into(),
            });
        }
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| ApiQuery(q.0))
            .map_err(|e| ApiError::InvalidQuery {
                message: e.body_text(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)] // read only through Debug: the test is about the errors
    struct Body {
        name: String,
    }

    #[test]
    fn errors_are_classified_with_their_position() {
        match parse::<Body>(b"{\n  \"name\": }") {
            Err(ApiError::MalformedJson { line, column, .. }) => {
                assert_eq!((line, column), (2, 11))
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse::<Body>(br#"{"name": "a", "extra": 1}"#),
            Err(ApiError::UnknownField { .. })
        ));
        assert!(matches!(
            parse::<Body>(br#"{"name": 1}"#),
            Err(ApiError::InvalidBody { .. })
        ));
        assert!(matches!(
            parse::<Body>(b"{\"name\": \"a\""),
            Err(ApiError::MalformedJson { .. })
        ));
    }
}
