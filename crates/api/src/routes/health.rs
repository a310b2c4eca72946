//! Liveness and readiness.

use crate::AppState;
use crate::error::ApiError;
use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

/// A health answer.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Health {
    /// `ok`.
    status: &'static str,
}

/// The process is up.
#[utoipa::path(get, path = "/healthz", tag = "operations",
    responses((status = 200, description = "The process serves requests", body = Health)))]
pub(crate) async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// The database is reachable and every embedded migration is applied.
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses(
        (status = 200, description = "Ready", body = Health),
        (status = 503, description = "Not ready (`not_ready`)", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn readyz(State(state): State<AppState>) -> Result<Json<Health>, ApiError> {
    // Never longer than a connection may be waited for: during an outage the
    // probe must say so at once, not hang with every other request.
    let wait = state.pool().options().get_acquire_timeout();
    let query =
        sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version")
            .fetch_all(state.pool());
    let applied: Vec<i64> = match tokio::time::timeout(wait, query).await {
        Ok(Ok(applied)) => applied,
        // The cause goes to the log (with the request's id, from its span),
        // never into the answer: it may name hosts, users or databases.
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "not ready: the database cannot be queried");
            return Err(unreachable());
        }
        Err(_) => {
            tracing::warn!(
                waited_ms = wait.as_millis() as u64,
                "not ready: the database did not answer in time"
            );
            return Err(unreachable());
        }
    };
    let missing: Vec<i64> = toolmock_store::MIGRATOR
        .iter()
        .filter(|m| !m.migration_type.is_down_migration())
        .map(|m| m.version)
        .filter(|v| !applied.contains(v))
        .collect();
    if !missing.is_empty() {
        return Err(ApiError::NotReady {
            reason: format!("migrations not applied: {missing:?}"),
        });
    }
    Ok(Json(Health { status: "ok" }))
}

fn unreachable() -> ApiError {
    ApiError::NotReady {
        reason: "the database cannot be reached".into(),
    }
}
