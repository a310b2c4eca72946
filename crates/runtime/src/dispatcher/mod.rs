//! The dispatcher (SPEC §8): the one path every tool call takes, and the
//! simulation start that pins what it will answer with.
//!
//! `start` (in `start.rs`) runs as named phases: reach the agent's tools and
//! workflows, resolve pins, merge the initial state, create the attempts.
//! `call` (in `call.rs`) is the call pipeline and the recording of its
//! faults; `pins.rs` holds the compiled pins and their caches.

mod call;
mod pins;
mod start;

use crate::backend::{
    Backend, Clock, ExternalExecutor, NoExternalExecutor, Sleeper, SystemClock, TokioSleeper,
};
use crate::error::FinishError;
use crate::model::{
    AgentId, AttemptBinding, AttemptId, AttemptOutcome, Capability, PinRecord, SimulationId,
    SimulationMode, TenantId, TestCaseId, TestCaseSpec, TokenHash, Verdict,
};
use pins::{DefinitionKey, PinSet};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};
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

/// The dispatcher: starts simulations and runs every call of their attempts.
///
/// Compiled contracts are cached by contract hash, compiled definitions by
/// (definition hash, contract hash), pin sets by simulation and capability
/// bindings by token hash: nothing is recompiled per call. Share it with an
/// `Arc`; every method takes `&self`.
pub struct Dispatcher<B> {
    backend: B,
    clock: Arc<dyn Clock>,
    sleeper: Arc<dyn Sleeper>,
    executor: Arc<dyn ExternalExecutor>,
    contracts: RwLock<HashMap<ContractHash, Arc<CompiledContract>>>,
    definitions: RwLock<HashMap<DefinitionKey, Arc<CompiledDefinition>>>,
    simulations: RwLock<HashMap<SimulationId, Arc<PinSet>>>,
    bindings: RwLock<HashMap<TokenHash, Arc<AttemptBinding>>>,
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
        }
    }

    /// Replaces the clock (tests expire leases with it).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
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

    /// The storage backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// Ends an attempt. Its outcome is `harness_error` whenever any harness
    /// error was recorded for it, whatever `verdict` says.
    pub async fn finish_attempt(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        verdict: Verdict,
    ) -> Result<AttemptOutcome, FinishError> {
        let outcome = self
            .backend
            .finish_attempt(tenant, attempt, verdict, self.clock.now())
            .await?;
        write(&self.bindings).retain(|_, b| !(b.attempt == attempt && b.tenant == tenant));
        Ok(outcome)
    }

    /// Drops the cached pins of a finished simulation (they are reloaded if
    /// it is called again).
    pub fn forget_simulation(&self, simulation: SimulationId) {
        write(&self.simulations).remove(&simulation);
        write(&self.bindings).retain(|_, b| b.simulation != simulation);
    }
}
