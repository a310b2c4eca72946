//! The MCP server handler: `tools/list` answers the served tools, and every
//! `tools/call` goes through the dispatcher (or the workflow engine, whose
//! tool nodes go through it) for the attempt the request belongs to.

use crate::delivery::Receipt;
use crate::error::McpCode;
use crate::tools::{ServedTools, Target};
use axum::http::request::Parts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorCode, ErrorData,
    Implementation, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use toolmock_runtime::Dispatcher;
use toolmock_runtime::ToolCall;
use toolmock_runtime::backend::Backend;
use toolmock_runtime::dispatcher::ResolvedCapability;
use toolmock_runtime::error::DispatchError;
use toolmock_runtime::model::{AttemptId, Capability, TenantId, WorkflowDoc};
use toolmock_simulation::document::CallStatus;
use toolmock_simulation::{AttemptContext, CallFailure};

/// The attempt one request is for, as [`Attempts::enter`] resolved it.
#[derive(Debug)]
pub struct Entered<T> {
    /// Its tenant.
    pub tenant: TenantId,
    /// The attempt.
    pub attempt: AttemptId,
    /// Its capability (every call presents it to the dispatcher).
    pub capability: Capability,
    /// The capability already resolved to the attempt, when the resolver
    /// had to find it anyway (the API's, by its bearer token): an
    /// operation's call hands it to `Dispatcher::call_resolved` instead of
    /// looking the capability up again.
    pub resolved: Option<ResolvedCapability>,
    /// Whatever the resolver keeps while the call runs (e.g. a guard that
    /// holds off the attempt's finish).
    pub ticket: T,
}

/// How requests find their attempt: by the URL's path (`toolmock serve
/// --http`), by the process (`--stdio`) or by the bearer capability (the
/// API) — never by `Mcp-Session-Id`.
pub trait Attempts: Send + Sync + 'static {
    /// Held while a call runs.
    type Ticket: Send + 'static;

    /// The attempt of a request; `parts` are the HTTP request's (none over
    /// stdio). An error is answered as a JSON-RPC error, and nothing is
    /// recorded.
    fn enter(
        &self,
        parts: Option<&Parts>,
    ) -> impl Future<Output = Result<Entered<Self::Ticket>, ErrorData>> + Send;

    /// Called after each call has been answered (recorded), with its ticket.
    fn leave(&self, entered: Entered<Self::Ticket>) -> impl Future<Output = ()> + Send;

    /// The served case's simulated user answers what the agent says
    /// (`message`; none: the agent only listens) through `ask_user`. Only
    /// resolvers that serve a case with a simulated user list that tool;
    /// the others never get here.
    fn ask_user(
        &self,
        entered: &Entered<Self::Ticket>,
        message: Option<String>,
    ) -> impl Future<Output = Result<CallToolResult, ErrorData>> + Send {
        let _ = (entered, message);
        async {
            Err(server_error(
                McpCode::AskUserNotServed,
                "no simulated user is served here",
            ))
        }
    }
}

struct Inner<B, A> {
    dispatcher: Arc<Dispatcher<B>>,
    tools: Arc<ServedTools>,
    workflows: Arc<HashMap<String, WorkflowDoc>>,
    attempts: A,
    name: String,
}

/// The rmcp server handler over a dispatcher; cheap to clone (one per
/// transport session or stateless request).
pub struct ToolServer<B, A> {
    inner: Arc<Inner<B, A>>,
}

impl<B, A> Clone for ToolServer<B, A> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<B, A> std::fmt::Debug for ToolServer<B, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolServer")
            .field("name", &self.inner.name)
            .finish_non_exhaustive()
    }
}

impl<B: Backend + 'static, A: Attempts> ToolServer<B, A> {
    /// A handler serving `tools`; `name` is what `initialize` reports as the
    /// server's name. The tools and workflows may be shared (`Arc`s): a
    /// caller that makes a handler per request (the API's per-attempt
    /// endpoint) copies nothing.
    pub fn new(
        dispatcher: Arc<Dispatcher<B>>,
        tools: impl Into<Arc<ServedTools>>,
        workflows: impl Into<Arc<HashMap<String, WorkflowDoc>>>,
        attempts: A,
        name: impl Into<String>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                dispatcher,
                tools: tools.into(),
                workflows: workflows.into(),
                attempts,
                name: name.into(),
            }),
        }
    }

    /// The attempt resolver.
    pub fn attempts(&self) -> &A {
        &self.inner.attempts
    }

    /// One `tools/call`: enter the attempt, call, answer, leave. The call
    /// runs to its end in a task of its own whatever happens to this
    /// future; when this future is dropped before the answer, the answer is
    /// recorded as lost (`answer_lost`) before the attempt can end.
    pub async fn call(
        &self,
        parts: Option<&Parts>,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResult, ErrorData> {
        self.call_delivered(parts, name, arguments, None, None)
            .await
    }

    /// [`call`](Self::call), whose answer is lost as well when `gone` is
    /// cancelled (the caller went away) by the time the call ends, or when
    /// the transport settles `receipt` as not delivered.
    async fn call_delivered(
        &self,
        parts: Option<&Parts>,
        name: &str,
        arguments: Value,
        gone: Option<CancellationToken>,
        receipt: Option<Arc<Receipt>>,
    ) -> Result<CallToolResult, ErrorData> {
        if let Some(Target::AskUser) = self.inner.tools.target(name) {
            return self.ask_user(parts, &arguments).await;
        }
        let entered = self.inner.attempts.enter(parts).await?;
        let (reply, answered) = tokio::sync::oneshot::channel();
        let server = self.clone();
        let name = name.to_owned();
        tokio::spawn(async move {
            let (outcome, call) = server
                .dispatch(
                    (entered.tenant, entered.attempt),
                    (&entered.capability, entered.resolved.as_ref()),
                    &name,
                    arguments,
                )
                .await;
            let ended_with = outcome.as_ref().err().map(Failure::code);
            let transport_settles = receipt.is_some();
            let receipt = receipt.unwrap_or_default();
            let dispatcher = server.inner.dispatcher.clone();
            let (tenant, attempt) = (entered.tenant, entered.attempt);
            receipt
                .answered(Box::new(move || {
                    Box::pin(async move {
                        dispatcher
                            .record_lost_answer(
                                tenant,
                                attempt,
                                call.as_ref(),
                                ended_with.as_deref(),
                            )
                            .await;
                    })
                }))
                .await;
            // Recorded before the attempt may end (leaving can end it).
            if reply.is_closed() || gone.as_ref().is_some_and(CancellationToken::is_cancelled) {
                receipt.settle(false).await;
            }
            server.inner.attempts.leave(entered).await;
            let handed = reply.send(outcome).is_ok();
            if !handed || !transport_settles {
                receipt.settle(handed).await;
            }
        });
        match answered.await {
            Ok(outcome) => answer(outcome),
            // The call's task panicked: nothing says it was recorded.
            Err(_) => Err(server_error(
                McpCode::StorageFailed,
                "the tool call's task ended without an answer",
            )),
        }
    }

    /// `ask_user`: the agent's `message` (a string, or none) to the served
    /// case's simulated user, whose reply is the result. Nothing of it is
    /// an operation call: its messages are the attempt's conversation.
    async fn ask_user(
        &self,
        parts: Option<&Parts>,
        arguments: &Value,
    ) -> Result<CallToolResult, ErrorData> {
        let message = match arguments.get("message") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(text.clone()),
            Some(_) => {
                return Ok(tool_input_error(
                    "invalid_arguments",
                    "message must be a string",
                    Some("/message"),
                ));
            }
        };
        let entered = self.inner.attempts.enter(parts).await?;
        let outcome = self.inner.attempts.ask_user(&entered, message).await;
        self.inner.attempts.leave(entered).await;
        outcome
    }

    /// Runs the call `name` of the attempt; with the operation call it made
    /// (none for a workflow), for the record of a lost answer.
    async fn dispatch(
        &self,
        (tenant, attempt): (TenantId, AttemptId),
        (capability, resolved): (&Capability, Option<&ResolvedCapability>),
        name: &str,
        arguments: Value,
    ) -> (Result<Value, Failure>, Option<ToolCall>) {
        let inner = &self.inner;
        let call = match inner.tools.target(name) {
            Some(Target::Workflow { name }) => {
                let ctx = AttemptContext {
                    dispatcher: &*inner.dispatcher,
                    tenant,
                    attempt,
                    capability,
                    resolved,
                    workflows: &inner.workflows,
                };
                let outcome = ctx
                    .run_workflow(name, arguments, None)
                    .await
                    .map_err(Failure::Workflow);
                return (outcome, None);
            }
            Some(Target::Operation { tool, operation }) => {
                ToolCall::new(tool.as_str(), operation.as_str(), arguments)
            }
            // Answered before a call is dispatched (`ask_user`).
            Some(Target::AskUser) => ToolCall::new(name, "", arguments),
            // A name the agent was never shown: the dispatcher records it
            // (`unknown_tool`, a harness error) like any unknown operation.
            None => ToolCall::new(name, name, arguments),
        };
        let outcome = match resolved {
            Some(resolved) => inner.dispatcher.call_resolved(resolved, &call).await,
            None => inner.dispatcher.call(tenant, capability, &call).await,
        }
        .map_err(Failure::Dispatch);
        (outcome, Some(call))
    }
}

enum Failure {
    Dispatch(DispatchError),
    Workflow(CallFailure),
}

impl Failure {
    fn code(&self) -> String {
        match self {
            Failure::Dispatch(e) | Failure::Workflow(CallFailure::Fatal(e)) => e.code().to_owned(),
            Failure::Workflow(CallFailure::Recorded { code, .. }) => code.clone(),
        }
    }
}

/// A success: the rendered result as `structuredContent`, and the same JSON
/// as one text block (for clients that read only `content`).
pub fn success(result: Value) -> CallToolResult {
    let text = result.to_string();
    let mut answer = CallToolResult::success(vec![ContentBlock::text(text)]);
    answer.structured_content = Some(result);
    answer
}

/// A tool input error: a tool result with `isError`, whose one text block is
/// `{"error": {"class", "code", "message", "path"?}}`, so the agent can
/// read what to correct.
pub fn tool_input_error(code: &str, message: &str, path: Option<&str>) -> CallToolResult {
    let mut error = json!({"class": "tool_input_error", "code": code, "message": message});
    if let Some(path) = path {
        error["path"] = json!(path);
    }
    CallToolResult::error(vec![ContentBlock::text(
        json!({ "error": error }).to_string(),
    )])
}

/// A version-2 domain error (recorded as evidence): a tool result with
/// `isError`, whose one text block is
/// `{"error": {"class": "domain_error", "code", "message", "data"?}}` — the
/// operation's own error answer (`order_not_found`), not a fault of the
/// agent's input nor of the harness. No `structuredContent`: the output
/// schema describes results, not errors.
pub fn domain_error(code: &str, message: &str, data: Option<&Value>) -> CallToolResult {
    let mut error = json!({"class": "domain_error", "code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data.clone();
    }
    CallToolResult::error(vec![ContentBlock::text(
        json!({ "error": error }).to_string(),
    )])
}

/// A harness error (already recorded): a JSON-RPC error, never a result.
/// Its `data` is `{"class": "harness_error", "code", "path"?}`.
pub fn harness_error(code: &str, message: &str, path: Option<&str>) -> ErrorData {
    let mut data = json!({"class": "harness_error", "code": code});
    if let Some(path) = path {
        data["path"] = json!(path);
    }
    ErrorData::new(
        ErrorCode::INTERNAL_ERROR,
        format!("harness_error: {code}: {message}"),
        Some(data),
    )
}

/// An error of this server itself (nothing recorded): a JSON-RPC error with
/// `data.code`.
pub fn server_error(code: McpCode, message: impl Into<String>) -> ErrorData {
    ErrorData::new(
        ErrorCode::INTERNAL_ERROR,
        format!("{code}: {}", message.into()),
        Some(json!({"class": "server", "code": code.as_str()})),
    )
}

fn answer(outcome: Result<Value, Failure>) -> Result<CallToolResult, ErrorData> {
    match outcome {
        Ok(result) => Ok(success(result)),
        Err(Failure::Dispatch(DispatchError::ToolInput(fault))) => Ok(tool_input_error(
            fault.code.as_str(),
            &fault.message,
            fault.path.as_deref(),
        )),
        Err(Failure::Dispatch(DispatchError::Harness(fault))) => Err(harness_error(
            fault.code.as_str(),
            &fault.message,
            fault.path.as_deref(),
        )),
        Err(Failure::Dispatch(DispatchError::Domain(error))) => Ok(domain_error(
            &error.code,
            &error.message,
            error.data.as_ref(),
        )),
        Err(Failure::Dispatch(DispatchError::CapabilityRejected)) => Err(server_error(
            McpCode::CapabilityRejected,
            "the attempt's capability is not valid",
        )),
        Err(Failure::Dispatch(DispatchError::Store(e))) => {
            Err(server_error(McpCode::StorageFailed, e.to_string()))
        }
        Err(Failure::Workflow(CallFailure::Recorded {
            class,
            code,
            message,
            ..
        })) => match class {
            CallStatus::ToolInputError => Ok(tool_input_error(&code, &message, None)),
            CallStatus::DomainError => Ok(domain_error(&code, &message, None)),
            _ => Err(harness_error(&code, &message, None)),
        },
        Err(Failure::Workflow(CallFailure::Fatal(e))) => answer(Err(Failure::Dispatch(e))),
    }
}

/// Tools only: `initialize` declares the `tools` capability alone. A client
/// that lists resources, resource templates or prompts anyway (some do at
/// start-up, whatever the server declared) is answered an empty list rather
/// than "method not found", so that such an agent runs unchanged
/// (docs/mcp.md).
impl<B: Backend + 'static, A: Attempts> rmcp::ServerHandler for ToolServer<B, A> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new(self.inner.name.clone(), env!("CARGO_PKG_VERSION")),
        )
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::default())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::default())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::default())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.inner.tools.list().to_vec(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let parts = context.extensions.get::<Parts>();
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        // Over stdio the transport left a receipt (`Delivering`); over
        // HTTP, rmcp cancels the request's token when its client goes away.
        let receipt = context.extensions.get::<Arc<Receipt>>().cloned();
        self.call_delivered(
            parts,
            &request.name,
            arguments,
            Some(context.ct.clone()),
            receipt,
        )
        .await
        .map(CallToolResponse::from)
    }
}

/// One attempt, already resolved (the API's `/api/attempts/{id}/mcp`: the
/// bearer capability named it); every request of the handler is for it,
/// and its operations' calls take that resolution instead of looking the
/// capability up again.
#[derive(Debug, Clone)]
pub struct FixedAttempt {
    resolved: ResolvedCapability,
    capability: Capability,
}

impl FixedAttempt {
    /// The attempt `capability` was resolved to (`resolved`, from
    /// `Dispatcher::adopt_capability` or `Dispatcher::cached_capability`).
    pub fn new(resolved: ResolvedCapability, capability: Capability) -> Self {
        Self {
            resolved,
            capability,
        }
    }
}

impl Attempts for FixedAttempt {
    type Ticket = ();

    async fn enter(&self, _parts: Option<&Parts>) -> Result<Entered<()>, ErrorData> {
        Ok(Entered {
            tenant: self.resolved.tenant(),
            attempt: self.resolved.attempt(),
            capability: self.capability.clone(),
            resolved: Some(self.resolved.clone()),
            ticket: (),
        })
    }

    async fn leave(&self, _entered: Entered<()>) {}
}
