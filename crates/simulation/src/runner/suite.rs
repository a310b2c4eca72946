//! The suite: install, start and run every attempt of a document
//! concurrently (`run`), or only install and start it (`check`).

use crate::conversation::ChatModel;
use crate::load::{Loaded, LoadedSimulation};
use crate::model_driver::unconfigured;
use crate::problem::FileProblem;
use crate::results::{AttemptResult, RunResults};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use toolmock_contract::pointer;
use toolmock_runtime::backend::Backend;
use toolmock_runtime::dispatcher::{Dispatcher, StartedSimulation};
use toolmock_runtime::error::StartProblem;
use toolmock_runtime::model::TenantId;

use super::error::*;
use super::install::*;
use super::play::*;
use super::results::*;
use super::start::*;

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

/// How to run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Attempts run at once.
    pub jobs: usize,
    /// Keep every attempt's raw records (for `--evidence`).
    pub keep_raw: bool,
    /// Let the backend drop each attempt once its result is taken
    /// ([`AttemptStore::release_finished`](toolmock_runtime::backend::AttemptStore::release_finished)):
    /// for a caller that reads nothing of the run from the backend
    /// afterwards (`toolmock run`), whose memory is then bounded by the
    /// results it reports.
    pub release_finished: bool,
    /// The model that plays `model` cases (none: such cases cannot run).
    pub model: Option<Arc<dyn ChatModel>>,
    /// The judge model that grades `judge` rubrics (none: they cannot run).
    pub judge: Option<Arc<dyn ChatModel>>,
    /// The model that plays simulated users (none: `model` plays them).
    pub user: Option<Arc<dyn ChatModel>>,
    /// How long a model-driven attempt may run (none:
    /// [`DEFAULT_ATTEMPT_TIMEOUT`]); past it, it ends `harness_error`
    /// (`attempt_timeout`).
    pub attempt_timeout: Option<std::time::Duration>,
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
    let user = options.user.clone().or_else(|| options.model.clone());
    let missing = unconfigured(
        &loaded,
        (options.model.is_some(), user.is_some()),
        options.judge.is_some(),
    );
    if !missing.is_empty() {
        return Err(RunError::Problems(missing));
    }
    let started = prepare(&dispatcher, tenant, &loaded, Vec::new()).await?;
    let workflows = Arc::new(loaded.workflows());
    let players = Arc::new(
        Players::new(&loaded, options.model.clone(), options.judge.clone())
            .with_user(user)
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
        let (keep_raw, release) = (options.keep_raw, options.release_finished);
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
                if release {
                    dispatcher.backend().release_finished(tenant, attempt.id);
                }
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
