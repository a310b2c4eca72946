//! The command-line flags (each with an environment fallback) that name the
//! model and the judge: one definition for every process that plays `model`
//! cases — `toolmock run`, `toolmock-worker`, `toolmock-api serve --workers N`.

use crate::{Endpoint, EndpointError, OpenAiChat};
use std::sync::Arc;
use std::time::Duration;
use toolmock_simulation::ChatModel;

/// The model and judge endpoint flags.
#[derive(Debug, Clone, clap::Args)]
pub struct ModelFlags {
    /// The OpenAI-compatible endpoint that plays `model` cases
    /// (`/chat/completions` is appended), e.g. `https://api.openai.com/v1` or
    /// `http://127.0.0.1:11434/v1` (Ollama).
    #[arg(long, value_name = "URL", env = "TOOLMOCK_MODEL_URL")]
    pub model_url: Option<String>,
    /// The model name sent with each request.
    #[arg(long, value_name = "NAME", env = "TOOLMOCK_MODEL")]
    pub model: Option<String>,
    /// The endpoint's API key (sent as a bearer token; never printed or stored).
    #[arg(
        long,
        value_name = "KEY",
        env = "TOOLMOCK_MODEL_API_KEY",
        hide_env_values = true
    )]
    pub model_api_key: Option<String>,
    /// The model that plays simulated users (default: the agent's).
    #[command(flatten)]
    pub user: crate::UserModelFlags,
    /// Sampling temperature, when the endpoint supports it.
    #[arg(long, value_name = "T", env = "TOOLMOCK_MODEL_TEMPERATURE")]
    pub model_temperature: Option<f32>,
    /// Sampling seed, when the endpoint supports it.
    #[arg(long, value_name = "N", env = "TOOLMOCK_MODEL_SEED")]
    pub model_seed: Option<i64>,
    /// How long one model request may take, in seconds.
    #[arg(long, value_name = "SECS", env = "TOOLMOCK_MODEL_TIMEOUT_SECS", default_value_t = 120,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub model_timeout_secs: u64,
    /// Retries of a transient failure (429, 5xx, time-out, connection) before
    /// the attempt ends harness_error (agent_unavailable).
    #[arg(long, value_name = "N", env = "TOOLMOCK_MODEL_RETRIES", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(0..=20))]
    pub model_retries: u32,
    /// How long one model-driven attempt may run, in seconds, model requests,
    /// retries and tool calls included; past it the attempt ends
    /// harness_error (attempt_timeout).
    #[arg(long, value_name = "SECS", env = "TOOLMOCK_ATTEMPT_TIMEOUT_SECS", default_value_t = 1800,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub attempt_timeout_secs: u64,
    /// Model requests in flight at once over all attempts of this process
    /// (the judge's are bounded apart, by the same number).
    #[arg(long, value_name = "N", env = "TOOLMOCK_MODEL_CONCURRENCY", default_value_t = 8,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub model_concurrency: u32,
    /// The longest answer read from the model or the judge, in bytes; a
    /// longer one ends the attempt harness_error (model_failed or
    /// judge_failed, reason response_too_large). Default 16 MiB.
    #[arg(long, value_name = "BYTES", env = "TOOLMOCK_MODEL_MAX_RESPONSE_BYTES",
          default_value_t = crate::DEFAULT_MAX_RESPONSE_BYTES,
          value_parser = clap::value_parser!(u64).range(1024..=1 << 30))]
    pub model_max_response_bytes: u64,
    /// The judge's endpoint (default: --model-url).
    #[arg(long, value_name = "URL", env = "TOOLMOCK_JUDGE_URL")]
    pub judge_url: Option<String>,
    /// The judge model: grades `judge` rubrics over the recorded conversation.
    #[arg(long, value_name = "NAME", env = "TOOLMOCK_JUDGE_MODEL")]
    pub judge_model: Option<String>,
    /// The judge endpoint's API key (default: --model-api-key; never printed).
    #[arg(
        long,
        value_name = "KEY",
        env = "TOOLMOCK_JUDGE_API_KEY",
        hide_env_values = true
    )]
    pub judge_api_key: Option<String>,
}

/// The model and the judge the flags configure, each `None` when not given.
#[derive(Debug, Clone, Default)]
pub struct Models {
    /// Plays `model` cases.
    pub model: Option<Arc<dyn ChatModel>>,
    /// Grades `judge` rubrics.
    pub judge: Option<Arc<dyn ChatModel>>,
    /// Plays simulated users (the agent's model unless configured apart).
    pub user: Option<Arc<dyn ChatModel>>,
    /// How long one model-driven attempt may run (`--attempt-timeout-secs`).
    pub attempt_timeout: Duration,
}

/// Why the flags do not configure a usable model or judge.
#[derive(Debug, thiserror::Error)]
pub enum FlagsError {
    /// `--model-url` was given without `--model`.
    #[error("--model-url needs --model")]
    ModelUrlWithoutModel,
    /// `--model` was given without `--model-url`.
    #[error("--model needs --model-url")]
    ModelWithoutUrl,
    /// `--judge-model` was given with neither `--judge-url` nor `--model-url`.
    #[error("--judge-model needs --judge-url or --model-url")]
    JudgeWithoutUrl,
    /// `--user-model-url` was given without `--user-model`.
    #[error("--user-model-url needs --user-model")]
    UserModelUrlWithoutModel,
    /// `--user-model` was given with neither `--user-model-url` nor `--model-url`.
    #[error("--user-model needs --user-model-url or --model-url")]
    UserModelWithoutUrl,
    /// An endpoint the flags name cannot be used.
    #[error("{code}: {source}", code = .source.code())]
    Endpoint {
        /// Why.
        #[from]
        source: EndpointError,
    },
}

impl FlagsError {
    /// A stable code.
    pub fn code(&self) -> &'static str {
        match self {
            FlagsError::ModelUrlWithoutModel => "model_url_without_model",
            FlagsError::ModelWithoutUrl => "model_without_url",
            FlagsError::JudgeWithoutUrl => "judge_without_url",
            FlagsError::UserModelUrlWithoutModel => "user_model_url_without_model",
            FlagsError::UserModelWithoutUrl => "user_model_without_url",
            FlagsError::Endpoint { source } => source.code(),
        }
    }
}

impl ModelFlags {
    fn endpoint(&self, base_url: &str, model: &str, api_key: Option<&String>) -> Endpoint {
        Endpoint {
            base_url: base_url.to_owned(),
            model: model.to_owned(),
            api_key: api_key.cloned(),
            temperature: self.model_temperature,
            seed: self.model_seed,
            timeout: Duration::from_secs(self.model_timeout_secs),
            max_retries: self.model_retries,
            concurrency: self.model_concurrency as usize,
            max_response_bytes: self.model_max_response_bytes,
        }
    }

    /// The clients the flags configure. A flag given without its partner is
    /// refused; the judge falls back to the model's URL and key.
    pub fn models(&self) -> Result<Models, FlagsError> {
        let build = |endpoint: Endpoint| -> Result<Arc<dyn ChatModel>, FlagsError> {
            Ok(Arc::new(OpenAiChat::new(&endpoint)?))
        };
        let model = match (&self.model_url, &self.model) {
            (Some(url), Some(name)) => Some(build(self.endpoint(
                url,
                name,
                self.model_api_key.as_ref(),
            ))?),
            (None, None) => None,
            (Some(_), None) => return Err(FlagsError::ModelUrlWithoutModel),
            (None, Some(_)) => return Err(FlagsError::ModelWithoutUrl),
        };
        let judge_url = self.judge_url.as_ref().or(self.model_url.as_ref());
        let judge = match (&self.judge_model, judge_url) {
            (Some(name), Some(url)) => {
                let key = self.judge_api_key.as_ref().or(self.model_api_key.as_ref());
                Some(build(self.endpoint(url, name, key))?)
            }
            (Some(_), None) => return Err(FlagsError::JudgeWithoutUrl),
            (None, _) => None,
        };
        let user = match self
            .user
            .endpoint(self.model_url.as_ref(), self.model_api_key.as_ref())?
        {
            crate::user_flags::UserEndpoint::Agent => model.clone(),
            crate::user_flags::UserEndpoint::Own(url, name, key) => {
                Some(build(self.endpoint(url, name, key))?)
            }
        };
        Ok(Models {
            model,
            judge,
            user,
            attempt_timeout: Duration::from_secs(self.attempt_timeout_secs),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        models: ModelFlags,
    }

    fn models(args: &[&str]) -> Result<Models, FlagsError> {
        Cli::try_parse_from(std::iter::once("toolmock").chain(args.iter().copied()))
            .expect("the flags parse")
            .models
            .models()
    }

    #[test]
    fn the_flags_configure_a_model_and_a_judge() {
        let none = models(&[]).expect("nothing configured is fine");
        assert!(none.model.is_none() && none.judge.is_none());
        let both = models(&[
            "--model-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--model-api-key",
            "sk-secret",
            "--judge-model",
            "j",
        ])
        .expect("configured");
        assert!(both.model.is_some() && both.judge.is_some());
        // The user model is the agent's unless configured apart.
        assert!(Arc::ptr_eq(
            both.model.as_ref().expect("model"),
            both.user.as_ref().expect("user")
        ));
        let apart = models(&[
            "--model-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--user-model",
            "u",
        ])
        .expect("a user model on the agent's endpoint");
        assert!(!Arc::ptr_eq(
            apart.model.as_ref().expect("model"),
            apart.user.as_ref().expect("user")
        ));
        let user_only = models(&[
            "--user-model-url",
            "http://127.0.0.1:9/v1",
            "--user-model",
            "u",
        ])
        .expect("a user model alone is fine");
        assert!(user_only.model.is_none() && user_only.user.is_some());
        assert!(!format!("{both:?}").contains("sk-secret"));
        let judge_only = models(&["--judge-url", "http://127.0.0.1:9/v1", "--judge-model", "j"])
            .expect("a judge alone is fine");
        assert!(judge_only.model.is_none() && judge_only.judge.is_some());
    }

    #[test]
    fn a_flag_without_its_partner_is_refused_with_a_code() {
        for (args, code, why) in [
            (
                &["--model-url", "http://x/v1"][..],
                "model_url_without_model",
                "--model-url needs --model",
            ),
            (
                &["--model", "m"][..],
                "model_without_url",
                "--model needs --model-url",
            ),
            (
                &["--judge-model", "j"][..],
                "judge_without_url",
                "--judge-model needs",
            ),
            (
                &["--user-model-url", "http://x/v1"][..],
                "user_model_url_without_model",
                "--user-model-url needs --user-model",
            ),
            (
                &["--user-model", "u"][..],
                "user_model_without_url",
                "--user-model needs",
            ),
            (
                &["--model-url", "ftp://x", "--model", "m"][..],
                "invalid_model_url",
                "invalid_model_url: the model URL must start with",
            ),
        ] {
            let error = models(args).expect_err("refused");
            assert_eq!(error.code(), code);
            assert!(error.to_string().starts_with(why), "{error}");
        }
    }
}
