//! Guarantees only the database can give: append-only tables enforced by
//! triggers, dense revision numbers, hashed capabilities, harness errors that
//! turn finished attempts, and the typed mapping of the database's errors.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: a failed expectation must panic

use serde_json::json;
use sqlx::PgPool;
use toolmock_runtime::ToolCall;
use toolmock_runtime::backend::{Catalog, EvidenceSink};
use toolmock_runtime::dispatcher::StartedSimulation;
use toolmock_runtime::error::{HarnessCode, StoreError};
use toolmock_runtime::model::{AttemptOutcome, Verdict};
use toolmock_runtime::testkit::{Rig, ledger_simulation};
use toolmock_store::{PgStore, SqlState, map_sqlx_error};

/// A simulation with one call of evidence, one tool input error and one
/// harness error, made as the application role (the rig's pool; close it at
/// the end of the test so that the test database can be dropped).
async fn one_call(pool: &PgPool) -> (Rig<PgStore>, StartedSimulation) {
    let rig = Rig::new(PgStore::new(app_pool(pool).await));
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
    let store = rig.dispatcher.backend();
    store
        .record_simulation_document(tenant, started.id, "ledger", &json!({"cases": []}), "tests")
        .await
        .unwrap();
    // A judgement is written by the finish (the attempt must stay running
    // here): the application role inserts its row directly.
    sqlx::query(
        "INSERT INTO attempt_judgements (tenant_id, attempt_id, unmet) VALUES ($1, $2, '[]')",
    )
    .bind(tenant.as_uuid())
    .bind(attempt.id.as_uuid())
    .execute(store.pool())
    .await
    .unwrap();
    store
        .record_message(
            tenant,
            attempt.id,
            0,
            &json!({"role": "system", "content": "You keep notes."}),
            chrono::Utc::now(),
        )
        .await
        .unwrap();
    store
        .record_simulation_cassette(tenant, started.id, "record", &[CASSETTE_LINE.to_owned()])
        .await
        .unwrap();
    store
        .record_cassette_exchanges(tenant, started.id, attempt.id, &[CASSETTE_LINE.to_owned()])
        .await
        .unwrap();
    (rig, started)
}

/// A cassette line as the store keeps it (the store does not read it).
const CASSETTE_LINE: &str = r#"{"answer":{"content":"ok"},"attempt":1,"case":"c"}"#;

/// A simulation's cassette reads back as given and recorded, and never for
/// another tenant.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_simulations_cassette_reads_back_for_its_tenant_only(pool: PgPool) {
    let (rig, started) = one_call(&pool).await;
    let store = rig.dispatcher.backend();
    let tenant: uuid::Uuid = sqlx::query_scalar("SELECT tenant_id FROM simulations WHERE id = $1")
        .bind(started.id.as_uuid())
        .fetch_one(&pool)
        .await
        .unwrap();
    let stored = store
        .simulation_cassette(tenant.into(), started.id)
        .await
        .unwrap()
        .expect("the cassette");
    assert_eq!(stored.mode, "record");
    assert_eq!(stored.given, [CASSETTE_LINE]);
    assert_eq!(stored.recorded, [CASSETTE_LINE]);
    let other = store.create_tenant("other").await.unwrap();
    assert_eq!(
        store.simulation_cassette(other, started.id).await.unwrap(),
        None
    );
    // A mode the cassette format does not have is refused by the schema.
    let (_, second) = ledger_simulation(&rig, "acme", 1).await;
    assert!(
        store
            .record_simulation_cassette(tenant.into(), second.id, "rewind", &[])
            .await
            .is_err()
    );
    rig.dispatcher.backend().pool().close().await;
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
    let (rig, _) = one_call(&pool).await;
    for table in [
        "tool_mock_revisions",
        "evidence",
        "tool_input_errors",
        "harness_errors",
        "simulation_pins",
        "simulation_documents",
        "attempt_judgements",
        "calls_begun",
        "attempt_messages",
        "simulation_cassettes",
        "cassette_exchanges",
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
    rig.dispatcher.backend().pool().close().await;
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn revision_numbers_cannot_skip_or_repeat(pool: PgPool) {
    let (rig, _) = one_call(&pool).await;
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
    rig.dispatcher.backend().pool().close().await;
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn capabilities_are_stored_only_as_sha256(pool: PgPool) {
    let (rig, started) = one_call(&pool).await;
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
    rig.dispatcher.backend().pool().close().await;
}

/// The SQLSTATE of `sql` run on `pool` (which must fail).
async fn refused(pool: &PgPool, sql: &str, bind: Option<uuid::Uuid>) -> String {
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()));
    if let Some(id) = bind {
        query = query.bind(id);
    }
    let error = query
        .execute(pool)
        .await
        .expect_err(&format!("{sql} is refused"));
    sqlstate(&error).unwrap_or_else(|| panic!("{sql}: {error}"))
}

/// Even the owner, in raw SQL, cannot make an attempt with a harness error
/// pass: resetting the flag with the outcome is refused (the flag is derived
/// from the harness_errors rows), and resetting the flag alone does not stick.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn the_database_refuses_a_pass_with_a_harness_error(pool: PgPool) {
    let (rig, started) = one_call(&pool).await;
    let attempt = started.attempts[0].id.as_uuid();
    for sql in [
        "UPDATE attempts SET status = 'finished', outcome = 'passed' WHERE id = $1",
        "UPDATE attempts SET has_harness_error = false, status = 'finished', outcome = 'passed' \
         WHERE id = $1",
    ] {
        assert_eq!(refused(&pool, sql, Some(attempt)).await, "23514", "{sql}");
    }
    sqlx::query("UPDATE attempts SET has_harness_error = false WHERE id = $1")
        .bind(attempt)
        .execute(&pool)
        .await
        .unwrap();
    let flag: bool = sqlx::query_scalar("SELECT has_harness_error FROM attempts WHERE id = $1")
        .bind(attempt)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert!(flag, "the flag is derived from the harness_errors rows");
    let tenant: uuid::Uuid = sqlx::query_scalar("SELECT tenant_id FROM attempts WHERE id = $1")
        .bind(attempt)
        .fetch_one(&pool)
        .await
        .unwrap();
    let errors = rig
        .dispatcher
        .backend()
        .harness_errors(tenant.into(), started.attempts[0].id)
        .await
        .unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].code, HarnessCode::UnknownTool);
    assert_eq!(
        rig.dispatcher
            .finish_attempt(tenant.into(), started.attempts[0].id, Verdict::Passed)
            .await
            .unwrap(),
        AttemptOutcome::HarnessError
    );
    rig.dispatcher.backend().pool().close().await;
}

/// The application role, in raw SQL: not a superuser and owner of nothing,
/// so it cannot switch the triggers off (`session_replication_role`,
/// `ALTER TABLE … DISABLE TRIGGER`); it has no UPDATE, DELETE or TRUNCATE on
/// the append-only tables; and it cannot make an attempt with a harness
/// error pass.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn the_application_role_cannot_make_a_fault_pass(pool: PgPool) {
    let (rig, started) = one_call(&pool).await;
    let app = rig.dispatcher.backend().pool().clone();
    let attempt = started.attempts[0].id.as_uuid();
    let (superuser, owned): (bool, i64) = sqlx::query_as(
        "SELECT (SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user), \
                (SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tableowner = current_user)",
    )
    .fetch_one(&app)
    .await
    .unwrap();
    assert!(!superuser, "the application role is no superuser");
    assert_eq!(owned, 0, "the application role owns no table");

    let mut tx = app.begin().await.unwrap();
    let error = sqlx::query("SET LOCAL session_replication_role = replica")
        .execute(&mut *tx)
        .await
        .expect_err("only a superuser may switch the triggers off");
    assert_eq!(sqlstate(&error).as_deref(), Some("42501"), "{error}");
    drop(tx);

    for sql in [
        "ALTER TABLE attempts DISABLE TRIGGER attempts_derive_harness_error",
        "ALTER TABLE harness_errors DISABLE TRIGGER ALL",
    ] {
        assert_eq!(refused(&app, sql, None).await, "42501", "{sql}");
    }
    for table in [
        "tool_mock_revisions",
        "evidence",
        "tool_input_errors",
        "harness_errors",
        "simulation_pins",
        "simulation_documents",
        "attempt_judgements",
        "attempt_messages",
        "simulation_cassettes",
        "cassette_exchanges",
        "tool_verification_results",
    ] {
        for sql in [
            format!("UPDATE {table} SET tenant_id = tenant_id"),
            format!("DELETE FROM {table}"),
            format!("TRUNCATE {table}"),
        ] {
            assert_eq!(refused(&app, &sql, None).await, "42501", "{sql}");
        }
    }
    for sql in [
        "UPDATE attempts SET has_harness_error = false, status = 'finished', outcome = 'passed' \
         WHERE id = $1",
        "UPDATE attempts SET status = 'finished', outcome = 'failed' WHERE id = $1",
    ] {
        assert_eq!(refused(&app, sql, Some(attempt)).await, "23514", "{sql}");
    }
    let tenant: uuid::Uuid = sqlx::query_scalar("SELECT tenant_id FROM attempts WHERE id = $1")
        .bind(attempt)
        .fetch_one(&app)
        .await
        .unwrap();
    let outcome = rig
        .dispatcher
        .finish_attempt(tenant.into(), started.attempts[0].id, Verdict::Passed)
        .await;
    assert_eq!(outcome.unwrap(), AttemptOutcome::HarnessError);
    app.close().await;
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn evidence_versions_are_unique_per_attempt(pool: PgPool) {
    let (rig, _) = one_call(&pool).await;
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
    rig.dispatcher.backend().pool().close().await;
}

/// The tables the migrations create (docs/data-model.md lists each).
const TABLES: &[&str] = &[
    "agents",
    "attempt_capabilities",
    "attempt_judgements",
    "attempt_leases",
    "attempt_messages",
    "attempt_state",
    "attempts",
    "calls_begun",
    "cassette_exchanges",
    "evidence",
    "harness_errors",
    "model_usage",
    "operation_contracts",
    "simulation_budgets",
    "simulation_cassettes",
    "simulation_documents",
    "simulation_fixture_bases",
    "simulation_pins",
    "simulations",
    "tenant_budgets",
    "tenants",
    "test_cases",
    "tool_input_errors",
    "tool_mock_revisions",
    "tool_operations",
    "tool_verification_results",
    "tool_verification_settings",
    "tool_verifications",
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

/// The migration the seed below was written against: the schema the last
/// release left. Every migration added since must upgrade its rows intact.
const PREVIOUS_MIGRATION: i64 = 20261203140000;

const SEED_TOKEN: &str = "seed-capability-token";

/// Rows in every table as a release at [`PREVIOUS_MIGRATION`] wrote them, in
/// that schema's columns: a tenant, a library tool with one operation and
/// revision, an agent, a simulation with its pin and test case, two attempts
/// (one running with one call of evidence, a tool input error and its
/// capability; one finished `harness_error` with its harness error and its
/// judgement), and the simulation's document.
async fn seed_previous_schema(pool: &PgPool) -> (uuid::Uuid, uuid::Uuid) {
    use toolmock_runtime::testkit::{ledger_definition, ledger_operation};
    let contract = ledger_operation().effective_contract(None).unwrap();
    let contract_hash = contract.hash().unwrap();
    let definition = ledger_definition();
    let definition_hash = toolmock_contract::DefinitionHash::of(&definition).unwrap();
    let id = |n: u128| uuid::Uuid::from_u128(n);
    let (tenant, tool, operation, agent, simulation, case, running, finished) =
        (id(1), id(2), id(3), id(4), id(5), id(6), id(7), id(8));
    let statements: Vec<(&str, Vec<serde_json::Value>)> = vec![
        (
            "INSERT INTO tenants (id, name) VALUES ($1::uuid, 'seeded')",
            vec![json!(tenant)],
        ),
        (
            "INSERT INTO tools (tenant_id, id, name, kind) VALUES ($1::uuid, $2::uuid, 'ledger', 'custom')",
            vec![json!(tenant), json!(tool)],
        ),
        (
            "INSERT INTO tool_operations (tenant_id, id, tool_id, source, name, input_schema, \
                 output_schema, contract, contract_hash) \
             VALUES ($1::uuid, $2::uuid, $3::uuid, 'custom', 'append', $4::jsonb -> 'input_schema', \
                 $4::jsonb -> 'output_schema', $4::jsonb, $5::text)",
            vec![
                json!(tenant),
                json!(operation),
                json!(tool),
                serde_json::to_value(&contract).unwrap(),
                json!(contract_hash.as_str()),
            ],
        ),
        (
            "INSERT INTO tool_mock_revisions (tenant_id, tool_id, operation_id, revision, \
                 contract_hash, definition, definition_hash, author, provenance) \
             VALUES ($1::uuid, $2::uuid, $3::uuid, 1, $4::text, $5::jsonb, $6::text, 'seed', 'authored')",
            vec![
                json!(tenant),
                json!(tool),
                json!(operation),
                json!(contract_hash.as_str()),
                definition.clone(),
                json!(definition_hash.as_str()),
            ],
        ),
        (
            "INSERT INTO agents (tenant_id, id, name, spec) VALUES ($1::uuid, $2::uuid, 'agent', $3::jsonb)",
            vec![
                json!(tenant),
                json!(agent),
                json!({"tools": [{"type": "library", "tool": tool}], "workflows": []}),
            ],
        ),
        (
            "INSERT INTO simulations (tenant_id, id, agent_id, mode, allow_incomplete, created_at) \
             VALUES ($1::uuid, $2::uuid, $3::uuid, 'sandbox', false, now())",
            vec![json!(tenant), json!(simulation), json!(agent)],
        ),
        (
            "INSERT INTO simulation_pins (tenant_id, simulation_id, tool_name, operation_name, kind, \
                 tool_id, operation_id, revision, definition_hash, contract) \
             VALUES ($1::uuid, $2::uuid, 'ledger', 'append', 'library', $3::uuid, $4::uuid, 1, $5::text, $6::jsonb)",
            vec![
                json!(tenant),
                json!(simulation),
                json!(tool),
                json!(operation),
                json!(definition_hash.as_str()),
                serde_json::to_value(&contract).unwrap(),
            ],
        ),
        (
            "INSERT INTO test_cases (tenant_id, id, simulation_id, position, name) \
             VALUES ($1::uuid, $2::uuid, $3::uuid, 0, 'case')",
            vec![json!(tenant), json!(case), json!(simulation)],
        ),
        (
            "INSERT INTO attempts (tenant_id, id, simulation_id, test_case_id, number, lease_owner, \
                 lease_expires_at, created_at) \
             VALUES ($1::uuid, $2::uuid, $3::uuid, $4::uuid, 1, 'worker-1', now() + interval '1 hour', now()), \
                    ($1::uuid, $5::uuid, $3::uuid, $4::uuid, 2, 'worker-1', now() + interval '1 hour', now())",
            vec![
                json!(tenant),
                json!(running),
                json!(simulation),
                json!(case),
                json!(finished),
            ],
        ),
        (
            "INSERT INTO attempt_capabilities (token_hash, tenant_id, attempt_id, created_at) \
             VALUES (sha256(convert_to($1::text, 'UTF8')), $2::uuid, $3::uuid, now())",
            vec![json!(SEED_TOKEN), json!(tenant), json!(running)],
        ),
        (
            "INSERT INTO attempt_state (attempt_id, tenant_id, state, version, updated_at) \
             VALUES ($1::uuid, $2::uuid, '{\"last\": \"s1\"}', 1, now()), \
                    ($3::uuid, $2::uuid, '{\"last\": \"start\"}', 0, now())",
            vec![json!(running), json!(tenant), json!(finished)],
        ),
        (
            "INSERT INTO evidence (tenant_id, attempt_id, tool_name, operation_name, pin_kind, tool_id, \
                 operation_id, revision, definition_hash, executor, variant, arguments, result, \
                 state_before, state_after, state_version_before, state_version_after, delay_ms, \
                 started_at, duration_us) \
             VALUES ($1::uuid, $2::uuid, 'ledger', 'append', 'library', $3::uuid, $4::uuid, 1, $5::text, \
                 'mock', 'success', '{\"id\": \"s1\"}', '{\"previous\": \"start\", \"id\": \"s1\"}', \
                 '{\"last\": \"start\"}', '{\"last\": \"s1\"}', 0, 1, 0, now(), 10)",
            vec![
                json!(tenant),
                json!(running),
                json!(tool),
                json!(operation),
                json!(definition_hash.as_str()),
            ],
        ),
        (
            "INSERT INTO tool_input_errors (tenant_id, attempt_id, tool_name, operation_name, arguments, \
                 code, message, created_at) \
             VALUES ($1::uuid, $2::uuid, 'ledger', 'append', '{\"id\": 7}', 'invalid_arguments', 'seeded', now())",
            vec![json!(tenant), json!(running)],
        ),
        (
            "INSERT INTO harness_errors (tenant_id, attempt_id, code, message, created_at) \
             VALUES ($1::uuid, $2::uuid, 'unknown_tool', 'seeded', now())",
            vec![json!(tenant), json!(finished)],
        ),
        (
            "UPDATE attempts SET status = 'finished', outcome = 'harness_error', finished_at = now() \
             WHERE id = $1::uuid",
            vec![json!(finished)],
        ),
        (
            "INSERT INTO simulation_documents (tenant_id, simulation_id, name, document, started_by) \
             VALUES ($1::uuid, $2::uuid, 'seeded', '{\"simulation_version\": 1}', 'seed')",
            vec![json!(tenant), json!(simulation)],
        ),
        (
            "INSERT INTO attempt_judgements (tenant_id, attempt_id, unmet) \
             VALUES ($1::uuid, $2::uuid, '[]')",
            vec![json!(tenant), json!(finished)],
        ),
    ];
    for (sql, binds) in statements {
        let mut query = sqlx::query(sql);
        for bind in binds {
            query = match bind {
                serde_json::Value::String(text) => query.bind(text),
                other => query.bind(other),
            };
        }
        query
            .execute(pool)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    (tenant, running)
}

/// Every row of every table the database has now, as JSON, by table.
async fn every_row(pool: &PgPool) -> Vec<(String, Vec<serde_json::Value>)> {
    let mut all = Vec::new();
    for table in tables(pool).await {
        let rows: Vec<serde_json::Value> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT to_jsonb(t) FROM {table} t"
        )))
        .fetch_all(pool)
        .await
        .unwrap();
        all.push((table, rows));
    }
    all
}

/// A database migrated by the previous release, with rows in every table,
/// upgrades to the current schema with each row intact (every old column
/// keeps its value), and the upgraded data works: the running attempt takes a
/// call (as the application role) and continues its state, and the finished
/// one stays `harness_error`.
#[sqlx::test(migrations = false)]
async fn an_older_database_upgrades_with_its_rows_intact(pool: PgPool) {
    let versions: Vec<i64> = toolmock_store::MIGRATOR.iter().map(|m| m.version).collect();
    assert!(
        versions.len() >= 2,
        "there is a previous migration to upgrade from"
    );
    // The seed is written against the last released schema; every
    // migration after it must carry its rows over.
    assert!(
        versions.contains(&PREVIOUS_MIGRATION) && versions.last() != Some(&PREVIOUS_MIGRATION),
        "PREVIOUS_MIGRATION names a migration that newer ones follow"
    );
    toolmock_store::MIGRATOR
        .run_to(PREVIOUS_MIGRATION, &pool)
        .await
        .unwrap();
    let (tenant, running) = seed_previous_schema(&pool).await;
    let before = every_row(&pool).await;
    assert!(
        before.iter().all(|(_, rows)| !rows.is_empty()),
        "every table has rows"
    );

    toolmock_store::migrate(&pool).await.unwrap();
    for (table, rows) in &before {
        for row in rows {
            let kept: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "SELECT count(*) FROM {table} t WHERE to_jsonb(t) @> $1"
            )))
            .bind(row)
            .fetch_one(&pool)
            .await
            .unwrap();
            assert_eq!(kept, 1, "{table}: {row} is intact");
        }
    }

    let app = app_pool(&pool).await;
    let rig = Rig::new(PgStore::new(app.clone()));
    let tenant = toolmock_runtime::model::TenantId(tenant);
    let result = rig
        .dispatcher
        .call(
            tenant,
            &toolmock_runtime::model::Capability::from_token(SEED_TOKEN),
            &ToolCall::new("ledger", "append", json!({"id": "s2"})),
        )
        .await
        .unwrap();
    assert_eq!(result, json!({"previous": "s1", "id": "s2"}));
    use toolmock_runtime::backend::FixtureStore;
    let state = rig
        .dispatcher
        .backend()
        .state(tenant, toolmock_runtime::model::AttemptId(running))
        .await
        .unwrap();
    assert_eq!(state.version, 2);
    let finished: String = sqlx::query_scalar("SELECT outcome FROM attempts WHERE id = $1")
        .bind(uuid::Uuid::from_u128(8))
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(finished, "harness_error");
    app.close().await;
}

/// A pool on the same database connected as the application role.
async fn app_pool(pool: &PgPool) -> PgPool {
    let options = toolmock_store::as_app_role((*pool.connect_options()).clone());
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(4)
        .connect_with(options)
        .await
        .unwrap()
}

/// Evidence written when the real executor was stored as `external` reads
/// as `real` after the upgrade (migration 20261210100000), and from then on
/// the database refuses `external` as an executor: `external` is the name
/// of a driver (an agent outside toolmock), not of who answered a call.
#[sqlx::test(migrations = false)]
async fn a_real_call_stored_as_external_reads_as_real_after_the_upgrade(pool: PgPool) {
    use toolmock_runtime::model::{AttemptId, Executor, TenantId};
    toolmock_store::MIGRATOR
        .run_to(PREVIOUS_MIGRATION, &pool)
        .await
        .unwrap();
    let (tenant, _) = seed_previous_schema(&pool).await;
    let finished = uuid::Uuid::from_u128(8);
    // A real call of the finished attempt, as the old schema stored it.
    sqlx::query(
        "INSERT INTO evidence (tenant_id, attempt_id, tool_name, operation_name, pin_kind, \
             tool_id, operation_id, revision, definition_hash, executor, arguments, result, \
             state_before, state_after, state_version_before, state_version_after, delay_ms, \
             started_at, duration_us) \
         SELECT tenant_id, $1, tool_name, operation_name, pin_kind, tool_id, operation_id, \
             revision, definition_hash, 'external', arguments, result, state_before, \
             state_before, 0, 1, 0, started_at, duration_us FROM evidence",
    )
    .bind(finished)
    .execute(&pool)
    .await
    .unwrap();
    toolmock_store::migrate(&pool).await.unwrap();

    let executors: Vec<(uuid::Uuid, String)> =
        sqlx::query_as("SELECT attempt_id, executor FROM evidence ORDER BY attempt_id")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(
        executors,
        vec![
            (uuid::Uuid::from_u128(7), "mock".to_owned()),
            (finished, "real".to_owned())
        ]
    );
    let store = PgStore::new(pool.clone());
    let read = store
        .evidence(TenantId(tenant), AttemptId(finished))
        .await
        .unwrap();
    assert_eq!(read[0].executor, Executor::Real);
    // Still append-only after the rename, and `external` is refused.
    let update = sqlx::query("UPDATE evidence SET executor = 'mock'")
        .execute(&pool)
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&update).as_deref(), Some("TM001"));
    let external = sqlx::query(
        "INSERT INTO evidence (tenant_id, attempt_id, tool_name, operation_name, pin_kind, \
             tool_id, operation_id, revision, definition_hash, executor, arguments, result, \
             state_before, state_after, state_version_before, state_version_after, delay_ms, \
             started_at, duration_us) \
         SELECT tenant_id, attempt_id, tool_name, operation_name, pin_kind, tool_id, \
             operation_id, revision, definition_hash, $2, arguments, result, state_before, \
             state_after, 1, 2, 0, started_at, duration_us FROM evidence WHERE attempt_id = $1",
    );
    // On the running attempt: the finished one's evidence is sealed (TM011).
    let refused = external
        .bind(uuid::Uuid::from_u128(7))
        .bind("external")
        .execute(&pool)
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&refused).as_deref(), Some("23514"), "{refused}");
    let check: String = sqlx::query_scalar(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint \
         WHERE conname = 'evidence_executor_check'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(
        check.contains("'mock'") && check.contains("'real'") && !check.contains("external"),
        "{check}"
    );
}
