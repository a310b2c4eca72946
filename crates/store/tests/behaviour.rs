//! The shared behaviour suite (toolmock_runtime::testkit) against PostgreSQL:
//! each scenario gets a fresh, migrated database from `#[sqlx::test]`.
//! Needs `DATABASE_URL` (see scripts/test-env.sh).

use sqlx::PgPool;
use toolmock_store::PgStore;

toolmock_runtime::behaviour_suite! {
    #[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
    fn (pool: PgPool) => PgStore::new(pool)
}
