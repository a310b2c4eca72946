//! Verifications on the service, end to end on PostgreSQL: an MCP tool
//! discovered from the project's fixture server (the official Python SDK,
//! over streamable HTTP), a saved mock that says something the server does
//! not, settings that mark one operation safe, `POST
//! /api/tools/{id}/verifications` queued and run by a worker, the
//! divergence read back by its pointer, the tool's operation marked, and a
//! simulation that pinned the mock saying so in its results. The server
//! logs every call: the operation not marked safe was never called.

use crate::common::*;
use axum::Router;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use std::time::{Duration, Instant};

/// `lookup_patient`'s mock: the server's answer, but the patient is Grace.
fn lookup(first_name: &str) -> Value {
    json!({
        "schema_version": 1, "default_variant": "found",
        "variants": {"found": {"result": {
            "patient_id": "3f2c8a4e-9b1d-4c7e-8f6a-2d5b7c9e1a30",
            "first_name": first_name, "born": "1990-04-01", "visits": 3}}},
        "examples": [{"variant": "found", "input": {"member_id": "M-100042"},
            "expected": {"patient_id": "3f2c8a4e-9b1d-4c7e-8f6a-2d5b7c9e1a30",
                         "first_name": first_name, "born": "1990-04-01", "visits": 3}}]
    })
}

fn priority() -> Value {
    json!({
        "schema_version": 1, "default_variant": "ok",
        "variants": {"ok": {"result": {"status": "updated", "priority": {"$input": "priority"}}}},
        "examples": [{"variant": "ok", "input": {"case_id": "C-1", "priority": "high"},
                      "expected": {"status": "updated", "priority": "high"}}]
    })
}

async fn save(app: &Router, bearer: &str, tool: &str, op: &Value, definition: Value) -> u64 {
    let saved = send(
        app,
        Method::POST,
        &format!("/api/tools/{tool}/testing"),
        Some(bearer),
        Some(&json!({"action": "save", "operation_id": op["id"],
                     "contract_hash": op["contract_hash"], "definition": definition})),
    )
    .await;
    assert_eq!(saved.status, StatusCode::CREATED, "{}", saved.json);
    saved.json["revision"].as_u64().unwrap()
}

/// Queues a verification and waits for a worker to end it.
async fn verified(app: &Router, bearer: &str, tool: &str) -> Value {
    let queued = send(
        app,
        Method::POST,
        &format!("/api/tools/{tool}/verifications"),
        Some(bearer),
        Some(&json!({})),
    )
    .await;
    assert_eq!(queued.status, StatusCode::ACCEPTED, "{}", queued.json);
    assert_eq!(queued.json["status"], "queued");
    let id = queued.json["id"].as_str().unwrap().to_owned();
    polled(
        app,
        bearer,
        &format!("/api/tools/{tool}/verifications/{id}"),
        |reply| {
            assert_eq!(reply.status, StatusCode::OK, "{}", reply.json);
            matches!(reply.json["status"].as_str(), Some("finished" | "failed"))
        },
    )
    .await
}

/// `GET path`'s body once `ended` says so, read every 100 ms for up to 60 s.
async fn polled(app: &Router, bearer: &str, path: &str, ended: impl Fn(&Reply) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let reply = get(app, bearer, path).await;
        if ended(&reply) {
            return reply.json;
        }
        assert!(Instant::now() < deadline, "not ended: {}", reply.json);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `GET path` with the bearer token.
async fn get(app: &Router, bearer: &str, path: &str) -> Reply {
    send(app, Method::GET, path, Some(bearer), None).await
}

/// A simulation's results document, once its worker finished every attempt.
async fn finished_results(app: &Router, bearer: &str, simulation: &str) -> Value {
    let path = format!("/api/simulations/{simulation}/results");
    polled(app, bearer, &path, |reply| reply.status == StatusCode::OK).await
}

fn result<'a>(verification: &'a Value, operation: &str) -> &'a Value {
    verification["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["operation"] == operation)
        .unwrap_or_else(|| panic!("{operation} in {verification:#}"))
}

/// The fixture MCP server, logging every tool it is called with to the
/// returned file, and the tool `clinic` discovered from it: the server, the
/// log, the created tool's body and its id.
async fn logged_clinic(
    app: &Router,
    bearer: &str,
) -> (FixtureServer, std::path::PathBuf, Reply, String) {
    // A folder of its own: a test that ends removes its folder, and a
    // shared one vanished under a server still writing its log (its calls
    // then failed as internal errors).
    let dir = std::env::temp_dir().join(format!(
        "verify-api-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("calls.log");
    let server = FixtureServer::start_with(&["--calls-log", log.to_str().unwrap()]);
    let created = send(
        app,
        Method::POST,
        "/api/tools",
        Some(bearer),
        Some(&json!({"name": "clinic", "source": {"type": "mcp_server", "url": server.url}})),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.json);
    let tool = created.json["id"].as_str().unwrap().to_owned();
    (server, log, created, tool)
}

/// Removes a log of [`logged_clinic`]'s, and its folder once no other
/// test's log is in it.
fn forget(log: &std::path::Path) {
    let _ = std::fs::remove_file(log);
    if let Some(dir) = log.parent() {
        let _ = std::fs::remove_dir(dir);
    }
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_worker_verifies_a_tool_and_a_diverged_mock_is_marked(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE, RUN]);
    let (server, log, created, tool) = logged_clinic(&app, &bearer).await;
    let revision = save(
        &app,
        &bearer,
        &tool,
        operation(&created.json, "lookup_patient"),
        lookup("Grace"),
    )
    .await;
    save(
        &app,
        &bearer,
        &tool,
        operation(&created.json, "set_priority"),
        priority(),
    )
    .await;
    let settings = send(
        &app,
        Method::PUT,
        &format!("/api/tools/{tool}/verification"),
        Some(&bearer),
        Some(&json!({"verify": {"safe": ["lookup_patient"]}, "every_seconds": 3600})),
    )
    .await;
    assert_eq!(settings.status, StatusCode::OK, "{}", settings.json);
    assert_eq!(settings.json["configured"], true);
    assert_eq!(settings.json["every_seconds"], 3600);
    assert!(settings.json["next_due_at"].is_string());

    let worker = Worker::start(&pool);
    let found = verified(&app, &bearer, &tool).await;
    assert_eq!(found["status"], "finished", "{found:#}");
    assert_eq!(found["ok"], false);
    assert_eq!(found["requested_by"], "acme-user", "{found:#}");
    let lookup_result = result(&found, "lookup_patient");
    assert_eq!(lookup_result["verdict"], "diverged", "{found:#}");
    assert_eq!(lookup_result["revision"], revision);
    assert_eq!(lookup_result["divergences"], 1);
    let check = &lookup_result["report"]["checks"][0];
    assert_eq!(check["status"], "diverged");
    assert_eq!(
        check["divergences"],
        json!([{"path": "/first_name", "kind": "value_differs", "mock": "Grace", "real": "Ada",
                "message": "the mock says \"Grace\", the real tool \"Ada\""}])
    );
    assert_eq!(lookup_result["report"]["drift"]["status"], "unchanged");
    // set_priority: its contract checked, its example never called.
    let priority_result = result(&found, "set_priority");
    assert_eq!(priority_result["verdict"], "unverified");
    assert_eq!(priority_result["report"]["checks"][0]["reason"], "not_safe");
    let called = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(
        called.lines().collect::<Vec<_>>(),
        ["lookup_patient"],
        "{called}"
    );

    // The tool's page marks the mock.
    let view = get(&app, &bearer, &format!("/api/tools/{tool}")).await;
    let mark = &operation(&view.json, "lookup_patient")["verification"];
    assert_eq!(mark["verdict"], "diverged", "{}", view.json);
    assert_eq!(mark["verification_id"], found["id"]);
    assert_eq!(
        operation(&view.json, "set_priority")["verification"]["verdict"],
        "unverified"
    );

    // A simulation that pinned the mock says so in its results.
    let document = json!({
        "simulation_version": 1, "name": "lookups",
        "tools": [{"name": "clinic", "from": "library", "id": tool}],
        "agent": {"name": "desk", "tools": ["clinic"]},
        "cases": [{"name": "looks_up", "driver": {"type": "scripted", "steps": [
            {"tool": "clinic", "operation": "lookup_patient", "arguments": {"member_id": "M-100042"}}]}}],
        "allow_incomplete": true
    });
    let started = start(&app, &bearer, &document).await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.json);
    let simulation = started.json["id"].as_str().unwrap().to_owned();
    let results = finished_results(&app, &bearer, &simulation).await;
    assert_eq!(results["ok"], true, "{results:#}");
    let diverged = results["diverged_mocks"]
        .as_array()
        .expect("diverged_mocks");
    assert_eq!(diverged.len(), 1, "{results:#}");
    assert_eq!(diverged[0]["tool"], "clinic");
    assert_eq!(diverged[0]["operation"], "lookup_patient");
    assert_eq!(diverged[0]["verification"], found["id"]);
    assert_eq!(diverged[0]["divergences"], 1);

    // The mock corrected from the divergence: verified again, it agrees, and
    // a simulation pinning it says nothing.
    let view = get(&app, &bearer, &format!("/api/tools/{tool}")).await;
    save(
        &app,
        &bearer,
        &tool,
        operation(&view.json, "lookup_patient"),
        lookup("Ada"),
    )
    .await;
    let again = verified(&app, &bearer, &tool).await;
    assert_eq!(
        result(&again, "lookup_patient")["verdict"],
        "agreed",
        "{again:#}"
    );
    assert_eq!(again["ok"], true);
    let view = get(&app, &bearer, &format!("/api/tools/{tool}")).await;
    assert_eq!(
        operation(&view.json, "lookup_patient")["verification"]["verdict"],
        "agreed"
    );
    let started = start(&app, &bearer, &document).await;
    let simulation = started.json["id"].as_str().unwrap().to_owned();
    let results = finished_results(&app, &bearer, &simulation).await;
    assert!(results.get("diverged_mocks").is_none(), "{results:#}");
    // Both verifications are listed, the latest first.
    let list = get(&app, &bearer, &format!("/api/tools/{tool}/verifications")).await;
    let ids: Vec<&Value> = list.json["verifications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| &v["id"])
        .collect();
    assert_eq!(ids, [&again["id"], &found["id"]]);

    // The schedule: once due, the worker queues a verification itself and runs it.
    sqlx::query("UPDATE tool_verification_settings SET next_due_at = now() - interval '1 second'")
        .execute(&pool)
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let scheduled = loop {
        let list = get(&app, &bearer, &format!("/api/tools/{tool}/verifications")).await;
        let latest = list.json["verifications"][0].clone();
        if latest["requested_by"] == "schedule" && latest["status"] == "finished" {
            break latest;
        }
        assert!(
            Instant::now() < deadline,
            "no scheduled verification: {}",
            list.json
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(scheduled["ok"], true, "{scheduled:#}");
    let settings = get(&app, &bearer, &format!("/api/tools/{tool}/verification")).await;
    let next: chrono::DateTime<chrono::Utc> = settings.json["next_due_at"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        next > chrono::Utc::now() + chrono::Duration::seconds(3000),
        "{}",
        settings.json
    );
    worker.stop().await;
    drop(server);
    forget(&log);
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn settings_the_tool_cannot_take_are_refused_with_every_problem(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE]);
    let tool = create_calendar(&app, &bearer).await;
    let path = format!("/api/tools/{}/verification", tool.id);
    let reply = send(
        &app,
        Method::PUT,
        &path,
        Some(&bearer),
        Some(&json!({
            "verify": {"safe": ["book", "nope"], "recordings": ["rec"],
                       "matchers": [{"path": "/x", "match": "regex", "pattern": "("}]},
            "sandbox_url": "http://staging.example/mcp",
            "endpoints": {"ghost": "http://127.0.0.1:9/x"}
        })),
    )
    .await;
    assert_eq!(
        reply.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        reply.json
    );
    assert_eq!(reply.code(), "invalid_verification_settings");
    let problems: Vec<(String, String)> = reply
        .problems()
        .iter()
        .map(|p| {
            (
                p["path"].as_str().unwrap().to_owned(),
                p["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    for expected in [
        ("/verify/recordings", "not_on_the_service"),
        ("/sandbox_url", "invalid_sandbox_url"),
        ("/endpoints/ghost", "unknown_operation"),
        ("/verify/safe/1", "unknown_operation"),
        ("/verify/matchers/0/pattern", "invalid_regex"),
    ] {
        assert!(
            problems.contains(&(expected.0.to_owned(), expected.1.to_owned())),
            "{expected:?} not in {problems:?}"
        );
    }
    // A custom tool without endpoints has no real tool to verify.
    let queue = format!("/api/tools/{}/verifications", tool.id);
    let reply = send(&app, Method::POST, &queue, Some(&bearer), Some(&json!({}))).await;
    assert_eq!(
        reply.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        reply.json
    );
    assert_eq!(reply.code(), "invalid_verification_settings");
    assert_eq!(reply.problems()[0]["code"], "no_real_tool");
    // A schedule outside 5 minutes … 30 days.
    let reply = send(
        &app,
        Method::PUT,
        &path,
        Some(&bearer),
        Some(&json!({"endpoints": {"book": "http://127.0.0.1:9/book"}, "every_seconds": 10})),
    )
    .await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(reply.problems()[0]["path"], "/every_seconds");
    // An endpoint outside the allow-list.
    let restricted = app_with(
        &pool,
        toolmock_api::ApiConfig {
            mcp_allow: toolmock_api::McpAllowList::parse(&["tools.example"]).unwrap(),
            ..toolmock_api::ApiConfig::default()
        },
    );
    let reply = send(
        &restricted,
        Method::PUT,
        &path,
        Some(&bearer),
        Some(&json!({"endpoints": {"book": "http://127.0.0.1:9/book"}})),
    )
    .await;
    assert_eq!(
        reply.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        reply.json
    );
    assert_eq!(reply.code(), "mcp_url_not_allowed");
    assert_eq!(reply.problems()[0]["path"], "/endpoints/book");
    // Nothing was stored by the refusals.
    let stored = get(&app, &bearer, &path).await;
    assert_eq!(stored.json["configured"], false, "{}", stored.json);
}

/// A worker's verification reaches only the targets its operator allows
/// (issue 32, item 6): by default a tool whose MCP server is on 127.0.0.1
/// is not verified — the verification fails naming the address's class —
/// and the server is never called.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_verification_of_a_private_target_fails_without_reaching_it(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE, RUN]);
    let (_server, log, created, tool) = logged_clinic(&app, &bearer).await;
    save(
        &app,
        &bearer,
        &tool,
        operation(&created.json, "lookup_patient"),
        lookup("Ada"),
    )
    .await;
    let settings = send(
        &app,
        Method::PUT,
        &format!("/api/tools/{tool}/verification"),
        Some(&bearer),
        Some(&json!({"verify": {"safe": ["lookup_patient"]}})),
    )
    .await;
    assert_eq!(settings.status, StatusCode::OK, "{}", settings.json);
    let worker = Worker::start_with(&pool, "closed-worker", toolmock_worker::Agents::none());
    let found = verified(&app, &bearer, &tool).await;
    assert_eq!(found["status"], "failed", "{found:#}");
    let error = found["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("private_target") && error.contains("loopback address"),
        "{found:#}"
    );
    let called = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(called.is_empty(), "the server was called: {called}");
    worker.stop().await;
    forget(&log);
}
