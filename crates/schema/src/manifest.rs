//! The platform manifest (version 1) of SPEC §9 and its normalization to
//! operation contracts.
//!
//! A manifest is read by walking the raw JSON, so that one pass reports
//! **every** problem, each with a JSON pointer into the manifest, instead of
//! stopping at the first.

use crate::pointer::{self, type_name};
use crate::salesforce::{SalesforceStatus, envelope_schema};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::fmt;
use toolmock_contract::{OperationContract, OperationIdentity, OperationSource};

/// The only `manifest_version` this crate reads.
pub const MANIFEST_VERSION: u64 = 1;

/// The longest expanded runtime name (`{tool}__{operation}`).
pub const MAX_RUNTIME_NAME_LEN: usize = 64;

/// A parameter's type (SPEC §9: exactly these eight).
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
    /// Every type, in SPEC order.
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
    /// The parameter's property schema (SPEC §9).
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

/// One problem of a platform manifest, with a JSON pointer into it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    /// The bytes are not JSON (or not UTF-8).
    #[error("the manifest is not valid JSON: {message}")]
    InvalidJson {
        /// The parser's explanation.
        message: String,
    },
    /// A member has the wrong JSON type.
    #[error("{path}: expected {expected}, found {found}")]
    WrongType {
        /// Where.
        path: String,
        /// What the format wants.
        expected: &'static str,
        /// What was there.
        found: &'static str,
    },
    /// A required member is absent.
    #[error("{path}: the member {field:?} is required")]
    MissingField {
        /// The object that lacks it.
        path: String,
        /// Its name.
        field: &'static str,
    },
    /// A member the format does not define (fail closed: a typo is never ignored).
    #[error("{path}: unknown member {field:?}")]
    UnknownField {
        /// The member itself.
        path: String,
        /// Its name.
        field: String,
    },
    /// `manifest_version` is not `1`.
    #[error("{path}: manifest_version must be 1, found {found}")]
    UnsupportedVersion {
        /// `/manifest_version`.
        path: String,
        /// What was there.
        found: String,
    },
    /// A tool, operation or parameter name is the empty string.
    #[error("{path}: the name must not be empty")]
    EmptyName {
        /// Where.
        path: String,
    },
    /// `{tool}__{operation}` does not match `^[A-Za-z0-9_-]{1,64}$`.
    #[error(
        "{path}: the runtime name {name:?} must match ^[A-Za-z0-9_-]{{1,64}}$ (letters, digits, _ and -, at most 64)"
    )]
    InvalidRuntimeName {
        /// The operation's name.
        path: String,
        /// The expanded name.
        name: String,
    },
    /// The manifest has no operation.
    #[error("{path}: a manifest needs at least one operation")]
    NoOperations {
        /// `/operations`.
        path: String,
    },
    /// Two operations expand to the same runtime name.
    #[error("{path}: the operation {name:?} is already defined at {first}")]
    DuplicateOperation {
        /// The second one's name.
        path: String,
        /// The name.
        name: String,
        /// The first one's name.
        first: String,
    },
    /// Two parameters of one operation share a name.
    #[error("{path}: the parameter {name:?} is already defined at {first}")]
    DuplicateParameter {
        /// The second one's name.
        path: String,
        /// The name.
        name: String,
        /// The first one's name.
        first: String,
    },
    /// A parameter type that is none of the eight (never silently `{}`).
    #[error(
        "{path}: parameter {parameter:?} has the unknown type {found:?} (expected one of string, number, integer, boolean, object, array, sfdc_field_mapping, async_options)"
    )]
    UnknownParameterType {
        /// The parameter's `type`.
        path: String,
        /// The parameter's name.
        parameter: String,
        /// The type given.
        found: String,
    },
    /// The operation-level `required` names something that is no parameter.
    #[error("{path}: {name:?} is required but is not a parameter of this operation")]
    RequiredNotAParameter {
        /// The entry of `required`.
        path: String,
        /// The name.
        name: String,
    },
    /// `options` is an empty array.
    #[error("{path}: parameter {parameter:?} has an empty options list")]
    EmptyOptions {
        /// The parameter's `options`.
        path: String,
        /// The parameter's name.
        parameter: String,
    },
    /// An option value does not have the parameter's type (the enum could never be satisfied).
    #[error(
        "{path}: option value of parameter {parameter:?} must be of type {expected}, found {found}"
    )]
    OptionTypeMismatch {
        /// The option's `value`.
        path: String,
        /// The parameter's name.
        parameter: String,
        /// The parameter's JSON type.
        expected: &'static str,
        /// The value's JSON type.
        found: &'static str,
    },
    /// Two options of one parameter share a value.
    #[error("{path}: option value {value} of parameter {parameter:?} is already listed at {first}")]
    DuplicateOption {
        /// The second option's `value`.
        path: String,
        /// The parameter's name.
        parameter: String,
        /// The value, as JSON.
        value: String,
        /// The first option's `value`.
        first: String,
    },
    /// A `default` that does not have the parameter's type.
    #[error(
        "{path}: the default of parameter {parameter:?} must be of type {expected}, found {found}"
    )]
    DefaultTypeMismatch {
        /// The parameter's `default`.
        path: String,
        /// The parameter's name.
        parameter: String,
        /// The parameter's JSON type.
        expected: &'static str,
        /// The default's JSON type.
        found: &'static str,
    },
    /// A `default` that is none of the parameter's options.
    #[error("{path}: the default of parameter {parameter:?} is not one of its option values")]
    DefaultNotAnOption {
        /// The parameter's `default`.
        path: String,
        /// The parameter's name.
        parameter: String,
    },
    /// `items` on a parameter that is not an `array`.
    #[error("{path}: items is only allowed on array parameters; {parameter:?} is {kind}")]
    ItemsWithoutArray {
        /// The parameter's `items`.
        path: String,
        /// The parameter's name.
        parameter: String,
        /// The parameter's type.
        kind: String,
    },
    /// `output` has neither `schema` nor `envelope`.
    #[error(
        "{path}: output must be {{\"schema\": S}} or {{\"envelope\": \"salesforce\", \"status\": 200|201, \"data_schema\": D}}"
    )]
    InvalidOutput {
        /// The operation's `output`.
        path: String,
    },
    /// An envelope other than `salesforce`.
    #[error("{path}: unknown envelope {found:?} (the only envelope is \"salesforce\")")]
    UnknownEnvelope {
        /// The `envelope` member.
        path: String,
        /// What was there.
        found: String,
    },
    /// A Salesforce status other than 200 or 201.
    #[error("{path}: the Salesforce status must be 200 or 201, found {found}")]
    InvalidStatus {
        /// The `status` member.
        path: String,
        /// What was there.
        found: String,
    },
    /// A schema (`items`, `output.schema`, `output.data_schema`) that is not a
    /// usable JSON Schema, or that breaks the schema it is embedded in.
    #[error("{path}: not a usable JSON Schema: {message}")]
    InvalidSchema {
        /// The schema.
        path: String,
        /// The validator's explanation.
        message: String,
    },
    /// An integer a double cannot hold exactly (the contract hash would not be reproducible).
    #[error(
        "{path}: the number {number} cannot be represented exactly; integers must lie within ±2^53"
    )]
    InexactNumber {
        /// Where.
        path: String,
        /// The number as written.
        number: String,
    },
}

impl ManifestError {
    /// A stable, machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            ManifestError::InvalidJson { .. } => "invalid_json",
            ManifestError::WrongType { .. } => "wrong_type",
            ManifestError::MissingField { .. } => "missing_field",
            ManifestError::UnknownField { .. } => "unknown_field",
            ManifestError::UnsupportedVersion { .. } => "unsupported_manifest_version",
            ManifestError::EmptyName { .. } => "empty_name",
            ManifestError::InvalidRuntimeName { .. } => "invalid_runtime_name",
            ManifestError::NoOperations { .. } => "no_operations",
            ManifestError::DuplicateOperation { .. } => "duplicate_operation",
            ManifestError::DuplicateParameter { .. } => "duplicate_parameter",
            ManifestError::UnknownParameterType { .. } => "unknown_parameter_type",
            ManifestError::RequiredNotAParameter { .. } => "required_not_a_parameter",
            ManifestError::EmptyOptions { .. } => "empty_options",
            ManifestError::OptionTypeMismatch { .. } => "option_type_mismatch",
            ManifestError::DuplicateOption { .. } => "duplicate_option",
            ManifestError::DefaultTypeMismatch { .. } => "default_type_mismatch",
            ManifestError::DefaultNotAnOption { .. } => "default_not_an_option",
            ManifestError::ItemsWithoutArray { .. } => "items_without_array",
            ManifestError::InvalidOutput { .. } => "invalid_output",
            ManifestError::UnknownEnvelope { .. } => "unknown_envelope",
            ManifestError::InvalidStatus { .. } => "invalid_status",
            ManifestError::InvalidSchema { .. } => "invalid_schema",
            ManifestError::InexactNumber { .. } => "inexact_number",
        }
    }

    /// The JSON pointer into the manifest (`""` is the whole document).
    pub fn path(&self) -> &str {
        match self {
            ManifestError::InvalidJson { .. } => "",
            ManifestError::WrongType { path, .. }
            | ManifestError::MissingField { path, .. }
            | ManifestError::UnknownField { path, .. }
            | ManifestError::UnsupportedVersion { path, .. }
            | ManifestError::EmptyName { path }
            | ManifestError::InvalidRuntimeName { path, .. }
            | ManifestError::NoOperations { path }
            | ManifestError::DuplicateOperation { path, .. }
            | ManifestError::DuplicateParameter { path, .. }
            | ManifestError::UnknownParameterType { path, .. }
            | ManifestError::RequiredNotAParameter { path, .. }
            | ManifestError::EmptyOptions { path, .. }
            | ManifestError::OptionTypeMismatch { path, .. }
            | ManifestError::DuplicateOption { path, .. }
            | ManifestError::DefaultTypeMismatch { path, .. }
            | ManifestError::DefaultNotAnOption { path, .. }
            | ManifestError::ItemsWithoutArray { path, .. }
            | ManifestError::InvalidOutput { path }
            | ManifestError::UnknownEnvelope { path, .. }
            | ManifestError::InvalidStatus { path, .. }
            | ManifestError::InvalidSchema { path, .. }
            | ManifestError::InexactNumber { path, .. } => path,
        }
    }
}

/// Every problem of a manifest, in document order. Never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestErrors(Vec<ManifestError>);

impl ManifestErrors {
    /// The problems, in order.
    pub fn as_slice(&self) -> &[ManifestError] {
        &self.0
    }

    /// The problems as a vector.
    pub fn into_vec(self) -> Vec<ManifestError> {
        self.0
    }

    /// How many problems.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Always false: a `ManifestErrors` holds at least one problem.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The problems' iterator.
    pub fn iter(&self) -> std::slice::Iter<'_, ManifestError> {
        self.0.iter()
    }
}

impl fmt::Display for ManifestErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{}: {e}", e.code())?;
        }
        Ok(())
    }
}

impl std::error::Error for ManifestErrors {}

impl<'a> IntoIterator for &'a ManifestErrors {
    type Item = &'a ManifestError;
    type IntoIter = std::slice::Iter<'a, ManifestError>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

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
    pub fn from_json_slice(bytes: &[u8]) -> Result<Self, ManifestErrors> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| {
            ManifestErrors(vec![ManifestError::InvalidJson {
                message: e.to_string(),
            }])
        })?;
        Self::from_value(&value)
    }

    /// Reads a manifest from a JSON value; every problem is reported, each
    /// with a JSON pointer into the manifest.
    pub fn from_value(value: &Value) -> Result<Self, ManifestErrors> {
        let mut reader = Reader::default();
        let manifest = reader.manifest(value);
        match manifest {
            Some(manifest) if reader.errors.is_empty() => Ok(manifest),
            _ => Err(ManifestErrors(reader.errors)),
        }
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

    /// The operation contracts, one per operation, in manifest order (SPEC §9).
    pub fn contracts(&self) -> Vec<OperationContract> {
        self.operations
            .iter()
            .map(|op| normalize_operation(&self.tool, op))
            .collect()
    }
}

/// Reads and normalizes a manifest in one step.
pub fn normalize_manifest(value: &Value) -> Result<Vec<OperationContract>, ManifestErrors> {
    PlatformManifest::from_value(value).map(PlatformManifest::into_contracts)
}

/// The contract of one operation of `tool` (SPEC §9).
pub fn normalize_operation(tool: &str, op: &Operation) -> OperationContract {
    OperationContract {
        operation: OperationIdentity {
            source: OperationSource::Platform,
            name: runtime_name(tool, &op.name),
        },
        description: op.description.clone().unwrap_or_default(),
        input_schema: input_schema(op),
        output_schema: op.output.schema(),
    }
}

/// The input schema of an operation: its parameters as properties, the union
/// of both required flags in parameter order, no other property allowed.
pub fn input_schema(op: &Operation) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for p in &op.parameters {
        properties.insert(p.name.clone(), p.property_schema());
        if p.required || op.required.iter().any(|r| r == &p.name) {
            required.push(Value::String(p.name.clone()));
        }
    }
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        schema.insert("required".into(), Value::Array(required));
    }
    schema.insert("additionalProperties".into(), json!(false));
    Value::Object(schema)
}

/// Walks a manifest, collecting every problem.
#[derive(Default)]
struct Reader {
    errors: Vec<ManifestError>,
}

impl Reader {
    fn wrong_type(&mut self, path: &str, expected: &'static str, found: &Value) {
        self.errors.push(ManifestError::WrongType {
            path: path.to_owned(),
            expected,
            found: type_name(found),
        });
    }

    /// The value as an object, or a `wrong_type` problem.
    fn object<'v>(&mut self, value: &'v Value, path: &str) -> Option<&'v Map<String, Value>> {
        match value {
            Value::Object(map) => Some(map),
            other => {
                self.wrong_type(path, "an object", other);
                None
            }
        }
    }

    /// Reports every member not in `allowed`.
    fn known_fields(&mut self, map: &Map<String, Value>, path: &str, allowed: &[&str]) {
        for key in map.keys() {
            if !allowed.contains(&key.as_str()) {
                self.errors.push(ManifestError::UnknownField {
                    path: pointer::push(path, key),
                    field: key.clone(),
                });
            }
        }
    }

    fn required<'v>(
        &mut self,
        map: &'v Map<String, Value>,
        path: &str,
        field: &'static str,
    ) -> Option<&'v Value> {
        let found = map.get(field);
        if found.is_none() {
            self.errors.push(ManifestError::MissingField {
                path: path.to_owned(),
                field,
            });
        }
        found
    }

    fn string(&mut self, value: &Value, path: &str) -> Option<String> {
        match value {
            Value::String(s) => Some(s.clone()),
            other => {
                self.wrong_type(path, "a string", other);
                None
            }
        }
    }

    fn name(&mut self, value: &Value, path: &str) -> Option<String> {
        let name = self.string(value, path)?;
        if name.is_empty() {
            self.errors.push(ManifestError::EmptyName {
                path: path.to_owned(),
            });
            return None;
        }
        Some(name)
    }

    fn exact_numbers(&mut self, value: &Value, path: &str) -> bool {
        let mut found = Vec::new();
        pointer::inexact_numbers(value, path, &mut found);
        let ok = found.is_empty();
        for (path, number) in found {
            self.errors
                .push(ManifestError::InexactNumber { path, number });
        }
        ok
    }

    /// A schema member: an object or a boolean with exact numbers.
    fn schema(&mut self, value: &Value, path: &str) -> Option<Value> {
        if !(value.is_object() || value.is_boolean()) {
            self.wrong_type(path, "a JSON Schema (an object or a boolean)", value);
            return None;
        }
        if !self.exact_numbers(value, path) {
            return None;
        }
        Some(value.clone())
    }

    /// Checks that a user schema is usable where it ends up, blaming `path`.
    ///
    /// `embedded` is the whole schema the user schema is embedded in. A
    /// schema with references or regular expressions is compiled in place
    /// (so a `$ref` that does not resolve there, or a pattern the linear-time
    /// engine refuses, is caught); any other is checked against its draft's
    /// meta-schema, which finds the same errors far faster.
    fn usable(&mut self, user: &Value, embedded: impl FnOnce() -> Value, path: &str) {
        let result = if needs_compiling(user) {
            toolmock_evaluator::compile_schema(&embedded()).map(|_| ())
        } else {
            jsonschema::meta::validate(user).map_err(|e| e.to_string())
        };
        if let Err(message) = result {
            self.errors.push(ManifestError::InvalidSchema {
                path: path.to_owned(),
                message,
            });
        }
    }

    fn manifest(&mut self, value: &Value) -> Option<PlatformManifest> {
        let map = self.object(value, "")?;
        self.known_fields(map, "", &["manifest_version", "tool", "operations"]);
        if let Some(version) = self.required(map, "", "manifest_version")
            && version.as_u64() != Some(MANIFEST_VERSION)
        {
            if version.is_number() {
                self.errors.push(ManifestError::UnsupportedVersion {
                    path: "/manifest_version".into(),
                    found: version.to_string(),
                });
            } else {
                self.wrong_type("/manifest_version", "the integer 1", version);
            }
        }
        let tool = self
            .required(map, "", "tool")
            .and_then(|v| self.name(v, "/tool"));
        let operations = self.required(map, "", "operations").and_then(|ops| {
            let Value::Array(items) = ops else {
                self.wrong_type("/operations", "an array", ops);
                return None;
            };
            if items.is_empty() {
                self.errors.push(ManifestError::NoOperations {
                    path: "/operations".into(),
                });
            }
            let mut out = Vec::with_capacity(items.len());
            let mut seen: BTreeMap<String, String> = BTreeMap::new();
            let mut complete = true;
            for (i, item) in items.iter().enumerate() {
                let path = pointer::index("/operations", i);
                let parsed = self.operation(item, &path, tool.as_deref());
                if let Some(name) = item.get("name").and_then(Value::as_str) {
                    let name_path = pointer::push(&path, "name");
                    if let Some(first) = seen.get(name) {
                        self.errors.push(ManifestError::DuplicateOperation {
                            path: name_path,
                            name: name.to_owned(),
                            first: first.clone(),
                        });
                        complete = false;
                    } else if !name.is_empty() {
                        seen.insert(name.to_owned(), name_path);
                    }
                }
                match parsed {
                    Some(op) => out.push(op),
                    None => complete = false,
                }
            }
            complete.then_some(out)
        });
        Some(PlatformManifest {
            tool: tool?,
            operations: operations?,
        })
    }

    fn operation(&mut self, value: &Value, path: &str, tool: Option<&str>) -> Option<Operation> {
        let map = self.object(value, path)?;
        self.known_fields(
            map,
            path,
            &["name", "description", "required", "parameters", "output"],
        );
        let name_path = pointer::push(path, "name");
        let name = self
            .required(map, path, "name")
            .and_then(|v| self.name(v, &name_path));
        if let (Some(tool), Some(name)) = (tool, &name) {
            let expanded = runtime_name(tool, name);
            if !is_valid_runtime_name(&expanded) {
                self.errors.push(ManifestError::InvalidRuntimeName {
                    path: name_path.clone(),
                    name: expanded,
                });
            }
        }
        let description = match map.get("description") {
            None => Some(None),
            Some(v) => self
                .string(v, &pointer::push(path, "description"))
                .map(Some),
        };
        let parameters = self.required(map, path, "parameters").and_then(|v| {
            let params_path = pointer::push(path, "parameters");
            let Value::Array(items) = v else {
                self.wrong_type(&params_path, "an array", v);
                return None;
            };
            let mut out = Vec::with_capacity(items.len());
            let mut seen: BTreeMap<String, String> = BTreeMap::new();
            let mut complete = true;
            for (i, item) in items.iter().enumerate() {
                let p_path = pointer::index(&params_path, i);
                let parsed = self.parameter(item, &p_path);
                // Duplicates are found by the names as written, so that a
                // broken parameter does not hide its twin.
                if let Some(name) = item.get("name").and_then(Value::as_str) {
                    let p_name_path = pointer::push(&p_path, "name");
                    if let Some(first) = seen.get(name) {
                        self.errors.push(ManifestError::DuplicateParameter {
                            path: p_name_path,
                            name: name.to_owned(),
                            first: first.clone(),
                        });
                        complete = false;
                    } else if !name.is_empty() {
                        seen.insert(name.to_owned(), p_name_path);
                    }
                }
                match parsed {
                    Some(p) => out.push(p),
                    None => complete = false,
                }
            }
            complete.then_some(out)
        });
        // The names the parameters declare, read from the raw JSON so that a
        // broken parameter does not hide a misspelled required name.
        let declared: Option<Vec<&str>> = match map.get("parameters") {
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .filter_map(|p| p.get("name").and_then(Value::as_str))
                    .collect(),
            ),
            _ => None,
        };
        let required = match map.get("required") {
            None => Some(Vec::new()),
            Some(v) => {
                let req_path = pointer::push(path, "required");
                match v {
                    Value::Array(items) => {
                        let mut names = Vec::with_capacity(items.len());
                        let mut complete = true;
                        for (i, item) in items.iter().enumerate() {
                            let item_path = pointer::index(&req_path, i);
                            match self.string(item, &item_path) {
                                Some(n) => {
                                    // Checked against every parameter whose name
                                    // reads, even when another part of it failed.
                                    if let Some(names) = &declared
                                        && !names.contains(&n.as_str())
                                    {
                                        self.errors.push(ManifestError::RequiredNotAParameter {
                                            path: item_path,
                                            name: n.clone(),
                                        });
                                    }
                                    names.push(n);
                                }
                                None => complete = false,
                            }
                        }
                        complete.then_some(names)
                    }
                    other => {
                        self.wrong_type(&req_path, "an array of parameter names", other);
                        None
                    }
                }
            }
        };
        let output = self
            .required(map, path, "output")
            .and_then(|v| self.output(v, &pointer::push(path, "output")));
        Some(Operation {
            name: name?,
            description: description?,
            required: required?,
            parameters: parameters?,
            output: output?,
        })
    }

    fn parameter(&mut self, value: &Value, path: &str) -> Option<Parameter> {
        let map = self.object(value, path)?;
        self.known_fields(
            map,
            path,
            &[
                "name",
                "type",
                "description",
                "required",
                "options",
                "default",
                "items",
            ],
        );
        let name = self
            .required(map, path, "name")
            .and_then(|v| self.name(v, &pointer::push(path, "name")));
        let shown = name.clone().unwrap_or_default();
        let type_path = pointer::push(path, "type");
        let kind = self.required(map, path, "type").and_then(|v| {
            let text = self.string(v, &type_path)?;
            let kind = ParameterType::parse(&text);
            if kind.is_none() {
                self.errors.push(ManifestError::UnknownParameterType {
                    path: type_path.clone(),
                    parameter: shown.clone(),
                    found: text,
                });
            }
            kind
        });
        let description = match map.get("description") {
            None => Some(None),
            Some(v) => self
                .string(v, &pointer::push(path, "description"))
                .map(Some),
        };
        let required = match map.get("required") {
            None => Some(false),
            Some(Value::Bool(b)) => Some(*b),
            Some(other) => {
                self.wrong_type(&pointer::push(path, "required"), "a boolean", other);
                None
            }
        };
        let options = match map.get("options") {
            None => Some(None),
            Some(v) => self
                .options(v, &pointer::push(path, "options"), &shown, kind)
                .map(Some),
        };
        let default = match map.get("default") {
            None => Some(None),
            Some(v) => {
                let d_path = pointer::push(path, "default");
                let mut ok = self.exact_numbers(v, &d_path);
                if let Some(kind) = kind {
                    if !kind.accepts(v) {
                        self.errors.push(ManifestError::DefaultTypeMismatch {
                            path: d_path.clone(),
                            parameter: shown.clone(),
                            expected: kind.json_type(),
                            found: type_name(v),
                        });
                        ok = false;
                    } else if let Some(Some(options)) = &options
                        && !options
                            .iter()
                            .any(|o| toolmock_evaluator::json_equal(&o.value, v))
                    {
                        self.errors.push(ManifestError::DefaultNotAnOption {
                            path: d_path.clone(),
                            parameter: shown.clone(),
                        });
                        ok = false;
                    }
                }
                ok.then(|| Some(v.clone()))
            }
        };
        let items = match map.get("items") {
            None => Some(None),
            Some(v) => {
                let i_path = pointer::push(path, "items");
                match kind {
                    Some(ParameterType::Array) | None => {
                        let schema = self.schema(v, &i_path);
                        if let Some(schema) = &schema {
                            self.usable(
                                schema,
                                || json!({"type": "array", "items": schema}),
                                &i_path,
                            );
                        }
                        schema.map(Some)
                    }
                    Some(other) => {
                        self.errors.push(ManifestError::ItemsWithoutArray {
                            path: i_path,
                            parameter: shown.clone(),
                            kind: other.as_str().to_owned(),
                        });
                        None
                    }
                }
            }
        };
        Some(Parameter {
            name: name?,
            kind: kind?,
            description: description?,
            required: required?,
            options: options?,
            default: default?,
            items: items?,
        })
    }

    fn options(
        &mut self,
        value: &Value,
        path: &str,
        parameter: &str,
        kind: Option<ParameterType>,
    ) -> Option<Vec<ParameterOption>> {
        let Value::Array(items) = value else {
            self.wrong_type(path, "a non-empty array of {value, label}", value);
            return None;
        };
        if items.is_empty() {
            self.errors.push(ManifestError::EmptyOptions {
                path: path.to_owned(),
                parameter: parameter.to_owned(),
            });
            return None;
        }
        let mut out: Vec<(ParameterOption, String)> = Vec::with_capacity(items.len());
        let mut complete = true;
        for (i, item) in items.iter().enumerate() {
            let o_path = pointer::index(path, i);
            let Some(map) = self.object(item, &o_path) else {
                complete = false;
                continue;
            };
            self.known_fields(map, &o_path, &["value", "label"]);
            let v_path = pointer::push(&o_path, "value");
            let option_value = self.required(map, &o_path, "value").and_then(|v| {
                if !self.exact_numbers(v, &v_path) {
                    return None;
                }
                if let Some(kind) = kind
                    && !kind.accepts(v)
                {
                    self.errors.push(ManifestError::OptionTypeMismatch {
                        path: v_path.clone(),
                        parameter: parameter.to_owned(),
                        expected: kind.json_type(),
                        found: type_name(v),
                    });
                    return None;
                }
                if let Some((_, first)) = out
                    .iter()
                    .find(|(o, _)| toolmock_evaluator::json_equal(&o.value, v))
                {
                    self.errors.push(ManifestError::DuplicateOption {
                        path: v_path.clone(),
                        parameter: parameter.to_owned(),
                        value: v.to_string(),
                        first: first.clone(),
                    });
                    return None;
                }
                Some(v.clone())
            });
            let label = self
                .required(map, &o_path, "label")
                .and_then(|v| self.string(v, &pointer::push(&o_path, "label")));
            match (option_value, label) {
                (Some(value), Some(label)) => out.push((ParameterOption { value, label }, v_path)),
                _ => complete = false,
            }
        }
        complete.then(|| out.into_iter().map(|(o, _)| o).collect())
    }

    fn output(&mut self, value: &Value, path: &str) -> Option<Output> {
        let map = self.object(value, path)?;
        if map.contains_key("envelope") {
            self.known_fields(map, path, &["envelope", "status", "data_schema"]);
            let e_path = pointer::push(path, "envelope");
            let envelope_ok = map
                .get("envelope")
                .and_then(|v| self.string(v, &e_path))
                .is_some_and(|e| {
                    if e == "salesforce" {
                        true
                    } else {
                        self.errors.push(ManifestError::UnknownEnvelope {
                            path: e_path.clone(),
                            found: e,
                        });
                        false
                    }
                });
            let s_path = pointer::push(path, "status");
            let status = self.required(map, path, "status").and_then(|v| {
                let status = v.as_u64().and_then(SalesforceStatus::from_code);
                if status.is_none() {
                    if v.is_number() {
                        self.errors.push(ManifestError::InvalidStatus {
                            path: s_path.clone(),
                            found: v.to_string(),
                        });
                    } else {
                        self.wrong_type(&s_path, "the integer 200 or 201", v);
                    }
                }
                status
            });
            let d_path = pointer::push(path, "data_schema");
            let data_schema = self
                .required(map, path, "data_schema")
                .and_then(|v| self.schema(v, &d_path));
            let (status, data_schema) = (status?, data_schema?);
            if !envelope_ok {
                return None;
            }
            let output = Output::Salesforce {
                status,
                data_schema,
            };
            if let Output::Salesforce { data_schema, .. } = &output {
                self.usable(data_schema, || output.schema(), &d_path);
            }
            Some(output)
        } else if map.contains_key("schema") {
            self.known_fields(map, path, &["schema"]);
            let s_path = pointer::push(path, "schema");
            let schema = map.get("schema").and_then(|v| self.schema(v, &s_path))?;
            self.usable(&schema, || schema.clone(), &s_path);
            Some(Output::Schema(schema))
        } else {
            self.errors.push(ManifestError::InvalidOutput {
                path: path.to_owned(),
            });
            None
        }
    }
}

/// Whether a schema has keywords only a full compile can vet: references
/// (which must resolve where the schema ends up) and regular expressions.
fn needs_compiling(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => map.iter().any(|(k, v)| {
            matches!(
                k.as_str(),
                "$ref"
                    | "$dynamicRef"
                    | "$recursiveRef"
                    | "$id"
                    | "$anchor"
                    | "pattern"
                    | "patternProperties"
            ) || needs_compiling(v)
        }),
        Value::Array(items) => items.iter().any(needs_compiling),
        _ => false,
    }
}
