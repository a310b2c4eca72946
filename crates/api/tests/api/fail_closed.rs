//! `finish` fails closed: it honours the attempt's lease and capability, and
//! of concurrent finishes exactly one takes effect (the others get 409
//! `attempt_finished`).

use crate::common::*;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use std::time::Duration;
use toolmock_api::{ApiConfig, AppState, AuthConfig, router};

/// An inline `notes` tool and one case played by an external agent with no
/// expectation: a finish passes unless a harness error decides otherwise.
pub(crate) fn external_notes(attempts: u32) -> Value {
    json!({
        "simulation_version": 1,
        "name": "external notes",
        "attempts": attempts,
        "tools": [{"name": "notes", "from": "custom", "operations": [{
            "name": "add",
            "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            "output_schema": {"type": "object", "properties": {"saved": {"type": "string"}}, "required": ["saved"]}}],
            "definitions": {"add": {"schema_version": 1, "default_variant": "ok",
                "variants": {"ok": {"result": {"saved": {"$input": "text"}}}},
                "examples": [{"variant": "ok", "input": {"text": "a"}, "expected": {"saved": "a"}}]}}}],
        "agent": {"name": "scribe", "tools": ["notes"]},
        "cases": [{"name": "writes", "driver": {"type": "external"}}]
    })
}

async fn finish(app: &axum::Router, attempt: &Value) -> Reply {
    let path = format!("/api/attempts/{}/finish", attempt["id"].as_str().unwrap());
    send(
        app,
        Method::POST,
        &path,
        attempt["capability"].as_str(),
        None,
    )
    .await
}

async fn add_note(app: &axum::Router, attempt: &Value) -> Reply {
    let path = format!(
        "/api/attempts/{}/tool-calls",
        attempt["id"].as_str().unwrap()
    );
    let body = json!({"tool": "notes", "operation": "add", "arguments": {"text": "a"}});
    send(
        app,
        Method::POST,
        &path,
        attempt["capability"].as_str(),
        Some(&body),
    )
    .await
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_finish_after_the_lease_ends_the_attempt_as_harness_error(pool: PgPool) {
    let config = ApiConfig {
        attempt_lease: Duration::from_millis(700),
        ..ApiConfig::default()
    };
    let app = router(AppState::new(
        pool.clone(),
        AuthConfig::hs256(SECRET).unwrap(),
        config,
    ));
    let bearer = token("acme", &[MANAGE, RUN]);
    let started = start(&app, &bearer, &external_notes(2)).await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.json);
    let (timely, late) = (&started.json["attempts"][0], &started.json["attempts"][1]);
    for attempt in [timely, late] {
        assert_eq!(add_note(&app, attempt).await.status, StatusCode::OK);
    }
    let finished = finish(&app, timely).await;
    assert_eq!(finished.json["outcome"], "passed", "{}", finished.json);

    tokio::time::sleep(Duration::from_millis(900)).await;
    let finished = finish(&app, late).await;
    assert_eq!(finished.status, StatusCode::OK, "{}", finished.json);
    assert_eq!(
        finished.json["outcome"], "harness_error",
        "{}",
        finished.json
    );
    let read = send(
        &app,
        Method::GET,
        &format!("/api/attempts/{}", late["id"].as_str().unwrap()),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(read.json["outcome"], "harness_error", "{}", read.json);
    assert_eq!(read.json["harness_errors"][0]["code"], "lease_expired");
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_finish_with_a_revoked_capability_ends_the_attempt_as_harness_error(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE, RUN]);
    let started = start(&app, &bearer, &external_notes(1)).await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.json);
    let attempt = &started.json["attempts"][0];
    assert_eq!(add_note(&app, attempt).await.status, StatusCode::OK);
    let id: uuid::Uuid = attempt["id"].as_str().unwrap().parse().unwrap();
    sqlx::query("UPDATE attempt_capabilities SET revoked_at = now() WHERE attempt_id = $1")
        .bind(id)
        .execute(&pool)
        .await
        .unwrap();
    let finished = finish(&app, attempt).await;
    assert_eq!(
        finished.json["outcome"], "harness_error",
        "{}",
        finished.json
    );
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn of_concurrent_finishes_one_wins_and_the_others_get_409(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE, RUN]);
    let started = start(&app, &bearer, &external_notes(4)).await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.json);
    for attempt in started.json["attempts"].as_array().unwrap() {
        assert_eq!(add_note(&app, attempt).await.status, StatusCode::OK);
        let mut finishes = tokio::task::JoinSet::new();
        for _ in 0..8 {
            let (app, attempt) = (app.clone(), attempt.clone());
            finishes.spawn(async move { finish(&app, &attempt).await });
        }
        let mut statuses = Vec::new();
        while let Some(reply) = finishes.join_next().await {
            let reply = reply.unwrap();
            if reply.status == StatusCode::CONFLICT {
                assert_eq!(reply.code(), "attempt_finished", "{}", reply.json);
            } else {
                assert_eq!(reply.status, StatusCode::OK, "{}", reply.json);
                assert_eq!(reply.json["outcome"], "passed", "{}", reply.json);
            }
            statuses.push(reply.status);
        }
        let won = statuses.iter().filter(|s| **s == StatusCode::OK).count();
        assert_eq!(won, 1, "{statuses:?}");
    }
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_start_past_its_limits_is_refused_with_start_too_large(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE, RUN]);
    let blob = json!({"blob": "x".repeat(90_000)});
    let mut document = external_notes(100_000);
    document["tools"][0]["definitions"]["add"]["initial_state"] = blob.clone();
    let refused = start(&app, &bearer, &document).await;
    assert_eq!(
        (refused.status, refused.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "start_too_large"),
        "{}",
        refused.json
    );
    assert_eq!(refused.json["error"]["details"]["limit"], "attempts");
    assert_eq!(refused.json["error"]["details"]["maximum"], 10_000);
    let attempts: i64 = sqlx::query_scalar("SELECT count(*) FROM attempts")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(attempts, 0, "nothing was written");

    let mut document = external_notes(1000);
    document["tools"][0]["definitions"]["add"]["initial_state"] = blob;
    let refused = start(&app, &bearer, &document).await;
    assert_eq!(refused.code(), "start_too_large", "{}", refused.json);
    assert_eq!(
        refused.json["error"]["details"]["limit"],
        "start_state_bytes"
    );
}

/// Ten starts at once hold at most `concurrent_starts` (2) of the pool's
/// connections: while another session keeps every start from writing its
/// attempts (a lock on the table), just two wait inside PostgreSQL holding a
/// connection, the others wait their turn without one, and a listing
/// answers at once from the connections left. Then every start succeeds.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn large_starts_do_not_starve_other_requests(pool: PgPool) {
    use sqlx::Connection;
    let config = ApiConfig::default();
    let concurrent = config.concurrent_starts;
    let app = app_with(&pool, config);
    let bearer = token("acme", &[MANAGE, RUN]);
    create_calendar(&app, &bearer).await;
    let mut locker = sqlx::PgConnection::connect_with(&pool.connect_options())
        .await
        .unwrap();
    let mut lock = locker.begin().await.unwrap();
    sqlx::query("LOCK TABLE attempts IN EXCLUSIVE MODE")
        .execute(&mut *lock)
        .await
        .unwrap();
    let mut starts = tokio::task::JoinSet::new();
    for _ in 0..10 {
        let (app, bearer) = (app.clone(), bearer.clone());
        starts.spawn(async move { start(&app, &bearer, &external_notes(1000)).await });
    }
    // Every start that holds a connection reaches the lock and waits there
    // (within 30 s: on a loaded machine a start of 1,000 attempts can take
    // seconds of CPU before its first write).
    let mut waiting = 0;
    for _ in 0..300 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        waiting = sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM pg_stat_activity \
              WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(&mut *lock)
        .await
        .unwrap();
        if waiting >= i64::try_from(concurrent).unwrap() {
            break;
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let waiting_now: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity \
          WHERE datname = current_database() AND wait_event_type = 'Lock'",
    )
    .fetch_one(&mut *lock)
    .await
    .unwrap();
    assert_eq!(
        (waiting, waiting_now),
        (2, 2),
        "starts holding a connection at once"
    );
    let mut slowest = Duration::ZERO;
    for _ in 0..5 {
        let began = std::time::Instant::now();
        let listed = send(&app, Method::GET, "/api/tools", Some(&bearer), None).await;
        assert_eq!(listed.status, StatusCode::OK, "{}", listed.json);
        slowest = slowest.max(began.elapsed());
    }
    assert!(
        slowest < Duration::from_secs(2),
        "GET /api/tools took {slowest:?} while the starts waited"
    );
    lock.rollback().await.unwrap();
    let mut started = 0;
    while let Some(reply) = starts.join_next().await {
        let reply = reply.unwrap();
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.json);
        started += 1;
    }
    assert_eq!(started, 10);
    locker.close().await.unwrap();
}
