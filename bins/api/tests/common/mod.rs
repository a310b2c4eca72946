//! What the binary's process tests share.

use sqlx::PgPool;

/// The URL of the test's own database (its name on `DATABASE_URL`'s server).
pub(crate) async fn database_url(pool: &PgPool) -> String {
    let name: String = sqlx::query_scalar("SELECT current_database()")
        .fetch_one(pool)
        .await
        .expect("the test database's name");
    let base = std::env::var("DATABASE_URL").expect("DATABASE_URL is set");
    let (server, _) = base.rsplit_once('/').expect("a URL with a database");
    format!("{server}/{name}")
}
