//! Guarantees only the database can give: append-only tables enforced by
//! triggers, dense revision numbers, hashed capabilities, harness errors that
//! turn finished attempts, and the typed mapping of the database's errors.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: a failed expectation must panic

use serde_json::json;
use sqlx::PgPool;
use toolmock_runtime::ToolCall;
use toolmock_runtime::backend::EvidenceSink;
use toolmock_runtime::dispatcher::StartedSimulation;
use toolmock_runtime::error::{HarnessCode, StoreError};
use toolmock_runtime::testkit::{Rig, ledger_simulation};
use toolmock_store::{PgStore, SqlState, map_sqlx_error};

async fn one_call(pool: &PgPool) -> (Rig<PgStore>, StartedSimulation) {
    let rig = Rig::new(PgStore::new(pool.clone()));
    let (tenant, started) = ledger_simulation(&rig, "acme", 1).await;
    let attempt = &started.attempts[0];
    rig.dispatcher
        .call(
            tenant,
            &attempt.capability,
            &ToolCall::new("ledger", "append", json!({"id": "a"})),
        )
        .await
        .unwrap();
    // One row in each append-only table.
    let _ = rig
        .dispatcher
        .call(
            tenant,
            &attempt.capability,
            &ToolCall::new("ledger", "append", json!({})),
        )
        .await
        .unwrap_err();
    let _ = rig
        .dispatcher
        .call(
            tenant,
            &attempt.capability,
            &ToolCall::new("nope", "nope", json!({})),
        )
        .await
        .unwrap_err();
    (rig, started)
}

/// The SQLSTATE of a database error, if it is one.
fn sqlstate(error: &sqlx::Error) -> Option<String> {
    error
        .as_database_error()
        .and_then(|e| e.code())
        .map(|c| c.into_owned())
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn append_only_tables_reject_update_delete_truncate(pool: PgPool) {
    one_call(&pool).await;
    for table in [
        "tool_mock_revisions",
        "evidence",
        "tool_input_errors",
        "harness_errors",
        "simulation_pins",
    ] {
        let count: (i64,) =
            sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM {table}")))
                .fetch_one(&pool)
                .await
                .unwrap();
        assert!(count.0 >= 1, "{table} has a row to attack");
        for statement in [
            format!("UPDATE {table} SET tenant_id = tenant_id"),
            format!("DELETE FROM {table}"),
            format!("TRUNCATE {table} CASCADE"),
        ] {
            let error = sqlx::query(sqlx::AssertSqlSafe(statement.clone()))
                .execute(&pool)
                .await
                .expect_err("the append-only trigger rejects it");
            let code = sqlstate(&error);
            assert_eq!(
                code.as_deref(),
                Some(SqlState::AppendOnly.as_str()),
                "{statement}: {error}"
            );
            match map_sqlx_error(error) {
                StoreError::AppendOnly { table: t, message } => {
                    assert_eq!(t, table);
                    assert!(message.contains("append-only"), "{message}");
                }
                other => panic!("{statement}: expected AppendOnly, got {other:?}"),
            }
        }
        let after: (i64,) =
            sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM {table}")))
                .fetch_one(&pool)
                .await
                .unwrap();
        assert_eq!(after, count, "{table} is unchanged");
    }
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn revision_numbers_cannot_skip_or_repeat(pool: PgPool) {
    one_call(&pool).await;
    let (tenant, tool, operation): (uuid::Uuid, uuid::Uuid, uuid::Uuid) =
        sqlx::query_as("SELECT tenant_id, tool_id, operation_id FROM tool_mock_revisions")
            .fetch_one(&pool)
            .await
            .unwrap();
    for (revision, expected) in [(3, "TM002"), (1, "TM002")] {
        let error = sqlx::query(
            "INSERT INTO tool_mock_revisions (tenant_id, tool_id, operation_id, revision, \
                 contract_hash, definition, definition_hash, author, provenance) \
             VALUES ($1, $2, $3, $4, repeat('a', 64), '{}', repeat('b', 64), 'x', 'authored')",
        )
        .bind(tenant)
        .bind(tool)
        .bind(operation)
        .bind(revision)
        .execute(&pool)
        .await
        .expect_err("only latest + 1 is accepted");
        let code = sqlstate(&error);
        assert_eq!(
            code.as_deref(),
            Some(expected),
            "revision {revision}: {error}"
        );
    }
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn capabilities_are_stored_only_as_sha256(pool: PgPool) {
    let (_, started) = one_call(&pool).await;
    let token = started.attempts[0].capability.token().to_owned();
    let rows: Vec<(Vec<u8>,)> = sqlx::query_as("SELECT token_hash FROM attempt_capabilities")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].0.len(), 32);
    assert_eq!(
        &rows[0].0[..],
        started.attempts[0].capability.hash().as_bytes()
    );
    // The token appears nowhere in the database.
    let dump: (String,) = sqlx::query_as(
        "SELECT string_agg(t::text, ' ') FROM ( \
             SELECT row_to_json(c)::text AS t FROM attempt_capabilities c \
             UNION ALL SELECT row_to_json(a)::text FROM attempts a \
             UNION ALL SELECT row_to_json(e)::text FROM evidence e \
             UNION ALL SELECT row_to_json(h)::text FROM harness_errors h \
             UNION ALL SELECT row_to_json(i)::text FROM tool_input_errors i) s",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(!dump.0.contains(&token));
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn the_database_refuses_a_pass_with_a_harness_error(pool: PgPool) {
    let (rig, started) = one_call(&pool).await;
    let attempt = started.attempts[0].id;
    // The database itself refuses to let an attempt with a harness error pass.
    let error =
        sqlx::query("UPDATE attempts SET status = 'finished', outcome = 'passed' WHERE id = $1")
            .bind(attempt.as_uuid())
            .execute(&pool)
            .await
            .expect_err("the check constraint holds");
    let code = sqlstate(&error);
    assert_eq!(code.as_deref(), Some("23514"));
    let tenant: (uuid::Uuid,) = sqlx::query_as("SELECT tenant_id FROM attempts WHERE id = $1")
        .bind(attempt.as_uuid())
        .fetch_one(&pool)
        .await
        .unwrap();
    let errors = rig
        .dispatcher
        .backend()
        .harness_errors(tenant.0.into(), attempt)
        .await
        .unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].code, HarnessCode::UnknownTool);
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn evidence_versions_are_unique_per_attempt(pool: PgPool) {
    one_call(&pool).await;
    let error = sqlx::query(
        "INSERT INTO evidence (tenant_id, attempt_id, tool_name, operation_name, pin_kind, \
             definition_hash, executor, arguments, result, state_before, state_after, \
             state_version_before, state_version_after, delay_ms, started_at, duration_us) \
         SELECT tenant_id, attempt_id, tool_name, operation_name, pin_kind, definition_hash, \
             executor, arguments, result, state_before, state_after, state_version_before, \
             state_version_after, delay_ms, started_at, duration_us FROM evidence",
    )
    .execute(&pool)
    .await
    .expect_err("a second row for one state version");
    assert!(matches!(map_sqlx_error(error), StoreError::Conflict { .. }));
}

/// The tables the migrations create (docs/data-model.md lists each).
const TABLES: &[&str] = &[
    "agents",
    "attempt_capabilities",
    "attempt_state",
    "attempts",
    "evidence",
    "harness_errors",
    "operation_contracts",
    "simulation_pins",
    "simulations",
    "tenants",
    "test_cases",
    "tool_input_errors",
    "tool_mock_revisions",
    "tool_operations",
    "tools",
];

/// The tables of the `public` schema, sorted (sqlx's own bookkeeping excluded).
async fn tables(pool: &PgPool) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables \
         WHERE table_schema = 'public' AND table_name <> '_sqlx_migrations' ORDER BY 1",
    )
    .fetch_all(pool)
    .await
    .unwrap()
}

/// Every migration applies, in order, to a database that has nothing in it,
/// and leaves exactly the documented tables behind.
#[sqlx::test(migrations = false)]
async fn migrations_apply_to_an_empty_database(pool: PgPool) {
    assert!(tables(&pool).await.is_empty(), "the database starts empty");
    toolmock_store::migrate(&pool).await.unwrap();
    assert_eq!(tables(&pool).await, TABLES);
    let applied: Vec<(i64, bool)> =
        sqlx::query_as("SELECT version, success FROM _sqlx_migrations ORDER BY version")
            .fetch_all(&pool)
            .await
            .unwrap();
    let expected: Vec<(i64, bool)> = toolmock_store::MIGRATOR
        .iter()
        .map(|m| (m.version, true))
        .collect();
    assert_eq!(applied, expected, "every migration is recorded as applied");
}
