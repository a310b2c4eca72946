//! The shared fixture bases a process has read, by simulation: each is
//! loaded from `simulation_fixture_bases` once and shared (`Arc`) by every
//! call and state read of that simulation's attempts in this process.
//!
//! A base row is append-only (written once by the start, never changed), so
//! a cached base is never stale and needs no invalidation. The cache is
//! bounded: past [`CAPACITY`] simulations the one read longest ago is
//! dropped (and read again if it is needed again), so a long-running API or
//! worker does not keep every simulation's fixtures it ever served.

use super::{Db, PgStore, db};
use crate::rows::corrupt;
use serde_json::{Map, Value};
use sqlx::types::Json;
use sqlx::{Executor, Postgres};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use uuid::Uuid;

/// How many simulations' bases one process keeps.
const CAPACITY: usize = 64;

type Key = (Uuid, Uuid);

/// The cache: (tenant, simulation) → base.
#[derive(Debug, Default)]
pub(super) struct Bases {
    inner: Mutex<Cached>,
}

#[derive(Debug, Default)]
struct Cached {
    bases: HashMap<Key, Arc<Map<String, Value>>>,
    /// Keys in the order they were loaded: the front is dropped first.
    order: VecDeque<Key>,
}

impl Bases {
    fn get(&self, key: &Key) -> Option<Arc<Map<String, Value>>> {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .bases
            .get(key)
            .cloned()
    }

    /// Keeps `base` (or the one another task loaded meanwhile) and returns it.
    fn keep(&self, key: Key, base: Map<String, Value>) -> Arc<Map<String, Value>> {
        let mut cached = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(existing) = cached.bases.get(&key) {
            return existing.clone();
        }
        while cached.order.len() >= CAPACITY {
            if let Some(oldest) = cached.order.pop_front() {
                cached.bases.remove(&oldest);
            }
        }
        let base = Arc::new(base);
        cached.bases.insert(key, base.clone());
        cached.order.push_back(key);
        base
    }

    /// How many bases are kept (tests).
    pub(super) fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .bases
            .len()
    }
}

impl PgStore {
    /// The shared base of a fixture-backed simulation, from the cache or
    /// (once) from `simulation_fixture_bases` through `executor` — a call's
    /// own transaction, so a miss takes no second connection from the pool.
    pub(super) async fn fixture_base<'c, E>(
        &self,
        executor: E,
        tenant: Uuid,
        simulation: Uuid,
    ) -> Db<Arc<Map<String, Value>>>
    where
        E: Executor<'c, Database = Postgres>,
    {
        let key = (tenant, simulation);
        if let Some(base) = self.bases.get(&key) {
            return Ok(base);
        }
        let base: Option<Json<Map<String, Value>>> = db(sqlx::query_scalar(
            "SELECT base FROM simulation_fixture_bases WHERE tenant_id = $1 AND simulation_id = $2",
        )
        .bind(tenant)
        .bind(simulation)
        .fetch_optional(executor)
        .await)?;
        let Json(base) = base.ok_or_else(|| {
            corrupt(
                "fixture base",
                "an attempt's state row is an overlay but its simulation has no base row",
            )
        })?;
        Ok(self.bases.keep(key, base))
    }

    /// How many simulations' fixture bases this process keeps in memory.
    pub fn cached_fixture_bases(&self) -> usize {
        self.bases.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u128) -> Key {
        (Uuid::from_u128(1), Uuid::from_u128(n))
    }

    /// Past the capacity the base loaded longest ago is dropped; a second
    /// load of a kept base keeps the first one (the same `Arc`).
    #[test]
    fn the_cache_is_bounded_and_keeps_the_first_load() {
        let bases = Bases::default();
        let first = bases.keep(key(0), Map::new());
        let again = bases.keep(key(0), Map::new());
        assert!(Arc::ptr_eq(&first, &again));
        for n in 1..=CAPACITY as u128 {
            bases.keep(key(n), Map::new());
        }
        assert_eq!(bases.len(), CAPACITY);
        assert!(bases.get(&key(0)).is_none(), "the oldest is dropped");
        assert!(bases.get(&key(1)).is_some());
        assert!(bases.get(&key(CAPACITY as u128)).is_some());
    }
}
