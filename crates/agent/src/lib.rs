//! The model client of toolmock's model driver: an OpenAI-compatible
//! chat-completions endpoint — a hosted API, or a local model server that
//! speaks the same protocol (Ollama, llama.cpp's server, vLLM) — behind
//! `toolmock_simulation::ChatModel`.
//!
//! It is an adapter: the simulation crate owns the conversation and the
//! loop, and knows no HTTP; this crate turns one [`ModelRequest`] into one
//! `POST {base_url}/chat/completions` with `async-openai`'s protocol types
//! and reads the reply back. Transient failures — 429 (after its
//! `Retry-After`), 5xx, connection errors and time-outs — are retried with
//! exponential backoff, at most [`Endpoint::max_retries`] times, and then
//! reported as [`ModelError::Unavailable`] (the attempt ends
//! `agent_unavailable`, never `failed`); an answer that is not a usable
//! completion is [`ModelError::Failed`]. At most [`Endpoint::concurrency`]
//! requests are in flight at once, whatever the number of attempts.
//!
//! It is not a place for configuration files: the endpoint comes from the
//! caller's command line — [`ModelFlags`], the flags (each with an
//! environment fallback) shared by `toolmock run` and the workers — and the
//! API key never appears in `Debug` output, evidence or reports.
//!
//! ```
//! use std::time::Duration;
//! use toolmock_agent::{Endpoint, OpenAiChat};
//!
//! let endpoint = Endpoint {
//!     base_url: "http://127.0.0.1:11434/v1".into(), // Ollama's OpenAI-compatible API
//!     model: "qwen2.5:7b".into(),
//!     api_key: None,
//!     temperature: Some(0.0),
//!     seed: Some(7),
//!     timeout: Duration::from_secs(60),
//!     max_retries: 4,
//!     concurrency: 8,
//!     max_response_bytes: toolmock_agent::DEFAULT_MAX_RESPONSE_BYTES,
//! };
//! let model = OpenAiChat::new(&endpoint).expect("a usable endpoint");
//! assert!(!format!("{model:?}").contains("Bearer"));
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod budget;
pub mod cassette;
mod flags;
mod retry_after;
mod transport;
mod user_flags;

pub use budget::{Budget, parse_price, price_of};
pub use cassette::{Cassette, CassetteFlags, CassetteMode};
pub use flags::{FlagsError, ModelFlags, Models};
pub use user_flags::UserModelFlags;

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::middleware::retry::OpenAIRetryLayer;
use async_openai::types::chat::{
    ChatCompletionMessageToolCall, ChatCompletionMessageToolCalls,
    ChatCompletionRequestAssistantMessage, ChatCompletionRequestAssistantMessageContent,
    ChatCompletionRequestMessage, ChatCompletionRequestSystemMessage,
    ChatCompletionRequestSystemMessageContent, ChatCompletionRequestToolMessage,
    ChatCompletionRequestToolMessageContent, ChatCompletionRequestUserMessage,
    ChatCompletionRequestUserMessageContent, ChatCompletionTool, ChatCompletionTools,
    CreateChatCompletionRequest, FunctionCall, FunctionObject,
};
use std::time::Duration;
use tokio::sync::Semaphore;
use toolmock_simulation::{
    ChatModel, Message, ModelError, ModelFuture, ModelReply, ModelRequest, ToolCallRequest, Usage,
};

/// The default of [`Endpoint::max_response_bytes`]: 16 MiB, far above any
/// chat completion, far below what would hurt a process holding many
/// attempts.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 16 * 1024 * 1024;

/// An OpenAI-compatible chat-completions endpoint.
#[derive(Clone, PartialEq)]
pub struct Endpoint {
    /// The base URL; `/chat/completions` is appended (`https://api.openai.com/v1`,
    /// `http://127.0.0.1:11434/v1`).
    pub base_url: String,
    /// The model name sent with each request.
    pub model: String,
    /// Sent as `Authorization: Bearer …` when set. Never printed.
    pub api_key: Option<String>,
    /// Sent when set (endpoints that do not support it may ignore it).
    pub temperature: Option<f32>,
    /// Sent when set, for endpoints that sample reproducibly with it.
    pub seed: Option<i64>,
    /// How long one HTTP request may take.
    pub timeout: Duration,
    /// Retries of a transient failure before giving up (`agent_unavailable`).
    pub max_retries: u32,
    /// Requests in flight at once (at least 1).
    pub concurrency: usize,
    /// The longest answer body read, in bytes; a longer one is
    /// `ModelError::TooLarge` (`model_failed`, `response_too_large`).
    pub max_response_bytes: u64,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("temperature", &self.temperature)
            .field("seed", &self.seed)
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("concurrency", &self.concurrency)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish()
    }
}

/// Why an endpoint cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// The base URL is not an `http` or `https` URL.
    #[error("the model URL must start with http:// or https://: {0:?}")]
    InvalidUrl(String),
    /// The model name is empty.
    #[error("the model name is empty")]
    NoModel,
    /// The HTTP client could not be built.
    #[error("the HTTP client cannot be built: {0}")]
    Client(String),
}

impl EndpointError {
    /// A stable code.
    pub fn code(&self) -> &'static str {
        match self {
            EndpointError::InvalidUrl(_) => "invalid_model_url",
            EndpointError::NoModel => "missing_model",
            EndpointError::Client(_) => "client_failed",
        }
    }
}

/// A [`ChatModel`] over an OpenAI-compatible endpoint.
pub struct OpenAiChat {
    client: Client<OpenAIConfig>,
    model: String,
    temperature: Option<f32>,
    seed: Option<i64>,
    max_retries: u32,
    timeout: Duration,
    permits: Semaphore,
}

impl std::fmt::Debug for OpenAiChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiChat")
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl OpenAiChat {
    /// A client of `endpoint`.
    pub fn new(endpoint: &Endpoint) -> Result<Self, EndpointError> {
        let url = endpoint.base_url.trim_end_matches('/');
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(EndpointError::InvalidUrl(endpoint.base_url.clone()));
        }
        if endpoint.model.trim().is_empty() {
            return Err(EndpointError::NoModel);
        }
        let http = reqwest::Client::builder()
            .timeout(endpoint.timeout)
            .build()
            .map_err(|e| EndpointError::Client(e.to_string()))?;
        // 429 (honouring Retry-After, up to the time-out), 5xx and
        // connection errors are retried by async-openai's layer; time-outs
        // by `complete`.
        let service = tower_stack(
            endpoint.max_retries,
            endpoint.timeout,
            transport::Capped {
                client: http,
                limit: endpoint.max_response_bytes,
            },
        );
        let config = OpenAIConfig::new()
            .with_api_base(url)
            .with_api_key(endpoint.api_key.clone().unwrap_or_default());
        Ok(Self {
            client: Client::with_config(config).with_http_service(service),
            model: endpoint.model.clone(),
            temperature: endpoint.temperature,
            seed: endpoint.seed,
            max_retries: endpoint.max_retries,
            timeout: endpoint.timeout,
            permits: Semaphore::new(endpoint.concurrency.max(1)),
        })
    }

    fn request(&self, request: ModelRequest<'_>) -> CreateChatCompletionRequest {
        let tools: Vec<ChatCompletionTools> = request
            .tools
            .iter()
            .map(|t| {
                ChatCompletionTools::Function(ChatCompletionTool {
                    function: FunctionObject {
                        name: t.name.clone(),
                        description: (!t.description.is_empty()).then(|| t.description.clone()),
                        parameters: Some(t.parameters.clone()),
                        strict: None,
                    },
                })
            })
            .collect();
        CreateChatCompletionRequest {
            model: self.model.clone(),
            messages: request.messages.iter().map(wire_message).collect(),
            tools: (!tools.is_empty()).then_some(tools),
            temperature: self.temperature,
            // Deprecated by OpenAI, still honoured by local servers (vLLM, llama.cpp).
            #[allow(deprecated)]
            seed: self.seed,
            ..Default::default()
        }
    }
}

/// The retry layer over reqwest (every body read under its limit:
/// `transport::Capped`; between them the bound on `Retry-After`:
/// `retry_after`), and above it the refusal of a final non-2xx answer by
/// its status alone (`transport::refuse_non_success`).
fn tower_stack(
    max_retries: u32,
    longest_wait: Duration,
    http: transport::Capped,
) -> tower::util::MapResult<
    async_openai::middleware::retry::OpenAIRetry<retry_after::BoundedRetryAfter<transport::Capped>>,
    transport::Refusal,
> {
    use tower::{Layer, ServiceExt};
    let refuse: transport::Refusal = transport::refuse_non_success;
    let bounded = retry_after::BoundedRetryAfter::new(http, longest_wait);
    OpenAIRetryLayer::new(max_retries as usize)
        .layer(bounded)
        .map_result(refuse)
}

/// A conversation message in the protocol's types.
fn wire_message(message: &Message) -> ChatCompletionRequestMessage {
    match message {
        Message::System { content } => {
            ChatCompletionRequestMessage::System(ChatCompletionRequestSystemMessage {
                content: ChatCompletionRequestSystemMessageContent::Text(content.clone()),
                name: None,
            })
        }
        // A user's own tool calls never reach the agent (the driver leaves
        // them out of the agent's view); only the words are the protocol's.
        Message::User { content, .. } => {
            ChatCompletionRequestMessage::User(ChatCompletionRequestUserMessage {
                content: ChatCompletionRequestUserMessageContent::Text(content.clone()),
                name: None,
            })
        }
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let calls: Vec<ChatCompletionMessageToolCalls> = tool_calls
                .iter()
                .map(|c| {
                    ChatCompletionMessageToolCalls::Function(ChatCompletionMessageToolCall {
                        id: c.id.clone(),
                        function: FunctionCall {
                            name: c.name.clone(),
                            arguments: c.arguments.clone(),
                        },
                    })
                })
                .collect();
            ChatCompletionRequestMessage::Assistant(ChatCompletionRequestAssistantMessage {
                content: content
                    .clone()
                    .map(ChatCompletionRequestAssistantMessageContent::Text),
                tool_calls: (!calls.is_empty()).then_some(calls),
                ..Default::default()
            })
        }
        Message::Tool {
            tool_call_id,
            content,
            ..
        } => ChatCompletionRequestMessage::Tool(ChatCompletionRequestToolMessage {
            content: ChatCompletionRequestToolMessageContent::Text(content.clone()),
            tool_call_id: tool_call_id.clone(),
        }),
    }
}

impl ChatModel for OpenAiChat {
    fn complete<'a>(&'a self, request: ModelRequest<'a>) -> ModelFuture<'a> {
        Box::pin(async move {
            let body = self.request(request);
            let _permit = self
                .permits
                .acquire()
                .await
                .map_err(|_| ModelError::Unavailable("the client is closed".into()))?;
            let mut tries = 0u32;
            let response = loop {
                match self.client.chat().create(body.clone()).await {
                    Ok(response) => break response,
                    Err(error) => {
                        let (again, failure) = transport::classify(&error, self.timeout);
                        if !again || tries >= self.max_retries {
                            return Err(failure);
                        }
                        let backoff = Duration::from_millis(100)
                            .saturating_mul(2u32.saturating_pow(tries))
                            .min(Duration::from_secs(8));
                        tries += 1;
                        tokio::time::sleep(backoff).await;
                    }
                }
            };
            let Some(choice) = response.choices.into_iter().next() else {
                return Err(ModelError::Failed("the completion has no choice".into()));
            };
            let tool_calls = choice
                .message
                .tool_calls
                .unwrap_or_default()
                .into_iter()
                .map(|call| match call {
                    ChatCompletionMessageToolCalls::Function(f) => ToolCallRequest {
                        id: f.id,
                        name: f.function.name,
                        arguments: f.function.arguments,
                    },
                    // Custom (free-form) tools are never offered; the name is
                    // answered as an unknown function.
                    ChatCompletionMessageToolCalls::Custom(c) => ToolCallRequest {
                        id: c.id,
                        name: c.custom_tool.name,
                        arguments: c.custom_tool.input,
                    },
                })
                .collect();
            let usage = response.usage.map(|u| Usage {
                prompt_tokens: u64::from(u.prompt_tokens),
                completion_tokens: u64::from(u.completion_tokens),
                cached_tokens: u
                    .prompt_tokens_details
                    .and_then(|d| d.cached_tokens)
                    .map(u64::from),
                replayed: false,
            });
            Ok(ModelReply {
                content: choice.message.content,
                tool_calls,
                usage,
            })
        })
    }

    fn identity(&self) -> serde_json::Value {
        // What is sent with every request besides the conversation and the
        // tools; never the URL or the key.
        let mut identity = serde_json::Map::new();
        identity.insert("model".into(), self.model.clone().into());
        if let Some(t) = self.temperature {
            identity.insert("temperature".into(), f64::from(t).into());
        }
        if let Some(seed) = self.seed {
            identity.insert("seed".into(), seed.into());
        }
        serde_json::Value::Object(identity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint() -> Endpoint {
        Endpoint {
            base_url: "http://127.0.0.1:9/v1".into(),
            model: "m".into(),
            api_key: Some("sk-secret".into()),
            temperature: None,
            seed: None,
            timeout: Duration::from_secs(1),
            max_retries: 0,
            concurrency: 1,
            max_response_bytes: 4096,
        }
    }

    #[test]
    fn the_key_is_never_printed() {
        let e = endpoint();
        assert!(!format!("{e:?}").contains("sk-secret"));
        let model = OpenAiChat::new(&e).expect("client");
        assert!(!format!("{model:?}").contains("sk-secret"));
    }

    #[test]
    fn unusable_endpoints_are_refused() {
        let mut e = endpoint();
        e.base_url = "ftp://x".into();
        assert_eq!(
            OpenAiChat::new(&e).map(|_| ()).unwrap_err().code(),
            "invalid_model_url"
        );
        let mut e = endpoint();
        e.model = " ".into();
        assert_eq!(
            OpenAiChat::new(&e).map(|_| ()).unwrap_err().code(),
            "missing_model"
        );
    }

    #[tokio::test]
    async fn a_server_nobody_listens_on_is_unavailable() {
        let model = OpenAiChat::new(&endpoint()).expect("client");
        let messages = [Message::user("hi")];
        let reply = model
            .complete(ModelRequest {
                messages: &messages,
                tools: &[],
            })
            .await;
        assert!(
            matches!(reply, Err(ModelError::Unavailable(_))),
            "{reply:?}"
        );
    }

    /// What a request to the endpoint at `url` (4 KiB answers at most)
    /// fails with.
    async fn failure_of(url: String) -> ModelError {
        let mut e = endpoint();
        e.base_url = url;
        e.timeout = Duration::from_secs(30);
        let model = OpenAiChat::new(&e).expect("client");
        let messages = [Message::user("hi")];
        model
            .complete(ModelRequest {
                messages: &messages,
                tools: &[],
            })
            .await
            .expect_err("a failure")
    }

    /// An HTTP server answering every request with `status` (the whole
    /// status line after the version) and `body`; its `/v1` URL.
    async fn answering(status: &'static str, body: &'static str) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let response = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                // The head and the JSON body (whose end is its closing brace).
                while let Ok(n) = socket.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    seen.extend_from_slice(&buf[..n]);
                    if seen.ends_with(b"}") {
                        break;
                    }
                }
                let _ = socket.write_all(response.as_bytes()).await;
                let _ = socket.shutdown().await;
            }
        });
        format!("http://127.0.0.1:{port}/v1")
    }

    /// What the endpoint answers never reaches a `ModelError` (issue 32,
    /// item 10): a secret it echoes — in the reason phrase, an error body or
    /// an unusable answer — is absent; the message names the status class
    /// or what is wrong, and the size.
    #[tokio::test]
    async fn a_failure_never_quotes_the_endpoint() {
        const SECRET: &str = "ECHOED-SECRET-0123456789";
        let error_body = r#"{"error": {"message": "model m unknown ECHOED-SECRET-0123456789", "type": "invalid_request_error", "param": null, "code": null}}"#;
        let not_a_completion = r#"{"choices": "ECHOED-SECRET-0123456789"}"#;
        let cases = [
            (
                "400 Bad ECHOED-SECRET-0123456789",
                error_body,
                "HTTP 400 (the request was refused)".to_owned(),
                false,
            ),
            (
                "503 ECHOED-SECRET-0123456789",
                SECRET,
                "HTTP 503 (a server error)".to_owned(),
                true,
            ),
            (
                "200 OK",
                not_a_completion,
                format!(
                    "({} bytes) is not a chat completion",
                    not_a_completion.len()
                ),
                false,
            ),
            (
                "200 OK",
                SECRET,
                format!("({} bytes) is not a chat completion", SECRET.len()),
                false,
            ),
        ];
        for (status, body, said, unavailable) in cases {
            let error = failure_of(answering(status, body).await).await;
            let text = error.to_string();
            assert!(!text.contains(SECRET), "{text}");
            assert!(text.contains(&said), "{text}");
            assert_eq!(
                matches!(error, ModelError::Unavailable(_)),
                unavailable,
                "{text}"
            );
        }
    }

    /// A 200 whose chunked body never ends (written until the client hangs
    /// up); its `/v1` URL.
    async fn endless() -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = socket.read(&mut buf).await;
                    let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
                    if socket.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    let chunk = format!("{:x}\r\n{}\r\n", 65536, "x".repeat(65536));
                    while socket.write_all(chunk.as_bytes()).await.is_ok() {}
                });
            }
        });
        format!("http://127.0.0.1:{port}/v1")
    }

    /// An answer past the limit — announced by its length, or chunked
    /// without end — is `TooLarge` as soon as it passes the limit (issue
    /// 32, item 4), and the client goes on working.
    #[tokio::test]
    async fn an_answer_past_the_limit_is_too_large() {
        let long = Box::leak("y".repeat(5000).into_boxed_str());
        for url in [endless().await, answering("200 OK", long).await] {
            let error = failure_of(url).await;
            assert_eq!(error, ModelError::TooLarge { limit_bytes: 4096 });
            assert_eq!(
                error.detail(),
                serde_json::json!({"reason": "response_too_large", "limit_bytes": 4096})
            );
        }
    }
}

#[cfg(test)]
mod codes {
    use crate::cassette::{CassetteError, CassetteFlagsError};
    use crate::{EndpointError, FlagsError};

    /// Every code of the crate, one per variant: a new variant fails to
    /// compile in the matches below until it is listed here, then fails the
    /// test until it is documented.
    fn every_code() -> Vec<&'static str> {
        let _ = |e: &EndpointError| match e {
            EndpointError::InvalidUrl(_) | EndpointError::NoModel | EndpointError::Client(_) => (),
        };
        let _ = |e: &FlagsError| match e {
            FlagsError::ModelUrlWithoutModel
            | FlagsError::ModelWithoutUrl
            | FlagsError::JudgeWithoutUrl
            | FlagsError::UserModelUrlWithoutModel
            | FlagsError::UserModelWithoutUrl
            | FlagsError::Endpoint { .. } => (),
        };
        let _ = |e: &CassetteError| match e {
            CassetteError::Unreadable { .. }
            | CassetteError::Invalid { .. }
            | CassetteError::Unwritable { .. } => (),
        };
        let _ = |e: &CassetteFlagsError| match e {
            CassetteFlagsError::ModeWithoutCassette
            | CassetteFlagsError::NothingToRecord
            | CassetteFlagsError::Cassette { .. } => (),
        };
        let text = || String::new();
        vec![
            EndpointError::InvalidUrl(text()).code(),
            EndpointError::NoModel.code(),
            EndpointError::Client(text()).code(),
            FlagsError::ModelUrlWithoutModel.code(),
            FlagsError::ModelWithoutUrl.code(),
            FlagsError::JudgeWithoutUrl.code(),
            FlagsError::UserModelUrlWithoutModel.code(),
            FlagsError::UserModelWithoutUrl.code(),
            CassetteFlagsError::ModeWithoutCassette.code(),
            CassetteFlagsError::NothingToRecord.code(),
            CassetteError::Unreadable {
                path: text(),
                message: text(),
            }
            .code(),
            CassetteError::Invalid {
                path: text(),
                line: 1,
                message: text(),
            }
            .code(),
            CassetteError::Unwritable {
                path: text(),
                message: text(),
            }
            .code(),
            // `check-cassette`'s problem codes (CheckProblem::code).
            "cassette_key_mismatch",
            "cassette_orphan",
            "cassette_stale",
        ]
    }

    #[test]
    fn every_code_is_documented_and_every_documented_code_exists() {
        let doc = include_str!("../../../docs/error-codes.md");
        toolmock_contract::check_documented_codes(doc, "toolmock-agent", &every_code())
            .unwrap_or_else(|e| panic!("{e}"));
    }
}
