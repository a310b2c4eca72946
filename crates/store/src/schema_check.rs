//! Whether a database's schema is the one this build embeds, checked by a
//! process that connects as the application role and so cannot migrate.

use crate::MIGRATOR;
use sqlx::postgres::PgPool;

/// Why a database cannot be served as it is.
#[derive(Debug, thiserror::Error)]
pub enum SchemaCheckError {
    /// Some embedded migrations are not applied (or none is: the
    /// migrations' table is absent or unreadable to this role).
    #[error(
        "the database schema is not up to date ({missing} of {total} migrations not applied{first}): run `toolmock-api migrate --database-url OWNER_URL` as the schema's owner first"
    )]
    NotMigrated {
        /// How many embedded migrations are missing.
        missing: usize,
        /// How many migrations this build embeds.
        total: usize,
        /// The first missing version, as text (`, first …`), when known.
        first: String,
    },
    /// The database could not be queried at all.
    #[error("cannot read the database's migrations: {0}")]
    Unreachable(#[source] sqlx::Error),
}

impl SchemaCheckError {
    /// A stable code: `schema_not_migrated` or `database_unreachable`.
    pub fn code(&self) -> &'static str {
        match self {
            SchemaCheckError::NotMigrated { .. } => "schema_not_migrated",
            SchemaCheckError::Unreachable(_) => "database_unreachable",
        }
    }
}

/// Checks that every migration of [`MIGRATOR`] is applied, reading only
/// `_sqlx_migrations` (which the application role may read).
pub async fn check_schema(pool: &PgPool) -> Result<(), SchemaCheckError> {
    let expected: Vec<i64> = MIGRATOR
        .iter()
        .filter(|m| !m.migration_type.is_down_migration())
        .map(|m| m.version)
        .collect();
    let applied: Vec<i64> =
        match sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success")
            .fetch_all(pool)
            .await
        {
            Ok(applied) => applied,
            // No such table (never migrated), or one this role may not read
            // (migrated by a build older than the grant): not migrated.
            Err(sqlx::Error::Database(e))
                if matches!(e.code().as_deref(), Some("42P01" | "42501")) =>
            {
                Vec::new()
            }
            Err(e) => return Err(SchemaCheckError::Unreachable(e)),
        };
    let missing: Vec<i64> = expected
        .iter()
        .copied()
        .filter(|v| !applied.contains(v))
        .collect();
    match missing.first() {
        None => Ok(()),
        Some(first) => Err(SchemaCheckError::NotMigrated {
            missing: missing.len(),
            total: expected.len(),
            first: format!(", first {first}"),
        }),
    }
}
