//! Fail closed across processes: two `toolmock-api` processes on one
//! database. A harness fault that cannot be written on the first (an
//! unknown tool while `harness_errors` refuses every insert) still makes the
//! attempt `harness_error` when the second finishes it, and when the first,
//! killed and restarted, does — the call's begin mark was committed before
//! the call was processed (docs/data-model.md, "Faults that cannot be
//! written").

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: a failed expectation must panic

use serde_json::{Value, json};
use sqlx::PgPool;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod common;
use common::database_url;

const SECRET: &str = "fail-closed test secret, at least 32 bytes";

/// One `toolmock-api serve` process, killed when dropped.
struct Process {
    child: Child,
    base: String,
    /// The last lines the server wrote to stderr (an abort's message).
    last_lines: Arc<Mutex<VecDeque<String>>>,
}

impl Process {
    fn start(url: &str) -> Process {
        Self::spawn(Command::new(env!("CARGO_BIN_EXE_toolmock-api")), url)
    }

    /// The server under `prlimit --as=BYTES`: its address space is capped.
    fn start_limited(url: &str, bytes: u64) -> Process {
        let mut command = Command::new("prlimit");
        command
            .arg(format!("--as={bytes}"))
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_toolmock-api"));
        Self::spawn(command, url)
    }

    fn spawn(mut command: Command, url: &str) -> Process {
        let mut child = command
            .args(["serve", "--bind", "127.0.0.1:0", "--log-format", "json"])
            .env("DATABASE_URL", url)
            .env("TOOLMOCK_JWT_SECRET", SECRET)
            .env("RUST_LOG", "info")
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let address = loop {
            let line = lines
                .next()
                .expect("the server logs until it listens")
                .unwrap();
            let Ok(log) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if log["fields"]["message"] == "listening" {
                break log["fields"]["address"].as_str().unwrap().to_owned();
            }
        };
        // Keep draining the logs so the server never blocks on a full pipe.
        let last_lines: Arc<Mutex<VecDeque<String>>> = Arc::default();
        let keep = Arc::clone(&last_lines);
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let mut kept = keep.lock().unwrap();
                if kept.len() == 5 {
                    kept.pop_front();
                }
                kept.push_back(line);
            }
        });
        Process {
            child,
            base: format!("http://{address}"),
            last_lines,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn bearer() -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_toolmock-api"))
        .args(["token", "--tenant", "acme"])
        .args(["--permission", "AIManager:ManageTools"])
        .args(["--permission", "AIManager:RunSimulations"])
        .env("TOOLMOCK_JWT_SECRET", SECRET)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// An inline tool and one case played by an external agent with no
/// expectation: its finish passes unless a harness error decides otherwise.
fn document(attempts: u32) -> Value {
    json!({
        "simulation_version": 1,
        "name": "two processes",
        "attempts": attempts,
        "tools": [{"name": "notes", "from": "custom", "operations": [{
            "name": "add",
            "input_schema": {"type": "object"},
            "output_schema": {"type": "object"}}],
            "definitions": {"add": {"schema_version": 1, "default_variant": "ok",
                "variants": {"ok": {"result": {"saved": true}}},
                "examples": [{"variant": "ok", "input": {}, "expected": {"saved": true}}]}}}],
        "agent": {"name": "scribe", "tools": ["notes"]},
        "cases": [{"name": "writes", "driver": {"type": "external"}}]
    })
}

/// While this holds, `harness_errors` refuses every insert (even the
/// `storage_failed` fallback): the fault cannot be written.
async fn refuse_harness_errors(pool: &PgPool, refuse: bool) {
    let statements: &[&str] = if refuse {
        &[
            "CREATE OR REPLACE FUNCTION test_refuse_insert() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN RAISE EXCEPTION 'the test refuses this insert'; END $$",
            "CREATE TRIGGER test_refuse_insert BEFORE INSERT ON harness_errors \
             FOR EACH ROW EXECUTE FUNCTION test_refuse_insert()",
        ]
    } else {
        &["DROP TRIGGER test_refuse_insert ON harness_errors"]
    };
    for statement in statements {
        sqlx::query(sqlx::AssertSqlSafe(*statement))
            .execute(pool)
            .await
            .unwrap();
    }
}

async fn post(
    client: &reqwest::Client,
    url: String,
    auth: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = client.post(url).bearer_auth(auth);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let reply = request.send().await.unwrap();
    let status = reply.status().as_u16();
    (status, reply.json().await.unwrap_or(Value::Null))
}

/// An unknown tool called on `process` while no harness error can be written.
async fn lose_a_fault(pool: &PgPool, client: &reqwest::Client, process: &Process, attempt: &Value) {
    refuse_harness_errors(pool, true).await;
    let id = attempt["id"].as_str().unwrap();
    let (status, body) = post(
        client,
        process.url(&format!("/api/attempts/{id}/tool-calls")),
        attempt["capability"].as_str().unwrap(),
        Some(json!({"tool": "payments", "operation": "charge", "arguments": {}})),
    )
    .await;
    assert!(
        status >= 500,
        "the fault could not be recorded: {status} {body}"
    );
    refuse_harness_errors(pool, false).await;
    let recorded: i64 =
        sqlx::query_scalar("SELECT count(*) FROM harness_errors WHERE attempt_id = $1::uuid")
            .bind(id)
            .fetch_one(pool)
            .await
            .unwrap();
    assert_eq!(recorded, 0, "nothing of the fault was written");
}

async fn finish(client: &reqwest::Client, process: &Process, attempt: &Value) -> Value {
    let id = attempt["id"].as_str().unwrap();
    let (status, body) = post(
        client,
        process.url(&format!("/api/attempts/{id}/finish")),
        attempt["capability"].as_str().unwrap(),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_fault_lost_on_one_process_fails_the_finish_on_another(pool: PgPool) {
    let url = database_url(&pool, None).await;
    let p1 = Process::start(&url);
    let p2 = Process::start(&url);
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let bearer = bearer();
    let (status, started) = post(
        &client,
        p1.url("/api/simulations"),
        &bearer,
        Some(document(3)),
    )
    .await;
    assert_eq!(status, 201, "{started}");
    let attempts = started["attempts"].as_array().unwrap().clone();

    // Lost on P1, finished on P2.
    lose_a_fault(&pool, &client, &p1, &attempts[0]).await;
    let finished = finish(&client, &p2, &attempts[0]).await;
    assert_eq!(finished["outcome"], "harness_error", "{finished}");

    // Lost on P1, which is then killed and restarted; finished on the new P1.
    lose_a_fault(&pool, &client, &p1, &attempts[1]).await;
    p1.kill();
    let p1 = Process::start(&url);
    let finished = finish(&client, &p1, &attempts[1]).await;
    assert_eq!(finished["outcome"], "harness_error", "{finished}");

    // A clean attempt still passes on the other process.
    let id = attempts[2]["id"].as_str().unwrap();
    let (status, body) = post(
        &client,
        p1.url(&format!("/api/attempts/{id}/tool-calls")),
        attempts[2]["capability"].as_str().unwrap(),
        Some(json!({"tool": "notes", "operation": "add", "arguments": {}})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let finished = finish(&client, &p2, &attempts[2]).await;
    assert_eq!(finished["outcome"], "passed", "{finished}");
    drop((p1, p2));
}

/// A small deterministic generator (xorshift64*): the same bodies every run.
struct Bodies(u64);

impl Bodies {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn pick<T: Clone>(&mut self, choices: &[T]) -> T {
        let i = usize::try_from(self.next() % choices.len() as u64).unwrap();
        choices[i].clone()
    }

    /// One `POST /api/simulations` body: a valid document with hostile
    /// sizes and values, or bytes that are not one.
    fn body(&mut self) -> Vec<u8> {
        let mut document = document(1);
        document["attempts"] = self.pick(&[
            json!(1),
            json!(1000),
            json!(1001),
            json!(100_000),
            json!(100_001),
            json!(4_294_967_296_u64),
            json!(-1),
            json!(1e300),
            json!("many"),
            json!(null),
        ]);
        let blob = self.pick(&[0_usize, 10_000, 200_000, 300_000, 900_000]);
        document["tools"][0]["definitions"]["add"]["initial_state"] =
            json!({"blob": "x".repeat(blob)});
        let cases = self.pick(&[1_usize, 2, 50, 2000]);
        document["cases"] = Value::Array(
            (0..cases)
                .map(|i| json!({"name": format!("case {i}"), "driver": {"type": "external"}}))
                .collect(),
        );
        let mut bytes = serde_json::to_vec(&document).unwrap();
        match self.next() % 6 {
            0 => bytes.truncate(usize::try_from(self.next() % (bytes.len() as u64 + 1)).unwrap()),
            1 => {
                let depth = usize::try_from(self.next() % 100_000).unwrap();
                bytes = [&b"["[..]].repeat(depth).concat();
            }
            2 => {
                for _ in 0..8 {
                    let at = usize::try_from(self.next() % bytes.len() as u64).unwrap();
                    bytes[at] = u8::try_from(self.next() % 256).unwrap();
                }
            }
            _ => {}
        }
        bytes
    }
}

/// A line of `/proc/PID/FILE` that starts with `key`, without the key.
fn proc_line(pid: u32, file: &str, key: &str) -> String {
    let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key} in /proc/{pid}/{file}"))
        .trim()
        .to_owned()
}

/// Why the server is gone, if it is within a second (an abort is signal 6,
/// SIGABRT), with its last lines.
fn gone(server: &mut Process) -> Option<String> {
    for _ in 0..10 {
        if let Some(status) = server.child.try_wait().unwrap() {
            std::thread::sleep(Duration::from_millis(100));
            let last = server.last_lines.lock().unwrap();
            let last: Vec<&str> = last.iter().map(String::as_str).collect();
            return Some(format!("{status}; its last lines:\n{}", last.join("\n")));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

/// `POST /api/simulations` with hostile bodies against the real binary whose
/// address space is capped at 2 GB (`prlimit --as`, checked in
/// `/proc/PID/limits`: an allocation past it fails and Rust aborts the
/// process): no crash, no 500, every body answered, the server alive at the
/// end; both refused (`start_too_large`) and accepted starts among them.
/// 300 bodies or 30 s by default; `TOOLMOCK_FUZZ_SECS` runs it longer (its
/// figures are printed; docs/reliability.md records a run).
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn hostile_start_bodies_under_a_2_gb_limit_never_crash(pool: PgPool) {
    const LIMIT: u64 = 2 * 1024 * 1024 * 1024;
    let long: Option<u64> = std::env::var("TOOLMOCK_FUZZ_SECS").ok().map(|s| {
        s.parse()
            .expect("TOOLMOCK_FUZZ_SECS is a number of seconds")
    });
    let (max_bodies, max_time) = match long {
        Some(secs) => (usize::MAX, Duration::from_secs(secs)),
        None => (300, Duration::from_secs(30)),
    };
    let url = database_url(&pool, None).await;
    let mut server = Process::start_limited(&url, LIMIT);
    let pid = server.child.id();
    let limits = proc_line(pid, "limits", "Max address space");
    assert_eq!(
        limits.split_whitespace().collect::<Vec<_>>(),
        [LIMIT.to_string().as_str(), &LIMIT.to_string(), "bytes"],
        "the server runs under the limit (soft, hard)"
    );
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let bearer = bearer();
    let mut bodies = Bodies(0x9E37_79B9_7F4A_7C15);
    let began = std::time::Instant::now();
    let mut statuses = std::collections::BTreeMap::<String, usize>::new();
    let mut sent = 0;
    while sent < max_bodies && began.elapsed() < max_time {
        let body = bodies.body();
        let reply = client
            .post(server.url("/api/simulations"))
            .bearer_auth(&bearer)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await;
        let reply = match reply {
            Ok(reply) => reply,
            Err(e) => panic!(
                "request {sent}: the server did not answer ({e}); {}",
                gone(&mut server).map_or("it is still running".into(), |why| format!(
                    "it is gone: {why}"
                ))
            ),
        };
        let status = reply.status().as_u16();
        let text = reply.text().await.unwrap_or_default();
        assert!(status < 500, "request {sent}: {status} {text}");
        let code = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v["error"]["code"].as_str().map(str::to_owned));
        *statuses
            .entry(format!("{status} {}", code.unwrap_or_default()))
            .or_default() += 1;
        sent += 1;
    }
    let elapsed = began.elapsed();
    assert_eq!(
        gone(&mut server),
        None,
        "the server is alive after {sent} bodies"
    );
    let health = client.get(server.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let peak = proc_line(pid, "status", "VmPeak:");
    let resident = proc_line(pid, "status", "VmHWM:");
    println!(
        "{sent} bodies in {:.1} s; peak address space {peak}, peak resident {resident}; {statuses:?}",
        elapsed.as_secs_f64()
    );
    assert!(sent >= 50, "only {sent} bodies in the time allowed");
    for wanted in ["201 ", "422 start_too_large"] {
        assert!(
            statuses.contains_key(wanted),
            "no {wanted:?} among the answers: {statuses:?}"
        );
    }
    drop(server);
}
