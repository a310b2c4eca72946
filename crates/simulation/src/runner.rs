//! Installing a loaded simulation in a backend, starting it, running its
//! attempts concurrently, and judging them.

use crate::conversation::{ChatModel, ConversationSink};
use crate::document::{CaseDoc, DriverDoc, SimulationDocument};
use crate::driver::run_script;
use crate::expect::{RecordedCall, Unmet, judge_attempt, recorded_calls};
use crate::judge::{grade, judge_final_answer, passes};
use crate::load::{Loaded, LoadedSimulation};
use crate::model_driver::{Played, run_model, unconfigured};
use crate::players::{DEFAULT_ATTEMPT_TIMEOUT, Players, RunOptions};
use crate::problem::{FileProblem, LoadCode};
use crate::results::{
    AttemptResult, CallReport, CaseResult, ErrorEntry, RawAttempt, RunResults, Summary, coverage,
};
use crate::starting::start_problems;
use crate::workflow::AttemptContext;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use toolmock_contract::{Problem, pointer};
use toolmock_runtime::backend::{Backend, Catalog};
use toolmock_runtime::dispatcher::{Dispatcher, StartRequest, StartedAttempt, StartedSimulation};
use toolmock_runtime::error::{
    DispatchError, FinishError, IncompleteStatus, SaveRevisionError, StartError, StartProblem,
    StoreError,
};
use toolmock_runtime::model::{AgentId, AttemptId, TenantId, ToolId};
use toolmock_runtime::model::{
    AgentSpec, AttemptOutcome, InlineOperation, InlineTool, NewTool, Provenance, SaveRevision,
    TestCaseSpec, ToolRef, Verdict,
};
use toolmock_runtime::model::{
    EvidenceRecord, HarnessErrorRecord, NodeDoc, PinRecord, ToolInputErrorRecord, WorkflowDoc,
};

/// Why a run did not produce results.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The document cannot be installed or started; every problem is listed.
    #[error("the simulation cannot start ({} problem(s))", .0.len())]
    Problems(Vec<FileProblem>),
    /// Storage failed, or a call could not be recorded.
    #[error("the run failed: {0}")]
    Storage(String),
    /// The attempt was finished by someone else first (a concurrent finish).
    #[error("the attempt is already finished")]
    AlreadyFinished,
    /// A shared fixture still names its file: the document was never
    /// loaded (`load` turns every fixture file into its value), and
    /// starting without the fixture would run on the wrong state.
    #[error("the fixture at /fixtures/{index} names a file that was never loaded")]
    FixtureNotLoaded {
        /// Its position in `fixtures`.
        index: usize,
    },
}

impl RunError {
    /// A stable code.
    pub fn code(&self) -> &'static str {
        match self {
            RunError::Problems(_) => "start_refused",
            RunError::Storage(_) => "storage_failed",
            RunError::AlreadyFinished => FinishError::AlreadyFinished.code(),
            RunError::FixtureNotLoaded { .. } => "fixture_not_loaded",
        }
    }
}

impl From<StoreError> for RunError {
    fn from(e: StoreError) -> Self {
        RunError::Storage(e.to_string())
    }
}

impl From<DispatchError> for RunError {
    fn from(e: DispatchError) -> Self {
        RunError::Storage(e.to_string())
    }
}

impl From<FinishError> for RunError {
    fn from(e: FinishError) -> Self {
        match e {
            FinishError::AlreadyFinished => RunError::AlreadyFinished,
            FinishError::Store(e) => RunError::Storage(e.to_string()),
        }
    }
}

/// What an installed simulation needs to start.
#[derive(Debug, Clone)]
pub struct Installed {
    /// The tenant it was installed in.
    pub tenant: TenantId,
    /// The agent.
    pub agent: AgentId,
    /// Library tool ids by name.
    pub tools: HashMap<String, ToolId>,
}

/// Loads every tool as a library tool with its definitions as revisions
/// (checked against their contracts by the store, as any save is), then
/// creates the agent. Every problem is reported.
pub async fn install<B: Backend>(
    dispatcher: &Dispatcher<B>,
    tenant: TenantId,
    loaded: &LoadedSimulation,
) -> Result<Installed, RunError> {
    let (installed, problems) = install_listing(dispatcher, tenant, loaded).await?;
    if problems.is_empty() {
        Ok(installed)
    } else {
        Err(RunError::Problems(problems))
    }
}

/// [`install`], listing the definitions that fail instead of stopping at
/// them: a failing definition is not saved (its operation stays without a
/// revision), and the agent is created all the same, so that the start can
/// be checked too.
async fn install_listing<B: Backend>(
    dispatcher: &Dispatcher<B>,
    tenant: TenantId,
    loaded: &LoadedSimulation,
) -> Result<(Installed, Vec<FileProblem>), RunError> {
    let store = dispatcher.backend();
    let mut problems = Vec::new();
    let mut ids: HashMap<String, ToolId> = HashMap::new();
    for tool in &loaded.tools {
        let id = store
            .create_tool(
                tenant,
                &NewTool {
                    name: tool.name.clone(),
                    kind: tool.kind,
                    source_config: tool.source_config.clone(),
                    output_schema: tool.output_schema.clone(),
                },
            )
            .await?;
        ids.insert(tool.name.clone(), id);
        let mut views = HashMap::new();
        for op in &tool.operations {
            let view = store.upsert_operation(tenant, id, op).await?;
            views.insert(op.operation.name.clone(), view);
        }
        for def in &tool.definitions {
            let Some(view) = views.get(&def.operation) else {
                continue;
            };
            let Some(contract_hash) = view.contract_hash.clone() else {
                problems.push(def.origin.problem(Problem::new(
                    IncompleteStatus::NeedsOutputSchema,
                    "",
                    format!(
                        "{}/{} has no output schema (neither its contract nor the tool's output_schema), so it cannot be mocked",
                        tool.name, def.operation
                    ),
                )));
                continue;
            };
            let saved = store
                .save_revision(
                    tenant,
                    view.id,
                    &SaveRevision {
                        contract_hash,
                        definition: def.definition.clone(),
                        author: "toolmock run".into(),
                        provenance: Provenance::Authored,
                    },
                )
                .await;
            match saved {
                Ok(_) => {}
                Err(SaveRevisionError::InvalidDefinition(diagnostics)) => {
                    problems.extend(diagnostics.into_iter().map(|d| def.origin.problem(d)));
                }
                Err(SaveRevisionError::Store(e)) => return Err(e.into()),
                Err(other) => problems.push(FileProblem {
                    file: def.origin.file.clone(),
                    path: def.origin.path.clone(),
                    code: other.code(),
                    message: other.to_string(),
                }),
            }
        }
    }
    let spec = agent_spec(loaded, |name| {
        ids.get(name)
            .or_else(|| loaded.library.get(name))
            .map(|id| ToolRef::Library { tool: *id })
    });
    let agent = &loaded.document.agent;
    let agent = store.create_agent(tenant, &agent.name, &spec).await?;
    let installed = Installed {
        tenant,
        agent,
        tools: ids,
    };
    Ok((installed, problems))
}

/// The agent of a document: what it calls directly, and the tools only its
/// workflows call, each resolved by `tool` (`None`: a workflow of the agent,
/// or nothing the loader would have let through).
fn agent_spec(loaded: &LoadedSimulation, tool: impl Fn(&str) -> Option<ToolRef>) -> AgentSpec {
    let agent = &loaded.document.agent;
    let workflow_names: Vec<&str> = agent.workflows.iter().map(|w| w.name.as_str()).collect();
    let reference = |name: &str| -> Option<ToolRef> {
        tool(name).or_else(|| {
            workflow_names.contains(&name).then(|| ToolRef::Workflow {
                workflow: name.to_owned(),
            })
        })
    };
    // A workflow's tool node names its tool like the agent's own calls do,
    // so the tools only workflows call are the agent's tools too: the start
    // pins exactly what can be called.
    let mut names: Vec<&str> = agent.tools.iter().map(String::as_str).collect();
    for workflow in &agent.workflows {
        for node in &workflow.nodes {
            if let NodeDoc::Tool {
                tool: Some(tool), ..
            } = node
                && !names.contains(&tool.as_str())
            {
                names.push(tool);
            }
        }
    }
    AgentSpec {
        tools: names.into_iter().filter_map(reference).collect(),
        workflows: agent.workflows.clone(),
        prompt: agent.prompt.clone(),
        guards: agent.guards.clone(),
    }
}

/// The document's `from: library` tools that are not the tenant's (another
/// tenant's reads as absent): one `unknown_tool` problem each (the start
/// problem's code: a library tool the agent references does not exist for
/// this tenant), at the tool's `id` in `file`. An API start checks this
/// before it installs anything.
pub async fn unknown_library_tools<C: Catalog>(
    catalog: &C,
    tenant: TenantId,
    loaded: &LoadedSimulation,
    file: &str,
) -> Result<Vec<FileProblem>, StoreError> {
    let mut problems = Vec::new();
    for (index, tool) in loaded.document.tools.iter().enumerate() {
        let Some(id) = loaded.library.get(&tool.name) else {
            continue;
        };
        match catalog.tool(tenant, *id).await {
            Ok(_) => {}
            Err(e) if e.is_not_found() => {
                let unknown = StartProblem::UnknownTool {
                    tool: id.to_string(),
                };
                problems.push(FileProblem {
                    file: file.to_owned(),
                    path: pointer::push(&pointer::index("/tools", index), "id"),
                    code: unknown.code(),
                    message: format!("the tenant has no library tool {id}"),
                });
            }
            Err(e) => return Err(e),
        }
    }
    Ok(problems)
}

/// Creates the document's agent with its own tools as inline tools (each
/// operation carrying its contract and definition, pinned by hash at the
/// start) and its `from: library` tools by id: what `POST /api/simulations`
/// does, so that a start adds no library tools to the tenant's catalog.
/// The definitions are checked by the start, as any inline definition is.
pub async fn install_inline<B: Backend>(
    dispatcher: &Dispatcher<B>,
    tenant: TenantId,
    loaded: &LoadedSimulation,
) -> Result<Installed, RunError> {
    let inline: HashMap<&str, InlineTool> = loaded
        .tools
        .iter()
        .map(|tool| {
            let operations = tool
                .operations
                .iter()
                .map(|op| InlineOperation {
                    name: op.operation.name.clone(),
                    source: op.operation.source,
                    description: op.description.clone(),
                    input_schema: op.input_schema.clone(),
                    output_schema: op
                        .output_schema
                        .clone()
                        .or_else(|| tool.output_schema.clone()),
                    testing: tool
                        .definitions
                        .iter()
                        .find(|d| d.operation == op.operation.name)
                        .map(|d| d.definition.clone()),
                })
                .collect();
            (
                tool.name.as_str(),
                InlineTool {
                    name: tool.name.clone(),
                    operations,
                },
            )
        })
        .collect();
    let spec = agent_spec(loaded, |name| {
        inline
            .get(name)
            .map(|t| ToolRef::Inline(t.clone()))
            .or_else(|| {
                loaded
                    .library
                    .get(name)
                    .map(|id| ToolRef::Library { tool: *id })
            })
    });
    let agent = dispatcher
        .backend()
        .create_agent(tenant, &loaded.document.agent.name, &spec)
        .await?;
    Ok(Installed {
        tenant,
        agent,
        tools: loaded.library.clone(),
    })
}

/// The start request of a loaded document; a fixture that still names
/// its file is `FixtureNotLoaded`.
pub fn start_request(
    document: &SimulationDocument,
    agent: AgentId,
) -> Result<StartRequest, RunError> {
    start_request_reported(document, agent, &[])
}

/// The start request of a document whose fixture files the loader may have
/// failed to read. The loader reports every file it could not read, so
/// with problems `reported` an unloaded fixture is left out (`toolmock run
/// --check` goes on to list every other problem); without, it is
/// `FixtureNotLoaded`.
fn start_request_reported(
    document: &SimulationDocument,
    agent: AgentId,
    reported: &[FileProblem],
) -> Result<StartRequest, RunError> {
    Ok(StartRequest {
        agent,
        mode: document.mode,
        allow_incomplete: document.allow_incomplete,
        test_cases: document
            .cases
            .iter()
            .map(|c| TestCaseSpec {
                name: c.name.clone(),
                variants: c.variants.clone(),
                attempts: c.attempts,
            })
            .collect(),
        attempts_per_case: document.attempts,
        lease_owner: "toolmock run".into(),
        lease: Duration::from_secs(24 * 3600),
        fixtures: fixture_inputs(document, reported)?,
    })
}

/// The document's shared fixtures as a start takes them.
fn fixture_inputs(
    document: &SimulationDocument,
    reported: &[FileProblem],
) -> Result<Vec<toolmock_runtime::FixtureInput>, RunError> {
    let mut inputs = Vec::with_capacity(document.fixtures.len());
    for (index, fixture) in document.fixtures.iter().enumerate() {
        let label = pointer::index("/fixtures", index);
        match fixture {
            crate::document::FixtureDoc::Value { value } => {
                inputs.push(toolmock_runtime::FixtureInput {
                    label,
                    members: value.clone(),
                });
            }
            crate::document::FixtureDoc::File { .. } if !reported.is_empty() => {}
            crate::document::FixtureDoc::File { .. } => {
                return Err(RunError::FixtureNotLoaded { index });
            }
        }
    }
    Ok(inputs)
}

/// Starts an installed simulation.
pub async fn start<B: Backend>(
    dispatcher: &Dispatcher<B>,
    loaded: &LoadedSimulation,
    installed: &Installed,
) -> Result<StartedSimulation, RunError> {
    start_keeping(dispatcher, loaded, installed, &[], |_| true).await
}

/// Starts an installed simulation; of the start's refusals, lists those
/// `keep` keeps (`reported`: the problems already listed).
async fn start_keeping<B: Backend>(
    dispatcher: &Dispatcher<B>,
    loaded: &LoadedSimulation,
    installed: &Installed,
    reported: &[FileProblem],
    keep: impl Fn(&StartProblem) -> bool,
) -> Result<StartedSimulation, RunError> {
    let request = start_request_reported(&loaded.document, installed.agent, reported)?;
    let whole_file = |message: String| {
        RunError::Problems(vec![FileProblem::load(
            loaded.file.clone(),
            "",
            LoadCode::InvalidValue,
            message,
        )])
    };
    match dispatcher.start(installed.tenant, &request).await {
        Ok(started) => Ok(started),
        Err(StartError::Refused { mut problems }) => {
            problems.retain(keep);
            Err(RunError::Problems(start_problems(loaded, &problems)))
        }
        Err(StartError::InvalidRequest(message)) => Err(whole_file(message)),
        Err(too_large @ StartError::TooLarge { .. }) => Err(whole_file(too_large.to_string())),
        Err(StartError::Store(e)) => Err(e.into()),
    }
}

/// Installs and starts a loaded simulation, listing every problem at once:
/// `found` (the loader's), the definitions' and the start's. The start's
/// refusals that repeat a problem already listed are left out: an
/// operation whose definition the document gives is stale, missing or
/// without an output schema at the start only because that definition has
/// a problem of its own, and workflow cycles and unknown workflows are the
/// loader's to report.
async fn prepare<B: Backend>(
    dispatcher: &Dispatcher<B>,
    tenant: TenantId,
    loaded: &LoadedSimulation,
    mut found: Vec<FileProblem>,
) -> Result<StartedSimulation, RunError> {
    let (installed, definitions) = install_listing(dispatcher, tenant, loaded).await?;
    found.extend(definitions);
    let given = |tool: &str, operation: &str| {
        loaded
            .document
            .tools
            .iter()
            .any(|t| t.name == tool && t.definitions.contains_key(operation))
    };
    let listed = !found.is_empty();
    let new = |refusal: &StartProblem| match refusal {
        _ if !listed => true,
        StartProblem::Incomplete {
            tool, operation, ..
        } => !given(tool, operation),
        StartProblem::WorkflowCycle { .. } | StartProblem::UnknownWorkflow { .. } => false,
        _ => true,
    };
    match start_keeping(dispatcher, loaded, &installed, &found, new).await {
        Ok(started) if found.is_empty() => Ok(started),
        Ok(started) => {
            dispatcher.forget_simulation(started.id);
            Err(RunError::Problems(found))
        }
        Err(RunError::Problems(refused)) => {
            found.extend(refused);
            Err(RunError::Problems(found))
        }
        Err(other) => Err(other),
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
    let ctx = AttemptContext {
        dispatcher,
        tenant,
        attempt: attempt.id,
        capability: &attempt.capability,
        workflows,
    };
    let played = run_model(
        &ctx,
        (players.system.clone(), messages, *max_turns),
        &players.functions,
        (model.as_ref(), keeping.sink, players.attempt_timeout),
        case_at,
    )
    .await?;
    let mut result = finish_judged(
        dispatcher,
        tenant,
        case,
        case_at,
        (attempt.id, attempt.number),
        played,
        (keeping.raw, players.judge.as_deref()),
    )
    .await?;
    result.wall = began.elapsed();
    Ok(result)
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
    let ctx = AttemptContext {
        dispatcher,
        tenant,
        attempt: attempt.id,
        capability: &attempt.capability,
        workflows,
    };
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
    let mut result = judge_and_finish(
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

/// Judges an attempt whose agent is done (a script that ran, an external
/// agent that said so) over what it recorded — `unmet` holds what its driver
/// already found unmet — and finishes it with that verdict. The outcome is
/// the dispatcher's: a harness error makes it `harness_error` whatever the
/// verdict. `wall` is left zero for the caller.
pub async fn judge_and_finish<B: Backend>(
    dispatcher: &Dispatcher<B>,
    tenant: TenantId,
    case: &CaseDoc,
    case_at: &str,
    attempt: (AttemptId, u32),
    unmet: Vec<Unmet>,
    keep_raw: bool,
) -> Result<AttemptResult, RunError> {
    let played = Played {
        unmet,
        ..Played::default()
    };
    finish_judged(
        dispatcher,
        tenant,
        case,
        case_at,
        attempt,
        played,
        (keep_raw, None),
    )
    .await
}

/// [`judge_and_finish`] with the conversation the driver recorded and the
/// judge for the case's rubric. The judge is asked only when the attempt
/// has no harness error (it can never turn one into a pass); a judge that
/// cannot answer is recorded as the harness error `judge_failed`.
async fn finish_judged<B: Backend>(
    dispatcher: &Dispatcher<B>,
    tenant: TenantId,
    case: &CaseDoc,
    case_at: &str,
    (attempt, number): (AttemptId, u32),
    played: Played,
    (keep_raw, judge): (bool, Option<&dyn ChatModel>),
) -> Result<AttemptResult, RunError> {
    let Played {
        mut unmet,
        conversation,
        times,
    } = played;
    let store = dispatcher.backend();
    // Four independent reads (never one snapshot, in sequence either): at
    // once, so that a finish waits for one round trip to storage, not four.
    let (evidence, tool_input_errors, mut harness_errors, state) = tokio::try_join!(
        store.evidence(tenant, attempt),
        store.tool_input_errors(tenant, attempt),
        store.harness_errors(tenant, attempt),
        store.state(tenant, attempt),
    )?;
    let calls: Vec<RecordedCall> = recorded_calls(&evidence, &tool_input_errors, &harness_errors);
    let expect_at = pointer::push(case_at, "expect");
    unmet.extend(judge_attempt(
        &case.expect,
        &calls,
        &state.state,
        &expect_at,
    ));
    if let Some(expect) = &case.expect.final_answer {
        unmet.extend(judge_final_answer(
            expect,
            &conversation,
            &pointer::push(&expect_at, "final_answer"),
        ));
    }
    let mut judged = None;
    if let Some(expect) = &case.expect.judge
        && harness_errors.is_empty()
    {
        let graded = match judge {
            Some(judge) => grade(judge, expect, &conversation, &calls).await,
            // A rubric nobody can grade never passes unread.
            None => Err((
                "no judge model is configured here to grade the rubric".to_owned(),
                serde_json::json!({}),
            )),
        };
        match graded {
            Ok(report) => {
                if !passes(expect, &report) {
                    unmet.push(Unmet::new(
                        pointer::push(&expect_at, "judge"),
                        "judge_verdict",
                        format!(
                            "the judge graded {} ({}): {}",
                            report.verdict, report.score, report.reasoning
                        ),
                    ));
                }
                judged = Some(report);
            }
            Err((why, detail)) => {
                let fault = toolmock_runtime::error::HarnessFault {
                    code: toolmock_runtime::error::HarnessCode::JudgeFailed,
                    message: why,
                    path: None,
                };
                dispatcher
                    .record_harness_fault(tenant, attempt, None, fault, detail)
                    .await?;
                harness_errors = store.harness_errors(tenant, attempt).await?;
            }
        }
    }
    let verdict = if unmet.is_empty() {
        Verdict::Passed
    } else {
        Verdict::Failed
    };
    let outcome = dispatcher.finish_attempt(tenant, attempt, verdict).await?;
    let mut result = attempt_result(
        case,
        (number, outcome),
        unmet,
        calls,
        (&evidence, &tool_input_errors, &harness_errors),
        conversation,
    );
    result.judge = judged;
    result.raw = keep_raw.then_some(RawAttempt {
        evidence,
        tool_input_errors,
        harness_errors,
        final_state: state.state,
        message_times: times,
    });
    Ok(result)
}

/// The results document's entry for a finished attempt of `case`, from what
/// it recorded (`calls` as [`recorded_calls`] makes them of the records)
/// and the expectations its judgement found unmet — the same entry whichever
/// runtime played it (the API's results endpoint builds its document with
/// this from PostgreSQL). No judge report and no raw records.
pub fn attempt_result(
    case: &CaseDoc,
    (number, outcome): (u32, AttemptOutcome),
    unmet: Vec<Unmet>,
    calls: Vec<RecordedCall>,
    (evidence, tool_input_errors, harness_errors): (
        &[EvidenceRecord],
        &[ToolInputErrorRecord],
        &[HarnessErrorRecord],
    ),
    conversation: Vec<crate::conversation::Message>,
) -> AttemptResult {
    AttemptResult {
        number,
        outcome,
        as_expected: outcome == case.expect.outcome,
        unmet,
        harness_errors: harness_errors.iter().map(ErrorEntry::harness).collect(),
        tool_input_errors: tool_input_errors
            .iter()
            .map(ErrorEntry::tool_input)
            .collect(),
        virtual_time_ms: evidence.iter().map(|e| u64::from(e.delay_ms)).sum(),
        calls: calls.into_iter().map(CallReport::from).collect(),
        wall: Duration::ZERO,
        judge: None,
        raw: None,
        conversation,
    }
}

/// Installs, starts and runs a loaded simulation in `dispatcher`'s backend,
/// `options.jobs` attempts at a time; `progress` is told of each finished
/// attempt. Outcomes and the results document do not depend on `jobs`.
pub async fn run<B: Backend + 'static>(
    dispatcher: Arc<Dispatcher<B>>,
    tenant: TenantId,
    loaded: Arc<LoadedSimulation>,
    options: &RunOptions,
    progress: Arc<dyn Fn() + Send + Sync>,
) -> Result<RunResults, RunError> {
    let missing = unconfigured(&loaded, options.model.is_some(), options.judge.is_some());
    if !missing.is_empty() {
        return Err(RunError::Problems(missing));
    }
    let started = prepare(&dispatcher, tenant, &loaded, Vec::new()).await?;
    let workflows = Arc::new(loaded.workflows());
    let players = Arc::new(
        Players::new(&loaded, options.model.clone(), options.judge.clone())
            .with_attempt_timeout(options.attempt_timeout.unwrap_or(DEFAULT_ATTEMPT_TIMEOUT)),
    );
    let attempts = Arc::new(started.attempts.clone());
    let case_index: Arc<HashMap<String, usize>> = Arc::new(
        loaded
            .document
            .cases
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name.clone(), i))
            .collect(),
    );
    let slots: Arc<Mutex<Vec<Option<AttemptResult>>>> =
        Arc::new(Mutex::new(vec![None; attempts.len()]));
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..options.jobs.max(1).min(attempts.len().max(1)) {
        let (dispatcher, loaded, workflows, players, attempts, case_index, slots, next, progress) = (
            dispatcher.clone(),
            loaded.clone(),
            workflows.clone(),
            players.clone(),
            attempts.clone(),
            case_index.clone(),
            slots.clone(),
            next.clone(),
            progress.clone(),
        );
        let keep_raw = options.keep_raw;
        workers.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(attempt) = attempts.get(i) else {
                    return Ok::<(), RunError>(());
                };
                let c = case_index
                    .get(&attempt.test_case_name)
                    .copied()
                    .unwrap_or_default();
                let result = play_attempt(
                    &dispatcher,
                    tenant,
                    (&workflows, &players),
                    &loaded.document.cases[c],
                    &pointer::index("/cases", c),
                    attempt,
                    Keeping {
                        raw: keep_raw,
                        sink: None,
                    },
                )
                .await?;
                slots.lock().unwrap_or_else(PoisonError::into_inner)[i] = Some(result);
                progress();
            }
        });
    }
    while let Some(joined) = workers.join_next().await {
        joined.map_err(|e| RunError::Storage(format!("a worker failed: {e}")))??;
    }
    dispatcher.forget_simulation(started.id);
    let slots = std::mem::take(&mut *slots.lock().unwrap_or_else(PoisonError::into_inner));
    let mut per_case: Vec<Vec<AttemptResult>> = vec![Vec::new(); loaded.document.cases.len()];
    for (attempt, slot) in started.attempts.iter().zip(slots) {
        let c = case_index
            .get(&attempt.test_case_name)
            .copied()
            .unwrap_or_default();
        if let Some(result) = slot {
            per_case[c].push(result);
        }
    }
    Ok(assemble_results(
        &loaded.document,
        &started.pins,
        loaded.document.cases.iter().zip(per_case).collect(),
        started.fixtures_hash.clone(),
    ))
}

/// The results document of attempts that ran (by `run`, or played by an
/// agent outside toolmock, e.g. over MCP): `cases` pairs each reported case
/// with its attempts, in order; coverage is over `pins`; `fixtures_hash` is
/// the one the start computed (`StartedSimulation::fixtures_hash`).
pub fn assemble_results(
    document: &SimulationDocument,
    pins: &[PinRecord],
    cases: Vec<(&CaseDoc, Vec<AttemptResult>)>,
    fixtures_hash: Option<String>,
) -> RunResults {
    let coverage = coverage(
        pins,
        cases.iter().flat_map(|(case, attempts)| {
            attempts
                .iter()
                .map(|a| (a.calls.as_slice(), case.variants.as_slice()))
        }),
    );
    let cases: Vec<CaseResult> = cases
        .into_iter()
        .map(|(case, attempts)| CaseResult::new(case, attempts))
        .collect();
    let mut summary = Summary::default();
    for case in &cases {
        for a in &case.attempts {
            summary.attempts += 1;
            summary.as_expected += u32::from(a.as_expected);
            match a.outcome {
                AttemptOutcome::Passed => summary.passed += 1,
                AttemptOutcome::Failed => summary.failed += 1,
                AttemptOutcome::HarnessError => summary.harness_error += 1,
            }
            summary.virtual_time_ms += a.virtual_time_ms;
        }
    }
    summary.cases = u32::try_from(cases.len()).unwrap_or(u32::MAX);
    RunResults {
        results_version: 2,
        simulation: document.name.clone(),
        mode: document.mode,
        attempts_per_case: document.attempts,
        ok: summary.as_expected == summary.attempts,
        summary,
        cases,
        coverage,
        fixtures_hash,
        diverged_mocks: Vec::new(),
    }
}

/// Installs and starts without running (`toolmock run --check`): every
/// problem at once — the loader's (`loaded.problems`), every definition's
/// against its contract, and the start's refusals — each in its file at its
/// pointer. Returns the number of pinned operations.
pub async fn check<B: Backend>(
    dispatcher: &Dispatcher<B>,
    tenant: TenantId,
    loaded: &Loaded,
) -> Result<usize, RunError> {
    let started = prepare(
        dispatcher,
        tenant,
        &loaded.simulation,
        loaded.problems.clone(),
    )
    .await?;
    dispatcher.forget_simulation(started.id);
    Ok(started.pins.len())
}
