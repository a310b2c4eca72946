//! What the runtime runs on: the storage traits ([`Catalog`], [`PinStore`],
//! [`FixtureStore`], [`EvidenceSink`], [`AttemptStore`]; together
//! [`Backend`]), the in-memory implementation ([`MemoryStore`]), the rules of
//! saving a revision every backend applies (`SaveRevision::check`), and the
//! other injected seams: the [`Clock`], the [`Sleeper`] and the
//! [`ExternalExecutor`].
//!
//! Every storage method takes the tenant from its caller and must treat a row
//! of another tenant exactly as a missing one ([`StoreError::NotFound`]).

mod memory;
mod revision;

pub use memory::MemoryStore;

use crate::error::{ApplyError, FinishError, SaveRevisionError, StoreError};
use crate::model::{
    AgentId, AgentRecord, AgentSpec, Applied, AttemptBinding, AttemptId, AttemptOutcome,
    AttemptRecord, CapabilityCheck, EvidenceRecord, HarnessErrorRecord, LayeredSnapshot,
    LibraryTool, NewOperation, NewSimulation, NewTool, OperationId, OperationView, RevisionRecord,
    SaveRevision, SimulationId, SimulationPins, StateSnapshot, Step, TenantId, TokenHash, ToolId,
    ToolInputErrorRecord, Verdict,
};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use toolmock_evaluator::CallError;

/// Tenants, library tools, their operations and revisions, and agents.
pub trait Catalog: Send + Sync {
    /// Creates a tenant.
    fn create_tenant(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<TenantId, StoreError>> + Send;

    /// Creates a library tool; its name is unique per tenant.
    fn create_tool(
        &self,
        tenant: TenantId,
        tool: &NewTool,
    ) -> impl Future<Output = Result<ToolId, StoreError>> + Send;

    /// Creates or refreshes an operation (by name) with its current contract
    /// (after the tool's output-schema fallback) and hash.
    fn upsert_operation(
        &self,
        tenant: TenantId,
        tool: ToolId,
        operation: &NewOperation,
    ) -> impl Future<Output = Result<OperationView, StoreError>> + Send;

    /// A tool with every operation, its current contract and latest revision.
    fn tool(
        &self,
        tenant: TenantId,
        tool: ToolId,
    ) -> impl Future<Output = Result<LibraryTool, StoreError>> + Send;

    /// Appends a revision: in one step that excludes other saves of the same
    /// operation, compares `contract_hash` with the current hash, checks the
    /// definition against the current contract, and numbers it latest + 1.
    fn save_revision(
        &self,
        tenant: TenantId,
        operation: OperationId,
        save: &SaveRevision,
    ) -> impl Future<Output = Result<RevisionRecord, SaveRevisionError>> + Send;

    /// One revision.
    fn revision(
        &self,
        tenant: TenantId,
        operation: OperationId,
        revision: u32,
    ) -> impl Future<Output = Result<RevisionRecord, StoreError>> + Send;

    /// Creates an agent.
    fn create_agent(
        &self,
        tenant: TenantId,
        name: &str,
        spec: &AgentSpec,
    ) -> impl Future<Output = Result<AgentId, StoreError>> + Send;

    /// One agent.
    fn agent(
        &self,
        tenant: TenantId,
        agent: AgentId,
    ) -> impl Future<Output = Result<AgentRecord, StoreError>> + Send;
}

/// Simulations and their pins.
pub trait PinStore: Send + Sync {
    /// Writes a simulation, its pins, test cases, attempts, their initial
    /// fixture state and capability hashes, all or nothing.
    fn create_simulation(
        &self,
        tenant: TenantId,
        simulation: &NewSimulation,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The mode and pins of a simulation (with the pinned definitions and contracts).
    fn simulation_pins(
        &self,
        tenant: TenantId,
        simulation: SimulationId,
    ) -> impl Future<Output = Result<SimulationPins, StoreError>> + Send;
}

/// Per-attempt fixture state, changed only under the attempt's lock.
pub trait FixtureStore: Send + Sync {
    /// The locked step of one call, atomically: lock the attempt's state
    /// (Postgres: `SELECT … FOR UPDATE`), check that the capability is live,
    /// run `step` on the pre-call state, write the post-call state with the
    /// version incremented, insert the evidence with both versions, commit.
    /// When `step` fails nothing is written.
    ///
    /// With `mark`, the call's begin mark ([`AttemptStore::begin_call`],
    /// at `now`) is written in the same commit as the evidence, and only
    /// with it: when this returns an error, no mark was written. The
    /// dispatcher asks for it only when [`FixtureStore::folds_begin_mark`]
    /// says so.
    ///
    /// `step` may run more than once (a backend may evaluate on a copy of
    /// the state first and again under the lock when the copy is stale);
    /// only the run whose state is written counts, so it must be free of
    /// side effects.
    fn apply_call<F>(
        &self,
        binding: &AttemptBinding,
        token: &TokenHash,
        now: DateTime<Utc>,
        mark: bool,
        step: F,
    ) -> impl Future<Output = Result<Applied, ApplyError>> + Send
    where
        F: Fn(toolmock_evaluator::StateView<'_>) -> Result<Step, CallError> + Send;

    /// Whether a sandbox call of `attempt` may leave its begin mark to
    /// [`FixtureStore::apply_call`] (`mark`) instead of writing it first in
    /// a commit of its own. A backend says yes only for attempts whose
    /// calls all run in this process under its fence (a worker's), where
    /// a crash between the evaluation and the commit cannot lose a call
    /// unnoticed: the lease then runs out and the attempt ends as
    /// `harness_error` (`lease_expired`) whatever its records say. By
    /// default, no.
    fn folds_begin_mark(&self, attempt: AttemptId) -> bool {
        let _ = attempt;
        false
    }

    /// The current state and version.
    fn state(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> impl Future<Output = Result<StateSnapshot, StoreError>> + Send;

    /// The current state as its layers: the shared base and the attempt's
    /// own writes, so that a reader that keeps it (a run's evidence, a
    /// judgement) holds what the attempt changed, never a copy of the base.
    /// By default, the whole state of [`FixtureStore::state`] as the base
    /// with no writes over it.
    fn layered_state(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> impl Future<Output = Result<LayeredSnapshot, StoreError>> + Send {
        async move {
            self.state(tenant, attempt)
                .await
                .map(LayeredSnapshot::whole_state)
        }
    }
}

/// The append-only records of calls and faults.
pub trait EvidenceSink: Send + Sync {
    /// Stores a tool input error, committed before this returns.
    fn record_tool_input_error(
        &self,
        record: &ToolInputErrorRecord,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Stores a harness error, committed before this returns; the attempt is
    /// marked so that it can never end as passed (also when already finished).
    fn record_harness_error(
        &self,
        record: &HarnessErrorRecord,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The evidence of an attempt, in state-version order.
    fn evidence(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> impl Future<Output = Result<Vec<EvidenceRecord>, StoreError>> + Send;

    /// The tool input errors of an attempt, in order.
    fn tool_input_errors(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> impl Future<Output = Result<Vec<ToolInputErrorRecord>, StoreError>> + Send;

    /// The harness errors of an attempt, in order.
    fn harness_errors(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> impl Future<Output = Result<Vec<HarnessErrorRecord>, StoreError>> + Send;

    /// Everything an attempt recorded, for its judgement: the three lists
    /// above, read at once, and — when the backend reads it in the same
    /// round trip — its state. By default the three reads one after
    /// another (an in-memory backend waits on none), and no state.
    fn attempt_records(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> impl Future<Output = Result<AttemptRecords, StoreError>> + Send {
        async move {
            Ok(AttemptRecords {
                evidence: self.evidence(tenant, attempt).await?,
                tool_input_errors: self.tool_input_errors(tenant, attempt).await?,
                harness_errors: self.harness_errors(tenant, attempt).await?,
                state: None,
            })
        }
    }
}

/// What an attempt recorded ([`EvidenceSink::attempt_records`]).
#[derive(Debug, Clone)]
pub struct AttemptRecords {
    /// Its evidence, in state-version order.
    pub evidence: Vec<EvidenceRecord>,
    /// Its tool input errors, in order.
    pub tool_input_errors: Vec<ToolInputErrorRecord>,
    /// Its harness errors, in order.
    pub harness_errors: Vec<HarnessErrorRecord>,
    /// Its state as its layers (the shared base never copied), when read in
    /// the same round trip (`None`: read it with
    /// [`FixtureStore::layered_state`]).
    pub state: Option<LayeredSnapshot>,
}

/// Attempts: capabilities, leases, verdicts.
pub trait AttemptStore: Send + Sync {
    /// The attempt a capability is bound to and whether it is live at `now`.
    /// An unknown or foreign token is [`StoreError::NotFound`].
    fn resolve_capability(
        &self,
        tenant: TenantId,
        token: &TokenHash,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<CapabilityCheck, StoreError>> + Send;

    /// Extends (or shortens) a running attempt's lease, for its owner only.
    fn renew_lease(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        owner: &str,
        until: DateTime<Utc>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Revokes every capability of an attempt.
    fn revoke_capabilities(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Marks, in a committed write of its own, that a call of `attempt`
    /// began: the dispatcher writes it before anything of the call is
    /// evaluated, executed or answered, so that any process finishing the
    /// attempt can tell how many calls it must find records of.
    fn begin_call(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Ends a running attempt, in one step that excludes other finishes and
    /// harness-error writes of it ([`FinishError::AlreadyFinished`] when it
    /// has ended already). First, when its records (evidence, tool input
    /// errors and harness errors together) are fewer than its calls begun —
    /// the marks of [`AttemptStore::begin_call`] plus `unmarked`, the calls
    /// the finishing dispatcher itself could not mark — a call was lost on
    /// its way to storage, and the finish records `storage_failed`
    /// (`HarnessErrorRecord::ledger_gap`). Then, when its lease ended at or before `at` or
    /// every capability of it is revoked, it records `lease_expired`
    /// (`HarnessErrorRecord::finished_after_lease`). The outcome is `harness_error` when the
    /// attempt has any harness error, otherwise the verdict's.
    fn finish_attempt(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        verdict: Verdict,
        at: DateTime<Utc>,
        unmarked: u64,
    ) -> impl Future<Output = Result<AttemptOutcome, FinishError>> + Send;

    /// Whether this store records an attempt's judgement with its finish
    /// ([`AttemptStore::finish_judged`]); a caller builds the judgement's
    /// JSON only for one that does. By default it does not: an in-process
    /// run keeps the judgement in its own result.
    fn keeps_judgements(&self) -> bool {
        false
    }

    /// [`AttemptStore::finish_attempt`], and the attempt's judgement
    /// recorded in the same step: both or neither, under the same lock and
    /// fence, so that no reader ever sees the attempt finished and unjudged
    /// (a judgement is recorded once per attempt). The judgement is its
    /// unmet expectations (a JSON array) and, for a case whose rubric was
    /// graded, the judge's report (verdict, score, reasoning). A store that
    /// does not keep judgements only finishes, as by default.
    fn finish_judged(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        verdict: Verdict,
        judgement: (&Value, Option<&Value>),
        at: DateTime<Utc>,
        unmarked: u64,
    ) -> impl Future<Output = Result<AttemptOutcome, FinishError>> + Send {
        let _ = judgement;
        self.finish_attempt(tenant, attempt, verdict, at, unmarked)
    }

    /// One attempt.
    fn attempt(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> impl Future<Output = Result<AttemptRecord, StoreError>> + Send;

    /// Lets go of a finished attempt whose caller has taken everything it
    /// reports of it (an in-process `toolmock run`, which reports and
    /// exits): a store that holds attempts in memory drops the attempt and
    /// its records, so that a run's memory is bounded by its report rather
    /// than by every call it ever answered; the attempt is then not found.
    /// A running attempt is kept. A durable store keeps everything: by
    /// default nothing happens.
    fn release_finished(&self, tenant: TenantId, attempt: AttemptId) {
        let _ = (tenant, attempt);
    }
}

/// Everything the dispatcher and the start need from storage.
pub trait Backend: Catalog + PinStore + FixtureStore + EvidenceSink + AttemptStore {}

impl<T: Catalog + PinStore + FixtureStore + EvidenceSink + AttemptStore> Backend for T {}

/// A boxed, sendable future (for the object-safe seams such as
/// [`ExternalExecutor`]).
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Runs a pinned call against the real tool (real-tools runs only). Never
/// called for an unknown tool or operation, and never in a sandbox run.
pub trait ExternalExecutor: Send + Sync {
    /// Executes one call for real.
    fn execute<'a>(
        &'a self,
        tool: &'a str,
        operation: &'a str,
        input: &'a Value,
    ) -> BoxFuture<'a, Result<Value, String>>;

    /// Whether [`ExternalExecutor::effect`] executes `effect` (by default
    /// no effect has a handler).
    fn handles(&self, effect: crate::model::EffectKind) -> bool {
        let _ = effect;
        false
    }

    /// Executes a workflow's effect node for real: `config` is the node's
    /// configuration with its references resolved; the answer is the node's
    /// output. Reached only in a real-tools run (a sandbox start refuses
    /// effect nodes) and only for an effect it [`handles`](Self::handles).
    fn effect<'a>(
        &'a self,
        effect: crate::model::EffectKind,
        config: &'a Value,
    ) -> BoxFuture<'a, Result<Value, String>> {
        let _ = config;
        Box::pin(async move {
            Err(format!(
                "no handler executes {} effects here",
                effect.as_str()
            ))
        })
    }
}

/// The executor of sandbox deployments: refuses every real execution.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NoExternalExecutor;

impl ExternalExecutor for NoExternalExecutor {
    fn execute<'a>(
        &'a self,
        tool: &'a str,
        operation: &'a str,
        _input: &'a Value,
    ) -> BoxFuture<'a, Result<Value, String>> {
        Box::pin(async move {
            Err(format!(
                "no external executor is configured; {tool}/{operation} was not executed"
            ))
        })
    }
}

/// The wall clock, injectable so that tests can expire leases.
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> DateTime<Utc>;
}

/// [`Clock`] reading the system clock.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// Applies a call's simulated delay, injectable so that tests need not wait.
pub trait Sleeper: Send + Sync {
    /// Waits `delay`.
    fn sleep(&self, delay: Duration) -> BoxFuture<'_, ()>;
}

/// [`Sleeper`] using `tokio::time::sleep`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, delay: Duration) -> BoxFuture<'_, ()> {
        Box::pin(tokio::time::sleep(delay))
    }
}
