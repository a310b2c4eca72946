//! Schema normalization for toolmock: from what a tool declares to operation
//! contracts, and from contracts to checked draft mocks.
//!
//! - [`PlatformManifest`] reads a platform manifest (version 1, SPEC §9),
//!   reporting **every** problem with a JSON pointer into it
//!   ([`ManifestErrors`]), and normalizes each operation to an
//!   [`OperationContract`](toolmock_contract::OperationContract) named
//!   `{tool}__{operation}`.
//! - [`salesforce`] holds the adapter's strict `{"status", "data"}` envelope.
//! - [`mcp`] reads `tools/list` pages and applies the output-schema fallback
//!   (discovered, else the library tool's own, else `needs_output_schema`).
//! - [`generate()`] derives a draft [`MockDefinition`](toolmock_contract::MockDefinition)
//!   that passes the check of SPEC §7, or says why the contract
//!   [`NeedsAuthoredMock`].
//! - [`diff()`] says what changed between two contracts and whether the hash did.
//!
//! This crate is pure: it does no I/O, reads no clock, spawns nothing and is
//! not async. Talking to MCP servers (and following `nextCursor`) is the job
//! of `toolmock-discovery`, which hands the pages it reads to [`mcp`].
//!
//! ```
//! use serde_json::json;
//! use toolmock_schema::{PlatformManifest, generate};
//!
//! let manifest = json!({
//!     "manifest_version": 1,
//!     "tool": "salesforce",
//!     "operations": [{
//!         "name": "create_record",
//!         "description": "Create a record",
//!         "required": ["object_type"],
//!         "parameters": [
//!             {"name": "object_type", "type": "string",
//!              "options": [{"value": "Case", "label": "Case"}, {"value": "Task", "label": "Task"}]},
//!             {"name": "fields", "type": "sfdc_field_mapping", "required": true}
//!         ],
//!         "output": {"envelope": "salesforce", "status": 201, "data_schema": {
//!             "type": "object", "required": ["id", "success"],
//!             "properties": {"id": {"type": "string"}, "success": {"type": "boolean"}}}}
//!     }]
//! });
//! let contracts = PlatformManifest::from_value(&manifest)?.contracts();
//! assert_eq!(contracts[0].operation.name, "salesforce__create_record");
//! assert_eq!(contracts[0].input_schema["required"], json!(["object_type", "fields"]));
//!
//! // A draft that passes the definition check, with the envelope's status.
//! let draft = generate(&contracts[0]).expect("the schemas can be satisfied");
//! assert_eq!(draft.examples[0].expected["status"], 201);
//! # Ok::<(), toolmock_schema::ManifestErrors>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod diff;
pub mod generate;
pub mod manifest;
pub mod mcp;
mod pointer;
pub mod salesforce;

pub use diff::{ContractDiff, SchemaChange, diff};
pub use generate::{DraftProblem, NeedsAuthoredMock, generate, generate_compiled};
pub use manifest::{
    ManifestError, ManifestErrors, Operation, Output, Parameter, ParameterOption, ParameterType,
    PlatformManifest, is_valid_runtime_name, normalize_manifest, runtime_name,
};
pub use mcp::{
    ContractEntry, DiscoveredOperation, McpError, McpErrors, McpTool, OperationStatus,
    OutputSchemaSource, ToolHints, ToolsPage, normalize_pages, normalize_tools,
};
pub use salesforce::{SalesforceStatus, envelope, envelope_schema};
