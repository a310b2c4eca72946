//! An external agent's conversation with its case's simulated user
//! (docs/agents.md, "A simulated user"): `POST /api/attempts/{id}/ask-user`
//! and the per-attempt MCP endpoint's `ask_user` tool both end here.
//!
//! Each request may reach another API process, so nothing of the
//! conversation is kept in memory: it is read back from PostgreSQL
//! (`attempt_messages`, where each message is kept as it is added, as a
//! worker's model driver keeps its own), resumed, and the user model asked
//! exactly as `toolmock serve`'s `ask_user` asks it. Only the loaded
//! simulation documents are kept between requests (a document never
//! changes once started).
//!
//! Like a tool call, an ask, once accepted, runs to its recorded end in a
//! task of its own: a request that times out or whose client hangs up
//! leaves no half-kept turn, and the reply the agent never saw is recorded
//! as the harness error `answer_lost`.

use crate::AppState;
use crate::error::{ApiCode, ApiError};
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use toolmock_contract::pointer;
use toolmock_runtime::backend::AttemptStore;
use toolmock_runtime::error::{DispatchError, HarnessCode, HarnessFault};
use toolmock_runtime::model::{AttemptId, Capability, SimulationId, TenantId, WorkflowDoc};
use toolmock_simulation::document::{CaseDoc, DriverDoc};
use toolmock_simulation::{
    AttemptContext, LoadedSimulation, Message, UserConversation, UserPlayer, UserReply,
};
use utoipa::ToSchema;

/// How long one ask may wait for the user model, its retries included
/// (as `toolmock serve`'s): the request's own budget is the tool-call
/// time-out, past which the ask still runs to its end and its reply is
/// recorded as lost.
const USER_REQUEST_LIMIT: Duration = Duration::from_secs(600);

/// Simulations kept loaded between requests.
const KEPT_SIMULATIONS: usize = 16;

/// What the simulated user answered (`ask-user` and `ask_user` alike):
/// `{"reply"}`; `{"reply", "stop", "ended": true}` when that reply ended
/// the conversation with a stop marker; `{"ended": true}` once it is over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub(crate) struct UserAnswer {
    /// The user's message to the agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reply: Option<String>,
    /// The stop marker the reply contains (it ended the conversation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) stop: Option<String>,
    /// The conversation is over: the user ended it, or its turns are used
    /// up (an unmet `turn_limit`). Absent while it goes on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ended: Option<bool>,
}

/// A simulation's loaded document and each case's simulated user.
struct Talkable {
    loaded: LoadedSimulation,
    workflows: HashMap<String, WorkflowDoc>,
    /// By case position; `None` for a case without a simulated user.
    users: Vec<Option<UserPlayer>>,
}

/// The simulation documents the ask routes have loaded, the most recent
/// [`KEPT_SIMULATIONS`] kept.
#[derive(Default)]
pub(crate) struct UserTalks {
    kept: Mutex<VecDeque<(SimulationId, Arc<Talkable>)>>,
}

impl std::fmt::Debug for UserTalks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserTalks").finish_non_exhaustive()
    }
}

impl UserTalks {
    async fn get(
        &self,
        state: &AppState,
        tenant: TenantId,
        simulation: SimulationId,
    ) -> Result<Option<Arc<Talkable>>, ApiError> {
        if let Some((_, found)) = self
            .kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|(id, _)| *id == simulation)
        {
            return Ok(Some(found.clone()));
        }
        let Some(document) = state
            .store()
            .simulation_document(tenant, simulation)
            .await?
        else {
            return Ok(None);
        };
        // It loaded when it was started: a failure now is corruption.
        let loaded = toolmock_simulation::load_value(
            &document,
            "request",
            &toolmock_simulation::Files::InlineOnly,
        )
        .map_err(|problems| {
            ApiError::Internal(format!(
                "the stored simulation document no longer loads ({} problem(s))",
                problems.len()
            ))
        })?;
        let users = loaded
            .document
            .cases
            .iter()
            .map(|case| case.user.as_ref().map(|u| UserPlayer::new(&loaded, u)))
            .collect();
        let talkable = Arc::new(Talkable {
            workflows: loaded.workflows(),
            users,
            loaded,
        });
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.push_back((simulation, talkable.clone()));
        if kept.len() > KEPT_SIMULATIONS {
            kept.pop_front();
        }
        Ok(Some(talkable))
    }
}

/// Whether the case an attempt plays has a simulated user an agent outside
/// toolmock may talk with (an `external` or `http` case with a `user`).
pub(crate) fn talks_with_a_user(case: &CaseDoc) -> bool {
    case.user.is_some() && matches!(case.driver, DriverDoc::External | DriverDoc::Http { .. })
}

/// The agent of `attempt` (running, its capability checked by the caller)
/// says `message` (none: it only listens, e.g. for the user's first
/// message) to its case's simulated user, and the user answers.
pub(crate) async fn ask(
    state: &AppState,
    talks: &UserTalks,
    (tenant, attempt, capability): (TenantId, AttemptId, Capability),
    message: Option<String>,
) -> Result<UserAnswer, ApiError> {
    let store = state.store();
    let record = store.attempt(tenant, attempt).await?;
    // As on the MCP endpoint: an ended attempt, or one whose lease is over,
    // is asked nothing (the reaper ends it as `lease_expired`).
    if record.outcome.is_some() || record.lease_expires_at <= chrono::Utc::now() {
        return Err(ApiError::InvalidCapability);
    }
    let listing = store.attempt_listing(tenant, attempt).await?;
    let position = listing.case_position as usize;
    let talkable = talks.get(state, tenant, record.simulation).await?;
    let no_user = || ApiError::StateConflict {
        code: ApiCode::NoSimulatedUser,
        message: "the attempt's case has no simulated user an agent outside toolmock talks \
                  with (an external or http case with a \"user\")"
            .into(),
    };
    let Some(talkable) = talkable else {
        return Err(no_user());
    };
    match talkable.loaded.document.cases.get(position) {
        Some(case) if talks_with_a_user(case) => {}
        _ => return Err(no_user()),
    }
    let (answer, answered) = tokio::sync::oneshot::channel();
    let state = state.clone();
    tokio::spawn(async move {
        let reply = converse(
            &state,
            &talkable,
            position,
            (tenant, attempt),
            &capability,
            message,
        )
        .await;
        if answer.send(reply).is_err() {
            // The agent never saw the reply the conversation now holds.
            state
                .dispatcher()
                .record_lost_answer(tenant, attempt, None, None)
                .await;
        }
    });
    let reply = match answered.await {
        Ok(reply) => reply?,
        // The task panicked: nothing says the turn was recorded.
        Err(_) => {
            return Err(ApiError::Internal(
                "the simulated user's task ended without an answer".into(),
            ));
        }
    };
    Ok(match reply {
        UserReply::Said(text) => UserAnswer {
            reply: Some(text),
            stop: None,
            ended: None,
        },
        UserReply::Stopped { text, marker } => UserAnswer {
            reply: Some(text),
            stop: Some(marker),
            ended: Some(true),
        },
        UserReply::Ended => UserAnswer {
            reply: None,
            stop: None,
            ended: Some(true),
        },
        // Recorded already: answered as any recorded harness error.
        UserReply::Fault { code, message } => {
            return Err(ApiError::Harness(HarnessFault {
                code,
                message,
                path: None,
            }));
        }
    })
}

/// The conversation so far, resumed from PostgreSQL, and one more turn of
/// it kept there message by message.
async fn converse(
    state: &AppState,
    talkable: &Talkable,
    position: usize,
    (tenant, attempt): (TenantId, AttemptId),
    capability: &Capability,
    message: Option<String>,
) -> Result<UserReply, ApiError> {
    let store = state.store();
    let ctx = AttemptContext {
        dispatcher: state.dispatcher(),
        tenant,
        attempt,
        capability,
        // The user's own tool calls (a dual-control case's) are few: each
        // resolves the capability, from the dispatcher's bindings after the
        // first.
        resolved: None,
        workflows: &talkable.workflows,
    };
    let Some(player) = talkable.users.get(position).and_then(Option::as_ref) else {
        return Err(ApiError::Internal("the case's user went missing".into()));
    };
    let Some(model) = state.config().user_model.clone() else {
        // Nobody can play the user: the attempt can never pass.
        let why = "no user model is configured on this API process to play the case's simulated \
                   user (--user-model-url and --user-model, or --model-url and --model)";
        return match ctx
            .harness_error(HarnessCode::UserUnavailable, why.into())
            .await
        {
            toolmock_simulation::CallFailure::Fatal(e) => Err(ApiError::from(e)),
            toolmock_simulation::CallFailure::Recorded { .. } => Ok(UserReply::Fault {
                code: HarnessCode::UserUnavailable,
                message: why.into(),
            }),
        };
    };
    let stored = store.attempt_messages(tenant, attempt).await?;
    let mut messages = Vec::with_capacity(stored.len());
    let mut times = Vec::with_capacity(stored.len());
    for kept in stored {
        let message = serde_json::from_value::<Message>(kept.message).map_err(|e| {
            ApiError::Internal(format!(
                "a kept message of the conversation does not parse: {e}"
            ))
        })?;
        messages.push(message);
        times.push(kept.at);
    }
    if let Some(since) = ask_in_flight(&messages, &times, Utc::now()) {
        // Another ask has kept the agent's message (or the user's own tool
        // traffic) and not yet the user's reply: this one keeps nothing.
        return Err(ApiError::StateConflict {
            code: ApiCode::UserBusy,
            message: format!(
                "another ask-user of this attempt is waiting for the simulated user's reply \
                 (since {since}): ask the simulated user one message at a time"
            ),
        });
    }
    let mut conversation = UserConversation::resume(messages, times);
    let sink = toolmock_worker::PgSink {
        store,
        tenant,
        attempt,
    };
    conversation
        .ask(
            &ctx,
            message,
            (player, model.as_ref(), USER_REQUEST_LIMIT),
            (&pointer::index("/cases", position), Some(&sink)),
        )
        .await
        .map_err(|e| match e {
            // A second ask of the same turn kept its message first.
            DispatchError::Store(toolmock_runtime::error::StoreError::Conflict { .. }) => {
                ApiError::StateConflict {
                    code: ApiCode::UserBusy,
                    message: "another ask-user of this attempt was answered meanwhile: \
                              ask the simulated user one message at a time"
                        .into(),
                }
            }
            other => ApiError::from(other),
        })
}

/// When another ask of the conversation is still under way — its last kept
/// message is not the user's finished reply (the agent's message, or the
/// user's own tool traffic, kept while the user model answers) and was kept
/// less than [`USER_REQUEST_LIMIT`] ago —, when that message was kept. An
/// ask that outlived its limit has ended (its process died mid-turn): the
/// conversation goes on after it. Checked before anything is kept, so that
/// of two asks at once the later keeps nothing, whichever wrote first.
fn ask_in_flight(
    messages: &[Message],
    times: &[DateTime<Utc>],
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let waiting = match messages.last()? {
        Message::System { .. } => false,
        Message::User { tool_calls, .. } => !tool_calls.is_empty(),
        Message::Assistant { .. } | Message::Tool { .. } => true,
    };
    let since = *times.last()?;
    let limit = chrono::Duration::from_std(USER_REQUEST_LIMIT).unwrap_or(chrono::Duration::MAX);
    (waiting && now.signed_duration_since(since) < limit).then_some(since)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::<Utc>::from_timestamp(1_800_000_000 + secs, 0).expect("a time")
    }

    fn user(text: &str, own_calls: bool) -> Message {
        Message::User {
            content: text.into(),
            stop: None,
            tool_calls: if own_calls {
                vec![toolmock_simulation::ToolCallRequest {
                    id: "u-1".into(),
                    name: "desk__open".into(),
                    arguments: "{}".into(),
                }]
            } else {
                Vec::new()
            },
        }
    }

    fn agent(text: &str) -> Message {
        Message::Assistant {
            content: Some(text.into()),
            tool_calls: Vec::new(),
        }
    }

    #[test]
    fn an_ask_is_under_way_until_the_user_has_replied_or_its_limit_passed() {
        let limit = i64::try_from(USER_REQUEST_LIMIT.as_secs()).expect("seconds");
        // Nothing kept, or the user's reply last: nothing under way.
        assert_eq!(ask_in_flight(&[], &[], at(0)), None);
        let replied = [
            user("Hi", false),
            agent("How can I help?"),
            user("A note.", false),
        ];
        assert_eq!(ask_in_flight(&replied, &[at(0), at(1), at(2)], at(3)), None);
        // The agent's message kept, no reply yet: under way since then.
        let asked = [user("Hi", false), agent("How can I help?")];
        assert_eq!(ask_in_flight(&asked, &[at(0), at(1)], at(3)), Some(at(1)));
        // The user's own tool call kept mid-turn: under way too.
        let calling = [agent("Open the desk?"), user("", true)];
        assert_eq!(ask_in_flight(&calling, &[at(0), at(1)], at(3)), Some(at(1)));
        // An ask that outlived its limit has ended.
        assert_eq!(ask_in_flight(&asked, &[at(0), at(1)], at(1 + limit)), None);
        assert_eq!(
            ask_in_flight(&asked, &[at(0), at(1)], at(limit)),
            Some(at(1))
        );
    }
}
