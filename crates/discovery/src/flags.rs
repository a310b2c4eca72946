//! The flag (with its environment fallback) that bounds every answer read
//! from a real tool — `toolmock run`, `serve`, `record` and `verify`,
//! `toolmock-worker` and `toolmock-api serve --workers` share it.

/// How much of a real tool's answer is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::Args)]
pub struct RealToolFlags {
    /// The longest answer read from a real tool, in bytes: an HTTP
    /// handler's body, an MCP server's answer over streamable HTTP (one JSON
    /// response or SSE event), an OpenAPI document, the server behind
    /// `toolmock record`. A longer one fails the call (response_too_large).
    /// Default 16 MiB.
    #[arg(long, value_name = "BYTES", env = "TOOLMOCK_REAL_MAX_RESPONSE_BYTES",
          default_value_t = crate::DEFAULT_MAX_RESPONSE_BYTES,
          value_parser = clap::value_parser!(u64).range(1024..=1 << 30))]
    pub real_max_response_bytes: u64,
}

impl Default for RealToolFlags {
    fn default() -> Self {
        RealToolFlags {
            real_max_response_bytes: crate::DEFAULT_MAX_RESPONSE_BYTES,
        }
    }
}
