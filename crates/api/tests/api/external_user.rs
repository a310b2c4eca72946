//! An external agent meets its case's simulated user through the API:
//! `POST /api/attempts/{id}/ask-user` and the per-attempt MCP endpoint's
//! `ask_user` tool (played by the official Python SDK client), the user
//! played by the local OpenAI-compatible conversation server
//! (`fixtures/conversation-server/`, which checks what a user model is
//! sent), against PostgreSQL. The conversation is kept with its roles, the
//! finish judges it, a used-up turn limit is an unmet `turn_limit` and a
//! user model fault a `user_unavailable` / `user_failed` harness error; two
//! asks at once on two API processes: one answered, one `user_busy`; an
//! agent's own `ask_user` refused at the start.

use crate::agents::{Server, model, notes_document, server, server_with};
use crate::common::*;
use axum::Router;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use std::path::{Path, PathBuf};
use toolmock_api::{ApiConfig, AppState, AuthConfig, router};
use toolmock_store::PgStore;
use toolmock_store::testkit::app_pool;

/// The API with `user` (a model of the conversation server) playing
/// simulated users.
fn app_playing(pool: &PgPool, server: &Server, user: &str) -> Router {
    app_with(
        pool,
        ApiConfig {
            user_model: Some(model(server, user)),
            ..ApiConfig::default()
        },
    )
}

/// One external case whose user wants the note "milk"; `user` is merged
/// into the case's `user`.
fn external_case(user: Value) -> Value {
    let mut case = json!({"name": "asks", "attempts": 2,
        "driver": {"type": "external"},
        "user": {"type": "model", "instructions": "You want a note.\nThe note says: milk"},
        "expect": {"final_state": {"subset": {"last": "milk"}}, "agent_said": {"contains": ["n-1"]}}});
    for (key, value) in user.as_object().into_iter().flatten() {
        case["user"][key] = value.clone();
    }
    notes_document(json!([case]))
}

/// Each attempt's id and capability, in order.
async fn started(app: &Router, document: &Value) -> Vec<(String, String)> {
    let bearer = token("acme", &[RUN]);
    let reply = start(app, &bearer, document).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.json);
    reply.json["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["id"].as_str().unwrap().to_owned(),
                a["capability"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

async fn ask(app: &Router, (id, capability): &(String, String), body: Value) -> Reply {
    send(
        app,
        Method::POST,
        &format!("/api/attempts/{id}/ask-user"),
        Some(capability),
        Some(&body),
    )
    .await
}

async fn asked(app: &Router, attempt: &(String, String), body: Value) -> Value {
    let reply = ask(app, attempt, body).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.json);
    reply.json
}

async fn add_note(app: &Router, (id, capability): &(String, String), text: &str) {
    let reply = send(
        app,
        Method::POST,
        &format!("/api/attempts/{id}/tool-calls"),
        Some(capability),
        Some(&json!({"tool": "notes", "operation": "add", "arguments": {"text": text}})),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.json);
}

async fn finish(app: &Router, (id, capability): &(String, String)) -> Value {
    let reply = send(
        app,
        Method::POST,
        &format!("/api/attempts/{id}/finish"),
        Some(capability),
        None,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.json);
    reply.json
}

pub(crate) async fn view(app: &Router, (id, _): &(String, String)) -> Value {
    let bearer = token("acme", &[RUN]);
    let reply = send(
        app,
        Method::GET,
        &format!("/api/attempts/{id}"),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.json);
    reply.json
}

/// The conversation's turns as (role, text, stop), without times.
pub(crate) fn turns(view: &Value) -> Vec<(String, String, Option<String>)> {
    view["conversation"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
                m["stop"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

pub(crate) fn expected_turns() -> Vec<(String, String, Option<String>)> {
    [
        ("user", "I need a note, please.", None),
        ("assistant", "What should the note say?", None),
        ("user", "milk", None),
        ("assistant", "Added note n-1.", None),
        ("user", "Thanks! ###STOP###", Some("###STOP###")),
    ]
    .map(|(r, c, s)| (r.to_owned(), c.to_owned(), s.map(str::to_owned)))
    .to_vec()
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn an_external_agent_talks_with_its_simulated_user_over_http(pool: PgPool) {
    let server = server();
    let app = app_playing(&pool, &server, "customer");
    let attempts = started(&app, &external_case(json!({}))).await;
    let one = &attempts[0];
    assert_eq!(
        asked(&app, one, json!({})).await,
        json!({"reply": "I need a note, please."})
    );
    let said = json!({"message": "What should the note say?"});
    assert_eq!(asked(&app, one, said).await, json!({"reply": "milk"}));
    add_note(&app, one, "milk").await;
    assert_eq!(
        asked(&app, one, json!({"message": "Added note n-1."})).await,
        json!({"reply": "Thanks! ###STOP###", "stop": "###STOP###", "ended": true})
    );
    // Over: nobody is asked, nothing is kept.
    let after = json!({"message": "Anything else?"});
    assert_eq!(asked(&app, one, after).await, json!({"ended": true}));
    let finished = finish(&app, one).await;
    assert_eq!(finished["outcome"], "passed", "{finished}");
    let seen = view(&app, one).await;
    assert_eq!(turns(&seen), expected_turns(), "{seen:#}");
    assert_eq!(seen["evidence"].as_array().unwrap().len(), 1, "{seen:#}");
    // The capability of a finished attempt asks nobody.
    let late = ask(&app, one, json!({"message": "Hello?"})).await;
    assert_eq!(late.status, StatusCode::UNAUTHORIZED, "{}", late.json);

    // The agent that never tells the user the note's id fails `agent_said`.
    let two = &attempts[1];
    asked(&app, two, json!({})).await;
    asked(&app, two, json!({"message": "What should the note say?"})).await;
    add_note(&app, two, "milk").await;
    asked(&app, two, json!({"message": "Added note (no id)."})).await;
    let finished = finish(&app, two).await;
    assert_eq!(finished["outcome"], "failed", "{finished}");
    assert_eq!(finished["unmet"][0]["code"], "agent_said_contains");
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_user_whose_turns_are_used_up_fails_the_attempt_turn_limit(pool: PgPool) {
    let server = server();
    let app = app_playing(&pool, &server, "customer_chatty");
    let attempts = started(&app, &external_case(json!({"max_turns": 2}))).await;
    // Asked past the limit: the call says the conversation is over.
    let one = &attempts[0];
    for message in [json!({}), json!({"message": "Hello."})] {
        assert_eq!(
            asked(&app, one, message).await,
            json!({"reply": "Tell me more."})
        );
    }
    let past = json!({"message": "What more?"});
    assert_eq!(asked(&app, one, past).await, json!({"ended": true}));
    // Never asked again: the turns are used up all the same.
    let two = &attempts[1];
    asked(&app, two, json!({})).await;
    asked(&app, two, json!({"message": "Hello."})).await;
    add_note(&app, two, "milk").await;
    for attempt in [one, two] {
        let finished = finish(&app, attempt).await;
        assert_eq!(finished["outcome"], "failed", "{finished}");
        let unmet = finished["unmet"].as_array().unwrap();
        let limit: Vec<&Value> = unmet.iter().filter(|u| u["code"] == "turn_limit").collect();
        assert_eq!(limit.len(), 1, "{finished}");
        assert_eq!(limit[0]["at"], "/cases/0/user/max_turns");
    }
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_user_model_fault_is_a_harness_error_never_a_pass(pool: PgPool) {
    let server = server();
    for (user, code) in [
        (Some("unavailable"), "user_unavailable"),
        (Some("customer_empty"), "user_failed"),
        (None, "user_unavailable"),
    ] {
        let app = match user {
            Some(user) => app_playing(&pool, &server, user),
            None => app(&pool),
        };
        let attempts = started(&app, &external_case(json!({}))).await;
        let one = &attempts[0];
        let reply = ask(&app, one, json!({})).await;
        assert_eq!(
            reply.status,
            StatusCode::FAILED_DEPENDENCY,
            "{}",
            reply.json
        );
        assert_eq!(reply.json["error"]["class"], "harness_error");
        assert_eq!(reply.code(), code, "{}", reply.json);
        // The agent's work would pass: the fault decides.
        add_note(&app, one, "milk").await;
        let finished = finish(&app, one).await;
        assert_eq!(finished["outcome"], "harness_error", "{finished}");
        let seen = view(&app, one).await;
        assert_eq!(seen["harness_errors"][0]["code"], code, "{seen:#}");
    }
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn ask_user_refuses_what_it_cannot_serve(pool: PgPool) {
    let server = server();
    let app = app_playing(&pool, &server, "customer");
    let with_user = started(&app, &external_case(json!({}))).await;
    let without = notes_document(json!([{"name": "alone", "driver": {"type": "external"}}]));
    let alone = &started(&app, &without).await[0];
    let reply = ask(&app, alone, json!({"message": "Hello?"})).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::CONFLICT, "no_simulated_user"),
        "{}",
        reply.json
    );
    // Nor does its MCP endpoint list `ask_user`.
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let request = axum::http::Request::builder()
        .method(Method::POST)
        .uri(format!("/api/attempts/{}/mcp", alone.0))
        .header("authorization", format!("Bearer {}", alone.1))
        .header("content-type", "application/json")
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .body(axum::body::Body::from(list.to_string()))
        .unwrap();
    let listed = raw(&app, request).await;
    let names: Vec<&str> = listed.json["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["add", "get"], "{}", listed.json);
    let (one, two) = (&with_user[0], &with_user[1]);
    let foreign = ask(&app, &(one.0.clone(), two.1.clone()), json!({})).await;
    assert_eq!(
        (foreign.status, foreign.code()),
        (StatusCode::FORBIDDEN, "foreign_capability")
    );
    let wrong = ask(&app, one, json!({"message": 7})).await;
    assert_eq!(
        wrong.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        wrong.json
    );
    let unknown = ask(&app, one, json!({"text": "hi"})).await;
    assert_eq!(unknown.code(), "unknown_field", "{}", unknown.json);
    // Nothing refused was kept, nor sent to the user model.
    assert_eq!(view(&app, one).await["conversation"], json!([]));
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python_user_client(url: &str, capability: &str) -> Value {
    let python = root().join(".cache/mcp-venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/install-mcp-servers.sh",
        python.display()
    );
    let out = std::process::Command::new(python)
        .arg(root().join("fixtures/mcp/clients/python_api_user_client.py"))
        .args([url, capability])
        .output()
        .expect("the client runs");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the client prints JSON")
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn the_python_sdk_asks_the_simulated_user_over_the_mcp_endpoint(pool: PgPool) {
    let server = server();
    let app = app_playing(&pool, &server, "customer");
    let attempts = started(&app, &external_case(json!({}))).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let served = app.clone();
    tokio::spawn(async move { axum::serve(listener, served).await.unwrap() });
    let (id, capability) = attempts[0].clone();
    let url = format!("http://{addr}/api/attempts/{id}/mcp");
    let report = tokio::task::spawn_blocking(move || python_user_client(&url, &capability))
        .await
        .unwrap();
    assert_eq!(
        report["tools"],
        json!(["add", "get", "ask_user"]),
        "{report:#}"
    );
    let result = |key: &str| report[key]["structuredContent"].clone();
    assert_eq!(result("first"), json!({"reply": "I need a note, please."}));
    assert_eq!(result("asked"), json!({"reply": "milk"}));
    assert_eq!(result("added"), json!({"id": "n-1"}));
    assert_eq!(
        result("done"),
        json!({"reply": "Thanks! ###STOP###", "stop": "###STOP###", "ended": true})
    );
    assert_eq!(result("after"), json!({"ended": true}));
    assert_eq!(report["wrong"]["isError"], true, "{report:#}");
    let finished = finish(&app, &attempts[0]).await;
    assert_eq!(finished["outcome"], "passed", "{finished}");
    // The same words leave the same conversation as over HTTP.
    let seen = view(&app, &attempts[0]).await;
    assert_eq!(turns(&seen), expected_turns(), "{seen:#}");
}

/// An API process playing simulated users with `user` of `server`: its own
/// pool, store and dispatcher over the test's database.
async fn process_playing(pool: &PgPool, server: &Server, user: &str) -> Router {
    let store = PgStore::new(app_pool(pool).await);
    let auth = AuthConfig::hs256(SECRET).unwrap();
    let config = ApiConfig {
        user_model: Some(model(server, user)),
        ..ApiConfig::default()
    };
    router(AppState::over_store(store, auth, config))
}

/// Two API processes playing the user of `server` (a user model that
/// takes a second to answer), and the one attempt of an external case
/// started on the first.
async fn one_attempt_on_two_processes(
    pool: &PgPool,
    server: &Server,
) -> (Router, Router, (String, String)) {
    let (one, two) = (
        process_playing(pool, server, "customer").await,
        process_playing(pool, server, "customer").await,
    );
    let mut document = external_case(json!({}));
    document["cases"][0]["attempts"] = json!(1);
    let attempt = started(&one, &document).await.remove(0);
    (one, two, attempt)
}

/// Two asks of one attempt at once, each served by its own API process,
/// while the user model takes a second to answer: both read the same
/// conversation and both ask the model, but only one reply can be kept
/// where the conversation goes on. The other ask is answered 409
/// `user_busy` and keeps nothing: the conversation holds one user turn,
/// and goes on from it.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn two_asks_at_once_on_two_processes_one_is_answered_the_other_user_busy(pool: PgPool) {
    let server = server_with(&["--delay-ms", "1000"]);
    let (one, two, attempt) = one_attempt_on_two_processes(&pool, &server).await;
    let attempt = &attempt;
    let (a, b) = tokio::join!(ask(&one, attempt, json!({})), ask(&two, attempt, json!({})));
    let mut replies = [a, b];
    replies.sort_by_key(|r| r.status);
    let [answered, busy] = replies;
    assert_eq!(answered.status, StatusCode::OK, "{}", answered.json);
    assert_eq!(answered.json, json!({"reply": "I need a note, please."}));
    assert_eq!(
        (busy.status, busy.code()),
        (StatusCode::CONFLICT, "user_busy"),
        "{}",
        busy.json
    );
    // Both asked the model, at the same time: they overlapped.
    let counts: Value = reqwest::get(server.url.replace("/v1", "/counts"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(counts["customer"], 2, "{counts}");
    assert_eq!(counts["max_in_flight"], 2, "{counts}");
    let seen = view(&one, attempt).await;
    assert_eq!(turns(&seen), expected_turns()[..1], "{seen:#}");
    assert_eq!(seen["harness_errors"], json!([]), "{seen:#}");
    // The conversation goes on from the one reply kept, on either process.
    let said = json!({"message": "What should the note say?"});
    assert_eq!(asked(&two, attempt, said).await, json!({"reply": "milk"}));
    assert_eq!(turns(&view(&one, attempt).await), expected_turns()[..3]);
}

/// An ask that arrives while another ask of the same attempt waits for
/// the user's reply — the first has kept the agent's message already — is
/// answered 409 `user_busy` at once and keeps nothing, on another process
/// too: the conversation holds the first ask's message and the reply to
/// it, never the later message beside it.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn an_ask_while_another_waits_for_the_reply_keeps_nothing(pool: PgPool) {
    let server = server_with(&["--delay-ms", "1000"]);
    let (one, two, attempt) = one_attempt_on_two_processes(&pool, &server).await;
    let attempt = &attempt;
    assert_eq!(
        asked(&one, attempt, json!({})).await,
        json!({"reply": "I need a note, please."})
    );
    let first = ask(
        &one,
        attempt,
        json!({"message": "What should the note say?"}),
    );
    let later = async {
        // The first has kept its message and waits for the user model.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        ask(&two, attempt, json!({"message": "Are you still there?"})).await
    };
    let (first, later) = tokio::join!(first, later);
    assert_eq!(first.status, StatusCode::OK, "{}", first.json);
    assert_eq!(first.json, json!({"reply": "milk"}));
    assert_eq!(
        (later.status, later.code()),
        (StatusCode::CONFLICT, "user_busy"),
        "{}",
        later.json
    );
    let seen = view(&two, attempt).await;
    assert_eq!(turns(&seen), expected_turns()[..3], "{seen:#}");
    assert_eq!(seen["harness_errors"], json!([]), "{seen:#}");
}

/// How many simulations and attempts the database holds.
async fn started_rows(pool: &PgPool) -> (i64, i64) {
    sqlx::query_as("SELECT (SELECT count(*) FROM simulations), (SELECT count(*) FROM attempts)")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// An operation or workflow of the agent's called `ask_user`, in a
/// simulation with a case that talks with its simulated user through the
/// API, would hide the user's `ask_user` on the attempt's MCP endpoint: the
/// start refuses it (422, `duplicate_tool_name` at its pointer) and starts
/// nothing. Without such a case, or with a model agent's user (which
/// nobody asks over MCP), the same tools start.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn an_agent_tool_called_ask_user_is_refused_at_the_start(pool: PgPool) {
    let server = server();
    let app = app_playing(&pool, &server, "customer");
    let bearer = token("acme", &[RUN]);
    // An operation of a tool the agent calls.
    let mut operation = external_case(json!({}));
    operation["tools"][0]["operations"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "ask_user", "description": "Asks.", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}}));
    operation["tools"][0]["definitions"]["ask_user"] = json!({
        "schema_version": 1, "default_variant": "ok",
        "variants": {"ok": {"result": {}}},
        "examples": [{"variant": "ok", "input": {}, "expected": {}}]});
    // A workflow the agent calls.
    let mut workflow = external_case(json!({}));
    workflow["agent"]["tools"] = json!(["notes", "ask_user"]);
    workflow["agent"]["workflows"] =
        json!([{"name": "ask_user", "nodes": [{"type": "return", "id": "done", "value": {}}]}]);
    // An operation of a library tool (its operations are the tenant's).
    let manager = token("acme", &[MANAGE]);
    let desk = json!({"name": "desk", "source": {"type": "custom", "operations": [
        {"name": "ask_user", "input_schema": {"type": "object"}}]}});
    let created = send(
        &app,
        Method::POST,
        "/api/tools",
        Some(&manager),
        Some(&desk),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.json);
    let library = json!({
        "simulation_version": 1, "name": "desk", "allow_incomplete": true,
        "tools": [{"name": "desk", "from": "library", "id": created.json["id"]}],
        "agent": {"name": "clerk", "tools": ["desk"]},
        "cases": [{"name": "asks", "driver": {"type": "external"},
                   "user": {"type": "model", "instructions": "x"}}]});
    for (document, at) in [
        (&operation, "/tools/0/operations/2/name"),
        (&workflow, "/agent/workflows/0/name"),
        (&library, "/tools/0"),
    ] {
        let reply = start(&app, &bearer, document).await;
        assert_eq!(
            reply.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            reply.json
        );
        assert_eq!(reply.code(), "invalid_simulation", "{}", reply.json);
        let problems = reply.problems();
        assert_eq!(problems.len(), 1, "{}", reply.json);
        assert_eq!(problems[0]["code"], "duplicate_tool_name");
        assert_eq!(problems[0]["path"], at);
        assert_eq!(started_rows(&pool).await, (0, 0), "nothing started");
    }
    // No case talks with a user over the API: nothing to hide.
    for (driver, user) in [
        (json!({"type": "external"}), Value::Null),
        (
            json!({"type": "model"}),
            json!({"type": "model", "instructions": "x"}),
        ),
    ] {
        for document in [&operation, &workflow, &library] {
            let mut document = document.clone();
            document["cases"][0]["driver"] = driver.clone();
            document["cases"][0]["user"] = user.clone();
            if user.is_null() {
                document["cases"][0].as_object_mut().unwrap().remove("user");
            }
            let reply = start(&app, &bearer, &document).await;
            assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.json);
        }
    }
}
