//! A call's latency on PostgreSQL against the size of the shared fixture
//! (docs/performance.md, "Shared fixtures"): for fixtures of about 0.1, 1.4
//! and 14 MB, one simulation of the shop (`toolmock_store::testkit`) over the
//! fixture, one attempt, then `BENCH_CALLS` calls (default 400) one after
//! the other, a read of an order and a nested write of another's status in
//! turn, through the dispatcher on PostgreSQL as the application role (the
//! locked path of a call through the API). The attempt's row holds only its
//! overlay; the base is read once per process (the first call, shown apart).
//!
//! `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
//!  cargo bench -p toolmock-store --bench pg_fixture_size`
//!
//! A fresh database `toolmock_bench_fixture_<pid>` is created on the server
//! of `DATABASE_URL` and dropped at the end.

mod scratch;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use std::time::{Duration, Instant};
use toolmock_runtime::testkit::Rig;
use toolmock_store::{PgStore, migrate};

/// Orders per fixture: about 254 bytes of JSON each.
const SIZES: [usize; 3] = [400, 5_500, 55_000];

fn main() -> scratch::Outcome {
    let url = scratch::database_url();
    let calls: usize = std::env::var("BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let database = format!("toolmock_bench_fixture_{}", std::process::id());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(scratch::with_database(&url, &database, async |options| {
        run(options, calls).await
    }))
}

async fn run(options: PgConnectOptions, calls: usize) -> scratch::Outcome {
    let owner = PgPoolOptions::new()
        .max_connections(2)
        .connect_with(options)
        .await?;
    migrate(&owner).await?;
    let app = toolmock_store::testkit::app_pool(&owner).await;
    println!(
        "| fixture | base row | first call (loads the base) | read p50 / p99 | nested write p50 / p99 |"
    );
    println!("|---|---|---|---|---|");
    for orders in SIZES {
        let fixture = toolmock_store::testkit::orders(orders, 190);
        let megabytes = serde_json::to_vec(&fixture)?.len() as f64 / 1e6;
        // A store of its own: its base cache starts empty, as a new
        // process's does.
        let rig = Rig::new(PgStore::new(app.clone()));
        let (tenant, started) =
            toolmock_store::testkit::start(&rig, &format!("t{orders}"), fixture, 1).await;
        let base_bytes: i64 = sqlx::query_scalar(
            "SELECT pg_column_size(base)::int8 FROM simulation_fixture_bases WHERE simulation_id = $1",
        )
        .bind(started.id.as_uuid())
        .fetch_one(&owner)
        .await?;
        let began = Instant::now();
        toolmock_store::testkit::call(&rig, tenant, &started, 0, "get", "#W1").await;
        let first = began.elapsed();
        let (mut reads, mut writes) = (Vec::new(), Vec::new());
        for n in 0..calls {
            // Orders spread over the whole fixture.
            let id = format!("#W{}", (n * 7919) % orders);
            let (op, into) = if n % 2 == 0 {
                ("get", &mut reads)
            } else {
                ("cancel", &mut writes)
            };
            let began = Instant::now();
            toolmock_store::testkit::call(&rig, tenant, &started, 0, op, &id).await;
            into.push(began.elapsed());
        }
        println!(
            "| {megabytes:.2} MB ({orders} orders) | {:.2} MB stored | {} | {} / {} | {} / {} |",
            base_bytes as f64 / 1e6,
            ms(first),
            ms(percentile(&mut reads, 0.5)),
            ms(percentile(&mut reads, 0.99)),
            ms(percentile(&mut writes, 0.5)),
            ms(percentile(&mut writes, 0.99)),
        );
    }
    Ok(())
}

fn percentile(samples: &mut [Duration], q: f64) -> Duration {
    samples.sort_unstable();
    let rank = ((samples.len() as f64 - 1.0) * q).round() as usize;
    samples.get(rank).copied().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}
