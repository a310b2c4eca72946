//! The shared behaviour suite (toolmock_runtime::testkit) against PostgreSQL:
//! each scenario gets a fresh database from `#[sqlx::test]`, migrated as its
//! owner, and runs connected as the application role (`toolmock_app`), as
//! the application does. Needs `DATABASE_URL` (see scripts/test-env.sh).

#![allow(clippy::expect_used)] // test set-up: a failure must stop the test

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use toolmock_store::{PgStore, as_app_role};

async fn app_store(connect: PgConnectOptions) -> PgStore {
    let pool = PgPoolOptions::new()
        .max_connections(8)
        .connect_with(as_app_role(connect))
        .await
        .expect("connect as the application role");
    let user: String = sqlx::query_scalar("SELECT current_user::text")
        .fetch_one(&pool)
        .await
        .expect("ask who we are");
    assert_eq!(user, toolmock_store::APP_ROLE);
    PgStore::new(pool)
}

toolmock_runtime::behaviour_suite! {
    #[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
    fn (_pool: PgPoolOptions, connect: PgConnectOptions) => app_store(connect).await,
    after |store: PgStore| async move { store.pool().close().await }
}
