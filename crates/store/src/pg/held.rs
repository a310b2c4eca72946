//! An attempt's state as its row holds it, and the copies a worker's store
//! keeps of the attempts it holds a fence for.
//!
//! A worker runs its attempts' calls itself, one after another, so after
//! each write it knows the row exactly: the next call can be evaluated on
//! that copy and written in one statement that checks, in the database,
//! that the row still has the version the copy was taken at (and that the
//! capability, the lease and the fence still allow the write). A copy is
//! only ever an optimisation: whenever the version moved or anything failed
//! the copy is dropped and the call takes the locked path, which reads the
//! row under its lock.

use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use toolmock_evaluator::{Overlay, StateView};
use uuid::Uuid;

/// An attempt's state as its row holds it.
#[derive(Debug, Clone)]
pub(super) enum Held {
    /// The whole state (an attempt without shared fixtures).
    Whole(Map<String, Value>),
    /// The simulation's shared base and the attempt's own writes.
    Layered {
        base: Arc<Map<String, Value>>,
        overlay: Overlay,
    },
}

impl Held {
    /// The view a call's step evaluates on.
    pub(super) fn view(&self) -> StateView<'_> {
        match self {
            Held::Whole(state) => StateView::plain(state),
            Held::Layered { base, overlay } => StateView::layered(base, overlay),
        }
    }
}

/// A copy of a held attempt's state row: what it holds, at which version,
/// taken under which fence epoch.
#[derive(Debug)]
pub(super) struct Copy {
    pub(super) epoch: i64,
    pub(super) version: i64,
    pub(super) held: Held,
}

/// The copies of a store and its clones, by attempt.
#[derive(Debug, Default)]
pub(super) struct Copies(Mutex<HashMap<Uuid, Copy>>);

impl Copies {
    /// Takes the copy of `attempt` taken under `epoch` (a copy of another
    /// epoch is of a lease no longer held, and is dropped), leaving none: a call
    /// that fails puts nothing back, so the next one reads the row again.
    pub(super) fn take(&self, attempt: Uuid, epoch: i64) -> Option<Copy> {
        let mut copies = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let copy = copies.remove(&attempt)?;
        (copy.epoch == epoch).then_some(copy)
    }

    /// Keeps the row a call just wrote.
    pub(super) fn keep(&self, attempt: Uuid, copy: Copy) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(attempt, copy);
    }

    /// Forgets `attempt`'s copy (its fence is let go or replaced).
    pub(super) fn forget(&self, attempt: Uuid) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&attempt);
    }
}
