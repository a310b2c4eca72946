//! A model through a cassette: [`Taped`] is one role's model, and its
//! per-attempt view [`TapedAttempt`] counts the attempt's turns and its
//! repeated requests, answers from the cassette, and records what it lacks.

use super::canonical::{Fixed, write_request};
use super::file::{Answer, CASSETTE_VERSION, Exchange};
use super::{Cassette, CassetteMode, canonical_request};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use toolmock_contract::pointer;
use toolmock_simulation::{
    AttemptScope, ChatModel, ModelError, ModelFuture, ModelReply, ModelRequest, ModelRole,
};

/// One role's model through a cassette.
#[derive(Debug)]
pub(super) struct Taped {
    cassette: Arc<Cassette>,
    role: ModelRole,
    live: Option<Arc<dyn ChatModel>>,
    identity: Value,
    /// The identity's canonical text, written once.
    fixed: Fixed,
}

impl Taped {
    pub(super) fn new(
        cassette: Arc<Cassette>,
        role: ModelRole,
        live: Option<Arc<dyn ChatModel>>,
    ) -> Self {
        // The live model's identity when there is one; else (a replay
        // without endpoint flags) the one the role was recorded with.
        let identity = match &live {
            Some(live) => live.identity(),
            None => cassette
                .lock()
                .identities
                .get(&role)
                .cloned()
                .unwrap_or_else(|| json!({})),
        };
        Self {
            cassette,
            role,
            live,
            fixed: Fixed::new(&identity),
            identity,
        }
    }

    fn view(&self, scope: &AttemptScope) -> TapedAttempt {
        TapedAttempt {
            cassette: self.cassette.clone(),
            role: self.role,
            live: self.live.clone(),
            identity: self.identity.clone(),
            scope: scope.clone(),
            fixed: Mutex::new(self.fixed.clone()),
            turns: AtomicU32::new(0),
            occurrences: Mutex::new(HashMap::new()),
        }
    }
}

impl ChatModel for Taped {
    fn complete<'a>(&'a self, request: ModelRequest<'a>) -> ModelFuture<'a> {
        // A request outside an attempt (never sent by the runner): an
        // attempt of its own, numbered 0.
        let view = self.view(&AttemptScope {
            case: String::new(),
            attempt: 0,
        });
        Box::pin(async move { view.answer(request).await })
    }

    fn identity(&self) -> Value {
        self.identity.clone()
    }

    fn for_attempt(&self, scope: &AttemptScope) -> Option<Arc<dyn ChatModel>> {
        Some(Arc::new(self.view(scope)))
    }
}

/// One attempt's view of a [`Taped`] model.
#[derive(Debug)]
struct TapedAttempt {
    cassette: Arc<Cassette>,
    role: ModelRole,
    live: Option<Arc<dyn ChatModel>>,
    identity: Value,
    scope: AttemptScope,
    /// The identity's and the tools' canonical text.
    fixed: Mutex<Fixed>,
    turns: AtomicU32,
    /// How many times each key was asked in this attempt.
    occurrences: Mutex<HashMap<String, u32>>,
}

impl TapedAttempt {
    async fn answer(&self, request: ModelRequest<'_>) -> Result<ModelReply, ModelError> {
        let turn = self.turns.fetch_add(1, Ordering::Relaxed) + 1;
        // The key is hashed as the canonical text is written; the text
        // itself is written only to be recorded, the canonical value built
        // only to name a miss's difference.
        let key = {
            let mut fixed = self.fixed.lock().unwrap_or_else(PoisonError::into_inner);
            let mut hasher = Sha256::new();
            write_request(&mut hasher, &mut fixed, request);
            hex::encode(hasher.finalize())
        };
        let occurrence = {
            let mut seen = self
                .occurrences
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let n = seen.entry(key.clone()).or_insert(0);
            *n += 1;
            *n
        };
        let mode = self.cassette.mode;
        if mode != CassetteMode::Record
            && let Some(reply) = self.replayed(&key, occurrence)
        {
            return Ok(reply);
        }
        let live = match (&self.live, mode) {
            (Some(live), CassetteMode::Record | CassetteMode::Auto) => live,
            _ => return Err(self.miss(turn, &canonical_request(&self.identity, request))),
        };
        let mut reply = live.complete(request).await?;
        // toolmock's own tool-call ids, so that a conversation recorded
        // twice is the same conversation; the simulated user's apart from
        // the agent's, which share its conversation.
        let prefix = match self.role {
            ModelRole::User => "user_call",
            ModelRole::Agent | ModelRole::Judge => "call",
        };
        for (i, call) in reply.tool_calls.iter_mut().enumerate() {
            call.id = format!("{prefix}_{turn}_{}", i + 1);
        }
        let text = {
            let mut fixed = self.fixed.lock().unwrap_or_else(PoisonError::into_inner);
            let mut text = Vec::with_capacity(4096);
            write_request(&mut text, &mut fixed, request);
            String::from_utf8(text)
                .map_err(|e| ModelError::Failed(format!("the request cannot be kept: {e}")))?
        };
        let request = serde_json::value::RawValue::from_string(text)
            .map_err(|e| ModelError::Failed(format!("the request cannot be kept: {e}")))?;
        self.cassette.lock().fresh.push(Exchange {
            cassette_version: CASSETTE_VERSION,
            case: self.scope.case.clone(),
            attempt: self.scope.attempt,
            role: self.role,
            turn,
            occurrence,
            key,
            request,
            answer: Answer::from(&reply),
        });
        Ok(reply)
    }

    /// The recorded answer to the `occurrence`th sending of `key` in this
    /// attempt, if any.
    fn replayed(&self, key: &str, occurrence: u32) -> Option<ModelReply> {
        let mut state = self.cassette.lock();
        let slot = (
            self.role,
            self.scope.case.clone(),
            self.scope.attempt,
            key.to_owned(),
        );
        let index = *state
            .by_slot
            .get(&slot)?
            .get(usize::try_from(occurrence).ok()?.checked_sub(1)?)?;
        let mut reply = ModelReply::from(&state.loaded[index].answer);
        // Beside live requests (`auto`), a replayed answer's usage says it
        // was not spent now; a replay (all of it replayed) reports the
        // recorded run's usage as it was.
        if self.cassette.mode == CassetteMode::Auto
            && let Some(usage) = &mut reply.usage
        {
            usage.replayed = true;
        }
        state.replayed += 1;
        Some(reply)
    }

    /// The miss of the request `canonical` at `turn`: the first difference
    /// from what was recorded at that turn, when anything was.
    fn miss(&self, turn: u32, canonical: &Value) -> ModelError {
        let state = self.cassette.lock();
        let recorded = state
            .by_turn
            .get(&(self.role, self.scope.case.clone(), self.scope.attempt, turn))
            .and_then(|indexes| indexes.first())
            .and_then(|&i| serde_json::from_str::<Value>(state.loaded[i].request.get()).ok());
        let difference = recorded.and_then(|r| first_difference(&r, canonical, ""));
        let (case, attempt, role) = (&self.scope.case, self.scope.attempt, self.role.as_str());
        let mut message = format!(
            "the cassette has no answer for case {case:?}, attempt {attempt}, {role} turn {turn}"
        );
        let mut detail = json!({"case": case, "attempt": attempt, "turn": turn, "role": role});
        match &difference {
            Some(at) => {
                message.push_str(&format!(
                    ": the request differs from the recorded one at {}",
                    if at.is_empty() { "the root" } else { at }
                ));
                detail["pointer"] = json!(at);
            }
            None => message.push_str(": nothing was recorded for that turn"),
        }
        if self.cassette.mode == CassetteMode::Auto {
            message.push_str(" (and no model endpoint is configured to record it)");
        }
        ModelError::CassetteMiss { message, detail }
    }
}

impl ChatModel for TapedAttempt {
    fn complete<'a>(&'a self, request: ModelRequest<'a>) -> ModelFuture<'a> {
        Box::pin(self.answer(request))
    }

    fn identity(&self) -> Value {
        self.identity.clone()
    }
}

/// The JSON pointer of the first place where `a` and `b` differ (object
/// keys in sorted order, then array elements in order, then a length), or
/// `None` when they are equal.
pub fn first_difference(a: &Value, b: &Value, at: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => first_difference(p, q, &pointer::push(at, k)),
                _ => Some(pointer::push(at, k)),
            })
        }
        (Value::Array(x), Value::Array(y)) => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(p, q, &pointer::index(at, i)))
            .or_else(|| (x.len() != y.len()).then(|| pointer::index(at, x.len().min(y.len())))),
        _ if a == b => None,
        _ => Some(at.to_owned()),
    }
}
