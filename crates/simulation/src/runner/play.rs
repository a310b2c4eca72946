//! Playing one attempt: the script, or the model's conversation, then its
//! conclusion (`conclude`).

use crate::conversation::{
    AttemptScope, ChatModel, ConversationSink, FunctionMap, attempt_model, system_message,
};
use crate::document::{CaseDoc, DriverDoc};
use crate::driver::run_script;
use crate::load::LoadedSimulation;
use crate::model_driver::run_model;
use crate::results::AttemptResult;
use crate::simulated_user::UserPlayer;
use crate::workflow::AttemptContext;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolmock_runtime::backend::Backend;
use toolmock_runtime::dispatcher::{Dispatcher, StartedAttempt};
use toolmock_runtime::model::TenantId;
use toolmock_runtime::model::WorkflowDoc;

use super::conclude::*;
use super::error::*;

/// How long a model-driven attempt may run by default
/// (`--attempt-timeout-secs`): past it the attempt ends `harness_error`
/// (`attempt_timeout`), however long its model keeps it waiting.
pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(1800);

/// What plays a simulation's model cases besides its document: the model
/// and the judge (each `None` where none is configured), the agent's
/// functions and its system message, and each model attempt's deadline.
/// Built once per simulation.
#[derive(Debug, Clone)]
pub struct Players {
    model: Option<Arc<dyn ChatModel>>,
    judge: Option<Arc<dyn ChatModel>>,
    /// Plays the cases' simulated users.
    user: Option<Arc<dyn ChatModel>>,
    /// Each case's simulated user, by case name.
    users: HashMap<String, UserPlayer>,
    functions: FunctionMap,
    system: String,
    attempt_timeout: Duration,
}

impl Default for Players {
    fn default() -> Self {
        Self {
            model: None,
            judge: None,
            user: None,
            users: HashMap::new(),
            functions: FunctionMap::default(),
            system: String::new(),
            attempt_timeout: DEFAULT_ATTEMPT_TIMEOUT,
        }
    }
}

impl Players {
    /// The players of `loaded`'s agent with `model` and `judge`.
    pub fn new(
        loaded: &LoadedSimulation,
        model: Option<Arc<dyn ChatModel>>,
        judge: Option<Arc<dyn ChatModel>>,
    ) -> Self {
        let users = loaded
            .document
            .cases
            .iter()
            .filter_map(|case| {
                let user = case.user.as_ref()?;
                Some((case.name.clone(), UserPlayer::new(loaded, user)))
            })
            .collect();
        Self {
            model,
            judge,
            user: None,
            users,
            functions: FunctionMap::of_agent(loaded),
            system: system_message(&loaded.document.agent),
            attempt_timeout: DEFAULT_ATTEMPT_TIMEOUT,
        }
    }

    /// With `user` playing the cases' simulated users (none: a case with
    /// one ends `harness_error`, `user_unavailable`).
    #[must_use]
    pub fn with_user(mut self, user: Option<Arc<dyn ChatModel>>) -> Self {
        self.user = user;
        self
    }

    /// The user model and the simulated user of `case`, when it has one.
    pub fn user_of(&self, case: &str) -> Option<(&UserPlayer, &Arc<dyn ChatModel>)> {
        Some((self.users.get(case)?, self.user.as_ref()?))
    }

    /// With each model-driven attempt's deadline `limit` (default
    /// [`DEFAULT_ATTEMPT_TIMEOUT`]).
    #[must_use]
    pub fn with_attempt_timeout(mut self, limit: Duration) -> Self {
        self.attempt_timeout = limit;
        self
    }
}

/// How [`play_attempt`] keeps what it played.
#[derive(Clone, Copy, Default)]
pub struct Keeping<'a> {
    /// Keep the attempt's raw records in its result (for `--evidence`).
    pub raw: bool,
    /// Where the conversation's messages go as they are added.
    pub sink: Option<&'a dyn ConversationSink>,
}

impl std::fmt::Debug for Keeping<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keeping")
            .field("raw", &self.raw)
            .field("sink", &self.sink.is_some())
            .finish()
    }
}

/// Runs one attempt of a scripted or model case: the script (or the model's
/// conversation), then the judgement over what was recorded, then the
/// finish. A model case without a model is recorded as the harness error
/// `model_not_configured` (it never passes); a `judge` rubric without a
/// judge as `judge_failed`.
pub async fn play_attempt<B: Backend + 'static>(
    dispatcher: &Dispatcher<B>,
    tenant: TenantId,
    (workflows, players): (&HashMap<String, WorkflowDoc>, &Players),
    case: &CaseDoc,
    case_at: &str,
    attempt: &StartedAttempt,
    keeping: Keeping<'_>,
) -> Result<AttemptResult, RunError> {
    // Without a model, `run_attempt` records `model_not_configured`.
    let (
        DriverDoc::Model {
            messages,
            max_turns,
        },
        Some(model),
    ) = (&case.driver, &players.model)
    else {
        return run_attempt(
            dispatcher,
            tenant,
            workflows,
            case,
            case_at,
            attempt,
            keeping.raw,
        )
        .await;
    };
    let began = Instant::now();
    let ctx = context(dispatcher, tenant, attempt, workflows);
    // Each attempt's own view of its models (a cassette counts its turns).
    let scope = AttemptScope {
        case: case.name.clone(),
        attempt: attempt.number,
    };
    let model = attempt_model(model, &scope);
    let judge = players.judge.as_ref().map(|j| attempt_model(j, &scope));
    let user_model = players
        .user_of(&case.name)
        .map(|(player, user)| (player, attempt_model(user, &scope)));
    let user = user_model
        .as_ref()
        .map(|(player, model)| (*player, model.as_ref()));
    let played = if case.user.is_some() && user.is_none() {
        // Never reached from `toolmock run` (refused before the start) nor
        // from a worker (the user model defaults to the agent's).
        let failure = ctx
            .harness_error(
                toolmock_runtime::error::HarnessCode::UserUnavailable,
                "no user model is configured here to play the case's simulated user".into(),
            )
            .await;
        if let crate::workflow::CallFailure::Fatal(e) = failure {
            return Err(e.into());
        }
        crate::model_driver::Played::default()
    } else {
        run_model(
            &ctx,
            (players.system.clone(), messages, *max_turns),
            (&players.functions, user),
            (model.as_ref(), keeping.sink, players.attempt_timeout),
            case_at,
        )
        .await?
    };
    let mut result = conclude_played(
        dispatcher,
        tenant,
        case,
        case_at,
        (attempt.id, attempt.number),
        played,
        (keeping.raw, judge.as_deref()),
    )
    .await?;
    result.wall = began.elapsed();
    Ok(result)
}

/// What a started attempt's players call the dispatcher with.
fn context<'a, B>(
    dispatcher: &'a Dispatcher<B>,
    tenant: TenantId,
    attempt: &'a StartedAttempt,
    workflows: &'a HashMap<String, WorkflowDoc>,
) -> AttemptContext<'a, B> {
    AttemptContext {
        dispatcher,
        tenant,
        attempt: attempt.id,
        capability: &attempt.capability,
        resolved: None,
        workflows,
    }
}

/// Runs one attempt: the script, then the judgement over what was recorded.
pub async fn run_attempt<B: Backend + 'static>(
    dispatcher: &Dispatcher<B>,
    tenant: TenantId,
    workflows: &HashMap<String, WorkflowDoc>,
    case: &CaseDoc,
    case_at: &str,
    attempt: &StartedAttempt,
    keep_raw: bool,
) -> Result<AttemptResult, RunError> {
    let began = Instant::now();
    let ctx = context(dispatcher, tenant, attempt, workflows);
    let unmet = if matches!(case.driver, DriverDoc::Model { .. }) {
        // A process without a model (a worker started without one) never
        // lets a model case pass with no conversation.
        let failure = ctx
            .harness_error(
                toolmock_runtime::error::HarnessCode::ModelNotConfigured,
                "no model endpoint is configured here to play a model case (give the worker --model-url and --model)".into(),
            )
            .await;
        if let crate::workflow::CallFailure::Fatal(e) = failure {
            return Err(e.into());
        }
        Vec::new()
    } else {
        run_script(&ctx, case, case_at).await?
    };
    let mut result = conclude_attempt(
        dispatcher,
        tenant,
        case,
        case_at,
        (attempt.id, attempt.number),
        unmet,
        keep_raw,
    )
    .await?;
    result.wall = began.elapsed();
    Ok(result)
}
