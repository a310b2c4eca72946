//! The one way a fault reaches storage: [`Dispatcher::record_fault`].
//!
//! Every tool input error and every harness error toolmock records goes
//! through it — the call pipeline's refusals, a workflow's or a driver's
//! faults, a runner's, a worker's, a lost answer — except the two harness
//! errors a backend's finish writes in its own locked step (a ledger gap,
//! a finish after the lease). `crates/runtime/tests/one_fault_path.rs`
//! fails when any other code writes a fault to a backend.

use super::{Bound, Dispatcher, ToolCall};
use crate::backend::Backend;
use crate::error::{
    AttemptFault, DispatchError, HarnessCode, HarnessFault, StoreError, ToolInputFault,
};
use crate::model::{
    AttemptId, FaultCall, HarnessErrorRecord, PinRef, TenantId, ToolInputErrorRecord, sanitize,
    sanitize_text,
};
use serde_json::{Value, json};

impl<B: Backend> Dispatcher<B> {
    /// Records `fault` of `attempt` — of one of its calls (`call`, with its
    /// pin when the dispatcher found one; callers outside the dispatcher
    /// pass `None`), or of whatever drives it (a workflow, a runner, a
    /// worker) — in its own committed write, at the injected clock's now,
    /// with every U+0000 cleaned, and returns the fault recorded.
    ///
    /// What cannot be written as it is still fails the attempt: a tool
    /// input error that cannot be written is recorded as the harness error
    /// `storage_failed` instead (the agent's mistake was not kept, which is
    /// the harness's problem); a harness error that cannot be written is
    /// written again as `storage_failed` without the call's arguments (they
    /// may be what the store refused). That replacement is what is
    /// returned. When even it cannot be written, the storage failure is
    /// returned, and the attempt's begun-calls ledger (or this dispatcher's
    /// count of calls it could not mark) makes the finish see the gap.
    pub async fn record_fault(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        call: Option<&ToolCall>,
        pin: Option<&PinRef>,
        fault: impl Into<AttemptFault>,
        detail: Value,
    ) -> Result<AttemptFault, StoreError> {
        let site = call.map(|call| FaultCall {
            tool: &call.tool,
            operation: &call.operation,
            arguments: Some(&call.input),
            pin,
        });
        let (fault, detail) = match fault.into() {
            AttemptFault::ToolInput(fault) => {
                let record = ToolInputErrorRecord {
                    tenant,
                    attempt,
                    // Always a call's in practice; without one, the record
                    // names no tool and keeps no arguments.
                    tool: call.map(|c| sanitize_text(&c.tool)).unwrap_or_default(),
                    operation: call
                        .map(|c| sanitize_text(&c.operation))
                        .unwrap_or_default(),
                    pin: pin.cloned(),
                    arguments: call.map(|c| sanitize(c.input.clone())).unwrap_or_default(),
                    code: fault.code,
                    message: sanitize_text(&fault.message),
                    path: fault.path.as_deref().map(sanitize_text),
                    violations: sanitize(fault.violations.clone()),
                    at: self.clock.now(),
                };
                match self.backend.record_tool_input_error(&record).await {
                    Ok(()) => return Ok(AttemptFault::ToolInput(fault)),
                    Err(cause) => tool_input_lost(&fault, &cause),
                }
            }
            AttemptFault::Harness(fault) => (fault, detail),
        };
        tracing::warn!(%attempt, tool = site.map(|c| c.tool), operation = site.map(|c| c.operation), code = %fault.code, "harness error");
        let record =
            HarnessErrorRecord::new(tenant, attempt, site, &fault, detail, self.clock.now());
        let first = match self.backend.record_harness_error(&record).await {
            Ok(()) => return Ok(AttemptFault::Harness(fault)),
            Err(e) => e,
        };
        tracing::error!(%attempt, error = %first, "a harness error could not be recorded");
        let fallback = HarnessFault {
            code: HarnessCode::StorageFailed,
            message: format!(
                "the harness error {} could not be recorded: {first}",
                fault.code
            ),
            path: None,
        };
        let detail = json!({
            "fault": fault.code,
            "message": fault.message,
            "cause": first.to_string(),
        });
        let without_arguments = site.map(|c| FaultCall {
            arguments: None,
            ..c
        });
        let record = HarnessErrorRecord::new(
            tenant,
            attempt,
            without_arguments,
            &fallback,
            detail,
            self.clock.now(),
        );
        match self.backend.record_harness_error(&record).await {
            Ok(()) => Ok(AttemptFault::Harness(fallback)),
            Err(_) => Err(first),
        }
    }
}

impl<B: Backend> Dispatcher<B> {
    /// Ends a call of a bound attempt with `fault`, recorded through
    /// [`Dispatcher::record_fault`]: the fault as the call's error, or the
    /// storage failure that kept even `storage_failed` from being written
    /// (the attempt's ledger makes its finish see the gap).
    pub(super) async fn fail_call(
        &self,
        bound: &Bound,
        call: &ToolCall,
        pin: Option<&PinRef>,
        fault: impl Into<AttemptFault>,
        detail: Value,
    ) -> DispatchError {
        let binding = &bound.binding;
        let recorded = self
            .record_fault(
                binding.tenant,
                binding.attempt,
                Some(call),
                pin,
                fault,
                detail,
            )
            .await;
        match recorded {
            Ok(fault) => fault.into(),
            Err(e) => DispatchError::Store(e),
        }
    }
}

/// The `storage_failed` harness error (and its detail) that stands for a
/// tool input error storage refused.
fn tool_input_lost(fault: &ToolInputFault, cause: &StoreError) -> (HarnessFault, Value) {
    let detail = json!({
        "tool_input_error": fault.code,
        "message": sanitize_text(&fault.message),
        "cause": sanitize_text(&cause.to_string()),
    });
    let lost = HarnessFault {
        code: HarnessCode::StorageFailed,
        message: format!(
            "the tool input error {} could not be recorded ({}): {cause}",
            fault.code,
            cause.code()
        ),
        path: None,
    };
    (lost, detail)
}
