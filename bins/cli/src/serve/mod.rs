//! `toolmock serve`: a simulation's case served to MCP clients on the
//! embedded in-memory runtime; each attempt judged when it ends.

mod background;

pub use background::Background;

use crate::Failure;
use crate::run::{evidence, junit, print_problems, table};
use clap::Args;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use toolmock_mcp::{CancellationToken, Embedded, Limits, ServeError};
use toolmock_runtime::backend::Catalog;
use toolmock_runtime::{Dispatcher, MemoryStore};
use toolmock_simulation::{
    self as simulation, FileProblem, LoadCode, RunResults, SequenceClock, VirtualSleeper,
};

/// Serve a simulation's pinned mocks to MCP clients (an agent under test),
/// on the embedded in-memory runtime.
///
/// The tools are the agent's: each operation it calls directly, with exactly
/// its contract (description, inputSchema, outputSchema), and each of its
/// workflows. Every call goes through the dispatcher of one attempt of the
/// case (--case, or the only case): --stdio serves one attempt for the
/// process; --http ADDR serves attempt n at `http://ADDR/attempts/n/mcp`
/// (streamable HTTP; started at its first request; POST /attempts hands out
/// a new one, POST /attempts/n/finish ends one and answers its result).
///
/// An attempt ends when its stdio session closes, after --max-calls calls,
/// after --idle-timeout seconds without a call, when finished over HTTP, or
/// when the server stops (SIGINT/SIGTERM, or --attempts attempts ended).
/// Each is judged by the case's expectations as `toolmock run` judges; at
/// the end the report is printed (on stderr with --stdio, whose stdout is
/// the MCP stream) and --json, --junit and --evidence are written. Exit
/// status as `toolmock run`: 0 when every attempt ended as its case
/// expects, 1 otherwise, 2 when the file is unusable.
///
/// Example:
///   toolmock serve sim.json --case books --stdio
///   toolmock serve sim.json --http 127.0.0.1:8765 --idle-timeout 300 --json results.json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct ServeArgs {
    /// The simulation file.
    simulation: PathBuf,
    /// The case whose attempts are served (default: the only case).
    #[arg(long, value_name = "NAME")]
    case: Option<String>,
    /// Serve one attempt over stdin/stdout.
    #[arg(long, conflicts_with = "http", required_unless_present = "http")]
    stdio: bool,
    /// Serve streamable HTTP on ADDR (e.g. 127.0.0.1:8765; port 0 picks one).
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// An attempt ends after N answered calls.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_calls: Option<u64>,
    /// An attempt ends after SECS seconds without a call.
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    idle_timeout: Option<u64>,
    /// --http: stop once N attempts have ended.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    attempts: Option<u32>,
    /// Write the results document (JSON, as `toolmock run --json`) to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write JUnit XML (one testcase per attempt) to FILE.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Write each attempt's records as JSON Lines under DIR.
    #[arg(long, value_name = "DIR")]
    evidence: Option<PathBuf>,
    /// Sleep each call's delay_ms for real instead of on the virtual clock.
    #[arg(long)]
    real_delays: bool,
    /// How much of a real tool's answer is read (real-tools mode).
    #[command(flatten)]
    real: toolmock_discovery::RealToolFlags,
    /// The model that plays the case's simulated user (`ask_user`).
    #[command(flatten)]
    user: toolmock_agent::UserModelFlags,
    /// The model cassette of the simulated user's requests: record them,
    /// or replay them offline (docs/cassettes.md).
    #[command(flatten)]
    cassette: toolmock_agent::CassetteFlags,
}

pub(crate) fn run(args: &ServeArgs) -> Result<u8, Failure> {
    let file = args.simulation.display().to_string();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::usage(format!("cannot start the runtime: {e}")))?;
    let (dispatcher, loaded) = match prepare(args, &runtime)? {
        Prepared::Ready(dispatcher, loaded) => (dispatcher, loaded),
        Prepared::Refused(problems) => {
            print_problems(&file, &problems);
            return Ok(2);
        }
    };
    let user = args
        .user
        .standalone()
        .map_err(|e| Failure::usage(e.to_string()))?;
    let (models, cassette) = args
        .cassette
        .apply(toolmock_agent::Models {
            user,
            ..toolmock_agent::Models::default()
        })
        .map_err(|e| Failure::usage(e.to_string()))?;
    let outcome = runtime.block_on(serve(
        (args, models.user),
        &file,
        dispatcher,
        loaded,
        limits(args),
    ));
    // A stdin read cannot be cancelled: do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(200));
    if let Some(cassette) = &cassette {
        crate::run::save_cassette(cassette)?;
    }
    let results = match outcome {
        Ok(results) => results,
        Err(ServeError::Problems(problems)) => {
            print_problems(&file, &problems);
            return Ok(2);
        }
        Err(e) => {
            return Err(Failure {
                message: format!("{file}: {}: {e}", e.code()),
                exit: if matches!(
                    e,
                    ServeError::CaseRequired { .. } | ServeError::UnknownCase { .. }
                ) {
                    2
                } else {
                    1
                },
            });
        }
    };
    report(args, &results)?;
    Ok(if results.ok { 0 } else { 1 })
}

fn limits(args: &ServeArgs) -> Limits {
    Limits {
        max_calls: args.max_calls,
        idle: args.idle_timeout.map(Duration::from_secs),
        keep_raw: args.evidence.is_some(),
    }
}

/// A file ready to serve, or its problems.
enum Prepared {
    Ready(
        Arc<Dispatcher<MemoryStore>>,
        Box<simulation::LoadedSimulation>,
    ),
    Refused(Vec<FileProblem>),
}

/// Loads the file and sets up the embedded runtime's dispatcher; a file
/// with problems is checked whole, so that every problem is listed at once.
fn prepare(args: &ServeArgs, runtime: &tokio::runtime::Runtime) -> Result<Prepared, Failure> {
    let file = args.simulation.display().to_string();
    let mut loaded = match simulation::read_file(&args.simulation) {
        Ok(loaded) => loaded,
        Err(problems) => return Ok(Prepared::Refused(problems)),
    };
    // An external case is what serve plays.
    loaded
        .problems
        .retain(|p| p.code != LoadCode::ExternalDriverNotEmbedded.as_str());
    let mut dispatcher =
        Dispatcher::new(MemoryStore::new()).with_clock(Arc::new(SequenceClock::default()));
    if !args.real_delays {
        dispatcher = dispatcher.with_sleeper(Arc::new(VirtualSleeper));
    }
    let dispatcher = Arc::new(crate::run::with_real_tools(
        dispatcher,
        &loaded.simulation,
        args.real,
    ));
    if !loaded.problems.is_empty() {
        let checked = runtime.block_on(async {
            let tenant = dispatcher.backend().create_tenant("toolmock-serve").await?;
            simulation::check(&dispatcher, tenant, &loaded).await
        });
        return match checked {
            Err(simulation::RunError::Problems(problems)) => Ok(Prepared::Refused(problems)),
            Err(other) => Err(Failure {
                message: format!("{file}: {}: {other}", other.code()),
                exit: 1,
            }),
            Ok(_) => Ok(Prepared::Refused(loaded.problems)),
        };
    }
    Ok(Prepared::Ready(dispatcher, Box::new(loaded.simulation)))
}

/// Ends the attempts idle for `idle` (checked a few times per period)
/// until `stop`.
fn watch_idle(embedded: &Arc<Embedded<MemoryStore>>, stop: &CancellationToken, idle: Duration) {
    let (embedded, stop) = (embedded.clone(), stop.clone());
    let tick = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
    tokio::spawn(async move {
        while !stop.is_cancelled() {
            tokio::time::sleep(tick).await;
            embedded.finish_idle().await;
        }
    });
}

async fn serve(
    (args, user): (&ServeArgs, Option<Arc<dyn simulation::ChatModel>>),
    file: &str,
    dispatcher: Arc<Dispatcher<MemoryStore>>,
    loaded: Box<simulation::LoadedSimulation>,
    limits: Limits,
) -> Result<RunResults, ServeError> {
    let embedded = embed(dispatcher, loaded, (args.case.as_deref(), user), limits).await?;
    let stop = CancellationToken::new();
    if let Some(idle) = limits.idle {
        watch_idle(&embedded, &stop, idle);
    }
    // Stop once enough attempts have ended: the process's one (stdio), or
    // --attempts of them.
    let enough = if args.stdio {
        Some(1)
    } else {
        args.attempts.map(|n| n as usize)
    };
    if let Some(enough) = enough {
        let (embedded, stop) = (embedded.clone(), stop.clone());
        tokio::spawn(async move {
            while !stop.is_cancelled() {
                if embedded.finished().await >= enough {
                    stop.cancel();
                }
                embedded.attempt_ended(Duration::from_millis(200)).await;
            }
        });
    }
    {
        let stop = stop.clone();
        tokio::spawn(async move {
            shutdown_signal().await;
            stop.cancel();
        });
    }
    if let Some(addr) = args.http {
        let (listener, bound) = listen(addr).await?;
        let _ = writeln!(
            std::io::stderr(),
            "toolmock: serving {file} (case {}) at http://{bound}/attempts/{{n}}/mcp; POST http://{bound}/attempts for a new attempt",
            embedded.case().name
        );
        serve_http(embedded.clone(), listener, bound, stop.clone())
            .await
            .map_err(|e| ServeError::Storage(e.to_string()))?;
    } else {
        toolmock_mcp::serve_stdio(embedded.clone(), 1, stop.clone()).await?;
    }
    stop.cancel();
    embedded.finish_all().await?;
    Ok(embedded.results().await)
}

/// The case (`case`, or the only one) of `loaded` installed in a tenant of
/// the dispatcher's store, ready to serve.
async fn embed(
    dispatcher: Arc<Dispatcher<MemoryStore>>,
    loaded: Box<simulation::LoadedSimulation>,
    case: (Option<&str>, Option<Arc<dyn simulation::ChatModel>>),
    limits: Limits,
) -> Result<Arc<Embedded<MemoryStore>>, ServeError> {
    let tenant = dispatcher
        .backend()
        .create_tenant("toolmock-serve")
        .await
        .map_err(|e| ServeError::Storage(e.to_string()))?;
    Embedded::prepare(dispatcher, tenant, Arc::from(loaded), case, limits).await
}

/// A listener on `addr`, and the address it got (port 0 picks one).
async fn listen(addr: SocketAddr) -> Result<(tokio::net::TcpListener, SocketAddr), ServeError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| ServeError::Storage(format!("cannot listen on {addr}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| ServeError::Storage(e.to_string()))?;
    Ok((listener, bound))
}

/// The HTTP routes of `serve --http` until `stop` (a request being answered
/// is answered first); any `Host` header when listening beyond loopback.
async fn serve_http(
    embedded: Arc<Embedded<MemoryStore>>,
    listener: tokio::net::TcpListener,
    bound: SocketAddr,
    stop: CancellationToken,
) -> std::io::Result<()> {
    let app = toolmock_mcp::router(embedded, !bound.ip().is_loopback());
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { stop.cancelled().await })
        .await
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut term) = signal(SignalKind::terminate()) else {
            let _ = tokio::signal::ctrl_c().await;
            return;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn report(args: &ServeArgs, results: &RunResults) -> Result<(), Failure> {
    let out_error = |e: std::io::Error| Failure::usage(format!("cannot write the report: {e}"));
    let text = table::render(results);
    if args.stdio {
        std::io::stderr()
            .write_all(text.as_bytes())
            .map_err(out_error)?;
    } else {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes()).map_err(out_error)?;
        out.flush().map_err(out_error)?;
    }
    write_files(args, results)
}

/// Writes --json, --junit and --evidence, when asked for.
fn write_files(args: &ServeArgs, results: &RunResults) -> Result<(), Failure> {
    if let Some(path) = &args.json {
        let mut body = serde_json::to_vec_pretty(results)
            .map_err(|e| Failure::usage(format!("cannot write the results: {e}")))?;
        body.push(b'\n');
        std::fs::write(path, body)
            .map_err(|e| Failure::usage(format!("{}: cannot write: {e}", path.display())))?;
    }
    if let Some(path) = &args.junit {
        std::fs::write(path, junit::render(results))
            .map_err(|e| Failure::usage(format!("{}: cannot write: {e}", path.display())))?;
    }
    if let Some(dir) = &args.evidence {
        evidence::write(dir, results)?;
    }
    Ok(())
}
