//! What kind of failure a discovery met, without anything the other side
//! sent: a URL may point at a service that is not an MCP server at all (an
//! internal admin page, a metadata endpoint), and what it answered must never
//! be shown to whoever asked for the discovery. [`FailureClass`] names the
//! class — refused, timed out, an HTTP status, not MCP — and nothing more.

use rmcp::service::ClientInitializeError;
use rmcp::transport::streamable_http_client::StreamableHttpError;
use std::fmt;

/// The class of a discovery's failure; its `Display` never holds a byte the
/// server sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureClass {
    /// Nothing accepted the connection.
    Refused,
    /// The connection or the answer took too long.
    TimedOut,
    /// The address could not be reached (name resolution, TLS, a reset).
    Unreachable,
    /// The server answered with this HTTP status instead of MCP.
    HttpStatus(u16),
    /// The server answered, but not as an MCP server (another content type,
    /// a body that is not JSON-RPC, a closed stream).
    NotMcp,
    /// The server speaks JSON-RPC and refused the MCP request with an error.
    McpError,
    /// The tools it listed are not valid tools.
    InvalidTools,
    /// An answer was longer than the client's limit (code
    /// `response_too_large`); nothing past the limit was read.
    TooLarge {
        /// The limit, in bytes.
        limit_bytes: usize,
    },
    /// Something on this side failed (the process, the runtime, a limit).
    Local,
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FailureClass::Refused => f.write_str("the connection was refused"),
            FailureClass::TimedOut => f.write_str("it timed out"),
            FailureClass::Unreachable => f.write_str("the server could not be reached"),
            FailureClass::HttpStatus(status) => write!(f, "it answered HTTP status {status}"),
            FailureClass::NotMcp => f.write_str("it did not answer as an MCP server"),
            FailureClass::McpError => f.write_str("it refused the MCP request with an error"),
            FailureClass::InvalidTools => f.write_str("the tools it listed are not valid"),
            FailureClass::TooLarge { limit_bytes } => write!(
                f,
                "response_too_large: the answer exceeded the {limit_bytes}-byte limit"
            ),
            FailureClass::Local => f.write_str("the discovery could not run"),
        }
    }
}

/// The class of a failed MCP handshake.
pub(crate) fn of_handshake(error: &ClientInitializeError) -> FailureClass {
    match error {
        ClientInitializeError::TransportError { error, .. } => of_error(error.error.as_ref()),
        ClientInitializeError::JsonRpcError(_) => FailureClass::McpError,
        ClientInitializeError::ConnectionClosed(_) => FailureClass::NotMcp,
        _ => FailureClass::NotMcp,
    }
}

/// The class of a failed request after the handshake (`tools/list`).
pub(crate) fn of_request(error: &rmcp::ServiceError) -> FailureClass {
    match error {
        rmcp::ServiceError::McpError(_) => FailureClass::McpError,
        rmcp::ServiceError::Timeout { .. } => FailureClass::TimedOut,
        rmcp::ServiceError::TransportSend(e) => of_error(e.error.as_ref()),
        _ => FailureClass::NotMcp,
    }
}

/// Walks an error's chain for the first cause that tells the class.
fn of_error(error: &(dyn std::error::Error + 'static)) -> FailureClass {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if let Some(class) = known(e) {
            return class;
        }
        cause = e.source();
    }
    FailureClass::Unreachable
}

fn known(error: &(dyn std::error::Error + 'static)) -> Option<FailureClass> {
    if let Some(http) = error.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        return match http {
            StreamableHttpError::HttpStatus(status) => {
                Some(FailureClass::HttpStatus(status.status))
            }
            // rmcp writes "HTTP <status>: <body>"; only the status is kept.
            StreamableHttpError::UnexpectedServerResponse(text) => {
                Some(status_prefix(text).map_or(FailureClass::NotMcp, FailureClass::HttpStatus))
            }
            StreamableHttpError::AuthRequired(_) => Some(FailureClass::HttpStatus(401)),
            StreamableHttpError::InsufficientScope(_) => Some(FailureClass::HttpStatus(403)),
            StreamableHttpError::SessionExpired => Some(FailureClass::HttpStatus(404)),
            StreamableHttpError::ResponseBodyTooLarge { max_size } => {
                Some(FailureClass::TooLarge {
                    limit_bytes: *max_size,
                })
            }
            // Neither variant names its cause as `source`: descend by hand.
            StreamableHttpError::Client(e) => Some(of_error(e)),
            StreamableHttpError::Io(e) => Some(of_error(e)),
            StreamableHttpError::ControlRequestTimeout
            | StreamableHttpError::SessionRecoveryTimeout => Some(FailureClass::TimedOut),
            _ => Some(FailureClass::NotMcp),
        };
    }
    if let Some(e) = error.downcast_ref::<reqwest::Error>() {
        if e.is_timeout() {
            return Some(FailureClass::TimedOut);
        }
        if let Some(status) = e.status() {
            return Some(FailureClass::HttpStatus(status.as_u16()));
        }
        if e.is_decode() || e.is_body() {
            return Some(FailureClass::NotMcp);
        }
        return None;
    }
    if let Some(e) = error.downcast_ref::<std::io::Error>() {
        return match e.kind() {
            std::io::ErrorKind::ConnectionRefused => Some(FailureClass::Refused),
            std::io::ErrorKind::TimedOut => Some(FailureClass::TimedOut),
            _ => None,
        };
    }
    None
}

/// `HTTP 403 Forbidden: …` → 403.
fn status_prefix(text: &str) -> Option<u16> {
    let digits = text.strip_prefix("HTTP ")?.get(..3)?;
    digits
        .bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| digits.parse().ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_status_of_an_unexpected_answer_is_kept() {
        assert_eq!(
            status_prefix("HTTP 403 Forbidden: INTERNAL-SECRET=1"),
            Some(403)
        );
        assert_eq!(status_prefix("HTTP 4x3: x"), None);
        assert_eq!(status_prefix("something else"), None);
        let class = FailureClass::HttpStatus(403).to_string();
        assert!(!class.contains("SECRET"), "{class}");
    }
}
