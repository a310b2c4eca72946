//! From a read manifest to operation contracts (docs/spec.md §9).

use super::model::Operation;
use super::runtime_name;
use serde_json::{Map, Value, json};
use toolmock_contract::{OperationContract, OperationIdentity, OperationSource};

/// The contract of one operation of `tool` (docs/spec.md §9).
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
