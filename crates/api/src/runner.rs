//! What the API does for a simulation after answering its start: it runs the
//! scripted cases' attempts in the background, and it follows a simulation's
//! attempts in PostgreSQL for the server-sent events.
//!
//! Both work through the database alone, so any API process can serve the
//! events of attempts another process (or, later, a worker) runs.

use crate::AppState;
use crate::routes::simulations::{AttemptItem, attempt_item, simulation_item};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use toolmock_contract::pointer;
use toolmock_runtime::dispatcher::StartedAttempt;
use toolmock_runtime::error::{FinishError, HarnessCode, HarnessFault};
use toolmock_runtime::model::{SimulationId, TenantId, Verdict};
use toolmock_runtime::simulation::document::{DriverDoc, SimulationDocument};
use toolmock_runtime::simulation::{LoadedSimulation, run_attempt};

/// Scripted attempts of one simulation run at once by the process that
/// started it: enough to overlap their database round trips, few enough
/// that one big simulation does not starve the API's pool.
const SCRIPTED_AT_ONCE: usize = 4;

/// How often the events stream reads the simulation's attempts.
const EVENTS_POLL: Duration = Duration::from_millis(200);

/// Runs the scripted cases' attempts of a just-started simulation in the
/// background, [`SCRIPTED_AT_ONCE`] at a time, and records each one's
/// judgement. External cases' attempts are left to their agents.
///
/// A run that fails (storage, a capability the runner cannot use) records a
/// `storage_failed` harness error for its attempt and finishes it, so it
/// ends as `harness_error`, never as a pass, and never stays running; if
/// even that cannot be written, its lease runs out and the log says why.
pub(crate) fn spawn_scripted(
    state: AppState,
    tenant: TenantId,
    loaded: Arc<LoadedSimulation>,
    attempts: Vec<StartedAttempt>,
) {
    let positions: HashMap<String, usize> = loaded
        .document
        .cases
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.clone(), i))
        .collect();
    let scripted: Vec<(usize, StartedAttempt)> = attempts
        .into_iter()
        .filter_map(|a| {
            let position = *positions.get(&a.test_case_name)?;
            matches!(
                loaded.document.cases[position].driver,
                DriverDoc::Scripted { .. }
            )
            .then_some((position, a))
        })
        .collect();
    if scripted.is_empty() {
        return;
    }
    tokio::spawn(async move {
        let workflows = loaded.workflows();
        futures_util::stream::iter(scripted)
            .for_each_concurrent(SCRIPTED_AT_ONCE, |(position, attempt)| {
                let (state, loaded, workflows) = (&state, &loaded, &workflows);
                async move {
                    run_one(state, tenant, loaded, workflows, position, &attempt).await;
                }
            })
            .await;
    });
}

async fn run_one(
    state: &AppState,
    tenant: TenantId,
    loaded: &LoadedSimulation,
    workflows: &HashMap<String, toolmock_runtime::workflow::WorkflowDoc>,
    position: usize,
    attempt: &StartedAttempt,
) {
    let case = &loaded.document.cases[position];
    let ran = run_attempt(
        state.dispatcher(),
        tenant,
        workflows,
        case,
        &pointer::index("/cases", position),
        attempt,
        false,
    )
    .await;
    let failure = match ran {
        Ok(result) => match serde_json::to_value(&result.unmet) {
            Ok(unmet) => state
                .store()
                .record_judgement(tenant, attempt.id, &unmet)
                .await
                .err()
                .map(|e| format!("recording the judgement failed: {e}")),
            Err(e) => Some(e.to_string()),
        },
        Err(e) => Some(e.to_string()),
    };
    let Some(message) = failure else {
        return;
    };
    tracing::error!(attempt = %attempt.id.as_uuid(), error = %message, "a scripted attempt failed");
    let fault = HarnessFault {
        code: HarnessCode::StorageFailed,
        message: format!("the API's scripted runner failed: {message}"),
        path: None,
    };
    if let Err(e) = state
        .dispatcher()
        .record_harness_fault(tenant, attempt.id, None, fault, Value::Null)
        .await
    {
        tracing::error!(attempt = %attempt.id.as_uuid(), error = %e, "the runner's failure could not be recorded");
        return;
    }
    // Already finished (the failure came after the finish) is fine: the
    // harness error recorded above makes the outcome harness_error either way.
    let _ = state
        .dispatcher()
        .finish_attempt(tenant, attempt.id, Verdict::Failed)
        .await;
}

/// Where the events stream of one simulation stands.
struct Follow {
    state: AppState,
    tenant: TenantId,
    simulation: SimulationId,
    document: Option<SimulationDocument>,
    seen: HashMap<uuid::Uuid, AttemptItem>,
    started: bool,
    done: bool,
}

impl Follow {
    /// The events of one look at the database: on the first, `snapshot`;
    /// then an `attempt` for each attempt that changed; `finished` (and the
    /// end) once none is running.
    async fn step(&mut self) -> Vec<Event> {
        if self.started {
            tokio::time::sleep(EVENTS_POLL).await;
        }
        let store = self.state.store();
        let read = async {
            let summary = store.simulation(self.tenant, self.simulation).await?;
            let attempts = store
                .simulation_attempts(self.tenant, self.simulation)
                .await?;
            Ok::<_, toolmock_runtime::error::StoreError>((summary, attempts))
        };
        let (summary, attempts) = match read.await {
            Ok(read) => read,
            Err(e) => {
                self.done = true;
                tracing::error!(simulation = %self.simulation.as_uuid(), error = %e, "the events stream cannot read the simulation");
                return vec![event(
                    "error",
                    &json!({"code": e.code(), "message": "the simulation cannot be read"}),
                )];
            }
        };
        let items: Vec<AttemptItem> = attempts
            .into_iter()
            .map(|a| attempt_item(a, self.document.as_ref()))
            .collect();
        let mut events = Vec::new();
        if !self.started {
            self.started = true;
            events.push(event(
                "snapshot",
                &json!({"simulation": simulation_item(summary.clone()), "attempts": items}),
            ));
        } else {
            for item in &items {
                if self.seen.get(&item.id) != Some(item) {
                    events.push(event("attempt", item));
                }
            }
        }
        self.seen = items.into_iter().map(|i| (i.id, i)).collect();
        if summary.running == 0 {
            self.done = true;
            events.push(event("finished", &simulation_item(summary)));
        }
        events
    }
}

fn event(name: &str, data: &impl serde::Serialize) -> Event {
    Event::default()
        .event(name)
        .json_data(data)
        .unwrap_or_else(|_| Event::default().event("error").data("{}"))
}

/// The server-sent events of one simulation (see `GET /api/simulations/{id}/events`).
pub(crate) fn events(
    state: AppState,
    tenant: TenantId,
    simulation: SimulationId,
    document: Option<SimulationDocument>,
) -> Response {
    let follow = Follow {
        state,
        tenant,
        simulation,
        document,
        seen: HashMap::new(),
        started: false,
        done: false,
    };
    let stream = futures_util::stream::unfold(follow, |mut follow| async move {
        if follow.done {
            return None;
        }
        let events = follow.step().await;
        Some((events, follow))
    })
    .flat_map(|events| futures_util::stream::iter(events.into_iter().map(Ok::<_, Infallible>)));
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// Attempts expired in one sweep at the most (the next sweep takes the rest).
const EXPIRED_PER_SWEEP: u32 = 500;

/// See [`crate::expire_abandoned_attempts`].
pub(crate) async fn expire_abandoned(
    state: &AppState,
) -> Result<usize, toolmock_runtime::error::StoreError> {
    let store = state.store();
    let now = chrono::Utc::now();
    let expired = store.expired_attempts(now, EXPIRED_PER_SWEEP).await?;
    let mut ended = 0;
    for (tenant, attempt) in expired {
        // The finish itself records `lease_expired`: the lease is over.
        // Another process may have finished it meanwhile: that is fine, its
        // finish recorded the same.
        match state
            .dispatcher()
            .finish_attempt(tenant, attempt, Verdict::Failed)
            .await
        {
            Ok(_) => ended += 1,
            Err(FinishError::AlreadyFinished) => {}
            Err(FinishError::Store(e)) => return Err(e),
        }
    }
    Ok(ended)
}
