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
//! };
//! let model = OpenAiChat::new(&endpoint).expect("a usable endpoint");
//! assert!(!format!("{model:?}").contains("Bearer"));
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod flags;
mod retry_after;

pub use flags::{FlagsError, ModelFlags, Models};

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::ReqwestService;
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
    ChatModel, Message, ModelError, ModelFuture, ModelReply, ModelRequest, ToolCallRequest,
};

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
        let service = tower_stack(endpoint.max_retries, endpoint.timeout, http);
        let config = OpenAIConfig::new()
            .with_api_base(url)
            .with_api_key(endpoint.api_key.clone().unwrap_or_default());
        Ok(Self {
            client: Client::with_config(config).with_http_service(service),
            model: endpoint.model.clone(),
            temperature: endpoint.temperature,
            seed: endpoint.seed,
            max_retries: endpoint.max_retries,
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

fn tower_stack(
    max_retries: u32,
    longest_wait: Duration,
    http: reqwest::Client,
) -> async_openai::middleware::retry::OpenAIRetry<retry_after::BoundedRetryAfter<ReqwestService>> {
    use tower::Layer;
    let bounded = retry_after::BoundedRetryAfter::new(ReqwestService::new(http), longest_wait);
    OpenAIRetryLayer::new(max_retries as usize).layer(bounded)
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
        Message::User { content } => {
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
        } => ChatCompletionRequestMessage::Tool(ChatCompletionRequestToolMessage {
            content: ChatCompletionRequestToolMessageContent::Text(content.clone()),
            tool_call_id: tool_call_id.clone(),
        }),
    }
}

/// Whether an error is transient (worth another request), and its class.
fn classify(error: &OpenAIError) -> (bool, ModelError) {
    let text = error.to_string();
    match error {
        OpenAIError::ApiError(api) => {
            let status = api.status_code.as_u16();
            if status == 429 || api.status_code.is_server_error() {
                (
                    false,
                    ModelError::Unavailable(format!("HTTP {status}: {text}")),
                )
            } else {
                (false, ModelError::Failed(format!("HTTP {status}: {text}")))
            }
        }
        // The retry layer already retried connection errors; time-outs are
        // retried here.
        OpenAIError::Boxed(_) if retry_after::is_too_long(error) => {
            (false, ModelError::Unavailable(text))
        }
        OpenAIError::Reqwest(e) if e.is_timeout() => (true, ModelError::Unavailable(text)),
        OpenAIError::Reqwest(e) if e.is_connect() || e.is_request() => {
            (false, ModelError::Unavailable(text))
        }
        _ => (false, ModelError::Failed(text)),
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
                        let (again, failure) = classify(&error);
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
            Ok(ModelReply {
                content: choice.message.content,
                tool_calls,
            })
        })
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
        let messages = [Message::User {
            content: "hi".into(),
        }];
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
}
