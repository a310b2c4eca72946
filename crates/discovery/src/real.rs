//! The real handlers of a `real_tools` run: `tools/call` on an operation's
//! MCP server (one session per server, opened at its first call and kept),
//! a `POST` of the arguments to a custom operation's HTTP endpoint, and the
//! `http_request` effect node's `POST`. Each failure is the message of a
//! harness error (`external_failed`), recorded by the dispatcher or the
//! workflow engine; the answer is then validated against the operation's
//! pinned output schema by the dispatcher, so a server whose
//! `structuredContent` breaks its own output schema fails the attempt as a
//! harness error (`output_schema_violation`).
//!
//! `toolmock verify` (`toolmock-verify`) calls the same handlers through
//! [`RealExecutor::answer`], which tells a tool's own refusal (`isError`, a
//! status other than 2xx) apart from a call that could not be made, and
//! may reach an MCP server over stdio ([`RealExecutor::with_server`]).

use crate::{Client, Endpoint, open_untimed};
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;
use toolmock_runtime::backend::ExternalExecutor;
use toolmock_runtime::model::{EffectKind, RealHandler};

/// The boxed future [`ExternalExecutor`]'s methods return.
type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// How much of an error body a failure message quotes.
const QUOTED_BYTES: usize = 512;

/// The real handlers of one simulation's operations (and its `http_request`
/// effect nodes), for `Dispatcher::with_executor`.
pub struct RealExecutor {
    operations: BTreeMap<(String, String), RealHandler>,
    http: reqwest::Client,
    timeout: Duration,
    /// The longest answer body of an HTTP handler read
    /// (`crate::DEFAULT_MAX_RESPONSE_BYTES` unless set).
    max_response_bytes: u64,
    /// The addresses its URLs may resolve to (every one, unless a
    /// multi-tenant process says otherwise).
    targets: crate::TargetPolicy,
    sessions: tokio::sync::Mutex<HashMap<String, Arc<Client>>>,
    /// MCP servers named by a key rather than reached at it as a URL.
    servers: HashMap<String, Endpoint>,
}

/// What a real handler answered, when it could be called.
#[derive(Debug, Clone, PartialEq)]
pub enum RealAnswer {
    /// A result: the MCP call's `structuredContent`, or a 2xx answer's JSON body.
    Result(Value),
    /// The tool's own refusal: an MCP result with `isError` (its text), or
    /// an HTTP status other than 2xx (the status and the body's start).
    Refused(String),
    /// An MCP result without `structuredContent` (its text blocks).
    Unstructured(String),
}

impl std::fmt::Debug for RealExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RealExecutor")
            .field("operations", &self.operations)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl RealExecutor {
    /// The handlers of `operations` (by tool and runtime operation name);
    /// each real call or request may take `timeout` (connecting included).
    pub fn new(operations: BTreeMap<(String, String), RealHandler>, timeout: Duration) -> Self {
        Self {
            operations,
            http: reqwest::Client::new(),
            timeout,
            max_response_bytes: crate::DEFAULT_MAX_RESPONSE_BYTES,
            targets: crate::TargetPolicy::open(),
            sessions: tokio::sync::Mutex::default(),
            servers: HashMap::new(),
        }
    }

    /// An HTTP handler's (or `http_request` node's) answer longer than
    /// `limit` bytes is not read on: the call fails `response_too_large`.
    /// An MCP server's answers over streamable HTTP are bounded by the same
    /// limit (per JSON response or SSE event, by rmcp); over stdio rmcp's
    /// fixed 16 MiB per line applies.
    pub fn with_max_response_bytes(mut self, limit: u64) -> Self {
        self.max_response_bytes = limit;
        self
    }

    /// Every URL it is about to reach — an MCP server's, an HTTP handler's,
    /// an `http_request` node's — is checked against `targets` first (its
    /// name resolved now); a refused one fails the call with the class of
    /// its address, and nothing is sent. How `toolmock-worker` keeps its
    /// tenants out of its own network (docs/operations.md).
    pub fn with_targets(mut self, targets: crate::TargetPolicy) -> Self {
        self.targets = targets;
        self
    }

    /// Sessions for the MCP handler whose `url` is `key` are opened at
    /// `endpoint` instead (a stdio command, or another URL): how `toolmock
    /// verify` reaches a server it starts itself. A real-tools run never
    /// calls this: its servers are URLs.
    pub fn with_server(mut self, key: impl Into<String>, endpoint: Endpoint) -> Self {
        self.servers.insert(key.into(), endpoint);
        self
    }

    /// The MCP handler whose `url` is `key` calls through `session`, open
    /// already (one connection for a caller that listed the tools first);
    /// [`RealExecutor::close`] ends it.
    pub fn with_session(mut self, key: impl Into<String>, session: crate::Session) -> Self {
        self.sessions
            .get_mut()
            .insert(key.into(), Arc::new(session.client));
        self
    }

    /// Ends every MCP session it opened.
    pub async fn close(&self) {
        let sessions: Vec<Arc<Client>> =
            self.sessions.lock().await.drain().map(|(_, c)| c).collect();
        for client in sessions {
            if let Ok(client) = Arc::try_unwrap(client) {
                let _ = client.cancel().await;
            }
        }
    }

    async fn session(&self, url: &str) -> Result<Arc<Client>, String> {
        let mut sessions = self.sessions.lock().await;
        if let Some(client) = sessions.get(url) {
            return Ok(client.clone());
        }
        let endpoint = match self.servers.get(url) {
            Some(endpoint) => endpoint.clone(),
            None => {
                self.reachable(url).await?;
                Endpoint::http(url).map_err(|e| e.to_string())?
            }
        };
        let client = open_untimed(&endpoint, self.max_response_bytes)
            .await
            .map_err(|e| e.to_string())?
            .client;
        let client = Arc::new(client);
        sessions.insert(url.to_owned(), client.clone());
        Ok(client)
    }

    async fn forget(&self, url: &str) {
        self.sessions.lock().await.remove(url);
    }

    async fn call_mcp(&self, url: &str, tool: &str, input: &Value) -> Result<RealAnswer, String> {
        let client = self.session(url).await?;
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(arguments) = input {
            params = params.with_arguments(arguments.clone());
        }
        let result = match client.call_tool(params).await {
            Ok(result) => result,
            Err(e) => {
                // The session may be gone: the next call opens a new one.
                self.forget(url).await;
                // An answer past the limit is named by its class alone:
                // nothing of what the server sent reaches the message.
                let class = crate::failure::of_request(&e);
                if let crate::FailureClass::TooLarge { .. } = class {
                    return Err(format!("tools/call {tool} on {url}: {class}"));
                }
                return Err(format!("tools/call {tool} on {url} failed: {e}"));
            }
        };
        let text = || {
            let text: Vec<String> = result
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                .collect();
            quote(&text.join(" "))
        };
        if result.is_error == Some(true) {
            return Ok(RealAnswer::Refused(text()));
        }
        Ok(match &result.structured_content {
            Some(value) => RealAnswer::Result(value.clone()),
            None => RealAnswer::Unstructured(text()),
        })
    }

    /// `Ok` when the policy lets it reach `url`.
    async fn reachable(&self, url: &str) -> Result<(), String> {
        self.targets
            .check(url)
            .await
            .map_err(|e| format!("{url} is not reached ({}): {e}", e.code()))
    }

    /// `POST`s `body` to `url`; the response's status and body.
    async fn post(&self, url: &str, body: &Value) -> Result<(u16, Vec<u8>), String> {
        self.reachable(url).await?;
        let response = self
            .http
            .post(url)
            .json(body)
            .send()
            .await
            .map_err(|e| format!("POST {url} failed: {}", chain(&e)))?;
        let status = response.status().as_u16();
        let bytes = crate::read_body(response, self.max_response_bytes)
            .await
            .map_err(|e| match e {
                crate::BodyError::TooLarge { .. } => format!("POST {url}: {e}"),
                crate::BodyError::Read(e) => {
                    format!("reading the answer of POST {url} failed: {}", chain(&e))
                }
            })?;
        Ok((status, bytes))
    }

    async fn call_http(&self, url: &str, input: &Value) -> Result<RealAnswer, String> {
        let (status, body) = self.post(url, input).await?;
        if !(200..300).contains(&status) {
            return Ok(RealAnswer::Refused(format!(
                "{status}: {}",
                quote(&String::from_utf8_lossy(&body))
            )));
        }
        serde_json::from_slice(&body)
            .map(RealAnswer::Result)
            .map_err(|e| format!("POST {url} answered no JSON: {e}"))
    }

    /// One call of `tool`/`operation`'s real handler with `input`, within
    /// the executor's timeout: what it answered, or why it could not be
    /// called (unreachable, timed out, not JSON, no handler).
    pub async fn answer(
        &self,
        tool: &str,
        operation: &str,
        input: &Value,
    ) -> Result<RealAnswer, String> {
        let what = format!("{tool}/{operation}");
        match self
            .operations
            .get(&(tool.to_owned(), operation.to_owned()))
        {
            Some(RealHandler::Mcp { url }) => {
                self.timed(&what, self.call_mcp(url, operation, input))
                    .await
            }
            Some(RealHandler::Http { url }) => self.timed(&what, self.call_http(url, input)).await,
            None => Err(format!("{what} has no real handler")),
        }
    }

    async fn http_effect(&self, config: &Value) -> Result<Value, String> {
        let url = config
            .get("url")
            .and_then(Value::as_str)
            .ok_or("the node's config has no url")?;
        let body = config.get("body").cloned().unwrap_or(Value::Null);
        let (status, bytes) = self.post(url, &body).await?;
        if !(200..300).contains(&status) {
            return Err(format!(
                "POST {url} answered {status}: {}",
                quote(&String::from_utf8_lossy(&bytes))
            ));
        }
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        Ok(json!({"status": status, "body": body}))
    }

    async fn timed<T>(
        &self,
        what: &str,
        work: impl Future<Output = Result<T, String>>,
    ) -> Result<T, String> {
        tokio::time::timeout(self.timeout, work)
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "{what} did not answer within {} s",
                    self.timeout.as_secs_f64()
                ))
            })
    }
}

impl ExternalExecutor for RealExecutor {
    fn execute<'a>(
        &'a self,
        tool: &'a str,
        operation: &'a str,
        input: &'a Value,
    ) -> BoxFuture<'a, Result<Value, String>> {
        Box::pin(async move {
            let handler = self
                .operations
                .get(&(tool.to_owned(), operation.to_owned()));
            let place = match handler {
                Some(RealHandler::Mcp { url }) => format!("tools/call {operation} on {url}"),
                Some(RealHandler::Http { url }) => format!("POST {url}"),
                None => String::new(),
            };
            match self.answer(tool, operation, input).await? {
                RealAnswer::Result(value) => Ok(value),
                RealAnswer::Refused(why) => Err(match handler {
                    Some(RealHandler::Http { .. }) => format!("{place} answered {why}"),
                    _ => format!("{place} answered with isError: {why}"),
                }),
                RealAnswer::Unstructured(_) => Err(format!(
                    "{place} answered without structuredContent, which the operation's output schema requires"
                )),
            }
        })
    }

    fn handles(&self, effect: EffectKind) -> bool {
        effect == EffectKind::HttpRequest
    }

    fn effect<'a>(
        &'a self,
        effect: EffectKind,
        config: &'a Value,
    ) -> BoxFuture<'a, Result<Value, String>> {
        Box::pin(async move {
            match effect {
                EffectKind::HttpRequest => {
                    self.timed("the http_request", self.http_effect(config))
                        .await
                }
                other => Err(format!("no handler executes {} effects", other.as_str())),
            }
        })
    }
}

fn quote(text: &str) -> String {
    let text = text.trim();
    if text.len() <= QUOTED_BYTES {
        return text.to_owned();
    }
    let mut end = QUOTED_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
