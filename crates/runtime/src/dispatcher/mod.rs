//! The dispatcher (docs/spec.md §8): the one path every tool call takes, and the
//! simulation start that pins what it will answer with.
//!
//! `start` (in `start.rs`) runs as named phases: reach the agent's tools and
//! workflows, resolve pins, merge the initial state, create the attempts.
//! `call` (in `call.rs`) is the call pipeline and the recording of its
//! faults; `pins.rs` holds the compiled pins and their caches.

mod agent;
mod call;
mod effect;
mod faults;
mod pins;
mod start;

pub use call::sandbox_answer;

use crate::backend::{
    Backend, Clock, ExternalExecutor, NoExternalExecutor, Sleeper, SystemClock, TokioSleeper,
};
use crate::error::{FinishError, StoreError};
use crate::model::{
    AgentId, AttemptBinding, AttemptId, AttemptOutcome, Capability, CapabilityCheck, PinRecord,
    SimulationId, SimulationMode, TenantId, TestCaseId, TestCaseSpec, TokenHash, Verdict,
};
use chrono::{DateTime, Utc};
use pins::{DefinitionKey, PinSet};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;
use toolmock_contract::ContractHash;
use toolmock_evaluator::{CompiledContract, CompiledDefinition};

/// One tool call as the agent (or a nested service) makes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The tool's name.
    pub tool: String,
    /// The operation's runtime name.
    pub operation: String,
    /// The arguments.
    pub input: Value,
}

impl ToolCall {
    /// A call.
    pub fn new(tool: impl Into<String>, operation: impl Into<String>, input: Value) -> Self {
        Self {
            tool: tool.into(),
            operation: operation.into(),
            input,
        }
    }
}

/// A request to start a simulation.
#[derive(Debug, Clone, PartialEq)]
pub struct StartRequest {
    /// The agent under test.
    pub agent: AgentId,
    /// Sandbox or real tools.
    pub mode: SimulationMode,
    /// Accept stale or missing operations; calls to them then fail closed.
    pub allow_incomplete: bool,
    /// The test cases (at least one).
    pub test_cases: Vec<TestCaseSpec>,
    /// Attempts per test case (at least one).
    pub attempts_per_case: u32,
    /// The worker that holds the attempts' leases.
    pub lease_owner: String,
    /// How long the leases last from now.
    pub lease: Duration,
    /// Shared fixtures (docs/simulations.md "Fixtures"): objects whose
    /// members become top-level keys of every attempt's initial state,
    /// shared by the attempts and never copied per attempt.
    pub fixtures: Vec<FixtureInput>,
}

/// One shared fixture of a start request.
#[derive(Debug, Clone, PartialEq)]
pub struct FixtureInput {
    /// Where it was given, for problems (`/fixtures/0`, or a file's path).
    pub label: String,
    /// Its members: top-level keys of the initial state.
    pub members: Map<String, Value>,
}

/// A started simulation.
#[derive(Debug, Clone)]
pub struct StartedSimulation {
    /// Its id.
    pub id: SimulationId,
    /// Every reachable operation and its pin.
    pub pins: Vec<PinRecord>,
    /// The attempts, with their capabilities (shown only here, never stored).
    pub attempts: Vec<StartedAttempt>,
    /// The sha256 of the shared fixtures' canonical JSON, when the start
    /// gave any.
    pub fixtures_hash: Option<String>,
}

/// One attempt of a started simulation.
#[derive(Debug, Clone)]
pub struct StartedAttempt {
    /// Its id.
    pub id: AttemptId,
    /// Its test case.
    pub test_case: TestCaseId,
    /// The test case's name.
    pub test_case_name: String,
    /// 1, 2, … within its test case.
    pub number: u32,
    /// The capability nested services use for it.
    pub capability: Capability,
}

/// A capability's attempt, with the count of its calls this dispatcher
/// could not mark as begun (shared by every capability of the attempt).
#[derive(Debug)]
struct Bound {
    binding: AttemptBinding,
    unmarked: Arc<AtomicU64>,
}

/// A capability resolved to its attempt, handed on to
/// [`Dispatcher::call_resolved`]: a caller that had to find the attempt
/// anyway (the API's extractor, which also learns the tenant from it) hands
/// the dispatcher what it found, so a call looks its capability up once.
#[derive(Debug, Clone)]
pub struct ResolvedCapability {
    bound: Arc<Bound>,
    token: TokenHash,
    /// Whether the lease was live when read (`None`: from the dispatcher's
    /// bindings; the lease is then checked before anything happens).
    live: Option<bool>,
}

impl ResolvedCapability {
    /// The attempt's tenant.
    pub fn tenant(&self) -> TenantId {
        self.bound.binding.tenant
    }

    /// The attempt.
    pub fn attempt(&self) -> AttemptId {
        self.bound.binding.attempt
    }

    /// The attempt's simulation.
    pub fn simulation(&self) -> SimulationId {
        self.bound.binding.simulation
    }

    /// Whether the attempt's lease was live when the capability was read
    /// (`None`: from the dispatcher's bindings, not read now).
    pub fn live(&self) -> Option<bool> {
        self.live
    }
}

/// Calls made with a capability storage could not resolve, per token.
#[derive(Debug, Clone, Copy)]
struct Unresolved {
    /// The tenant the calls named.
    tenant: TenantId,
    /// How many.
    calls: u64,
}

/// The dispatcher: starts simulations and runs every call of their attempts.
///
/// Compiled contracts are cached by contract hash, compiled definitions by
/// (definition hash, contract hash), pin sets by simulation and capability
/// bindings by token hash: nothing is recompiled per call. Share it with an
/// `Arc`; every method takes `&self`.
///
/// Every call it processes is first marked as begun in storage (a
/// committed write of its own), so whichever process finishes the attempt
/// refuses a pass when the attempt's records fall short of its marks. What
/// storage could not even take — calls whose mark could not be written,
/// capabilities it could not resolve — it keeps in memory, and
/// `finish_attempt` adds them to the count (docs/data-model.md, "Faults that
/// cannot be written").
pub struct Dispatcher<B> {
    backend: B,
    clock: Arc<dyn Clock>,
    sleeper: Arc<dyn Sleeper>,
    executor: Arc<dyn ExternalExecutor>,
    contracts: RwLock<HashMap<ContractHash, Arc<CompiledContract>>>,
    definitions: RwLock<HashMap<DefinitionKey, Arc<CompiledDefinition>>>,
    simulations: RwLock<HashMap<SimulationId, Arc<PinSet>>>,
    bindings: RwLock<HashMap<TokenHash, Arc<Bound>>>,
    unmarked: Mutex<HashMap<AttemptId, Arc<AtomicU64>>>,
    unresolved: Mutex<HashMap<TokenHash, Unresolved>>,
}

impl<B> std::fmt::Debug for Dispatcher<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher").finish_non_exhaustive()
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<B: Backend> Dispatcher<B> {
    /// A dispatcher over `backend` with the system clock, real sleeps and no
    /// external executor (sandbox runs only).
    pub fn new(backend: B) -> Self {
        Self {
            backend,
            clock: Arc::new(SystemClock),
            sleeper: Arc::new(TokioSleeper),
            executor: Arc::new(NoExternalExecutor),
            contracts: RwLock::default(),
            definitions: RwLock::default(),
            simulations: RwLock::default(),
            bindings: RwLock::default(),
            unmarked: Mutex::default(),
            unresolved: Mutex::default(),
        }
    }

    /// Replaces the clock (tests expire leases with it).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The injected clock's now: what a driver stamps its own records with
    /// (a model-driven attempt's messages), so that they and the evidence
    /// are read on one clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// Replaces the sleeper that applies `delay_ms` (tests record instead of waiting).
    pub fn with_sleeper(mut self, sleeper: Arc<dyn Sleeper>) -> Self {
        self.sleeper = sleeper;
        self
    }

    /// Sets the real external handlers of real-tools runs.
    pub fn with_executor(mut self, executor: Arc<dyn ExternalExecutor>) -> Self {
        self.executor = executor;
        self
    }

    /// The real external handlers (of real-tools runs; a dispatcher without
    /// them refuses every real execution).
    pub fn executor(&self) -> &dyn ExternalExecutor {
        self.executor.as_ref()
    }

    /// The storage backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// A capability this dispatcher has already bound, without reading
    /// storage; `None` when it has not. A token's attempt never changes, so
    /// this is what storage would say; whether the capability is still live
    /// is checked by the call.
    pub fn cached_capability(&self, capability: &Capability) -> Option<ResolvedCapability> {
        let token = capability.hash();
        let bound = read(&self.bindings).get(&token)?.clone();
        Some(ResolvedCapability {
            bound,
            token,
            live: None,
        })
    }

    /// Binds `capability` to the attempt `check` found for it — a lookup
    /// the caller made itself at [`Dispatcher::now`] (the API's, by the
    /// token's hash alone, which also names the tenant) — so the call that
    /// follows does not look it up again.
    pub fn adopt_capability(
        &self,
        capability: &Capability,
        check: CapabilityCheck,
    ) -> ResolvedCapability {
        let token = capability.hash();
        let bound = Arc::new(Bound {
            unmarked: self.unmarked_of(check.binding.attempt),
            binding: check.binding,
        });
        write(&self.bindings).insert(token, bound.clone());
        ResolvedCapability {
            bound,
            token,
            live: Some(check.live),
        }
    }

    /// Ends an attempt. Its outcome is `harness_error` whenever any harness
    /// error was recorded for it, whatever `verdict` says; whenever its
    /// records (evidence, tool input errors, harness errors) are fewer than
    /// its calls begun (the marks in storage, by any process, plus the calls
    /// this dispatcher could not mark or resolve) — a call whose record could
    /// not be written is then recorded as `storage_failed` by the finish;
    /// and whenever its lease has ended or its capabilities were revoked
    /// (recorded as `lease_expired`). When the attempt's calls cannot be
    /// accounted for (storage still failing), the finish fails instead of
    /// passing.
    pub async fn finish_attempt(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        verdict: Verdict,
    ) -> Result<AttemptOutcome, FinishError> {
        self.finish(tenant, attempt, verdict, None).await
    }

    /// [`Dispatcher::finish_attempt`] with the attempt's judgement (its
    /// unmet expectations and the judge's report), recorded in the same
    /// step by a store that keeps judgements
    /// ([`crate::backend::AttemptStore::finish_judged`]).
    pub async fn finish_judged(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        verdict: Verdict,
        judgement: (&Value, Option<&Value>),
    ) -> Result<AttemptOutcome, FinishError> {
        self.finish(tenant, attempt, verdict, Some(judgement)).await
    }

    async fn finish(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        verdict: Verdict,
        judgement: Option<(&Value, Option<&Value>)>,
    ) -> Result<AttemptOutcome, FinishError> {
        let unresolved = self.unresolved_calls_of(tenant, attempt).await?;
        let unmarked = lock(&self.unmarked)
            .get(&attempt)
            .map_or(0, |count| count.load(Ordering::Relaxed));
        let (at, unmarked) = (self.clock.now(), unmarked + unresolved);
        let outcome = match judgement {
            Some(judgement) => {
                self.backend
                    .finish_judged(tenant, attempt, verdict, judgement, at, unmarked)
                    .await?
            }
            None => {
                self.backend
                    .finish_attempt(tenant, attempt, verdict, at, unmarked)
                    .await?
            }
        };
        write(&self.bindings)
            .retain(|_, b| !(b.binding.attempt == attempt && b.binding.tenant == tenant));
        lock(&self.unmarked).remove(&attempt);
        Ok(outcome)
    }

    /// Drops the cached pins of a finished simulation (they are reloaded if
    /// it is called again).
    pub fn forget_simulation(&self, simulation: SimulationId) {
        write(&self.simulations).remove(&simulation);
        write(&self.bindings).retain(|_, b| b.binding.simulation != simulation);
    }

    /// The shared count of an attempt's calls this dispatcher could not mark.
    fn unmarked_of(&self, attempt: AttemptId) -> Arc<AtomicU64> {
        lock(&self.unmarked).entry(attempt).or_default().clone()
    }

    /// Remembers a call whose capability storage could not resolve: its
    /// attempt is found (and charged with it) when an attempt of the tenant
    /// finishes.
    fn note_unresolved(&self, tenant: TenantId, token: TokenHash) {
        lock(&self.unresolved)
            .entry(token)
            .or_insert(Unresolved { tenant, calls: 0 })
            .calls += 1;
    }

    /// How many calls with unresolved capabilities were `attempt`'s. Tokens
    /// that turn out to be unknown are forgotten, others' kept for their own
    /// finish; while storage still cannot resolve one, nothing can finish.
    async fn unresolved_calls_of(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Result<u64, StoreError> {
        let pending: Vec<(TokenHash, u64)> = lock(&self.unresolved)
            .iter()
            .filter(|(_, unresolved)| unresolved.tenant == tenant)
            .map(|(token, unresolved)| (*token, unresolved.calls))
            .collect();
        let mut ours = 0;
        for (token, count) in pending {
            match self
                .backend
                .resolve_capability(tenant, &token, self.clock.now())
                .await
            {
                Ok(check) if check.binding.attempt == attempt => {
                    ours += count;
                    lock(&self.unresolved).remove(&token);
                }
                Ok(_) => {}
                Err(StoreError::NotFound { .. }) => {
                    lock(&self.unresolved).remove(&token);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(ours)
    }
}
