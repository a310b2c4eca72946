//! The rules a tool's operations obey before they are stored, whatever
//! their source (a manifest, an MCP tools list, a server, written by hand).

use super::NewOperation;
use crate::error::OperationsCode;
use serde_json::Value;
use std::collections::HashSet;
use toolmock_contract::{Problems, pointer};

impl NewOperation {
    /// Checks a tool's operations (`operations`) and its fallback output schema: names usable
    /// and unique, schemas that are schemas, every contract hashable (no
    /// integer beyond what a double holds exactly). Every problem is reported,
    /// each with a JSON pointer into the tool as `{"output_schema", "operations"}`:
    /// `/operations` for an empty list, `/operations/N/…` for an operation,
    /// `/output_schema` for the fallback.
    pub fn check_list(
        operations: &[NewOperation],
        fallback: Option<&Value>,
    ) -> Result<(), Problems<OperationsCode>> {
        let mut problems = Problems::new();
        if operations.is_empty() {
            problems.push(
                OperationsCode::NoOperations,
                "/operations",
                "the source lists no operation",
            );
        }
        let mut seen = HashSet::new();
        for (i, op) in operations.iter().enumerate() {
            let at = pointer::index("/operations", i);
            let name = &op.operation.name;
            if !toolmock_schema::is_valid_runtime_name(name) {
                problems.push(
                    OperationsCode::InvalidName,
                    pointer::push(&at, "name"),
                    format!("{name:?} is not a usable operation name"),
                );
            }
            if !seen.insert(name.as_str()) {
                problems.push(
                    OperationsCode::DuplicateOperation,
                    pointer::push(&at, "name"),
                    format!("{name} is listed twice"),
                );
            }
            for (member, schema) in [
                ("input_schema", Some(&op.input_schema)),
                ("output_schema", op.output_schema.as_ref().or(fallback)),
            ] {
                if let Some(schema) = schema
                    && !(schema.is_object() || schema.is_boolean())
                {
                    problems.push(
                        OperationsCode::InvalidSchema,
                        pointer::push(&at, member),
                        format!("{member} must be a JSON Schema (an object or a boolean)"),
                    );
                }
            }
            if let Some(contract) = op.effective_contract(fallback)
                && let Err(e) = contract.hash()
            {
                problems.push(OperationsCode::InexactNumber, at, e.to_string());
            }
        }
        if let Some(fallback) = fallback
            && let Err(e) = toolmock_contract::check_exact_numbers(fallback)
        {
            problems.push(
                OperationsCode::InexactNumber,
                "/output_schema",
                e.to_string(),
            );
        }
        problems.into_result(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolmock_contract::{OperationIdentity, OperationSource};

    fn op(name: &str, input: Value, output: Option<Value>) -> NewOperation {
        NewOperation {
            operation: OperationIdentity {
                source: OperationSource::Custom,
                name: name.into(),
            },
            description: String::new(),
            input_schema: input,
            output_schema: output,
        }
    }

    fn listed(problems: &Problems<OperationsCode>) -> Vec<(&str, &str)> {
        problems
            .iter()
            .map(|p| (p.code.as_str(), p.path.as_str()))
            .collect()
    }

    #[test]
    fn every_problem_of_a_list_is_reported_at_its_pointer() {
        let ops = [
            op("a", json!(3), Some(json!({"type": "object"}))),
            op("a", json!({}), Some(json!({"const": 9007199254740993u64}))),
            op("has space", json!({}), None),
        ];
        let problems = NewOperation::check_list(&ops, Some(&json!([]))).unwrap_err();
        assert_eq!(
            listed(&problems),
            [
                ("invalid_schema", "/operations/0/input_schema"),
                ("duplicate_operation", "/operations/1/name"),
                ("inexact_number", "/operations/1"),
                ("invalid_name", "/operations/2/name"),
                ("invalid_schema", "/operations/2/output_schema"),
            ]
        );
    }

    #[test]
    fn an_empty_list_and_an_inexact_fallback_are_refused() {
        let fallback = json!({"const": 9007199254740993u64});
        let problems = NewOperation::check_list(&[], Some(&fallback)).unwrap_err();
        assert_eq!(
            listed(&problems),
            [
                ("no_operations", "/operations"),
                ("inexact_number", "/output_schema")
            ]
        );
    }

    #[test]
    fn usable_operations_pass() {
        let ops = [op("find", json!({"type": "object"}), Some(json!(true)))];
        assert!(NewOperation::check_list(&ops, None).is_ok());
    }
}
