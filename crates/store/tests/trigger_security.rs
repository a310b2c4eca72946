//! The schema's functions cannot be fooled by objects of the caller's
//! session, and a finished attempt is final — tried as the application role
//! (`toolmock_app`) with raw SQL, the way an attacker holding its connection
//! would.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: a failed expectation must panic

use serde_json::json;
use sqlx::{Connection, PgConnection, PgPool};
use toolmock_runtime::ToolCall;
use toolmock_runtime::model::{AttemptOutcome, Verdict};
use toolmock_runtime::testkit::{Rig, ledger_simulation};
use toolmock_store::PgStore;

/// One connection as the application role (the temporary tables below live
/// in its session).
async fn app_connection(pool: &PgPool) -> PgConnection {
    let options = toolmock_store::as_app_role((*pool.connect_options()).clone());
    PgConnection::connect_with(&options).await.unwrap()
}

fn sqlstate(error: &sqlx::Error) -> Option<String> {
    error
        .as_database_error()
        .and_then(|e| e.code())
        .map(|c| c.into_owned())
}

/// Two attempts of one simulation made as the application role: the first
/// with a recorded `unknown_tool` harness error, still running; the second
/// finished `passed`. Returns (tenant, first, second).
async fn attempts(pool: &PgPool) -> (uuid::Uuid, uuid::Uuid, uuid::Uuid) {
    let options = toolmock_store::as_app_role((*pool.connect_options()).clone());
    let app = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .connect_with(options)
        .await
        .unwrap();
    let rig = Rig::new(PgStore::new(app.clone()));
    let (tenant, started) = ledger_simulation(&rig, "acme", 2).await;
    let (faulty, clean) = (&started.attempts[0], &started.attempts[1]);
    let error = rig
        .dispatcher
        .call(
            tenant,
            &faulty.capability,
            &ToolCall::new("nope", "nope", json!({})),
        )
        .await
        .unwrap_err();
    assert_eq!(error.code(), "unknown_tool");
    rig.dispatcher
        .call(
            tenant,
            &clean.capability,
            &ToolCall::new("ledger", "append", json!({"id": "a"})),
        )
        .await
        .unwrap();
    assert_eq!(
        rig.dispatcher
            .finish_attempt(tenant, clean.id, Verdict::Passed)
            .await
            .unwrap(),
        AttemptOutcome::Passed
    );
    app.close().await;
    (tenant.as_uuid(), faulty.id.as_uuid(), clean.id.as_uuid())
}

async fn outcome(conn: &mut PgConnection, attempt: uuid::Uuid) -> (String, Option<String>, bool) {
    sqlx::query_as("SELECT status, outcome, has_harness_error FROM attempts WHERE id = $1")
        .bind(attempt)
        .fetch_one(conn)
        .await
        .unwrap()
}

/// The attack of issue 19: a temporary `harness_errors` table comes first in
/// the session's search path, so a trigger naming the table unqualified read
/// the empty copy and let the attempt pass.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_temporary_table_cannot_shadow_the_harness_errors(pool: PgPool) {
    let (_, faulty, _) = attempts(&pool).await;
    let mut conn = app_connection(&pool).await;
    sqlx::query("CREATE TEMP TABLE harness_errors (tenant_id uuid, attempt_id uuid)")
        .execute(&mut conn)
        .await
        .unwrap();
    sqlx::query("CREATE TEMP TABLE attempts (id uuid)")
        .execute(&mut conn)
        .await
        .unwrap();
    for sql in [
        "UPDATE public.attempts SET status = 'finished', outcome = 'passed', \
             finished_at = now() WHERE id = $1",
        "UPDATE public.attempts SET has_harness_error = false, status = 'finished', \
             outcome = 'passed', finished_at = now() WHERE id = $1",
    ] {
        let error = sqlx::query(sql)
            .bind(faulty)
            .execute(&mut conn)
            .await
            .expect_err("a pass with a harness error is refused");
        assert_eq!(sqlstate(&error).as_deref(), Some("23514"), "{sql}: {error}");
    }
    sqlx::query("DISCARD TEMP")
        .execute(&mut conn)
        .await
        .unwrap();
    let (status, outcome, flagged) = outcome(&mut conn, faulty).await;
    assert_eq!((status.as_str(), outcome, flagged), ("running", None, true));
    conn.close().await.unwrap();
}

/// A finished attempt cannot be moved back to running, have its outcome
/// cleared or traded for another, as the application role or as the owner.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_finished_attempt_is_final(pool: PgPool) {
    let (_, _, clean) = attempts(&pool).await;
    let mut conn = app_connection(&pool).await;
    for sql in [
        "UPDATE attempts SET status = 'running', outcome = NULL WHERE id = $1",
        "UPDATE attempts SET status = 'running', outcome = NULL, finished_at = NULL WHERE id = $1",
        "UPDATE attempts SET outcome = 'failed' WHERE id = $1",
        "UPDATE attempts SET finished_at = now() + interval '1 day' WHERE id = $1",
    ] {
        for (who, result) in [
            (
                "toolmock_app",
                sqlx::query(sql).bind(clean).execute(&mut conn).await,
            ),
            ("owner", sqlx::query(sql).bind(clean).execute(&pool).await),
        ] {
            let error = result.expect_err(sql);
            assert_eq!(
                sqlstate(&error).as_deref(),
                Some("TM010"),
                "{who}: {sql}: {error}"
            );
        }
    }
    assert_eq!(
        outcome(&mut conn, clean).await,
        ("finished".into(), Some("passed".into()), false)
    );
    conn.close().await.unwrap();
}

/// The harness-error flag says whether the attempt has a harness_errors
/// row, whatever an update writes into it: cleared on the attempt with one,
/// set on the attempt without, it is derived again (the guard that runs only
/// when an update writes a different flag).
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn the_harness_error_flag_cannot_be_written_by_hand(pool: PgPool) {
    let (_, faulty, clean) = attempts(&pool).await;
    let mut conn = app_connection(&pool).await;
    for (attempt, written, expected) in [
        (faulty, false, ("running".into(), None, true)),
        (
            clean,
            true,
            ("finished".into(), Some("passed".into()), false),
        ),
    ] {
        sqlx::query("UPDATE attempts SET has_harness_error = $2 WHERE id = $1")
            .bind(attempt)
            .bind(written)
            .execute(&mut conn)
            .await
            .unwrap();
        assert_eq!(outcome(&mut conn, attempt).await, expected, "{written}");
    }
    conn.close().await.unwrap();
}

/// A finished attempt is sealed (issue 32, items 7 and 8): as the
/// application role, its state row cannot be rewritten, and nothing can be
/// added to its conversation, evidence or tool input errors (TM011) — while
/// the same writes to a running attempt still go through.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_finished_attempt_is_sealed(pool: PgPool) {
    let (tenant, running, finished) = attempts(&pool).await;
    let mut conn = app_connection(&pool).await;
    let writes = [
        "UPDATE attempt_state SET state = '{\"forged\": true}' WHERE attempt_id = $2 AND tenant_id = $1",
        "UPDATE attempt_state SET version = version + 1 WHERE attempt_id = $2 AND tenant_id = $1",
        "INSERT INTO attempt_messages (tenant_id, attempt_id, position, message, at) \
         VALUES ($1, $2, 1000, '{\"role\": \"assistant\", \"content\": \"forged\"}', now())",
        "INSERT INTO tool_input_errors (tenant_id, attempt_id, tool_name, operation_name, \
             arguments, code, message, created_at) \
         VALUES ($1, $2, 'ledger', 'append', '{}', 'schema_violation', 'forged', now())",
        // A copy of the attempt's last evidence, one state version later.
        "INSERT INTO evidence (tenant_id, attempt_id, tool_name, operation_name, pin_kind, \
             tool_id, operation_id, revision, definition_hash, executor, arguments, result, \
             state_before, state_after, state_version_before, state_version_after, delay_ms, \
             started_at, duration_us) \
         SELECT tenant_id, $2, tool_name, operation_name, pin_kind, tool_id, \
             operation_id, revision, definition_hash, executor, arguments, result, \
             state_after, state_after, 100, 101, delay_ms, started_at, duration_us \
         FROM evidence WHERE tenant_id = $1 AND attempt_id = $3 ORDER BY id DESC LIMIT 1",
    ];
    for sql in writes {
        let error = sqlx::query(sql)
            .bind(tenant)
            .bind(finished)
            .bind(finished)
            .execute(&mut conn)
            .await
            .expect_err(sql);
        assert_eq!(sqlstate(&error).as_deref(), Some("TM011"), "{sql}: {error}");
        assert!(error.to_string().contains("is finished"), "{error}");
    }
    let state: serde_json::Value =
        sqlx::query_scalar("SELECT state FROM attempt_state WHERE attempt_id = $1")
            .bind(finished)
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert_eq!(state, json!({"last": "a"}), "the final state stands");
    // The running attempt takes the same writes (its evidence row copied
    // from the finished attempt's): the seal is the finish's alone.
    for sql in writes {
        let written = sqlx::query(sql)
            .bind(tenant)
            .bind(running)
            .bind(finished)
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert!(written.rows_affected() <= 1, "{sql}");
    }
    assert_eq!(
        outcome(&mut conn, finished).await,
        ("finished".into(), Some("passed".into()), false)
    );
    conn.close().await.unwrap();
}

/// The seal is checked once per statement, over every row it inserts: one
/// statement adding evidence to a running attempt and to a finished one is
/// refused whole (TM011), and nothing of it is kept — also when a temporary
/// table named like the trigger's transition table (`added`) is empty in
/// the session.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn one_statement_that_writes_to_a_finished_attempt_is_refused_whole(pool: PgPool) {
    let sealed: Vec<String> = sqlx::query_scalar(
        "SELECT tgrelid::regclass::text FROM pg_trigger \
         WHERE tgname = tgrelid::regclass::text || '_sealed_when_finished' \
           AND tgnewtable = 'added' ORDER BY 1",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(
        sealed,
        [
            "attempt_messages",
            "evidence",
            "model_usage",
            "tool_input_errors"
        ],
        "every sealed table checks its statement's rows"
    );
    let (tenant, running, finished) = attempts(&pool).await;
    let mut conn = app_connection(&pool).await;
    sqlx::query("CREATE TEMP TABLE added (tenant_id uuid, attempt_id uuid)")
        .execute(&mut conn)
        .await
        .unwrap();
    let evidence_of = |attempt| {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM evidence WHERE attempt_id = $1")
            .bind(attempt)
    };
    let before = (
        evidence_of(running).fetch_one(&mut conn).await.unwrap(),
        evidence_of(finished).fetch_one(&mut conn).await.unwrap(),
    );
    // The finished attempt's last evidence row, copied once for each
    // attempt, one state version later; the running attempt's row first.
    let error = sqlx::query(
        "INSERT INTO evidence (tenant_id, attempt_id, tool_name, operation_name, pin_kind, \
             tool_id, operation_id, revision, definition_hash, executor, arguments, result, \
             state_before, state_after, state_version_before, state_version_after, delay_ms, \
             started_at, duration_us) \
         SELECT e.tenant_id, w.attempt, e.tool_name, e.operation_name, e.pin_kind, e.tool_id, \
             e.operation_id, e.revision, e.definition_hash, e.executor, e.arguments, e.result, \
             e.state_after, e.state_after, 100, 101, e.delay_ms, e.started_at, e.duration_us \
         FROM (SELECT * FROM evidence WHERE tenant_id = $1 AND attempt_id = $3 \
               ORDER BY id DESC LIMIT 1) e \
         CROSS JOIN unnest(ARRAY[$2, $3]::uuid[]) WITH ORDINALITY AS w(attempt, n) \
         ORDER BY w.n",
    )
    .bind(tenant)
    .bind(running)
    .bind(finished)
    .execute(&mut conn)
    .await
    .expect_err("a statement adding to a finished attempt is refused");
    assert_eq!(sqlstate(&error).as_deref(), Some("TM011"), "{error}");
    assert!(
        error
            .to_string()
            .contains(&format!("attempt {finished} is finished")),
        "{error}"
    );
    let after = (
        evidence_of(running).fetch_one(&mut conn).await.unwrap(),
        evidence_of(finished).fetch_one(&mut conn).await.unwrap(),
    );
    assert_eq!(after, before, "nothing of the refused statement is kept");
    conn.close().await.unwrap();
}

/// A state row's copies of its attempt's status and lease epoch (the fence
/// a call's one statement checks, issue 37) are the attempt's own: as the
/// application role, writing them by hand is refused (TM013), a change of
/// the attempt's epoch or status is copied in the same statement, and a
/// finished attempt's row cannot be made running again (TM011).
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_state_rows_copies_of_its_attempt_are_the_attempts_own(pool: PgPool) {
    let (tenant, running, finished) = attempts(&pool).await;
    let mut conn = app_connection(&pool).await;
    let copies = |attempt| {
        sqlx::query_as::<_, (String, i64)>(
            "SELECT attempt_status, attempt_epoch FROM attempt_state WHERE attempt_id = $1",
        )
        .bind(attempt)
    };
    let before = copies(running).fetch_one(&mut conn).await.unwrap();
    assert_eq!(before.0, "running");
    assert_eq!(
        copies(finished).fetch_one(&mut conn).await.unwrap().0,
        "finished"
    );
    for sql in [
        "UPDATE attempt_state SET attempt_epoch = attempt_epoch + 1 WHERE tenant_id = $1 AND attempt_id = $2",
        "UPDATE attempt_state SET attempt_status = 'finished' WHERE tenant_id = $1 AND attempt_id = $2",
        "UPDATE attempt_state SET attempt_status = 'queued', state = '{}' WHERE tenant_id = $1 AND attempt_id = $2",
    ] {
        let error = sqlx::query(sql)
            .bind(tenant)
            .bind(running)
            .execute(&mut conn)
            .await
            .expect_err(sql);
        assert_eq!(sqlstate(&error).as_deref(), Some("TM013"), "{sql}: {error}");
    }
    let error = sqlx::query(
        "UPDATE attempt_state SET attempt_status = 'running' WHERE tenant_id = $1 AND attempt_id = $2",
    )
    .bind(tenant)
    .bind(finished)
    .execute(&mut conn)
    .await
    .unwrap_err();
    assert_eq!(sqlstate(&error).as_deref(), Some("TM011"), "{error}");
    // The attempt's own change is copied, in the statement that makes it.
    sqlx::query(
        "UPDATE attempts SET lease_epoch = lease_epoch + 1 WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant)
    .bind(running)
    .execute(&mut conn)
    .await
    .unwrap();
    let after = copies(running).fetch_one(&mut conn).await.unwrap();
    assert_eq!(after, ("running".to_owned(), before.1 + 1));
    conn.close().await.unwrap();
}

/// A capability is revoked once and for good (issue 32, item 8): as the
/// application role, revoking works, but clearing or moving the revocation,
/// or moving the capability to another attempt, is refused (TM012).
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_revocation_is_final(pool: PgPool) {
    let (_, running, finished) = attempts(&pool).await;
    let mut conn = app_connection(&pool).await;
    let revoked = sqlx::query(
        "UPDATE attempt_capabilities SET revoked_at = now() \
         WHERE attempt_id = $1 AND revoked_at IS NULL",
    )
    .bind(running)
    .execute(&mut conn)
    .await
    .unwrap();
    assert_eq!(revoked.rows_affected(), 1, "revoking is allowed");
    for (sql, attempt) in [
        (
            "UPDATE attempt_capabilities SET revoked_at = NULL WHERE attempt_id = $1",
            running,
        ),
        (
            "UPDATE attempt_capabilities SET revoked_at = revoked_at + interval '1 day' \
             WHERE attempt_id = $1",
            running,
        ),
        (
            "UPDATE attempt_capabilities SET attempt_id = $2 WHERE attempt_id = $1",
            finished,
        ),
    ] {
        let error = sqlx::query(sql)
            .bind(attempt)
            .bind(if attempt == running {
                finished
            } else {
                running
            })
            .execute(&mut conn)
            .await
            .expect_err(sql);
        assert_eq!(sqlstate(&error).as_deref(), Some("TM012"), "{sql}: {error}");
    }
    let live: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM attempt_capabilities WHERE attempt_id = $1 AND revoked_at IS NULL",
    )
    .bind(running)
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(live, 0, "the revocation stands");
    conn.close().await.unwrap();
}

/// A harness error recorded after the verdict still turns it (the one change
/// a finished attempt allows).
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_late_harness_error_still_turns_a_finished_attempt(pool: PgPool) {
    let (tenant, _, clean) = attempts(&pool).await;
    let mut conn = app_connection(&pool).await;
    sqlx::query(
        "INSERT INTO harness_errors (tenant_id, attempt_id, code, message, created_at) \
         VALUES ($1, $2, 'lease_expired', 'called after its verdict', now())",
    )
    .bind(tenant)
    .bind(clean)
    .execute(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        outcome(&mut conn, clean).await,
        ("finished".into(), Some("harness_error".into()), true)
    );
    conn.close().await.unwrap();
}

/// Every function of the schema pins its search path with `pg_temp` last,
/// runs with the caller's rights, and the application role can create
/// nothing in the schema.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn every_function_pins_its_search_path(pool: PgPool) {
    let functions: Vec<(String, Option<Vec<String>>, bool)> = sqlx::query_as(
        "SELECT p.proname, p.proconfig, p.prosecdef FROM pg_proc p \
           JOIN pg_namespace n ON n.oid = p.pronamespace \
          WHERE n.nspname = 'public' ORDER BY p.proname",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert!(functions.len() >= 6, "{functions:?}");
    for (name, config, definer) in &functions {
        assert!(!definer, "{name} runs as its owner");
        let config = config.clone().unwrap_or_default();
        assert!(
            config
                .iter()
                .any(|c| c == "search_path=pg_catalog, public, pg_temp"),
            "{name}: {config:?}"
        );
    }
    let mut conn = app_connection(&pool).await;
    for sql in [
        "CREATE TABLE public.shadow (id int)",
        "CREATE FUNCTION public.shadow() RETURNS int LANGUAGE sql AS 'SELECT 1'",
        "CREATE VIEW public.shadow AS SELECT 1",
    ] {
        let error = sqlx::query(sql)
            .execute(&mut conn)
            .await
            .expect_err("the application role creates nothing in the schema");
        assert_eq!(sqlstate(&error).as_deref(), Some("42501"), "{sql}: {error}");
    }
    conn.close().await.unwrap();
}

/// A database where the schema's CREATE was granted before the migrations
/// ran (PostgreSQL 14 and earlier grant it to PUBLIC; an operator may have
/// granted it to the role): after them, the application role still creates
/// nothing in it. On a fresh PostgreSQL 15 database the test above cannot
/// tell whether the migrations revoke anything.
#[sqlx::test(migrations = false)]
async fn the_migrations_revoke_a_create_granted_before_them(pool: PgPool) {
    const BEFORE_TRIGGER_SECURITY: i64 = 20261203140000;
    toolmock_store::MIGRATOR
        .run_to(BEFORE_TRIGGER_SECURITY, &pool)
        .await
        .unwrap();
    for grantee in ["PUBLIC", "toolmock_app"] {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "GRANT CREATE ON SCHEMA public TO {grantee}"
        )))
        .execute(&pool)
        .await
        .unwrap();
    }
    toolmock_store::migrate(&pool).await.unwrap();
    let mut conn = app_connection(&pool).await;
    let error = sqlx::query("CREATE TABLE public.shadow (id int)")
        .execute(&mut conn)
        .await
        .expect_err("the application role creates nothing in the schema");
    assert_eq!(sqlstate(&error).as_deref(), Some("42501"), "{error}");
    conn.close().await.unwrap();
}

/// One decision of an attempt's outcome: every function of the schema that
/// writes an outcome, and every statement of the store that does, calls
/// `toolmock_attempt_outcome`; and that function decides `harness_error`
/// exactly when the attempt has a harness error, whatever the verdict.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn the_outcome_is_decided_by_one_function(pool: PgPool) {
    let writers: Vec<(String, String)> = sqlx::query_as(
        "SELECT p.proname, p.prosrc FROM pg_proc p \
           JOIN pg_namespace n ON n.oid = p.pronamespace \
          WHERE n.nspname = 'public' AND p.prosrc ~ 'SET[^;]*outcome\\s*='",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert!(
        !writers.is_empty(),
        "the harness-error trigger writes outcomes"
    );
    for (name, source) in &writers {
        assert!(
            source.contains("toolmock_attempt_outcome("),
            "{name} writes an outcome without toolmock_attempt_outcome: {source}"
        );
    }
    let sources = concat!(
        include_str!("../src/pg/attempts.rs"),
        include_str!("../src/pg/queue.rs"),
        include_str!("../src/pg/simulations.rs"),
    );
    let assignments: Vec<&str> = sources
        .match_indices("outcome = ")
        .map(|(at, _)| &sources[at..])
        .filter(|rest| !rest.starts_with("outcome = self") && !rest.starts_with("outcome = '"))
        .collect();
    assert_eq!(assignments.len(), 2, "the finish's two statements");
    for rest in assignments {
        assert!(
            rest.starts_with("outcome = toolmock_attempt_outcome($1, $2, $4)"),
            "{}",
            &rest[..60]
        );
    }

    let (tenant, faulty, clean) = attempts(&pool).await;
    for (attempt, verdict, expected) in [
        (faulty, "passed", "harness_error"),
        (faulty, "failed", "harness_error"),
        (clean, "passed", "passed"),
        (clean, "failed", "failed"),
    ] {
        let decided: String = sqlx::query_scalar("SELECT toolmock_attempt_outcome($1, $2, $3)")
            .bind(tenant)
            .bind(attempt)
            .bind(verdict)
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(decided, expected, "{verdict}");
    }
}
