//! U+0000 (NUL) is refused wherever text enters a call or a definition:
//! PostgreSQL cannot store it in `jsonb` or `text`, so every backend and
//! `toolmock eval` refuse it alike (docs/mock-language.md, "Text").

use crate::error::{CallError, Violation};
use serde_json::Value;
use toolmock_contract::pointer;

/// The JSON pointer of every string and object key in `value` (at `base`)
/// that contains U+0000, in document order.
pub(crate) fn nul_paths(value: &Value, base: &str, out: &mut Vec<String>) {
    match value {
        Value::String(s) if s.contains('\0') => out.push(base.to_owned()),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                nul_paths(item, &pointer::index(base, i), out);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                let path = pointer::push(base, key);
                if key.contains('\0') {
                    out.push(path.clone());
                }
                nul_paths(item, &path, out);
            }
        }
        _ => {}
    }
}

/// Whether any string or object key in `value` contains U+0000: the scan
/// every call pays, which builds no pointers.
fn has_nul(value: &Value) -> bool {
    match value {
        Value::String(s) => s.as_bytes().contains(&0),
        Value::Array(items) => items.iter().any(has_nul),
        Value::Object(map) => map
            .iter()
            .any(|(key, item)| key.as_bytes().contains(&0) || has_nul(item)),
        _ => false,
    }
}

/// `invalid_arguments`, one violation per U+0000, when a call's arguments contain any.
pub(crate) fn refuse_nul_arguments(input: &Value) -> Result<(), CallError> {
    if !has_nul(input) {
        return Ok(());
    }
    let mut paths = Vec::new();
    nul_paths(input, "", &mut paths);
    if paths.is_empty() {
        return Ok(());
    }
    Err(CallError::InvalidArguments {
        violations: paths
            .into_iter()
            .map(|path| Violation {
                path,
                schema_path: String::new(),
                message: "U+0000 (NUL) is not allowed in arguments".into(),
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use crate::{
        Call, CallError, CompiledContract, DiagnosticCode, compile_checked, evaluate, evaluate_json,
    };
    use serde_json::{Map, Value, json};
    use toolmock_contract::{OperationContract, OperationIdentity, OperationSource};

    fn definition(initial_state: Value) -> Value {
        json!({
            "schema_version": 1,
            "default_variant": "success",
            "initial_state": initial_state,
            "variants": {"success": {"result": {"ok": true}}},
            "examples": [{"variant": "success", "input": {}, "expected": {"ok": true}}]
        })
    }

    fn paths(error: &CallError) -> Vec<&str> {
        assert_eq!(error.code(), "invalid_arguments", "{error:?}");
        error.violations().iter().map(|v| v.path.as_str()).collect()
    }

    /// Both entry points `toolmock eval` and the dispatcher use refuse
    /// U+0000 in a string or a key, with every path.
    #[test]
    fn arguments_with_nul_are_invalid_arguments() -> Result<(), Box<dyn std::error::Error>> {
        let compiled = compile_checked(&definition(json!({})), None).map_err(|d| d.to_string())?;
        let input = json!({"id": "a\u{0}b", "list": ["ok", {"k\u{0}": 1}]});
        let state = Map::new();
        let call = Call {
            input: &input,
            state: &state,
            variant: None,
        };
        let expected = vec!["/id", "/list/1/k\u{0}"];
        let error = evaluate(&compiled, &call).err().ok_or("evaluate refuses")?;
        assert_eq!(paths(&error), expected);
        let error = evaluate_json(&compiled, &call, &mut Vec::new())
            .err()
            .ok_or("evaluate_json refuses")?;
        assert_eq!(paths(&error), expected);
        let contract = CompiledContract::new(OperationContract {
            operation: OperationIdentity {
                source: OperationSource::Custom,
                name: "op".into(),
            },
            description: String::new(),
            input_schema: json!({"type": "object"}),
            output_schema: json!({"type": "object"}),
        })?;
        let error = contract
            .validate_input(&input)
            .err()
            .ok_or("validation refuses")?;
        assert_eq!(paths(&error), expected);
        assert!(contract.validate_input(&json!({"id": "a\\u0000b"})).is_ok());
        Ok(())
    }

    /// A definition with U+0000 anywhere fails its check at each occurrence.
    #[test]
    fn definitions_with_nul_fail_their_check() {
        let diagnostics =
            compile_checked(&definition(json!({"name": "a\u{0}b", "k\u{0}": 1})), None)
                .err()
                .unwrap_or_default();
        let found: Vec<(DiagnosticCode, &str)> = diagnostics
            .iter()
            .map(|d| (d.code, d.path.as_str()))
            .collect();
        assert_eq!(
            found,
            vec![
                (DiagnosticCode::NulCharacter, "/initial_state/k\u{0}"),
                (DiagnosticCode::NulCharacter, "/initial_state/name"),
            ]
        );
    }
}
