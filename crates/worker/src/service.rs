//! `http` cases: the worker hands a claimed attempt to the case's agent
//! service and waits, within its time-out, for the service to finish the
//! attempt through the API (`POST /api/attempts/{id}/finish`), which judges
//! it. A service that cannot be reached, refuses the hand-over or never
//! finishes ends the attempt `harness_error` (`agent_service_unreachable`,
//! `agent_service_refused`, `agent_service_timeout`); see docs/agents.md.
//! A case with a simulated user says so in the hand-over (`case.user`) and
//! gives the service the attempt's `ask_user_url`: the API plays the user.

use crate::shared::Shared;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use toolmock_contract::pointer;
use toolmock_runtime::dispatcher::StartedAttempt;
use toolmock_runtime::error::{HarnessCode, HarnessFault};
use toolmock_runtime::model::AttemptOutcome;
use toolmock_simulation::document::{CaseDoc, DriverDoc};
use toolmock_simulation::{RunError, conclude_attempt};
use toolmock_store::Claimed;

/// How often the worker looks whether the service finished the attempt.
const FINISH_POLL: Duration = Duration::from_millis(100);

/// Hands the attempt to its agent service and waits for its finish.
pub(crate) async fn hand_over(
    shared: &Shared,
    claimed: &Claimed,
    (case, position): (&CaseDoc, usize),
    attempt: &StartedAttempt,
) -> Result<AttemptOutcome, String> {
    let DriverDoc::Http { url, messages } = &case.driver else {
        return Err(format!("the case {:?} is not an http case", case.name));
    };
    let timeout = shared.agents.service_timeout;
    let deadline = Instant::now() + timeout;
    // The tenant names the URL: never one of the service's own network
    // unless the operator allows it (docs/operations.md).
    let api = match (&shared.agents.api_url, shared.agents.targets.check(url).await) {
        (None, _) => Err("the worker has no --api-url, so it cannot tell an agent service where the attempt's tool-call endpoint is".to_owned()),
        (Some(_), Err(e)) => Err(format!(
            "the agent service at {url} was not contacted ({}): {e}",
            e.code()
        )),
        (Some(api), Ok(())) => Ok(api),
    };
    let api = match api {
        Ok(api) => api,
        Err(why) => {
            return end(
                shared,
                claimed,
                (case, position),
                HarnessCode::AgentServiceUnreachable,
                why,
            )
            .await;
        }
    };
    let id = attempt.id.as_uuid();
    let user = case.user.is_some();
    let mut body = json!({
        "attempt": id,
        "capability": attempt.capability.token(),
        "tool_calls_url": format!("{api}/api/attempts/{id}/tool-calls"),
        "finish_url": format!("{api}/api/attempts/{id}/finish"),
        "mcp_url": format!("{api}/api/attempts/{id}/mcp"),
        "case": {"name": case.name, "number": attempt.number, "data": case.data, "messages": messages,
                 "user": user},
        "timeout_secs": timeout.as_secs(),
    });
    // A simulated user is talked with through the API (docs/agents.md).
    if user {
        body["ask_user_url"] = json!(format!("{api}/api/attempts/{id}/ask-user"));
    }
    let sent = shared
        .agents
        .http
        .post(url)
        .timeout(timeout)
        .json(&body)
        .send()
        .await;
    let failure = match sent {
        Ok(answer) if answer.status().is_success() => None,
        // Never followed (`handover_client`): the capability is in the body.
        Ok(answer) if answer.status().is_redirection() => Some((
            HarnessCode::AgentServiceRefused,
            format!(
                "the agent service at {url} answered the hand-over with a redirect (HTTP {}), \
                 which is never followed: the hand-over carries the attempt's capability",
                answer.status().as_u16()
            ),
        )),
        Ok(answer) => Some((
            HarnessCode::AgentServiceRefused,
            format!(
                "the agent service at {url} answered the hand-over with HTTP {}",
                answer.status().as_u16()
            ),
        )),
        // It took the attempt but did not answer in time: it may still finish.
        Err(e) if e.is_timeout() => None,
        // The failure's class, never the error's text (it can carry what
        // an address answered).
        Err(e) => Some((
            HarnessCode::AgentServiceUnreachable,
            format!(
                "the agent service at {url} could not be reached ({})",
                if e.is_connect() {
                    "the connection failed"
                } else {
                    "the request failed"
                }
            ),
        )),
    };
    if let Some((code, why)) = failure {
        return end(shared, claimed, (case, position), code, why).await;
    }
    loop {
        let listing = shared
            .store
            .attempt_listing(claimed.tenant, claimed.attempt)
            .await
            .map_err(|e| format!("reading the attempt failed: {e}"))?;
        if let Some(outcome) = listing.outcome {
            return Ok(outcome);
        }
        if Instant::now() >= deadline {
            let why = format!(
                "the agent service at {url} did not finish the attempt within {} s",
                timeout.as_secs()
            );
            return end(
                shared,
                claimed,
                (case, position),
                HarnessCode::AgentServiceTimeout,
                why,
            )
            .await;
        }
        tokio::time::sleep(FINISH_POLL.min(deadline.saturating_duration_since(Instant::now())))
            .await;
    }
}

/// Records the service's failure and finishes the attempt (judged over
/// what was recorded, so its unmet expectations are kept too). A service
/// that finished it first wins.
async fn end(
    shared: &Shared,
    claimed: &Claimed,
    (case, position): (&CaseDoc, usize),
    code: HarnessCode,
    message: String,
) -> Result<AttemptOutcome, String> {
    tracing::warn!(attempt = %claimed.attempt.as_uuid(), code = code.as_str(), %message, "an agent service failed its attempt");
    let fault = HarnessFault {
        code,
        message,
        path: None,
    };
    shared
        .dispatcher
        .record_fault(
            claimed.tenant,
            claimed.attempt,
            None,
            None,
            fault,
            Value::Null,
        )
        .await
        .map_err(|e| format!("recording the agent service's failure failed: {e}"))?;
    let judged = conclude_attempt(
        &shared.dispatcher,
        claimed.tenant,
        case,
        &pointer::index("/cases", position),
        (claimed.attempt, claimed.number),
        Vec::new(),
        false,
    )
    .await;
    let result = match judged {
        Ok(result) => result,
        // The service finished it first: its outcome stands.
        Err(RunError::AlreadyFinished) => {
            return shared
                .store
                .attempt_listing(claimed.tenant, claimed.attempt)
                .await
                .map_err(|e| format!("reading the attempt failed: {e}"))?
                .outcome
                .ok_or_else(|| "the attempt is finished but has no outcome".to_owned());
        }
        Err(e) => return Err(e.to_string()),
    };
    Ok(result.outcome)
}
