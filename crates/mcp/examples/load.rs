//! Load generator for `toolmock serve --http` (docs/performance.md, "MCP
//! serve"): serves fixtures/mcp/serve/calendar.json's `books_a_day` case
//! exactly as `toolmock serve --http 127.0.0.1:0` does (the same router,
//! the same in-memory dispatcher), then N concurrent clients (default 16),
//! each with its own keep-alive HTTP connection and its own attempt, send
//! `tools/call` requests (`book`, then `booked_day`, alternating) for the
//! given time and report calls per second and latency percentiles. Beside
//! it, the same calls through `Dispatcher::call` in process, with the same
//! concurrency, for the dispatcher's own rate.
//!
//!     cargo run --release -p toolmock-mcp --example load -- [CLIENTS] [SECONDS] [BASE_URL]
//!
//! With BASE_URL (e.g. `http://127.0.0.1:8765`, what `toolmock serve
//! --http` printed), the HTTP calls go to that server instead of one in
//! this process: `scripts/bench-mcp.sh` runs it so against the release
//! `toolmock serve --http`, so the figure is the real binary's.

use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolmock_mcp::{Embedded, Limits};
use toolmock_runtime::backend::Catalog;
use toolmock_runtime::{Dispatcher, MemoryStore, ToolCall};
use toolmock_simulation::{SequenceClock, VirtualSleeper};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn report(what: &str, mut latencies: Vec<Duration>, elapsed: Duration) {
    latencies.sort_unstable();
    let n = latencies.len();
    println!(
        "{what}: {n} calls in {:.2} s = {:.0} calls/s; p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        elapsed.as_secs_f64(),
        n as f64 / elapsed.as_secs_f64(),
        percentile(&latencies, 0.50).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        latencies.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
    );
}

async fn served() -> Result<Arc<Embedded<MemoryStore>>, Box<dyn std::error::Error>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/mcp/serve/calendar.json");
    let mut loaded = toolmock_simulation::read_file(&path).map_err(|p| format!("{p:?}"))?;
    loaded
        .problems
        .retain(|p| p.code != "external_driver_not_embedded");
    let store = MemoryStore::new();
    let tenant = store.create_tenant("load").await?;
    let dispatcher = Arc::new(
        Dispatcher::new(store)
            .with_clock(Arc::new(SequenceClock::default()))
            .with_sleeper(Arc::new(VirtualSleeper)),
    );
    Ok(Embedded::prepare(
        dispatcher,
        tenant,
        Arc::new(loaded.simulation),
        (Some("books_a_day"), None),
        Limits::default(),
    )
    .await?)
}

type Started = (
    Arc<Dispatcher<MemoryStore>>,
    toolmock_runtime::model::TenantId,
    Vec<toolmock_runtime::dispatcher::StartedAttempt>,
);

async fn started(clients: u32) -> Result<Started, Box<dyn std::error::Error>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/mcp/serve/calendar.json");
    let loaded = toolmock_simulation::read_file(&path).map_err(|p| format!("{p:?}"))?;
    let store = MemoryStore::new();
    let tenant = store.create_tenant("load").await?;
    let dispatcher = Arc::new(
        Dispatcher::new(store)
            .with_clock(Arc::new(SequenceClock::default()))
            .with_sleeper(Arc::new(VirtualSleeper)),
    );
    let installed = toolmock_simulation::install(&dispatcher, tenant, &loaded.simulation).await?;
    let mut request =
        toolmock_simulation::start_request(&loaded.simulation.document, installed.agent)?;
    request.test_cases.truncate(1);
    request.attempts_per_case = clients;
    let started = dispatcher.start(tenant, &request).await?;
    Ok((dispatcher, tenant, started.attempts))
}

fn call_body(i: u64) -> Value {
    if i.is_multiple_of(2) {
        json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
               "params": {"name": "book", "arguments": {"day": "2026-12-04"}}})
    } else {
        json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
               "params": {"name": "booked_day", "arguments": {}}})
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let clients: u32 = args.next().map_or(Ok(16), |a| a.parse())?;
    let seconds: u64 = args.next().map_or(Ok(10), |a| a.parse())?;
    let duration = Duration::from_secs(seconds);

    let base = match args.next() {
        Some(base) => base.trim_end_matches('/').to_owned(),
        None => {
            // Over HTTP, in this process, as `toolmock serve --http` serves.
            let embedded = served().await?;
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            let addr = listener.local_addr()?;
            let app = toolmock_mcp::router(embedded.clone(), false);
            tokio::spawn(async move { axum::serve(listener, app).await });
            format!("http://{addr}")
        }
    };
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(clients as usize)
        .build()?;
    let began = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for client in 1..=clients {
        let url = format!("{base}/attempts/{client}/mcp");
        let http = http.clone();
        tasks.spawn(async move {
            let mut latencies = Vec::new();
            let mut i = 0u64;
            while began.elapsed() < duration {
                let sent = Instant::now();
                let answer: Value = http
                    .post(&url)
                    .header("accept", "application/json, text/event-stream")
                    .json(&call_body(i))
                    .send()
                    .await
                    .expect("sent")
                    .json()
                    .await
                    .expect("a JSON answer");
                assert!(
                    answer["result"]["structuredContent"].is_object(),
                    "{answer}"
                );
                latencies.push(sent.elapsed());
                i += 1;
            }
            latencies
        });
    }
    let mut all = Vec::new();
    while let Some(done) = tasks.join_next().await {
        all.extend(done?);
    }
    report(
        &format!("serve --http, {clients} clients"),
        all,
        began.elapsed(),
    );

    // The same calls through the dispatcher, in process: one attempt per
    // task, started as `toolmock run` starts them.
    let (dispatcher, tenant, attempts) = started(clients).await?;
    let began = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for client in 1..=clients {
        let dispatcher = dispatcher.clone();
        let attempt = attempts[client as usize - 1].capability.clone();
        tasks.spawn(async move {
            let mut latencies = Vec::new();
            let mut i = 0u64;
            while began.elapsed() < duration {
                let call = if i.is_multiple_of(2) {
                    ToolCall::new("calendar", "book", json!({"day": "2026-12-04"}))
                } else {
                    ToolCall::new("calendar", "booked_day", json!({}))
                };
                let sent = Instant::now();
                dispatcher
                    .call(tenant, &attempt, &call)
                    .await
                    .expect("answered");
                latencies.push(sent.elapsed());
                i += 1;
            }
            latencies
        });
    }
    let mut all = Vec::new();
    while let Some(done) = tasks.join_next().await {
        all.extend(done?);
    }
    report(
        &format!("Dispatcher::call in process, {clients} tasks"),
        all,
        began.elapsed(),
    );
    Ok(())
}
