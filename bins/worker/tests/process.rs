//! The worker as a process, on real PostgreSQL: attempts queued exactly as
//! the API queues them (install, start, keep the document, queue), run by
//! real `toolmock-worker` processes that are killed, paused, resumed and
//! stopped with real signals.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed expectation must panic

use serde_json::{Value, json};
use sqlx::PgPool;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use toolmock_runtime::Dispatcher;
use toolmock_runtime::backend::Catalog;
use toolmock_runtime::model::AttemptId;
use toolmock_simulation::{Files, install_inline, load_value, start_request};
use toolmock_store::PgStore;
use uuid::Uuid;

/// The notes fixture with one scripted case of `calls` calls, each
/// delayed `delay_ms`, and `attempts` attempts.
fn document(calls: usize, delay_ms: u32, attempts: u32) -> Value {
    let mut doc: Value =
        serde_json::from_str(include_str!("../../../fixtures/api/notes-simulation.json")).unwrap();
    doc["attempts"] = json!(attempts);
    doc["tools"][0]["definitions"]["add"]["variants"]["ok"]["delay_ms"] = json!(delay_ms);
    let steps: Vec<Value> = (0..calls)
        .map(|i| json!({"tool": "notes", "operation": "add", "arguments": {"text": format!("n{i}")}}))
        .collect();
    doc["cases"] = json!([{
        "name": "writes",
        "driver": {"type": "scripted", "steps": steps},
        "expect": {"final_state": {"exact": {"last": format!("n{}", calls - 1)}}}
    }]);
    doc
}

/// Starts `document` and queues its attempts, as `POST /api/simulations` does.
async fn queue(pool: &PgPool, document: &Value) -> Vec<Uuid> {
    let store = PgStore::new(pool.clone());
    let dispatcher = Dispatcher::new(store.clone());
    let tenant = store.create_tenant("acme").await.unwrap();
    let loaded = load_value(document, "request", &Files::InlineOnly).unwrap();
    let installed = install_inline(&dispatcher, tenant, &loaded).await.unwrap();
    let mut request = start_request(&loaded.document, installed.agent).unwrap();
    request.lease_owner = "api:test".into();
    request.lease = Duration::from_secs(3600);
    let started = dispatcher.start(tenant, &request).await.unwrap();
    store
        .record_simulation_document(tenant, started.id, &loaded.document.name, document, "test")
        .await
        .unwrap();
    let ids: Vec<AttemptId> = started.attempts.iter().map(|a| a.id).collect();
    assert_eq!(
        store.queue_attempts(tenant, &ids).await.unwrap(),
        ids.len() as u64
    );
    ids.iter().map(|a| a.as_uuid()).collect()
}

/// The test database's URL as the application role.
async fn app_url(pool: &PgPool) -> String {
    let name: String = sqlx::query_scalar("SELECT current_database()")
        .fetch_one(pool)
        .await
        .unwrap();
    let base = std::env::var("DATABASE_URL").unwrap();
    let (server, _) = base.rsplit_once('/').unwrap();
    let (scheme, rest) = server.split_once("://").unwrap();
    let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    format!("{scheme}://toolmock_app@{host}/{name}")
}

struct Worker {
    child: Child,
    logs: mpsc::Receiver<Value>,
    /// Where it serves /metrics and /healthz, when asked to.
    metrics: Option<String>,
}

impl Worker {
    fn start(url: &str, owner: &str, extra: &[&str]) -> Worker {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolmock-worker"))
            .args(["--log-format", "json", "--owner", owner, "--poll-ms", "100"])
            .args(extra)
            .env("DATABASE_URL", url)
            .env("RUST_LOG", "info")
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let (tx, logs) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            // Bytes, not `lines()`: a line that is not UTF-8 (two threads'
            // long lines interleaved) is kept, lossily, and reading goes on.
            for line in BufReader::new(stderr).split(b'\n') {
                let Ok(line) = line else { break };
                let line = String::from_utf8_lossy(&line).into_owned();
                let value = serde_json::from_str(&line).unwrap_or(Value::String(line));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let mut worker = Worker {
            child,
            logs,
            metrics: None,
        };
        if extra.contains(&"--metrics-addr") {
            let line = worker.wait_for(|l| l["fields"]["message"] == "serving metrics", 30);
            worker.metrics = Some(format!(
                "http://{}",
                line["fields"]["address"].as_str().unwrap()
            ));
        }
        worker.wait_for(|l| l["fields"]["message"] == "working", 30);
        worker
    }

    /// `GET` of one of its metrics server's paths: the status and body.
    async fn get(&self, path: &str) -> (u16, String) {
        let base = self.metrics.as_ref().expect("started with --metrics-addr");
        let response = reqwest::get(format!("{base}{path}")).await.unwrap();
        let status = response.status().as_u16();
        (status, response.text().await.unwrap())
    }

    /// The value of one sample of its Prometheus exposition (`name` with
    /// its labels as written, e.g. `x_total{outcome="passed"}`); 0 when
    /// absent. Every other line must parse as a sample or a comment.
    async fn sample(&self, name: &str) -> f64 {
        let (status, text) = self.get("/metrics").await;
        assert_eq!(status, 200);
        let mut found = 0.0;
        for line in text.lines() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (series, value) = line.rsplit_once(' ').expect("a sample line");
            let value: f64 = value.parse().expect("a sample's value");
            if series == name {
                found = value;
            }
        }
        found
    }

    fn wait_for(&mut self, pred: impl Fn(&Value) -> bool, secs: u64) -> Value {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.logs.recv_timeout(left) {
                Ok(line) => line,
                Err(e) => panic!(
                    "the expected log line in time: {e}; the worker: {:?}",
                    self.child.try_wait()
                ),
            };
            if pred(&line) {
                return line;
            }
        }
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([format!("-{name}"), self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-CONT".to_owned(), self.child.id().to_string()])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Attempts not finished yet.
async fn unfinished(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM attempts WHERE status <> 'finished'")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Attempts that have recorded a call.
async fn attempts_begun(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(DISTINCT attempt_id) FROM evidence")
        .fetch_one(pool)
        .await
        .unwrap()
}

async fn count(pool: &PgPool, sql: &str, attempt: Uuid) -> i64 {
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
        .bind(attempt)
        .fetch_one(pool)
        .await
        .unwrap()
}

async fn evidence(pool: &PgPool, attempt: Uuid) -> i64 {
    count(
        pool,
        "SELECT count(*) FROM evidence WHERE attempt_id = $1",
        attempt,
    )
    .await
}

async fn outcome(pool: &PgPool, attempt: Uuid) -> Option<String> {
    sqlx::query_scalar("SELECT outcome FROM attempts WHERE id = $1")
        .bind(attempt)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Waits until `check` holds, polling every 50 ms, at most `secs`.
async fn until<F, Fut>(secs: u64, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !check().await {
        assert!(Instant::now() < deadline, "{what}: not within {secs} s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every record an attempt has, of every append-only table a worker writes.
async fn records(pool: &PgPool, attempt: Uuid) -> Vec<i64> {
    let mut counts = Vec::new();
    for table in [
        "calls_begun",
        "evidence",
        "tool_input_errors",
        "harness_errors",
        "attempt_judgements",
    ] {
        let sql = format!("SELECT count(*) FROM {table} WHERE attempt_id = $1");
        counts.push(count(pool, &sql, attempt).await);
    }
    counts
}

async fn history(pool: &PgPool, attempt: Uuid) -> Vec<(String, String)> {
    sqlx::query_as("SELECT event, owner FROM attempt_leases WHERE attempt_id = $1 ORDER BY id")
        .bind(attempt)
        .fetch_all(pool)
        .await
        .unwrap()
}

async fn harness_codes(pool: &PgPool, attempt: Uuid) -> Vec<String> {
    sqlx::query_scalar("SELECT code FROM harness_errors WHERE attempt_id = $1 ORDER BY id")
        .bind(attempt)
        .fetch_all(pool)
        .await
        .unwrap()
}

/// A pool too small both to listen for work and to run it is refused on
/// the command line, before anything connects.
#[test]
fn a_pool_of_one_connection_is_refused() {
    let output = Command::new(env!("CARGO_BIN_EXE_toolmock-worker"))
        .args(["--max-connections", "1"])
        .env("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--max-connections"), "{stderr}");
    assert!(stderr.contains("2..=1024"), "{stderr}");
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_killed_worker_s_attempt_ends_lease_expired_within_the_lease(pool: PgPool) {
    let url = app_url(&pool).await;
    let attempt = queue(&pool, &document(10, 300, 1)).await[0];
    let mut a = Worker::start(
        &url,
        "worker-a",
        &["--lease-ms", "1500", "--real-delays", "--reap-ms", "600000"],
    );
    until(20, "a first call", || async {
        evidence(&pool, attempt).await >= 1
    })
    .await;
    a.child.kill().unwrap(); // SIGKILL
    a.child.wait().unwrap();
    let killed = Instant::now();
    let b = Worker::start(
        &url,
        "worker-b",
        &[
            "--lease-ms",
            "1500",
            "--reap-ms",
            "100",
            "--metrics-addr",
            "127.0.0.1:0",
        ],
    );
    until(10, "the reaper's finish", || async {
        outcome(&pool, attempt).await.is_some()
    })
    .await;
    assert_eq!(
        b.sample("toolmock_worker_lease_expiries_total").await,
        1.0,
        "the reaper's end is counted"
    );
    // Within the lease (1.5 s) and a sweep, not an hour.
    assert!(
        killed.elapsed() < Duration::from_secs(4),
        "{:?}",
        killed.elapsed()
    );
    assert_eq!(
        outcome(&pool, attempt).await.as_deref(),
        Some("harness_error")
    );
    assert!(
        harness_codes(&pool, attempt)
            .await
            .contains(&"lease_expired".to_owned())
    );
    let live = count(
        &pool,
        "SELECT count(*) FROM attempt_capabilities WHERE attempt_id = $1 AND revoked_at IS NULL",
        attempt,
    )
    .await;
    assert_eq!(live, 0, "every capability of it is revoked");
    let events: Vec<String> = history(&pool, attempt)
        .await
        .into_iter()
        .map(|(e, _)| e)
        .collect();
    assert_eq!(events, ["queued", "claimed", "expired"]);
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_paused_worker_s_late_writes_are_refused_by_the_fence(pool: PgPool) {
    let url = app_url(&pool).await;
    let attempt = queue(&pool, &document(6, 400, 1)).await[0];
    let mut a = Worker::start(
        &url,
        "worker-a",
        &[
            "--lease-ms",
            "1000",
            "--heartbeat-ms",
            "250",
            "--real-delays",
            "--reap-ms",
            "600000",
            "--metrics-addr",
            "127.0.0.1:0",
        ],
    );
    until(20, "a first call", || async {
        evidence(&pool, attempt).await >= 1
    })
    .await;
    a.signal("STOP");
    let _b = Worker::start(
        &url,
        "worker-b",
        &["--lease-ms", "1000", "--reap-ms", "100"],
    );
    until(10, "the reaper's finish", || async {
        outcome(&pool, attempt).await.is_some()
    })
    .await;
    assert_eq!(
        outcome(&pool, attempt).await.as_deref(),
        Some("harness_error")
    );
    let before = records(&pool, attempt).await;
    a.signal("CONT");
    // The paused worker wakes up mid-script and goes on writing (its
    // remaining calls take 2 s): each write is refused by the fence.
    tokio::time::sleep(Duration::from_millis(3000)).await;
    assert_eq!(
        records(&pool, attempt).await,
        before,
        "nothing the paused worker did after losing its lease is recorded"
    );
    // It did try, and says it was refused.
    a.wait_for(
        |l| {
            l.to_string()
                .contains("lease of the attempt is no longer current")
        },
        20,
    );
    assert_eq!(
        outcome(&pool, attempt).await.as_deref(),
        Some("harness_error")
    );
    let events: Vec<String> = history(&pool, attempt)
        .await
        .into_iter()
        .map(|(e, _)| e)
        .collect();
    assert_eq!(events, ["queued", "claimed", "expired"]);
    // Its metrics count the refusals (published at its heartbeat and when
    // its run ends) and no finish.
    until(10, "the refusals published", || async {
        a.sample("toolmock_worker_fence_refusals_total").await >= 1.0
    })
    .await;
    assert_eq!(
        a.sample("toolmock_worker_attempts_finished_total{outcome=\"passed\"}")
            .await,
        0.0
    );
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_worker_serves_its_health_and_metrics_and_counts_what_it_runs(pool: PgPool) {
    let url = app_url(&pool).await;
    let mut w = Worker::start(&url, "worker-m", &["--metrics-addr", "127.0.0.1:0"]);
    let (status, body) = w.get("/healthz").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["status"],
        "ok"
    );
    assert_eq!(
        w.sample("toolmock_worker_attempts_claimed_total").await,
        0.0
    );
    let (status, _) = w.get("/nothing").await;
    assert_eq!(status, 404);

    let attempts = queue(&pool, &document(3, 0, 3)).await;
    until(20, "every attempt finished", || async {
        let mut done = true;
        for attempt in &attempts {
            done &= outcome(&pool, *attempt).await.is_some();
        }
        done
    })
    .await;
    // The counters move once the run's bookkeeping is done.
    until(5, "the finishes counted", || async {
        w.sample("toolmock_worker_attempts_finished_total{outcome=\"passed\"}")
            .await
            == 3.0
    })
    .await;
    assert_eq!(
        w.sample("toolmock_worker_attempts_claimed_total").await,
        3.0
    );
    assert_eq!(
        w.sample("toolmock_worker_dispatch_latency_seconds_count")
            .await,
        3.0
    );
    assert_eq!(
        w.sample("toolmock_worker_attempt_duration_seconds_count")
            .await,
        3.0
    );
    assert!(
        w.sample("toolmock_worker_dispatch_latency_seconds_bucket{le=\"+Inf\"}")
            .await
            == 3.0
    );
    assert_eq!(w.sample("toolmock_worker_attempts_held").await, 0.0);
    assert_eq!(w.sample("toolmock_worker_fence_refusals_total").await, 0.0);
    // The metrics server does not keep a stopped worker alive.
    w.signal("TERM");
    w.wait_for(|l| l["fields"]["message"] == "stopped", 20);
    assert!(w.child.wait().unwrap().success());
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn two_workers_run_a_thousand_queued_attempts_each_exactly_once(pool: PgPool) {
    let url = app_url(&pool).await;
    let attempts = queue(&pool, &document(2, 0, 1000)).await;
    assert_eq!(attempts.len(), 1000);
    let _a = Worker::start(&url, "worker-a", &["--concurrency", "4"]);
    let _b = Worker::start(&url, "worker-b", &["--concurrency", "4"]);
    until(240, "every attempt finished", || async {
        unfinished(&pool).await == 0
    })
    .await;
    let outcomes: Vec<(String, i64)> =
        sqlx::query_as("SELECT outcome, count(*) FROM attempts GROUP BY outcome")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(outcomes, [("passed".to_owned(), 1000)]);
    // Each claimed exactly once, each with exactly its two calls' evidence.
    let claims: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT n, count(*) FROM (SELECT attempt_id, count(*) AS n FROM attempt_leases \
         WHERE event = 'claimed' GROUP BY attempt_id) c GROUP BY n",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(claims, [(1, 1000)]);
    let calls: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT n, count(*) FROM (SELECT attempt_id, count(*) AS n FROM evidence \
         GROUP BY attempt_id) e GROUP BY n",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(calls, [(2, 1000)]);
    // Every call's begin mark was written once, as its evidence row's flag
    // (the workers' one-statement path), never as a row of its own.
    let marks: (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM evidence WHERE begin_mark), \
             (SELECT count(*) FROM calls_begun)",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(marks, (2000, 0));
    let judged: i64 = sqlx::query_scalar("SELECT count(*) FROM attempt_judgements")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(judged, 1000);
    let owners: Vec<(String, i64)> = sqlx::query_as(
        "SELECT owner, count(*) FROM attempt_leases WHERE event = 'claimed' \
         GROUP BY owner ORDER BY owner",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(owners.len(), 2, "both workers claimed: {owners:?}");
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn sigterm_lets_held_attempts_finish_and_leaves_the_rest_queued(pool: PgPool) {
    let url = app_url(&pool).await;
    let attempts = queue(&pool, &document(4, 250, 12)).await;
    let mut a = Worker::start(
        &url,
        "worker-a",
        &["--concurrency", "4", "--real-delays", "--grace-secs", "30"],
    );
    until(20, "four attempts running", || async {
        attempts_begun(&pool).await >= 4
    })
    .await;
    a.signal("TERM");
    let status = a.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let mut held = 0;
    for attempt in &attempts {
        let events = history(&pool, *attempt).await;
        if events.iter().any(|(e, _)| e == "claimed") {
            held += 1;
            assert_eq!(outcome(&pool, *attempt).await.as_deref(), Some("passed"));
        } else {
            assert_eq!(outcome(&pool, *attempt).await, None, "still queued");
        }
    }
    assert_eq!(held, 4, "nothing claimed after SIGTERM");
    let _b = Worker::start(&url, "worker-b", &["--concurrency", "4"]);
    until(30, "the rest finished", || async {
        unfinished(&pool).await == 0
    })
    .await;
    for attempt in &attempts {
        assert_eq!(outcome(&pool, *attempt).await.as_deref(), Some("passed"));
        let claims = history(&pool, *attempt)
            .await
            .iter()
            .filter(|(e, _)| e == "claimed")
            .count();
        assert_eq!(claims, 1, "run exactly once");
        assert_eq!(evidence(&pool, *attempt).await, 4);
    }
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn sigterm_past_the_grace_ends_begun_attempts_and_doubles_nothing(pool: PgPool) {
    let url = app_url(&pool).await;
    let attempts = queue(&pool, &document(8, 500, 6)).await;
    let mut a = Worker::start(
        &url,
        "worker-a",
        &["--concurrency", "2", "--real-delays", "--grace-secs", "0"],
    );
    until(20, "two attempts running", || async {
        attempts_begun(&pool).await >= 2
    })
    .await;
    a.signal("TERM");
    let status = a.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let _b = Worker::start(&url, "worker-b", &["--concurrency", "4"]);
    until(60, "every attempt finished", || async {
        unfinished(&pool).await == 0
    })
    .await;
    let mut abandoned = 0;
    for attempt in &attempts {
        let events: Vec<String> = history(&pool, *attempt)
            .await
            .into_iter()
            .map(|(e, _)| e)
            .collect();
        if events.contains(&"abandoned".to_owned()) {
            // Begun under worker-a: ended, never replayed.
            abandoned += 1;
            assert_eq!(events, ["queued", "claimed", "abandoned"]);
            assert_eq!(
                outcome(&pool, *attempt).await.as_deref(),
                Some("harness_error")
            );
            assert!(
                harness_codes(&pool, *attempt)
                    .await
                    .contains(&"lease_expired".to_owned())
            );
        } else {
            assert_eq!(outcome(&pool, *attempt).await.as_deref(), Some("passed"));
            assert_eq!(
                events.iter().filter(|e| *e == "claimed").count(),
                1,
                "{events:?}"
            );
            assert_eq!(evidence(&pool, *attempt).await, 8);
        }
    }
    assert_eq!(abandoned, 2);
}

/// A `real_tools` simulation through the queue and a worker process: MCP
/// tools by `tools/call` on the fixture server, a custom operation by a
/// `POST`, an `http_request` effect node — each call's evidence (the
/// effect node's too) marked `real` — and a tool whose `structuredContent` breaks its own output
/// schema ends its attempt `harness_error`.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_worker_runs_a_real_tools_simulation_through_the_real_handlers(pool: PgPool) {
    use toolmock_discovery::{Endpoint, Options, discover};
    let mcp = toolmock_real_tools_fixture::McpFixture::start();
    let http = toolmock_real_tools_fixture::HttpFixture::start();
    let discovery = discover(&Endpoint::http(&mcp.url).unwrap(), &Options::default())
        .await
        .unwrap();
    let contracts: Vec<Value> = discovery
        .operations
        .iter()
        .filter(|op| ["lookup_patient", "count_visits"].contains(&op.operation.name.as_str()))
        .map(|op| {
            serde_json::to_value(toolmock_schema::ContractEntry::of_discovered(op).unwrap())
                .unwrap()
        })
        .collect();
    let document =
        toolmock_real_tools_fixture::document(Value::Array(contracts), &mcp.url, &http.url);
    let attempts = queue(&pool, &document).await;
    assert_eq!(attempts.len(), 2);
    let url = app_url(&pool).await;
    // The fixtures are on 127.0.0.1: allowed explicitly (without the flag
    // every real call is refused, `external_failed`, `private_target`).
    let _w = Worker::start(&url, "worker-real", &["--allow-private-targets"]);
    until(30, "both attempts finished", || async {
        let mut done = true;
        for attempt in &attempts {
            done &= outcome(&pool, *attempt).await.is_some();
        }
        done
    })
    .await;
    let mut seen = Vec::new();
    for attempt in &attempts {
        let executors: Vec<String> = sqlx::query_scalar(
            "SELECT executor FROM evidence WHERE attempt_id = $1 ORDER BY started_at",
        )
        .bind(attempt)
        .fetch_all(&pool)
        .await
        .unwrap();
        seen.push((
            outcome(&pool, *attempt).await.unwrap(),
            executors,
            harness_codes(&pool, *attempt).await,
        ));
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            (
                "harness_error".to_owned(),
                vec![],
                vec!["output_schema_violation".to_owned()]
            ),
            (
                "passed".to_owned(),
                vec!["real".to_owned(), "real".to_owned(), "real".to_owned()],
                vec![]
            ),
        ]
    );
    let answered: Value = sqlx::query_scalar(
        "SELECT result FROM evidence WHERE attempt_id = ANY($1) AND result ? 'patient_id'",
    )
    .bind(&attempts)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(
        answered["first_name"], "Ada",
        "the server's answer, not the mock's"
    );
    assert_eq!(http.bodies("/notes"), [json!({"text": "hello"})]);
    assert_eq!(http.bodies("/hook"), [json!({"note": "sent"})]);
    // The effect node's evidence: the workflow and the node, the node as
    // its pin, its rendered configuration and its answer.
    let effect: (String, String, String, Value, Value) = sqlx::query_as(
        "SELECT tool_name, operation_name, pin_kind, arguments -> 'body', result -> 'status' \
         FROM evidence WHERE attempt_id = ANY($1) AND pin_kind = 'effect'",
    )
    .bind(&attempts)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(
        effect,
        (
            "notify".to_owned(),
            "send".to_owned(),
            "effect".to_owned(),
            json!({"note": "sent"}),
            json!(200)
        )
    );
}

/// A simulation that asks for real delays has them slept by the worker
/// (which runs every other simulation on the virtual clock).
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_worker_sleeps_the_delays_of_a_simulation_that_asks_for_real_delays(pool: PgPool) {
    let url = app_url(&pool).await;
    let mut real = document(3, 400, 1);
    real["real_delays"] = json!(true);
    let attempt = queue(&pool, &real).await[0];
    let _w = Worker::start(&url, "worker-delays", &[]);
    until(20, "the attempt finished", || async {
        outcome(&pool, attempt).await.is_some()
    })
    .await;
    assert_eq!(outcome(&pool, attempt).await.as_deref(), Some("passed"));
    // From its claim to its finish, by PostgreSQL's clock: three 400 ms
    // delays slept.
    let took: f64 = sqlx::query_scalar(
        "SELECT extract(epoch FROM a.finished_at - l.at)::float8 FROM attempts a \
         JOIN attempt_leases l ON l.attempt_id = a.id AND l.event = 'claimed' WHERE a.id = $1",
    )
    .bind(attempt)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(took >= 1.2, "{took} s");
}

/// Without it, a simulation's delays cost no wall time. The delays are long
/// (3 × 10 s) so that a loaded machine's slowness can never pass for one
/// slept delay.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_worker_runs_delays_on_the_virtual_clock_by_default(pool: PgPool) {
    let url = app_url(&pool).await;
    let attempt = queue(&pool, &document(3, 10_000, 1)).await[0];
    let _w = Worker::start(&url, "worker-virtual", &[]);
    until(20, "the attempt finished", || async {
        outcome(&pool, attempt).await.is_some()
    })
    .await;
    let took: f64 = sqlx::query_scalar(
        "SELECT extract(epoch FROM a.finished_at - l.at)::float8 FROM attempts a \
         JOIN attempt_leases l ON l.attempt_id = a.id AND l.event = 'claimed' WHERE a.id = $1",
    )
    .bind(attempt)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(took < 10.0, "{took} s: at least one delay was slept");
}
