//! Reading an answer body from a server toolmock does not control, up to a
//! limit and no further: a body announced longer, or streamed (chunked)
//! past the limit, is refused as soon as it is seen to be, so no server can
//! exhaust the process's memory (`response_too_large`).

/// The default limit of every body read from a real tool: 16 MiB, as
/// rmcp's own limit on one MCP answer (a JSON response or an SSE event).
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 16 * 1024 * 1024;

/// Why a body could not be read whole.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// It is longer than the limit (code `response_too_large`).
    #[error("response_too_large: the answer exceeded the {limit_bytes}-byte limit")]
    TooLarge {
        /// The limit, in bytes.
        limit_bytes: u64,
    },
    /// Reading it failed (the connection broke, the time-out ran out).
    #[error(transparent)]
    Read(#[from] reqwest::Error),
}

impl BodyError {
    /// A stable code.
    pub fn code(&self) -> &'static str {
        match self {
            BodyError::TooLarge { .. } => "response_too_large",
            BodyError::Read(_) => "response_unreadable",
        }
    }
}

/// The whole body of `response`, if it is at most `limit` bytes.
pub async fn read_body(mut response: reqwest::Response, limit: u64) -> Result<Vec<u8>, BodyError> {
    let too_large = BodyError::TooLarge { limit_bytes: limit };
    if response.content_length().is_some_and(|n| n > limit) {
        return Err(too_large);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if u64::try_from(body.len() + chunk.len()).map_or(true, |n| n > limit) {
            return Err(too_large);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
