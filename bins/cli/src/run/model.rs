//! The model endpoints of `toolmock run`: the model that plays `model`
//! cases and the judge that grades `judge` rubrics. From flags and the
//! environment only, never from the simulation file, and never written to
//! a report or the evidence.

use crate::Failure;
use clap::Args;
use std::sync::Arc;
use std::time::Duration;
use toolmock_agent::{Endpoint, OpenAiChat};
use toolmock_simulation::ChatModel;

/// The endpoint flags.
#[derive(Debug, Args)]
pub(crate) struct ModelArgs {
    /// The OpenAI-compatible endpoint that plays `model` cases
    /// (`/chat/completions` is appended), e.g. `https://api.openai.com/v1` or
    /// `http://127.0.0.1:11434/v1` (Ollama).
    #[arg(long, value_name = "URL", env = "TOOLMOCK_MODEL_URL")]
    model_url: Option<String>,
    /// The model name sent with each request.
    #[arg(long, value_name = "NAME", env = "TOOLMOCK_MODEL")]
    model: Option<String>,
    /// The endpoint's API key (sent as a bearer token; never printed).
    #[arg(
        long,
        value_name = "KEY",
        env = "TOOLMOCK_MODEL_API_KEY",
        hide_env_values = true
    )]
    model_api_key: Option<String>,
    /// Sampling temperature, when the endpoint supports it.
    #[arg(long, value_name = "T")]
    model_temperature: Option<f32>,
    /// Sampling seed, when the endpoint supports it.
    #[arg(long, value_name = "N")]
    model_seed: Option<i64>,
    /// How long one model request may take.
    #[arg(long, value_name = "SECS", default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=3600))]
    model_timeout_secs: u64,
    /// Retries of a transient failure (429, 5xx, time-out, connection) before
    /// the attempt ends harness_error (agent_unavailable).
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(0..=20))]
    model_retries: u32,
    /// Model requests in flight at once (the judge's are bounded apart).
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1024))]
    model_concurrency: u32,
    /// The judge's endpoint (default: --model-url).
    #[arg(long, value_name = "URL", env = "TOOLMOCK_JUDGE_URL")]
    judge_url: Option<String>,
    /// The judge model: grades `judge` rubrics over the recorded conversation.
    #[arg(long, value_name = "NAME", env = "TOOLMOCK_JUDGE_MODEL")]
    judge_model: Option<String>,
    /// The judge endpoint's API key (default: --model-api-key; never printed).
    #[arg(
        long,
        value_name = "KEY",
        env = "TOOLMOCK_JUDGE_API_KEY",
        hide_env_values = true
    )]
    judge_api_key: Option<String>,
}

/// The model and the judge the flags configure (each `None` when not given).
pub(crate) type Models = (Option<Arc<dyn ChatModel>>, Option<Arc<dyn ChatModel>>);

impl ModelArgs {
    fn endpoint(&self, url: String, model: String, api_key: Option<String>) -> Endpoint {
        Endpoint {
            base_url: url,
            model,
            api_key,
            temperature: self.model_temperature,
            seed: self.model_seed,
            timeout: Duration::from_secs(self.model_timeout_secs),
            max_retries: self.model_retries,
            concurrency: self.model_concurrency as usize,
        }
    }

    /// The configured clients; a flag given without its partner is a usage error.
    pub(crate) fn models(&self) -> Result<Models, Failure> {
        let build = |endpoint: Endpoint| -> Result<Arc<dyn ChatModel>, Failure> {
            OpenAiChat::new(&endpoint)
                .map(|m| Arc::new(m) as Arc<dyn ChatModel>)
                .map_err(|e| Failure::usage(format!("{}: {e}", e.code())))
        };
        let model = match (&self.model_url, &self.model) {
            (Some(url), Some(name)) => Some(build(self.endpoint(
                url.clone(),
                name.clone(),
                self.model_api_key.clone(),
            ))?),
            (None, None) => None,
            (Some(_), None) => return Err(Failure::usage("--model-url needs --model")),
            (None, Some(_)) => return Err(Failure::usage("--model needs --model-url")),
        };
        let judge = match (
            &self.judge_model,
            self.judge_url.as_ref().or(self.model_url.as_ref()),
        ) {
            (Some(name), Some(url)) => {
                let key = self
                    .judge_api_key
                    .clone()
                    .or_else(|| self.model_api_key.clone());
                Some(build(self.endpoint(url.clone(), name.clone(), key))?)
            }
            (Some(_), None) => {
                return Err(Failure::usage(
                    "--judge-model needs --judge-url or --model-url",
                ));
            }
            (None, _) => None,
        };
        Ok((model, judge))
    }
}
