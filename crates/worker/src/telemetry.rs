//! What a process that runs the loop shows of itself: its log lines (one
//! set-up for `toolmock-worker` and `toolmock-api`), its Prometheus
//! metrics and health on an optional port of their own, and the signal that
//! stops it ([`shutdown_signal`], for both binaries).
//!
//! The metrics are recorded through the `metrics` facade wherever the loop
//! works (claims, finishes, the reaper, the heartbeat); without an
//! installed recorder they cost nothing. [`install_metrics`] installs the
//! Prometheus recorder (once per process), and [`serve_metrics`] answers
//! `GET /metrics` (the exposition text) and `GET /healthz` (the database
//! answers a ping) on a listener of its own, apart from any API port.

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::future::Future;
use std::io::IsTerminal;
use std::sync::OnceLock;
use std::time::Duration;

/// Attempts claimed from the queue.
pub const CLAIMED: &str = "toolmock_worker_attempts_claimed_total";
/// Attempts run to their finish, by `outcome` (`passed`, `failed`,
/// `harness_error`).
pub const FINISHED: &str = "toolmock_worker_attempts_finished_total";
/// Attempts given back at shutdown, by `how` (`released`: queued again;
/// `abandoned`: ended `harness_error`).
pub const GIVEN_BACK: &str = "toolmock_worker_attempts_given_back_total";
/// Expired leases this process's reaper ended (`lease_expired`).
pub const LEASE_EXPIRIES: &str = "toolmock_worker_lease_expiries_total";
/// Leases this worker held and lost (not renewed in time).
pub const LEASES_LOST: &str = "toolmock_worker_leases_lost_total";
/// Writes refused by the fence (the lease was no longer this worker's).
pub const FENCE_REFUSALS: &str = "toolmock_worker_fence_refusals_total";
/// Seconds from an attempt's queueing to its claim.
pub const DISPATCH_LATENCY: &str = "toolmock_worker_dispatch_latency_seconds";
/// Seconds a claimed attempt took to run to its finish.
pub const ATTEMPT_DURATION: &str = "toolmock_worker_attempt_duration_seconds";
/// Attempts held right now.
pub const HELD: &str = "toolmock_worker_attempts_held";
/// Verifications of library tools, by `how` (`claimed`; `ended`: finished
/// or failed, written under the lease).
pub const VERIFICATIONS: &str = "toolmock_worker_verifications_total";

/// The buckets of both histograms, in seconds: the claim's milliseconds up
/// to an attempt's minutes.
const BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];

/// How long `/healthz` waits for the database.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(2);

/// How a process writes its log lines (to stderr).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines, coloured only at a terminal.
    Text,
    /// One JSON object per line.
    Json,
}

/// Installs the process's log subscriber: `RUST_LOG` (default `info`),
/// lines to stderr in `format`. Call once, first thing.
pub fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colours only for a person at a terminal: a log redirected to a file or
    // a collector gets plain text.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        // A request's span is the line's `span`; the list of enclosing spans
        // would repeat it on every line.
        LogFormat::Json => builder.json().with_span_list(false).init(),
    }
}

/// Why the metrics could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// Another metrics recorder is already installed in this process.
    #[error("cannot install the Prometheus recorder: {0}")]
    Recorder(String),
    /// The metrics address cannot be listened on.
    #[error("cannot listen on {address} for metrics: {source}")]
    Listen {
        /// The address asked for.
        address: String,
        /// Why.
        source: std::io::Error,
    },
}

impl TelemetryError {
    /// A stable, machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            TelemetryError::Recorder(_) => "metrics_recorder_failed",
            TelemetryError::Listen { .. } => "metrics_listen_failed",
        }
    }
}

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the Prometheus recorder for this process (once: a second call
/// returns the same handle) and describes every metric.
pub fn install_metrics() -> Result<PrometheusHandle, TelemetryError> {
    if let Some(handle) = HANDLE.get() {
        return Ok(handle.clone());
    }
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), BUCKETS)
        .map_err(|e| TelemetryError::Recorder(e.to_string()))?
        .install_recorder()
        .map_err(|e| TelemetryError::Recorder(e.to_string()))?;
    describe();
    Ok(HANDLE.get_or_init(|| handle).clone())
}

fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(CLAIMED, "Attempts claimed from the queue.");
    describe_counter!(FINISHED, "Attempts run to their finish, by outcome.");
    describe_counter!(
        GIVEN_BACK,
        "Attempts given back at shutdown (released: queued again; abandoned: ended harness_error)."
    );
    describe_counter!(
        LEASE_EXPIRIES,
        "Expired leases this process's reaper ended as harness_error (lease_expired)."
    );
    describe_counter!(LEASES_LOST, "Leases this worker held and lost.");
    describe_counter!(FENCE_REFUSALS, "Writes refused by the lease fence.");
    describe_histogram!(
        DISPATCH_LATENCY,
        Unit::Seconds,
        "From an attempt's queueing to its claim."
    );
    describe_histogram!(
        ATTEMPT_DURATION,
        Unit::Seconds,
        "From an attempt's claim to its finish."
    );
    describe_gauge!(HELD, "Attempts this process holds right now.");
    describe_counter!(
        VERIFICATIONS,
        "Verifications of library tools against their real tools, claimed and ended."
    );
}

/// Serves `GET /metrics` and `GET /healthz` on `listener` until `shutdown`
/// completes. `/healthz` answers 200 when the database answers within 2 s,
/// else 503.
pub async fn serve_metrics(
    listener: tokio::net::TcpListener,
    handle: PrometheusHandle,
    pool: sqlx::PgPool,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // Histograms need no upkeep, but the recorder's idle bookkeeping does.
    let upkeep = {
        let handle = handle.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(5));
            loop {
                tick.tick().await;
                handle.run_upkeep();
            }
        })
    };
    let app = Router::new()
        .route("/metrics", get(metrics_text))
        .with_state(handle)
        .merge(
            Router::new()
                .route("/healthz", get(healthz))
                .with_state(pool),
        );
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await;
    upkeep.abort();
    served
}

/// Installs the recorder, binds `address` and serves [`serve_metrics`] on
/// it in the background until `shutdown` completes; logs the bound address
/// ("serving metrics"). What both binaries' `--metrics-addr` does.
pub async fn start_metrics(
    address: &str,
    pool: sqlx::PgPool,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<tokio::task::JoinHandle<std::io::Result<()>>, TelemetryError> {
    let handle = install_metrics()?;
    let listener = bind_metrics(address).await?;
    if let Ok(local) = listener.local_addr() {
        tracing::info!(address = %local, "serving metrics");
    }
    Ok(tokio::spawn(serve_metrics(
        listener, handle, pool, shutdown,
    )))
}

/// Binds `address` for [`serve_metrics`].
pub async fn bind_metrics(address: &str) -> Result<tokio::net::TcpListener, TelemetryError> {
    tokio::net::TcpListener::bind(address)
        .await
        .map_err(|source| TelemetryError::Listen {
            address: address.to_owned(),
            source,
        })
}

async fn metrics_text(State(handle): State<PrometheusHandle>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        handle.render(),
    )
}

async fn healthz(State(pool): State<sqlx::PgPool>) -> impl IntoResponse {
    health(&pool).await
}

/// `/healthz`'s answer. The database's error is logged, never answered: its
/// text can name hosts, users and paths, which a health probe's client has
/// no business seeing (only `unreachable` or `no answer within 2 s`).
async fn health(pool: &sqlx::PgPool) -> (StatusCode, axum::Json<serde_json::Value>) {
    use sqlx::Connection;
    let answered =
        tokio::time::timeout(HEALTH_TIMEOUT, async { pool.acquire().await?.ping().await }).await;
    let why = match answered {
        Ok(Ok(_)) => {
            return (
                StatusCode::OK,
                axum::Json(serde_json::json!({"status": "ok"})),
            );
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "/healthz: the database did not answer its ping");
            "unreachable"
        }
        Err(_) => "no answer within 2 s",
    };
    (
        StatusCode::SERVICE_UNAVAILABLE,
        axum::Json(serde_json::json!({"status": "unavailable", "database": why})),
    )
}

/// Resolves on SIGTERM or Ctrl-C (logging which): what stops both binaries —
/// the API then lets requests in flight finish, a worker its held attempts.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("Ctrl-C: shutting down"),
        () = terminate => tracing::info!("SIGTERM: shutting down"),
    }
}

#[cfg(test)]
mod tests {
    /// A database that refuses the connection: 503, and nothing of the
    /// error's text (the address, the user, the password, the OS's words).
    #[tokio::test]
    async fn healthz_never_answers_the_database_error() {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .acquire_timeout(std::time::Duration::from_secs(1))
            .connect_lazy("postgres://secret_user:secret_password@127.0.0.1:1/secret_db")
            .unwrap_or_else(|e| panic!("{e}"));
        let (status, body) = super::health(&pool).await;
        assert_eq!(status, axum::http::StatusCode::SERVICE_UNAVAILABLE);
        let text = body.0.to_string();
        assert!(
            body.0 == serde_json::json!({"status": "unavailable", "database": "unreachable"})
                || body.0
                    == serde_json::json!({"status": "unavailable", "database": "no answer within 2 s"}),
            "{text}"
        );
        assert!(
            !text.contains("secret") && !text.contains("127.0.0.1"),
            "{text}"
        );
    }
}
