//! Extractors whose every failure is an [`ApiError`]: JSON bodies (malformed
//! → 400 with line and column, over the limit → 413, unknown or wrong members
//! → 422) and path parameters (400).

use crate::AppState;
use crate::error::ApiError;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

/// A JSON body, read under the configured body limit.
#[derive(Debug)]
pub(crate) struct ApiJson<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
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
        let bytes = Bytes::from_request(request, state)
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
            })?;
        parse(&bytes).map(ApiJson)
    }
}

/// Parses a JSON body, classifying serde's error.
pub(crate) fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| {
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
    })
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
