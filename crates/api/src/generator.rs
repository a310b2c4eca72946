//! Draft generation: schema-derived (the default), or an OpenAI-compatible
//! chat-completions endpoint that drafts from the contract and the caller's
//! instructions.
//!
//! A model's draft goes through exactly the check a save does (docs/spec.md §7,
//! against the compiled contract); when it fails, the diagnostics are sent
//! back and the model tries again, at most `max_attempts` times
//! ([`ChatCompletions::new`]). An unchecked draft is never returned as a
//! draft, so it can never be saved as one.
//!
//! The endpoint is reached through `toolmock-agent`'s client, the one the
//! model driver and the judge use: the same time-out per request, bound on
//! an answer's size, retries of 429 (after a `Retry-After` no longer than
//! the time-out), 5xx, connection failures and time-outs, bound on requests
//! in flight, and failures that never quote what the endpoint sent.

use crate::error::ApiError;
use serde::Serialize;
use serde_json::{Value, json};
use std::sync::Arc;
use toolmock_agent::{Endpoint, EndpointError, OpenAiChat};
use toolmock_contract::OperationContract;
use toolmock_evaluator::{CompiledContract, compile_checked};
use toolmock_simulation::{ChatModel, Message, ModelError, ModelRequest};
use utoipa::ToSchema;

/// A model behind an OpenAI-compatible chat-completions endpoint that
/// drafts mocks, with its client built once (its bound on requests in
/// flight holds across requests).
#[derive(Debug, Clone)]
pub struct ChatCompletions {
    model: Arc<OpenAiChat>,
    max_attempts: u32,
}

impl ChatCompletions {
    /// A generator asking `endpoint` for at most `max_attempts` drafts per
    /// `generate` (at least 1). The endpoint's time-out, retries, size limit
    /// and concurrency are the client's (`toolmock_agent::Endpoint`); drafts
    /// are asked for at the endpoint's `temperature`.
    pub fn new(endpoint: &Endpoint, max_attempts: u32) -> Result<Self, EndpointError> {
        Ok(Self {
            model: Arc::new(OpenAiChat::new(endpoint)?),
            max_attempts: max_attempts.max(1),
        })
    }
}

/// Which generator answers `generate`.
#[derive(Debug, Clone, Default)]
pub enum Generator {
    /// Derived from the schemas by `toolmock-schema` (no I/O).
    #[default]
    Schema,
    /// A model behind an OpenAI-compatible endpoint.
    ChatCompletions(ChatCompletions),
}

/// What `generate` produced.
#[derive(Debug, Serialize, ToSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(crate) enum GenerateResult {
    /// A draft that passes the check of docs/spec.md §7 against the contract.
    Draft {
        /// The contract it was derived from (send it back with `save`).
        contract_hash: String,
        /// `schema` or `chat_completions`.
        backend: String,
        /// How many drafts were requested (1 for `schema`).
        attempts: u32,
        /// The instructions the draft was asked with (send them back with a
        /// generated `save`).
        #[serde(skip_serializing_if = "Option::is_none")]
        instructions: Option<String>,
        /// The definition.
        #[schema(value_type = Object)]
        definition: Value,
    },
    /// The schemas cannot be honestly satisfied: write the mock by hand.
    NeedsAuthoredMock {
        /// The contract.
        contract_hash: String,
        /// Each schema path at fault: `{code, path, message}`.
        #[schema(value_type = Vec<Object>)]
        problems: Vec<Value>,
    },
    /// The model's drafts kept failing their check; nothing usable came back.
    GenerationFailed {
        /// The contract.
        contract_hash: String,
        /// How many drafts were requested.
        attempts: u32,
        /// The last draft's problems: `{code, path, message}`.
        #[schema(value_type = Vec<Object>)]
        diagnostics: Value,
    },
}

const SYSTEM_PROMPT: &str = "You write toolmock mock definitions (schema_version 1): JSON \
documents with default_variant, initial_state, variants (each with result, optional set_state, \
delay_ms and rules whose when-conditions have source input|state, a dot-separated path, op \
eq|ne|in|exists and value), and examples (variant, input, expected) that must validate against \
the operation's input and output schemas. {\"$input\": \"path\"} and {\"$state\": \"path\"} copy \
values. Every variant needs an example. Reply with the JSON document only.";

impl Generator {
    /// Generates a draft for `contract`.
    pub(crate) async fn generate(
        &self,
        contract: &OperationContract,
        instructions: Option<String>,
    ) -> Result<GenerateResult, ApiError> {
        let contract_hash = contract
            .hash()
            .map_err(|e| ApiError::Internal(e.to_string()))?
            .to_string();
        match self {
            Generator::Schema => schema_draft(contract, contract_hash, instructions),
            Generator::ChatCompletions(chat) => {
                chat.generate(contract, contract_hash, instructions).await
            }
        }
    }
}

fn schema_draft(
    contract: &OperationContract,
    contract_hash: String,
    instructions: Option<String>,
) -> Result<GenerateResult, ApiError> {
    Ok(match toolmock_schema::generate(contract) {
        Ok(draft) => GenerateResult::Draft {
            contract_hash,
            backend: "schema".into(),
            attempts: 1,
            instructions,
            definition: serde_json::to_value(draft)
                .map_err(|e| ApiError::Internal(e.to_string()))?,
        },
        Err(needs) => GenerateResult::NeedsAuthoredMock {
            contract_hash,
            problems: needs
                .iter()
                .map(|p| json!({"code": p.code, "path": p.path, "message": p.message}))
                .collect(),
        },
    })
}

/// The JSON document in a model's reply: the whole content, or the inside of
/// its first fenced block.
fn reply_document(content: &str) -> &str {
    let trimmed = content.trim();
    let Some(start) = trimmed.find("```") else {
        return trimmed;
    };
    let after = &trimmed[start + 3..];
    let body = after.strip_prefix("json").unwrap_or(after);
    match body.find("```") {
        Some(end) => body[..end].trim(),
        None => body.trim(),
    }
}

impl ChatCompletions {
    async fn generate(
        &self,
        contract: &OperationContract,
        contract_hash: String,
        instructions: Option<String>,
    ) -> Result<GenerateResult, ApiError> {
        let compiled =
            CompiledContract::new(contract.clone()).map_err(|e| ApiError::Unprocessable {
                code: crate::error::ApiCode::InvalidContract,
                message: format!("the operation's contract is unusable: {e}"),
                details: json!({"problems": []}),
            })?;
        let mut request = format!(
            "The operation contract:\n{}\n",
            serde_json::to_string_pretty(contract)
                .map_err(|e| ApiError::Internal(e.to_string()))?
        );
        if let Some(text) = &instructions {
            request.push_str(&format!("\nInstructions from the user:\n{text}\n"));
        }
        let mut messages = vec![
            Message::System {
                content: SYSTEM_PROMPT.into(),
            },
            Message::user(request),
        ];
        let attempts = self.max_attempts;
        let mut diagnostics = Value::Array(Vec::new());
        for attempt in 1..=attempts {
            let content = self.complete(&messages).await?;
            let problems = match serde_json::from_str::<Value>(reply_document(&content)) {
                Ok(definition) => match compile_checked(&definition, Some(&compiled)) {
                    Ok(_) => {
                        return Ok(GenerateResult::Draft {
                            contract_hash,
                            backend: "chat_completions".into(),
                            attempts: attempt,
                            instructions,
                            definition,
                        });
                    }
                    Err(found) => serde_json::to_value(found)
                        .map_err(|e| ApiError::Internal(e.to_string()))?,
                },
                Err(e) => json!([{"code": "invalid_json", "path": "", "message": e.to_string()}]),
            };
            messages.push(Message::Assistant {
                content: Some(content),
                tool_calls: Vec::new(),
            });
            messages.push(Message::user(format!(
                "The definition fails its check. Every problem, as {{code, path, message}} \
                 with a JSON pointer into the definition:\n{problems}\nReply with the \
                 corrected JSON document only."
            )));
            diagnostics = problems;
        }
        Ok(GenerateResult::GenerationFailed {
            contract_hash,
            attempts,
            diagnostics,
        })
    }

    /// One completion's text, through the client (its retries included).
    async fn complete(&self, messages: &[Message]) -> Result<String, ApiError> {
        let reply = self
            .model
            .complete(ModelRequest {
                messages,
                tools: &[],
            })
            .await
            .map_err(generator_failed)?;
        reply.content.ok_or_else(|| ApiError::GeneratorFailed {
            reason: "unusable",
            limit_bytes: None,
            message: "the chat-completions answer has no message content".into(),
        })
    }
}

/// A client's failure as the API's: the client's message (which never
/// quotes the endpoint) under the generator's name and flag.
fn generator_failed(error: ModelError) -> ApiError {
    match error {
        ModelError::Unavailable(why) => ApiError::GeneratorFailed {
            reason: "unavailable",
            limit_bytes: None,
            message: format!("the chat-completions endpoint is unavailable: {why}"),
        },
        // The generator's client is never a cassette; a miss would be an
        // unusable answer all the same.
        miss @ ModelError::CassetteMiss { .. } => ApiError::GeneratorFailed {
            reason: "unusable",
            limit_bytes: None,
            message: format!("the chat-completions answer is unusable: {miss}"),
        },
        ModelError::Failed(why) => ApiError::GeneratorFailed {
            reason: "unusable",
            limit_bytes: None,
            message: format!("the chat-completions answer is unusable: {why}"),
        },
        ModelError::TooLarge { limit_bytes } => ApiError::GeneratorFailed {
            reason: "response_too_large",
            limit_bytes: Some(limit_bytes),
            message: format!(
                "the chat-completions answer exceeded the {limit_bytes}-byte limit on an answer \
                 (--generator-max-response-bytes)"
            ),
        },
        // The generator's client has no budget either; a spent one would
        // leave it without an answer, as an unavailable endpoint does.
        ModelError::BudgetExhausted(why) => ApiError::GeneratorFailed {
            reason: "unavailable",
            limit_bytes: None,
            message: format!("the chat-completions endpoint is unavailable: {why}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::reply_document;

    #[test]
    fn documents_are_read_from_plain_or_fenced_replies() {
        assert_eq!(reply_document(" {\"a\": 1} "), "{\"a\": 1}");
        assert_eq!(
            reply_document("Here it is:\n```json\n{\"a\": 1}\n```\nDone."),
            "{\"a\": 1}"
        );
        assert_eq!(reply_document("```\n[1]\n```"), "[1]");
    }
}
