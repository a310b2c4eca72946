//! A scratch database for a bench: created on the server of `DATABASE_URL`
//! (default: the local server), handed to the bench, dropped afterwards
//! whatever the bench's outcome.

use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgConnection};
use std::str::FromStr;

/// What a bench answers.
pub(crate) type Outcome = Result<(), Box<dyn std::error::Error>>;

/// The server's address, from `DATABASE_URL`.
pub(crate) fn database_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// Runs `bench` against a fresh database `name` on the server of `url`,
/// then drops it.
pub(crate) async fn with_database(
    url: &str,
    name: &str,
    bench: impl AsyncFnOnce(PgConnectOptions) -> Outcome,
) -> Outcome {
    let mut admin = PgConnection::connect(url).await?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut admin)
        .await?;
    let outcome = match PgConnectOptions::from_str(url) {
        Ok(options) => bench(options.database(name)).await,
        Err(e) => Err(e.into()),
    };
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
    )))
    .execute(&mut admin)
    .await?;
    outcome
}
