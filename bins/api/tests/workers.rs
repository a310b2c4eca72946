//! `toolmock-api serve --workers N`: the real binary runs the scripted
//! attempts it queued with the worker loop in its own process; with the
//! default (`0`) they stay queued for worker processes.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed expectation must panic

mod common;

use common::{SECRET, Server, binary, database_url};
use serde_json::Value;
use sqlx::PgPool;
use std::time::{Duration, Instant};

fn bearer() -> String {
    let out = binary()
        .args(["token", "--tenant", "acme"])
        .args(["--permission", "AIManager:RunSimulations"])
        .env("TOOLMOCK_JWT_SECRET", SECRET)
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

async fn start(server: &Server) -> String {
    let document: Value =
        serde_json::from_str(include_str!("../../../fixtures/api/notes-simulation.json")).unwrap();
    let reply = reqwest::Client::new()
        .post(server.url("/api/simulations"))
        .bearer_auth(bearer())
        .json(&document)
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status().as_u16(), 201);
    let body: Value = reply.json().await.unwrap();
    body["id"].as_str().unwrap().to_owned()
}

async fn statuses(pool: &PgPool, simulation: &str) -> Vec<(String, i64)> {
    sqlx::query_as(
        "SELECT status, count(*) FROM attempts WHERE simulation_id = $1::uuid \
         GROUP BY status ORDER BY status",
    )
    .bind(simulation)
    .fetch_all(pool)
    .await
    .unwrap()
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn serve_with_workers_runs_the_scripted_attempts_it_queued(pool: PgPool) {
    let url = database_url(&pool, Some("toolmock_app")).await;
    // A free port for the metrics (taken back by the server at once).
    let metrics_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let metrics_addr = format!("127.0.0.1:{metrics_port}");
    let server = Server::start(&url, &["--workers", "2", "--metrics-addr", &metrics_addr]);
    let simulation = start(&server).await;
    let began = Instant::now();
    while statuses(&pool, &simulation).await != [("finished".to_owned(), 6)] {
        assert!(began.elapsed() < Duration::from_secs(30), "not finished");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The in-process workers' metrics and health, on their own port.
    let health = reqwest::get(format!("http://{metrics_addr}/healthz"))
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
    let claimed = || async {
        let text = reqwest::get(format!("http://{metrics_addr}/metrics"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix("toolmock_worker_attempts_claimed_total "))
            .map(|v| v.parse::<f64>().unwrap())
    };
    assert_eq!(claimed().await, Some(6.0));
    let owners: Vec<String> =
        sqlx::query_scalar("SELECT DISTINCT owner FROM attempt_leases WHERE event = 'claimed'")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(owners.len(), 1);
    assert!(owners[0].starts_with("api:"), "{owners:?}");
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn serve_without_workers_only_queues(pool: PgPool) {
    let url = database_url(&pool, Some("toolmock_app")).await;
    let server = Server::start(&url, &[]);
    let simulation = start(&server).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        statuses(&pool, &simulation).await,
        [("queued".to_owned(), 6)]
    );
}
