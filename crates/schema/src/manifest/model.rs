//! What a platform manifest (version 1) says, once read.

use crate::salesforce::{SalesforceStatus, envelope_schema};
use serde_json::{Map, Value, json};
use std::fmt;

/// The only `manifest_version` this crate reads.
pub const MANIFEST_VERSION: u64 = 1;

/// The longest expanded runtime name (`{tool}__{operation}`).
pub const MAX_RUNTIME_NAME_LEN: usize = 64;

/// A parameter's type (docs/spec.md §9: exactly these eight).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParameterType {
    /// `string` → `{"type": "string"}`.
    String,
    /// `number` → `{"type": "number"}`.
    Number,
    /// `integer` → `{"type": "integer"}`.
    Integer,
    /// `boolean` → `{"type": "boolean"}`.
    Boolean,
    /// `object` → `{"type": "object"}`.
    Object,
    /// `array` → `{"type": "array"}` (with `items` when given).
    Array,
    /// `sfdc_field_mapping` → `{"type": "object"}`: Salesforce field values by API name.
    SfdcFieldMapping,
    /// `async_options` → `{"type": "string"}`: the platform's async execution options.
    AsyncOptions,
}

impl ParameterType {
    /// Every type, in the order of docs/spec.md §9.
    pub const ALL: [ParameterType; 8] = [
        ParameterType::String,
        ParameterType::Number,
        ParameterType::Integer,
        ParameterType::Boolean,
        ParameterType::Object,
        ParameterType::Array,
        ParameterType::SfdcFieldMapping,
        ParameterType::AsyncOptions,
    ];

    /// The manifest's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ParameterType::String => "string",
            ParameterType::Number => "number",
            ParameterType::Integer => "integer",
            ParameterType::Boolean => "boolean",
            ParameterType::Object => "object",
            ParameterType::Array => "array",
            ParameterType::SfdcFieldMapping => "sfdc_field_mapping",
            ParameterType::AsyncOptions => "async_options",
        }
    }

    /// Reads the manifest's spelling.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == text)
    }

    /// The JSON Schema `type` the parameter normalizes to.
    pub fn json_type(self) -> &'static str {
        match self {
            ParameterType::String | ParameterType::AsyncOptions => "string",
            ParameterType::Number => "number",
            ParameterType::Integer => "integer",
            ParameterType::Boolean => "boolean",
            ParameterType::Object | ParameterType::SfdcFieldMapping => "object",
            ParameterType::Array => "array",
        }
    }

    /// Whether a JSON value is of this parameter's JSON type.
    pub fn accepts(self, value: &Value) -> bool {
        match self.json_type() {
            "string" => value.is_string(),
            "number" => value.is_number(),
            "integer" => is_integer(value),
            "boolean" => value.is_boolean(),
            "object" => value.is_object(),
            _ => value.is_array(),
        }
    }
}

impl fmt::Display for ParameterType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Integer-valued as JSON Schema sees it (`7` and `7.0` both are).
fn is_integer(value: &Value) -> bool {
    match value {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// One `{value, label}` option of a parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct ParameterOption {
    /// The value the agent sends; becomes an `enum` member.
    pub value: Value,
    /// The label shown to people; not part of the contract.
    pub label: String,
}

/// One parameter of an operation.
#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    /// The argument's name (a property of the input schema).
    pub name: String,
    /// Its type.
    pub kind: ParameterType,
    /// Shown to the agent.
    pub description: Option<String>,
    /// The field-level required flag.
    pub required: bool,
    /// The allowed values, in order (never empty when present).
    pub options: Option<Vec<ParameterOption>>,
    /// The default value.
    pub default: Option<Value>,
    /// The item schema of an `array` parameter.
    pub items: Option<Value>,
}

impl Parameter {
    /// The parameter's property schema (docs/spec.md §9).
    pub fn property_schema(&self) -> Value {
        let mut schema = Map::new();
        schema.insert("type".into(), json!(self.kind.json_type()));
        if let Some(items) = &self.items {
            schema.insert("items".into(), items.clone());
        }
        if let Some(description) = &self.description {
            schema.insert("description".into(), json!(description));
        }
        if let Some(options) = &self.options {
            let values = options.iter().map(|o| o.value.clone()).collect();
            schema.insert("enum".into(), Value::Array(values));
        }
        if let Some(default) = &self.default {
            schema.insert("default".into(), default.clone());
        }
        Value::Object(schema)
    }
}

/// What an operation returns.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// `{"schema": S}`: the output schema is S.
    Schema(Value),
    /// `{"envelope": "salesforce", "status": 200 | 201, "data_schema": D}`:
    /// the adapter's native `{"status", "data"}` envelope.
    Salesforce {
        /// The exact status the adapter answers with.
        status: SalesforceStatus,
        /// The schema of `data`.
        data_schema: Value,
    },
}

impl Output {
    /// The normalized output schema.
    pub fn schema(&self) -> Value {
        match self {
            Output::Schema(schema) => schema.clone(),
            Output::Salesforce {
                status,
                data_schema,
            } => envelope_schema(*status, data_schema.clone()),
        }
    }
}

/// One operation of a platform tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    /// Its name within the tool.
    pub name: String,
    /// Shown to the agent; `""` when absent.
    pub description: Option<String>,
    /// The operation-level required list (names of parameters).
    pub required: Vec<String>,
    /// The parameters, in order.
    pub parameters: Vec<Parameter>,
    /// What it returns.
    pub output: Output,
}

/// A valid platform manifest (version 1).
#[derive(Debug, Clone, PartialEq)]
pub struct PlatformManifest {
    /// The tool's name, the first half of every runtime name.
    pub tool: String,
    /// Its operations, in order.
    pub operations: Vec<Operation>,
}
