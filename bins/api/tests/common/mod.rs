//! What the binary's tests share: the binary, the test database's URL (as
//! the owner or as another role), and a running server whose JSON log lines
//! can be awaited.

#![allow(dead_code)] // each test file uses part of it

use serde_json::Value;
use sqlx::PgPool;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub(crate) const SECRET: &str = "binary test secret, at least 32 bytes long";

pub(crate) fn binary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_toolmock-api"))
}

/// The test database's URL as `user` (`None`: the owner of DATABASE_URL).
pub(crate) async fn database_url(pool: &PgPool, user: Option<&str>) -> String {
    let name: String = sqlx::query_scalar("SELECT current_database()")
        .fetch_one(pool)
        .await
        .unwrap();
    let base = std::env::var("DATABASE_URL").unwrap();
    let (server, _) = base.rsplit_once('/').unwrap();
    let url = format!("{server}/{name}");
    match user {
        Some(user) => {
            let (scheme, rest) = url.split_once("://").unwrap();
            let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
            format!("{scheme}://{user}@{host}")
        }
        None => url,
    }
}

pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) address: String,
    logs: mpsc::Receiver<Value>,
}

impl Server {
    pub(crate) fn start(url: &str, extra: &[&str]) -> Server {
        let mut child = binary()
            .args(["serve", "--bind", "127.0.0.1:0", "--log-format", "json"])
            .args(extra)
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
                let Ok(line) = line else { break };
                let value = serde_json::from_str(&line).unwrap_or(Value::String(line));
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

    pub(crate) fn wait_for(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
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

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
