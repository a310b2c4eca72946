//! What plays the agent-played cases a worker claims: the model and the
//! judge of `model` cases (OpenAI-compatible endpoints, `toolmock-agent`),
//! and the agent services of `http` cases. Configured by the process that
//! runs the worker (flags with environment fallbacks, [`AgentFlags`]),
//! never by the simulation, and never written to evidence or judgements.

use crate::setup::WorkerError;
use std::sync::Arc;
use std::time::Duration;
use toolmock_agent::{ModelFlags, Models};
use toolmock_discovery::TargetPolicy;
use toolmock_runtime::model::{AttemptId, TenantId};
use toolmock_simulation::{ChatModel, ConversationSink, Message, SinkFuture};
use toolmock_store::PgStore;

/// The players of a worker's agent-played cases.
#[derive(Debug, Clone)]
pub struct Agents {
    /// Plays `model` cases; without one such an attempt ends `harness_error`
    /// (`model_not_configured`).
    pub model: Option<Arc<dyn ChatModel>>,
    /// Grades `judge` rubrics; without one such a rubric ends the attempt
    /// `harness_error` (`judge_failed`).
    pub judge: Option<Arc<dyn ChatModel>>,
    /// Plays cases' simulated users (none: `model` plays them; with neither,
    /// such an attempt ends `harness_error`).
    pub user: Option<Arc<dyn ChatModel>>,
    /// The API's base URL as agent services reach it (the tool-call and
    /// finish endpoints are under it); without one an `http` attempt ends
    /// `harness_error` (`agent_service_unreachable`).
    pub api_url: Option<String>,
    /// How long an agent service may take to finish an attempt it took.
    pub service_timeout: Duration,
    /// How long a model-driven attempt may run (`--attempt-timeout-secs`);
    /// past it, it ends `harness_error` (`attempt_timeout`).
    pub attempt_timeout: Duration,
    /// The client that hands attempts to agent services.
    pub http: reqwest::Client,
    /// The addresses tenants' URLs may reach: agent services, real tools'
    /// MCP servers and HTTP endpoints, verification targets. No loopback,
    /// private or link-local address unless the operator allows it.
    pub targets: TargetPolicy,
    /// The longest answer read from a tenant's real tool (an HTTP handler,
    /// an MCP server over streamable HTTP, an OpenAPI document); a longer
    /// one fails the call `response_too_large`.
    pub real_max_response_bytes: u64,
}

impl Agents {
    /// No model, no judge, no API URL; a 300 s service time-out; the
    /// default attempt deadline; no private target; real tools' answers up
    /// to 16 MiB.
    pub fn none() -> Self {
        Self {
            model: None,
            judge: None,
            user: None,
            api_url: None,
            service_timeout: Duration::from_secs(300),
            attempt_timeout: toolmock_simulation::DEFAULT_ATTEMPT_TIMEOUT,
            http: handover_client(),
            targets: TargetPolicy::default(),
            real_max_response_bytes: toolmock_discovery::DEFAULT_MAX_RESPONSE_BYTES,
        }
    }
}

impl Default for Agents {
    fn default() -> Self {
        Self::none()
    }
}

/// The client that hands attempts to agent services. It never follows a
/// redirect: the hand-over's body carries the attempt's capability, and a
/// service must not be able to send it on to another address (a 3xx is
/// refused as `agent_service_refused`, `service.rs`).
pub(crate) fn handover_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        // Fails only when the TLS back-end cannot start, where
        // `reqwest::Client::new()` panics the same way; a fallback client
        // would follow redirects.
        .expect("the HTTP client starts")
}

/// The flags (each with an environment fallback) that configure
/// [`Agents`]: `toolmock-worker`'s and `toolmock-api serve --workers N`'s —
/// the model and judge flags `toolmock run` has too, and the agent services'.
#[derive(Debug, Clone, clap::Args)]
pub struct AgentFlags {
    /// The model and the judge.
    #[command(flatten)]
    pub models: ModelFlags,
    /// The API's base URL as agent services reach it, e.g.
    /// `http://toolmock-api:8080` (`toolmock-api serve --workers N`: its own
    /// address by default).
    #[arg(long, value_name = "URL", env = "TOOLMOCK_API_URL")]
    pub api_url: Option<String>,
    /// How long an agent service (`http` cases) may take to finish an
    /// attempt it took, in seconds.
    #[arg(long, value_name = "SECS", env = "TOOLMOCK_AGENT_SERVICE_TIMEOUT_SECS",
          default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub agent_service_timeout_secs: u64,
    /// Let tenants' URLs (agent services, real tools, verification targets)
    /// reach loopback, private and link-local addresses: only where every
    /// tenant may reach the service's own network.
    #[arg(long, env = "TOOLMOCK_ALLOW_PRIVATE_TARGETS",
          value_parser = clap::builder::BoolishValueParser::new())]
    pub allow_private_targets: bool,
    /// A host tenants' URLs may reach whatever it resolves to (repeatable;
    /// the variable takes a comma-separated list).
    #[arg(
        long = "allow-target-host",
        value_name = "HOST",
        env = "TOOLMOCK_ALLOW_TARGET_HOSTS",
        value_delimiter = ','
    )]
    pub allow_target_hosts: Vec<String>,
    /// How much of a tenant's real tool's answer is read.
    #[command(flatten)]
    pub real: toolmock_discovery::RealToolFlags,
}

impl AgentFlags {
    /// The players the flags configure; `default_api_url` stands in for a
    /// missing `--api-url`. A flag given without its partner is refused.
    pub fn agents(&self, default_api_url: Option<String>) -> Result<Agents, WorkerError> {
        let Models {
            model,
            judge,
            user,
            attempt_timeout,
        } = self
            .models
            .models()
            .map_err(|e| WorkerError::Config(e.to_string()))?;
        let api_url = self.api_url.clone().or(default_api_url);
        if let Some(url) = &api_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(WorkerError::Config(format!(
                "--api-url must start with http:// or https://: {url:?}"
            )));
        }
        Ok(Agents {
            model,
            judge,
            user,
            api_url: api_url.map(|u| u.trim_end_matches('/').to_owned()),
            service_timeout: Duration::from_secs(self.agent_service_timeout_secs),
            attempt_timeout,
            http: handover_client(),
            targets: TargetPolicy {
                allow_private: self.allow_private_targets,
                allowed_hosts: self.allow_target_hosts.clone(),
            },
            real_max_response_bytes: self.real.real_max_response_bytes,
        })
    }
}

/// A model-driven attempt's conversation, kept in PostgreSQL message by
/// message under the attempt's fence (`attempt_messages`); the API keeps
/// an external agent's conversation with its simulated user through it too.
#[derive(Debug)]
pub struct PgSink<'a> {
    /// The store.
    pub store: &'a PgStore,
    /// The attempt's tenant.
    pub tenant: TenantId,
    /// The attempt.
    pub attempt: AttemptId,
}

impl ConversationSink for PgSink<'_> {
    fn keep<'a>(
        &'a self,
        position: u32,
        message: &'a Message,
        at: chrono::DateTime<chrono::Utc>,
    ) -> SinkFuture<'a> {
        Box::pin(async move {
            let value = serde_json::to_value(message).map_err(|e| {
                toolmock_runtime::error::StoreError::Corrupt {
                    what: "message",
                    message: e.to_string(),
                }
            })?;
            self.store
                .record_message(self.tenant, self.attempt, position, &value, at)
                .await
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
        agents: AgentFlags,
    }

    fn agents(args: &[&str]) -> Result<Agents, WorkerError> {
        let cli = Cli::try_parse_from(std::iter::once("worker").chain(args.iter().copied()))
            .expect("the flags parse");
        cli.agents.agents(Some("http://127.0.0.1:8080/".into()))
    }

    #[test]
    fn the_flags_configure_model_judge_and_services() {
        let none = agents(&[]).expect("nothing configured is fine");
        assert!(none.model.is_none() && none.judge.is_none());
        assert_eq!(none.api_url.as_deref(), Some("http://127.0.0.1:8080"));
        assert_eq!(none.service_timeout, Duration::from_secs(300));
        let both = agents(&[
            "--model-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--model-api-key",
            "sk-secret",
            "--judge-model",
            "j",
            "--api-url",
            "https://toolmock.example/",
            "--agent-service-timeout-secs",
            "5",
        ])
        .expect("configured");
        assert!(both.model.is_some() && both.judge.is_some());
        assert_eq!(both.api_url.as_deref(), Some("https://toolmock.example"));
        assert_eq!(both.service_timeout, Duration::from_secs(5));
        assert!(!format!("{both:?}").contains("sk-secret"));
    }

    /// The model flags' own pairing rules are `toolmock-agent`'s (tested
    /// there); here: its refusal is the worker's config error, as is a bad
    /// `--api-url`.
    #[test]
    fn a_bad_flag_is_the_workers_config_error() {
        for (args, why) in [
            (&["--model", "m"][..], "--model needs --model-url"),
            (&["--api-url", "ftp://x"][..], "--api-url must start with"),
            (
                &["--api-url", "toolmock.example"][..],
                "--api-url must start with",
            ),
        ] {
            let error = agents(args).expect_err("refused");
            assert_eq!(error.code(), "invalid_worker_config");
            assert!(error.to_string().contains(why), "{error}");
        }
    }
}
