//! A call's pipeline (SPEC §8) and the recording of what it refuses.

use super::pins::PinEntry;
use super::{Dispatcher, ToolCall, read, write};
use crate::backend::Backend;
use crate::error::{
    ApplyError, CallCode, DispatchError, HarnessCode, HarnessFault, StoreError, ToolInputFault,
};
use crate::model::{
    AttemptBinding, Capability, EvidenceDraft, Executor, HarnessErrorRecord, PinRef,
    SimulationMode, Step, TenantId, TokenHash, ToolInputErrorRecord,
};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolmock_evaluator::{Call, CallError, evaluate};

impl<B: Backend> Dispatcher<B> {
    /// Resolves a capability to its attempt, refusing unknown or foreign
    /// ones and recording `lease_expired` for a known attempt whose lease is
    /// not valid.
    async fn binding(
        &self,
        tenant: TenantId,
        token: &TokenHash,
        call: &ToolCall,
    ) -> Result<Arc<AttemptBinding>, DispatchError> {
        if let Some(found) = read(&self.bindings).get(token)
            && found.tenant == tenant
        {
            return Ok(found.clone());
        }
        let now = self.clock.now();
        let check = match self.backend.resolve_capability(tenant, token, now).await {
            Ok(check) => check,
            Err(StoreError::NotFound { .. }) => return Err(DispatchError::CapabilityRejected),
            Err(e) => return Err(e.into()),
        };
        let binding = Arc::new(check.binding);
        write(&self.bindings).insert(*token, binding.clone());
        if !check.live {
            return Err(self.lease_expired(&binding, call, None).await);
        }
        Ok(binding)
    }

    async fn lease_expired(
        &self,
        binding: &AttemptBinding,
        call: &ToolCall,
        pin: Option<&PinRef>,
    ) -> DispatchError {
        self.record_harness(
            binding,
            call,
            pin,
            HarnessFault {
                code: HarnessCode::LeaseExpired,
                message:
                    "the attempt is finished, its lease has expired or the capability was revoked"
                        .into(),
                path: None,
            },
            json!({}),
        )
        .await
    }

    /// Records a harness error in its own committed write and returns it as
    /// the call's error (a storage failure is returned instead when the
    /// record could not be written).
    async fn record_harness(
        &self,
        binding: &AttemptBinding,
        call: &ToolCall,
        pin: Option<&PinRef>,
        fault: HarnessFault,
        detail: Value,
    ) -> DispatchError {
        tracing::warn!(attempt = %binding.attempt, tool = %call.tool, operation = %call.operation, code = %fault.code, "harness error");
        let record = HarnessErrorRecord {
            tenant: binding.tenant,
            attempt: binding.attempt,
            tool: Some(call.tool.clone()),
            operation: Some(call.operation.clone()),
            pin: pin.cloned(),
            arguments: Some(call.input.clone()),
            code: fault.code,
            message: fault.message.clone(),
            path: fault.path.clone(),
            detail,
            at: self.clock.now(),
        };
        match self.backend.record_harness_error(&record).await {
            Ok(()) => DispatchError::Harness(fault),
            Err(e) => DispatchError::Store(e),
        }
    }

    /// A harness fault found before the locked step: when the capability is
    /// no longer live, the fault is `lease_expired` instead.
    async fn fault_before_step(
        &self,
        binding: &AttemptBinding,
        token: &TokenHash,
        call: &ToolCall,
        pin: Option<&PinRef>,
        fault: HarnessFault,
    ) -> DispatchError {
        match self
            .backend
            .resolve_capability(binding.tenant, token, self.clock.now())
            .await
        {
            Ok(check) if check.live => {
                self.record_harness(binding, call, pin, fault, json!({}))
                    .await
            }
            Ok(_) => self.lease_expired(binding, call, pin).await,
            Err(StoreError::NotFound { .. }) => DispatchError::CapabilityRejected,
            Err(e) => DispatchError::Store(e),
        }
    }

    async fn call_error(
        &self,
        binding: &AttemptBinding,
        call: &ToolCall,
        pin: &PinRef,
        error: CallError,
    ) -> DispatchError {
        let violations = serde_json::to_value(error.violations()).unwrap_or(Value::Array(vec![]));
        match CallCode::of(&error) {
            CallCode::ToolInput(code) => {
                let fault = ToolInputFault {
                    code,
                    message: error.to_string(),
                    path: error.path().map(str::to_owned),
                    violations,
                };
                let record = ToolInputErrorRecord {
                    tenant: binding.tenant,
                    attempt: binding.attempt,
                    tool: call.tool.clone(),
                    operation: call.operation.clone(),
                    pin: Some(pin.clone()),
                    arguments: call.input.clone(),
                    code,
                    message: fault.message.clone(),
                    path: fault.path.clone(),
                    violations: fault.violations.clone(),
                    at: self.clock.now(),
                };
                match self.backend.record_tool_input_error(&record).await {
                    Ok(()) => DispatchError::ToolInput(fault),
                    Err(e) => DispatchError::Store(e),
                }
            }
            CallCode::Harness(code) => {
                let fault = HarnessFault {
                    code,
                    message: error.to_string(),
                    path: error.path().map(str::to_owned),
                };
                self.record_harness(
                    binding,
                    call,
                    Some(pin),
                    fault,
                    json!({ "violations": violations }),
                )
                .await
            }
        }
    }

    /// Runs one call through SPEC §8's pipeline and returns exactly the
    /// rendered result (no wrapper).
    ///
    /// Find the pin (none: `missing_definition`; an unknown tool or
    /// operation: `unknown_tool`, never executed), validate the input,
    /// then in the fixture store's locked step evaluate the pinned mock,
    /// validate the output, commit the new state with its evidence; then
    /// apply the delay. Every tool input error and harness error is recorded
    /// in its own committed write before this returns.
    pub async fn call(
        &self,
        tenant: TenantId,
        capability: &Capability,
        call: &ToolCall,
    ) -> Result<Value, DispatchError> {
        let started_at = self.clock.now();
        let clock = Instant::now();
        let token = capability.hash();
        let binding = self.binding(tenant, &token, call).await?;
        // Every way of not finding a usable pin is a harness fault, recorded
        // before the call returns; only a storage failure is not.
        let fault = |code: HarnessCode, message: String| HarnessFault {
            code,
            message,
            path: None,
        };
        let found = match self.pin_set(&binding).await {
            Ok(pins) => match pins.get(&call.tool, &call.operation) {
                Some(PinEntry::Pinned(pin)) => Ok((pin.clone(), pins.mode)),
                Some(PinEntry::Unpinned(reason)) => Err(fault(
                    HarnessCode::MissingDefinition,
                    format!(
                        "{}/{} has no pinned definition (it was {reason} at the start)",
                        call.tool, call.operation
                    ),
                )),
                Some(PinEntry::Unreadable(message)) => Err(fault(
                    HarnessCode::UnreadablePin,
                    format!(
                        "the pin of {}/{} is unreadable: {message}",
                        call.tool, call.operation
                    ),
                )),
                None => Err(fault(
                    HarnessCode::UnknownTool,
                    format!(
                        "{}/{} is not a tool operation this simulation can reach; it was not executed",
                        call.tool, call.operation
                    ),
                )),
            },
            Err(StoreError::Corrupt { what, message }) => Err(fault(
                HarnessCode::UnreadablePin,
                format!("stored {what} is unreadable: {message}"),
            )),
            Err(e) => return Err(e.into()),
        };
        let (pin, mode) = match found {
            Ok(found) => found,
            Err(fault) => {
                return Err(self
                    .fault_before_step(&binding, &token, call, None, fault)
                    .await);
            }
        };
        if let Err(error) = pin.contract.validate_input(&call.input) {
            return Err(self.call_error(&binding, call, &pin.pin, error).await);
        }
        let variant = binding.variant_for(&call.tool, &call.operation);
        let applied = match mode {
            SimulationMode::Sandbox => {
                self.backend
                    .apply_call(&binding, &token, started_at, |state| {
                        let outcome = evaluate(
                            &pin.definition,
                            &Call {
                                input: &call.input,
                                state,
                                variant,
                            },
                        )?;
                        pin.contract.validate_output(&outcome.result)?;
                        let toolmock_evaluator::Outcome {
                            variant,
                            rule,
                            result,
                            state_updates,
                            delay_ms,
                        } = outcome;
                        Ok(Step {
                            updates: state_updates
                                .into_iter()
                                .map(|(k, v)| (k.to_owned(), v))
                                .collect(),
                            evidence: EvidenceDraft {
                                tool: pin.tool.clone(),
                                operation: pin.operation.clone(),
                                pin: pin.pin.clone(),
                                executor: Executor::Mock,
                                variant: Some(pin.variant(variant)),
                                rule: rule.map(|r| u32::try_from(r).unwrap_or(u32::MAX)),
                                arguments: call.input.clone(),
                                result,
                                delay_ms,
                                started_at,
                                duration_us: elapsed_us(clock),
                            },
                        })
                    })
                    .await
            }
            SimulationMode::RealTools => {
                let result = match self
                    .executor
                    .execute(&call.tool, &call.operation, &call.input)
                    .await
                {
                    Ok(result) => result,
                    Err(message) => return Err(DispatchError::External(message)),
                };
                if let Err(error) = pin.contract.validate_output(&result) {
                    return Err(self.call_error(&binding, call, &pin.pin, error).await);
                }
                self.backend
                    .apply_call(&binding, &token, started_at, |_| {
                        Ok(Step {
                            updates: Vec::new(),
                            evidence: EvidenceDraft {
                                tool: pin.tool.clone(),
                                operation: pin.operation.clone(),
                                pin: pin.pin.clone(),
                                executor: Executor::External,
                                variant: None,
                                rule: None,
                                arguments: call.input.clone(),
                                result,
                                delay_ms: 0,
                                started_at,
                                duration_us: elapsed_us(clock),
                            },
                        })
                    })
                    .await
            }
        };
        match applied {
            Ok(applied) => {
                if applied.delay_ms > 0 {
                    self.sleeper
                        .sleep(Duration::from_millis(u64::from(applied.delay_ms)))
                        .await;
                }
                Ok(applied.result)
            }
            Err(ApplyError::Call(error)) => {
                Err(self.call_error(&binding, call, &pin.pin, error).await)
            }
            Err(ApplyError::LeaseExpired) => {
                Err(self.lease_expired(&binding, call, Some(&pin.pin)).await)
            }
            Err(ApplyError::CapabilityRejected) => Err(DispatchError::CapabilityRejected),
            Err(ApplyError::Store(e)) => Err(e.into()),
        }
    }
}

fn elapsed_us(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX)
}
