//! The shared behaviour suite (toolmock_runtime::testkit) against PostgreSQL:
//! each scenario gets a fresh, migrated database from `#[sqlx::test]`.
//! Needs `DATABASE_URL` (see scripts/test-env.sh).

use sqlx::PgPool;
use toolmock_runtime::testkit;
use toolmock_store::PgStore;

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn linearizable_state(pool: PgPool) {
    testkit::linearizable_state(PgStore::new(pool), 64, 50).await;
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn attempts_are_isolated(pool: PgPool) {
    testkit::attempts_are_isolated(PgStore::new(pool)).await;
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn harness_faults_never_pass(pool: PgPool) {
    testkit::harness_faults_never_pass(PgStore::new(pool)).await;
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn tool_input_errors_are_recoverable(pool: PgPool) {
    testkit::tool_input_errors_are_recoverable(PgStore::new(pool)).await;
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn result_is_exactly_rendered(pool: PgPool) {
    testkit::result_is_exactly_rendered(PgStore::new(pool)).await;
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn start_refusals(pool: PgPool) {
    testkit::start_refusals(PgStore::new(pool)).await;
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn incomplete_starts_fail_closed(pool: PgPool) {
    testkit::incomplete_starts_fail_closed(PgStore::new(pool)).await;
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn revisions_are_dense(pool: PgPool) {
    testkit::revisions_are_dense(PgStore::new(pool), 16).await;
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn capabilities_follow_the_lease(pool: PgPool) {
    testkit::capabilities_follow_the_lease(PgStore::new(pool)).await;
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn tenancy_is_total(pool: PgPool) {
    testkit::tenancy_is_total(PgStore::new(pool)).await;
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn delays_use_the_sleeper(pool: PgPool) {
    testkit::delays_use_the_sleeper(PgStore::new(pool)).await;
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn real_tools_runs_use_the_executor(pool: PgPool) {
    testkit::real_tools_runs_use_the_executor(PgStore::new(pool)).await;
}
