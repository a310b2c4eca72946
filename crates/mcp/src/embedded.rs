//! `toolmock serve`: one case of a simulation, installed in the runtime it
//! is handed, whose attempts are played by MCP clients. Each attempt is
//! started when it is first asked for (its own fixture state, evidence and
//! capability) and judged when it ends, exactly as `toolmock run` judges a
//! scripted one.

use crate::error::{McpCode, ServeError};
use crate::handler::{Attempts, Entered, ToolServer, server_error};
use crate::handler::{harness_error, success};
use crate::tools::ServedTools;
use axum::http::request::Parts;
use rmcp::model::CallToolResult;
use rmcp::model::ErrorData;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, OwnedRwLockReadGuard, RwLock};
use toolmock_contract::pointer;
use toolmock_runtime::Dispatcher;
use toolmock_runtime::backend::Backend;
use toolmock_runtime::dispatcher::{StartedAttempt, StartedSimulation};
use toolmock_runtime::error::StartError;
use toolmock_runtime::model::{PinRecord, SimulationId, TenantId};
use toolmock_simulation::document::CaseDoc;
use toolmock_simulation::{
    AttemptContext, AttemptResult, AttemptScope, ChatModel, FileProblem, Installed, LoadCode,
    LoadedSimulation, RunError, RunResults, UserConversation, UserPlayer, UserReply,
    assemble_results, attempt_model, conclude_conversation, install, start_problems, start_request,
    user_turns_used_up,
};

/// The most attempts one `serve` hands out (one start's bound).
pub const MAX_ATTEMPTS: u32 = 10_000;

/// How long one `ask_user` may wait for the user model, its retries
/// included: an MCP call is answered, never left hanging.
const USER_REQUEST_LIMIT: Duration = Duration::from_secs(600);

/// When an attempt ends besides an explicit finish, the session's close or
/// the server's shutdown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// The attempt ends after this many calls have been answered.
    pub max_calls: Option<u64>,
    /// The attempt ends after this long without a call.
    pub idle: Option<Duration>,
    /// Keep each attempt's raw records (for `--evidence`).
    pub keep_raw: bool,
}

struct Slot {
    number: u32,
    attempt: StartedAttempt,
    simulation: SimulationId,
    /// `Some` once judged. A call holds a read guard, the finish the write
    /// guard: an attempt is judged only when no call of it is running, and
    /// no call runs after it.
    done: Arc<RwLock<Option<AttemptResult>>>,
    calls: AtomicU64,
    last: Mutex<Instant>,
    began: Instant,
    /// The conversation with the case's simulated user (`ask_user`).
    talk: tokio::sync::Mutex<UserConversation>,
    /// The user model as this attempt's (a cassette keeps each attempt's
    /// user requests apart, numbered by its turns).
    user_model: Option<Arc<dyn ChatModel>>,
}

impl Slot {
    fn touch(&self) {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    fn idle_for(&self) -> Duration {
        self.last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .elapsed()
    }
}

/// One served case and its attempts.
pub struct Embedded<B> {
    dispatcher: Arc<Dispatcher<B>>,
    loaded: Arc<LoadedSimulation>,
    installed: Installed,
    case: usize,
    pins: Vec<PinRecord>,
    fixtures_hash: Option<String>,
    tools: ServedTools,
    limits: Limits,
    slots: Mutex<BTreeMap<u32, Arc<Slot>>>,
    ended: Notify,
    /// The case's simulated user and the model that plays it.
    user: Option<(UserPlayer, Arc<dyn ChatModel>)>,
    workflows: std::collections::HashMap<String, toolmock_runtime::model::WorkflowDoc>,
}

impl<B> std::fmt::Debug for Embedded<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedded")
            .field("case", &self.case)
            .finish_non_exhaustive()
    }
}

/// The case `name` names, or the only one.
fn choose_case(loaded: &LoadedSimulation, name: Option<&str>) -> Result<usize, ServeError> {
    let names = || -> Vec<String> {
        loaded
            .document
            .cases
            .iter()
            .map(|c| c.name.clone())
            .collect()
    };
    match name {
        Some(name) => loaded
            .document
            .cases
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| ServeError::UnknownCase {
                name: name.to_owned(),
                names: names(),
            }),
        None if loaded.document.cases.len() == 1 => Ok(0),
        None => Err(ServeError::CaseRequired { names: names() }),
    }
}

impl<B: Backend + 'static> Embedded<B> {
    /// Installs `loaded` in `tenant` (every problem listed, as `toolmock run
    /// --check` would) and prepares to serve case `case` (or the only one);
    /// `user` plays its simulated user, if it has one (refused without:
    /// `user_model_not_configured`).
    pub async fn prepare(
        dispatcher: Arc<Dispatcher<B>>,
        tenant: TenantId,
        loaded: Arc<LoadedSimulation>,
        (case, user): (Option<&str>, Option<Arc<dyn ChatModel>>),
        limits: Limits,
    ) -> Result<Arc<Self>, ServeError> {
        let case = choose_case(&loaded, case)?;
        let user = match (&loaded.document.cases[case].user, user) {
            (Some(doc), Some(model)) => Some((UserPlayer::new(&loaded, doc), model)),
            (Some(_), None) => {
                return Err(ServeError::Problems(vec![FileProblem::new(
                    loaded.file.clone(),
                    toolmock_contract::Problem::new(
                        LoadCode::UserModelNotConfigured,
                        pointer::push(&pointer::index("/cases", case), "user"),
                        "the case has a simulated user: give --user-model-url and --user-model",
                    ),
                )]));
            }
            (None, _) => None,
        };
        let installed = install(&dispatcher, tenant, &loaded).await?;
        // A first start pins what every attempt will be served (each
        // attempt's own start pins the same revisions: nothing changes them
        // in between).
        let (_, probe) = start_one(&dispatcher, &loaded, &installed, case).await?;
        dispatcher.forget_simulation(probe.id);
        let mut tools = ServedTools::new(
            &loaded.document.agent.tools,
            &probe.pins,
            &loaded.document.agent.workflows,
        )?;
        if user.is_some() {
            tools = tools.with_ask_user()?;
        }
        Ok(Arc::new(Self {
            user,
            workflows: loaded.workflows(),
            dispatcher,
            loaded,
            installed,
            case,
            pins: probe.pins,
            fixtures_hash: probe.fixtures_hash,
            tools,
            limits,
            slots: Mutex::new(BTreeMap::new()),
            ended: Notify::new(),
        }))
    }

    /// The served tools.
    pub fn tools(&self) -> &ServedTools {
        &self.tools
    }

    /// The served case.
    pub fn case(&self) -> &CaseDoc {
        &self.loaded.document.cases[self.case]
    }

    /// The dispatcher.
    pub fn dispatcher(&self) -> &Arc<Dispatcher<B>> {
        &self.dispatcher
    }

    /// The MCP handler whose requests find their attempt through `attempts`.
    pub fn server<A: Attempts>(self: &Arc<Self>, attempts: A) -> ToolServer<B, A> {
        ToolServer::new(
            self.dispatcher.clone(),
            self.tools.clone(),
            self.loaded.workflows(),
            attempts,
            format!("toolmock: {}", self.loaded.document.name),
        )
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, BTreeMap<u32, Arc<Slot>>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Attempt `number`, started now if it has not been yet.
    pub async fn open(&self, number: u32) -> Result<(), ServeError> {
        self.slot(number).await.map(|_| ())
    }

    async fn slot(&self, number: u32) -> Result<Arc<Slot>, ServeError> {
        if number == 0 || number > MAX_ATTEMPTS {
            return Err(ServeError::UnknownAttempt {
                attempt: number.to_string(),
                max: MAX_ATTEMPTS,
            });
        }
        if let Some(slot) = self.slots().get(&number) {
            return Ok(slot.clone());
        }
        let (attempt, started) =
            start_one(&self.dispatcher, &self.loaded, &self.installed, self.case).await?;
        let simulation = started.id;
        let slot = Arc::new(Slot {
            number,
            attempt,
            simulation,
            done: Arc::new(RwLock::new(None)),
            calls: AtomicU64::new(0),
            last: Mutex::new(Instant::now()),
            began: Instant::now(),
            talk: tokio::sync::Mutex::new(UserConversation::default()),
            user_model: self.user.as_ref().map(|(_, model)| {
                let scope = AttemptScope {
                    case: self.loaded.document.cases[self.case].name.clone(),
                    attempt: number,
                };
                attempt_model(model, &scope)
            }),
        });
        // Two first requests for one number: the first start wins; the
        // other's attempt stays unused (never judged, never reported).
        let kept = self
            .slots()
            .entry(number)
            .or_insert_with(|| slot.clone())
            .clone();
        if !Arc::ptr_eq(&kept, &slot) {
            self.dispatcher.forget_simulation(simulation);
        }
        Ok(kept)
    }

    /// A new attempt's number (the next unused one), started.
    pub async fn new_attempt(&self) -> Result<u32, ServeError> {
        let number = self.slots().keys().next_back().map_or(1, |n| n + 1);
        self.open(number).await?;
        Ok(number)
    }

    async fn enter_slot(&self, number: u32) -> Result<Entered<Ticket>, ErrorData> {
        let slot = self
            .slot(number)
            .await
            .map_err(|e| server_error(code_of(&e), e.to_string()))?;
        let guard = slot.done.clone().read_owned().await;
        if guard.is_some() {
            let e = ServeError::AttemptFinished { attempt: number };
            return Err(server_error(McpCode::AttemptFinished, e.to_string()));
        }
        slot.touch();
        Ok(Entered {
            tenant: self.installed.tenant,
            attempt: slot.attempt.id,
            capability: slot.attempt.capability.clone(),
            resolved: None,
            ticket: Ticket { slot, guard },
        })
    }

    async fn leave_slot(&self, entered: Entered<Ticket>) {
        let Ticket { slot, guard } = entered.ticket;
        drop(guard);
        slot.touch();
        let calls = slot.calls.fetch_add(1, Ordering::AcqRel) + 1;
        if self.limits.max_calls.is_some_and(|max| calls >= max) {
            // Judged at once: the call that reached the bound is answered
            // after its attempt has ended.
            if let Err(e) = self.finish(slot.number).await
                && !matches!(e, ServeError::AttemptFinished { .. })
            {
                tracing::error!(attempt = slot.number, "cannot finish the attempt: {e}");
            }
        }
    }

    /// Ends attempt `number`: its case's expectations are judged over what
    /// it recorded and it finishes with that verdict (a harness error makes
    /// it `harness_error`). Waits for its running calls.
    pub async fn finish(&self, number: u32) -> Result<AttemptResult, ServeError> {
        let slot = self
            .slots()
            .get(&number)
            .cloned()
            .ok_or(ServeError::UnknownAttempt {
                attempt: number.to_string(),
                max: MAX_ATTEMPTS,
            })?;
        let mut done = slot.done.write().await;
        if done.is_some() {
            return Err(ServeError::AttemptFinished { attempt: number });
        }
        // What was said with the simulated user (nothing without one).
        let talk = std::mem::take(&mut *slot.talk.lock().await);
        let case_at = pointer::index("/cases", self.case);
        let (mut unmet, conversation, times) = talk.into_parts();
        // A user whose turns are used up without a stop marker has not
        // ended the conversation, whether or not the agent asked again.
        if let Some((player, _)) = &self.user
            && !unmet.iter().any(|u| u.code == "turn_limit")
        {
            unmet.extend(user_turns_used_up(
                player.max_turns,
                &conversation,
                &case_at,
            ));
        }
        let mut result = conclude_conversation(
            &self.dispatcher,
            self.installed.tenant,
            (self.case(), &case_at),
            (slot.attempt.id, number),
            (unmet, conversation, times),
            self.limits.keep_raw,
        )
        .await?;
        result.wall = slot.began.elapsed();
        self.dispatcher.forget_simulation(slot.simulation);
        *done = Some(result.clone());
        drop(done);
        self.ended.notify_waiters();
        Ok(result)
    }

    /// `ask_user` of the attempt `entered`: the agent's `message` to the
    /// simulated user, and its reply as the tool's result — `{"reply"}`,
    /// with `"ended": true` and `stop` when the user ended the conversation,
    /// `{"ended": true}` alone once it is over; a fault of the user model is
    /// a recorded harness error (a JSON-RPC error, as any).
    async fn ask_user(
        &self,
        entered: &Entered<Ticket>,
        message: Option<String>,
    ) -> Result<CallToolResult, ErrorData> {
        let (Some((player, _)), Some(model)) = (&self.user, &entered.ticket.slot.user_model) else {
            return Err(server_error(
                McpCode::AskUserNotServed,
                "the served case has no simulated user",
            ));
        };
        let ctx = AttemptContext {
            dispatcher: &*self.dispatcher,
            tenant: entered.tenant,
            attempt: entered.attempt,
            capability: &entered.capability,
            resolved: None,
            workflows: &self.workflows,
        };
        let mut talk = entered.ticket.slot.talk.lock().await;
        let reply = talk
            .ask(
                &ctx,
                message,
                (player, model.as_ref(), USER_REQUEST_LIMIT),
                (&pointer::index("/cases", self.case), None),
            )
            .await
            .map_err(|e| server_error(McpCode::StorageFailed, e.to_string()))?;
        Ok(match reply {
            UserReply::Said(text) => success(json!({"reply": text})),
            UserReply::Stopped { text, marker } => {
                success(json!({"reply": text, "stop": marker, "ended": true}))
            }
            UserReply::Ended => success(json!({"ended": true})),
            UserReply::Fault { code, message } => {
                return Err(harness_error(code.as_str(), &message, None));
            }
        })
    }

    /// Ends every attempt still open.
    pub async fn finish_all(&self) -> Result<(), ServeError> {
        let numbers: Vec<u32> = self.slots().keys().copied().collect();
        for number in numbers {
            match self.finish(number).await {
                Ok(_) | Err(ServeError::AttemptFinished { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// How many attempts have ended.
    pub async fn finished(&self) -> usize {
        let slots: Vec<Arc<Slot>> = self.slots().values().cloned().collect();
        let mut n = 0;
        for slot in slots {
            n += usize::from(slot.done.read().await.is_some());
        }
        n
    }

    /// Waits until some attempt ends (or `timeout` passes).
    pub async fn attempt_ended(&self, timeout: Duration) {
        let _ = tokio::time::timeout(timeout, self.ended.notified()).await;
    }

    /// Ends the attempts idle for `Limits::idle` (none without it).
    pub async fn finish_idle(&self) {
        let Some(idle) = self.limits.idle else {
            return;
        };
        let slots: Vec<Arc<Slot>> = self.slots().values().cloned().collect();
        for slot in slots {
            // A running call holds a read guard: not idle.
            let running = slot.done.try_write().is_err();
            if !running && slot.idle_for() >= idle {
                let _ = self.finish(slot.number).await;
            }
        }
    }

    /// The results document of the ended attempts, as `toolmock run` writes
    /// it: the served case with its attempts by number, coverage over the
    /// pinned operations.
    pub async fn results(&self) -> RunResults {
        let slots: Vec<Arc<Slot>> = self.slots().values().cloned().collect();
        let mut attempts = Vec::new();
        for slot in slots {
            if let Some(result) = slot.done.read().await.clone() {
                attempts.push(result);
            }
        }
        assemble_results(
            &self.loaded.document,
            &self.pins,
            vec![(self.case(), attempts)],
            self.fixtures_hash.clone(),
        )
    }
}

fn code_of(e: &ServeError) -> McpCode {
    match e {
        ServeError::UnknownAttempt { .. } => McpCode::UnknownAttempt,
        ServeError::AttemptFinished { .. } => McpCode::AttemptFinished,
        _ => McpCode::StorageFailed,
    }
}

/// Starts one attempt of case `case`.
async fn start_one<B: Backend>(
    dispatcher: &Dispatcher<B>,
    loaded: &LoadedSimulation,
    installed: &Installed,
    case: usize,
) -> Result<(StartedAttempt, StartedSimulation), ServeError> {
    let mut request = start_request(&loaded.document, installed.agent)?;
    request.test_cases = vec![request.test_cases.swap_remove(case)];
    request.attempts_per_case = 1;
    request.lease_owner = "toolmock serve".into();
    match dispatcher.start(installed.tenant, &request).await {
        Ok(mut started) => {
            // The one attempt, taken out: the rest is the simulation's.
            let attempt = started
                .attempts
                .pop()
                .ok_or_else(|| ServeError::Storage("the start created no attempt".into()))?;
            Ok((attempt, started))
        }
        Err(StartError::Refused { problems }) => {
            Err(ServeError::Problems(start_problems(loaded, &problems)))
        }
        Err(StartError::Store(e)) => Err(RunError::from(e).into()),
        Err(other) => Err(ServeError::Storage(other.to_string())),
    }
}

/// The attempt of a `--stdio` process: one, for the process's life.
#[derive(Debug)]
pub struct ProcessAttempt<B> {
    embedded: Arc<Embedded<B>>,
    number: u32,
}

impl<B: Backend + 'static> ProcessAttempt<B> {
    /// Attempt `number` of `embedded`.
    pub fn new(embedded: Arc<Embedded<B>>, number: u32) -> Self {
        Self { embedded, number }
    }
}

/// What a served call holds while it runs: its attempt cannot end meanwhile.
pub struct Ticket {
    slot: Arc<Slot>,
    guard: OwnedRwLockReadGuard<Option<AttemptResult>>,
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket")
            .field("attempt", &self.slot.number)
            .finish_non_exhaustive()
    }
}

impl<B: Backend + 'static> Attempts for ProcessAttempt<B> {
    type Ticket = Ticket;

    async fn enter(&self, _parts: Option<&Parts>) -> Result<Entered<Ticket>, ErrorData> {
        self.embedded.enter_slot(self.number).await
    }

    async fn leave(&self, entered: Entered<Ticket>) {
        self.embedded.leave_slot(entered).await;
    }

    async fn ask_user(
        &self,
        entered: &Entered<Ticket>,
        message: Option<String>,
    ) -> Result<CallToolResult, ErrorData> {
        self.embedded.ask_user(entered, message).await
    }
}

/// The attempt number the HTTP router put in a request's extensions (from
/// the path `/attempts/{n}/mcp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptNumber(pub u32);

/// The attempts of `--http`: each request's by the number in its path.
#[derive(Debug)]
pub struct PathAttempts<B> {
    embedded: Arc<Embedded<B>>,
}

impl<B: Backend + 'static> PathAttempts<B> {
    /// The attempts of `embedded`.
    pub fn new(embedded: Arc<Embedded<B>>) -> Self {
        Self { embedded }
    }
}

impl<B: Backend + 'static> Attempts for PathAttempts<B> {
    type Ticket = Ticket;

    async fn enter(&self, parts: Option<&Parts>) -> Result<Entered<Ticket>, ErrorData> {
        let number = parts
            .and_then(|p| p.extensions.get::<AttemptNumber>())
            .ok_or_else(|| {
                server_error(
                    McpCode::UnknownAttempt,
                    "the request names no attempt (use /attempts/{n}/mcp)",
                )
            })?;
        self.embedded.enter_slot(number.0).await
    }

    async fn leave(&self, entered: Entered<Ticket>) {
        self.embedded.leave_slot(entered).await;
    }

    async fn ask_user(
        &self,
        entered: &Entered<Ticket>,
        message: Option<String>,
    ) -> Result<CallToolResult, ErrorData> {
        self.embedded.ask_user(entered, message).await
    }
}
