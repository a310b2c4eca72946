//! The real binary under issue 19's process-level faults: it migrates as the
//! owner and serves as the least-privilege role (and refuses an unmigrated
//! database in plain words); during a database outage it answers at once
//! without leaking the database's error; slow clients are cut off and the
//! number of connections is bounded.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: a failed expectation must panic

use sqlx::PgPool;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

mod common;

use common::{SECRET, Server, binary, database_url};

fn token() -> String {
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
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// `migrate` as the owner, then `serve` as `toolmock_app`: it reads, writes
/// and is ready. Before `migrate`, `serve` as the role refuses to start and
/// names the command to run.
#[sqlx::test(migrations = false)]
async fn migrate_as_the_owner_serve_as_the_application_role(pool: PgPool) {
    let owner = database_url(&pool, None).await;
    let app = database_url(&pool, Some("toolmock_app")).await;
    // The role is the cluster's: it exists once any database was migrated.
    // On this fresh database, serving fails before and works after migrate.
    let out = binary()
        .args(["serve", "--bind", "127.0.0.1:0", "--database-url", &app])
        .env("TOOLMOCK_JWT_SECRET", SECRET)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not up to date") && stderr.contains("toolmock-api migrate --database-url"),
        "{stderr}"
    );

    let out = binary()
        .args(["migrate", "--database-url", &owner])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let server = Server::start(&app, &[]);
    let client = reqwest::Client::new();
    let ready = client.get(server.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200);
    let created = client
        .post(server.url("/api/tools"))
        .bearer_auth(token())
        .json(&serde_json::json!({"name": "calendar", "source": {"type": "custom", "operations": [
            {"name": "book", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}}]}}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let user: String = sqlx::query_scalar(
        "SELECT usename::text FROM pg_stat_activity WHERE datname = current_database() \
         AND pid <> pg_backend_pid() AND usename = 'toolmock_app' LIMIT 1",
    )
    .fetch_optional(&pool)
    .await
    .unwrap()
    .unwrap_or_default();
    assert_eq!(
        user, "toolmock_app",
        "the server connects as the application role"
    );
}

/// A TCP proxy to PostgreSQL that can be cut: every forwarded connection is
/// closed and new ones are refused, as when the server goes away.
/// It runs on a runtime of its own: the test's thread blocks while it
/// waits for the server's log lines.
struct Proxy {
    port: u16,
    cut: tokio::sync::watch::Sender<bool>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

fn proxy_to_postgres() -> Proxy {
    let upstream = {
        let url = std::env::var("DATABASE_URL").unwrap();
        let rest = url
            .split_once('@')
            .map_or(url.as_str(), |(_, r)| r)
            .to_owned();
        rest.split('/').next().unwrap().to_owned()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let (cut, cutting) = tokio::sync::watch::channel(false);
    runtime.spawn(async move {
        let listener = tokio::net::TcpListener::from_std(listener).unwrap();
        let mut accept_cut = cutting.clone();
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                _ = accept_cut.wait_for(|c| *c) => return, // drops the listener: refused
            };
            let Ok((mut client, _)) = accepted else {
                return;
            };
            let upstream = upstream.clone();
            let mut conn_cut = cutting.clone();
            tokio::spawn(async move {
                let Ok(mut server) = tokio::net::TcpStream::connect(&upstream).await else {
                    return;
                };
                tokio::select! {
                    _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                    _ = conn_cut.wait_for(|c| *c) => {}
                }
            });
        }
    });
    Proxy {
        port,
        cut,
        runtime: Some(runtime),
    }
}

/// PostgreSQL unreachable: `/readyz` answers 503 at once without the
/// database's error, and an API request fails fast instead of hanging.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn an_outage_is_answered_at_once(pool: PgPool) {
    let direct = database_url(&pool, Some("toolmock_app")).await;
    let proxy = proxy_to_postgres();
    let (scheme, rest) = direct.split_once("://").unwrap();
    let (user, rest) = rest.split_once('@').unwrap();
    let (_, database) = rest.split_once('/').unwrap();
    let through_proxy = format!("{scheme}://{user}@127.0.0.1:{}/{database}", proxy.port);
    let mut server = Server::start(&through_proxy, &["--db-acquire-timeout-ms", "500"]);
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    assert_eq!(
        client
            .get(server.url("/readyz"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );

    proxy.cut.send(true).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    for _ in 0..3 {
        let started = Instant::now();
        let reply = client
            .get(server.url("/readyz"))
            .header("x-request-id", "outage-probe")
            .send()
            .await
            .unwrap();
        let waited = started.elapsed();
        assert_eq!(reply.status(), 503);
        let body = reply.text().await.unwrap();
        assert!(waited < Duration::from_secs(2), "readyz took {waited:?}");
        // Exactly the documented answer: nothing of the database's error
        // (which may name hosts, users or databases) is in it.
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"error": {"code": "not_ready",
                "message": "not ready: the database cannot be reached"}})
        );
    }
    // The cause is logged, with the request's id.
    let logged = server.wait_for(|l| {
        l["span"]["request_id"] == "outage-probe"
            && l["fields"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("not ready"))
    });
    assert_eq!(logged["level"], "WARN");

    let started = Instant::now();
    let reply = client
        .get(server.url("/api/tools"))
        .bearer_auth(token())
        .send()
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(reply.status().is_server_error(), "{}", reply.status());
}

fn connect(server: &Server) -> TcpStream {
    let stream = TcpStream::connect(&server.address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    stream
}

/// Whether the server closed `stream` (reads end or fail), polling for up to `within`.
fn closed_within(stream: &mut TcpStream, within: Duration, trickle: bool) -> Option<Duration> {
    let started = Instant::now();
    let mut buffer = [0u8; 1024];
    while started.elapsed() < within {
        if trickle && stream.write_all(b"X-Slow: yes\r\n").is_err() {
            return Some(started.elapsed());
        }
        match stream.read(&mut buffer) {
            Ok(0) => return Some(started.elapsed()),
            Ok(_) => return Some(started.elapsed()), // an answer (408) then close
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return Some(started.elapsed()),
        }
    }
    None
}

/// A client trickling header lines is cut off at the header-read time-out; one
/// trickling its body gets 408; connections beyond the limit wait.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn slow_clients_are_cut_off_and_connections_bounded(pool: PgPool) {
    let url = database_url(&pool, Some("toolmock_app")).await;
    let server = Server::start(
        &url,
        &[
            "--header-read-timeout-secs",
            "1",
            "--body-read-timeout-secs",
            "1",
            "--connection-limit",
            "2",
        ],
    );
    let (server, cut) = tokio::task::spawn_blocking(move || {
        // Headers, one line every 200 ms: cut off after about a second.
        let mut trickler = connect(&server);
        trickler
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            .unwrap();
        let cut = closed_within(&mut trickler, Duration::from_secs(6), true);
        (server, cut)
    })
    .await
    .unwrap();
    let cut = cut.expect("a trickling client is cut off");
    assert!(cut < Duration::from_secs(3), "{cut:?}");

    let server = tokio::task::spawn_blocking(move || {
        // A body announced as 100 bytes, 10 sent: 408 after about a second.
        let mut slow_body = connect(&server);
        slow_body
            .write_all(
                format!(
                    "POST /api/tools HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\
                     Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"name\": ",
                    token()
                )
                .as_bytes(),
            )
            .unwrap();
        slow_body
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut answer = String::new();
        let _ = slow_body.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.contains("body_timeout"), "{answer}");

        // Two connections held open with a partial request: a third client waits.
        let mut held: Vec<TcpStream> = (0..2)
            .map(|_| {
                let mut s = connect(&server);
                s.write_all(b"GET /healthz HTTP/1.1\r\n").unwrap();
                s
            })
            .collect();
        std::thread::sleep(Duration::from_millis(100));
        let mut third = connect(&server);
        third
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut buffer = [0u8; 256];
        let early = third.read(&mut buffer);
        assert!(
            matches!(&early, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut),
            "answered beyond the connection limit: {early:?}"
        );
        // Once the held connections are cut off (header-read time-out), it is served.
        third
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut answer = String::new();
        let _ = third.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        held.clear();
        server
    })
    .await
    .unwrap();
    drop(server);
}
