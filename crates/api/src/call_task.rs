//! A tool call, once accepted, runs to its recorded end whatever happens to
//! the HTTP request that carried it.
//!
//! The request's time-out (or a client that hangs up) drops the handler's
//! future; had the dispatcher's call been that future, it would stop at its
//! next await — after committing its evidence but before answering, or
//! before recording a harness error it had found — and the attempt could
//! pass with a fault lost. So the call runs in a task of its own, which the
//! request only waits for. When that wait is abandoned, the task, once the
//! call has ended, records the harness error `answer_lost`: the agent never
//! saw the answer, so the attempt cannot pass.

use crate::AppState;
use crate::error::ApiError;
use serde_json::{Value, json};
use toolmock_runtime::ToolCall;
use toolmock_runtime::dispatcher::ResolvedCapability;
use toolmock_runtime::error::{HarnessCode, HarnessFault};
use toolmock_runtime::model::{AttemptId, TenantId};

/// Runs `call` under its resolved capability in its own task and waits
/// for its answer.
pub(crate) async fn call_to_its_end(
    state: &AppState,
    capability: ResolvedCapability,
    call: ToolCall,
) -> Result<Value, ApiError> {
    let (answer, answered) = tokio::sync::oneshot::channel();
    let state = state.clone();
    let (tenant, attempt) = (capability.tenant(), capability.attempt());
    tokio::spawn(async move {
        let result = state.dispatcher().call_resolved(&capability, &call).await;
        let outcome = match &result {
            Ok(_) => "answered".to_owned(),
            Err(e) => format!("ended with {}", e.code()),
        };
        if answer.send(result).is_err() {
            record_lost_answer(&state, tenant, attempt, &call, &outcome).await;
        }
    });
    match answered.await {
        Ok(result) => result.map_err(ApiError::from),
        // The task panicked: nothing says the call was recorded.
        Err(_) => Err(ApiError::Internal(
            "the tool call's task ended without an answer".into(),
        )),
    }
}

async fn record_lost_answer(
    state: &AppState,
    tenant: TenantId,
    attempt: AttemptId,
    call: &ToolCall,
    outcome: &str,
) {
    let fault = HarnessFault {
        code: HarnessCode::AnswerLost,
        message: format!(
            "the call {outcome}, but its answer never reached the caller \
             (the request timed out or the connection closed)"
        ),
        path: None,
    };
    let recorded = state
        .dispatcher()
        .record_fault(
            tenant,
            attempt,
            Some(call),
            None,
            fault,
            json!({ "call": outcome }),
        )
        .await;
    if let Err(e) = recorded {
        tracing::error!(attempt = %attempt.as_uuid(), error = %e,
            "a tool call whose answer was lost could not be recorded as a harness error");
    } else {
        tracing::warn!(attempt = %attempt.as_uuid(), tool = %call.tool, operation = %call.operation,
            "a tool call's answer was lost: recorded as harness error answer_lost");
    }
}
