//! The real binary: a development token in one step, `serve` with JSON logs
//! carrying request ids, readiness after migrations, and a clean exit on
//! SIGTERM.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: a failed expectation must panic

use serde_json::{Value, json};
use sqlx::PgPool;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

mod common;
use common::database_url;

const SECRET: &str = "process test secret, at least 32 bytes";

fn binary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_toolmock-api"))
}

struct Server {
    child: Child,
    address: String,
    logs: mpsc::Receiver<Value>,
}

impl Server {
    fn start(url: &str) -> Server {
        let mut child = binary()
            .args(["serve", "--bind", "127.0.0.1:0", "--log-format", "json"])
            .env("DATABASE_URL", url)
            .env("TOOLMOCK_JWT_SECRET", SECRET)
            .env("RUST_LOG", "info")
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let (tx, logs) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let line = line.unwrap();
                let value = serde_json::from_str(&line)
                    .unwrap_or_else(|_| panic!("a log line that is not JSON: {line}"));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let mut server = Server {
            child,
            address: String::new(),
            logs,
        };
        let listening = server.wait_for(|l| l["fields"]["message"] == "listening");
        server.address = listening["fields"]["address"].as_str().unwrap().to_owned();
        server
    }

    fn wait_for(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let line = self
                .logs
                .recv_timeout(Duration::from_secs(30))
                .expect("the expected log line within 30 s");
            if pred(&line) {
                return line;
            }
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn serve_token_logs_and_sigterm(pool: PgPool) {
    let url = database_url(&pool).await;
    // A development token in one step.
    let out = binary()
        .args([
            "token",
            "--tenant",
            "acme",
            "--permission",
            "AIManager:ManageTools",
        ])
        .env("TOOLMOCK_JWT_SECRET", SECRET)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert_eq!(token.split('.').count(), 3);

    let mut server = Server::start(&url);
    let client = reqwest::Client::new();
    for path in ["/healthz", "/readyz"] {
        let reply = client.get(server.url(path)).send().await.unwrap();
        assert_eq!(reply.status(), 200, "{path}");
    }
    let reply = client
        .post(server.url("/api/tools"))
        .bearer_auth(&token)
        .header("x-request-id", "process-test-1")
        .json(&json!({"name": "calendar", "source": {"type": "custom", "operations": [
            {"name": "book", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}}]}}))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 201);
    assert_eq!(reply.headers()["x-request-id"], "process-test-1");
    // The request's log line carries its id and status.
    let served = server.wait_for(|l| {
        l["fields"]["message"] == "served" && l["span"]["request_id"] == "process-test-1"
    });
    assert_eq!(served["fields"]["status"], 201);
    assert_eq!(served["span"]["path"], "/api/tools");

    // A token of the wrong secret is refused by the real server too.
    let reply = client
        .get(server.url("/api/tools/00000000-0000-4000-8000-000000000000"))
        .bearer_auth("a.b.c")
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 401);

    // SIGTERM: a graceful stop and a clean exit.
    let pid = server.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    server.wait_for(|l| l["fields"]["message"] == "SIGTERM: shutting down");
    server.wait_for(|l| l["fields"]["message"] == "stopped");
    let status = server.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

#[test]
fn configuration_errors_are_clear() {
    let out = binary()
        .args([
            "serve",
            "--database-url",
            "postgres://127.0.0.1:1/none",
            "--jwt-secret",
            "short",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("at least 32 bytes"), "{stderr}");
    let out = binary()
        .args(["token", "--tenant", "acme"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let out = binary().args(["serve", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--database-url",
        "--bind",
        "--jwt-secret",
        "--jwt-public-key",
        "--jwt-issuer",
        "--jwt-audience",
        "--body-limit",
        "--request-timeout-secs",
        "--concurrency-limit",
        "--log-format",
        "--generator-url",
        "--generator-max-attempts",
    ] {
        assert!(help.contains(flag), "{flag} missing from --help");
    }
    assert!(
        help.contains("DATABASE_URL") && help.contains("TOOLMOCK_BODY_LIMIT"),
        "{help}"
    );
}
