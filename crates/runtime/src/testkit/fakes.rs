//! Stand-ins for the dispatcher's seams: a clock the test moves, a sleeper
//! that records instead of waiting, an external executor that counts.

use super::prelude::*;

/// A clock the test moves by hand.
#[derive(Debug)]
pub struct ManualClock(Mutex<DateTime<Utc>>);

impl ManualClock {
    /// Starts at the system's now.
    pub fn new() -> Self {
        Self(Mutex::new(Utc::now()))
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock().unwrap();
        *now += chrono::Duration::from_std(by).unwrap();
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap()
    }
}

/// A sleeper that records the delays instead of waiting.
#[derive(Debug, Default)]
pub struct RecordingSleeper(Mutex<Vec<Duration>>);

impl RecordingSleeper {
    /// The delays asked for, in order.
    pub fn delays(&self) -> Vec<Duration> {
        self.0.lock().unwrap().clone()
    }
}

impl Sleeper for RecordingSleeper {
    fn sleep(&self, delay: Duration) -> BoxFuture<'_, ()> {
        self.0.lock().unwrap().push(delay);
        Box::pin(async {})
    }
}

/// An external executor that echoes each call and counts them; it can be
/// told to fail instead.
#[derive(Debug, Default)]
pub struct CountingExecutor {
    executed: AtomicUsize,
    failing: AtomicBool,
    ledger_shaped: bool,
}

impl CountingExecutor {
    /// An executor that answers like the real ledger: `{"previous": "real", "id": <input id>}`.
    pub fn ledger() -> Self {
        Self {
            ledger_shaped: true,
            ..Self::default()
        }
    }

    /// How many calls it executed (failed executions included).
    pub fn count(&self) -> usize {
        self.executed.load(Ordering::SeqCst)
    }

    /// From now on every execution fails (`true`) or succeeds (`false`).
    pub fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }
}

impl ExternalExecutor for CountingExecutor {
    fn execute<'a>(
        &'a self,
        tool: &'a str,
        operation: &'a str,
        input: &'a Value,
    ) -> BoxFuture<'a, Result<Value, String>> {
        self.executed.fetch_add(1, Ordering::SeqCst);
        let result = if self.failing.load(Ordering::SeqCst) {
            Err("the real service answered 503".to_owned())
        } else if self.ledger_shaped {
            Ok(json!({"previous": "real", "id": input.get("id").cloned().unwrap_or_default()}))
        } else {
            Ok(json!({"executed": format!("{tool}/{operation}"), "echo": input}))
        };
        Box::pin(async move { result })
    }
}

/// A storage operation [`Faulty`] can be told to fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// `AttemptStore::resolve_capability`.
    ResolveCapability,
    /// `PinStore::simulation_pins`.
    SimulationPins,
    /// `FixtureStore::apply_call` (the locked step, its write or its commit).
    ApplyCall,
    /// `EvidenceSink::record_tool_input_error`.
    RecordToolInputError,
    /// `EvidenceSink::record_harness_error`.
    RecordHarnessError,
    /// `AttemptStore::begin_call` (the call's begin mark).
    BeginCall,
}

/// A backend wrapper that fails chosen operations with
/// `StoreError::Backend` — storage failing in the middle of a call — and
/// passes everything else to the backend it wraps. Clones share the plan.
#[derive(Debug, Clone)]
pub struct Faulty<B> {
    inner: B,
    plan: Arc<Mutex<std::collections::HashMap<Fault, u32>>>,
}

impl<B> Faulty<B> {
    /// Wraps a backend; nothing fails until [`Faulty::fail`] says so.
    pub fn new(inner: B) -> Self {
        Self {
            inner,
            plan: Arc::default(),
        }
    }

    /// The next `times` calls of `operation` fail (`u32::MAX`: until healed).
    pub fn fail(&self, operation: Fault, times: u32) {
        self.plan.lock().unwrap().insert(operation, times);
    }

    /// Nothing fails any more.
    pub fn heal(&self) {
        self.plan.lock().unwrap().clear();
    }

    /// The wrapped backend.
    pub fn inner(&self) -> &B {
        &self.inner
    }

    fn check(&self, operation: Fault) -> Result<(), StoreError> {
        let mut plan = self.plan.lock().unwrap();
        match plan.get_mut(&operation) {
            Some(0) | None => Ok(()),
            Some(left) => {
                if *left != u32::MAX {
                    *left -= 1;
                }
                Err(StoreError::Backend(
                    format!("injected fault: {operation:?}").into(),
                ))
            }
        }
    }
}

impl<B: Catalog> Catalog for Faulty<B> {
    async fn create_tenant(&self, name: &str) -> Result<TenantId, StoreError> {
        self.inner.create_tenant(name).await
    }
    async fn create_tool(&self, tenant: TenantId, tool: &NewTool) -> Result<ToolId, StoreError> {
        self.inner.create_tool(tenant, tool).await
    }
    async fn upsert_operation(
        &self,
        tenant: TenantId,
        tool: ToolId,
        operation: &NewOperation,
    ) -> Result<OperationView, StoreError> {
        self.inner.upsert_operation(tenant, tool, operation).await
    }
    async fn tool(&self, tenant: TenantId, tool: ToolId) -> Result<LibraryTool, StoreError> {
        self.inner.tool(tenant, tool).await
    }
    async fn save_revision(
        &self,
        tenant: TenantId,
        operation: OperationId,
        save: &SaveRevision,
    ) -> Result<RevisionRecord, SaveRevisionError> {
        self.inner.save_revision(tenant, operation, save).await
    }
    async fn revision(
        &self,
        tenant: TenantId,
        operation: OperationId,
        revision: u32,
    ) -> Result<RevisionRecord, StoreError> {
        self.inner.revision(tenant, operation, revision).await
    }
    async fn create_agent(
        &self,
        tenant: TenantId,
        name: &str,
        spec: &AgentSpec,
    ) -> Result<AgentId, StoreError> {
        self.inner.create_agent(tenant, name, spec).await
    }
    async fn agent(&self, tenant: TenantId, agent: AgentId) -> Result<AgentRecord, StoreError> {
        self.inner.agent(tenant, agent).await
    }
}

impl<B: PinStore> PinStore for Faulty<B> {
    async fn create_simulation(
        &self,
        tenant: TenantId,
        simulation: &NewSimulation,
    ) -> Result<(), StoreError> {
        self.inner.create_simulation(tenant, simulation).await
    }
    async fn simulation_pins(
        &self,
        tenant: TenantId,
        simulation: SimulationId,
    ) -> Result<SimulationPins, StoreError> {
        self.check(Fault::SimulationPins)?;
        self.inner.simulation_pins(tenant, simulation).await
    }
}

impl<B: FixtureStore> FixtureStore for Faulty<B> {
    async fn apply_call<F>(
        &self,
        binding: &AttemptBinding,
        token: &TokenHash,
        now: DateTime<Utc>,
        mark: bool,
        step: F,
    ) -> Result<Applied, ApplyError>
    where
        F: Fn(toolmock_evaluator::StateView<'_>) -> Result<Step, CallError> + Send,
    {
        self.check(Fault::ApplyCall)?;
        // A folded begin mark is written by this call's write: when the
        // mark cannot be written, neither can the write.
        if mark {
            self.check(Fault::BeginCall)?;
        }
        self.inner.apply_call(binding, token, now, mark, step).await
    }
    fn folds_begin_mark(&self, attempt: AttemptId) -> bool {
        self.inner.folds_begin_mark(attempt)
    }
    async fn state(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Result<StateSnapshot, StoreError> {
        self.inner.state(tenant, attempt).await
    }
    async fn layered_state(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Result<crate::model::LayeredSnapshot, StoreError> {
        self.inner.layered_state(tenant, attempt).await
    }
}

impl<B: EvidenceSink> EvidenceSink for Faulty<B> {
    async fn record_tool_input_error(
        &self,
        record: &ToolInputErrorRecord,
    ) -> Result<(), StoreError> {
        self.check(Fault::RecordToolInputError)?;
        self.inner.record_tool_input_error(record).await
    }
    async fn record_harness_error(&self, record: &HarnessErrorRecord) -> Result<(), StoreError> {
        self.check(Fault::RecordHarnessError)?;
        self.inner.record_harness_error(record).await
    }
    async fn evidence(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Result<Vec<EvidenceRecord>, StoreError> {
        self.inner.evidence(tenant, attempt).await
    }
    async fn tool_input_errors(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Result<Vec<ToolInputErrorRecord>, StoreError> {
        self.inner.tool_input_errors(tenant, attempt).await
    }
    async fn harness_errors(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Result<Vec<HarnessErrorRecord>, StoreError> {
        self.inner.harness_errors(tenant, attempt).await
    }
}

impl<B: AttemptStore> AttemptStore for Faulty<B> {
    fn release_finished(&self, tenant: TenantId, attempt: AttemptId) {
        self.inner.release_finished(tenant, attempt);
    }
    async fn resolve_capability(
        &self,
        tenant: TenantId,
        token: &TokenHash,
        now: DateTime<Utc>,
    ) -> Result<CapabilityCheck, StoreError> {
        self.check(Fault::ResolveCapability)?;
        self.inner.resolve_capability(tenant, token, now).await
    }
    async fn renew_lease(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        owner: &str,
        until: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.inner.renew_lease(tenant, attempt, owner, until).await
    }
    async fn revoke_capabilities(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.inner.revoke_capabilities(tenant, attempt, at).await
    }
    async fn begin_call(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.check(Fault::BeginCall)?;
        self.inner.begin_call(tenant, attempt, at).await
    }
    async fn finish_attempt(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        verdict: Verdict,
        at: DateTime<Utc>,
        unmarked: u64,
    ) -> Result<AttemptOutcome, FinishError> {
        self.inner
            .finish_attempt(tenant, attempt, verdict, at, unmarked)
            .await
    }
    fn keeps_judgements(&self) -> bool {
        self.inner.keeps_judgements()
    }
    async fn finish_judged(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        verdict: Verdict,
        judgement: (&Value, Option<&Value>),
        at: DateTime<Utc>,
        unmarked: u64,
    ) -> Result<AttemptOutcome, FinishError> {
        self.inner
            .finish_judged(tenant, attempt, verdict, judgement, at, unmarked)
            .await
    }
    async fn attempt(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Result<AttemptRecord, StoreError> {
        self.inner.attempt(tenant, attempt).await
    }
}
