//! Starting a simulation, in its named phases:
//!
//! 1. [`reach`]: walk the agent's tools and workflows (nested ones too) to
//!    the tools it can call, refusing unknown workflows, workflows calling
//!    each other in a cycle and, in sandbox mode, effect nodes;
//! 2. `resolve_pins`: pin every operation of those tools to a library
//!    revision or an inline definition (or, under `allow_incomplete`, record
//!    why it stays unpinned);
//! 3. [`merge_initial_state`]: the union of the pinned initial states,
//!    refusing `state_conflict`s;
//! 4. [`plan_attempts`] then [`assign_leases`]: create the attempts (ids,
//!    capabilities, initial state), then hand them to a lease owner;
//!
//! and only when no phase found a problem, write it all at once.

use super::pins::{PinEntry, PinSet, ResolvedPin, pin_label};
use super::{Dispatcher, StartRequest, StartedAttempt, StartedSimulation};
use crate::backend::Backend;
use crate::error::{IncompleteStatus, StartError, StartLimit, StartProblem, StoreError};
use crate::model::{
    AgentSpec, AttemptId, Capability, InlineTool, NewAttempt, NewSimulation, NewTestCase,
    PinRecord, PinRef, PinTarget, SimulationId, SimulationMode, TenantId, TestCaseId, TestCaseSpec,
    TestingStatus, ToolId, ToolRef,
};
use crate::model::{NodeDoc, WorkflowDoc};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use toolmock_contract::{ContractHash, DefinitionHash, OperationContract};
use toolmock_evaluator::{CompiledDefinition, json_equal};

/// A tool the agent can reach.
enum Reached<'a> {
    Library(ToolId),
    Inline(&'a InlineTool),
}

/// An operation that can be pinned, with its compiled definition.
struct Candidate {
    tool: String,
    operation: String,
    pin: PinRef,
    contract: OperationContract,
    definition: Value,
    compiled: Arc<CompiledDefinition>,
}

/// What resolving the pins found: the pinnable operations, and the
/// operations left unpinned under `allow_incomplete`.
#[derive(Default)]
struct Resolution {
    candidates: Vec<Candidate>,
    unpinned: Vec<PinRecord>,
}

impl Resolution {
    /// An operation that cannot be pinned: a start problem, or an unpinned
    /// record under `allow_incomplete`.
    fn incomplete(
        &mut self,
        problems: &mut Vec<StartProblem>,
        allow_incomplete: bool,
        (tool, operation): (&str, &str),
        status: IncompleteStatus,
        message: String,
    ) {
        if allow_incomplete {
            self.unpinned.push(PinRecord {
                tool: tool.to_owned(),
                operation: operation.to_owned(),
                pin: PinTarget::Unpinned { reason: status },
            });
        } else {
            problems.push(StartProblem::Incomplete {
                tool: tool.to_owned(),
                operation: operation.to_owned(),
                status,
                message,
            });
        }
    }
}

/// One attempt decided by a start, before any worker holds it.
struct PlannedAttempt {
    id: AttemptId,
    test_case: TestCaseId,
    test_case_name: String,
    number: u32,
    capability: Capability,
}

/// The test cases and attempts a start creates.
struct AttemptPlan {
    test_cases: Vec<NewTestCase>,
    attempts: Vec<PlannedAttempt>,
}

impl<B: Backend> Dispatcher<B> {
    /// Starts a simulation (docs/spec.md §8): resolves every operation the agent can
    /// reach, nested workflows included, to a pin; refuses, listing every
    /// problem, stale / missing / unmockable operations (unless
    /// `allow_incomplete`), two pinned definitions disagreeing on an initial
    /// state key (`state_conflict`, naming both) and, in sandbox mode, every
    /// workflow node that causes an effect without the dispatcher. Then
    /// creates the attempts with their initial fixture state and capabilities.
    ///
    /// Attempt creation and lease assignment are separate phases
    /// (`plan_attempts`, then `assign_leases`): today both run here and
    /// every attempt starts leased to `request.lease_owner`. The worker issue
    /// makes `start` stop after planning — storing the attempts *queued*,
    /// with no lease — and moves `assign_leases` to the claim by which a
    /// worker takes an attempt; nothing before that seam needs to change.
    pub async fn start(
        &self,
        tenant: TenantId,
        request: &StartRequest,
    ) -> Result<StartedSimulation, StartError> {
        let lease = validate(request)?;
        let agent = self.backend.agent(tenant, request.agent).await?;
        let mut problems = Vec::new();
        let reached = reach(&agent.spec, request.mode, &mut problems);
        let resolution = self
            .resolve_pins(tenant, &reached, request.allow_incomplete, &mut problems)
            .await?;
        let fixtures_hash = check_fixtures(&request.fixtures)?;
        let initial = merge_initial_state(&resolution.candidates, &mut problems);
        let base = merge_fixtures(&request.fixtures, &initial, &resolution, &mut problems);
        if !problems.is_empty() {
            return Err(StartError::Refused { problems });
        }
        let (pins, pin_set) = self.pin_records(resolution, request.mode)?;

        // The definitions' part is copied per attempt where a backend does
        // so; the fixtures never are, so they have their own limit.
        check_state_size(&initial, request)?;
        let now = self.clock.now();
        let plan = plan_attempts(request);
        let attempts = assign_leases(&plan, &request.lease_owner, now + lease);
        let simulation = SimulationId::random();
        let new = NewSimulation {
            id: simulation,
            agent: request.agent,
            mode: request.mode,
            allow_incomplete: request.allow_incomplete,
            pins,
            test_cases: plan.test_cases,
            attempts,
            initial_state: base,
            fixtures_hash,
            created_at: now,
        };
        self.backend.create_simulation(tenant, &new).await?;
        self.remember_pins(simulation, pin_set);
        Ok(StartedSimulation {
            id: simulation,
            pins: new.pins,
            attempts: plan
                .attempts
                .into_iter()
                .map(|a| StartedAttempt {
                    id: a.id,
                    test_case: a.test_case,
                    test_case_name: a.test_case_name,
                    number: a.number,
                    capability: a.capability,
                })
                .collect(),
            fixtures_hash: new.fixtures_hash,
        })
    }

    /// Phase 2: every operation of every reached tool, pinned or refused.
    async fn resolve_pins(
        &self,
        tenant: TenantId,
        reached: &[Reached<'_>],
        allow_incomplete: bool,
        problems: &mut Vec<StartProblem>,
    ) -> Result<Resolution, StoreError> {
        let mut names: HashSet<String> = HashSet::new();
        let mut resolution = Resolution::default();
        for tool in reached {
            match tool {
                Reached::Library(id) => {
                    self.resolve_library(
                        tenant,
                        *id,
                        allow_incomplete,
                        &mut names,
                        &mut resolution,
                        problems,
                    )
                    .await?;
                }
                Reached::Inline(inline) => {
                    if !names.insert(inline.name.clone()) {
                        problems.push(StartProblem::DuplicateTool {
                            tool: inline.name.clone(),
                        });
                        continue;
                    }
                    self.resolve_inline(inline, allow_incomplete, &mut resolution, problems);
                }
            }
        }
        Ok(resolution)
    }

    /// The operations of one library tool: each pinned to its latest
    /// revision when that revision answers for the current contract.
    async fn resolve_library(
        &self,
        tenant: TenantId,
        id: ToolId,
        allow_incomplete: bool,
        names: &mut HashSet<String>,
        resolution: &mut Resolution,
        problems: &mut Vec<StartProblem>,
    ) -> Result<(), StoreError> {
        let library = match self.backend.tool(tenant, id).await {
            Ok(found) => found,
            Err(StoreError::NotFound { .. }) => {
                problems.push(StartProblem::UnknownTool {
                    tool: id.to_string(),
                });
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        if !names.insert(library.name.clone()) {
            problems.push(StartProblem::DuplicateTool {
                tool: library.name.clone(),
            });
            return Ok(());
        }
        for op in &library.operations {
            let name = &op.operation.name;
            let status = op.status();
            let (Some(contract), Some(latest)) = (&op.contract, &op.latest) else {
                let (status, message) = match status {
                    TestingStatus::NeedsOutputSchema => (
                        IncompleteStatus::NeedsOutputSchema,
                        "neither discovery nor the tool gives an output schema",
                    ),
                    _ => (IncompleteStatus::Missing, "no revision has been saved"),
                };
                resolution.incomplete(
                    problems,
                    allow_incomplete,
                    (&library.name, name),
                    status,
                    message.into(),
                );
                continue;
            };
            if status == TestingStatus::Stale {
                let message = format!(
                    "revision {} was saved against contract {}; the current contract is {}",
                    latest.revision,
                    latest.contract_hash,
                    op.contract_hash
                        .as_ref()
                        .map(ContractHash::to_string)
                        .unwrap_or_default()
                );
                resolution.incomplete(
                    problems,
                    allow_incomplete,
                    (&library.name, name),
                    IncompleteStatus::Stale,
                    message,
                );
                continue;
            }
            match self.resolve(&latest.definition_hash, &latest.definition, contract) {
                Ok((_, compiled)) => resolution.candidates.push(Candidate {
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
                    status: IncompleteStatus::InvalidDefinition,
                    message,
                }),
            }
        }
        Ok(())
    }

    /// The operations of one inline tool: each pinned to its own testing
    /// definition, by hash.
    fn resolve_inline(
        &self,
        inline: &InlineTool,
        allow_incomplete: bool,
        resolution: &mut Resolution,
        problems: &mut Vec<StartProblem>,
    ) {
        for op in &inline.operations {
            let Some(contract) = op.contract() else {
                resolution.incomplete(
                    problems,
                    allow_incomplete,
                    (&inline.name, &op.name),
                    IncompleteStatus::NeedsOutputSchema,
                    "the inline operation has no output_schema".into(),
                );
                continue;
            };
            let Some(definition) = &op.testing else {
                resolution.incomplete(
                    problems,
                    allow_incomplete,
                    (&inline.name, &op.name),
                    IncompleteStatus::Missing,
                    "the inline operation has no testing definition".into(),
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
                Ok((definition_hash, compiled)) => resolution.candidates.push(Candidate {
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
                    status: IncompleteStatus::InvalidDefinition,
                    message,
                }),
            }
        }
    }

    /// The pin records to store and the pin set to cache, from a resolution
    /// without problems.
    fn pin_records(
        &self,
        resolution: Resolution,
        mode: SimulationMode,
    ) -> Result<(Vec<PinRecord>, PinSet), StartError> {
        let mut tools: HashMap<String, HashMap<String, PinEntry>> = HashMap::new();
        let mut pins = resolution.unpinned;
        for record in &pins {
            if let PinTarget::Unpinned { reason } = &record.pin {
                tools
                    .entry(record.tool.clone())
                    .or_default()
                    .insert(record.operation.clone(), PinEntry::Unpinned(*reason));
            }
        }
        for candidate in resolution.candidates {
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
        Ok((pins, PinSet { mode, tools }))
    }
}

/// A test case's attempts: its own number, else the request's.
fn attempts_of(request: &StartRequest, case: &TestCaseSpec) -> u32 {
    case.attempts.unwrap_or(request.attempts_per_case)
}

/// The attempts a request plans, over all its test cases.
fn total_attempts(request: &StartRequest) -> u64 {
    request
        .test_cases
        .iter()
        .map(|c| u64::from(attempts_of(request, c)))
        .fold(0u64, u64::saturating_add)
}

/// The request's own checks; the lease as a duration.
fn validate(request: &StartRequest) -> Result<chrono::Duration, StartError> {
    if request.test_cases.is_empty() {
        return Err(StartError::InvalidRequest("no test case".into()));
    }
    if request.attempts_per_case == 0 {
        return Err(StartError::InvalidRequest("attempts_per_case is 0".into()));
    }
    if let Some(case) = request.test_cases.iter().find(|c| c.attempts == Some(0)) {
        return Err(StartError::InvalidRequest(format!(
            "test case {:?} has 0 attempts",
            case.name
        )));
    }
    let attempts = total_attempts(request);
    if attempts > StartLimit::Attempts.maximum() {
        return Err(StartError::TooLarge {
            limit: StartLimit::Attempts,
            maximum: StartLimit::Attempts.maximum(),
            actual: attempts,
        });
    }
    if request.lease_owner.is_empty() {
        return Err(StartError::InvalidRequest(
            "the lease owner is empty".into(),
        ));
    }
    chrono::Duration::from_std(request.lease)
        .map_err(|_| StartError::InvalidRequest("the lease is too long".into()))
}

/// Refuses a start whose initial state, alone or once per attempt, passes
/// its limit: what one request may make the store write is bounded.
fn check_state_size(
    initial: &Map<String, Value>,
    request: &StartRequest,
) -> Result<(), StartError> {
    let bytes = serde_json::to_vec(initial).map_or(u64::MAX, |text| {
        u64::try_from(text.len()).unwrap_or(u64::MAX)
    });
    if bytes > StartLimit::InitialStateBytes.maximum() {
        return Err(StartError::TooLarge {
            limit: StartLimit::InitialStateBytes,
            maximum: StartLimit::InitialStateBytes.maximum(),
            actual: bytes,
        });
    }
    let total = bytes.saturating_mul(total_attempts(request));
    if total > StartLimit::StartStateBytes.maximum() {
        return Err(StartError::TooLarge {
            limit: StartLimit::StartStateBytes,
            maximum: StartLimit::StartStateBytes.maximum(),
            actual: total,
        });
    }
    Ok(())
}

/// Phase 1: every tool the agent reaches, breadth first, each workflow once.
///
/// The workflows are the documented format the engine runs: a tool node
/// naming a nested workflow reaches it; a tool node naming a tool is routed
/// by name like the agent's own calls, among the pinned tools, so the tool
/// is one of `spec.tools` and reached from there. Every cycle between the
/// spec's workflows is refused, reachable or not, as the loader does.
fn reach<'a>(
    spec: &'a AgentSpec,
    mode: SimulationMode,
    problems: &mut Vec<StartProblem>,
) -> Vec<Reached<'a>> {
    for cycle in WorkflowDoc::cycles(&spec.workflows) {
        let mut names: Vec<String> = cycle
            .iter()
            .map(|&i| spec.workflows[i].name.clone())
            .collect();
        names.push(names[0].clone());
        problems.push(StartProblem::WorkflowCycle { cycle: names });
    }
    let workflows: HashMap<&str, &WorkflowDoc> = spec
        .workflows
        .iter()
        .map(|w| (w.name.as_str(), w))
        .collect();
    let mut queue: VecDeque<&ToolRef> = spec.tools.iter().collect();
    let mut nested: VecDeque<&str> = VecDeque::new();
    let mut visited = HashSet::new();
    let mut seen_library = HashSet::new();
    let mut reached = Vec::new();
    loop {
        let workflow = if let Some(reference) = queue.pop_front() {
            match reference {
                ToolRef::Library { tool } => {
                    if seen_library.insert(*tool) {
                        reached.push(Reached::Library(*tool));
                    }
                    continue;
                }
                ToolRef::Inline(inline) => {
                    let duplicate = reached
                        .iter()
                        .any(|r| matches!(r, Reached::Inline(other) if *other == inline));
                    if !duplicate {
                        reached.push(Reached::Inline(inline));
                    }
                    continue;
                }
                ToolRef::Workflow { workflow } => workflow.as_str(),
            }
        } else if let Some(workflow) = nested.pop_front() {
            workflow
        } else {
            break;
        };
        if !visited.insert(workflow) {
            continue;
        }
        let Some(found) = workflows.get(workflow) else {
            problems.push(StartProblem::UnknownWorkflow {
                workflow: workflow.to_owned(),
            });
            continue;
        };
        for node in &found.nodes {
            match node {
                NodeDoc::Tool {
                    workflow: Some(callee),
                    ..
                } => nested.push_back(callee),
                NodeDoc::Tool { .. } | NodeDoc::Branch { .. } | NodeDoc::Return { .. } => {}
                NodeDoc::Effect { id, effect, .. } => {
                    if mode == SimulationMode::Sandbox {
                        problems.push(StartProblem::EffectNode {
                            workflow: found.name.clone(),
                            node: id.clone(),
                            effect: effect.as_str().to_owned(),
                        });
                    }
                }
            }
        }
    }
    reached
}

/// Phase 3: the union of every pinned definition's initial state; two
/// definitions giving one key different values are a `state_conflict`.
fn merge_initial_state(
    candidates: &[Candidate],
    problems: &mut Vec<StartProblem>,
) -> Map<String, Value> {
    let mut initial: Map<String, Value> = Map::new();
    let mut owner: HashMap<String, String> = HashMap::new();
    for candidate in candidates {
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
    initial
}

/// The shared fixtures' size (all of them, compact JSON) against their own
/// limit; their hash (sha256 of the canonical JSON of the array of their
/// objects, in order) when there are any.
fn check_fixtures(fixtures: &[super::FixtureInput]) -> Result<Option<String>, StartError> {
    if fixtures.is_empty() {
        return Ok(None);
    }
    // Each object's compact bytes, summed (the array around them is not
    // the user's).
    let bytes = fixtures.iter().fold(0u64, |sum, f| {
        let one = serde_json::to_vec(&f.members).map_or(u64::MAX, |text| {
            u64::try_from(text.len()).unwrap_or(u64::MAX)
        });
        sum.saturating_add(one)
    });
    if bytes > StartLimit::FixtureBytes.maximum() {
        return Err(StartError::TooLarge {
            limit: StartLimit::FixtureBytes,
            maximum: StartLimit::FixtureBytes.maximum(),
            actual: bytes,
        });
    }
    super::FixtureInput::hash_all(fixtures)
        .map(Some)
        .ok_or_else(|| {
            StartError::InvalidRequest(
                "a fixture cannot be hashed: it holds a number canonical JSON cannot write exactly"
                    .into(),
            )
        })
}

impl super::FixtureInput {
    /// The hash a start pins for these fixtures (`None` for none, or for
    /// fixtures that cannot be hashed, which a start refuses).
    pub fn hash_all(fixtures: &[super::FixtureInput]) -> Option<String> {
        if fixtures.is_empty() {
            return None;
        }
        let array = Value::Array(
            fixtures
                .iter()
                .map(|f| Value::Object(f.members.clone()))
                .collect(),
        );
        let canonical = toolmock_contract::canonical_json(&array).ok()?;
        Some(hex_sha256(&canonical))
    }
}

fn hex_sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(bytes))
}

/// The shared base: the fixtures' members and the definitions' initial
/// state. A key given by two fixtures, or by a fixture and a pinned
/// definition, is a `state_conflict` naming both (equal values too: a
/// fixture is the one place its keys come from).
fn merge_fixtures(
    fixtures: &[super::FixtureInput],
    initial: &Map<String, Value>,
    resolution: &Resolution,
    problems: &mut Vec<StartProblem>,
) -> Map<String, Value> {
    if fixtures.is_empty() {
        return initial.clone();
    }
    let mut base: Map<String, Value> = Map::new();
    let mut owner: HashMap<&str, &str> = HashMap::new();
    for fixture in fixtures {
        for (key, value) in &fixture.members {
            match owner.get(key.as_str()) {
                Some(first) => problems.push(StartProblem::StateConflict {
                    key: key.clone(),
                    first: (*first).to_owned(),
                    second: fixture.label.clone(),
                }),
                None => {
                    owner.insert(key, &fixture.label);
                    base.insert(key.clone(), value.clone());
                }
            }
        }
    }
    for candidate in &resolution.candidates {
        for key in candidate.compiled.initial_state().keys() {
            if let Some(first) = owner.get(key.as_str()) {
                problems.push(StartProblem::StateConflict {
                    key: key.clone(),
                    first: (*first).to_owned(),
                    second: pin_label(&candidate.tool, &candidate.operation, &candidate.pin),
                });
            }
        }
    }
    for (key, value) in initial {
        if !owner.contains_key(key.as_str()) {
            base.insert(key.clone(), value.clone());
        }
    }
    base
}

/// Phase 4a: the test cases and their attempts, each with its id and
/// capability; no lease yet.
fn plan_attempts(request: &StartRequest) -> AttemptPlan {
    let mut test_cases = Vec::new();
    let mut attempts = Vec::new();
    for (position, spec) in request.test_cases.iter().enumerate() {
        let test_case = TestCaseId::random();
        test_cases.push(NewTestCase {
            id: test_case,
            position: u32::try_from(position).unwrap_or(u32::MAX),
            spec: spec.clone(),
        });
        for number in 1..=attempts_of(request, spec) {
            attempts.push(PlannedAttempt {
                id: AttemptId::random(),
                test_case,
                test_case_name: spec.name.clone(),
                number,
                capability: Capability::generate(),
            });
        }
    }
    AttemptPlan {
        test_cases,
        attempts,
    }
}

/// Phase 4b: the planned attempts as stored, each leased to `owner` until
/// `expires_at` (their initial state is the simulation's, held once).
fn assign_leases(plan: &AttemptPlan, owner: &str, expires_at: DateTime<Utc>) -> Vec<NewAttempt> {
    plan.attempts
        .iter()
        .map(|a| NewAttempt {
            id: a.id,
            test_case: a.test_case,
            number: a.number,
            token_hash: a.capability.hash(),
            lease_owner: owner.to_owned(),
            lease_expires_at: expires_at,
        })
        .collect()
}
