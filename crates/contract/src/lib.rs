//! Operation contracts, the version-1 mock definition model, and canonical hashing.
//!
//! An [`OperationContract`] is what an agent sees of one callable operation: its
//! [`OperationIdentity`], its description and its input and output JSON Schemas.
//! Its [`ContractHash`] is the lowercase hex SHA-256 of the RFC 8785 (JCS)
//! canonical form of exactly those four members, so key order and whitespace
//! never change it and any change of meaning does. A saved mock keeps the hash
//! it was saved against; comparing it with the current hash is how a stale mock
//! is found.
//!
//! This crate is pure data: it does no I/O, reads no clock and evaluates
//! nothing. The definition *model* lives here ([`MockDefinition`]); checking and
//! evaluating a definition is the job of `toolmock-evaluator`.
//!
//! ```
//! use toolmock_contract::OperationContract;
//!
//! let contract = OperationContract::from_json_str(r#"{
//!     "operation": {"source": "mcp", "name": "lookup_patient"},
//!     "description": "Find a patient by member id",
//!     "input_schema": {"type": "object"},
//!     "output_schema": {"type": "object"}
//! }"#)?;
//! let hash = contract.hash()?;
//! assert_eq!(hash.as_str().len(), 64);
//!
//! // Layout never matters; meaning always does.
//! let same = OperationContract::from_json_str(r#"{"output_schema":{"type":"object"},
//!     "input_schema":{"type":"object"},"description":"Find a patient by member id",
//!     "operation":{"name":"lookup_patient","source":"mcp"}}"#)?;
//! assert_eq!(same.hash()?, hash);
//! # Ok::<(), toolmock_contract::ContractError>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod canonical;
mod definition;
mod duplicates;
pub mod pointer;
#[macro_use]
mod problem;

pub use canonical::{
    ContractHash, DefinitionHash, InvalidHash, canonical_json, check_exact_numbers,
};
pub use definition::{
    Condition, ConditionOp, ConditionSource, Example, MockDefinition, Rule, SCHEMA_VERSION, Variant,
};
pub use duplicates::duplicate_keys;
pub use problem::{
    DocumentedCode, Problem, ProblemCode, Problems, check_documented_classes,
    check_documented_codes, code_strings, documented_codes, documented_rows, json_kind,
};

// For `problem_codes!` in other crates: they need not name serde themselves.
#[doc(hidden)]
pub use serde as __serde;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// Where an operation comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OperationSource {
    /// A platform operation, named by its expanded runtime name `{tool}__{operation}`.
    Platform,
    /// A tool discovered from an MCP server.
    Mcp,
    /// A custom tool described by hand.
    Custom,
}

impl OperationSource {
    /// The wire name: `platform`, `mcp` or `custom`.
    pub fn as_str(self) -> &'static str {
        match self {
            OperationSource::Platform => "platform",
            OperationSource::Mcp => "mcp",
            OperationSource::Custom => "custom",
        }
    }
}

impl fmt::Display for OperationSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The identity of one operation: its source and its runtime name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperationIdentity {
    /// Where the operation comes from.
    pub source: OperationSource,
    /// The runtime name the agent calls.
    pub name: String,
}

/// What the agent sees of one operation; the unit that is hashed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperationContract {
    /// Source and runtime name.
    pub operation: OperationIdentity,
    /// Human description shown to the agent; a missing one is the empty string.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the call's arguments.
    pub input_schema: Value,
    /// JSON Schema of the operation's result.
    pub output_schema: Value,
}

/// Why a contract could not be read or hashed.
#[derive(Debug, thiserror::Error)]
pub enum ContractError {
    /// The bytes are not JSON (or not UTF-8).
    #[error("contract is not valid JSON: {0}")]
    InvalidJson(#[source] serde_json::Error),
    /// The JSON does not have the contract's shape (a missing or unknown member, a wrong type).
    #[error("contract has the wrong shape: {0}")]
    WrongShape(#[source] serde_json::Error),
    /// A schema is neither an object nor a boolean.
    #[error("{member} must be a JSON Schema (an object or a boolean)")]
    SchemaNotAnObject {
        /// `input_schema` or `output_schema`.
        member: &'static str,
    },
    /// An integer no double holds exactly: hashing it would not be reproducible.
    #[error(
        "the integer {number} cannot be represented exactly by a double, so its canonical form would be another number"
    )]
    InexactNumber {
        /// JSON pointer of the number.
        path: String,
        /// The number as written.
        number: String,
    },
    /// An object repeats a key, so readers could disagree on its value.
    #[error("the key appears more than once in its object")]
    DuplicateKey {
        /// JSON pointer of the repeated key.
        path: String,
    },
    /// Canonical serialization failed.
    #[error("contract could not be canonicalized: {0}")]
    Canonicalization(#[source] serde_json::Error),
}

problem_codes! {
    /// The codes of [`ContractError`].
    pub enum ContractCode {
        /// The bytes are not JSON (or not UTF-8).
        InvalidJson => "invalid_json",
        /// The JSON does not have the contract's shape.
        WrongShape => "wrong_shape",
        /// `input_schema` or `output_schema` is neither an object nor a boolean.
        SchemaNotAnObject => "schema_not_an_object",
        /// An integer no double holds exactly.
        InexactNumber => "inexact_number",
        /// An object repeats a key.
        DuplicateKey => "duplicate_key",
        /// Canonical serialization failed.
        CanonicalizationFailed => "canonicalization_failed",
    }
}

impl From<&ContractError> for ContractCode {
    fn from(error: &ContractError) -> Self {
        match error {
            ContractError::InvalidJson(_) => ContractCode::InvalidJson,
            ContractError::WrongShape(_) => ContractCode::WrongShape,
            ContractError::SchemaNotAnObject { .. } => ContractCode::SchemaNotAnObject,
            ContractError::InexactNumber { .. } => ContractCode::InexactNumber,
            ContractError::DuplicateKey { .. } => ContractCode::DuplicateKey,
            ContractError::Canonicalization(_) => ContractCode::CanonicalizationFailed,
        }
    }
}

impl ContractError {
    /// A stable, machine-readable code for this error.
    pub fn code(&self) -> &'static str {
        ContractCode::from(self).as_str()
    }

    /// The JSON pointer at fault, when the error is about one place.
    pub fn path(&self) -> Option<&str> {
        match self {
            ContractError::InexactNumber { path, .. } | ContractError::DuplicateKey { path } => {
                Some(path)
            }
            ContractError::SchemaNotAnObject { member } => Some(match *member {
                "input_schema" => "/input_schema",
                _ => "/output_schema",
            }),
            _ => None,
        }
    }
}

impl OperationContract {
    /// Reads a contract from JSON text. See [`OperationContract::from_value`].
    pub fn from_json_str(text: &str) -> Result<Self, ContractError> {
        Self::from_json_slice(text.as_bytes())
    }

    /// Reads a contract from JSON bytes. See [`OperationContract::from_value`].
    pub fn from_json_slice(bytes: &[u8]) -> Result<Self, ContractError> {
        let value: Value = serde_json::from_slice(bytes).map_err(ContractError::InvalidJson)?;
        canonical::check_integer_literals(bytes)?;
        if let Some(path) = duplicate_keys(bytes).into_iter().next() {
            return Err(ContractError::DuplicateKey { path });
        }
        Self::from_value(value)
    }

    /// Reads a contract from a JSON value, refusing unknown members, schemas
    /// that are not objects or booleans, and integers beyond ±2^53 (which a
    /// double cannot hold, so their canonical form would not be reproducible).
    pub fn from_value(value: Value) -> Result<Self, ContractError> {
        check_exact_numbers(&value)?;
        let contract: OperationContract =
            serde_json::from_value(value).map_err(ContractError::WrongShape)?;
        for (member, schema) in [
            ("input_schema", &contract.input_schema),
            ("output_schema", &contract.output_schema),
        ] {
            if !(schema.is_object() || schema.is_boolean()) {
                return Err(ContractError::SchemaNotAnObject { member });
            }
        }
        Ok(contract)
    }

    /// The contract hash of docs/spec.md §2.
    pub fn hash(&self) -> Result<ContractHash, ContractError> {
        ContractHash::of(self)
    }
}

#[cfg(test)]
mod error_codes {
    #[test]
    fn every_code_is_documented_and_every_documented_code_exists() {
        let doc = include_str!("../../../docs/error-codes.md");
        let codes = crate::code_strings::<crate::ContractCode>();
        crate::check_documented_codes(doc, "toolmock-contract", &codes)
            .unwrap_or_else(|e| panic!("{e}"));
    }
}
