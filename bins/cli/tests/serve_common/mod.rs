//! What the `toolmock serve` tests share: the real binary as an HTTP
//! server on a free port, a curl-based JSON-RPC client, the installed
//! clients and fixtures.
#![allow(dead_code, unreachable_pub)]

use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

pub fn scratch() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "serve-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

pub fn calendar() -> PathBuf {
    root().join("fixtures/mcp/serve/calendar.json")
}

pub fn installed(path: PathBuf) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-mcp-servers.sh",
        path.display()
    );
    path
}

pub fn python() -> PathBuf {
    installed(root().join(".cache/mcp-venv/bin/python"))
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A `toolmock serve --http 127.0.0.1:0` process and the address it bound.
pub struct Served {
    pub child: Child,
    pub base: String,
    stdout: Option<std::thread::JoinHandle<String>>,
}

impl Served {
    pub fn start(simulation: &Path, args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolmock"))
            .arg("serve")
            .arg(simulation)
            .args(["--http", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("toolmock serve starts");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let mut line = String::new();
        stderr.read_line(&mut line).expect("the serving line");
        let base = line
            .split_whitespace()
            .find_map(|w| w.strip_suffix("/attempts/{n}/mcp;"))
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_owned();
        let mut stdout = child.stdout.take().expect("stdout");
        let stdout = std::thread::spawn(move || {
            let mut out = String::new();
            let _ = std::io::Read::read_to_string(&mut stdout, &mut out);
            // Keep draining stderr so the server never blocks on it.
            let mut rest = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr, &mut rest);
            out
        });
        Served {
            child,
            base,
            stdout: Some(stdout),
        }
    }

    pub fn url(&self, attempt: u32) -> String {
        format!("{}/attempts/{attempt}/mcp", self.base)
    }

    /// Stops it (SIGTERM) and returns its exit code and stdout.
    pub fn stop(mut self) -> (i32, String) {
        let pid = self.child.id().to_string();
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        let began = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            assert!(
                began.elapsed() < Duration::from_secs(20),
                "serve did not stop on SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let out = self
            .stdout
            .take()
            .expect("stdout thread")
            .join()
            .expect("stdout thread");
        (status.code().unwrap_or(-1), out)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A POST with curl (the test needs no HTTP client of its own): the status
/// and the body as JSON.
pub fn post(url: &str, body: Option<&Value>) -> (u16, Value) {
    let mut command = Command::new("curl");
    command.args(["-sS", "-X", "POST", "-w", "\n%{http_code}", url]);
    if let Some(body) = body {
        command.args([
            "-H",
            "content-type: application/json",
            "-H",
            "accept: application/json, text/event-stream",
            "--data-binary",
            &body.to_string(),
        ]);
    }
    let out = command.output().expect("curl runs");
    let all = text(&out.stdout);
    let (body, status) = all.rsplit_once('\n').expect("status line");
    let status: u16 = status.trim().parse().expect("status");
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
    };
    (status, body)
}

pub fn rpc(url: &str, method: &str, params: Value) -> Value {
    let (status, body) = post(
        url,
        Some(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})),
    );
    assert_eq!(status, 200, "{body}");
    body
}

pub fn discover(url: &str) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_toolmock"))
        .args(["discover", "--url", url])
        .output()
        .expect("discover runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("discover prints JSON")
}
