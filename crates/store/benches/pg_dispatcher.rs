//! PostgreSQL dispatcher throughput and latency, then, in the same run,
//! pgbench with the dispatcher's own SQL on the same tables, and the pgbench
//! anchor (the shared `pgbench` anchor, kept beside the repository; issues 4 and 10, "Performance";
//! figures in docs/performance.md). Targets (issue 10): p99 ≤ 25 ms with 32
//! attempts calling concurrently, and ≥ 0.6 of the anchor's rate.
//!
//! `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
//!  cargo bench -p toolmock-store --bench pg_dispatcher`
//!
//! Loopback only and bounded: a fresh database `toolmock_bench_<pid>` is
//! created on the server of `DATABASE_URL` and dropped at the end; 32 tasks
//! (one per attempt) call for `BENCH_SECONDS` (default 10) after a 2 s
//! warm-up, through a pool of `BENCH_POOL` connections (default 16). Then
//! `pgbench -M prepared -c 32 -j 2 -T BENCH_SECONDS` runs a script with the
//! dispatcher's own statements (BEGIN; SELECT … FOR UPDATE of the state row;
//! UPDATE of the state row + INSERT of one evidence row; COMMIT) on the same
//! tables, one attempt per client. Last, the anchor as its README runs it:
//! a fresh database `toolmock_anchor_<pid>` with `anchor.sql`, then
//! `pgbench -n -c 32 -j 2 -T BENCH_SECONDS -f dispatch.pgbench` over the unix
//! socket (simple queries, a random attempt per transaction); the anchor's
//! directory is `BENCH_ANCHOR_DIR` (default: the shared anchors' `pgbench`
//! folder beside the workspace, see `anchor_pgbench`). The dispatcher connects as the application role
//! (`toolmock_app`), as deployments do.

mod scratch;

use serde_json::json;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolmock_runtime::ToolCall;
use toolmock_runtime::testkit::{Rig, ledger_simulation};
use toolmock_store::{PgStore, as_app_role, migrate};

const ATTEMPTS: usize = 32;

const PGBENCH_SCRIPT: &str = r#"\set a :client_id + 1
BEGIN;
SELECT s.state, s.version FROM attempt_state s JOIN pgbench_attempts m ON m.attempt_id = s.attempt_id JOIN attempts a ON a.id = s.attempt_id JOIN attempt_capabilities c ON c.attempt_id = s.attempt_id WHERE m.n = :a AND a.status = 'running' FOR UPDATE OF s;
WITH updated AS (UPDATE attempt_state s SET state = '{"last": "pgbench-call"}', version = s.version + 1, updated_at = now() FROM pgbench_attempts m WHERE m.n = :a AND s.attempt_id = m.attempt_id RETURNING s.tenant_id, s.attempt_id, s.version) INSERT INTO evidence (tenant_id, attempt_id, tool_name, operation_name, pin_kind, definition_hash, executor, variant, arguments, result, state_before, state_after, state_version_before, state_version_after, delay_ms, started_at, duration_us) SELECT tenant_id, attempt_id, 'ledger', 'append', 'inline', repeat('a', 64), 'mock', 'success', '{"id": "pgbench-call"}', '{"id": "pgbench-call", "previous": "pgbench-call"}', '{"last": "pgbench-call"}', '{"last": "pgbench-call"}', version - 1, version, 0, now(), 10 FROM updated;
END;
"#;

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * (sorted.len() as f64 - 1.0)).round() as usize;
    f64::from(sorted[rank.min(sorted.len() - 1)]) / 1000.0
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> scratch::Outcome {
    let url = scratch::database_url();
    let seconds: u64 = env_or("BENCH_SECONDS", 10);
    let pool_size: u32 = env_or("BENCH_POOL", 16);
    let workers: usize = env_or("BENCH_WORKERS", 2);
    let database = format!("toolmock_bench_{}", std::process::id());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()?;
    runtime.block_on(scratch::with_database(
        &url,
        &database,
        async |mut options| {
            // For information only: BENCH_SYNC_COMMIT=off measures both sides
            // without waiting for the WAL flush at commit.
            let sync_commit = std::env::var("BENCH_SYNC_COMMIT").unwrap_or_else(|_| "on".into());
            if sync_commit != "on" {
                options = options.options([("synchronous_commit", sync_commit.as_str())]);
            }
            run(options, &database, seconds, pool_size, workers).await
        },
    ))
}

async fn run(
    options: PgConnectOptions,
    database: &str,
    seconds: u64,
    pool_size: u32,
    workers: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let owner = PgPoolOptions::new()
        .max_connections(2)
        .connect_with(options.clone())
        .await?;
    migrate(&owner).await?;
    let pool = PgPoolOptions::new()
        .max_connections(pool_size)
        .connect_with(as_app_role(options))
        .await?;
    let rig = Rig::new(PgStore::new(pool.clone()));
    let (tenant, started) = ledger_simulation(&rig, "bench", u32::try_from(ATTEMPTS)?).await;
    let dispatcher = rig.dispatcher.clone();

    let warmup = Duration::from_secs(2);
    let measure = Duration::from_secs(seconds);
    let begin = Instant::now();
    let measure_from = begin + warmup;
    let measure_until = measure_from + measure;
    let mut handles = Vec::new();
    for (index, attempt) in started.attempts.iter().enumerate() {
        let dispatcher = Arc::clone(&dispatcher);
        let capability = attempt.capability.clone();
        handles.push(tokio::spawn(async move {
            let mut latencies: Vec<u32> = Vec::new();
            let mut n = 0u64;
            loop {
                let t = Instant::now();
                if t >= measure_until {
                    break;
                }
                let call =
                    ToolCall::new("ledger", "append", json!({ "id": format!("a{index}-{n}") }));
                dispatcher.call(tenant, &capability, &call).await?;
                n += 1;
                if t >= measure_from {
                    latencies.push(u32::try_from(t.elapsed().as_micros()).unwrap_or(u32::MAX));
                }
            }
            Ok::<Vec<u32>, toolmock_runtime::error::DispatchError>(latencies)
        }));
    }
    let mut latencies = Vec::new();
    for handle in handles {
        latencies.extend(handle.await??);
    }
    latencies.sort_unstable();
    let calls = latencies.len();
    let rate = calls as f64 / measure.as_secs_f64();
    let p99 = percentile(&latencies, 99.0);
    println!(
        "PostgreSQL dispatcher: {ATTEMPTS} attempts calling concurrently, pool {pool_size}, {workers} tokio workers, {seconds} s"
    );
    println!("  calls            {calls}");
    println!("  throughput       {rate:.0} calls/s");
    println!(
        "  latency          p50 {:.2} ms  p90 {:.2} ms  p99 {p99:.2} ms  max {:.2} ms (target p99 <= 25)",
        percentile(&latencies, 50.0),
        percentile(&latencies, 90.0),
        f64::from(*latencies.last().unwrap_or(&0)) / 1000.0
    );

    // Every call is in the evidence, with dense versions per attempt.
    let (rows, attempts_dense): (i64, Option<bool>) = sqlx::query_as(
        "SELECT count(*), bool_and(max_v = n) FROM (SELECT count(*) AS n, \
             max(state_version_after) AS max_v FROM evidence GROUP BY attempt_id) s",
    )
    .fetch_one(&pool)
    .await?;
    let attempts_dense = attempts_dense.unwrap_or(false);
    println!("  evidence         {rows} attempts with rows, versions dense: {attempts_dense}");

    // pgbench, same SQL, same tables, one attempt per client.
    sqlx::query("CREATE TABLE pgbench_attempts (n integer PRIMARY KEY, attempt_id uuid NOT NULL)")
        .execute(&owner)
        .await?;
    for (index, attempt) in started.attempts.iter().enumerate() {
        sqlx::query("INSERT INTO pgbench_attempts (n, attempt_id) VALUES ($1, $2)")
            .bind(i32::try_from(index + 1)?)
            .bind(attempt.id.as_uuid())
            .execute(&owner)
            .await?;
    }
    pool.close().await;
    owner.close().await;
    let script = std::env::temp_dir().join(format!("{database}.pgbench.sql"));
    std::fs::write(&script, PGBENCH_SCRIPT)?;
    let host = std::env::var("PGHOST").unwrap_or_else(|_| "127.0.0.1".into());
    let sync_commit = std::env::var("BENCH_SYNC_COMMIT").unwrap_or_else(|_| "on".into());
    println!("  synchronous_commit {sync_commit} (both sides)");
    let output = Command::new("pgbench")
        .env("PGOPTIONS", format!("-c synchronous_commit={sync_commit}"))
        .args([
            "-n",
            "-M",
            "prepared",
            "-c",
            &ATTEMPTS.to_string(),
            "-j",
            "2",
        ])
        .args(["-T", &seconds.to_string(), "-h", &host, "-U", "postgres"])
        .arg("-f")
        .arg(&script)
        .arg(database)
        .output();
    let _ = std::fs::remove_file(&script);
    let pgbench_rate = match output {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            for line in text
                .lines()
                .filter(|l| l.contains("latency") || l.starts_with("tps"))
            {
                println!("  pgbench          {}", line.trim());
            }
            text.lines()
                .find(|l| l.starts_with("tps = "))
                .and_then(|l| l["tps = ".len()..].split_whitespace().next())
                .and_then(|v| v.parse::<f64>().ok())
        }
        Ok(out) => {
            println!("  pgbench failed: {}", String::from_utf8_lossy(&out.stderr));
            None
        }
        Err(e) => {
            println!("  pgbench could not run: {e}");
            None
        }
    };
    if let Some(pgbench) = pgbench_rate {
        println!(
            "  ratio            {:.2} of the same-SQL pgbench's {pgbench:.0} tps",
            rate / pgbench
        );
    }
    let anchor = anchor_pgbench(database, seconds, &sync_commit)?;
    let ratio = anchor.map(|tps| rate / tps);
    if let Some(ratio) = ratio {
        println!("  anchor ratio     {ratio:.2} (target >= 0.6)");
    }
    let pass = p99 <= 25.0 && ratio.is_some_and(|r| r >= 0.6);
    println!("  verdict          {}", if pass { "PASS" } else { "MISS" });
    Ok(())
}

/// The shared `pgbench` anchor, as its README runs it: a fresh
/// database with `anchor.sql`, then `dispatch.pgbench` over the unix socket
/// (simple queries, a random attempt per transaction). Its tps, or `None`
/// (with the reason printed) when it could not run.
fn anchor_pgbench(
    database: &str,
    seconds: u64,
    sync_commit: &str,
) -> Result<Option<f64>, Box<dyn std::error::Error>> {
    let dir = std::env::var("BENCH_ANCHOR_DIR").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/anchors/pgbench"
        )
        .to_owned()
    });
    let anchor_db = database.replace("toolmock_bench_", "toolmock_anchor_");
    // The unix socket: no host, whatever PGHOST says.
    let run = |program: &str, args: &[&str]| {
        Command::new(program)
            .env_remove("PGHOST")
            .env("PGOPTIONS", format!("-c synchronous_commit={sync_commit}"))
            .args(["-U", "postgres"])
            .args(args)
            .output()
    };
    let created = run("createdb", &[&anchor_db])?;
    if !created.status.success() {
        println!(
            "  anchor           could not create its database: {}",
            String::from_utf8_lossy(&created.stderr)
        );
        return Ok(None);
    }
    let sql = format!("{dir}/anchor.sql");
    let script = format!("{dir}/dispatch.pgbench");
    let setup = run("psql", &["-q", "-d", &anchor_db, "-f", &sql])?;
    let measured = if setup.status.success() {
        let out = run(
            "pgbench",
            &[
                "-n",
                "-c",
                &ATTEMPTS.to_string(),
                "-j",
                "2",
                "-T",
                &seconds.to_string(),
                "-f",
                &script,
                &anchor_db,
            ],
        )?;
        let text = String::from_utf8_lossy(&out.stdout);
        for line in text
            .lines()
            .filter(|l| l.contains("latency") || l.starts_with("tps"))
        {
            println!("  anchor pgbench   {}", line.trim());
        }
        if !out.status.success() {
            println!("  anchor failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        text.lines()
            .find(|l| l.starts_with("tps = "))
            .and_then(|l| l["tps = ".len()..].split_whitespace().next())
            .and_then(|v| v.parse::<f64>().ok())
    } else {
        println!(
            "  anchor           {sql} failed: {}",
            String::from_utf8_lossy(&setup.stderr)
        );
        None
    };
    let _ = run("dropdb", &["--force", &anchor_db]);
    Ok(measured)
}
