//! The platform manifest (version 1) of docs/spec.md §9 and its normalization to
//! operation contracts.
//!
//! A manifest is read by walking the raw JSON, so that one pass reports
//! **every** problem, each with a JSON pointer into the manifest, instead of
//! stopping at the first.

mod model;
mod normalize;
mod reader;

pub use model::{
    MANIFEST_VERSION, MAX_RUNTIME_NAME_LEN, Operation, Output, Parameter, ParameterOption,
    ParameterType, PlatformManifest,
};
pub use normalize::{input_schema, normalize_operation};

use crate::problems::{NormalizeCode, NormalizeProblems};
use crate::salesforce::envelope_schema;
use serde_json::Value;
use toolmock_contract::{OperationContract, OperationIdentity, OperationSource, Problem};

/// Whether `name` is a valid expanded runtime name: `^[A-Za-z0-9_-]{1,64}$`.
pub fn is_valid_runtime_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_RUNTIME_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The expanded runtime name of a platform operation: `{tool}__{operation}`.
pub fn runtime_name(tool: &str, operation: &str) -> String {
    format!("{tool}__{operation}")
}

impl PlatformManifest {
    /// Reads a manifest from JSON bytes; every problem is reported.
    pub fn from_json_slice(bytes: &[u8]) -> Result<Self, NormalizeProblems> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| {
            NormalizeProblems::from(Problem::new(
                NormalizeCode::InvalidJson,
                "",
                format!("the manifest is not valid JSON: {e}"),
            ))
        })?;
        Self::from_value(&value)
    }

    /// Reads a manifest from a JSON value; every problem is reported, each
    /// with a JSON pointer into the manifest.
    pub fn from_value(value: &Value) -> Result<Self, NormalizeProblems> {
        reader::read(value)
    }

    /// [`PlatformManifest::contracts`], consuming the manifest (no schema is copied).
    pub fn into_contracts(self) -> Vec<OperationContract> {
        let tool = self.tool;
        self.operations
            .into_iter()
            .map(|op| {
                let input_schema = input_schema(&op);
                OperationContract {
                    operation: OperationIdentity {
                        source: OperationSource::Platform,
                        name: runtime_name(&tool, &op.name),
                    },
                    description: op.description.unwrap_or_default(),
                    input_schema,
                    output_schema: match op.output {
                        Output::Schema(schema) => schema,
                        Output::Salesforce {
                            status,
                            data_schema,
                        } => envelope_schema(status, data_schema),
                    },
                }
            })
            .collect()
    }

    /// The operation contracts, one per operation, in manifest order (docs/spec.md §9).
    pub fn contracts(&self) -> Vec<OperationContract> {
        self.operations
            .iter()
            .map(|op| normalize_operation(&self.tool, op))
            .collect()
    }
}

/// Reads and normalizes a manifest in one step.
pub fn normalize_manifest(value: &Value) -> Result<Vec<OperationContract>, NormalizeProblems> {
    PlatformManifest::from_value(value).map(PlatformManifest::into_contracts)
}
