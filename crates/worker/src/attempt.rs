//! One claimed attempt: its simulation's document (loaded once per
//! simulation and kept for a while), its run through the simulation
//! runner, and the recording of a run that failed.

use crate::shared::Shared;
use serde_json::Value;
use toolmock_contract::pointer;
use toolmock_runtime::dispatcher::StartedAttempt;
use toolmock_runtime::error::{HarnessCode, HarnessFault};
use toolmock_runtime::model::{AttemptOutcome, Capability, Verdict};
use toolmock_simulation::document::DriverDoc;
use toolmock_simulation::{Keeping, play_attempt};
use toolmock_store::Claimed;

/// Runs one claimed attempt to its finish, which records its judgement; a run
/// that fails records a `storage_failed` harness error and finishes it, so
/// it ends `harness_error`. A write refused by the fence (the lease lost)
/// ends the run: nothing more is written.
pub(crate) async fn run_claimed(shared: &Shared, claimed: &Claimed, capability: Capability) {
    let tenant = claimed.tenant;
    let message = match run(shared, claimed, capability).await {
        Ok(outcome) => {
            shared.report(|r| r.finished += 1);
            metrics::counter!(crate::telemetry::FINISHED, "outcome" => outcome.as_str())
                .increment(1);
            return;
        }
        Err(message) => message,
    };
    tracing::error!(attempt = %claimed.attempt.as_uuid(), error = %message, "an attempt's run failed");
    let fault = HarnessFault {
        code: HarnessCode::StorageFailed,
        message: format!("the worker's runner failed: {message}"),
        path: None,
    };
    // Under the fence like every write: refused when the lease was lost
    // (the reaper or the next holder decides the outcome then).
    if let Err(e) = shared
        .dispatcher
        .record_fault(tenant, claimed.attempt, None, None, fault, Value::Null)
        .await
    {
        tracing::warn!(attempt = %claimed.attempt.as_uuid(), error = %e,
            "the runner's failure could not be recorded; the lease will run out");
        return;
    }
    // Already finished (the failure came after the finish) is fine: the
    // harness error recorded above makes the outcome harness_error either way.
    if shared
        .dispatcher
        .finish_attempt(tenant, claimed.attempt, Verdict::Failed)
        .await
        .is_ok()
    {
        shared.report(|r| r.finished += 1);
        metrics::counter!(crate::telemetry::FINISHED, "outcome" => AttemptOutcome::HarnessError.as_str())
            .increment(1);
    }
}

async fn run(
    shared: &Shared,
    claimed: &Claimed,
    capability: Capability,
) -> Result<AttemptOutcome, String> {
    let tenant = claimed.tenant;
    let playable = shared
        .simulations
        .get(
            (&shared.store, &shared.dispatcher),
            (shared.config.real_delays, shared.config.clock_offset),
            &shared.agents,
            tenant,
            claimed.simulation,
        )
        .await?;
    let cases = &playable.loaded.document.cases;
    let position = cases
        .iter()
        .position(|c| c.name == claimed.test_case_name)
        .ok_or_else(|| format!("no case named {:?} in the document", claimed.test_case_name))?;
    let case = &cases[position];
    let case_at = pointer::index("/cases", position);
    let attempt = StartedAttempt {
        id: claimed.attempt,
        test_case: claimed.test_case,
        test_case_name: claimed.test_case_name.clone(),
        number: claimed.number,
        capability,
    };
    match &case.driver {
        DriverDoc::Scripted { .. } | DriverDoc::Model { .. } => {}
        DriverDoc::Http { .. } => {
            return crate::service::hand_over(shared, claimed, (case, position), &attempt).await;
        }
        DriverDoc::External => {
            return Err(format!(
                "the case {:?} is played by an external agent, not a worker",
                case.name
            ));
        }
    }
    let sink = crate::agents::PgSink {
        store: &shared.store,
        tenant,
        attempt: claimed.attempt,
    };
    let dispatcher = match &playable.own {
        Some((own, _)) => own.as_ref(),
        None => &shared.dispatcher,
    };
    // The claim bound the capability: the first call need not look it up.
    dispatcher.adopt_capability(&attempt.capability, claimed.capability_check());
    // Every model answer of the attempt metered: its usage recorded (the
    // simulation's budget is enforced under its cassette: simulations.rs).
    let meter = crate::metered::Meter {
        store: shared.store.clone(),
        tenant,
        simulation: claimed.simulation,
        attempt: claimed.attempt,
        replaying: playable
            .cassette
            .as_ref()
            .is_some_and(|c| c.mode() == toolmock_agent::CassetteMode::Replay),
    };
    let players = meter.players(&playable.players, shared.agents.prices);
    let result = play_attempt(
        dispatcher,
        tenant,
        (&playable.workflows, &players),
        case,
        &case_at,
        &attempt,
        Keeping {
            raw: false,
            sink: Some(&sink),
        },
    )
    .await
    .map_err(|e| e.to_string())?;
    if let Some(cassette) = &playable.cassette {
        let lines: Vec<String> = cassette
            .take_recorded(&claimed.test_case_name, claimed.number)
            .iter()
            .map(toolmock_agent::cassette::Exchange::line)
            .collect();
        if !lines.is_empty() {
            shared
                .store
                .record_cassette_exchanges(tenant, claimed.simulation, claimed.attempt, &lines)
                .await
                .map_err(|e| format!("recording the cassette's exchanges failed: {e}"))?;
        }
    }
    Ok(result.outcome)
}
