//! A call's pipeline (docs/spec.md §8) and the recording of what it refuses.
//!
//! The order is what keeps faults from passing: the lease is checked before
//! anything else happens (under the state lock in a sandbox run, before the
//! real execution in a real-tools run), every refusal is recorded before the
//! call returns, and a refusal that cannot be recorded as it is becomes a
//! `storage_failed` harness error — or, when even that cannot be written, a
//! call the attempt's ledger counted and its records lack, which
//! `finish_attempt` turns into `harness_error` (docs/data-model.md, "Faults
//! that cannot be written").

use super::pins::{PinEntry, ResolvedPin};
use super::{Bound, Dispatcher, ResolvedCapability, ToolCall, read, write};
use crate::backend::Backend;
use crate::error::{
    ApplyError, CallFault, DispatchError, HarnessCode, HarnessFault, StoreError, ToolInputFault,
};
use crate::model::{
    Applied, AttemptId, Capability, Executor, PinRef, SimulationMode, Step, TenantId, TokenHash,
    has_nul, sanitize, sanitize_text,
};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use toolmock_evaluator::{
    CallError, CompiledContract, CompiledDefinition, LayeredOutcome, StateView, evaluate_layered,
};

/// A capability resolved to its attempt.
pub(super) enum Resolved {
    /// Its attempt, and whether the lease was live when resolved (`None`
    /// for a cached binding: liveness is then checked later, before
    /// anything happens).
    Bound {
        bound: Arc<Bound>,
        live: Option<bool>,
    },
    /// Unknown, or another tenant's: nothing to record it on.
    Rejected,
    /// Storage failed before the attempt was known.
    Unreadable(StoreError),
}

/// What the pins say about a called operation.
enum PinLookup {
    /// Its pin, and the simulation's mode.
    Pinned {
        pin: Arc<ResolvedPin>,
        mode: SimulationMode,
    },
    /// No usable pin: the harness fault that says why.
    Fault(HarnessFault),
    /// Storage failed before the pins could be read.
    Unreadable(StoreError),
}

/// How a real-tools call went before its answer is made.
enum RealCall {
    /// The real tool ran; the locked step that records it answered this.
    Ran(Result<Applied, ApplyError>),
    /// Refused or failed before or during the real execution, already
    /// recorded: the call's final answer.
    Ended(DispatchError),
}

impl<B: Backend> Dispatcher<B> {
    /// Runs one call through docs/spec.md §8's pipeline and returns exactly the
    /// rendered result (no wrapper).
    ///
    /// Resolve the capability; find the pin (none: `missing_definition`; an
    /// unknown tool or operation: `unknown_tool`, never executed); then, in
    /// the fixture store's locked step, check the lease, validate the input,
    /// evaluate the pinned mock, validate the output and commit the new state
    /// with its evidence; then apply the delay. A real-tools run checks the
    /// lease and the input before it executes anything. Every tool input
    /// error and harness error is recorded in its own committed write before
    /// this returns; after the lease has ended every call is `lease_expired`.
    pub async fn call(
        &self,
        tenant: TenantId,
        capability: &Capability,
        call: &ToolCall,
    ) -> Result<Value, DispatchError> {
        let (bound, live) = self.bind_step(tenant, &capability.hash()).await?;
        let resolved = ResolvedCapability {
            bound,
            token: capability.hash(),
            live,
        };
        self.call_resolved(&resolved, call).await
    }

    /// [`Dispatcher::call`] with a capability already resolved to its
    /// attempt ([`Dispatcher::adopt_capability`],
    /// [`Dispatcher::cached_capability`]): the same pipeline, without a
    /// second lookup of the capability.
    pub async fn call_resolved(
        &self,
        resolved: &ResolvedCapability,
        call: &ToolCall,
    ) -> Result<Value, DispatchError> {
        let started_at = self.clock.now();
        let clock = Instant::now();
        let (bound, token, live) = (&resolved.bound, resolved.token, resolved.live);
        // The begin mark, committed before anything of the call happens:
        // whichever process finishes the attempt compares the marks with the
        // attempt's records. A call that cannot be marked is not processed;
        // this dispatcher counts it for its own finish.
        //
        // When the backend folds the mark for this attempt (a worker's own,
        // under its fence), a sandbox call leaves it pending: the locked
        // step writes it in the same commit as the evidence, and any other
        // ending writes it first, before the call's record. That is safe
        // because nothing a sandbox call does before that commit is seen
        // outside the process: the step is a pure evaluation with no real
        // side effect, and a crash of the holding process before the
        // commit leaves neither mark nor evidence while its lease runs
        // out, so the attempt ends as `harness_error` (`lease_expired`)
        // anyway. A real-tools call, whose execution is a side effect,
        // always marks first.
        let pending = live != Some(false) && self.backend.folds_begin_mark(bound.binding.attempt);
        if !pending {
            self.mark_begun(bound, call, started_at).await?;
        }
        match live {
            Some(false) => Err(self.lease_expired(bound, call, None, json!({})).await),
            _ => {
                self.dispatch(bound, &token, call, started_at, clock, pending)
                    .await
            }
        }
    }

    /// The attempt a call or an effect about to begin is bound to, and
    /// whether its lease was live when read (`None`: a cached binding, its
    /// lease checked later). A capability storage could not read is counted
    /// as one of its attempt's unrecorded calls, so that the attempt's
    /// finish waits for it instead of passing without it.
    pub(super) async fn bind_step(
        &self,
        tenant: TenantId,
        token: &TokenHash,
    ) -> Result<(Arc<Bound>, Option<bool>), DispatchError> {
        match self.resolve_capability(tenant, token).await {
            Resolved::Bound { bound, live } => Ok((bound, live)),
            Resolved::Rejected => Err(DispatchError::CapabilityRejected),
            Resolved::Unreadable(e) => {
                self.note_unresolved(tenant, *token);
                Err(DispatchError::Store(e))
            }
        }
    }

    /// Writes a call's begin mark in a commit of its own; when it cannot
    /// be written, counts the call as unmarked and answers the
    /// `storage_failed` that the call ends with, unprocessed.
    pub(super) async fn mark_begun(
        &self,
        bound: &Bound,
        call: &ToolCall,
        at: DateTime<Utc>,
    ) -> Result<(), DispatchError> {
        let binding = &bound.binding;
        let Err(cause) = self
            .backend
            .begin_call(binding.tenant, binding.attempt, at)
            .await
        else {
            return Ok(());
        };
        bound.unmarked.fetch_add(1, Ordering::Relaxed);
        let detail = json!({ "begin_mark": "the call's begin mark could not be written; it was not processed" });
        Err(self.storage_failed(bound, call, None, &cause, detail).await)
    }

    async fn dispatch(
        &self,
        bound: &Bound,
        token: &TokenHash,
        call: &ToolCall,
        started_at: DateTime<Utc>,
        clock: Instant,
        pending: bool,
    ) -> Result<Value, DispatchError> {
        let lookup = self.pin_for(bound, call).await;
        // A pending mark stays pending only into a sandbox's locked step.
        let sandbox = matches!(
            lookup,
            PinLookup::Pinned {
                mode: SimulationMode::Sandbox,
                ..
            }
        );
        if pending && !sandbox {
            self.mark_begun(bound, call, started_at).await?;
        }
        let (pin, mode) = match lookup {
            PinLookup::Pinned { pin, mode } => (pin, mode),
            PinLookup::Unreadable(cause) => {
                return Err(self
                    .storage_failed(bound, call, None, &cause, json!({}))
                    .await);
            }
            PinLookup::Fault(fault) => {
                return Err(self.fault_before_step(bound, token, call, fault).await);
            }
        };
        let applied = match mode {
            SimulationMode::Sandbox => {
                let step = sandbox_step(bound, call, &pin, started_at, clock);
                let applied = self
                    .backend
                    .apply_call(&bound.binding, token, started_at, pending, step)
                    .await;
                // Refused or failed, the step wrote no mark: the call's
                // mark goes before its record.
                if pending && applied.is_err() {
                    self.mark_begun(bound, call, started_at).await?;
                }
                applied
            }
            SimulationMode::RealTools => {
                match self
                    .real_tools(bound, token, call, &pin, started_at, clock)
                    .await
                {
                    RealCall::Ran(applied) => applied,
                    RealCall::Ended(refused) => return Err(refused),
                }
            }
        };
        match applied {
            Ok(applied) => {
                if applied.delay_ms > 0 {
                    self.sleeper
                        .sleep(Duration::from_millis(u64::from(applied.delay_ms)))
                        .await;
                }
                // A domain error is committed evidence like a result; the
                // caller tells the agent it is a tool error.
                match applied.error {
                    Some(error) => Err(DispatchError::Domain(error)),
                    None => Ok(applied.result),
                }
            }
            Err(ApplyError::Call(error)) => {
                Err(self.call_error(bound, call, &pin.pin, error).await)
            }
            Err(ApplyError::LeaseExpired) => Err(self
                .lease_expired(bound, call, Some(&pin.pin), json!({}))
                .await),
            Err(ApplyError::CapabilityRejected) => Err(DispatchError::CapabilityRejected),
            Err(ApplyError::Store(cause)) => Err(self
                .storage_failed(bound, call, Some(&pin.pin), &cause, json!({}))
                .await),
        }
    }

    /// A real-tools call: nothing real runs unless the lease is live and the
    /// input valid; a failed or unrecordable execution is a recorded harness
    /// error.
    async fn real_tools(
        &self,
        bound: &Bound,
        token: &TokenHash,
        call: &ToolCall,
        pin: &ResolvedPin,
        started_at: DateTime<Utc>,
        clock: Instant,
    ) -> RealCall {
        let binding = &bound.binding;
        match self
            .backend
            .resolve_capability(binding.tenant, token, self.clock.now())
            .await
        {
            Ok(check) if check.live => {}
            Ok(_) => {
                return RealCall::Ended(
                    self.lease_expired(bound, call, Some(&pin.pin), json!({}))
                        .await,
                );
            }
            Err(StoreError::NotFound { .. }) => {
                return RealCall::Ended(DispatchError::CapabilityRejected);
            }
            Err(cause) => {
                return RealCall::Ended(
                    self.storage_failed(bound, call, Some(&pin.pin), &cause, json!({}))
                        .await,
                );
            }
        }
        if let Err(error) = pin.contract.validate_input(&call.input) {
            return RealCall::Ended(self.call_error(bound, call, &pin.pin, error).await);
        }
        let result = match self
            .executor
            .execute(&call.tool, &call.operation, &call.input)
            .await
        {
            Ok(result) if !has_nul(&result) => result,
            Ok(result) => {
                let fault = fault(
                    HarnessCode::ExternalFailed,
                    "the real result contains U+0000, which cannot be recorded".into(),
                );
                let detail = json!({ "external_result": sanitize(result) });
                return RealCall::Ended(
                    self.fail_call(bound, call, Some(&pin.pin), fault, detail)
                        .await,
                );
            }
            Err(message) => {
                let fault = fault(
                    HarnessCode::ExternalFailed,
                    format!(
                        "the real {}/{} failed: {message}",
                        call.tool, call.operation
                    ),
                );
                return RealCall::Ended(
                    self.fail_call(bound, call, Some(&pin.pin), fault, json!({}))
                        .await,
                );
            }
        };
        if let Err(error) = pin.contract.validate_output(&result) {
            return RealCall::Ended(self.call_error(bound, call, &pin.pin, error).await);
        }
        let detail = json!({ "external_result": result.clone() });
        let applied = self
            .backend
            .apply_call(binding, token, started_at, false, |_| {
                Ok(Step {
                    updates: Vec::new(),
                    tool: pin.tool.clone(),
                    operation: pin.operation.clone(),
                    pin: pin.pin.clone(),
                    executor: Executor::Real,
                    variant: None,
                    rule: None,
                    arguments: call.input.clone(),
                    result: result.clone(),
                    error: None,
                    delay_ms: 0,
                    started_at,
                    duration_us: elapsed_us(clock),
                })
            })
            .await;
        // The real call happened: when its evidence cannot be committed, the
        // harness error that says so carries its result.
        match applied {
            Err(ApplyError::LeaseExpired) => RealCall::Ended(
                self.lease_expired(bound, call, Some(&pin.pin), detail)
                    .await,
            ),
            Err(ApplyError::Store(cause)) => RealCall::Ended(
                self.storage_failed(bound, call, Some(&pin.pin), &cause, detail)
                    .await,
            ),
            other => RealCall::Ran(other),
        }
    }

    /// Resolves a capability to its attempt: a cached binding as it is (its
    /// lease is checked later, before anything happens), otherwise from
    /// storage, with its liveness.
    pub(super) async fn resolve_capability(&self, tenant: TenantId, token: &TokenHash) -> Resolved {
        if let Some(found) = read(&self.bindings).get(token)
            && found.binding.tenant == tenant
        {
            return Resolved::Bound {
                bound: found.clone(),
                live: None,
            };
        }
        let check = match self
            .backend
            .resolve_capability(tenant, token, self.clock.now())
            .await
        {
            Ok(check) => check,
            Err(StoreError::NotFound { .. }) => return Resolved::Rejected,
            Err(e) => return Resolved::Unreadable(e),
        };
        let bound = Arc::new(Bound {
            unmarked: self.unmarked_of(check.binding.attempt),
            binding: check.binding,
        });
        write(&self.bindings).insert(*token, bound.clone());
        Resolved::Bound {
            bound,
            live: Some(check.live),
        }
    }

    /// The pin of the called operation, a harness fault saying why there is
    /// none, or the storage failure that kept it from being read.
    async fn pin_for(&self, bound: &Bound, call: &ToolCall) -> PinLookup {
        let pins = match self.pin_set(&bound.binding).await {
            Ok(pins) => pins,
            Err(StoreError::Corrupt { what, message }) => {
                return PinLookup::Fault(fault(
                    HarnessCode::UnreadablePin,
                    format!("stored {what} is unreadable: {message}"),
                ));
            }
            Err(e) => return PinLookup::Unreadable(e),
        };
        match pins.get(&call.tool, &call.operation) {
            Some(PinEntry::Pinned(pin)) => PinLookup::Pinned {
                pin: pin.clone(),
                mode: pins.mode,
            },
            Some(PinEntry::Unpinned(reason)) => PinLookup::Fault(fault(
                HarnessCode::MissingDefinition,
                format!(
                    "{}/{} has no pinned definition (it was {reason} at the start)",
                    call.tool, call.operation
                ),
            )),
            Some(PinEntry::Unreadable(message)) => PinLookup::Fault(fault(
                HarnessCode::UnreadablePin,
                format!(
                    "the pin of {}/{} is unreadable: {message}",
                    call.tool, call.operation
                ),
            )),
            None => PinLookup::Fault(fault(
                HarnessCode::UnknownTool,
                format!(
                    "{}/{} is not a tool operation this simulation can reach; it was not executed",
                    call.tool, call.operation
                ),
            )),
        }
    }

    /// A harness fault found before the locked step: when the capability is
    /// no longer live, the fault is `lease_expired` instead.
    async fn fault_before_step(
        &self,
        bound: &Bound,
        token: &TokenHash,
        call: &ToolCall,
        fault: HarnessFault,
    ) -> DispatchError {
        let binding = &bound.binding;
        match self
            .backend
            .resolve_capability(binding.tenant, token, self.clock.now())
            .await
        {
            Ok(check) if check.live => self.fail_call(bound, call, None, fault, json!({})).await,
            Ok(_) => self.lease_expired(bound, call, None, json!({})).await,
            Err(StoreError::NotFound { .. }) => DispatchError::CapabilityRejected,
            Err(cause) => {
                let detail =
                    json!({ "fault": fault.code, "message": sanitize_text(&fault.message) });
                self.storage_failed(bound, call, None, &cause, detail).await
            }
        }
    }

    pub(super) async fn lease_expired(
        &self,
        bound: &Bound,
        call: &ToolCall,
        pin: Option<&PinRef>,
        detail: Value,
    ) -> DispatchError {
        let fault = fault(
            HarnessCode::LeaseExpired,
            "the attempt is finished, its lease has expired or the capability was revoked".into(),
        );
        self.fail_call(bound, call, pin, fault, detail).await
    }

    /// A storage failure during a call, recorded as the harness error
    /// `storage_failed` with its cause when storage still allows.
    pub(super) async fn storage_failed(
        &self,
        bound: &Bound,
        call: &ToolCall,
        pin: Option<&PinRef>,
        cause: &StoreError,
        mut detail: Value,
    ) -> DispatchError {
        if let Value::Object(map) = &mut detail {
            map.insert(
                "cause".into(),
                Value::String(sanitize_text(&cause.to_string())),
            );
        }
        let fault = fault(
            HarnessCode::StorageFailed,
            format!("storage failed during the call ({}): {cause}", cause.code()),
        );
        self.fail_call(bound, call, pin, fault, detail).await
    }

    /// Records that a call of `attempt` ran to its end but its answer never
    /// reached the caller — the request timed out, the client hung up, the
    /// transport could not write it: the harness error `answer_lost`, so
    /// that the attempt cannot pass (its evidence shows an answer the agent
    /// never saw). `ended_with` is the code the call ended with (`None`: it
    /// was answered). Every surface that answers tool calls (the API's
    /// `tool-calls` and `mcp`, `toolmock serve`) records a lost answer
    /// through here; a failure to record is logged, and the begun-calls
    /// ledger still stands.
    pub async fn record_lost_answer(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        call: Option<&ToolCall>,
        ended_with: Option<&str>,
    ) {
        let outcome =
            ended_with.map_or_else(|| "answered".to_owned(), |c| format!("ended with {c}"));
        let fault = HarnessFault {
            code: HarnessCode::AnswerLost,
            message: format!(
                "the call {outcome}, but its answer never reached the caller \
                 (the request timed out, the connection closed or the answer could not be written)"
            ),
            path: None,
        };
        let detail = json!({ "call": outcome });
        match self
            .record_fault(tenant, attempt, call, None, fault, detail)
            .await
        {
            Ok(_) => tracing::warn!(attempt = %attempt.as_uuid(),
                "a tool call's answer was lost: recorded as harness error answer_lost"),
            Err(e) => tracing::error!(attempt = %attempt.as_uuid(), error = %e,
                "a tool call whose answer was lost could not be recorded as a harness error"),
        }
    }

    pub(super) async fn call_error(
        &self,
        bound: &Bound,
        call: &ToolCall,
        pin: &PinRef,
        error: CallError,
    ) -> DispatchError {
        let violations = serde_json::to_value(error.violations()).unwrap_or(Value::Array(vec![]));
        match CallFault::of(&error) {
            CallFault::ToolInput(code) => {
                let fault = ToolInputFault {
                    code,
                    message: error.to_string(),
                    path: error.path().map(str::to_owned),
                    violations,
                };
                self.fail_call(bound, call, Some(pin), fault, json!({}))
                    .await
            }
            CallFault::Harness(code) => {
                let fault = HarnessFault {
                    code,
                    message: error.to_string(),
                    path: error.path().map(str::to_owned),
                };
                self.fail_call(
                    bound,
                    call,
                    Some(pin),
                    fault,
                    json!({ "violations": violations }),
                )
                .await
            }
        }
    }
}

/// What a sandbox call answers over `state`, before anything is recorded
/// or committed: the input validated against the contract, the mock
/// evaluated, the result validated against the output schema (a domain
/// error is not: the schema describes results). Pure: the locked step of
/// every backend runs it, and so does a caller that keeps an attempt's
/// state itself (the Python package's `Attempt`), which then commits the
/// outcome's patches only when this returned `Ok`.
pub fn sandbox_answer<'d>(
    contract: &CompiledContract,
    definition: &'d CompiledDefinition,
    input: &Value,
    state: StateView<'_>,
    variant: Option<&str>,
) -> Result<LayeredOutcome<'d>, CallError> {
    contract.validate_input(input)?;
    // Through the caller's view of the state: for a backend, a shared base
    // and the attempt's overlay, never a copy of the base.
    let outcome = evaluate_layered(definition, input, state, variant)?;
    if outcome.error.is_none() {
        contract.validate_output(&outcome.result)?;
    }
    Ok(outcome)
}

/// A sandbox call's step, run by `apply_call` on the attempt's state after
/// the lease check: [`sandbox_answer`], as evidence. Free of side effects,
/// so a backend may run it again.
fn sandbox_step<'a>(
    bound: &'a Bound,
    call: &'a ToolCall,
    pin: &'a ResolvedPin,
    started_at: DateTime<Utc>,
    clock: Instant,
) -> impl Fn(toolmock_evaluator::StateView<'_>) -> Result<Step, CallError> + Send + 'a {
    let variant = bound.binding.variant_for(&call.tool, &call.operation);
    move |state| {
        let outcome = sandbox_answer(&pin.contract, &pin.definition, &call.input, state, variant)?;
        let LayeredOutcome {
            variant,
            rule,
            result,
            error,
            patches,
            delay_ms,
        } = outcome;
        Ok(Step {
            updates: patches
                .into_iter()
                .map(|(k, p)| (k.to_owned(), p))
                .collect(),
            tool: pin.tool.clone(),
            operation: pin.operation.clone(),
            pin: pin.pin.clone(),
            executor: Executor::Mock,
            variant: Some(pin.variant(variant)),
            rule: rule.map(|r| u32::try_from(r).unwrap_or(u32::MAX)),
            arguments: call.input.clone(),
            result,
            error,
            delay_ms,
            started_at,
            duration_us: elapsed_us(clock),
        })
    }
}

pub(super) fn fault(code: HarnessCode, message: String) -> HarnessFault {
    HarnessFault {
        code,
        message,
        path: None,
    }
}

pub(super) fn elapsed_us(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX)
}
