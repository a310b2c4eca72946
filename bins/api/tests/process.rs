//! The real binary: a development token in one step, `serve` with JSON logs
//! carrying request ids, readiness after migrations, and a clean exit on
//! SIGTERM.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: a failed expectation must panic

use serde_json::json;
use sqlx::PgPool;
use std::process::Command;

mod common;

use common::{SECRET, Server, binary, database_url};

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn serve_token_logs_and_sigterm(pool: PgPool) {
    let url = database_url(&pool, None).await;
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

    // One runtime thread (the setting for a host PostgreSQL shares) serves
    // all of it too.
    let mut server = Server::start(&url, &["--runtime-threads", "1"]);
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
    // Nor does the default leeway (5 s) let a token expired 30 s ago in.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let expired = toolmock_api::mint_hs256(
        SECRET.as_bytes(),
        &toolmock_api::Claims {
            sub: "user".into(),
            tenant: "acme".into(),
            permissions: vec!["AIManager:ManageTools".into()],
            exp: now - 30,
            iat: Some(now - 600),
            iss: None,
            aud: None,
        },
    )
    .unwrap();
    let reply = client
        .get(server.url("/api/tools"))
        .bearer_auth(expired)
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
    // A tool-call time-out that a definition's delay could outlast.
    let out = binary()
        .args(["serve", "--database-url", "postgres://127.0.0.1:1/none"])
        .args(["--tool-call-timeout-secs", "30"])
        .env("TOOLMOCK_JWT_SECRET", SECRET)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--tool-call-timeout-secs must be more than 30"),
        "{stderr}"
    );
    // A leeway beyond 5 s is refused.
    let out = binary()
        .args(["serve", "--database-url", "postgres://127.0.0.1:1/none"])
        .args(["--jwt-leeway-secs", "6"])
        .env("TOOLMOCK_JWT_SECRET", SECRET)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--jwt-leeway-secs"), "{stderr}");
    // A runtime without threads is refused.
    let out = binary()
        .args(["serve", "--database-url", "postgres://127.0.0.1:1/none"])
        .args(["--runtime-threads", "0"])
        .env("TOOLMOCK_JWT_SECRET", SECRET)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--runtime-threads"), "{stderr}");
    // A generator endpoint the client cannot use, before any connection.
    let out = binary()
        .args(["serve", "--database-url", "postgres://127.0.0.1:1/none"])
        .args(["--generator-url", "ftp://models.example/v1"])
        .env("TOOLMOCK_JWT_SECRET", SECRET)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--generator-url: invalid_model_url"),
        "{stderr}"
    );
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
        "--generator-retries",
        "--generator-max-response-bytes",
        "--generator-concurrency",
        "--tool-call-timeout-secs",
        "--header-read-timeout-secs",
        "--body-read-timeout-secs",
        "--connection-limit",
        "--db-acquire-timeout-ms",
        "--jwt-leeway-secs",
        "--mcp-allow",
        "--runtime-threads",
    ] {
        assert!(help.contains(flag), "{flag} missing from --help");
    }
    assert!(
        help.contains("DATABASE_URL") && help.contains("TOOLMOCK_BODY_LIMIT"),
        "{help}"
    );
}

/// A text log redirected away from a terminal (here, to a pipe; a file is the
/// same) is plain text: no ANSI colour codes for a collector to choke on.
#[sqlx::test(migrations = false)]
async fn a_redirected_text_log_has_no_colour_codes(pool: PgPool) {
    let url = database_url(&pool, None).await;
    let out = binary()
        .args(["migrate", "--database-url", &url, "--log-format", "text"])
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(log.contains("migrated"), "{log}");
    assert!(
        !log.contains('\u{1b}'),
        "colour codes in a redirected log: {log:?}"
    );
}

/// `toolmock-api budget` sets a tenant's default budget, shows it, and
/// clears it, on a migrated database; it names the tenant by its mapped id.
#[sqlx::test(migrations = false)]
async fn budget_sets_shows_and_clears_a_tenants_default(pool: PgPool) {
    let url = database_url(&pool, None).await;
    let run = |args: &[&str]| {
        let out = binary()
            .args(["budget", "--database-url", &url, "--tenant", "acme"])
            .args(args)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        (
            out.status.success(),
            stdout,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // Not migrated yet: the schema check refuses, nothing is written.
    let (ok, _, err) = run(&["--max-tokens", "100"]);
    assert!(!ok, "{err}");
    let migrated = binary()
        .args(["migrate", "--database-url", &url])
        .output()
        .unwrap();
    assert!(migrated.status.success());
    let (ok, out, err) = run(&["--max-tokens", "100", "--max-cost", "2.5"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("default budget max_tokens 100, max_cost 2.5"),
        "{out}"
    );
    let (ok, out, err) = run(&[]);
    assert!(ok, "{err}");
    assert!(
        out.contains("default budget max_tokens 100, max_cost 2.5"),
        "{out}"
    );
    let (ok, out, err) = run(&["--clear"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("\"acme\"") && out.contains("no default budget"),
        "{out}"
    );
}
