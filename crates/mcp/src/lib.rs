//! toolmock as an MCP server: a simulation's pinned mocks served as MCP
//! tools, over stdio or streamable HTTP, on the official `rmcp` server.
//!
//! Each served tool is one of the agent's directly callable operations,
//! listed with exactly its pinned contract (description, `inputSchema`,
//! `outputSchema`), or one of its workflows. Every `tools/call` goes
//! through the runtime's `Dispatcher::call` (a workflow's tool nodes too)
//! for the attempt the request belongs to — found by the URL path, the
//! process or the bearer capability ([`Attempts`]), never by
//! `Mcp-Session-Id`. A success answers the rendered result as
//! `structuredContent` plus the same JSON as one text block; a tool input
//! error answers a tool result with `isError: true` (its code, message and
//! path); a harness error, already recorded, answers a JSON-RPC error.
//!
//! [`record`] is the other direction: a recording proxy in front of a real
//! MCP server (`toolmock record`), and the emission of checked mock
//! definitions from what it recorded (`toolmock record emit`).
//!
//! [`Embedded`] is `toolmock serve`: one case of a simulation document,
//! each attempt started when first asked for and judged when it ends, as
//! `toolmock run` judges. It is not a store and speaks no SQL: the API
//! serves its own attempts with [`ToolServer`] over PostgreSQL.
//!
//! ```
//! use serde_json::json;
//! use std::sync::Arc;
//! use toolmock_mcp::{Embedded, Limits};
//! use toolmock_runtime::backend::Catalog;
//! use toolmock_runtime::{Dispatcher, MemoryStore};
//! use toolmock_simulation::{Files, load_value};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let document = json!({
//!     "simulation_version": 1, "name": "books",
//!     "tools": [{"name": "calendar", "from": "custom",
//!         "operations": [{"name": "book", "description": "Book a day",
//!             "input_schema": {"type": "object", "required": ["day"]},
//!             "output_schema": {"type": "object", "required": ["reference"]}}],
//!         "definitions": {"book": {"schema_version": 1, "default_variant": "ok",
//!             "variants": {"ok": {"result": {"reference": "TEST-742"}}},
//!             "examples": [{"variant": "ok", "input": {"day": "mon"}, "expected": {"reference": "TEST-742"}}]}}}],
//!     "agent": {"name": "receptionist", "tools": ["calendar"]},
//!     "cases": [{"name": "books", "driver": {"type": "external"},
//!         "expect": {"trajectory": [{"kind": "used", "call": {"tool": "calendar"}}]}}]
//! });
//! let loaded = load_value(&document, "books.json", &Files::InlineOnly)
//!     .map_err(|p| format!("{p:?}"))?;
//! let store = MemoryStore::new();
//! let tenant = store.create_tenant("serve").await?;
//! let dispatcher = Arc::new(Dispatcher::new(store));
//! let served = Embedded::prepare(dispatcher, tenant, Arc::new(loaded), (None, None), Limits::default()).await?;
//! assert_eq!(served.tools().list()[0].name, "book");
//! // What an MCP client's `tools/call` of attempt 1 does:
//! let server = served.server(toolmock_mcp::ProcessAttempt::new(served.clone(), 1));
//! let answer = server.call(None, "book", json!({"day": "mon"})).await?;
//! assert_eq!(answer.structured_content, Some(json!({"reference": "TEST-742"})));
//! let refused = server.call(None, "book", json!({})).await?;
//! assert_eq!(refused.is_error, Some(true));
//! let result = served.finish(1).await?;
//! assert_eq!(result.outcome.as_str(), "passed");
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod delivery;
mod embedded;
mod error;
mod handler;
pub mod record;
mod tools;
mod transport;

pub use embedded::{
    AttemptNumber, Embedded, Limits, MAX_ATTEMPTS, PathAttempts, ProcessAttempt, Ticket,
};
pub use error::{McpCode, ServeError};
pub use handler::{
    Attempts, Entered, FixedAttempt, ToolServer, domain_error, harness_error, server_error,
    success, tool_input_error,
};
pub use rmcp::model::{CallToolResult, ErrorData};
pub use tokio_util::sync::CancellationToken;
pub use tools::{ASK_USER, ServedTools, Target};
pub use transport::{Mcp, router, serve_stdio, stateless_service};

#[cfg(test)]
mod error_codes {
    #[test]
    fn every_code_is_documented_and_every_documented_code_exists() {
        let doc = include_str!("../../../docs/error-codes.md");
        let mut codes = toolmock_contract::code_strings::<crate::McpCode>();
        codes.extend(toolmock_contract::code_strings::<crate::record::RecordCode>());
        toolmock_contract::check_documented_codes(doc, "toolmock-mcp", &codes)
            .unwrap_or_else(|e| panic!("{e}"));
    }
}
