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

/// A `toolmock serve --stdio` process driven by hand over its pipes
/// (newline-delimited JSON-RPC, as the stdio transport frames it): stdin
/// stays open, so only the server itself can end the attempt.
pub struct StdioServed {
    pub child: std::process::Child,
    /// `None` once the client hung up.
    pub stdin: Option<std::process::ChildStdin>,
    /// `None` once the client hung up.
    pub stdout: Option<std::io::BufReader<std::process::ChildStdout>>,
}

impl StdioServed {
    /// The calendar fixture's `books_a_day` case.
    pub fn start(args: &[&str]) -> Self {
        let mut all = vec!["--case", "books_a_day"];
        all.extend_from_slice(args);
        Self::serve(&calendar(), &all)
    }

    /// `simulation` served over stdio with `args`, initialized.
    pub fn serve(simulation: &Path, args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolmock"))
            .arg("serve")
            .arg(simulation)
            .arg("--stdio")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("toolmock serve starts");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().map(std::io::BufReader::new);
        let mut served = StdioServed {
            child,
            stdin,
            stdout,
        };
        let hello = served.request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "serve-test", "version": "1"}}),
        );
        assert!(hello["result"]["serverInfo"].is_object(), "{hello}");
        served.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        served
    }

    pub fn send(&mut self, message: &Value) {
        use std::io::Write;
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write a request");
        stdin.flush().expect("flush");
    }

    pub fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        use std::io::BufRead;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let stdout = self.stdout.as_mut().expect("stdout open");
            let n = stdout.read_line(&mut line).expect("read an answer");
            assert!(n > 0, "the server closed stdout before answering {method}");
            let message: Value = serde_json::from_str(&line).expect("a JSON-RPC message");
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    pub fn call(&mut self, id: u64, name: &str, arguments: Value) -> Value {
        self.request(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
    }

    /// The client goes away: it closes both its pipes (the server can
    /// neither read from it nor write to it).
    pub fn hang_up(&mut self) {
        self.stdin = None;
        self.stdout = None;
    }

    /// The client closes stdin (and keeps reading).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for the process to exit; its exit code.
    pub fn exit_code(&mut self) -> i32 {
        self.child.wait().expect("wait").code().unwrap_or(-1)
    }

    /// Every message the server writes until it closes stdout.
    pub fn rest(&mut self) -> Vec<Value> {
        use std::io::BufRead;
        let mut messages = Vec::new();
        let mut line = String::new();
        let stdout = self.stdout.as_mut().expect("stdout open");
        while stdout.read_line(&mut line).expect("read") > 0 {
            messages.push(serde_json::from_str(&line).expect("a JSON-RPC message"));
            line.clear();
        }
        messages
    }

    /// Waits for the process to exit on its own (stdin still open).
    pub fn exits_within(&mut self, limit: Duration) -> i32 {
        let began = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status.code().unwrap_or(-1);
            }
            assert!(
                began.elapsed() < limit,
                "serve --stdio did not end its attempt with stdin open"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for StdioServed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The results document `--json` wrote.
pub fn read_results(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("results written")).expect("JSON")
}
