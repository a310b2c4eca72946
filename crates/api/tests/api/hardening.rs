//! Issue 19 in-process: a tool call runs to its recorded end whatever the
//! request's time-out does, and a lost answer is a harness fault; token
//! claims are validated like input and time rules are strict; every response
//! carries the security headers; MCP discovery never reflects what a URL
//! answered and honours the allow-list.

use crate::common::*;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use std::time::{Duration, Instant};
use toolmock_api::routes::ROUTES;
use toolmock_api::security_headers::SECURITY_HEADERS;
use toolmock_api::{ApiConfig, McpAllowList};

/// A document with one inline operation `slow/wait` that answers after
/// `delay_ms`, and one external case.
pub(crate) fn slow_document(delay_ms: u64) -> Value {
    json!({
        "simulation_version": 1,
        "name": "slow",
        "tools": [{
            "name": "slow",
            "from": "custom",
            "operations": [{"name": "wait", "input_schema": {"type": "object"},
                            "output_schema": {"type": "object", "required": ["ok"]}}],
            "definitions": {"wait": {
                "schema_version": 1,
                "default_variant": "ok",
                "variants": {"ok": {"result": {"ok": true}, "delay_ms": delay_ms}},
                "examples": [{"variant": "ok", "input": {}, "expected": {"ok": true}}]
            }}
        }],
        "agent": {"name": "waiter", "tools": ["slow"]},
        "cases": [{"name": "waits", "driver": {"type": "external"}}]
    })
}

/// Starts the slow document; returns (attempt id, capability).
pub(crate) async fn start_slow(app: &axum::Router, delay_ms: u64) -> (String, String) {
    let started = start(app, &token("acme", &[RUN]), &slow_document(delay_ms)).await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.json);
    let attempt = &started.json["attempts"][0];
    (
        attempt["id"].as_str().unwrap().to_owned(),
        attempt["capability"].as_str().unwrap().to_owned(),
    )
}

pub(crate) async fn harness_codes(app: &axum::Router, attempt: &str) -> Vec<String> {
    let read = send(
        app,
        Method::GET,
        &format!("/api/attempts/{attempt}"),
        Some(&token("acme", &[RUN])),
        None,
    )
    .await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.json);
    read.json["harness_errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap().to_owned())
        .collect()
}

/// Waits until the attempt has recorded `code` (the call's task ends after
/// the request was answered).
pub(crate) async fn wait_for_harness_error(
    app: &axum::Router,
    attempt: &str,
    code: &str,
) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let codes = harness_codes(app, attempt).await;
        if codes.iter().any(|c| c == code) || Instant::now() > deadline {
            return codes;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(crate) async fn finish(app: &axum::Router, attempt: &str, capability: &str) -> Reply {
    send(
        app,
        Method::POST,
        &format!("/api/attempts/{attempt}/finish"),
        Some(capability),
        None,
    )
    .await
}

/// An app with `config`, an attempt of the slow document (2.5 s delay), and
/// the answer to one call of `tool` (`slow` waits; another is unknown).
async fn slow_call(
    pool: &PgPool,
    config: ApiConfig,
    tool: &str,
) -> (axum::Router, String, String, Reply) {
    let app = app_with(pool, config);
    let (attempt, capability) = start_slow(&app, 2500).await;
    let reply = send(
        &app,
        Method::POST,
        &format!("/api/attempts/{attempt}/tool-calls"),
        Some(&capability),
        Some(&json!({"tool": tool, "operation": "wait", "arguments": {}})),
    )
    .await;
    (app, attempt, capability, reply)
}

/// A delay a definition may ask for is served inside the tool call's budget,
/// even when the ordinary request time-out is shorter; by default that
/// budget outlasts the longest delay a definition may ask for (issue 19's
/// `delay_ms: 30000` answered 503 under the defaults).
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_definitions_delay_fits_the_tool_call_budget(pool: PgPool) {
    let defaults = ApiConfig::default();
    assert!(
        defaults.tool_call_timeout > toolmock_api::MAX_DEFINITION_DELAY,
        "{defaults:?}"
    );
    let config = ApiConfig {
        request_timeout: Duration::from_secs(1),
        ..ApiConfig::default()
    };
    let (app, attempt, capability, reply) = slow_call(&pool, config, "slow").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.json);
    assert_eq!(reply.json, json!({"ok": true}));
    let finished = finish(&app, &attempt, &capability).await;
    assert_eq!(finished.json["outcome"], "passed", "{}", finished.json);
}

/// (a) of the issue: the call's evidence is committed, then its delay runs
/// past the budget. The answer is a 503, and the attempt cannot pass.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_call_answered_503_after_it_began_is_a_harness_fault(pool: PgPool) {
    let config = ApiConfig {
        tool_call_timeout: Duration::from_secs(1),
        ..ApiConfig::default()
    };
    let (app, attempt, capability, reply) = slow_call(&pool, config, "slow").await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(reply.code(), "timeout");
    let codes = wait_for_harness_error(&app, &attempt, "answer_lost").await;
    assert_eq!(codes, ["answer_lost"]);
    let finished = finish(&app, &attempt, &capability).await;
    assert_eq!(
        finished.json["outcome"], "harness_error",
        "{}",
        finished.json
    );
}

/// (b) of the issue: an unknown-tool call waits for its attempt's row, locked
/// by another session, past the budget. Cancelled mid-way it recorded
/// nothing; now it runs on, records `unknown_tool`, and the lost answer too.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_call_waiting_for_a_lock_past_the_budget_still_records_its_fault(pool: PgPool) {
    let app = app_with(
        &pool,
        ApiConfig {
            tool_call_timeout: Duration::from_secs(1),
            ..ApiConfig::default()
        },
    );
    let (attempt, capability) = start_slow(&app, 0).await;
    let id: uuid::Uuid = attempt.parse().unwrap();
    let mut locker = pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM attempts WHERE id = $1 FOR UPDATE")
        .bind(id)
        .execute(&mut *locker)
        .await
        .unwrap();
    sqlx::query("SELECT 1 FROM attempt_state WHERE attempt_id = $1 FOR UPDATE")
        .bind(id)
        .execute(&mut *locker)
        .await
        .unwrap();
    let reply = send(
        &app,
        Method::POST,
        &format!("/api/attempts/{attempt}/tool-calls"),
        Some(&capability),
        Some(&json!({"tool": "nope", "operation": "nope", "arguments": {}})),
    )
    .await;
    assert_eq!(
        reply.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        reply.json
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    locker.rollback().await.unwrap();
    let codes = wait_for_harness_error(&app, &attempt, "answer_lost").await;
    assert!(codes.contains(&"unknown_tool".to_owned()), "{codes:?}");
    assert!(codes.contains(&"answer_lost".to_owned()), "{codes:?}");
    let finished = finish(&app, &attempt, &capability).await;
    assert_eq!(
        finished.json["outcome"], "harness_error",
        "{}",
        finished.json
    );
}

fn signed(claims: &Value) -> String {
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        claims,
        &jsonwebtoken::EncodingKey::from_secret(SECRET),
    )
    .unwrap()
}

/// The write routes of the issue, each with a body that would succeed.
async fn write_routes(app: &axum::Router, tool: &Created, bearer: &str) -> Vec<(String, Reply)> {
    let mut replies = Vec::new();
    for (path, body) in [
        ("/api/tools".to_owned(), calendar_tool("other")),
        (
            format!("/api/tools/{}/testing", tool.id),
            json!({"action": "save", "operation_id": tool.book,
                   "contract_hash": tool.book_hash, "definition": booking_definition()}),
        ),
        ("/api/simulations".to_owned(), slow_document(0)),
    ] {
        let reply = send(app, Method::POST, &path, Some(bearer), Some(&body)).await;
        replies.push((path, reply));
    }
    replies
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_nul_in_a_tokens_tenant_or_subject_is_refused_not_a_500(pool: PgPool) {
    let app = app(&pool);
    let tool = create_calendar(&app, &token("acme", &[MANAGE])).await;
    for (claim, value) in [("tenant", "ac\u{0}me"), ("sub", "us\u{0}er")] {
        let mut claims = json!({"sub": "user", "tenant": "acme", "permissions": [MANAGE, RUN],
                                "exp": now() + 600, "iat": now()});
        claims[claim] = json!(value);
        for (path, reply) in write_routes(&app, &tool, &signed(&claims)).await {
            assert_eq!(
                reply.status,
                StatusCode::UNAUTHORIZED,
                "{claim} {path}: {}",
                reply.json
            );
            assert_eq!(reply.code(), "unauthenticated");
            let message = reply.json["error"]["message"].as_str().unwrap();
            assert!(
                message.contains(claim) && message.contains("U+0000"),
                "{message}"
            );
        }
    }
    let long = "x".repeat(257);
    let claims =
        json!({"sub": long, "tenant": "acme", "permissions": [MANAGE], "exp": now() + 600});
    let reply = send(
        &app,
        Method::GET,
        "/api/tools",
        Some(&signed(&claims)),
        None,
    )
    .await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn token_time_rules_are_strict(pool: PgPool) {
    let app = app(&pool);
    let base =
        || json!({"sub": "user", "tenant": "acme", "permissions": [MANAGE], "exp": now() + 600});
    let mut cases = Vec::new();
    let mut expired = base();
    expired["exp"] = json!(now() - 30);
    cases.push(("expired 30 s ago", expired, "expired"));
    let mut not_yet = base();
    not_yet["nbf"] = json!(now() + 86_400);
    cases.push(("valid from tomorrow", not_yet, "not valid yet"));
    let mut issued_later = base();
    issued_later["iat"] = json!(now() + 3600);
    cases.push(("issued in an hour", issued_later, "issued in the future"));
    for (what, claims, reason) in cases {
        let reply = send(
            &app,
            Method::GET,
            "/api/tools",
            Some(&signed(&claims)),
            None,
        )
        .await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{what}");
        let message = reply.json["error"]["message"].as_str().unwrap();
        assert!(message.contains(reason), "{what}: {message}");
    }
    // Within the default leeway (5 s) a clock difference is tolerated.
    let mut recent = base();
    recent["exp"] = json!(now() - 2);
    recent["nbf"] = json!(now() + 2);
    recent["iat"] = json!(now() + 2);
    let reply = send(
        &app,
        Method::GET,
        "/api/tools",
        Some(&signed(&recent)),
        None,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.json);
    // A leeway of 0 refuses it.
    let strict = toolmock_api::router(toolmock_api::AppState::new(
        pool.clone(),
        toolmock_api::AuthConfig::hs256(SECRET)
            .unwrap()
            .with_leeway(Duration::ZERO),
        ApiConfig::default(),
    ));
    let reply = send(
        &strict,
        Method::GET,
        "/api/tools",
        Some(&signed(&recent)),
        None,
    )
    .await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
}

/// The security headers docs/api.md promises ("Security headers"), as
/// (lower-case name, value).
fn documented_security_headers() -> Vec<(String, String)> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/api.md");
    let text = std::fs::read_to_string(path).unwrap();
    let section = text.split("\n## Security headers\n").nth(1).unwrap();
    let section = section.split("\n## ").next().unwrap();
    section
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let name = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            let value = cells.get(2)?.strip_prefix('`')?.strip_suffix('`')?;
            Some((name.to_ascii_lowercase(), value.to_owned()))
        })
        .collect()
}

/// Every route of the table, the unknown route and the UI: each answer has
/// every security header docs/api.md lists (the UI keeps its own policy),
/// `X-Content-Type-Options: nosniff` on JSON among them.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn every_response_carries_the_security_headers(pool: PgPool) {
    let documented = documented_security_headers();
    assert!(
        documented.contains(&("x-content-type-options".into(), "nosniff".into())),
        "{documented:?}"
    );
    let constant: Vec<(String, String)> = SECURITY_HEADERS
        .iter()
        .map(|(name, value)| (name.as_str().to_owned(), (*value).to_owned()))
        .collect();
    assert_eq!(constant, documented, "SECURITY_HEADERS and docs/api.md");
    let app = app(&pool);
    let id = uuid::Uuid::new_v4().to_string();
    let mut requests: Vec<(Method, String)> = ROUTES
        .iter()
        .map(|r| {
            let path = r
                .path
                .split('/')
                .map(|s| if s.starts_with('{') { id.as_str() } else { s })
                .collect::<Vec<_>>()
                .join("/");
            (r.method.parse().unwrap(), path)
        })
        .collect();
    requests.push((Method::GET, "/api/nothing".into()));
    for (method, path) in requests {
        let body = (method != Method::GET).then(|| json!({}));
        let reply = send(&app, method.clone(), &path, None, body.as_ref()).await;
        for (name, value) in &documented {
            let got = reply.headers.get(name).map(|v| v.to_str().unwrap());
            assert_eq!(
                got,
                Some(value.as_str()),
                "{method} {path} ({}): {name}",
                reply.status
            );
        }
    }
    // The UI's page keeps its own policy and caching rule, and gets the rest.
    let page = tower::ServiceExt::oneshot(
        app.clone(),
        axum::http::Request::get("/")
            .body(axum::body::Body::empty())
            .unwrap(),
    )
    .await
    .unwrap();
    for (name, value) in &documented {
        let got = page.headers().get(name).map(|v| v.to_str().unwrap());
        match name.as_str() {
            "content-security-policy" => assert!(got.unwrap().contains("script-src 'self'")),
            "cache-control" => assert_eq!(got, Some("no-cache")),
            _ => assert_eq!(got, Some(value.as_str()), "/: {name}"),
        }
    }
}

/// A local HTTP service that answers every request with `status` and a
/// secret in its body; returns its URL.
async fn secret_service(status: u16, content_type: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buffer = vec![0u8; 65536];
                let _ = socket.read(&mut buffer).await;
                let body = "INTERNAL-SECRET=hunter2 db=postgres://admin:pw@10.0.0.5";
                let answer = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    format!("http://{address}/mcp")
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn discovery_names_the_failure_and_never_reflects_a_body(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE]);
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/mcp", listener.local_addr().unwrap())
    };
    // The answers whose body the MCP client quotes in its errors come first.
    for (url, class) in [
        (secret_service(403, "text/plain").await, "HTTP status 403"),
        (secret_service(500, "text/html").await, "HTTP status 500"),
        (
            secret_service(200, "text/plain").await,
            "not answer as an MCP server",
        ),
        (
            secret_service(200, "application/json").await,
            "not answer as an MCP server",
        ),
        (closed, "refused"),
    ] {
        let reply = send(
            &app,
            Method::POST,
            "/api/tools",
            Some(&bearer),
            Some(&json!({"name": "probe", "source": {"type": "mcp_server", "url": url}})),
        )
        .await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_GATEWAY,
            "{url}: {}",
            reply.json
        );
        assert_eq!(reply.code(), "discovery_failed");
        let text = String::from_utf8_lossy(&reply.bytes);
        assert!(
            !text.contains("SECRET") && !text.contains("hunter2") && !text.contains("admin"),
            "{text}"
        );
        assert!(text.contains(class), "{url}: {text}");
    }
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn discovery_reaches_only_the_allowed_servers(pool: PgPool) {
    let url = secret_service(200, "text/plain").await;
    let port = url
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let body = json!({"name": "probe", "source": {"type": "mcp_server", "url": url}});
    let bearer = token("acme", &[MANAGE]);
    let restricted = app_with(
        &pool,
        ApiConfig {
            mcp_allow: McpAllowList::parse(&["mcp.example.com", "*.tools.test"]).unwrap(),
            ..ApiConfig::default()
        },
    );
    let reply = send(
        &restricted,
        Method::POST,
        "/api/tools",
        Some(&bearer),
        Some(&body),
    )
    .await;
    assert_eq!(
        reply.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        reply.json
    );
    assert_eq!(reply.code(), "mcp_url_not_allowed");
    assert_eq!(reply.problems()[0]["path"], "/source/url");
    // Listed with its port, the same server is reached (and is no MCP server).
    let allowed = app_with(
        &pool,
        ApiConfig {
            mcp_allow: McpAllowList::parse(&[format!("127.0.0.1:{port}")]).unwrap(),
            ..ApiConfig::default()
        },
    );
    let reply = send(
        &allowed,
        Method::POST,
        "/api/tools",
        Some(&bearer),
        Some(&body),
    )
    .await;
    assert_eq!(reply.status, StatusCode::BAD_GATEWAY, "{}", reply.json);
}

/// More requests than `concurrency_limit` at once, on any routes: the extra
/// one is shed at once with 503 `overloaded` instead of queueing, and is
/// served again once the one in flight has answered. (The limit was a tower
/// layer on the router, which wraps each route on its own: a listing was
/// served beside a tool call under a limit of one.)
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn requests_past_the_concurrency_limit_are_shed(pool: PgPool) {
    let app = app_with(
        &pool,
        ApiConfig {
            concurrency_limit: 1,
            ..ApiConfig::default()
        },
    );
    let (attempt, capability) = start_slow(&app, 1500).await;
    let call = {
        let app = app.clone();
        tokio::spawn(async move {
            send(
                &app,
                Method::POST,
                &format!("/api/attempts/{attempt}/tool-calls"),
                Some(&capability),
                Some(&json!({"tool": "slow", "operation": "wait", "arguments": {}})),
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let bearer = token("acme", &[MANAGE]);
    let began = Instant::now();
    let shed = send(&app, Method::GET, "/api/tools", Some(&bearer), None).await;
    assert_eq!(
        (shed.status, shed.code()),
        (StatusCode::SERVICE_UNAVAILABLE, "overloaded"),
        "{}",
        shed.json
    );
    assert!(
        began.elapsed() < Duration::from_millis(500),
        "{:?}",
        began.elapsed()
    );
    let answered = call.await.unwrap();
    assert_eq!(answered.status, StatusCode::OK, "{}", answered.json);
    let served = send(&app, Method::GET, "/api/tools", Some(&bearer), None).await;
    assert_eq!(served.status, StatusCode::OK, "{}", served.json);
}
