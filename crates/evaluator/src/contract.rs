//! A contract's two schemas, compiled once and reused for every call.

use crate::complexity::{self, MAX_SCHEMA_SIZE};
use crate::error::{CallError, Violation};
use serde_json::Value;
use toolmock_contract::{ContractError, ContractHash, OperationContract, problem_codes};

/// Why a contract's schemas could not be compiled.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// The contract itself could not be hashed.
    #[error(transparent)]
    Contract(#[from] ContractError),
    /// A schema is not a valid JSON Schema, names an unknown draft, or has a
    /// `$ref` that cannot be resolved inside the document (nothing is ever
    /// fetched from the network or disk).
    #[error("{member} is not a usable JSON Schema: {message}")]
    InvalidSchema {
        /// `input_schema` or `output_schema`.
        member: &'static str,
        /// The validator's explanation.
        message: String,
    },
    /// A schema whose expanded size (every subschema once per way it is
    /// reached through `$ref`, `anyOf`, `oneOf`, `allOf`, …) is past
    /// [`MAX_SCHEMA_SIZE`]: validating an invalid value against it could take
    /// exponential time. Refused the same way every time, before any call.
    #[error(
        "{member} is too complex to validate in bounded time: the subschema at {path} expands to more than {MAX_SCHEMA_SIZE} subschemas (counted {size} before stopping)"
    )]
    TooComplex {
        /// `input_schema` or `output_schema`.
        member: &'static str,
        /// JSON pointer, into that schema, of the deepest subschema past the limit.
        path: String,
        /// The count when measuring stopped.
        size: u64,
    },
}

problem_codes! {
    /// The code of [`SchemaError::InvalidSchema`] (a [`SchemaError::Contract`]
    /// keeps its contract code).
    pub enum SchemaCode {
        /// A contract schema does not compile as JSON Schema (or has a `$ref`
        /// that cannot be resolved inside the document).
        InvalidSchema => "invalid_schema",
        /// A contract schema expands to more subschemas than `MAX_SCHEMA_SIZE`.
        SchemaTooComplex => "schema_too_complex",
    }
}

impl SchemaError {
    /// A stable, machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            SchemaError::Contract(e) => e.code(),
            SchemaError::InvalidSchema { .. } => SchemaCode::InvalidSchema.as_str(),
            SchemaError::TooComplex { .. } => SchemaCode::SchemaTooComplex.as_str(),
        }
    }

    /// The JSON pointer at fault, when there is one.
    pub fn path(&self) -> Option<&str> {
        match self {
            SchemaError::Contract(e) => e.path(),
            SchemaError::InvalidSchema { member, .. } => Some(match *member {
                "input_schema" => "/input_schema",
                _ => "/output_schema",
            }),
            // The pointer into the schema is in the message; the contract
            // path is the member's.
            SchemaError::TooComplex { member, .. } => Some(match *member {
                "input_schema" => "/input_schema",
                _ => "/output_schema",
            }),
        }
    }
}

/// An operation contract with both schemas compiled: immutable, `Send + Sync`,
/// built once per contract hash and shared.
#[derive(Debug)]
pub struct CompiledContract {
    contract: OperationContract,
    hash: ContractHash,
    input: jsonschema::Validator,
    output: jsonschema::Validator,
}

/// Compiles one schema: formats asserted, the linear-time regex engine (a
/// hostile `pattern` cannot hang a call), no retrieval of remote documents.
pub fn compile_schema(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::options()
        .should_validate_formats(true)
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .build(schema)
        .map_err(|e| e.to_string())
}

impl CompiledContract {
    /// Compiles both schemas of a contract.
    pub fn new(contract: OperationContract) -> Result<Self, SchemaError> {
        let hash = contract.hash()?;
        for (member, schema) in [
            ("input_schema", &contract.input_schema),
            ("output_schema", &contract.output_schema),
        ] {
            complexity::measure(schema, MAX_SCHEMA_SIZE).map_err(|e| SchemaError::TooComplex {
                member,
                path: e.path,
                size: e.size,
            })?;
        }
        let input = compile_schema(&contract.input_schema).map_err(|message| {
            SchemaError::InvalidSchema {
                member: "input_schema",
                message,
            }
        })?;
        let output = compile_schema(&contract.output_schema).map_err(|message| {
            SchemaError::InvalidSchema {
                member: "output_schema",
                message,
            }
        })?;
        Ok(Self {
            contract,
            hash,
            input,
            output,
        })
    }

    /// The contract.
    pub fn contract(&self) -> &OperationContract {
        &self.contract
    }

    /// Its hash.
    pub fn hash(&self) -> &ContractHash {
        &self.hash
    }

    /// Every violation of the input schema (empty when valid).
    pub fn input_violations(&self, input: &Value) -> Vec<Violation> {
        violations(&self.input, input)
    }

    /// Every violation of the output schema (empty when valid).
    pub fn output_violations(&self, result: &Value) -> Vec<Violation> {
        violations(&self.output, result)
    }

    /// `Err(InvalidArguments)` listing every violation when the input fails its schema.
    pub fn validate_input(&self, input: &Value) -> Result<(), CallError> {
        crate::nul::refuse_nul_arguments(input)?;
        if self.input.is_valid(input) {
            return Ok(());
        }
        Err(CallError::InvalidArguments {
            violations: self.input_violations(input),
        })
    }

    /// `Err(OutputSchemaViolation)` listing every violation when a result fails its schema.
    pub fn validate_output(&self, result: &Value) -> Result<(), CallError> {
        if self.output.is_valid(result) {
            return Ok(());
        }
        Err(CallError::OutputSchemaViolation {
            violations: self.output_violations(result),
        })
    }
}

fn violations(validator: &jsonschema::Validator, instance: &Value) -> Vec<Violation> {
    validator
        .iter_errors(instance)
        .map(|e| Violation {
            path: e.instance_path().to_string(),
            schema_path: e.schema_path().to_string(),
            message: e.to_string(),
        })
        .collect()
}
