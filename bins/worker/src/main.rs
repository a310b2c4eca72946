//! `toolmock-worker`: runs the attempts the API queued (scripted, model
//! and agent-service cases). Thin:
//! configuration (flags with environment fallbacks), logging, the pool and
//! the schema check; the loop is `toolmock_worker::run`. See
//! docs/operations.md.

use clap::{Parser, ValueEnum};
use std::process::ExitCode;
use std::time::Duration;
use toolmock_worker::{WorkerConfig, telemetry};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// toolmock's worker: claims queued scripted attempts from PostgreSQL and
/// runs them under a fenced, heartbeated lease; reaps expired leases.
/// Stops on SIGTERM or Ctrl-C (no more claims; what it holds finishes
/// within the grace period or is given back).
#[derive(Debug, Parser)]
#[command(name = "toolmock-worker", version, about)]
struct Cli {
    /// PostgreSQL connection URL, as the application role `toolmock_app`.
    /// The worker never migrates: it checks the schema is up to date.
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    /// Attempts run at once.
    #[arg(long, env = "TOOLMOCK_WORKER_CONCURRENCY", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    concurrency: u32,
    /// The lease owner name (unique per process); default
    /// `worker:HOST:PID:RANDOM`.
    #[arg(long, env = "TOOLMOCK_WORKER_OWNER")]
    owner: Option<String>,
    /// How long a claim's lease lasts without a heartbeat, in milliseconds.
    #[arg(long, env = "TOOLMOCK_WORKER_LEASE_MS", default_value_t = 30_000,
          value_parser = clap::value_parser!(u64).range(100..))]
    lease_ms: u64,
    /// How often held leases are renewed, in milliseconds (default: a
    /// third of the lease).
    #[arg(long, env = "TOOLMOCK_WORKER_HEARTBEAT_MS")]
    heartbeat_ms: Option<u64>,
    /// How often an idle worker looks at the queue when no NOTIFY came, in
    /// milliseconds.
    #[arg(long, env = "TOOLMOCK_WORKER_POLL_MS", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(1..))]
    poll_ms: u64,
    /// How often this worker's reaper sweeps expired leases, in milliseconds.
    #[arg(long, env = "TOOLMOCK_WORKER_REAP_MS", default_value_t = 5000,
          value_parser = clap::value_parser!(u64).range(1..))]
    reap_ms: u64,
    /// After SIGTERM: how long held attempts may take to finish before they
    /// are given back, in seconds.
    #[arg(long, env = "TOOLMOCK_WORKER_GRACE_SECS", default_value_t = 20)]
    grace_secs: u64,
    /// Sleep mock delays for real (default: the virtual clock, as `toolmock run`).
    #[arg(long, env = "TOOLMOCK_WORKER_REAL_DELAYS")]
    real_delays: bool,
    /// How long one verification of a library tool may take, in seconds
    /// (docs/verify.md).
    #[arg(long, env = "TOOLMOCK_WORKER_VERIFY_BUDGET_SECS", default_value_t = 600,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    verify_budget_secs: u64,
    /// How many statements of gathered tool calls are in flight at once
    /// (docs/data-model.md, "Calls gathered into one statement"): one keeps
    /// a two-core PostgreSQL busiest; raise it for a server with more cores.
    #[arg(long, env = "TOOLMOCK_CALL_STATEMENTS",
          default_value_t = toolmock_store::CALL_STATEMENTS_IN_FLIGHT as u32,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    call_statements: u32,
    /// Largest connection pool, at least 2 (one listens for new work). It
    /// need not grow with the concurrency: the attempts' calls and finishes
    /// go out gathered, a few statements at a time, and more connections
    /// than PostgreSQL has cores to run them only queue inside PostgreSQL
    /// (docs/performance.md, "Every durable call in one statement"). Raise
    /// it for a server with more cores.
    #[arg(long, env = "TOOLMOCK_DB_MAX_CONNECTIONS", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(2..=1024))]
    max_connections: u32,
    /// Serve Prometheus metrics (`/metrics`) and a health check
    /// (`/healthz`) on this address, e.g. `127.0.0.1:9464` (default: not
    /// served).
    #[arg(long, env = "TOOLMOCK_WORKER_METRICS_ADDR")]
    metrics_addr: Option<String>,
    /// Log line format.
    #[arg(long, env = "TOOLMOCK_LOG_FORMAT", value_enum, default_value = "text")]
    log_format: LogFormat,
    /// What plays model and http cases (docs/agents.md).
    #[command(flatten)]
    agents: toolmock_worker::AgentFlags,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("toolmock-worker: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<(), String> {
    telemetry::init_logging(match cli.log_format {
        LogFormat::Text => telemetry::LogFormat::Text,
        LogFormat::Json => telemetry::LogFormat::Json,
    });
    let lease = Duration::from_millis(cli.lease_ms);
    let owner = cli.owner.unwrap_or_else(|| {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "host".into());
        let random = uuid::Uuid::new_v4().simple().to_string();
        format!("worker:{host}:{}:{}", std::process::id(), &random[..8])
    });
    let config = WorkerConfig {
        owner,
        concurrency: cli.concurrency as usize,
        lease,
        heartbeat: cli.heartbeat_ms.map_or(lease / 3, Duration::from_millis),
        poll: Duration::from_millis(cli.poll_ms),
        reap_every: Duration::from_millis(cli.reap_ms),
        grace: Duration::from_secs(cli.grace_secs),
        real_delays: cli.real_delays,
        verify_budget: Duration::from_secs(cli.verify_budget_secs),
        clock_offset: Default::default(),
    };
    let agents = cli
        .agents
        .agents(None)
        .map_err(|e| format!("{}: {e}", e.code()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let pool = toolmock_store::connect(&cli.database_url, cli.max_connections)
            .await
            .map_err(|e| format!("cannot connect to the database: {e}"))?;
        toolmock_store::check_schema(&pool)
            .await
            .map_err(|e| e.to_string())?;
        // One signal stops both the loop and the metrics server.
        let (stop, stopped) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            toolmock_worker::telemetry::shutdown_signal().await;
            let _ = stop.send(true);
        });
        let until_stopped = |mut stopped: tokio::sync::watch::Receiver<bool>| async move {
            let _ = stopped.wait_for(|s| *s).await;
        };
        let metrics = match &cli.metrics_addr {
            Some(address) => Some(
                telemetry::start_metrics(address, pool.clone(), until_stopped(stopped.clone()))
                    .await
                    .map_err(|e| format!("{}: {e}", e.code()))?,
            ),
            None => None,
        };
        tracing::info!(owner = %config.owner, concurrency = config.concurrency, "working");
        let store = toolmock_store::PgStore::new(pool.clone())
            .with_call_statements(cli.call_statements as usize);
        let report = toolmock_worker::run_with(store, config, agents, until_stopped(stopped))
            .await
            .map_err(|e| format!("{}: {e}", e.code()))?;
        if let Some(metrics) = metrics {
            metrics.abort();
        }
        pool.close().await;
        tracing::info!(?report, "stopped");
        Ok(())
    })
}
