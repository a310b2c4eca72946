//! Schema-derived draft definitions (docs/spec.md §9, "Schema-derived defaults").
//!
//! [`generate`] derives one `success` variant whose result comes from the
//! output schema, and one example whose input comes from the input schema.
//! At every schema node the value is taken from `default`, then the first of
//! `examples`, then `const`, then the first `enum` member of the declared
//! type, and otherwise built from the type, honouring `required`,
//! `minimum`/`maximum` (inclusive and exclusive), `multipleOf`,
//! `minLength`/`maxLength`, `minItems`/`maxItems`, `minProperties`/
//! `maxProperties`, local `$ref`/`$defs`, `anyOf`/`oneOf` (a non-null branch
//! first, so nullable values get a real value), `allOf` of objects, and the
//! formats date, date-time, time, email, uuid, uri and a few more.
//!
//! Every draft is validated against both schemas and run through the whole
//! check of docs/spec.md §7 before it is returned. A schema the generator cannot
//! honestly satisfy yields the [`DraftProblems`] naming each schema pointer at
//! fault (`/output_schema/properties/code/pattern`), never an invalid draft.

mod errors;
mod walker;

pub use errors::{DraftCode, DraftProblems};

use crate::pointer::type_name;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use toolmock_contract::{
    Example, MockDefinition, OperationContract, Problem, SCHEMA_VERSION, Variant,
};
use toolmock_evaluator::CompiledContract;
use walker::derive;

/// The variant every draft has.
pub const DRAFT_VARIANT: &str = "success";

/// The largest `minLength`, `minItems` or `minProperties` a draft honours:
/// anything larger could not fit a definition (102,400 bytes).
pub const MAX_SIZE: u64 = 102_400;

/// How deep the generator follows nested schemas before giving up.
pub const MAX_DEPTH: usize = 48;

/// Derives a checked draft definition from a contract's schemas.
///
/// ```
/// use toolmock_contract::OperationContract;
/// let contract = OperationContract::from_json_str(r#"{
///     "operation": {"source": "mcp", "name": "book"},
///     "input_schema": {"type": "object", "properties": {"day": {"type": "string", "format": "date"}}, "required": ["day"]},
///     "output_schema": {"type": "object", "properties": {"reference": {"type": "string", "minLength": 3}}, "required": ["reference"]}
/// }"#).unwrap();
/// let draft = toolmock_schema::generate(&contract).unwrap();
/// assert_eq!(draft.examples[0].input["day"], "2026-01-15");
///
/// let strict = OperationContract::from_json_str(r#"{
///     "operation": {"source": "mcp", "name": "code"},
///     "input_schema": {"type": "object"},
///     "output_schema": {"type": "string", "pattern": "^[A-Z]{3}$"}
/// }"#).unwrap();
/// let needs = toolmock_schema::generate(&strict).unwrap_err();
/// assert_eq!(needs.as_slice()[0].path, "/output_schema/pattern");
/// assert_eq!(needs.as_slice()[0].code, toolmock_schema::DraftCode::UnsupportedKeyword);
/// ```
pub fn generate(contract: &OperationContract) -> Result<MockDefinition, DraftProblems> {
    match CompiledContract::new(contract.clone()) {
        Ok(compiled) => generate_compiled(&compiled),
        Err(e) => {
            // A schema that does not compile (a remote or broken `$ref`, …):
            // the derivation names the keyword at fault when it can.
            let mut problems = Vec::new();
            derive(&contract.input_schema, "/input_schema", &mut problems);
            derive(&contract.output_schema, "/output_schema", &mut problems);
            if problems.is_empty() {
                let (path, message) = match &e {
                    toolmock_evaluator::SchemaError::InvalidSchema { member, message } => {
                        (format!("/{member}"), message.clone())
                    }
                    other => (String::new(), other.to_string()),
                };
                problems.push(Problem::new(
                    DraftCode::UncompilableSchema,
                    path,
                    format!("not a usable JSON Schema: {message}"),
                ));
            }
            Err(problems.into())
        }
    }
}

/// [`generate`] for a contract whose schemas are already compiled.
pub fn generate_compiled(compiled: &CompiledContract) -> Result<MockDefinition, DraftProblems> {
    let contract = compiled.contract();
    let mut problems = Vec::new();
    let input = derive(&contract.input_schema, "/input_schema", &mut problems);
    let output = derive(&contract.output_schema, "/output_schema", &mut problems);
    let input = match input {
        Some(Value::Object(map)) => Some(map),
        Some(other) => {
            problems.push(Problem::new(
                DraftCode::InputNotObject,
                "/input_schema",
                format!(
                    "the input schema must describe an object, but the derived input is {found}",
                    found = type_name(&other)
                ),
            ));
            None
        }
        None => None,
    };
    let (Some(input), Some(output)) = (input, output) else {
        return Err(problems.into());
    };
    let input_value = Value::Object(input);
    for (base, violations) in [
        ("/input_schema", compiled.input_violations(&input_value)),
        ("/output_schema", compiled.output_violations(&output)),
    ] {
        for v in violations {
            problems.push(Problem::new(
                DraftCode::SchemaViolation,
                format!("{base}{}", v.schema_path),
                format!(
                    "the derived value at {instance_path} fails this keyword: {message}",
                    instance_path = if v.path.is_empty() {
                        "/".into()
                    } else {
                        v.path
                    },
                    message = v.message
                ),
            ));
        }
    }
    if !problems.is_empty() {
        return Err(problems.into());
    }
    let Value::Object(input) = input_value else {
        return Err(problems.into());
    };
    let draft = assemble(&contract.operation.name, input, output);
    let diagnostics = toolmock_evaluator::check(&draft.to_value(), Some(compiled));
    if !diagnostics.is_empty() {
        return Err(diagnostics
            .iter()
            .map(|d| {
                Problem::new(
                    DraftCode::CheckFailed,
                    d.path.clone(),
                    format!(
                        "the draft fails its check: {code}: {message}",
                        code = d.code.as_str(),
                        message = d.message
                    ),
                )
            })
            .collect());
    }
    Ok(draft)
}

/// The draft document: one `success` variant returning `output`, one example.
fn assemble(name: &str, input: Map<String, Value>, output: Value) -> MockDefinition {
    // A literal object with `$` keys would be read as an operator in a
    // result; such a result is kept in the state (where it is plain data)
    // and returned by reference.
    let mut initial_state = Map::new();
    let result = if has_dollar_key(&output) {
        let key = state_key(name);
        initial_state.insert(key.clone(), output.clone());
        json!({"$state": key})
    } else {
        output.clone()
    };
    let mut variants = BTreeMap::new();
    variants.insert(
        DRAFT_VARIANT.to_owned(),
        Variant {
            description: Some("Derived from the output schema; edit to taste.".into()),
            result,
            set_state: Map::new(),
            delay_ms: 0,
            rules: Vec::new(),
        },
    );
    MockDefinition {
        schema_version: SCHEMA_VERSION,
        description: Some(format!(
            "Draft for {name}, derived from its contract's schemas by toolmock generate."
        )),
        default_variant: DRAFT_VARIANT.to_owned(),
        initial_state,
        variants,
        examples: vec![Example {
            description: Some("Input derived from the input schema.".into()),
            variant: DRAFT_VARIANT.to_owned(),
            input,
            state: None,
            expected: output,
            expected_state: None,
        }],
    }
}

fn state_key(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{clean}__draft_result")
}

fn has_dollar_key(value: &Value) -> bool {
    match value {
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| k.starts_with('$') || has_dollar_key(v)),
        Value::Array(items) => items.iter().any(has_dollar_key),
        _ => false,
    }
}
