//! The dispatcher (SPEC §8): the one path every tool call takes, and the
//! simulation start that pins what it will answer with.

use crate::capability::{Capability, TokenHash};
use crate::error::{
    ApplyError, DispatchError, FinishError, HarnessFault, StartError, StartProblem, StoreError,
    ToolInputFault,
};
use crate::ids::{AttemptId, SimulationId, TenantId, TestCaseId, ToolId};
use crate::model::{
    AttemptBinding, AttemptOutcome, EvidenceDraft, Executor, HarnessErrorRecord, InlineTool,
    NewAttempt, NewSimulation, NewTestCase, NodeKind, OperationStatus, PinRecord, PinRef,
    PinTarget, SimulationMode, SimulationPins, Step, TestCaseSpec, ToolInputErrorRecord, ToolRef,
    Verdict,
};
use crate::traits::{
    Backend, Clock, ExternalExecutor, NoExternalExecutor, Sleeper, SystemClock, TokioSleeper,
};
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};
use toolmock_contract::{ContractHash, DefinitionHash, OperationContract};
use toolmock_evaluator::{
    Call, CallError, CompiledContract, CompiledDefinition, ErrorClass, compile_checked, evaluate,
    json_equal,
};

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
    pub agent: crate::ids::AgentId,
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

/// A pinned operation, compiled, with the shared names its evidence carries.
#[derive(Debug)]
struct ResolvedPin {
    tool: Arc<str>,
    operation: Arc<str>,
    pin: Arc<PinRef>,
    variants: Vec<Arc<str>>,
    contract: Arc<CompiledContract>,
    definition: Arc<CompiledDefinition>,
}

impl ResolvedPin {
    fn new(
        tool: &str,
        operation: &str,
        pin: PinRef,
        contract: Arc<CompiledContract>,
        definition: Arc<CompiledDefinition>,
    ) -> Self {
        Self {
            tool: tool.into(),
            operation: operation.into(),
            pin: Arc::new(pin),
            variants: definition.variant_names().map(Arc::from).collect(),
            contract,
            definition,
        }
    }

    fn variant(&self, name: &str) -> Arc<str> {
        self.variants
            .iter()
            .find(|v| &***v == name)
            .cloned()
            .unwrap_or_else(|| name.into())
    }
}

#[derive(Debug, Clone)]
enum PinEntry {
    Pinned(Arc<ResolvedPin>),
    Unpinned(String),
    Unreadable(String),
}

#[derive(Debug)]
struct PinSet {
    mode: SimulationMode,
    tools: HashMap<String, HashMap<String, PinEntry>>,
}

impl PinSet {
    fn get(&self, tool: &str, operation: &str) -> Option<&PinEntry> {
        self.tools.get(tool)?.get(operation)
    }
}

type DefinitionKey = (DefinitionHash, ContractHash);

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

enum Reached<'a> {
    Library(ToolId),
    Inline(&'a InlineTool),
}

struct Candidate {
    tool: String,
    operation: String,
    pin: PinRef,
    contract: OperationContract,
    definition: Value,
    compiled: Arc<CompiledDefinition>,
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

    fn compiled_contract(
        &self,
        contract: &OperationContract,
    ) -> Result<Arc<CompiledContract>, String> {
        let hash = contract.hash().map_err(|e| e.to_string())?;
        if let Some(found) = read(&self.contracts).get(&hash) {
            return Ok(found.clone());
        }
        let compiled =
            Arc::new(CompiledContract::new(contract.clone()).map_err(|e| e.to_string())?);
        write(&self.contracts).insert(hash, compiled.clone());
        Ok(compiled)
    }

    fn compiled_definition(
        &self,
        definition_hash: &DefinitionHash,
        definition: &Value,
        contract: &CompiledContract,
    ) -> Result<Arc<CompiledDefinition>, String> {
        let key = (definition_hash.clone(), contract.hash().clone());
        if let Some(found) = read(&self.definitions).get(&key) {
            return Ok(found.clone());
        }
        let compiled = compile_checked(definition, Some(contract)).map_err(|diagnostics| {
            diagnostics
                .iter()
                .map(|d| format!("{} at {:?}: {}", d.code.as_str(), d.path, d.message))
                .collect::<Vec<_>>()
                .join("; ")
        })?;
        let compiled = Arc::new(compiled);
        write(&self.definitions).insert(key, compiled.clone());
        Ok(compiled)
    }

    fn resolve(
        &self,
        definition_hash: &DefinitionHash,
        definition: &Value,
        contract: &OperationContract,
    ) -> Result<(Arc<CompiledContract>, Arc<CompiledDefinition>), String> {
        let contract = self.compiled_contract(contract)?;
        let definition = self.compiled_definition(definition_hash, definition, &contract)?;
        Ok((contract, definition))
    }

    /// Starts a simulation (SPEC §8): resolves every operation the agent can
    /// reach, nested workflows included, to a pin; refuses, listing every
    /// problem, stale / missing / unmockable operations (unless
    /// `allow_incomplete`), two pinned definitions disagreeing on an initial
    /// state key (`state_conflict`, naming both) and, in sandbox mode, every
    /// workflow node that causes an effect without the dispatcher. Then
    /// creates the attempts with their initial fixture state and capabilities.
    pub async fn start(
        &self,
        tenant: TenantId,
        request: &StartRequest,
    ) -> Result<StartedSimulation, StartError> {
        if request.test_cases.is_empty() {
            return Err(StartError::InvalidRequest("no test case".into()));
        }
        if request.attempts_per_case == 0 {
            return Err(StartError::InvalidRequest("attempts_per_case is 0".into()));
        }
        if request.lease_owner.is_empty() {
            return Err(StartError::InvalidRequest(
                "the lease owner is empty".into(),
            ));
        }
        let lease = chrono::Duration::from_std(request.lease)
            .map_err(|_| StartError::InvalidRequest("the lease is too long".into()))?;
        let agent = self.backend.agent(tenant, request.agent).await?;
        let mut problems = Vec::new();

        // Walk everything reachable, breadth first, each workflow once.
        let workflows: HashMap<&str, &crate::model::Workflow> = agent
            .spec
            .workflows
            .iter()
            .map(|w| (w.name.as_str(), w))
            .collect();
        let mut queue: VecDeque<&ToolRef> = agent.spec.tools.iter().collect();
        let mut visited = HashSet::new();
        let mut seen_library = HashSet::new();
        let mut reached = Vec::new();
        while let Some(reference) = queue.pop_front() {
            match reference {
                ToolRef::Library { tool } => {
                    if seen_library.insert(*tool) {
                        reached.push(Reached::Library(*tool));
                    }
                }
                ToolRef::Inline(inline) => {
                    let duplicate = reached
                        .iter()
                        .any(|r| matches!(r, Reached::Inline(other) if *other == inline));
                    if !duplicate {
                        reached.push(Reached::Inline(inline));
                    }
                }
                ToolRef::Workflow { workflow } => {
                    if !visited.insert(workflow.as_str()) {
                        continue;
                    }
                    let Some(found) = workflows.get(workflow.as_str()) else {
                        problems.push(StartProblem::UnknownWorkflow {
                            workflow: workflow.clone(),
                        });
                        continue;
                    };
                    for node in &found.nodes {
                        match &node.kind {
                            NodeKind::Tool { tool } => queue.push_back(tool),
                            NodeKind::Control => {}
                            NodeKind::Effect { effect } => {
                                if request.mode == SimulationMode::Sandbox {
                                    problems.push(StartProblem::EffectNode {
                                        workflow: found.name.clone(),
                                        node: node.id.clone(),
                                        effect: effect.clone(),
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }

        // Resolve every operation of every reached tool.
        let mut names: HashSet<String> = HashSet::new();
        let mut candidates: Vec<Candidate> = Vec::new();
        let mut pins: Vec<PinRecord> = Vec::new();
        let incomplete = |tool: &str,
                          operation: &str,
                          status: OperationStatus,
                          message: String,
                          problems: &mut Vec<StartProblem>,
                          pins: &mut Vec<PinRecord>| {
            if request.allow_incomplete {
                pins.push(PinRecord {
                    tool: tool.to_owned(),
                    operation: operation.to_owned(),
                    pin: PinTarget::Unpinned {
                        reason: status.as_str().to_owned(),
                    },
                });
            } else {
                problems.push(StartProblem::incomplete(tool, operation, status, message));
            }
        };
        for tool in &reached {
            match tool {
                Reached::Library(id) => {
                    let library = match self.backend.tool(tenant, *id).await {
                        Ok(found) => found,
                        Err(StoreError::NotFound { .. }) => {
                            problems.push(StartProblem::UnknownTool {
                                tool: id.to_string(),
                            });
                            continue;
                        }
                        Err(e) => return Err(e.into()),
                    };
                    if !names.insert(library.name.clone()) {
                        problems.push(StartProblem::DuplicateTool {
                            tool: library.name.clone(),
                        });
                        continue;
                    }
                    for op in &library.operations {
                        let name = &op.operation.name;
                        let status = op.status();
                        let (Some(contract), Some(latest)) = (&op.contract, &op.latest) else {
                            let message = match status {
                                OperationStatus::NeedsOutputSchema => {
                                    "neither discovery nor the tool gives an output schema".into()
                                }
                                _ => "no revision has been saved".into(),
                            };
                            incomplete(
                                &library.name,
                                name,
                                status,
                                message,
                                &mut problems,
                                &mut pins,
                            );
                            continue;
                        };
                        if status == OperationStatus::Stale {
                            let message = format!(
                                "revision {} was saved against contract {}; the current contract is {}",
                                latest.revision,
                                latest.contract_hash,
                                op.contract_hash
                                    .as_ref()
                                    .map(ContractHash::to_string)
                                    .unwrap_or_default()
                            );
                            incomplete(
                                &library.name,
                                name,
                                status,
                                message,
                                &mut problems,
                                &mut pins,
                            );
                            continue;
                        }
                        match self.resolve(&latest.definition_hash, &latest.definition, contract) {
                            Ok((_, compiled)) => candidates.push(Candidate {
                                tool: library.name.clone(),
                                operation: name.clone(),
                                pin: PinRef::Library {
                                    tool: library.id,
                                    operation: op.id,
                                    revision: latest.revision,
                                    definition_hash: latest.definition_hash.clone(),
                                },
                                contract: contract.clone(),
                                definition: latest.definition.clone(),
                                compiled,
                            }),
                            Err(message) => problems.push(StartProblem::Incomplete {
                                tool: library.name.clone(),
                                operation: name.clone(),
                                status: "invalid_definition".into(),
                                message,
                            }),
                        }
                    }
                }
                Reached::Inline(inline) => {
                    if !names.insert(inline.name.clone()) {
                        problems.push(StartProblem::DuplicateTool {
                            tool: inline.name.clone(),
                        });
                        continue;
                    }
                    for op in &inline.operations {
                        let Some(contract) = op.contract() else {
                            incomplete(
                                &inline.name,
                                &op.name,
                                OperationStatus::NeedsOutputSchema,
                                "the inline operation has no output_schema".into(),
                                &mut problems,
                                &mut pins,
                            );
                            continue;
                        };
                        let Some(definition) = &op.testing else {
                            incomplete(
                                &inline.name,
                                &op.name,
                                OperationStatus::Missing,
                                "the inline operation has no testing definition".into(),
                                &mut problems,
                                &mut pins,
                            );
                            continue;
                        };
                        let resolved = DefinitionHash::of(definition)
                            .map_err(|e| e.to_string())
                            .and_then(|hash| {
                                let (_, compiled) = self.resolve(&hash, definition, &contract)?;
                                Ok((hash, compiled))
                            });
                        match resolved {
                            Ok((definition_hash, compiled)) => candidates.push(Candidate {
                                tool: inline.name.clone(),
                                operation: op.name.clone(),
                                pin: PinRef::Inline { definition_hash },
                                contract,
                                definition: definition.clone(),
                                compiled,
                            }),
                            Err(message) => problems.push(StartProblem::Incomplete {
                                tool: inline.name.clone(),
                                operation: op.name.clone(),
                                status: "invalid_definition".into(),
                                message,
                            }),
                        }
                    }
                }
            }
        }

        // The initial state: the union of every pinned definition's.
        let mut initial: Map<String, Value> = Map::new();
        let mut owner: HashMap<String, String> = HashMap::new();
        for candidate in &candidates {
            let label = pin_label(&candidate.tool, &candidate.operation, &candidate.pin);
            for (key, value) in candidate.compiled.initial_state() {
                match initial.get(key) {
                    Some(existing) if !json_equal(existing, value) => {
                        problems.push(StartProblem::StateConflict {
                            key: key.clone(),
                            first: owner.get(key).cloned().unwrap_or_default(),
                            second: label.clone(),
                        });
                    }
                    Some(_) => {}
                    None => {
                        initial.insert(key.clone(), value.clone());
                        owner.insert(key.clone(), label.clone());
                    }
                }
            }
        }
        if !problems.is_empty() {
            return Err(StartError::Refused { problems });
        }

        let mut tools: HashMap<String, HashMap<String, PinEntry>> = HashMap::new();
        for candidate in candidates {
            let contract = self
                .compiled_contract(&candidate.contract)
                .map_err(StartError::InvalidRequest)?;
            tools.entry(candidate.tool.clone()).or_default().insert(
                candidate.operation.clone(),
                PinEntry::Pinned(Arc::new(ResolvedPin::new(
                    &candidate.tool,
                    &candidate.operation,
                    candidate.pin.clone(),
                    contract,
                    candidate.compiled,
                ))),
            );
            pins.push(PinRecord {
                tool: candidate.tool,
                operation: candidate.operation,
                pin: PinTarget::Pinned {
                    pin: candidate.pin,
                    contract: candidate.contract,
                    definition: candidate.definition,
                },
            });
        }
        for record in &pins {
            if let PinTarget::Unpinned { reason } = &record.pin {
                tools
                    .entry(record.tool.clone())
                    .or_default()
                    .insert(record.operation.clone(), PinEntry::Unpinned(reason.clone()));
            }
        }

        let now = self.clock.now();
        let simulation = SimulationId::random();
        let mut test_cases = Vec::new();
        let mut attempts = Vec::new();
        let mut started = Vec::new();
        for (position, spec) in request.test_cases.iter().enumerate() {
            let test_case = TestCaseId::random();
            test_cases.push(NewTestCase {
                id: test_case,
                position: u32::try_from(position).unwrap_or(u32::MAX),
                spec: spec.clone(),
            });
            for number in 1..=request.attempts_per_case {
                let capability = Capability::generate();
                let id = AttemptId::random();
                attempts.push(NewAttempt {
                    id,
                    test_case,
                    number,
                    initial_state: initial.clone(),
                    token_hash: capability.hash(),
                    lease_owner: request.lease_owner.clone(),
                    lease_expires_at: now + lease,
                });
                started.push(StartedAttempt {
                    id,
                    test_case,
                    test_case_name: spec.name.clone(),
                    number,
                    capability,
                });
            }
        }
        let new = NewSimulation {
            id: simulation,
            agent: request.agent,
            mode: request.mode,
            allow_incomplete: request.allow_incomplete,
            pins,
            test_cases,
            attempts,
            created_at: now,
        };
        self.backend.create_simulation(tenant, &new).await?;
        write(&self.simulations).insert(
            simulation,
            Arc::new(PinSet {
                mode: request.mode,
                tools,
            }),
        );
        Ok(StartedSimulation {
            id: simulation,
            pins: new.pins,
            attempts: started,
        })
    }

    fn pin_set_from(&self, loaded: SimulationPins) -> PinSet {
        let mut tools: HashMap<String, HashMap<String, PinEntry>> = HashMap::new();
        for record in loaded.pins {
            let entry = match &record.pin {
                PinTarget::Unpinned { reason } => PinEntry::Unpinned(reason.clone()),
                PinTarget::Pinned {
                    pin,
                    contract,
                    definition,
                } => match self.resolve(pin.definition_hash(), definition, contract) {
                    Ok((contract, definition)) => PinEntry::Pinned(Arc::new(ResolvedPin::new(
                        &record.tool,
                        &record.operation,
                        pin.clone(),
                        contract,
                        definition,
                    ))),
                    Err(message) => PinEntry::Unreadable(message),
                },
            };
            tools
                .entry(record.tool)
                .or_default()
                .insert(record.operation, entry);
        }
        PinSet {
            mode: loaded.mode,
            tools,
        }
    }

    async fn pin_set(&self, binding: &AttemptBinding) -> Result<Arc<PinSet>, StoreError> {
        if let Some(found) = read(&self.simulations).get(&binding.simulation) {
            return Ok(found.clone());
        }
        let loaded = self
            .backend
            .simulation_pins(binding.tenant, binding.simulation)
            .await?;
        let set = Arc::new(self.pin_set_from(loaded));
        write(&self.simulations).insert(binding.simulation, set.clone());
        Ok(set)
    }

    /// Resolves a capability to its attempt, refusing unknown or foreign
    /// ones and recording `lease_expired` for a known attempt whose lease is
    /// not valid.
    async fn binding(
        &self,
        tenant: TenantId,
        token: &TokenHash,
        call: &ToolCall,
    ) -> Result<Arc<AttemptBinding>, DispatchError> {
        if let Some(found) = read(&self.bindings).get(token)
            && found.tenant == tenant
        {
            return Ok(found.clone());
        }
        let now = self.clock.now();
        let check = match self.backend.resolve_capability(tenant, token, now).await {
            Ok(check) => check,
            Err(StoreError::NotFound { .. }) => return Err(DispatchError::CapabilityRejected),
            Err(e) => return Err(e.into()),
        };
        let binding = Arc::new(check.binding);
        write(&self.bindings).insert(*token, binding.clone());
        if !check.live {
            return Err(self.lease_expired(&binding, call, None).await);
        }
        Ok(binding)
    }

    async fn lease_expired(
        &self,
        binding: &AttemptBinding,
        call: &ToolCall,
        pin: Option<&PinRef>,
    ) -> DispatchError {
        self.record_harness(
            binding,
            call,
            pin,
            HarnessFault {
                code: "lease_expired".into(),
                message:
                    "the attempt is finished, its lease has expired or the capability was revoked"
                        .into(),
                path: None,
            },
            json!({}),
        )
        .await
    }

    /// Records a harness error in its own committed write and returns it as
    /// the call's error (a storage failure is returned instead when the
    /// record could not be written).
    async fn record_harness(
        &self,
        binding: &AttemptBinding,
        call: &ToolCall,
        pin: Option<&PinRef>,
        fault: HarnessFault,
        detail: Value,
    ) -> DispatchError {
        tracing::warn!(attempt = %binding.attempt, tool = %call.tool, operation = %call.operation, code = %fault.code, "harness error");
        let record = HarnessErrorRecord {
            tenant: binding.tenant,
            attempt: binding.attempt,
            tool: Some(call.tool.clone()),
            operation: Some(call.operation.clone()),
            pin: pin.cloned(),
            arguments: Some(call.input.clone()),
            code: fault.code.clone(),
            message: fault.message.clone(),
            path: fault.path.clone(),
            detail,
            at: self.clock.now(),
        };
        match self.backend.record_harness_error(&record).await {
            Ok(()) => DispatchError::Harness(fault),
            Err(e) => DispatchError::Store(e),
        }
    }

    /// A harness fault found before the locked step: when the capability is
    /// no longer live, the fault is `lease_expired` instead.
    async fn fault_before_step(
        &self,
        binding: &AttemptBinding,
        token: &TokenHash,
        call: &ToolCall,
        pin: Option<&PinRef>,
        fault: HarnessFault,
    ) -> DispatchError {
        match self
            .backend
            .resolve_capability(binding.tenant, token, self.clock.now())
            .await
        {
            Ok(check) if check.live => {
                self.record_harness(binding, call, pin, fault, json!({}))
                    .await
            }
            Ok(_) => self.lease_expired(binding, call, pin).await,
            Err(StoreError::NotFound { .. }) => DispatchError::CapabilityRejected,
            Err(e) => DispatchError::Store(e),
        }
    }

    async fn call_error(
        &self,
        binding: &AttemptBinding,
        call: &ToolCall,
        pin: &PinRef,
        error: CallError,
    ) -> DispatchError {
        let violations = serde_json::to_value(error.violations()).unwrap_or(Value::Array(vec![]));
        match error.class() {
            ErrorClass::ToolInputError => {
                let fault = ToolInputFault {
                    code: error.code().to_owned(),
                    message: error.to_string(),
                    path: error.path().map(str::to_owned),
                    violations,
                };
                let record = ToolInputErrorRecord {
                    tenant: binding.tenant,
                    attempt: binding.attempt,
                    tool: call.tool.clone(),
                    operation: call.operation.clone(),
                    pin: Some(pin.clone()),
                    arguments: call.input.clone(),
                    code: fault.code.clone(),
                    message: fault.message.clone(),
                    path: fault.path.clone(),
                    violations: fault.violations.clone(),
                    at: self.clock.now(),
                };
                match self.backend.record_tool_input_error(&record).await {
                    Ok(()) => DispatchError::ToolInput(fault),
                    Err(e) => DispatchError::Store(e),
                }
            }
            ErrorClass::HarnessError => {
                let fault = HarnessFault {
                    code: error.code().to_owned(),
                    message: error.to_string(),
                    path: error.path().map(str::to_owned),
                };
                self.record_harness(
                    binding,
                    call,
                    Some(pin),
                    fault,
                    json!({ "violations": violations }),
                )
                .await
            }
        }
    }

    /// Runs one call through SPEC §8's pipeline and returns exactly the
    /// rendered result (no wrapper).
    ///
    /// Find the pin (none: `missing_definition`; an unknown tool or
    /// operation: `unknown_tool`, never executed), validate the input,
    /// then in the fixture store's locked step evaluate the pinned mock,
    /// validate the output, commit the new state with its evidence; then
    /// apply the delay. Every tool input error and harness error is recorded
    /// in its own committed write before this returns.
    pub async fn call(
        &self,
        tenant: TenantId,
        capability: &Capability,
        call: &ToolCall,
    ) -> Result<Value, DispatchError> {
        let started_at = self.clock.now();
        let clock = Instant::now();
        let token = capability.hash();
        let binding = self.binding(tenant, &token, call).await?;
        // Every way of not finding a usable pin is a harness fault, recorded
        // before the call returns; only a storage failure is not.
        let fault = |code: &str, message: String| HarnessFault {
            code: code.into(),
            message,
            path: None,
        };
        let found = match self.pin_set(&binding).await {
            Ok(pins) => match pins.get(&call.tool, &call.operation) {
                Some(PinEntry::Pinned(pin)) => Ok((pin.clone(), pins.mode)),
                Some(PinEntry::Unpinned(reason)) => Err(fault(
                    "missing_definition",
                    format!(
                        "{}/{} has no pinned definition (it was {reason} at the start)",
                        call.tool, call.operation
                    ),
                )),
                Some(PinEntry::Unreadable(message)) => Err(fault(
                    "unreadable_pin",
                    format!(
                        "the pin of {}/{} is unreadable: {message}",
                        call.tool, call.operation
                    ),
                )),
                None => Err(fault(
                    "unknown_tool",
                    format!(
                        "{}/{} is not a tool operation this simulation can reach; it was not executed",
                        call.tool, call.operation
                    ),
                )),
            },
            Err(StoreError::Corrupt { what, message }) => Err(fault(
                "unreadable_pin",
                format!("stored {what} is unreadable: {message}"),
            )),
            Err(e) => return Err(e.into()),
        };
        let (pin, mode) = match found {
            Ok(found) => found,
            Err(fault) => {
                return Err(self
                    .fault_before_step(&binding, &token, call, None, fault)
                    .await);
            }
        };
        if let Err(error) = pin.contract.validate_input(&call.input) {
            return Err(self.call_error(&binding, call, &pin.pin, error).await);
        }
        let variant = binding.variant_for(&call.tool, &call.operation);
        let applied = match mode {
            SimulationMode::Sandbox => {
                self.backend
                    .apply_call(&binding, &token, started_at, |state| {
                        let outcome = evaluate(
                            &pin.definition,
                            &Call {
                                input: &call.input,
                                state,
                                variant,
                            },
                        )?;
                        pin.contract.validate_output(&outcome.result)?;
                        let toolmock_evaluator::Outcome {
                            variant,
                            rule,
                            result,
                            state_updates,
                            delay_ms,
                        } = outcome;
                        Ok(Step {
                            updates: state_updates
                                .into_iter()
                                .map(|(k, v)| (k.to_owned(), v))
                                .collect(),
                            evidence: EvidenceDraft {
                                tool: pin.tool.clone(),
                                operation: pin.operation.clone(),
                                pin: pin.pin.clone(),
                                executor: Executor::Mock,
                                variant: Some(pin.variant(variant)),
                                rule: rule.map(|r| u32::try_from(r).unwrap_or(u32::MAX)),
                                arguments: call.input.clone(),
                                result,
                                delay_ms,
                                started_at,
                                duration_us: elapsed_us(clock),
                            },
                        })
                    })
                    .await
            }
            SimulationMode::RealTools => {
                let result = match self
                    .executor
                    .execute(&call.tool, &call.operation, &call.input)
                    .await
                {
                    Ok(result) => result,
                    Err(message) => return Err(DispatchError::External(message)),
                };
                if let Err(error) = pin.contract.validate_output(&result) {
                    return Err(self.call_error(&binding, call, &pin.pin, error).await);
                }
                self.backend
                    .apply_call(&binding, &token, started_at, |_| {
                        Ok(Step {
                            updates: Vec::new(),
                            evidence: EvidenceDraft {
                                tool: pin.tool.clone(),
                                operation: pin.operation.clone(),
                                pin: pin.pin.clone(),
                                executor: Executor::External,
                                variant: None,
                                rule: None,
                                arguments: call.input.clone(),
                                result,
                                delay_ms: 0,
                                started_at,
                                duration_us: elapsed_us(clock),
                            },
                        })
                    })
                    .await
            }
        };
        match applied {
            Ok(applied) => {
                if applied.delay_ms > 0 {
                    self.sleeper
                        .sleep(Duration::from_millis(u64::from(applied.delay_ms)))
                        .await;
                }
                Ok(applied.result)
            }
            Err(ApplyError::Call(error)) => {
                Err(self.call_error(&binding, call, &pin.pin, error).await)
            }
            Err(ApplyError::LeaseExpired) => {
                Err(self.lease_expired(&binding, call, Some(&pin.pin)).await)
            }
            Err(ApplyError::CapabilityRejected) => Err(DispatchError::CapabilityRejected),
            Err(ApplyError::Store(e)) => Err(e.into()),
        }
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

fn elapsed_us(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX)
}

fn pin_label(tool: &str, operation: &str, pin: &PinRef) -> String {
    match pin {
        PinRef::Library { revision, .. } => format!("{tool}/{operation}@revision {revision}"),
        PinRef::Inline { definition_hash } => {
            format!("{tool}/{operation}@inline {}", definition_hash.as_str())
        }
    }
}
