//! Model cassettes: every request a run sends to the agent model or the
//! judge, and the answer it got, kept in a folder of reviewable files, so
//! that the run can be played again offline — byte for byte, without a key,
//! and without a connection (docs/cassettes.md).
//!
//! A [`Cassette`] wraps any [`ChatModel`] ([`Cassette::model`]): in
//! [`CassetteMode::Record`] every request goes to the wrapped model and its
//! answer is kept; in [`CassetteMode::Replay`] it is answered from the
//! cassette only and a request it lacks is
//! [`ModelError::CassetteMiss`](toolmock_simulation::ModelError::CassetteMiss)
//! (the harness error `cassette_miss`), never a live call; in
//! [`CassetteMode::Auto`] what the cassette has is replayed and what it
//! lacks is recorded.
//!
//! An exchange is found by its attempt (case, attempt number), its model's
//! role (agent, judge) and the canonical hash of its request
//! ([`canonical_request`]); the same request repeated in one attempt is
//! answered in the order it was recorded (`occurrence`).

mod canonical;
mod check;
mod file;
mod flags;
mod taped;

pub use check::{CheckProblem, check_cassette, count};
pub use file::{
    Answer, CASSETTE_VERSION, Exchange, file_name, parse_exchange, read_dir, write_cassette,
};
pub use flags::{CassetteFlags, CassetteFlagsError};
pub use taped::first_difference;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use toolmock_simulation::{ChatModel, Message, ModelRequest, ModelRole};

/// How a cassette treats a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CassetteMode {
    /// Send every request to the model and keep request and answer
    /// (replacing what the cassette held for the cases recorded).
    Record,
    /// Answer from the cassette only; a request it lacks is `cassette_miss`.
    Replay,
    /// Replay what the cassette has, record what it lacks.
    Auto,
}

impl CassetteMode {
    /// Its flag value.
    pub fn as_str(self) -> &'static str {
        match self {
            CassetteMode::Record => "record",
            CassetteMode::Replay => "replay",
            CassetteMode::Auto => "auto",
        }
    }

    /// The mode its flag value names.
    pub fn parse(text: &str) -> Option<Self> {
        [
            CassetteMode::Record,
            CassetteMode::Replay,
            CassetteMode::Auto,
        ]
        .into_iter()
        .find(|m| m.as_str() == text)
    }
}

/// Why a cassette cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CassetteError {
    /// The folder or one of its files cannot be read.
    #[error("{path}: cannot read the cassette: {message}")]
    Unreadable {
        /// The folder or file.
        path: String,
        /// Why.
        message: String,
    },
    /// A line of a cassette file is not an exchange.
    #[error("{path}:{line}: not a cassette exchange: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// Its line (1-based).
        line: usize,
        /// Why.
        message: String,
    },
    /// A cassette file cannot be written.
    #[error("{path}: cannot write the cassette: {message}")]
    Unwritable {
        /// The file or folder.
        path: String,
        /// Why.
        message: String,
    },
}

impl CassetteError {
    /// A stable code.
    pub fn code(&self) -> &'static str {
        match self {
            CassetteError::Unreadable { .. } => "cassette_unreadable",
            CassetteError::Invalid { .. } => "cassette_invalid",
            CassetteError::Unwritable { .. } => "cassette_unwritable",
        }
    }
}

/// Where an exchange sits: its attempt, its model's role, its key.
type Slot = (ModelRole, String, u32, String);

/// What a cassette holds while a run uses it.
#[derive(Debug, Default)]
struct State {
    /// The exchanges read from the folder.
    loaded: Vec<Exchange>,
    /// By slot, the indexes into `loaded` in recorded order (occurrence).
    by_slot: HashMap<Slot, Vec<usize>>,
    /// By (role, case, attempt, turn), the indexes into `loaded` (to name
    /// the first difference of a miss).
    by_turn: HashMap<(ModelRole, String, u32, u32), Vec<usize>>,
    /// The identity each role was recorded with (the first one read).
    identities: BTreeMap<ModelRole, Value>,
    /// The exchanges recorded by this run.
    fresh: Vec<Exchange>,
    /// How many requests were answered from the cassette.
    replayed: usize,
}

/// A folder of recorded model exchanges (module documentation).
#[derive(Debug)]
pub struct Cassette {
    dir: PathBuf,
    mode: CassetteMode,
    state: Mutex<State>,
}

/// What a run did with its cassette.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CassetteReport {
    /// Requests answered from the cassette.
    pub replayed: usize,
    /// Requests sent to a model and recorded.
    pub recorded: usize,
}

impl Cassette {
    /// Opens the cassette in `dir` (a folder that does not exist yet is an
    /// empty cassette) and reads every `*.jsonl` file in it.
    pub fn open(dir: &Path, mode: CassetteMode) -> Result<Arc<Self>, CassetteError> {
        Ok(Self::holding(dir, mode, file::read_dir(dir)?))
    }

    /// A cassette of `exchanges` kept in memory (a simulation's, as the
    /// API stores it): [`Cassette::save`] is not for it; what it records is
    /// taken with [`Cassette::take_recorded`].
    pub fn of_exchanges(mode: CassetteMode, exchanges: Vec<Exchange>) -> Arc<Self> {
        Self::holding(Path::new(""), mode, exchanges)
    }

    fn holding(dir: &Path, mode: CassetteMode, loaded: Vec<Exchange>) -> Arc<Self> {
        let mut state = State::default();
        for (i, exchange) in loaded.iter().enumerate() {
            state
                .by_slot
                .entry((
                    exchange.role,
                    exchange.case.clone(),
                    exchange.attempt,
                    exchange.key.clone(),
                ))
                .or_default()
                .push(i);
            state
                .by_turn
                .entry((
                    exchange.role,
                    exchange.case.clone(),
                    exchange.attempt,
                    exchange.turn,
                ))
                .or_default()
                .push(i);
            if !state.identities.contains_key(&exchange.role)
                && let Ok(request) = serde_json::from_str::<Value>(exchange.request.get())
            {
                state
                    .identities
                    .insert(exchange.role, request["model"].clone());
            }
        }
        for indexes in state.by_slot.values_mut() {
            indexes.sort_by_key(|&i| loaded[i].occurrence);
        }
        state.loaded = loaded;
        Arc::new(Self {
            dir: dir.to_owned(),
            mode,
            state: Mutex::new(state),
        })
    }

    /// `models` through this cassette: in `replay` every role is answered
    /// from it, configured or not (a configured endpoint only names the
    /// model the requests are keyed by); in `record` and `auto` each
    /// configured model is recorded, and in `auto` a role with recordings
    /// but no endpoint is replayed.
    pub fn tape(self: &Arc<Self>, mut models: crate::Models) -> crate::Models {
        let taped = |role: ModelRole, live: Option<Arc<dyn ChatModel>>| {
            let wrap = live.is_some()
                || self.mode == CassetteMode::Replay
                || (self.mode == CassetteMode::Auto && self.has_role(role));
            wrap.then(|| self.model(role, live))
        };
        models.model = taped(ModelRole::Agent, models.model.take());
        models.judge = taped(ModelRole::Judge, models.judge.take());
        models.user = taped(ModelRole::User, models.user.take());
        models
    }

    /// The exchanges attempt `attempt` of `case` recorded, taken out of the
    /// cassette (a worker stores them as each attempt ends).
    pub fn take_recorded(&self, case: &str, attempt: u32) -> Vec<Exchange> {
        let mut state = self.lock();
        let (taken, kept) = std::mem::take(&mut state.fresh)
            .into_iter()
            .partition(|e| e.case == case && e.attempt == attempt);
        state.fresh = kept;
        taken
    }

    /// Adds `exchanges` as if this run had recorded them (what workers
    /// recorded for a submitted simulation, merged into its folder).
    pub fn absorb(&self, exchanges: Vec<Exchange>) {
        self.lock().fresh.extend(exchanges);
    }

    /// Every exchange the cassette holds once this run's recordings are in,
    /// in file order: the recorded ones, and those read that a `record`
    /// did not replace (in `auto`, all of them).
    pub fn held(&self) -> Vec<Exchange> {
        let state = self.lock();
        let recorded: std::collections::BTreeSet<&str> =
            state.fresh.iter().map(|e| e.case.as_str()).collect();
        let mut held: Vec<Exchange> = state
            .loaded
            .iter()
            .filter(|e| self.mode != CassetteMode::Record || !recorded.contains(e.case.as_str()))
            .chain(state.fresh.iter())
            .cloned()
            .collect();
        held.sort_by(|a, b| file::order(a).cmp(&file::order(b)));
        held
    }

    /// Its mode.
    pub fn mode(&self) -> CassetteMode {
        self.mode
    }

    /// The exchanges read from the folder.
    pub fn exchanges(&self) -> usize {
        self.lock().loaded.len()
    }

    /// Whether it holds an exchange of `role`.
    pub fn has_role(&self, role: ModelRole) -> bool {
        self.lock().identities.contains_key(&role)
    }

    /// The model name `role`'s exchanges were recorded with, if any.
    pub fn model_name(&self, role: ModelRole) -> Option<String> {
        self.lock()
            .identities
            .get(&role)
            .and_then(|identity| identity.get("model"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// `live` (the model that answers what the cassette cannot; none in
    /// replay, or when no endpoint is configured) as `role`, through this
    /// cassette.
    pub fn model(
        self: &Arc<Self>,
        role: ModelRole,
        live: Option<Arc<dyn ChatModel>>,
    ) -> Arc<dyn ChatModel> {
        Arc::new(taped::Taped::new(self.clone(), role, live))
    }

    /// Requests replayed and recorded so far.
    pub fn report(&self) -> CassetteReport {
        let state = self.lock();
        CassetteReport {
            replayed: state.replayed,
            recorded: state.fresh.len(),
        }
    }

    /// Writes what this run recorded: every case it recorded has its file
    /// rewritten with the exchanges it holds now (in `record` mode its
    /// earlier exchanges are dropped; in `auto` they are kept beside the new
    /// ones), one sorted line per exchange. A replay writes nothing; nor does
    /// a run that recorded nothing.
    pub fn save(&self) -> Result<CassetteReport, CassetteError> {
        let report = self.report();
        let state = self.lock();
        if self.mode == CassetteMode::Replay || state.fresh.is_empty() {
            return Ok(report);
        }
        let recorded: std::collections::BTreeSet<&str> =
            state.fresh.iter().map(|e| e.case.as_str()).collect();
        let files: std::collections::BTreeSet<String> =
            recorded.iter().map(|case| file_name(case)).collect();
        let mut by_file: BTreeMap<String, Vec<&Exchange>> = BTreeMap::new();
        let kept = state
            .loaded
            .iter()
            .filter(|e| self.mode == CassetteMode::Auto || !recorded.contains(e.case.as_str()));
        for exchange in kept.chain(state.fresh.iter()) {
            let name = file_name(&exchange.case);
            if files.contains(&name) {
                by_file.entry(name).or_default().push(exchange);
            }
        }
        file::write_files(&self.dir, by_file)?;
        Ok(report)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The canonical form of a request — what determines the answer: the
/// model's identity (its name and sampling parameters), the messages and
/// the tools — with every tool-call id written `call_1`, `call_2`, … in the
/// order the conversation first names it (ids are the model's or toolmock's
/// choice, not part of what is asked).
pub fn canonical_request(identity: &Value, request: ModelRequest<'_>) -> Value {
    let mut ids: HashMap<String, String> = HashMap::new();
    let mut messages = Vec::with_capacity(request.messages.len());
    for message in request.messages {
        let normalized = match message {
            Message::Assistant {
                content,
                tool_calls,
            } => Message::Assistant {
                content: content.clone(),
                tool_calls: renamed_calls(&mut ids, tool_calls),
            },
            // (Never sent to a model: the agent is not shown the user's own
            // calls, and the user model sees them as its assistant turns.)
            Message::User {
                content,
                stop,
                tool_calls,
            } => Message::User {
                content: content.clone(),
                stop: stop.clone(),
                tool_calls: renamed_calls(&mut ids, tool_calls),
            },
            Message::Tool {
                tool_call_id,
                content,
                actor,
            } => Message::Tool {
                tool_call_id: renamed(&mut ids, tool_call_id),
                content: content.clone(),
                actor: *actor,
            },
            other => other.clone(),
        };
        messages.push(serde_json::to_value(&normalized).unwrap_or(Value::Null));
    }
    json!({
        "model": identity,
        "messages": messages,
        "tools": serde_json::to_value(request.tools).unwrap_or(Value::Null),
    })
}

/// `id` as `call_N`, N its order of first appearance in `ids`.
fn renamed(ids: &mut HashMap<String, String>, id: &str) -> String {
    let next = ids.len() + 1;
    ids.entry(id.to_owned())
        .or_insert_with(|| format!("call_{next}"))
        .clone()
}

fn renamed_calls(
    ids: &mut HashMap<String, String>,
    calls: &[toolmock_simulation::ToolCallRequest],
) -> Vec<toolmock_simulation::ToolCallRequest> {
    calls
        .iter()
        .map(|c| toolmock_simulation::ToolCallRequest {
            id: renamed(ids, &c.id),
            name: c.name.clone(),
            arguments: c.arguments.clone(),
        })
        .collect()
}

/// The canonical JSON text of a value (RFC 8785: sorted keys, no white
/// space), or serde_json's text for one it refuses (an integer no double
/// holds: never in a request toolmock builds).
pub(crate) fn canonical_text(value: &Value) -> String {
    toolmock_contract::canonical_json(value)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .unwrap_or_else(|| value.to_string())
}

/// The key of a canonical request: the sha256 of its canonical text, in hex.
pub fn request_key(canonical_text: &str) -> String {
    hex::encode(Sha256::digest(canonical_text.as_bytes()))
}

#[cfg(test)]
mod tests;
