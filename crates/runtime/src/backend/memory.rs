//! The in-memory backend: embedded runs and fast tests.
//!
//! It keeps the Postgres backend's guarantees with process-local locks: one
//! mutex per attempt's fixture state (the row lock), one catalog mutex that
//! serializes revision saves (the operation row lock), append-only vectors
//! for revisions, evidence and errors, and tenant checks on every lookup.
//! Nothing is persisted.

use super::{AttemptStore, Catalog, Clock, EvidenceSink, FixtureStore, PinStore, SystemClock};
use crate::error::{ApplyError, FinishError, SaveRevisionError, StoreError};
use crate::model::{
    AgentId, AgentRecord, AgentSpec, Applied, AttemptBinding, AttemptId, AttemptOutcome,
    AttemptRecord, CapabilityCheck, EvidenceRecord, HarnessErrorRecord, LayeredSnapshot,
    LibraryTool, NewOperation, NewSimulation, NewTool, OperationId, OperationView, RevisionRecord,
    SaveRevision, SimulationId, SimulationPins, StateSnapshot, Step, TenantId, TestCaseId,
    TokenHash, ToolId, ToolInputErrorRecord, Verdict,
};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use toolmock_contract::{ContractHash, OperationContract};
use toolmock_evaluator::{CallError, Overlay, StateView};

/// The in-memory backend. Cloning shares the same data.
///
/// It reads time only through its [`Clock`] (the system clock unless
/// [`MemoryStore::with_clock`] replaces it), like the dispatcher.
#[derive(Clone)]
pub struct MemoryStore {
    inner: Arc<Inner>,
    clock: Arc<dyn Clock>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self {
            inner: Arc::default(),
            clock: Arc::new(SystemClock),
        }
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").finish_non_exhaustive()
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store that stamps what it writes (revision times) with `clock`.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Self {
            inner: Arc::default(),
            clock,
        }
    }
}

#[derive(Default)]
struct Inner {
    catalog: Mutex<CatalogData>,
    attempts: RwLock<HashMap<AttemptId, Arc<AttemptCell>>>,
    capabilities: RwLock<HashMap<TokenHash, CapabilityRow>>,
}

#[derive(Default)]
struct CatalogData {
    tenants: HashMap<TenantId, String>,
    tools: HashMap<ToolId, ToolRow>,
    operations: HashMap<OperationId, OperationRow>,
    agents: HashMap<AgentId, (TenantId, AgentRecord)>,
    simulations: HashMap<SimulationId, (TenantId, SimulationPins)>,
}

struct ToolRow {
    tenant: TenantId,
    name: String,
    kind: crate::model::ToolKind,
    source_config: Value,
    output_schema: Option<Value>,
    operations: Vec<OperationId>,
}

struct OperationRow {
    tenant: TenantId,
    tool: ToolId,
    spec: NewOperation,
    contract: Option<OperationContract>,
    hash: Option<ContractHash>,
    revisions: Vec<RevisionRecord>,
}

struct CapabilityRow {
    tenant: TenantId,
    attempt: AttemptId,
    revoked: bool,
}

struct AttemptCell {
    binding: AttemptBinding,
    test_case: TestCaseId,
    meta: Mutex<AttemptMeta>,
    fixture: Mutex<Fixture>,
    errors: Mutex<Errors>,
}

struct AttemptMeta {
    /// The test's verdict, once finished; the outcome is derived from it
    /// (`AttemptMeta::outcome`), as PostgreSQL derives it.
    verdict: Option<Verdict>,
    lease_owner: String,
    lease_expires_at: DateTime<Utc>,
    has_harness_error: bool,
    /// The marks of `begin_call`: calls begun.
    calls_begun: u64,
    /// Every capability of the attempt is revoked.
    revoked: bool,
}

struct Fixture {
    /// The simulation's initial state, shared by all its attempts.
    base: Arc<Map<String, Value>>,
    /// Whether the base holds shared fixtures: evidence then records the
    /// attempt's changes to it instead of whole states.
    fixture_backed: bool,
    /// The attempt's own writes; a call replaces the Arc.
    overlay: Arc<Overlay>,
    version: u64,
    /// Append-only, in fixed-size chunks so that growing never moves old rows.
    evidence: Vec<Vec<StoredEvidence>>,
}

const EVIDENCE_CHUNK: usize = 512;

impl Fixture {
    fn push(&mut self, evidence: StoredEvidence) {
        match self.evidence.last_mut() {
            Some(chunk) if chunk.len() < EVIDENCE_CHUNK => chunk.push(evidence),
            _ => {
                // The first chunk grows as needed: most attempts make a few
                // calls, and a full chunk each would cost ~150 KB per attempt
                // (1.5 GB for a 10,000-attempt `toolmock run`).
                let capacity = if self.evidence.is_empty() {
                    8
                } else {
                    EVIDENCE_CHUNK
                };
                let mut chunk = Vec::with_capacity(capacity);
                chunk.push(evidence);
                self.evidence.push(chunk);
            }
        }
    }
}

struct StoredEvidence {
    draft: Step,
    before: Arc<Overlay>,
    after: Arc<Overlay>,
    version_before: u64,
    version_after: u64,
}

#[derive(Default)]
struct Errors {
    tool_input: Vec<ToolInputErrorRecord>,
    harness: Vec<HarnessErrorRecord>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn not_found(entity: &'static str) -> StoreError {
    StoreError::NotFound { entity }
}

impl Inner {
    fn attempt(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Result<Arc<AttemptCell>, StoreError> {
        self.attempts
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&attempt)
            .filter(|cell| cell.binding.tenant == tenant)
            .cloned()
            .ok_or_else(|| not_found("attempt"))
    }

    fn capability_live(
        &self,
        token: &TokenHash,
        binding: &AttemptBinding,
    ) -> Result<bool, ApplyError> {
        let capabilities = self
            .capabilities
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        match capabilities.get(token) {
            Some(row) if row.tenant == binding.tenant && row.attempt == binding.attempt => {
                Ok(!row.revoked)
            }
            _ => Err(ApplyError::CapabilityRejected),
        }
    }
}

impl AttemptMeta {
    /// `None` while running; else the one decision of the outcome.
    fn outcome(&self) -> Option<AttemptOutcome> {
        self.verdict
            .map(|verdict| AttemptOutcome::decide(verdict, self.has_harness_error))
    }
}

fn meta_live(meta: &AttemptMeta, now: DateTime<Utc>) -> bool {
    meta.verdict.is_none() && meta.lease_expires_at > now
}

fn view(id: OperationId, row: &OperationRow) -> OperationView {
    OperationView {
        id,
        tool: row.tool,
        operation: row.spec.operation.clone(),
        contract: row.contract.clone(),
        contract_hash: row.hash.clone(),
        latest: row.revisions.last().cloned(),
    }
}

impl Catalog for MemoryStore {
    async fn create_tenant(&self, name: &str) -> Result<TenantId, StoreError> {
        let id = TenantId::random();
        lock(&self.inner.catalog)
            .tenants
            .insert(id, name.to_owned());
        Ok(id)
    }

    async fn create_tool(&self, tenant: TenantId, tool: &NewTool) -> Result<ToolId, StoreError> {
        let mut catalog = lock(&self.inner.catalog);
        if !catalog.tenants.contains_key(&tenant) {
            return Err(not_found("tenant"));
        }
        if catalog
            .tools
            .values()
            .any(|t| t.tenant == tenant && t.name == tool.name)
        {
            return Err(StoreError::Conflict {
                what: format!("a tool named {:?} exists", tool.name),
            });
        }
        let id = ToolId::random();
        catalog.tools.insert(
            id,
            ToolRow {
                tenant,
                name: tool.name.clone(),
                kind: tool.kind,
                source_config: tool.source_config.clone(),
                output_schema: tool.output_schema.clone(),
                operations: Vec::new(),
            },
        );
        Ok(id)
    }

    async fn upsert_operation(
        &self,
        tenant: TenantId,
        tool: ToolId,
        operation: &NewOperation,
    ) -> Result<OperationView, StoreError> {
        let mut guard = lock(&self.inner.catalog);
        let catalog = &mut *guard;
        let row = catalog
            .tools
            .get_mut(&tool)
            .filter(|t| t.tenant == tenant)
            .ok_or_else(|| not_found("tool"))?;
        let contract = operation.effective_contract(row.output_schema.as_ref());
        let hash = contract
            .as_ref()
            .map(OperationContract::hash)
            .transpose()
            .map_err(|e| StoreError::Corrupt {
                what: "contract",
                message: e.to_string(),
            })?;
        let existing = row.operations.iter().copied().find(|id| {
            catalog
                .operations
                .get(id)
                .is_some_and(|o| o.spec.operation.name == operation.operation.name)
        });
        let id = match existing {
            Some(id) => id,
            None => {
                let id = OperationId::random();
                row.operations.push(id);
                catalog.operations.insert(
                    id,
                    OperationRow {
                        tenant,
                        tool,
                        spec: operation.clone(),
                        contract: None,
                        hash: None,
                        revisions: Vec::new(),
                    },
                );
                id
            }
        };
        let op = catalog
            .operations
            .get_mut(&id)
            .ok_or_else(|| not_found("operation"))?;
        op.spec = operation.clone();
        op.contract = contract;
        op.hash = hash;
        let op = catalog
            .operations
            .get(&id)
            .ok_or_else(|| not_found("operation"))?;
        Ok(view(id, op))
    }

    async fn tool(&self, tenant: TenantId, tool: ToolId) -> Result<LibraryTool, StoreError> {
        let catalog = lock(&self.inner.catalog);
        let row = catalog
            .tools
            .get(&tool)
            .filter(|t| t.tenant == tenant)
            .ok_or_else(|| not_found("tool"))?;
        let mut operations: Vec<OperationView> = row
            .operations
            .iter()
            .filter_map(|id| catalog.operations.get(id).map(|op| view(*id, op)))
            .collect();
        operations.sort_by(|a, b| a.operation.name.cmp(&b.operation.name));
        Ok(LibraryTool {
            id: tool,
            name: row.name.clone(),
            kind: row.kind,
            source_config: row.source_config.clone(),
            output_schema: row.output_schema.clone(),
            operations,
        })
    }

    async fn save_revision(
        &self,
        tenant: TenantId,
        operation: OperationId,
        save: &SaveRevision,
    ) -> Result<RevisionRecord, SaveRevisionError> {
        // The catalog mutex is this backend's operation row lock.
        let mut catalog = lock(&self.inner.catalog);
        let op = catalog
            .operations
            .get_mut(&operation)
            .filter(|o| o.tenant == tenant)
            .ok_or_else(|| not_found("operation"))?;
        let definition_hash = save.check(op.contract.as_ref(), op.hash.as_ref())?;
        let revision = u32::try_from(op.revisions.len() + 1).map_err(|_| StoreError::Conflict {
            what: "too many revisions".into(),
        })?;
        let record = RevisionRecord {
            tool: op.tool,
            operation,
            revision,
            contract_hash: save.contract_hash.clone(),
            definition: save.definition.clone(),
            definition_hash,
            author: save.author.clone(),
            provenance: save.provenance.clone(),
            created_at: self.clock.now(),
        };
        op.revisions.push(record.clone());
        Ok(record)
    }

    async fn revision(
        &self,
        tenant: TenantId,
        operation: OperationId,
        revision: u32,
    ) -> Result<RevisionRecord, StoreError> {
        let catalog = lock(&self.inner.catalog);
        catalog
            .operations
            .get(&operation)
            .filter(|o| o.tenant == tenant)
            .and_then(|o| o.revisions.iter().find(|r| r.revision == revision))
            .cloned()
            .ok_or_else(|| not_found("revision"))
    }

    async fn create_agent(
        &self,
        tenant: TenantId,
        name: &str,
        spec: &AgentSpec,
    ) -> Result<AgentId, StoreError> {
        let mut catalog = lock(&self.inner.catalog);
        if !catalog.tenants.contains_key(&tenant) {
            return Err(not_found("tenant"));
        }
        let id = AgentId::random();
        catalog.agents.insert(
            id,
            (
                tenant,
                AgentRecord {
                    id,
                    name: name.to_owned(),
                    spec: spec.clone(),
                },
            ),
        );
        Ok(id)
    }

    async fn agent(&self, tenant: TenantId, agent: AgentId) -> Result<AgentRecord, StoreError> {
        lock(&self.inner.catalog)
            .agents
            .get(&agent)
            .filter(|(t, _)| *t == tenant)
            .map(|(_, a)| a.clone())
            .ok_or_else(|| not_found("agent"))
    }
}

impl PinStore for MemoryStore {
    async fn create_simulation(
        &self,
        tenant: TenantId,
        simulation: &NewSimulation,
    ) -> Result<(), StoreError> {
        let mut catalog = lock(&self.inner.catalog);
        if catalog
            .agents
            .get(&simulation.agent)
            .is_none_or(|(t, _)| *t != tenant)
        {
            return Err(not_found("agent"));
        }
        let mut attempts = self
            .inner
            .attempts
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let mut capabilities = self
            .inner
            .capabilities
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        // One copy for every attempt: a call replaces its attempt's Arc.
        let initial_state = Arc::new(simulation.initial_state.clone());
        for attempt in &simulation.attempts {
            let Some(case) = simulation
                .test_cases
                .iter()
                .find(|c| c.id == attempt.test_case)
            else {
                return Err(not_found("test case"));
            };
            attempts.insert(
                attempt.id,
                Arc::new(AttemptCell {
                    binding: AttemptBinding {
                        tenant,
                        attempt: attempt.id,
                        simulation: simulation.id,
                        variants: case.spec.variants.clone(),
                    },
                    test_case: attempt.test_case,
                    meta: Mutex::new(AttemptMeta {
                        verdict: None,
                        lease_owner: attempt.lease_owner.clone(),
                        lease_expires_at: attempt.lease_expires_at,
                        has_harness_error: false,
                        calls_begun: 0,
                        revoked: false,
                    }),
                    fixture: Mutex::new(Fixture {
                        base: initial_state.clone(),
                        fixture_backed: simulation.fixtures_hash.is_some(),
                        overlay: Arc::new(Overlay::new()),
                        version: 0,
                        evidence: Vec::new(),
                    }),
                    errors: Mutex::new(Errors::default()),
                }),
            );
            capabilities.insert(
                attempt.token_hash,
                CapabilityRow {
                    tenant,
                    attempt: attempt.id,
                    revoked: false,
                },
            );
        }
        catalog.simulations.insert(
            simulation.id,
            (
                tenant,
                SimulationPins {
                    mode: simulation.mode,
                    pins: simulation.pins.clone(),
                },
            ),
        );
        Ok(())
    }

    async fn simulation_pins(
        &self,
        tenant: TenantId,
        simulation: SimulationId,
    ) -> Result<SimulationPins, StoreError> {
        lock(&self.inner.catalog)
            .simulations
            .get(&simulation)
            .filter(|(t, _)| *t == tenant)
            .map(|(_, p)| p.clone())
            .ok_or_else(|| not_found("simulation"))
    }
}

impl FixtureStore for MemoryStore {
    async fn apply_call<F>(
        &self,
        binding: &AttemptBinding,
        token: &TokenHash,
        now: DateTime<Utc>,
        mark: bool,
        step: F,
    ) -> Result<Applied, ApplyError>
    where
        F: Fn(StateView<'_>) -> Result<Step, CallError> + Send,
    {
        let cell = self
            .inner
            .attempt(binding.tenant, binding.attempt)
            .map_err(|_| ApplyError::CapabilityRejected)?;
        let capability_live = self.inner.capability_live(token, binding)?;
        let mut fixture = lock(&cell.fixture);
        if !capability_live || !meta_live(&lock(&cell.meta), now) {
            return Err(ApplyError::LeaseExpired);
        }
        let mut evidence = step(StateView::layered(&fixture.base, &fixture.overlay))?;
        let updates = std::mem::take(&mut evidence.updates);
        let before = fixture.overlay.clone();
        let after = if updates.is_empty() {
            before.clone()
        } else {
            // The overlay only (the attempt's own writes), never the base.
            let mut next = (*before).clone();
            for (key, patch) in updates {
                next.set(&key, patch);
            }
            Arc::new(next)
        };
        let version_before = fixture.version;
        let version_after = version_before + 1;
        fixture.version = version_after;
        fixture.overlay = after.clone();
        let result = evidence.result.clone();
        let error = evidence.error.clone();
        let delay_ms = evidence.delay_ms;
        if mark {
            // The begin mark with the evidence, under the fixture lock
            // (this backend never asks for it: `folds_begin_mark` is no).
            lock(&cell.meta).calls_begun += 1;
        }
        fixture.push(StoredEvidence {
            draft: evidence,
            before,
            after,
            version_before,
            version_after,
        });
        Ok(Applied {
            result,
            error,
            version_before,
            version_after,
            delay_ms,
        })
    }

    async fn state(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Result<StateSnapshot, StoreError> {
        let cell = self.inner.attempt(tenant, attempt)?;
        let fixture = lock(&cell.fixture);
        Ok(StateSnapshot {
            state: StateView::layered(&fixture.base, &fixture.overlay).whole(),
            version: fixture.version,
        })
    }

    async fn layered_state(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Result<LayeredSnapshot, StoreError> {
        let cell = self.inner.attempt(tenant, attempt)?;
        let fixture = lock(&cell.fixture);
        Ok(LayeredSnapshot {
            base: fixture.base.clone(),
            overlay: fixture.overlay.clone(),
            fixture_backed: fixture.fixture_backed,
            version: fixture.version,
        })
    }
}

impl EvidenceSink for MemoryStore {
    async fn record_tool_input_error(
        &self,
        record: &ToolInputErrorRecord,
    ) -> Result<(), StoreError> {
        let cell = self.inner.attempt(record.tenant, record.attempt)?;
        lock(&cell.errors).tool_input.push(record.clone());
        Ok(())
    }

    async fn record_harness_error(&self, record: &HarnessErrorRecord) -> Result<(), StoreError> {
        let cell = self.inner.attempt(record.tenant, record.attempt)?;
        // Meta first, then errors: the same order as finish_attempt.
        let mut meta = lock(&cell.meta);
        lock(&cell.errors).harness.push(record.clone());
        // A finished attempt's outcome follows: it is derived from the flag.
        meta.has_harness_error = true;
        Ok(())
    }

    async fn evidence(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Result<Vec<EvidenceRecord>, StoreError> {
        let cell = self.inner.attempt(tenant, attempt)?;
        let fixture = lock(&cell.fixture);
        let shown = |overlay: &Overlay| {
            if fixture.fixture_backed {
                overlay.changes()
            } else {
                StateView::layered(&fixture.base, overlay).whole()
            }
        };
        Ok(fixture
            .evidence
            .iter()
            .flatten()
            .map(|e| EvidenceRecord {
                attempt,
                tool: e.draft.tool.to_string(),
                operation: e.draft.operation.to_string(),
                pin: (*e.draft.pin).clone(),
                executor: e.draft.executor,
                variant: e.draft.variant.as_deref().map(str::to_owned),
                rule: e.draft.rule,
                arguments: e.draft.arguments.clone(),
                result: e.draft.result.clone(),
                error: e.draft.error.clone(),
                state_before: shown(&e.before),
                state_after: shown(&e.after),
                version_before: e.version_before,
                version_after: e.version_after,
                delay_ms: e.draft.delay_ms,
                started_at: e.draft.started_at,
                duration_us: e.draft.duration_us,
            })
            .collect())
    }

    async fn tool_input_errors(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Result<Vec<ToolInputErrorRecord>, StoreError> {
        let cell = self.inner.attempt(tenant, attempt)?;
        Ok(lock(&cell.errors).tool_input.clone())
    }

    async fn harness_errors(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Result<Vec<HarnessErrorRecord>, StoreError> {
        let cell = self.inner.attempt(tenant, attempt)?;
        Ok(lock(&cell.errors).harness.clone())
    }
}

impl AttemptStore for MemoryStore {
    async fn resolve_capability(
        &self,
        tenant: TenantId,
        token: &TokenHash,
        now: DateTime<Utc>,
    ) -> Result<CapabilityCheck, StoreError> {
        let (attempt, revoked) = {
            let capabilities = self
                .inner
                .capabilities
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            let row = capabilities
                .get(token)
                .filter(|row| row.tenant == tenant)
                .ok_or_else(|| not_found("capability"))?;
            (row.attempt, row.revoked)
        };
        let cell = self.inner.attempt(tenant, attempt)?;
        let live = !revoked && meta_live(&lock(&cell.meta), now);
        Ok(CapabilityCheck {
            binding: cell.binding.clone(),
            live,
        })
    }

    async fn renew_lease(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        owner: &str,
        until: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let cell = self.inner.attempt(tenant, attempt)?;
        let mut meta = lock(&cell.meta);
        if meta.verdict.is_some() || meta.lease_owner != owner {
            return Err(not_found("running attempt leased by this owner"));
        }
        meta.lease_expires_at = until;
        Ok(())
    }

    async fn revoke_capabilities(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        _at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let cell = self.inner.attempt(tenant, attempt)?;
        lock(&cell.meta).revoked = true;
        let mut capabilities = self
            .inner
            .capabilities
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        for row in capabilities.values_mut() {
            if row.attempt == attempt && row.tenant == tenant {
                row.revoked = true;
            }
        }
        Ok(())
    }

    async fn begin_call(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        _at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let cell = self.inner.attempt(tenant, attempt)?;
        lock(&cell.meta).calls_begun += 1;
        Ok(())
    }

    async fn finish_attempt(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        verdict: Verdict,
        at: DateTime<Utc>,
        unmarked: u64,
    ) -> Result<AttemptOutcome, FinishError> {
        let cell = self.inner.attempt(tenant, attempt)?;
        // Evidence only grows, so counting it before the meta lock (a call
        // takes the fixture lock, then meta) undercounts nothing the
        // dispatcher has already answered.
        let evidence: usize = lock(&cell.fixture).evidence.iter().map(Vec::len).sum();
        let mut meta = lock(&cell.meta);
        if meta.verdict.is_some() {
            return Err(FinishError::AlreadyFinished);
        }
        let mut errors = lock(&cell.errors);
        let recorded = evidence + errors.tool_input.len() + errors.harness.len();
        let recorded = u64::try_from(recorded).unwrap_or(u64::MAX);
        let begun = meta.calls_begun.saturating_add(unmarked);
        if recorded < begun {
            errors.harness.push(HarnessErrorRecord::ledger_gap(
                tenant, attempt, begun, recorded, at,
            ));
            meta.has_harness_error = true;
        }
        if meta.lease_expires_at <= at || meta.revoked {
            errors
                .harness
                .push(HarnessErrorRecord::finished_after_lease(
                    tenant,
                    attempt,
                    meta.lease_expires_at,
                    meta.revoked,
                    at,
                ));
            meta.has_harness_error = true;
        }
        meta.verdict = Some(verdict);
        Ok(AttemptOutcome::decide(verdict, meta.has_harness_error))
    }

    fn release_finished(&self, tenant: TenantId, attempt: AttemptId) {
        let mut attempts = self
            .inner
            .attempts
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let finished = attempts.get(&attempt).is_some_and(|cell| {
            cell.binding.tenant == tenant && lock(&cell.meta).verdict.is_some()
        });
        if finished {
            attempts.remove(&attempt);
        }
    }

    async fn attempt(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
    ) -> Result<AttemptRecord, StoreError> {
        let cell = self.inner.attempt(tenant, attempt)?;
        let meta = lock(&cell.meta);
        Ok(AttemptRecord {
            id: attempt,
            simulation: cell.binding.simulation,
            test_case: cell.test_case,
            outcome: meta.outcome(),
            lease_owner: meta.lease_owner.clone(),
            lease_expires_at: meta.lease_expires_at,
            has_harness_error: meta.has_harness_error,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{NewTool, Provenance, ToolKind};
    use chrono::TimeZone;
    use serde_json::json;
    use toolmock_contract::{OperationIdentity, OperationSource};

    struct FixedClock(DateTime<Utc>);

    impl Clock for FixedClock {
        fn now(&self) -> DateTime<Utc> {
            self.0
        }
    }

    /// The store stamps what it writes with its injected clock, never the
    /// system's (a revision saved "in 2001" says 2001).
    #[tokio::test]
    async fn time_comes_from_the_injected_clock() -> Result<(), Box<dyn std::error::Error>> {
        let then = Utc
            .with_ymd_and_hms(2001, 2, 3, 4, 5, 6)
            .single()
            .ok_or("a valid date")?;
        let store = MemoryStore::with_clock(Arc::new(FixedClock(then)));
        let tenant = store.create_tenant("acme").await?;
        let tool = store
            .create_tool(
                tenant,
                &NewTool {
                    name: "calendar".into(),
                    kind: ToolKind::Custom,
                    source_config: json!({}),
                    output_schema: None,
                },
            )
            .await?;
        let operation = NewOperation {
            operation: OperationIdentity {
                source: OperationSource::Custom,
                name: "book".into(),
            },
            description: "Book".into(),
            input_schema: json!({"type": "object"}),
            output_schema: Some(json!({"type": "object"})),
        };
        let view = store.upsert_operation(tenant, tool, &operation).await?;
        let saved = store
            .save_revision(
                tenant,
                view.id,
                &SaveRevision {
                    contract_hash: view.contract_hash.ok_or("a contract hash")?,
                    definition: json!({
                        "schema_version": 1,
                        "default_variant": "success",
                        "variants": {"success": {"result": {}}},
                        "examples": [{"variant": "success", "input": {}, "expected": {}}]
                    }),
                    author: "tester".into(),
                    provenance: Provenance::Authored,
                },
            )
            .await?;
        assert_eq!(saved.created_at, then);
        Ok(())
    }
}
