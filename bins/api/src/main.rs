//! `toolmock-api`: the HTTP API server (`serve`), its migrations (`migrate`,
//! run as the schema's owner, so that `serve` can connect as the
//! least-privilege role `toolmock_app`) and a development token minter
//! (`token`). Thin: configuration, logging, the pool; everything else is
//! `toolmock_api`.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use toolmock_api::{
    ApiConfig, AppState, AuthConfig, ChatCompletions, Claims, Generator, MAX_DEFINITION_DELAY,
    McpAllowList, ServeLimits,
};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// toolmock's HTTP API: library tools, tool testing, simulations and the
/// dispatcher endpoint.
#[derive(Debug, Parser)]
#[command(name = "toolmock-api", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the API until SIGTERM or Ctrl-C. Connect as `toolmock_app`:
    /// the schema must be migrated (`migrate`) first.
    Serve(Box<ServeArgs>),
    /// Apply the embedded migrations, connected as the schema's owner.
    Migrate(MigrateArgs),
    /// Print a development token (HS256, signed with --jwt-secret).
    Token(TokenArgs),
    /// Save a simulation folder's tools, mocks and agent as a tenant's
    /// library, idempotently: only what is absent or changed is written
    /// (docs/api.md, "Seeding a library").
    Seed(SeedArgs),
    /// Set, show or clear a tenant's default budget of model tokens and
    /// cost: the bounds a simulation gets when its start names none
    /// (docs/operations.md, "Budgets").
    Budget(BudgetArgs),
}

#[derive(Debug, Args)]
struct BudgetArgs {
    /// The tenant: a UUID or a name (mapped to a stable UUID, as in tokens).
    #[arg(long)]
    tenant: String,
    /// The default most model tokens (prompt plus completion) of one
    /// simulation.
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=i64::MAX as u64))]
    max_tokens: Option<u64>,
    /// The default most cost of one simulation, in the unit of the
    /// workers' `--price`.
    #[arg(long, value_name = "X", value_parser = positive_cost)]
    max_cost: Option<f64>,
    /// Remove the tenant's default (simulations then have a budget only
    /// when their start gives one).
    #[arg(long, conflicts_with_all = ["max_tokens", "max_cost"])]
    clear: bool,
    /// PostgreSQL connection URL (the application role `toolmock_app` will
    /// do); the schema must be migrated.
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
}

/// A cost bound: a finite number above 0.
fn positive_cost(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x > 0.0)
        .ok_or_else(|| format!("{text:?} is not a positive number"))
}

#[derive(Debug, Args)]
struct SeedArgs {
    /// The folder with a `simulation.json` (or the file itself).
    folder: PathBuf,
    /// The tenant: a UUID or a name (mapped to a stable UUID, as in tokens).
    #[arg(long, env = "TOOLMOCK_SEED_TENANT", default_value = "dev")]
    tenant: String,
    /// PostgreSQL connection URL (the application role `toolmock_app` will
    /// do); the schema must be migrated.
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
}

/// How bearer tokens are verified (and, for `token`, signed).
#[derive(Debug, Args)]
struct JwtArgs {
    /// HS256 shared secret (at least 32 bytes).
    #[arg(long, env = "TOOLMOCK_JWT_SECRET", hide_env_values = true)]
    jwt_secret: Option<String>,
    /// RS256 public key, a PEM file (instead of --jwt-secret).
    #[arg(long, env = "TOOLMOCK_JWT_PUBLIC_KEY", conflicts_with = "jwt_secret")]
    jwt_public_key: Option<PathBuf>,
    /// Required `iss` claim.
    #[arg(long, env = "TOOLMOCK_JWT_ISSUER")]
    jwt_issuer: Option<String>,
    /// Required `aud` claim.
    #[arg(long, env = "TOOLMOCK_JWT_AUDIENCE")]
    jwt_audience: Option<String>,
    /// Clock difference allowed on `exp`, `nbf` and `iat`, in seconds (0–5).
    #[arg(long, env = "TOOLMOCK_JWT_LEEWAY_SECS", default_value_t = 5,
          value_parser = clap::value_parser!(u64).range(0..=5))]
    jwt_leeway_secs: u64,
}

#[derive(Debug, Args)]
struct MigrateArgs {
    /// PostgreSQL URL of the schema's owner (a role that may create tables
    /// and the role `toolmock_app`).
    #[arg(long, env = "TOOLMOCK_MIGRATE_DATABASE_URL")]
    database_url: String,
    /// Log line format.
    #[arg(long, env = "TOOLMOCK_LOG_FORMAT", value_enum, default_value = "text")]
    log_format: LogFormat,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// PostgreSQL connection URL, as the application role `toolmock_app`.
    /// `serve` never migrates: it checks the schema is up to date.
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    /// How long a query waits for a pooled connection (opening one
    /// included) before it fails, in milliseconds: short, so that an outage
    /// fails requests at once instead of queueing them.
    #[arg(long, env = "TOOLMOCK_DB_ACQUIRE_TIMEOUT_MS", default_value_t = 2000)]
    db_acquire_timeout_ms: u64,
    /// Address to listen on.
    #[arg(long, env = "TOOLMOCK_BIND", default_value = "127.0.0.1:8080")]
    bind: SocketAddr,
    /// Largest connection pool. More connections than PostgreSQL has cores
    /// to run them only queue inside PostgreSQL instead of here, and lengthen
    /// the slowest answers (docs/performance.md, "The API").
    #[arg(long, env = "TOOLMOCK_DB_MAX_CONNECTIONS", default_value_t = 10)]
    max_connections: u32,
    /// How many statements of gathered tool calls are in flight at once
    /// (docs/data-model.md, "Calls gathered into one statement"): one keeps
    /// a two-core PostgreSQL busiest; raise it for a server with more cores.
    #[arg(long, env = "TOOLMOCK_CALL_STATEMENTS",
          default_value_t = toolmock_store::CALL_STATEMENTS_IN_FLIGHT as u32,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    call_statements: u32,
    /// How many threads run requests (default: one per core). Where
    /// PostgreSQL shares this host's few cores, one thread makes the
    /// gathered statements of tool calls about twice as large and the calls
    /// faster (docs/performance.md, "Every durable call in one statement");
    /// a request that needs the CPU (the testing view) is then slower.
    #[arg(long, env = "TOOLMOCK_RUNTIME_THREADS",
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    runtime_threads: Option<u16>,
    /// How many simulation starts run at once (more wait their turn), so
    /// that large starts never starve other requests of connections.
    #[arg(long, env = "TOOLMOCK_CONCURRENT_STARTS", default_value_t = 2)]
    concurrent_starts: usize,
    /// Largest request body, in bytes (larger: 413).
    #[arg(long, env = "TOOLMOCK_BODY_LIMIT", default_value_t = 1024 * 1024)]
    body_limit: usize,
    /// Longest a request may take, in seconds (longer: 503 `timeout`);
    /// tool calls have their own.
    #[arg(long, env = "TOOLMOCK_REQUEST_TIMEOUT_SECS", default_value_t = 30)]
    request_timeout_secs: u64,
    /// Longest a tool call's request may take, in seconds; more than the
    /// 30 s delay a definition may ask for. A call still running then runs
    /// on to its recorded end and is recorded as `answer_lost`.
    #[arg(long, env = "TOOLMOCK_TOOL_CALL_TIMEOUT_SECS", default_value_t = 60)]
    tool_call_timeout_secs: u64,
    /// Longest a client may take to send a request's line and headers, in
    /// seconds; then its connection is closed.
    #[arg(long, env = "TOOLMOCK_HEADER_READ_TIMEOUT_SECS", default_value_t = 10)]
    header_read_timeout_secs: u64,
    /// Longest a client may take to send a request's body, in seconds
    /// (longer: 408 `body_timeout`).
    #[arg(long, env = "TOOLMOCK_BODY_READ_TIMEOUT_SECS", default_value_t = 10)]
    body_read_timeout_secs: u64,
    /// Connections open at once; further clients wait to be accepted.
    #[arg(long, env = "TOOLMOCK_CONNECTION_LIMIT", default_value_t = 4096)]
    connection_limit: usize,
    /// MCP servers discovery may reach: `host`, `host:port`, `*.domain[:port]`,
    /// or `*` for every URL; repeat, or separate with commas.
    #[arg(
        long = "mcp-allow",
        env = "TOOLMOCK_MCP_ALLOW",
        value_delimiter = ',',
        default_value = "*"
    )]
    mcp_allow: Vec<String>,
    /// Requests served at once (more: 503 `overloaded`).
    #[arg(long, env = "TOOLMOCK_CONCURRENCY_LIMIT", default_value_t = 1024)]
    concurrency_limit: usize,
    /// How long a simulation's attempts may run, in seconds: an attempt still
    /// running when its lease ends (its agent gone, its runner's process
    /// dead) ends as `harness_error` (`lease_expired`).
    #[arg(long, env = "TOOLMOCK_ATTEMPT_LEASE_SECS", default_value_t = 3600)]
    attempt_lease_secs: u64,
    /// An OpenAI-compatible chat-completions base URL (e.g. http://127.0.0.1:8000/v1)
    /// that drafts mocks for `generate`; without it drafts are schema-derived.
    #[arg(long, env = "TOOLMOCK_GENERATOR_URL")]
    generator_url: Option<String>,
    /// The model the generator asks for.
    #[arg(long, env = "TOOLMOCK_GENERATOR_MODEL", default_value = "gpt-4o-mini")]
    generator_model: String,
    /// The generator's API key (sent as a bearer token).
    #[arg(long, env = "TOOLMOCK_GENERATOR_API_KEY", hide_env_values = true)]
    generator_api_key: Option<String>,
    /// Drafts requested (with the diagnostics fed back) before giving up.
    #[arg(long, env = "TOOLMOCK_GENERATOR_MAX_ATTEMPTS", default_value_t = 3)]
    generator_max_attempts: u32,
    /// How long one completion request may take, in seconds.
    #[arg(long, env = "TOOLMOCK_GENERATOR_TIMEOUT_SECS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    generator_timeout_secs: u64,
    /// Retries of a transient failure of one completion request (429, 5xx,
    /// time-out, connection) before `generate` answers 502 generator_failed.
    #[arg(long, env = "TOOLMOCK_GENERATOR_RETRIES", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(0..=20))]
    generator_retries: u32,
    /// The longest answer read from the generator's endpoint, in bytes; a
    /// longer one is 502 generator_failed (response_too_large). Default 16 MiB.
    #[arg(long, env = "TOOLMOCK_GENERATOR_MAX_RESPONSE_BYTES",
          default_value_t = toolmock_agent::DEFAULT_MAX_RESPONSE_BYTES,
          value_parser = clap::value_parser!(u64).range(1024..=1 << 30))]
    generator_max_response_bytes: u64,
    /// Completion requests in flight at once over all `generate` requests of
    /// this process; more wait their turn.
    #[arg(long, env = "TOOLMOCK_GENERATOR_CONCURRENCY", default_value_t = 8,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    generator_concurrency: u32,
    /// Scripted attempts this process runs at once, with the same loop as
    /// `toolmock-worker` (a one-process setup); 0: none, they wait for
    /// worker processes.
    #[arg(long, env = "TOOLMOCK_WORKERS", default_value_t = 0)]
    workers: usize,
    /// Serve the in-process workers' Prometheus metrics (`/metrics`) and a
    /// health check (`/healthz`) on this address, apart from `--bind`
    /// (default: not served).
    #[arg(long, env = "TOOLMOCK_METRICS_ADDR")]
    metrics_addr: Option<String>,
    /// What plays the in-process workers' model and http cases, and the
    /// simulated users of external attempts (`ask-user`).
    #[command(flatten)]
    agents: toolmock_worker::AgentFlags,
    /// Log line format.
    #[arg(long, env = "TOOLMOCK_LOG_FORMAT", value_enum, default_value = "text")]
    log_format: LogFormat,
    #[command(flatten)]
    jwt: JwtArgs,
}

#[derive(Debug, Args)]
struct TokenArgs {
    /// The tenant: a UUID or a name (mapped to a stable UUID).
    #[arg(long)]
    tenant: String,
    /// A permission to grant; repeat for more (e.g. AIManager:ManageTools).
    #[arg(long = "permission", required = true)]
    permissions: Vec<String>,
    /// The subject (written as the author of saved revisions).
    #[arg(long, default_value = "developer")]
    subject: String,
    /// Lifetime in seconds.
    #[arg(long, default_value_t = 86_400)]
    ttl_secs: u64,
    #[command(flatten)]
    jwt: JwtArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve(*args),
        Command::Migrate(args) => migrate(&args),
        Command::Token(args) => token(&args),
        Command::Seed(args) => seed(&args),
        Command::Budget(args) => budget(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("toolmock-api: {message}");
            ExitCode::FAILURE
        }
    }
}

fn auth_config(jwt: &JwtArgs) -> Result<AuthConfig, String> {
    let mut auth = match (&jwt.jwt_secret, &jwt.jwt_public_key) {
        (Some(secret), None) => AuthConfig::hs256(secret.as_bytes()).map_err(|e| e.to_string())?,
        (None, Some(path)) => {
            let pem =
                std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            AuthConfig::rs256_pem(&pem).map_err(|e| e.to_string())?
        }
        _ => return Err("give --jwt-secret or --jwt-public-key".into()),
    };
    if let Some(issuer) = &jwt.jwt_issuer {
        auth = auth.with_issuer(issuer);
    }
    if let Some(audience) = &jwt.jwt_audience {
        auth = auth.with_audience(audience);
    }
    Ok(auth.with_leeway(Duration::from_secs(jwt.jwt_leeway_secs)))
}

fn token(args: &TokenArgs) -> Result<(), String> {
    let secret = args
        .jwt
        .jwt_secret
        .as_ref()
        .ok_or("minting needs --jwt-secret (HS256)")?;
    // Validates the secret exactly as the server will.
    auth_config(&args.jwt)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_secs();
    let claims = Claims {
        sub: args.subject.clone(),
        tenant: args.tenant.clone(),
        permissions: args.permissions.clone(),
        exp: now + args.ttl_secs,
        iat: Some(now),
        iss: args.jwt.jwt_issuer.clone(),
        aud: args.jwt.jwt_audience.clone(),
    };
    let token = toolmock_api::mint_hs256(secret.as_bytes(), &claims).map_err(|e| e.to_string())?;
    println!("{token}");
    Ok(())
}

fn serve(args: ServeArgs) -> Result<(), String> {
    init_logging(args.log_format);
    let auth = auth_config(&args.jwt)?;
    let mcp_allow = McpAllowList::parse(&args.mcp_allow).map_err(|e| e.to_string())?;
    let tool_call_timeout = Duration::from_secs(args.tool_call_timeout_secs);
    if tool_call_timeout <= MAX_DEFINITION_DELAY {
        return Err(format!(
            "--tool-call-timeout-secs must be more than {} (the longest delay a definition may ask for)",
            MAX_DEFINITION_DELAY.as_secs()
        ));
    }
    let limits = ServeLimits {
        max_connections: args.connection_limit,
        header_read_timeout: Duration::from_secs(args.header_read_timeout_secs),
    };
    let generator = match args.generator_url {
        Some(base_url) => {
            let endpoint = toolmock_agent::Endpoint {
                base_url,
                model: args.generator_model,
                api_key: args.generator_api_key,
                // Drafts as reproducible as the endpoint allows.
                temperature: Some(0.0),
                seed: None,
                timeout: Duration::from_secs(args.generator_timeout_secs),
                max_retries: args.generator_retries,
                concurrency: args.generator_concurrency as usize,
                max_response_bytes: args.generator_max_response_bytes,
            };
            Generator::ChatCompletions(
                ChatCompletions::new(&endpoint, args.generator_max_attempts)
                    .map_err(|e| format!("--generator-url: {}: {e}", e.code()))?,
            )
        }
        None => Generator::Schema,
    };
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = args.runtime_threads {
        runtime.worker_threads(usize::from(threads));
    }
    let runtime = runtime.enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let pool = toolmock_store::connect_bounded(
            &args.database_url,
            args.max_connections,
            Duration::from_millis(args.db_acquire_timeout_ms),
        )
        .await
        .map_err(|e| format!("cannot connect to the database: {e}"))?;
        toolmock_store::check_schema(&pool)
            .await
            .map_err(|e| e.to_string())?;
        let mut config = ApiConfig {
            generator,
            body_limit: args.body_limit,
            request_timeout: Duration::from_secs(args.request_timeout_secs),
            tool_call_timeout,
            body_read_timeout: Duration::from_secs(args.body_read_timeout_secs),
            mcp_allow,
            concurrency_limit: args.concurrency_limit,
            attempt_lease: Duration::from_secs(args.attempt_lease_secs),
            concurrent_starts: args.concurrent_starts,
            user_model: None,
        };
        let listener = tokio::net::TcpListener::bind(args.bind)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", args.bind))?;
        let local = listener.local_addr().map_err(|e| e.to_string())?;
        tracing::info!(address = %local, "listening");
        // Agent services reach the tool-call endpoint at this server's own
        // address unless --api-url says otherwise.
        let agents = args
            .agents
            .agents(Some(format!("http://{local}")))
            .map_err(|e| format!("{}: {e}", e.code()))?;
        // External agents' simulated users (`ask-user`) are played by the
        // user model the workers' flags name, by default the agent's.
        config.user_model = agents.user.clone().or_else(|| agents.model.clone());
        let store = toolmock_store::PgStore::new(pool.clone())
            .with_call_statements(args.call_statements as usize);
        let state = AppState::over_store(store, auth, config);
        let sweeper = toolmock_api::spawn_lease_sweeper(state.clone());
        let app = toolmock_api::router(state);
        // One signal stops both the server and the in-process workers.
        let (stop, stopped) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            toolmock_worker::telemetry::shutdown_signal().await;
            let _ = stop.send(true);
        });
        let until_stopped = |mut stopped: tokio::sync::watch::Receiver<bool>| async move {
            let _ = stopped.wait_for(|s| *s).await;
        };
        let metrics = match &args.metrics_addr {
            Some(address) => Some(
                toolmock_worker::telemetry::start_metrics(
                    address,
                    pool.clone(),
                    until_stopped(stopped.clone()),
                )
                .await
                .map_err(|e| format!("{}: {e}", e.code()))?,
            ),
            None => None,
        };
        let workers = (args.workers > 0).then(|| {
            let mut config =
                toolmock_worker::WorkerConfig::new(format!("api:{}:{}", std::process::id(), local));
            config.concurrency = args.workers;
            let store = toolmock_store::PgStore::new(pool.clone())
                .with_call_statements(args.call_statements as usize);
            tokio::spawn(toolmock_worker::run_with(
                store,
                config,
                agents,
                until_stopped(stopped.clone()),
            ))
        });
        toolmock_api::serve_with(listener, app, until_stopped(stopped), limits)
            .await
            .map_err(|e| e.to_string())?;
        if let Some(workers) = workers {
            match workers.await {
                Ok(Ok(report)) => tracing::info!(?report, "in-process workers stopped"),
                Ok(Err(e)) => return Err(e.to_string()),
                Err(e) => return Err(format!("the in-process workers failed: {e}")),
            }
        }
        sweeper.abort();
        if let Some(metrics) = metrics {
            metrics.abort();
        }
        pool.close().await;
        tracing::info!("stopped");
        Ok(())
    })
}

fn seed(args: &SeedArgs) -> Result<(), String> {
    with_pool(&args.database_url, 2, async |pool| {
        let report = toolmock_api::seed::seed(pool, &args.tenant, &args.folder)
            .await
            .map_err(|e| format!("{}: {e}", e.code()))?;
        for (action, what) in &report.lines {
            println!("{:<10}  {what}", action.as_str());
        }
        use toolmock_api::seed::SeedAction;
        println!(
            "seed of tenant {:?}: {} created, {} appended, {} left alone",
            args.tenant,
            report.count(SeedAction::Created),
            report.count(SeedAction::Appended),
            report.count(SeedAction::LeftAlone)
        );
        Ok(())
    })
}

fn budget(args: &BudgetArgs) -> Result<(), String> {
    with_pool(&args.database_url, 1, async |pool| {
        toolmock_store::check_schema(&pool)
            .await
            .map_err(|e| format!("{}: {e}", e.code()))?;
        let store = toolmock_store::PgStore::new(pool.clone());
        let tenant = toolmock_api::auth::tenant_id(&args.tenant);
        let limits = toolmock_store::BudgetLimits {
            max_tokens: args.max_tokens,
            max_cost: args.max_cost,
        };
        let result = if args.clear || !limits.is_empty() {
            store.set_tenant_budget(tenant, &args.tenant, limits).await
        } else {
            Ok(())
        };
        let now = match result {
            Ok(()) => store.tenant_budget(tenant).await,
            Err(e) => Err(e),
        };
        let now = now.map_err(|e| format!("{}: {e}", e.code()))?;
        let shown = |n: Option<String>| n.unwrap_or_else(|| "none".into());
        match now {
            Some(l) => println!(
                "tenant {:?} ({}): default budget max_tokens {}, max_cost {}",
                args.tenant,
                tenant.as_uuid(),
                shown(l.max_tokens.map(|n| n.to_string())),
                shown(l.max_cost.map(|x| x.to_string())),
            ),
            None => println!(
                "tenant {:?} ({}): no default budget",
                args.tenant,
                tenant.as_uuid()
            ),
        }
        Ok(())
    })
}

fn migrate(args: &MigrateArgs) -> Result<(), String> {
    init_logging(args.log_format);
    with_pool(&args.database_url, 1, async |pool| {
        toolmock_store::migrate(&pool)
            .await
            .map_err(|e| format!("migrations failed: {e}"))?;
        tracing::info!("migrated");
        Ok(())
    })
}

/// Runs `work` on a one-thread runtime with a pool of `size` connections to
/// `url` (a one-shot command's), closing the pool once `work` is done,
/// whatever it answered.
fn with_pool(
    url: &str,
    size: u32,
    work: impl AsyncFnOnce(sqlx::PgPool) -> Result<(), String>,
) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let pool = toolmock_store::connect(url, size)
            .await
            .map_err(|e| format!("cannot connect to the database: {e}"))?;
        let done = work(pool.clone()).await;
        pool.close().await;
        done
    })
}

fn init_logging(format: LogFormat) {
    toolmock_worker::telemetry::init_logging(match format {
        LogFormat::Text => toolmock_worker::telemetry::LogFormat::Text,
        LogFormat::Json => toolmock_worker::telemetry::LogFormat::Json,
    });
}
