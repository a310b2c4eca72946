//! Runs a workflow's control flow for real; its tool nodes (and nested
//! workflows) go through the dispatcher with the calling attempt's capability,
//! so they share the attempt's fixture state and every harness error is
//! recorded on the attempt — even when a `catch` node handles it.

use crate::document::CallStatus;
use crate::reference::{render, resolve_path, split_head};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use toolmock_contract::DefinitionHash;
use toolmock_runtime::backend::Backend;
use toolmock_runtime::dispatcher::{Dispatcher, ResolvedCapability, ToolCall};
use toolmock_runtime::error::{DispatchError, HarnessCode, HarnessFault};
use toolmock_runtime::model::Capability;
use toolmock_runtime::model::{AttemptId, TenantId};
use toolmock_runtime::model::{NodeDoc, WorkflowDoc};

/// A boxed, sendable future: a workflow runs its nested workflows recursively.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The attempt a workflow runs in: everything its calls need.
pub struct AttemptContext<'a, B> {
    /// The dispatcher.
    pub dispatcher: &'a Dispatcher<B>,
    /// The tenant.
    pub tenant: TenantId,
    /// The attempt.
    pub attempt: AttemptId,
    /// Its capability.
    pub capability: &'a Capability,
    /// The capability already resolved to the attempt, when the caller had
    /// to resolve it anyway (the API's per-attempt MCP endpoint): every call
    /// and effect of a workflow then goes through it, so a workflow's nodes
    /// never look the capability up again. `None`: each call resolves it
    /// (from the dispatcher's bindings after the first).
    pub resolved: Option<&'a ResolvedCapability>,
    /// The agent's workflows, by name.
    pub workflows: &'a HashMap<String, WorkflowDoc>,
}

impl<B> std::fmt::Debug for AttemptContext<'_, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AttemptContext")
            .field("attempt", &self.attempt)
            .finish_non_exhaustive()
    }
}

/// How a call (of a tool or a workflow) failed.
#[derive(Debug)]
pub enum CallFailure {
    /// A recorded tool input error, harness error or (version 2) domain
    /// error, as the caller sees it.
    Recorded {
        /// `tool_input_error`, `harness_error` or `domain_error`.
        class: CallStatus,
        /// Its code.
        code: String,
        /// Its message.
        message: String,
        /// The tool input error's schema violations (`[]` otherwise).
        violations: Value,
    },
    /// Nothing could be recorded (storage failed, capability refused): the
    /// run cannot go on.
    Fatal(DispatchError),
}

impl CallFailure {
    /// From a dispatcher error.
    pub fn from_dispatch(error: DispatchError) -> Self {
        match error {
            DispatchError::ToolInput(f) => CallFailure::Recorded {
                class: CallStatus::ToolInputError,
                code: f.code.to_string(),
                message: f.message,
                violations: f.violations,
            },
            DispatchError::Harness(f) => CallFailure::Recorded {
                class: CallStatus::HarnessError,
                code: f.code.to_string(),
                message: f.message,
                violations: Value::Array(vec![]),
            },
            // Recorded as evidence: an answer the caller sees as a tool error.
            DispatchError::Domain(e) => CallFailure::Recorded {
                class: CallStatus::DomainError,
                code: e.code,
                message: e.message,
                violations: Value::Array(vec![]),
            },
            other => CallFailure::Fatal(other),
        }
    }
}

impl<B: Backend> AttemptContext<'_, B> {
    /// One tool call through the dispatcher.
    pub async fn call_tool(
        &self,
        tool: &str,
        operation: &str,
        arguments: Value,
    ) -> Result<Value, CallFailure> {
        let call = ToolCall::new(tool, operation, arguments);
        match self.resolved {
            Some(resolved) => self.dispatcher.call_resolved(resolved, &call).await,
            None => {
                self.dispatcher
                    .call(self.tenant, self.capability, &call)
                    .await
            }
        }
        .map_err(CallFailure::from_dispatch)
    }

    /// Records a harness error of the workflow engine itself (a run-away
    /// loop, an unresolvable reference): the attempt can no longer pass.
    pub async fn harness_error(&self, code: HarnessCode, message: String) -> CallFailure {
        let fault = HarnessFault {
            code,
            message,
            path: None,
        };
        match self
            .dispatcher
            .record_fault(self.tenant, self.attempt, None, None, fault, json!({}))
            .await
        {
            Ok(recorded) => CallFailure::Recorded {
                class: CallStatus::HarnessError,
                code: recorded.code().to_owned(),
                message: recorded.message().to_owned(),
                violations: Value::Array(vec![]),
            },
            Err(e) => CallFailure::Fatal(DispatchError::Store(e)),
        }
    }

    /// Runs workflow `name` with `input`. `budget` is the number of node
    /// executions left for this run and every run nested in it.
    pub fn run_workflow<'s>(
        &'s self,
        name: &'s str,
        input: Value,
        budget: Option<&'s mut u32>,
    ) -> BoxFuture<'s, Result<Value, CallFailure>>
    where
        B: 'static,
    {
        Box::pin(async move {
            let Some(workflow) = self.workflows.get(name) else {
                return Err(self
                    .harness_error(
                        HarnessCode::InvalidWorkflow,
                        format!("the agent has no workflow {name}"),
                    )
                    .await);
            };
            let mut own = workflow.step_limit();
            let budget = match budget {
                Some(b) => b,
                None => &mut own,
            };
            let mut outputs: Map<String, Value> = Map::new();
            let mut current = workflow.start_node().map(str::to_owned);
            while let Some(id) = current.take() {
                if *budget == 0 {
                    return Err(self
                        .harness_error(
                            HarnessCode::WorkflowStepLimit,
                            format!(
                                "workflow {name} ran more nodes than its step limit allows (at node {id})"
                            ),
                        )
                        .await);
                }
                *budget -= 1;
                let Some(node) = workflow.node(&id) else {
                    return Err(self
                        .harness_error(
                            HarnessCode::InvalidWorkflow,
                            format!("workflow {name} has no node {id}"),
                        )
                        .await);
                };
                let lookup = |operator: &str, path: &str| -> Option<Value> {
                    match operator {
                        "$input" => resolve_path(&input, path).cloned(),
                        "$node" => {
                            let (node, rest) = split_head(path);
                            resolve_path(outputs.get(node)?, rest).cloned()
                        }
                        _ => None,
                    }
                };
                match node {
                    NodeDoc::Tool {
                        tool,
                        operation,
                        workflow: nested,
                        arguments,
                        next,
                        catch,
                        ..
                    } => {
                        let arguments = match render(arguments, "", &lookup) {
                            Ok(a) => a,
                            Err(unresolved) => {
                                return Err(self
                                    .harness_error(
                                        HarnessCode::WorkflowReferenceUnresolved,
                                        format!("workflow {name}, node {id}: {unresolved}"),
                                    )
                                    .await);
                            }
                        };
                        let result = match (nested, tool, operation) {
                            (Some(nested), _, _) => {
                                self.run_workflow(nested, arguments, Some(&mut *budget))
                                    .await
                            }
                            (None, Some(tool), Some(operation)) => {
                                self.call_tool(tool, operation, arguments).await
                            }
                            _ => Err(self
                                .harness_error(
                                    HarnessCode::InvalidWorkflow,
                                    format!("workflow {name}, node {id} names no call"),
                                )
                                .await),
                        };
                        match result {
                            Ok(value) => {
                                outputs.insert(id.clone(), value);
                                current.clone_from(next);
                            }
                            Err(CallFailure::Recorded {
                                class,
                                code,
                                message,
                                ..
                            }) if catch.is_some() => {
                                outputs.insert(
                                    id.clone(),
                                    json!({"error": {"class": class.as_str(), "code": code, "message": message}}),
                                );
                                current.clone_from(catch);
                            }
                            Err(failure) => return Err(failure),
                        }
                    }
                    NodeDoc::Branch {
                        when,
                        then,
                        otherwise,
                        ..
                    } => {
                        let nodes = Value::Object(outputs.clone());
                        let all = when.iter().all(|c| {
                            let source = if c.reads_nodes() { &nodes } else { &input };
                            c.holds(resolve_path(source, c.path()))
                        });
                        current = Some(if all { then.clone() } else { otherwise.clone() });
                    }
                    NodeDoc::Return { value, .. } => {
                        return match render(value, "", &lookup) {
                            Ok(v) => Ok(v),
                            Err(unresolved) => Err(self
                                .harness_error(
                                    HarnessCode::WorkflowReferenceUnresolved,
                                    format!("workflow {name}, node {id}: {unresolved}"),
                                )
                                .await),
                        };
                    }
                    NodeDoc::Effect {
                        effect,
                        config,
                        next,
                        ..
                    } => {
                        // A sandbox start refuses effect nodes: only a
                        // real-tools run reaches one, and the dispatcher runs
                        // it through its real handlers and records it as
                        // evidence like a tool node's real call.
                        let config = match render(config, "", &lookup) {
                            Ok(c) => c,
                            Err(unresolved) => {
                                return Err(self
                                    .harness_error(
                                        HarnessCode::WorkflowReferenceUnresolved,
                                        format!("workflow {name}, node {id}: {unresolved}"),
                                    )
                                    .await);
                            }
                        };
                        let definition = match serde_json::to_value(node)
                            .map_err(|e| e.to_string())
                            .and_then(|doc| DefinitionHash::of(&doc).map_err(|e| e.to_string()))
                        {
                            Ok(hash) => hash,
                            Err(message) => {
                                return Err(self
                                    .harness_error(
                                        HarnessCode::InvalidWorkflow,
                                        format!(
                                            "workflow {name}, node {id} cannot be hashed: {message}"
                                        ),
                                    )
                                    .await);
                            }
                        };
                        let site = ToolCall::new(name, id.as_str(), config);
                        let executed = match self.resolved {
                            Some(resolved) => {
                                self.dispatcher
                                    .effect_resolved(resolved, *effect, &site, definition)
                                    .await
                            }
                            None => {
                                self.dispatcher
                                    .effect(
                                        self.tenant,
                                        self.capability,
                                        *effect,
                                        &site,
                                        definition,
                                    )
                                    .await
                            }
                        };
                        match executed {
                            Ok(output) => {
                                outputs.insert(id.clone(), output);
                                current.clone_from(next);
                            }
                            // An effect's failure is never caught: the
                            // attempt can no longer pass either way.
                            Err(failure) => return Err(CallFailure::from_dispatch(failure)),
                        }
                    }
                }
            }
            Ok(Value::Null)
        })
    }
}
