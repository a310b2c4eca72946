//! The scripted driver: plays the agent as an ordered list of steps.

use crate::document::{CaseDoc, StepDoc};
use crate::expect::{StepOutcome, Unmet, judge_step};
use crate::reference::{render, resolve_path, split_head};
use crate::workflow::{AttemptContext, CallFailure};
use serde_json::{Map, Value, json};
use toolmock_contract::pointer;
use toolmock_runtime::backend::Backend;
use toolmock_runtime::error::DispatchError;

/// Whether a tool input error is `invalid_arguments` caused by missing
/// required fields (the only failure a step's `repair` answers).
fn missing_required(code: &str, violations: &Value) -> bool {
    code == "invalid_arguments"
        && violations.as_array().is_some_and(|all| {
            all.iter().any(|v| {
                v.get("schema_path")
                    .and_then(Value::as_str)
                    .is_some_and(|p| p.ends_with("/required"))
            })
        })
}

async fn call_step<B: Backend + 'static>(
    ctx: &AttemptContext<'_, B>,
    step: &StepDoc,
    arguments: Value,
) -> Result<Value, CallFailure> {
    match (&step.workflow, &step.tool, &step.operation) {
        (Some(workflow), _, _) => ctx.run_workflow(workflow, arguments, None).await,
        (None, Some(tool), Some(operation)) => ctx.call_tool(tool, operation, arguments).await,
        // The loader refuses such steps.
        _ => Err(ctx
            .harness_error(
                toolmock_runtime::error::HarnessCode::InvalidWorkflow,
                "a step names no call".into(),
            )
            .await),
    }
}

/// Runs a case's script in one attempt. Returns the unmet step expectations
/// (the script stops at the first: later steps may depend on it). Only a
/// failure that could not be recorded (storage, capability) is an `Err`.
pub(crate) async fn run_script<B: Backend + 'static>(
    ctx: &AttemptContext<'_, B>,
    case: &CaseDoc,
    case_at: &str,
) -> Result<Vec<Unmet>, DispatchError> {
    let steps = case.driver.steps();
    let data = Value::Object(case.data.clone());
    let mut done: Map<String, Value> = Map::new();
    let steps_at = pointer::push(&pointer::push(case_at, "driver"), "steps");
    for (i, step) in steps.iter().enumerate() {
        let at = pointer::index(&steps_at, i);
        let lookup = |operator: &str, path: &str| -> Option<Value> {
            match operator {
                "$case" => resolve_path(&data, path).cloned(),
                "$step" => {
                    let (id, rest) = split_head(path);
                    resolve_path(done.get(id)?, rest).cloned()
                }
                _ => None,
            }
        };
        let mut arguments = match render(&step.arguments, &pointer::push(&at, "arguments"), &lookup)
        {
            Ok(a) => a,
            Err(unresolved) => {
                return Ok(vec![Unmet::new(
                    unresolved.at.clone(),
                    "reference_unresolved",
                    unresolved.to_string(),
                )]);
            }
        };
        let mut outcome = call_step(ctx, step, arguments.clone()).await;
        if let (
            Some(repair),
            Err(CallFailure::Recorded {
                code, violations, ..
            }),
        ) = (&step.repair, &outcome)
            && missing_required(code, violations)
        {
            let mut repaired = match arguments {
                Value::Object(map) => map,
                _ => Map::new(),
            };
            for (key, template) in repair {
                let here = pointer::push(&pointer::push(&at, "repair"), key);
                match render(template, &here, &lookup) {
                    Ok(value) => {
                        repaired.insert(key.clone(), value);
                    }
                    Err(unresolved) => {
                        return Ok(vec![Unmet::new(
                            unresolved.at.clone(),
                            "reference_unresolved",
                            unresolved.to_string(),
                        )]);
                    }
                }
            }
            arguments = Value::Object(repaired);
            outcome = call_step(ctx, step, arguments.clone()).await;
        }
        let judged = match outcome {
            Ok(result) => {
                if let Some(id) = &step.id {
                    done.insert(
                        id.clone(),
                        json!({"arguments": arguments, "result": result.clone()}),
                    );
                }
                StepOutcome::Ok(result)
            }
            Err(CallFailure::Recorded {
                class,
                code,
                message,
                ..
            }) => {
                if let Some(id) = &step.id {
                    done.insert(
                        id.clone(),
                        json!({"arguments": arguments, "error": {"class": class.as_str(), "code": code, "message": message}}),
                    );
                }
                StepOutcome::Error {
                    class,
                    code,
                    message,
                }
            }
            Err(CallFailure::Fatal(e)) => return Err(e),
        };
        if let Some(unmet) = judge_step(step.expect.as_ref(), &judged, &at) {
            return Ok(vec![unmet]);
        }
    }
    Ok(Vec::new())
}
