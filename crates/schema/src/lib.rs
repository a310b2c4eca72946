//! Schema normalization for toolmock: from what a tool declares to operation
//! contracts, and from contracts to checked draft mocks.
//!
//! - [`PlatformManifest`] reads a platform manifest (version 1, docs/spec.md §9),
//!   reporting **every** problem with a JSON pointer into it
//!   ([`NormalizeProblems`]), and normalizes each operation to an
//!   [`OperationContract`](toolmock_contract::OperationContract) named
//!   `{tool}__{operation}`.
//! - [`envelope_schema`] builds the Salesforce adapter's strict
//!   `{"status", "data"}` envelope.
//! - [`ToolsPage`] reads one MCP `tools/list` page and [`normalize_pages`]
//!   applies the output-schema fallback (discovered, else the library tool's
//!   own, else `needs_output_schema`).
//! - [`generate()`] derives a draft [`MockDefinition`](toolmock_contract::MockDefinition)
//!   that passes the check of docs/spec.md §7, or lists why the contract needs an
//!   authored mock ([`DraftProblems`]).
//! - [`diff()`] says what changed between two contracts and whether the hash did.
//!
//! This crate is pure: it does no I/O, reads no clock, spawns nothing and is
//! not async. Talking to MCP servers (and following `nextCursor`) is the job
//! of `toolmock-discovery`, which hands the pages it reads to [`normalize_pages`].
//!
//! Every problem is a [`Problem`](toolmock_contract::Problem) with a code of
//! [`NormalizeCode`] or [`DraftCode`]; every item has one path, at the crate root.
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
//! # Ok::<(), toolmock_schema::NormalizeProblems>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod changes;
mod draft;
mod manifest;
mod mcp;
mod pointer;
mod problems;
mod salesforce;

pub use changes::{ContractDiff, SchemaChange, diff, diff_values};
pub use draft::{
    DRAFT_VARIANT, DraftCode, DraftProblems, MAX_DEPTH, MAX_SIZE, generate, generate_compiled,
};
pub use manifest::{
    MANIFEST_VERSION, MAX_RUNTIME_NAME_LEN, Operation, Output, Parameter, ParameterOption,
    ParameterType, PlatformManifest, input_schema, is_valid_runtime_name, normalize_manifest,
    normalize_operation, runtime_name,
};
pub use mcp::{
    ContractEntry, DiscoveredOperation, DiscoveryStatus, McpTool, OutputSchemaSource, ToolHints,
    ToolsPage, contract_value, normalize_pages, normalize_tools,
};
pub use problems::{NormalizeCode, NormalizeProblems};
pub use salesforce::{SalesforceStatus, envelope, envelope_schema};

#[cfg(test)]
mod error_codes {
    #[test]
    fn every_code_is_documented_and_every_documented_code_exists() {
        let doc = include_str!("../../../docs/error-codes.md");
        let mut codes = toolmock_contract::code_strings::<crate::NormalizeCode>();
        codes.extend(toolmock_contract::code_strings::<crate::DraftCode>());
        toolmock_contract::check_documented_codes(doc, "toolmock-schema", &codes)
            .unwrap_or_else(|e| panic!("{e}"));
    }
}
