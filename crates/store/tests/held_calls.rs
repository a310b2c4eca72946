//! Calls of an attempt the store holds a fence for (a worker's own), and of
//! one it serves without (an external agent's): after
//! its first call the store keeps a copy of the attempt's state row and the
//! next call is written in one statement that checks the capability, the
//! lease and the fence, and only writes when the row is still at the copy's
//! version; the call's begin mark is written with its evidence. These tests
//! hold that this path refuses what the locked path refuses, falls back when
//! someone else wrote the row, and records what the in-memory backend
//! records.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed expectation must panic

use serde_json::{Map, Value, json};
use sqlx::PgPool;
use std::time::Duration;
use toolmock_runtime::backend::{Backend, EvidenceSink, FixtureStore};
use toolmock_runtime::dispatcher::{StartedAttempt, StartedSimulation};
use toolmock_runtime::error::{DispatchError, HarnessCode, StoreError};
use toolmock_runtime::model::{AttemptId, AttemptOutcome, InlineTool, TenantId, Verdict};
use toolmock_runtime::testkit::Rig;
use toolmock_runtime::{Dispatcher, MemoryStore, ToolCall};
use toolmock_store::testkit::{app_pool, counted_app_pool, op, start_tool};
use toolmock_store::{CALL_STATEMENTS_IN_FLIGHT, Fence, PgStore};

const OWNER: &str = "worker-1";

/// `add` replaces the last note and answers the previous one; `get` reads it.
fn counter() -> InlineTool {
    InlineTool {
        name: "notes".into(),
        operations: vec![
            op(
                "add",
                json!({
                    "schema_version": 2, "default_variant": "ok", "initial_state": {"last": "start"},
                    "variants": {"ok": {"result": {"previous": {"$state": ["last"]}},
                        "set_state": [{"path": ["last"], "value": {"$input": "text"}}]}},
                    "examples": [{"variant": "ok", "input": {"text": "a"},
                                  "state": {"last": "z"}, "expected": {"previous": "z"}}]
                }),
            ),
            op(
                "get",
                json!({
                    "schema_version": 2, "default_variant": "ok", "initial_state": {"last": "start"},
                    "variants": {"ok": {"result": {"last": {"$state": ["last"]}}}},
                    "examples": [{"variant": "ok", "input": {},
                                  "state": {"last": "z"}, "expected": {"last": "z"}}]
                }),
            ),
        ],
    }
}

/// Starts a sandbox simulation of one attempt, over a shared fixture when
/// `shared` (an overlay row) or none (a whole-state row).
async fn start<B: Backend>(rig: &Rig<B>, shared: bool) -> (TenantId, StartedSimulation) {
    let fixture = shared.then(|| Map::from_iter([("shelf".to_owned(), json!({"a": 1}))]));
    start_tool(rig, "acme", counter(), fixture, 1, OWNER).await
}

/// A PostgreSQL rig whose store holds the fence of the started attempt, as
/// a worker's does after its claim.
async fn held(pool: &PgPool, shared: bool) -> (Rig<PgStore>, PgStore, TenantId, StartedSimulation) {
    let store = PgStore::new(app_pool(pool).await);
    let rig = Rig::new(store.clone());
    let (tenant, started) = start(&rig, shared).await;
    let attempt = started.attempts[0].id;
    let epoch: i64 = sqlx::query_scalar("SELECT lease_epoch FROM attempts WHERE id = $1")
        .bind(attempt.as_uuid())
        .fetch_one(pool)
        .await
        .unwrap();
    store.hold(
        attempt,
        Fence {
            owner: OWNER.into(),
            epoch,
        },
    );
    (rig, store, tenant, started)
}

async fn add<B: Backend>(
    dispatcher: &Dispatcher<B>,
    tenant: TenantId,
    started: &StartedSimulation,
    text: &str,
) -> Result<Value, DispatchError> {
    dispatcher
        .call(
            tenant,
            &started.attempts[0].capability,
            &ToolCall::new("notes", "add", json!({ "text": text })),
        )
        .await
}

async fn count(pool: &PgPool, table: &str, attempt: AttemptId) -> i64 {
    let sql = match table {
        "evidence" => "SELECT count(*) FROM evidence WHERE attempt_id = $1",
        "tool_input_errors" => "SELECT count(*) FROM tool_input_errors WHERE attempt_id = $1",
        "harness_errors" => "SELECT count(*) FROM harness_errors WHERE attempt_id = $1",
        // The marks: committed on their own, or carried by evidence.
        _ => {
            "SELECT (SELECT count(*) FROM calls_begun WHERE attempt_id = $1) \
                  + (SELECT count(*) FROM evidence WHERE attempt_id = $1 AND begin_mark)"
        }
    };
    sqlx::query_scalar(sql)
        .bind(attempt.as_uuid())
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Marks begun, and records (evidence, tool input and harness errors).
async fn ledger(pool: &PgPool, attempt: AttemptId) -> (i64, i64) {
    let mut records = 0;
    for table in ["evidence", "tool_input_errors", "harness_errors"] {
        records += count(pool, table, attempt).await;
    }
    (count(pool, "calls_begun", attempt).await, records)
}

/// The next call of the (one) attempt of `started`, after two written,
/// is refused and writes nothing: still two evidence rows, version 2.
async fn refused_and_unwritten(
    rig: &Rig<PgStore>,
    pool: &PgPool,
    tenant: TenantId,
    started: &StartedSimulation,
    text: &str,
) {
    let attempt = started.attempts[0].id;
    let refused = add(&rig.dispatcher, tenant, started, text).await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(count(pool, "evidence", attempt).await, 2);
    let state = rig.backend().state(tenant, attempt).await.unwrap();
    assert_eq!(state.version, 2);
}

/// What a call's evidence records, without its times.
fn recorded(evidence: &toolmock_runtime::model::EvidenceRecord) -> Value {
    json!({
        "tool": evidence.tool, "operation": evidence.operation,
        "arguments": evidence.arguments, "result": evidence.result,
        "before": evidence.state_before, "after": evidence.state_after,
        "versions": [evidence.version_before, evidence.version_after],
    })
}

/// Five calls of a held attempt (the first on the locked path, the rest on
/// the store's copy) record exactly what the in-memory backend records, for
/// a whole-state row and for an overlay row, with one begin mark each.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_held_attempt_s_calls_record_what_memory_records(pool: PgPool) {
    for shared in [false, true] {
        let (rig, _store, tenant, started) = held(&pool, shared).await;
        let memory = Rig::new(MemoryStore::new());
        let (m_tenant, m_started) = start(&memory, shared).await;
        for text in ["a", "b", "c", "d", "e"] {
            let pg = add(&rig.dispatcher, tenant, &started, text).await.unwrap();
            let mem = add(&memory.dispatcher, m_tenant, &m_started, text)
                .await
                .unwrap();
            assert_eq!(pg, mem);
        }
        let attempt = started.attempts[0].id;
        let pg: Vec<Value> = rig
            .backend()
            .evidence(tenant, attempt)
            .await
            .unwrap()
            .iter()
            .map(recorded)
            .collect();
        let mem: Vec<Value> = memory
            .backend()
            .evidence(m_tenant, m_started.attempts[0].id)
            .await
            .unwrap()
            .iter()
            .map(recorded)
            .collect();
        assert_eq!(pg, mem, "shared fixture: {shared}");
        let state = rig.backend().state(tenant, attempt).await.unwrap();
        assert_eq!(state.version, 5);
        assert_eq!(state.state.get("last"), Some(&json!("e")));
        assert_eq!(ledger(&pool, attempt).await, (5, 5));
    }
}

/// Someone else writes the row between two calls (a call through a process
/// without the fence, as the API's): the copy is stale, the statement
/// writes nothing, and the call is evaluated again on the row under its
/// lock — it succeeds, and sees the other write.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_stale_copy_falls_back_to_the_locked_path(pool: PgPool) {
    for shared in [false, true] {
        let (rig, store, tenant, started) = held(&pool, shared).await;
        let attempt = started.attempts[0].id;
        add(&rig.dispatcher, tenant, &started, "mine")
            .await
            .unwrap();
        let other = Dispatcher::new(store.unfenced());
        let previous = add(&other, tenant, &started, "theirs").await.unwrap();
        assert_eq!(previous, json!({"previous": "mine"}));
        let previous = add(&rig.dispatcher, tenant, &started, "mine again")
            .await
            .unwrap();
        assert_eq!(previous, json!({"previous": "theirs"}), "shared: {shared}");
        let evidence = rig.backend().evidence(tenant, attempt).await.unwrap();
        let versions: Vec<(u64, u64)> = evidence
            .iter()
            .map(|e| (e.version_before, e.version_after))
            .collect();
        assert_eq!(versions, [(0, 1), (1, 2), (2, 3)]);
        // And the copy it keeps from that write is current again.
        let previous = add(&rig.dispatcher, tenant, &started, "last")
            .await
            .unwrap();
        assert_eq!(previous, json!({"previous": "mine again"}));
        assert_eq!(ledger(&pool, attempt).await, (4, 4));
    }
}

/// The lease moves on between two calls (the reaper's expiry, a release, a
/// new claim: the epoch changes): the next call on the copy writes nothing
/// — no state, no evidence, no mark — and is refused as fenced.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_fenced_out_call_on_the_copy_writes_nothing(pool: PgPool) {
    let (rig, store, tenant, started) = held(&pool, false).await;
    let attempt = started.attempts[0].id;
    add(&rig.dispatcher, tenant, &started, "a").await.unwrap();
    add(&rig.dispatcher, tenant, &started, "b").await.unwrap();
    sqlx::query("UPDATE attempts SET lease_epoch = lease_epoch + 1 WHERE id = $1")
        .bind(attempt.as_uuid())
        .execute(&pool)
        .await
        .unwrap();
    let refusals = store.fence_refusals();
    let refused = add(&rig.dispatcher, tenant, &started, "c").await;
    assert!(
        matches!(refused, Err(DispatchError::Store(StoreError::Fenced))),
        "{refused:?}"
    );
    assert!(store.fence_refusals() > refusals);
    assert_eq!(ledger(&pool, attempt).await, (2, 2));
    let state = rig.backend().state(tenant, attempt).await.unwrap();
    assert_eq!(
        (state.version, state.state.get("last")),
        (2, Some(&json!("b")))
    );
}

/// A call in flight whose begin mark was committed apart (as a real-tools
/// call's is), as it stands until it commits: the attempt's state row
/// written (and so locked) and the call's evidence inserted.
const CALL_IN_FLIGHT: [&str; 2] = [
    "UPDATE attempt_state SET version = version + 1, updated_at = now() WHERE attempt_id = $1",
    "INSERT INTO evidence (tenant_id, attempt_id, tool_name, operation_name, pin_kind, \
         tool_id, operation_id, revision, definition_hash, executor, arguments, result, \
         state_before, state_after, state_version_before, state_version_after, delay_ms, \
         started_at, duration_us) \
     SELECT tenant_id, attempt_id, tool_name, operation_name, pin_kind, tool_id, operation_id, \
         revision, definition_hash, executor, arguments, result, state_after, state_after, \
         state_version_after, state_version_after + 1, delay_ms, started_at, duration_us \
     FROM evidence WHERE attempt_id = $1 ORDER BY id DESC LIMIT 1",
];

/// The fence is on the state row, not on a lock of the attempt's row
/// (issue 37): a finish waits for a call holding the state row before it
/// counts, so the call's record is counted with its mark (the attempt
/// passes; counted before, the mark without its record would fail it as
/// `storage_failed`); a call on the copy after the finish writes nothing.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_finish_waits_for_the_call_in_flight_and_counts_it(pool: PgPool) {
    let (rig, _store, tenant, started) = held(&pool, false).await;
    let attempt = started.attempts[0].id;
    add(&rig.dispatcher, tenant, &started, "a").await.unwrap();
    sqlx::query(
        "INSERT INTO calls_begun (tenant_id, attempt_id, begun_at) \
         SELECT tenant_id, id, now() FROM attempts WHERE id = $1",
    )
    .bind(attempt.as_uuid())
    .execute(&pool)
    .await
    .unwrap();
    let mut in_flight = pool.begin().await.unwrap();
    for sql in CALL_IN_FLIGHT {
        sqlx::query(sql)
            .bind(attempt.as_uuid())
            .execute(&mut *in_flight)
            .await
            .unwrap();
    }
    let dispatcher = rig.dispatcher.clone();
    let finish = tokio::spawn(async move {
        dispatcher
            .finish_attempt(tenant, attempt, Verdict::Passed)
            .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !finish.is_finished(),
        "the finish waits for the call in flight"
    );
    in_flight.commit().await.unwrap();
    let outcome = finish.await.unwrap().unwrap();
    assert_eq!(outcome, AttemptOutcome::Passed);
    assert_eq!(
        ledger(&pool, attempt).await,
        (2, 2),
        "the call in flight is counted"
    );
    refused_and_unwritten(&rig, &pool, tenant, &started, "b").await;
}

/// A call whose statement began before a finish committed, and reached the
/// state row while the finish held it, finds the row's copy of the status
/// `finished` once the finish commits: it writes nothing and is refused as
/// `lease_expired`, like any call after the finish (not with a storage
/// error from the evidence's seal).
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_call_waiting_on_a_finish_writes_nothing(pool: PgPool) {
    for fenced in [true, false] {
        let (rig, tenant, started) = if fenced {
            let (rig, _store, tenant, started) = held(&pool, false).await;
            (rig, tenant, started)
        } else {
            let rig = Rig::new(PgStore::new(app_pool(&pool).await));
            let (tenant, started) = start(&rig, false).await;
            (rig, tenant, started)
        };
        let attempt = started.attempts[0].id;
        add(&rig.dispatcher, tenant, &started, "a").await.unwrap();
        let mut finishing = pool.begin().await.unwrap();
        sqlx::query(
            "UPDATE attempts SET status = 'finished', outcome = 'passed', finished_at = now() \
             WHERE id = $1",
        )
        .bind(attempt.as_uuid())
        .execute(&mut *finishing)
        .await
        .unwrap();
        let dispatcher = rig.dispatcher.clone();
        let call_started = started.clone();
        let call = tokio::spawn(async move { add(&dispatcher, tenant, &call_started, "b").await });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!call.is_finished(), "the call waits for the state row");
        finishing.commit().await.unwrap();
        match call.await.unwrap() {
            Err(DispatchError::Harness(fault)) => {
                assert_eq!(fault.code, HarnessCode::LeaseExpired, "fenced: {fenced}")
            }
            other => panic!("fenced: {fenced}: {other:?}"),
        }
        assert_eq!(count(&pool, "evidence", attempt).await, 1);
        let state = rig.backend().state(tenant, attempt).await.unwrap();
        assert_eq!(state.version, 1);
    }
}

/// A revoked capability: the call on the copy writes no state and no
/// evidence, and is recorded as `lease_expired`, with its begin mark.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_revoked_capability_on_the_copy_is_lease_expired(pool: PgPool) {
    let (rig, _store, tenant, started) = held(&pool, false).await;
    let attempt = started.attempts[0].id;
    add(&rig.dispatcher, tenant, &started, "a").await.unwrap();
    add(&rig.dispatcher, tenant, &started, "b").await.unwrap();
    sqlx::query("UPDATE attempt_capabilities SET revoked_at = now() WHERE attempt_id = $1")
        .bind(attempt.as_uuid())
        .execute(&pool)
        .await
        .unwrap();
    let refused = add(&rig.dispatcher, tenant, &started, "c").await;
    match refused {
        Err(DispatchError::Harness(fault)) => assert_eq!(fault.code, HarnessCode::LeaseExpired),
        other => panic!("{other:?}"),
    }
    assert_eq!(count(&pool, "evidence", attempt).await, 2);
    assert_eq!(ledger(&pool, attempt).await, (3, 3));
    let state = rig.backend().state(tenant, attempt).await.unwrap();
    assert_eq!(state.version, 2);
}

/// One clock for leases (issue 32, item 11): whether a held attempt's
/// lease is live is read on PostgreSQL's clock only. The dispatcher's clock
/// ten minutes past the lease refuses nothing (the call is answered, on the
/// copy and on the locked path); the lease over by PostgreSQL's clock
/// refuses the call whatever the dispatcher's clock says, and writes
/// nothing.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_held_lease_is_live_by_the_database_clock_only(pool: PgPool) {
    let (rig, _store, tenant, started) = held(&pool, false).await;
    let attempt = started.attempts[0].id;
    add(&rig.dispatcher, tenant, &started, "a").await.unwrap();
    rig.clock.advance(Duration::from_secs(601));
    add(&rig.dispatcher, tenant, &started, "b")
        .await
        .expect("the copy's write: live by the database's clock");
    assert_eq!(count(&pool, "evidence", attempt).await, 2);
    sqlx::query(
        "UPDATE attempts SET lease_expires_at = clock_timestamp() - interval '1 second' \
         WHERE id = $1",
    )
    .bind(attempt.as_uuid())
    .execute(&pool)
    .await
    .unwrap();
    // Over by PostgreSQL's clock: refused (fenced), nothing written.
    refused_and_unwritten(&rig, &pool, tenant, &started, "c").await;
}

/// A call whose step fails on the copy (here: input the contract refuses)
/// is judged again on the row under its lock, recorded as a tool input
/// error with its begin mark, and leaves the state as it was.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_refused_input_on_the_copy_is_recorded_with_its_mark(pool: PgPool) {
    let (rig, _store, tenant, started) = held(&pool, false).await;
    let attempt = started.attempts[0].id;
    add(&rig.dispatcher, tenant, &started, "a").await.unwrap();
    let refused = rig
        .dispatcher
        .call(
            tenant,
            &started.attempts[0].capability,
            &ToolCall::new("notes", "add", json!("not an object")),
        )
        .await;
    assert!(
        matches!(refused, Err(DispatchError::ToolInput(_))),
        "{refused:?}"
    );
    add(&rig.dispatcher, tenant, &started, "b").await.unwrap();
    assert_eq!(ledger(&pool, attempt).await, (3, 3));
    assert_eq!(count(&pool, "tool_input_errors", attempt).await, 1);
    let state = rig.backend().state(tenant, attempt).await.unwrap();
    assert_eq!(
        (state.version, state.state.get("last")),
        (2, Some(&json!("b")))
    );
}

/// Attempts the store holds no fence for (an external agent's, through the
/// API) take the same path: the mark goes with the evidence, and from the
/// second call on the call is evaluated on the store's copy.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn an_unheld_attempt_s_calls_take_the_one_statement_path_too(pool: PgPool) {
    let store = PgStore::new(app_pool(&pool).await);
    let rig = Rig::new(store.clone());
    let (tenant, started) = start(&rig, false).await;
    let attempt = started.attempts[0].id;
    assert!(rig.backend().folds_begin_mark(attempt));
    add(&rig.dispatcher, tenant, &started, "a").await.unwrap();
    let behind = "UPDATE attempt_state SET state = jsonb_set(state, '{last}', '\"behind\"') \
                  WHERE attempt_id = $1";
    sqlx::query(behind)
        .bind(attempt.as_uuid())
        .execute(&pool)
        .await
        .unwrap();
    let previous = add(&rig.dispatcher, tenant, &started, "b").await.unwrap();
    assert_eq!(previous, json!({"previous": "a"}), "evaluated on the copy");
    assert_eq!(ledger(&pool, attempt).await, (2, 2));
}

/// The second call really runs on the store's copy: a change made behind
/// the store's back that keeps the row's version (no writer of toolmock
/// does that; every write moves the version) is not seen, while a change
/// that moves the version is.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn the_copy_is_used_while_the_version_stands(pool: PgPool) {
    let (rig, _store, tenant, started) = held(&pool, false).await;
    let attempt = started.attempts[0].id;
    add(&rig.dispatcher, tenant, &started, "a").await.unwrap();
    let behind = "UPDATE attempt_state SET state = jsonb_set(state, '{last}', '\"behind\"') \
                  WHERE attempt_id = $1";
    sqlx::query(behind)
        .bind(attempt.as_uuid())
        .execute(&pool)
        .await
        .unwrap();
    let previous = add(&rig.dispatcher, tenant, &started, "b").await.unwrap();
    assert_eq!(previous, json!({"previous": "a"}), "evaluated on the copy");
    sqlx::query(
        "UPDATE attempt_state SET state = jsonb_set(state, '{last}', '\"moved\"'), \
             version = version + 1 WHERE attempt_id = $1",
    )
    .bind(attempt.as_uuid())
    .execute(&pool)
    .await
    .unwrap();
    let previous = add(&rig.dispatcher, tenant, &started, "c").await.unwrap();
    assert_eq!(
        previous,
        json!({"previous": "moved"}),
        "read again under the lock"
    );
}

/// Every call after an attempt's first is one statement — one round trip
/// to PostgreSQL — whether this store holds the attempt's fence (a
/// worker's) or not (an external agent's, served by the API), for a
/// whole-state row and an overlay row; its first call reads the row under
/// its lock (and the simulation's pins).
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn each_call_after_the_first_is_one_round_trip(pool: PgPool) {
    for (fenced, shared) in [(false, false), (false, true), (true, false), (true, true)] {
        let (counted, trips) = counted_app_pool(&pool, 2).await;
        let store = PgStore::new(counted);
        let rig = Rig::new(store.clone());
        let fixture = shared.then(|| Map::from_iter([("shelf".to_owned(), json!({"a": 1}))]));
        let name = format!("acme-{fenced}-{shared}");
        let (tenant, started) = start_tool(&rig, &name, counter(), fixture, 1, OWNER).await;
        let attempt = started.attempts[0].id;
        if fenced {
            let epoch: i64 = sqlx::query_scalar("SELECT lease_epoch FROM attempts WHERE id = $1")
                .bind(attempt.as_uuid())
                .fetch_one(&pool)
                .await
                .unwrap();
            let owner = OWNER.into();
            store.hold(attempt, Fence { owner, epoch });
        }
        add(&rig.dispatcher, tenant, &started, "first")
            .await
            .unwrap();
        let before = trips.count();
        for n in 0..20 {
            add(&rig.dispatcher, tenant, &started, &format!("n{n}"))
                .await
                .unwrap();
        }
        assert_eq!(
            trips.count() - before,
            20,
            "fenced: {fenced}, shared: {shared}"
        );
        assert_eq!(ledger(&pool, attempt).await, (21, 21));
    }
}

/// Starts `attempts` attempts of one simulation on a counted pool and
/// makes each one's first call (the locked path), so that each has a copy.
async fn warmed(
    pool: &PgPool,
    attempts: u32,
) -> (
    Rig<PgStore>,
    TenantId,
    StartedSimulation,
    toolmock_store::testkit::RoundTrips,
) {
    let (counted, trips) = counted_app_pool(pool, 8).await;
    let rig = Rig::new(PgStore::new(counted));
    let (tenant, started) = start_tool(&rig, "acme", counter(), None, attempts, OWNER).await;
    for attempt in &started.attempts {
        let first = ToolCall::new("notes", "add", json!({"text": "first"}));
        rig.dispatcher
            .call(tenant, &attempt.capability, &first)
            .await
            .unwrap();
    }
    (rig, tenant, started, trips)
}

/// Holds `attempts`' state rows' locks in a transaction of its own until
/// the calls behind them have queued: the calls that arrive meanwhile are
/// the ones a store gathers.
async fn hold_rows(
    pool: &PgPool,
    attempts: &[StartedAttempt],
) -> sqlx::Transaction<'static, sqlx::Postgres> {
    let ids: Vec<uuid::Uuid> = attempts.iter().map(|a| a.id.as_uuid()).collect();
    let mut tx = pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM attempt_state WHERE attempt_id = ANY($1) FOR UPDATE")
        .bind(&ids)
        .execute(&mut *tx)
        .await
        .unwrap();
    tx
}

/// Answers of calls started by [`spawn_add`], each with its number.
type Calls = tokio::task::JoinSet<(usize, Result<Value, DispatchError>)>;

/// Starts `add` of `text` on `attempt` in a task of its own; its answer
/// comes back with `n`.
fn spawn_add(
    calls: &mut Calls,
    rig: &Rig<PgStore>,
    tenant: TenantId,
    (n, attempt): (usize, &StartedAttempt),
    text: &'static str,
) {
    let dispatcher = rig.dispatcher.clone();
    let capability = attempt.capability.clone();
    calls.spawn(async move {
        let call = ToolCall::new("notes", "add", json!({ "text": text }));
        (n, dispatcher.call(tenant, &capability, &call).await)
    });
}

/// Calls of many attempts that arrive while earlier statements are in
/// flight go out together: 32 calls, each of another attempt, take far
/// fewer than 32 statements, and each is written and answered exactly as
/// alone (its own evidence, its attempt's next version).
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn calls_of_many_attempts_that_arrive_together_share_statements(pool: PgPool) {
    let (rig, tenant, started, trips) = warmed(&pool, 32).await;
    let before = trips.count();
    let blocker = hold_rows(&pool, &started.attempts).await;
    let mut calls = Calls::new();
    for attempt in started.attempts.iter().enumerate() {
        spawn_add(&mut calls, &rig, tenant, attempt, "second");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    blocker.rollback().await.unwrap();
    while let Some(answer) = calls.join_next().await {
        assert_eq!(answer.unwrap().1.unwrap(), json!({"previous": "first"}));
    }
    let statements = trips.count() - before;
    assert!(statements <= 12, "32 calls took {statements} statements");
    for attempt in &started.attempts {
        let versions: Vec<(i64, i64)> = sqlx::query_as(
            "SELECT state_version_before, state_version_after FROM evidence \
             WHERE attempt_id = $1 ORDER BY state_version_after",
        )
        .bind(attempt.id.as_uuid())
        .fetch_all(&pool)
        .await
        .unwrap();
        assert_eq!(versions, vec![(0, 1), (1, 2)]);
        assert_eq!(ledger(&pool, attempt.id).await, (2, 2));
    }
}

/// A statement of gathered calls that the database refuses rolls back
/// whole; each of its calls is then written again alone, so only the call
/// the database refuses fails, and every other call is written once.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_refused_statement_of_gathered_calls_is_written_again_call_by_call(pool: PgPool) {
    let (rig, tenant, started, _trips) = warmed(&pool, 16).await;
    sqlx::raw_sql(
        "CREATE FUNCTION refuse_one_call() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN IF NEW.arguments->>'text' = 'refused' THEN \
             RAISE EXCEPTION 'this call is refused'; END IF; RETURN NEW; END $$; \
         CREATE TRIGGER refuse_one_call BEFORE INSERT ON evidence \
             FOR EACH ROW EXECUTE FUNCTION refuse_one_call();",
    )
    .execute(&pool)
    .await
    .unwrap();
    let blocker = hold_rows(&pool, &started.attempts).await;
    let mut calls = Calls::new();
    let (refused, others) = started.attempts.split_last().unwrap();
    // One call at a time until every statement the store may have in
    // flight holds one, blocked on its row; the calls after them queue, and
    // go out together once the rows are let go.
    for attempt in others.iter().enumerate() {
        spawn_add(&mut calls, &rig, tenant, attempt, "kept");
        if attempt.0 < CALL_STATEMENTS_IN_FLIGHT {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let mut refused_call = Calls::new();
    spawn_add(
        &mut refused_call,
        &rig,
        tenant,
        (others.len(), refused),
        "refused",
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    blocker.rollback().await.unwrap();
    while let Some(answer) = calls.join_next().await {
        assert_eq!(answer.unwrap().1.unwrap(), json!({"previous": "first"}));
    }
    assert!(refused_call.join_next().await.unwrap().unwrap().1.is_err());
    for attempt in others {
        assert_eq!(count(&pool, "evidence", attempt.id).await, 2);
    }
    assert_eq!(count(&pool, "evidence", refused.id).await, 1);
}

/// Waits for a statement of gathered calls blocked on a row lock in this
/// test's database (tests run side by side, each in a database of its
/// own); its backend's process id.
async fn blocked_gathering(pool: &PgPool) -> i32 {
    for _ in 0..200 {
        let blocked: Option<i32> = sqlx::query_scalar(
            "SELECT pid FROM pg_stat_activity \
             WHERE datname = current_database() AND query LIKE 'WITH input AS%' \
               AND wait_event_type = 'Lock'",
        )
        .fetch_optional(pool)
        .await
        .unwrap();
        if let Some(pid) = blocked {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no statement of gathered calls was blocked");
}

/// Gathers the calls of all but the first of `started`'s attempts into one
/// statement blocked on the last one's row: the first call goes out alone
/// and waits on its row, the others gather behind it, then the first's row
/// is let go. The first call is answered before the blocked statement is
/// looked for: a backend just let go may still show its lock wait for a
/// moment, and must not be taken for the gathered statement's. The calls
/// after the first (numbered from 1), the last row's lock, and the blocked
/// statement's backend.
async fn gathered_behind_the_last_row(
    pool: &PgPool,
    rig: &Rig<PgStore>,
    tenant: TenantId,
    started: &StartedSimulation,
    text: &'static str,
) -> (Calls, sqlx::Transaction<'static, sqlx::Postgres>, i32) {
    let attempts = &started.attempts;
    let first_held = hold_rows(pool, &attempts[..1]).await;
    let last_held = hold_rows(pool, &attempts[attempts.len() - 1..]).await;
    let mut first = Calls::new();
    spawn_add(&mut first, rig, tenant, (0, &attempts[0]), text);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut calls = Calls::new();
    for attempt in attempts.iter().enumerate().skip(1) {
        spawn_add(&mut calls, rig, tenant, attempt, text);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    first_held.rollback().await.unwrap();
    let (_, answer) = first.join_next().await.unwrap().unwrap();
    assert_eq!(answer.unwrap(), json!({"previous": "first"}));
    let pid = blocked_gathering(pool).await;
    (calls, last_held, pid)
}

/// A statement of gathered calls whose connection is terminated mid-way
/// (the server answers with an error, so it rolled back) writes nothing;
/// each of its calls is written again alone on another connection, and is
/// answered and recorded exactly once.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_gathered_statement_whose_connection_dies_is_written_again_call_by_call(pool: PgPool) {
    let (rig, tenant, started, _trips) = warmed(&pool, 8).await;
    // The statement of the seven calls after the first, waiting on the
    // last one's row: its connection is terminated there, as an
    // administrator or a failing server would.
    let (mut calls, last_held, pid) =
        gathered_behind_the_last_row(&pool, &rig, tenant, &started, "again").await;
    let terminated: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
        .bind(pid)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert!(terminated);
    tokio::time::sleep(Duration::from_millis(200)).await;
    last_held.rollback().await.unwrap();
    while let Some(answer) = calls.join_next().await {
        assert_eq!(answer.unwrap().1.unwrap(), json!({"previous": "first"}));
    }
    for attempt in &started.attempts {
        assert_eq!(count(&pool, "evidence", attempt.id).await, 2);
        assert_eq!(count(&pool, "harness_errors", attempt.id).await, 0);
    }
}

/// A statement of gathered calls whose answer is lost on the way (the
/// network between the process and PostgreSQL fails after it was sent)
/// may have committed: each of its calls fails, as one call's would, and
/// none is written again — here the statement committed, once, so each of
/// its attempts has that call's evidence once.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_gathered_statement_whose_answer_is_lost_fails_its_calls_and_writes_none_twice(
    pool: PgPool,
) {
    let (rig, tenant, started, trips) = warmed(&pool, 8).await;
    // The seven others' statement, sent and waiting on the last one's row:
    // the network fails under it, then the row is let go and it commits.
    let (mut calls, last_held, _) =
        gathered_behind_the_last_row(&pool, &rig, tenant, &started, "lost").await;
    trips.sever();
    last_held.rollback().await.unwrap();
    while let Some(answer) = calls.join_next().await {
        let (n, answer) = answer.unwrap();
        assert!(answer.is_err(), "call {n}: {answer:?}");
    }
    for attempt in &started.attempts {
        assert_eq!(count(&pool, "evidence", attempt.id).await, 2);
    }
}
