//! Draft generation: schema-derived (the default), or an OpenAI-compatible
//! chat-completions endpoint that drafts from the contract and the caller's
//! instructions.
//!
//! A model's draft goes through exactly the check a save does (docs/spec.md §7,
//! against the compiled contract); when it fails, the diagnostics are sent
//! back and the model tries again, at most [`ChatCompletions::max_attempts`]
//! times. An unchecked draft is never returned as a draft, so it can never be
//! saved as one.

use crate::error::ApiError;
use serde::Serialize;
use serde_json::{Value, json};
use std::time::Duration;
use toolmock_contract::OperationContract;
use toolmock_evaluator::{CompiledContract, compile_checked};
use utoipa::ToSchema;

/// An OpenAI-compatible chat-completions endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatCompletions {
    /// The endpoint's base URL; `/chat/completions` is appended
    /// (e.g. `http://127.0.0.1:8000/v1`).
    pub base_url: String,
    /// The model name sent with each request.
    pub model: String,
    /// Sent as `Authorization: Bearer …` when set.
    pub api_key: Option<String>,
    /// How many drafts are requested before giving up (at least 1).
    pub max_attempts: u32,
    /// How long one completion may take.
    pub timeout: Duration,
}

/// Which generator answers `generate`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
            json!({"role": "system", "content": SYSTEM_PROMPT}),
            json!({"role": "user", "content": request}),
        ];
        let client = reqwest::Client::builder()
            .timeout(self.timeout)
            .build()
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        let url = format!("{}/chat/completions", self.base_url.trim_end_matches('/'));
        let attempts = self.max_attempts.max(1);
        let mut diagnostics = Value::Array(Vec::new());
        for attempt in 1..=attempts {
            let content = self.complete(&client, &url, &messages).await?;
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
            messages.push(json!({"role": "assistant", "content": content}));
            messages.push(json!({"role": "user", "content": format!(
                "The definition fails its check. Every problem, as {{code, path, message}} with a \
                 JSON pointer into the definition:\n{problems}\nReply with the corrected JSON \
                 document only."
            )}));
            diagnostics = problems;
        }
        Ok(GenerateResult::GenerationFailed {
            contract_hash,
            attempts,
            diagnostics,
        })
    }

    async fn complete(
        &self,
        client: &reqwest::Client,
        url: &str,
        messages: &[Value],
    ) -> Result<String, ApiError> {
        let mut request = client.post(url).json(&json!({
            "model": self.model,
            "messages": messages,
            "temperature": 0,
        }));
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let failed = |message: String| ApiError::GeneratorFailed { message };
        let response = request
            .send()
            .await
            .map_err(|e| failed(format!("the chat-completions endpoint is unreachable: {e}")))?;
        let status = response.status();
        if !status.is_success() {
            return Err(failed(format!(
                "the chat-completions endpoint answered {status}"
            )));
        }
        let body: Value = response
            .json()
            .await
            .map_err(|e| failed(format!("the chat-completions answer is not JSON: {e}")))?;
        body["choices"][0]["message"]["content"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| failed("the chat-completions answer has no message content".into()))
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
