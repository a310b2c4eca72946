//! A workflow's effect node executed for real (real-tools runs only; a
//! sandbox start refuses effect nodes): marked as a call before anything
//! runs, executed by the real handlers once the lease is known live, and
//! recorded as evidence in the attempt's locked step exactly as a tool's
//! real call is — executor `real`, the fixture state left as it was, its
//! version moved by one. Its records name the workflow as the tool, the
//! node's id as the operation and the node itself as the pin
//! ([`PinRef::Effect`]).

use super::call::{elapsed_us, fault};
use super::{Dispatcher, ResolvedCapability, ToolCall};
use crate::backend::Backend;
use crate::error::{ApplyError, DispatchError, HarnessCode, StoreError};
use crate::model::{Capability, EffectKind, Executor, PinRef, Step, TenantId, has_nul, sanitize};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Instant;
use toolmock_contract::DefinitionHash;

impl<B: Backend> Dispatcher<B> {
    /// Executes `effect` for the attempt `capability` is bound to and
    /// returns the node's output. `node.tool` is the workflow's name,
    /// `node.operation` the node's id and `node.input` its configuration
    /// with its references resolved; `definition` is the hash of the node's
    /// definition. Every refusal or failure is a recorded harness error
    /// (`lease_expired`, `effect_not_executed`, `external_failed`,
    /// `storage_failed`), as for a tool's real call.
    pub async fn effect(
        &self,
        tenant: TenantId,
        capability: &Capability,
        effect: EffectKind,
        node: &ToolCall,
        definition: DefinitionHash,
    ) -> Result<Value, DispatchError> {
        let token = capability.hash();
        let (bound, live) = self.bind_step(tenant, &token).await?;
        let resolved = ResolvedCapability { bound, token, live };
        self.effect_resolved(&resolved, effect, node, definition)
            .await
    }

    /// [`Dispatcher::effect`] with a capability already resolved to its
    /// attempt (a workflow called by a caller that had resolved it, such as
    /// the API's per-attempt MCP endpoint): the capability is not looked up
    /// again. The lease is still read just before the real execution — a
    /// real side effect runs only on a lease known live at that moment, not
    /// at the moment the capability was resolved.
    pub async fn effect_resolved(
        &self,
        resolved: &ResolvedCapability,
        effect: EffectKind,
        node: &ToolCall,
        definition: DefinitionHash,
    ) -> Result<Value, DispatchError> {
        let started_at = self.clock.now();
        let clock = Instant::now();
        let (bound, token) = (&resolved.bound, resolved.token);
        let binding = &bound.binding;
        // The begin mark first, always (an effect is a real side effect):
        // the finish compares the marks with the records.
        self.mark_begun(bound, node, started_at).await?;
        let pin = PinRef::Effect {
            definition_hash: definition,
        };
        // Nothing real runs unless the lease is live.
        match self
            .backend
            .resolve_capability(binding.tenant, &token, self.clock.now())
            .await
        {
            Ok(check) if check.live => {}
            Ok(_) => {
                return Err(self.lease_expired(bound, node, Some(&pin), json!({})).await);
            }
            Err(StoreError::NotFound { .. }) => return Err(DispatchError::CapabilityRejected),
            Err(cause) => {
                return Err(self
                    .storage_failed(bound, node, Some(&pin), &cause, json!({}))
                    .await);
            }
        }
        let failed = |message: String| {
            fault(
                HarnessCode::ExternalFailed,
                format!(
                    "workflow {}, node {}: the real {} failed: {message}",
                    node.tool,
                    node.operation,
                    effect.as_str()
                ),
            )
        };
        if !self.executor.handles(effect) {
            let refused = fault(
                HarnessCode::EffectNotExecuted,
                format!(
                    "workflow {}, node {}: no handler executes {} effects here",
                    node.tool,
                    node.operation,
                    effect.as_str()
                ),
            );
            return Err(self
                .fail_call(bound, node, Some(&pin), refused, json!({}))
                .await);
        }
        let result = match self.executor.effect(effect, &node.input).await {
            Ok(result) if !has_nul(&result) => result,
            Ok(result) => {
                let fault = failed("its answer contains U+0000, which cannot be recorded".into());
                let detail = json!({ "external_result": sanitize(result) });
                return Err(self.fail_call(bound, node, Some(&pin), fault, detail).await);
            }
            Err(message) => {
                return Err(self
                    .fail_call(bound, node, Some(&pin), failed(message), json!({}))
                    .await);
            }
        };
        let detail = json!({ "external_result": result.clone() });
        let applied = self
            .backend
            .apply_call(binding, &token, started_at, false, |_| {
                Ok(Step {
                    updates: Vec::new(),
                    tool: node.tool.as_str().into(),
                    operation: node.operation.as_str().into(),
                    pin: Arc::new(pin.clone()),
                    executor: Executor::Real,
                    variant: None,
                    rule: None,
                    arguments: node.input.clone(),
                    result: result.clone(),
                    error: None,
                    delay_ms: 0,
                    started_at,
                    duration_us: elapsed_us(clock),
                })
            })
            .await;
        // The effect happened: when its evidence cannot be committed, the
        // harness error that says so carries its answer.
        match applied {
            Ok(applied) => Ok(applied.result),
            Err(ApplyError::LeaseExpired) => {
                Err(self.lease_expired(bound, node, Some(&pin), detail).await)
            }
            Err(ApplyError::CapabilityRejected) => Err(DispatchError::CapabilityRejected),
            Err(ApplyError::Store(cause)) => Err(self
                .storage_failed(bound, node, Some(&pin), &cause, detail)
                .await),
            Err(ApplyError::Call(error)) => Err(self.call_error(bound, node, &pin, error).await),
        }
    }
}
