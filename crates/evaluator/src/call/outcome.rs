//! A call (its input, pre-call state and variant) and what a successful
//! call answers: the result, or a domain error, and the state updates.

use crate::domain::answer::DomainError;
use serde::Serialize;
use serde_json::{Map, Value};

/// One call: its input, the pre-call state and an optional variant name.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The call's arguments (an object for every real tool call).
    pub input: &'a Value,
    /// The pre-call state.
    pub state: &'a Map<String, Value>,
    /// The variant to use; `None` means the definition's `default_variant`.
    pub variant: Option<&'a str>,
}

/// What a successful call answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome<'d> {
    /// The variant used.
    pub variant: &'d str,
    /// The index of the matched rule in the variant's `rules`, or `None`.
    pub rule: Option<usize>,
    /// The rendered result: exactly what the agent receives; `null` when
    /// the call answered a domain error.
    pub result: Value,
    /// (Version 2) the domain error the call answered instead of a result:
    /// not a failed call, and it changes no state (`state_updates` is empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<DomainError>,
    /// The rendered `set_state`: each top-level key replaces the pre-call state's.
    #[serde(skip)]
    pub state_updates: Vec<(&'d str, Value)>,
    /// The simulated delay.
    pub delay_ms: u32,
}

impl Outcome<'_> {
    /// Applies the state updates in place, turning the pre-call state into the post-call state.
    pub fn apply_to(&self, state: &mut Map<String, Value>) {
        for (key, value) in &self.state_updates {
            state.insert((*key).to_owned(), value.clone());
        }
    }

    /// Moves the updates into `state` (no clone).
    pub fn commit_to(self, state: &mut Map<String, Value>) -> Value {
        commit(self.state_updates, state);
        self.result
    }

    /// The post-call state, computed from the pre-call state.
    pub fn post_state(&self, pre: &Map<String, Value>) -> Map<String, Value> {
        let mut state = pre.clone();
        self.apply_to(&mut state);
        state
    }
}

/// What a successful call answers when its result was written as JSON text
/// by [`evaluate_json`](crate::evaluate_json) instead of being built as a [`Value`].
#[derive(Debug, Clone, PartialEq)]
pub struct JsonOutcome<'d> {
    /// The variant used.
    pub variant: &'d str,
    /// The index of the matched rule in the variant's `rules`, or `None`.
    pub rule: Option<usize>,
    /// (Version 2) the domain error the call answered: then nothing was
    /// written as the result, and `state_updates` is empty.
    pub error: Option<DomainError>,
    /// The rendered `set_state`: each top-level key replaces the pre-call state's.
    pub state_updates: Vec<(&'d str, Value)>,
    /// The simulated delay.
    pub delay_ms: u32,
}

impl JsonOutcome<'_> {
    /// Moves the updates into `state`, turning the pre-call state into the post-call state.
    pub fn commit_to(self, state: &mut Map<String, Value>) {
        commit(self.state_updates, state);
    }
}

/// Moves each update in, allocating a key only for a key the state lacks.
pub(crate) fn commit(updates: Vec<(&str, Value)>, state: &mut Map<String, Value>) {
    for (key, value) in updates {
        match state.get_mut(key) {
            Some(slot) => *slot = value,
            None => {
                state.insert(key.to_owned(), value);
            }
        }
    }
}
