//! Shared fixtures on PostgreSQL (docs/data-model.md "Shared fixtures: base
//! and overlay"): the base is one `simulation_fixture_bases` row per
//! simulation, each attempt's `attempt_state` row holds only its overlay (so
//! it does not grow with the fixture), reads see the merged state, attempts
//! are isolated, and evidence records exactly what the in-memory backend
//! records.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed expectation must panic

use serde_json::{Map, Value, json};
use sqlx::PgPool;
use toolmock_runtime::MemoryStore;
use toolmock_runtime::backend::{Backend, EvidenceSink, FixtureStore};
use toolmock_runtime::model::Verdict;
use toolmock_runtime::testkit::Rig;
use toolmock_store::PgStore;
use toolmock_store::testkit::{app_pool, call, orders, start};

/// A 1 MB fixture and 50 attempts: one base row, and every attempt's state
/// row is a few bytes — before and after its writes — while its reads and
/// `state()` see the whole merged fixture.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn the_base_is_stored_once_and_attempt_rows_stay_small(pool: PgPool) {
    let rig = Rig::new(PgStore::new(app_pool(&pool).await));
    let (tenant, started) = start(&rig, "acme", orders(5000, 180), 50).await;
    let (bases, base_bytes): (i64, i64) = sqlx::query_as(
        "SELECT count(*), COALESCE(sum(octet_length(base::text)), 0)::int8 \
         FROM simulation_fixture_bases WHERE simulation_id = $1",
    )
    .bind(started.id.as_uuid())
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(bases, 1, "one base row for the simulation");
    assert!(
        base_bytes > 1_000_000,
        "the base holds the fixture: {base_bytes} bytes"
    );
    call(&rig, tenant, &started, 0, "cancel", "#W7").await;
    call(&rig, tenant, &started, 0, "note", "n1").await;
    call(&rig, tenant, &started, 1, "cancel", "#W8").await;
    let rows: Vec<(String, i32, i64)> = sqlx::query_as(
        "SELECT s.form, pg_column_size(s.state), octet_length(s.state::text)::int8 \
         FROM attempt_state s JOIN attempts a ON a.id = s.attempt_id \
         WHERE a.simulation_id = $1",
    )
    .bind(started.id.as_uuid())
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(rows.len(), 50);
    for (form, stored, text) in &rows {
        assert_eq!(form, "overlay");
        assert!(
            *stored < 256,
            "an attempt's row is its overlay: {stored} bytes"
        );
        assert!(*text < 256, "an attempt's row is its overlay: {text} bytes");
    }
    let stored: Value = sqlx::query_scalar("SELECT state FROM attempt_state WHERE attempt_id = $1")
        .bind(started.attempts[0].id.as_uuid())
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(
        stored,
        json!({"notes": {"=": {"last": "n1"}},
               "orders": {"+": {"#W7": {"+": {"status": {"=": "cancelled"}}}}}}),
        "the row holds the overlay's stored form"
    );
    // The merged state, for a's reads and for every reader of `state()`.
    assert_eq!(
        call(&rig, tenant, &started, 0, "get", "#W7").await["order"]["status"],
        json!("cancelled")
    );
    let a = rig
        .backend()
        .state(tenant, started.attempts[0].id)
        .await
        .unwrap();
    assert_eq!(a.version, 3);
    assert_eq!(a.state["orders"].as_object().map(Map::len), Some(5000));
    assert_eq!(a.state["orders"]["#W7"]["status"], json!("cancelled"));
    assert_eq!(a.state["orders"]["#W7"]["total"], json!(7));
    assert_eq!(a.state["orders"]["#W8"]["status"], json!("pending"));
    assert_eq!(a.state["notes"], json!({"last": "n1"}));
    // Isolation: b sees its own write and none of a's; c none at all.
    let b = rig
        .backend()
        .state(tenant, started.attempts[1].id)
        .await
        .unwrap();
    assert_eq!(b.state["orders"]["#W7"]["status"], json!("pending"));
    assert_eq!(b.state["orders"]["#W8"]["status"], json!("cancelled"));
    assert!(b.state.get("notes").is_none());
    let c = rig
        .backend()
        .state(tenant, started.attempts[2].id)
        .await
        .unwrap();
    assert_eq!(c.version, 0);
    assert_eq!(c.state["orders"]["#W8"]["status"], json!("pending"));
    // A process that never served the simulation reads the base once.
    let other = PgStore::new(rig.backend().pool().clone());
    assert_eq!(other.cached_fixture_bases(), 0);
    let again = other.state(tenant, started.attempts[0].id).await.unwrap();
    assert_eq!(again.state, a.state);
    assert_eq!(other.cached_fixture_bases(), 1);
    // Evidence is the overlay's changes, not the fixture.
    let evidence = rig
        .backend()
        .evidence(tenant, started.attempts[0].id)
        .await
        .unwrap();
    assert_eq!(evidence[0].state_before, Map::new());
    assert_eq!(
        Value::Object(evidence[0].state_after.clone()),
        json!({"orders": {"#W7": {"status": "cancelled"}}})
    );
    rig.backend().pool().close().await;
}

/// The judgement's one-statement read (`attempt_records`) gives each
/// attempt's state as its layers: every attempt's snapshot shares the one
/// cached base (never a copy of it, so a worker judging many attempts over a
/// big fixture holds it once), and the overlay holds exactly what the
/// attempt wrote; the merged view reads as `state()` does.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn judgement_reads_share_the_base_and_keep_only_the_writes(pool: PgPool) {
    let rig = Rig::new(PgStore::new(app_pool(&pool).await));
    let (tenant, started) = start(&rig, "acme", orders(2000, 180), 3).await;
    call(&rig, tenant, &started, 0, "cancel", "#W7").await;
    call(&rig, tenant, &started, 1, "note", "n1").await;
    let mut snapshots = Vec::new();
    for attempt in &started.attempts {
        let records = rig
            .backend()
            .attempt_records(tenant, attempt.id)
            .await
            .unwrap();
        snapshots.push(
            records
                .state
                .expect("PostgreSQL reads the state with the records"),
        );
    }
    for snapshot in &snapshots {
        assert!(snapshot.fixture_backed);
        assert!(
            std::sync::Arc::ptr_eq(&snapshot.base, &snapshots[0].base),
            "every attempt's judgement shares the one cached base"
        );
        assert_eq!(
            snapshot.base["orders"].as_object().map(Map::len),
            Some(2000)
        );
    }
    let writes = |n: usize| Value::Object(snapshots[n].overlay.changes());
    assert_eq!(
        writes(0),
        json!({"orders": {"#W7": {"status": "cancelled"}}})
    );
    assert_eq!(writes(1), json!({"notes": {"last": "n1"}}));
    assert!(snapshots[2].overlay.changes().is_empty());
    let whole = rig
        .backend()
        .state(tenant, started.attempts[0].id)
        .await
        .unwrap();
    assert_eq!(snapshots[0].whole(), whole.state);
    assert_eq!(snapshots[0].version, whole.version);
    rig.backend().pool().close().await;
}

/// A simulation without fixtures keeps whole states in its rows, as before,
/// and writes no base row.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn without_fixtures_rows_hold_whole_states(pool: PgPool) {
    let rig = Rig::new(PgStore::new(app_pool(&pool).await));
    let (tenant, started) = start(&rig, "acme", Map::new(), 2).await;
    call(&rig, tenant, &started, 0, "note", "n1").await;
    let bases: i64 = sqlx::query_scalar("SELECT count(*) FROM simulation_fixture_bases")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(bases, 0);
    let rows: Vec<(String, Value)> =
        sqlx::query_as("SELECT form, state FROM attempt_state WHERE attempt_id = $1")
            .bind(started.attempts[0].id.as_uuid())
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(
        rows,
        vec![("state".to_owned(), json!({"notes": {"last": "n1"}}))]
    );
    let evidence = rig
        .backend()
        .evidence(tenant, started.attempts[0].id)
        .await
        .unwrap();
    assert_eq!(
        Value::Object(evidence[0].state_after.clone()),
        json!({"notes": {"last": "n1"}})
    );
    rig.backend().pool().close().await;
}

/// What a run records, to compare backends: each call's answer and
/// evidence states, and each attempt's final merged state and version.
async fn record<B: Backend>(rig: &Rig<B>) -> Value {
    let (tenant, started) = start(rig, "acme", orders(20, 10), 2).await;
    let mut answers = Vec::new();
    for (attempt, op, id) in [
        (0, "cancel", "#W1"),
        (0, "get", "#W1"),
        (1, "get", "#W1"),
        (0, "note", "x"),
        (1, "cancel", "#W2"),
        (0, "cancel", "#W2"),
        (0, "note", "y"),
        (1, "get", "#W2"),
    ] {
        answers.push(call(rig, tenant, &started, attempt, op, id).await);
    }
    let mut attempts = Vec::new();
    for attempt in &started.attempts {
        let state = rig.backend().state(tenant, attempt.id).await.unwrap();
        let evidence: Vec<Value> = rig
            .backend()
            .evidence(tenant, attempt.id)
            .await
            .unwrap()
            .into_iter()
            .map(|e| {
                json!({"before": e.state_before, "after": e.state_after,
                       "versions": [e.version_before, e.version_after]})
            })
            .collect();
        attempts.push(json!({"state": state.state, "version": state.version,
                             "evidence": evidence}));
    }
    json!({"answers": answers, "attempts": attempts})
}

/// The same calls on PostgreSQL and in memory answer, record and leave the
/// same: evidence of a fixture-backed attempt is the overlay's changes on
/// both backends.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn postgres_records_what_memory_records(pool: PgPool) {
    let pg = Rig::new(PgStore::new(app_pool(&pool).await));
    let on_pg = record(&pg).await;
    let on_memory = record(&Rig::new(MemoryStore::new())).await;
    assert_eq!(on_pg, on_memory);
    assert_eq!(
        on_pg["attempts"][0]["evidence"][3]["after"],
        json!({"orders": {"#W1": {"status": "cancelled"}, "#W2": {"status": "cancelled"}},
               "notes": {"last": "x"}})
    );
    pg.backend().pool().close().await;
}

/// Concurrent calls on one fixture-backed attempt are serialized by its row
/// lock as before: 8 tasks × 10 nested writes to distinct orders leave all
/// 80 in the overlay, versions 1…80 with no gap, and another attempt clean.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn concurrent_nested_writes_to_one_overlay_all_land(pool: PgPool) {
    let rig = std::sync::Arc::new(Rig::new(PgStore::new(app_pool(&pool).await)));
    let (tenant, started) = start(&rig, "acme", orders(100, 10), 2).await;
    let mut tasks = Vec::new();
    for task in 0..8 {
        let (rig, started) = (rig.clone(), started.clone());
        tasks.push(tokio::spawn(async move {
            for n in 0..10 {
                let order = format!("#W{}", task * 10 + n);
                call(&rig, tenant, &started, 0, "cancel", &order).await;
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let a = rig
        .backend()
        .state(tenant, started.attempts[0].id)
        .await
        .unwrap();
    assert_eq!(a.version, 80);
    let orders = a.state["orders"].as_object().unwrap();
    let cancelled = orders
        .values()
        .filter(|o| o["status"] == "cancelled")
        .count();
    assert_eq!((orders.len(), cancelled), (100, 80));
    let mut versions: Vec<u64> = rig
        .backend()
        .evidence(tenant, started.attempts[0].id)
        .await
        .unwrap()
        .iter()
        .map(|e| e.version_after)
        .collect();
    versions.sort_unstable();
    assert_eq!(versions, (1..=80).collect::<Vec<u64>>());
    let b = rig
        .backend()
        .state(tenant, started.attempts[1].id)
        .await
        .unwrap();
    assert_eq!(b.version, 0);
    assert!(
        b.state["orders"]
            .as_object()
            .unwrap()
            .values()
            .all(|o| o["status"] == "pending")
    );
    rig.backend().pool().close().await;
}

/// A finished fixture-backed attempt's overlay row is sealed like a whole
/// state row (issue 32, item 7): as the application role, forging its
/// overlay is refused (TM011) and the merged final state stands.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_finished_attempts_overlay_is_sealed(pool: PgPool) {
    let app = app_pool(&pool).await;
    let rig = Rig::new(PgStore::new(app.clone()));
    let (tenant, started) = start(&rig, "acme", orders(3, 8), 2).await;
    call(&rig, tenant, &started, 0, "cancel", "#W1").await;
    let attempt = started.attempts[0].id;
    rig.dispatcher
        .finish_attempt(tenant, attempt, Verdict::Passed)
        .await
        .unwrap();
    let forged = json!({"orders": {"+": {"#W1": {"+": {"status": {"=": "refunded"}}}}}});
    let error = sqlx::query("UPDATE attempt_state SET state = $2 WHERE attempt_id = $1")
        .bind(attempt.as_uuid())
        .bind(&forged)
        .execute(&app)
        .await
        .expect_err("a finished attempt's overlay is sealed");
    let code = error.as_database_error().and_then(|e| e.code());
    assert_eq!(code.as_deref(), Some("TM011"), "{error}");
    let state = rig.backend().state(tenant, attempt).await.unwrap();
    assert_eq!(state.state["orders"]["#W1"]["status"], json!("cancelled"));
    // The running attempt's overlay is still the application's to write.
    sqlx::query("UPDATE attempt_state SET state = $2 WHERE attempt_id = $1")
        .bind(started.attempts[1].id.as_uuid())
        .bind(&forged)
        .execute(&app)
        .await
        .unwrap();
    app.close().await;
}
