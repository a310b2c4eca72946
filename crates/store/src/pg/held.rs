//! An attempt's state as its row holds it, and the copies a store keeps of
//! the rows it last wrote, by attempt.
//!
//! A process that serves an attempt's calls (a worker its own attempts, the
//! API an external agent's) knows the row exactly after each write it
//! makes: the next call can be evaluated on that copy and written in one
//! statement that checks, in the database, that the row still has the
//! version the copy was taken at (and that the capability, the lease and
//! the fence still allow the write). A copy is only ever an optimisation:
//! whenever the version moved (a call through another process, or a
//! concurrent call of this one) the write is refused and the call is read
//! again and evaluated again under the row's lock.

use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use toolmock_evaluator::{Overlay, StateView};
use uuid::Uuid;

/// How many attempts' copies a store keeps. Past it the copies written
/// longest ago are dropped (their next call reads its row again): a
/// process serving more attempts at once than this loses only the
/// one-statement path, never a call.
pub(super) const MAX_COPIES: usize = 4096;

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

/// A copy of an attempt's state row: what it holds, at which version, and
/// under which fence epoch it was written (`None`: the store held no fence
/// of the attempt).
#[derive(Debug)]
pub(super) struct Copy {
    pub(super) epoch: Option<i64>,
    pub(super) version: i64,
    pub(super) held: Held,
}

/// A kept copy, with when it was kept (for the bound).
#[derive(Debug)]
struct Kept {
    /// The tenant it was written for: a call bound to another tenant never
    /// evaluates on it (its write would be refused anyway).
    tenant: Uuid,
    copy: Arc<Copy>,
    stamp: u64,
}

#[derive(Debug, Default)]
struct Inner {
    by_attempt: HashMap<Uuid, Kept>,
    stamp: u64,
}

/// The copies of a store and its clones, by attempt, at most
/// [`MAX_COPIES`].
#[derive(Debug, Default)]
pub(super) struct Copies(Mutex<Inner>);

impl Copies {
    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The copy of `attempt` written under `epoch`, shared: concurrent calls
    /// of one attempt all evaluate on it, and the row's version decides
    /// which of them writes (the others read the row again). A copy of
    /// another epoch is of a lease no longer held, and is dropped.
    pub(super) fn get(
        &self,
        (tenant, attempt): (Uuid, Uuid),
        epoch: Option<i64>,
    ) -> Option<Arc<Copy>> {
        let mut inner = self.inner();
        let kept = inner.by_attempt.get(&attempt)?;
        if kept.tenant != tenant {
            return None;
        }
        if kept.copy.epoch == epoch {
            return Some(kept.copy.clone());
        }
        inner.by_attempt.remove(&attempt);
        None
    }

    /// Keeps the row a call just wrote (or a claim read), unless a newer
    /// version of it is kept already (calls of one attempt finish in any
    /// order). Past [`MAX_COPIES`], the older half is dropped.
    pub(super) fn keep(&self, (tenant, attempt): (Uuid, Uuid), copy: Copy) {
        let mut inner = self.inner();
        inner.stamp += 1;
        let stamp = inner.stamp;
        if let Some(kept) = inner.by_attempt.get(&attempt)
            && kept.tenant == tenant
            && kept.copy.epoch == copy.epoch
            && kept.copy.version >= copy.version
        {
            return;
        }
        let copy = Arc::new(copy);
        inner.by_attempt.insert(
            attempt,
            Kept {
                tenant,
                copy,
                stamp,
            },
        );
        if inner.by_attempt.len() > MAX_COPIES {
            // Dropping half at once keeps this amortised O(1) per keep.
            let keep_from = stamp.saturating_sub((MAX_COPIES / 2) as u64);
            inner.by_attempt.retain(|_, kept| kept.stamp > keep_from);
        }
    }

    /// Forgets `attempt`'s copy at `version` (its write was refused: the
    /// row moved, or the attempt can no longer be written); a newer copy
    /// another call kept meanwhile stays.
    pub(super) fn forget_version(&self, attempt: Uuid, version: i64) {
        let mut inner = self.inner();
        if inner
            .by_attempt
            .get(&attempt)
            .is_some_and(|kept| kept.copy.version <= version)
        {
            inner.by_attempt.remove(&attempt);
        }
    }

    /// Forgets `attempt`'s copy (its fence is let go or replaced, or it
    /// finished).
    pub(super) fn forget(&self, attempt: Uuid) {
        self.inner().by_attempt.remove(&attempt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(version: i64) -> Copy {
        Copy {
            epoch: None,
            version,
            held: Held::Whole(Map::new()),
        }
    }

    #[test]
    fn a_newer_copy_is_never_replaced_by_an_older_one() {
        let copies = Copies::default();
        let key = (Uuid::nil(), Uuid::from_u128(1));
        copies.keep(key, copy(5));
        copies.keep(key, copy(4));
        assert_eq!(copies.get(key, None).map(|c| c.version), Some(5));
        copies.forget_version(key.1, 4);
        assert_eq!(copies.get(key, None).map(|c| c.version), Some(5));
        copies.forget_version(key.1, 5);
        assert!(copies.get(key, None).is_none());
    }

    #[test]
    fn a_copy_of_another_epoch_is_dropped() {
        let copies = Copies::default();
        let key = (Uuid::nil(), Uuid::from_u128(1));
        copies.keep(key, copy(1));
        assert!(copies.get(key, Some(3)).is_none());
        assert!(copies.get(key, None).is_none(), "dropped");
    }

    #[test]
    fn a_copy_is_found_only_under_its_tenant() {
        let copies = Copies::default();
        let key = (Uuid::nil(), Uuid::from_u128(1));
        copies.keep(key, copy(1));
        assert!(copies.get((Uuid::from_u128(9), key.1), None).is_none());
        assert!(copies.get(key, None).is_some(), "still kept for its own");
    }

    #[test]
    fn the_copies_are_bounded_and_the_latest_stay() {
        let copies = Copies::default();
        let total = MAX_COPIES * 3 + 7;
        for n in 0..total {
            copies.keep((Uuid::nil(), Uuid::from_u128(n as u128)), copy(1));
        }
        let kept = copies.0.lock().unwrap().by_attempt.len();
        assert!(kept <= MAX_COPIES, "{kept}");
        let last = (Uuid::nil(), Uuid::from_u128((total - 1) as u128));
        assert!(copies.get(last, None).is_some(), "the latest is kept");
        assert!(
            copies
                .get((Uuid::nil(), Uuid::from_u128(0)), None)
                .is_none(),
            "the oldest is dropped"
        );
    }
}
