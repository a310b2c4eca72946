//! A tool call, once accepted, runs to its recorded end whatever happens to
//! the HTTP request that carried it.
//!
//! The request's time-out (or a client that hangs up) drops the handler's
//! future; had the dispatcher's call been that future, it would stop at its
//! next await — after committing its evidence but before answering, or
//! before recording a harness error it had found — and the attempt could
//! pass with a fault lost. So the call runs in a task of its own, which the
//! request only waits for. When that wait is abandoned, the task, once the
//! call has ended, records the harness error `answer_lost`
//! (`Dispatcher::record_lost_answer`, shared with the MCP surfaces): the
//! agent never saw the answer, so the attempt cannot pass.

use crate::AppState;
use crate::error::ApiError;
use serde_json::Value;
use toolmock_runtime::ToolCall;
use toolmock_runtime::dispatcher::ResolvedCapability;

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
        let ended_with = result.as_ref().err().map(|e| e.code());
        if answer.send(result).is_err() {
            state
                .dispatcher()
                .record_lost_answer(tenant, attempt, Some(&call), ended_with)
                .await;
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
