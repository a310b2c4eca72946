//! The `http` driver: a worker hands each attempt to the case's agent
//! service (`fixtures/agent-service/service.py`, a real process speaking
//! real HTTP), which plays it through the API's tool-call endpoint — served
//! here on a real socket — and finishes it. A service that never finishes,
//! refuses the hand-over or cannot be reached ends the attempt
//! `harness_error` with its own code, within the worker's time-out.

use crate::agents::{Server, model, notes_document, server, spawn_fixture, wait_finished};
use crate::common::*;
use crate::external_user::{expected_turns, turns, view};
use axum::http::StatusCode;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::process::Child;
use std::time::{Duration, Instant};
use toolmock_api::ApiConfig;
use toolmock_worker::Agents;
use uuid::Uuid;

/// The agent service, killed when dropped.
struct Service {
    child: Child,
    url: String,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn service() -> Service {
    let (child, port) = spawn_fixture("fixtures/agent-service/service.py", &[]);
    Service {
        child,
        url: format!("http://127.0.0.1:{port}"),
    }
}

/// The API on a real socket (the agent service calls it back); stops when
/// the test's runtime ends.
async fn listening_api(pool: &PgPool) -> String {
    listening(app(pool)).await
}

/// `app` on a real socket.
async fn listening(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(toolmock_api::serve(listener, app, std::future::pending()));
    format!("http://{address}")
}

fn http_case(url: &str) -> Value {
    json!({"name": "service notes", "attempts": 2, "data": {"customer": "c-7"},
           "driver": {"type": "http", "url": url, "messages": ["milk", "b"]},
           "expect": {"trajectory": [{"kind": "used", "call": {"tool": "notes", "operation": "add"}}],
                      "final_state": {"subset": {"last": "b"}}}})
}

/// Starts `cases` through the API, lets one worker with `agents` run them,
/// and answers the attempts as started with their outcome, harness error
/// codes and unmet expectations, and how long the run took.
async fn run_through_a_worker(
    pool: &PgPool,
    cases: Value,
    agents: Agents,
) -> (Vec<Value>, Duration) {
    let app = app(pool);
    let bearer = token("acme", &[RUN]);
    let started = start(&app, &bearer, &notes_document(cases)).await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.json);
    let attempts = started.json["attempts"].as_array().unwrap().clone();
    for attempt in &attempts {
        assert_eq!(attempt["driver"], "http");
        assert_eq!(
            attempt["capability"],
            Value::Null,
            "toolmock's to hand over"
        );
    }
    let simulation = Uuid::parse_str(started.json["id"].as_str().unwrap()).unwrap();
    let began = Instant::now();
    let worker = Worker::start_with(pool, "service-worker", agents);
    wait_finished(pool, simulation, Duration::from_secs(60)).await;
    let took = began.elapsed();
    let report = worker.stop().await;
    assert_eq!(report.finished, attempts.len() as u64, "{report:?}");
    let mut out = Vec::new();
    for attempt in &attempts {
        let id = Uuid::parse_str(attempt["id"].as_str().unwrap()).unwrap();
        let (outcome, unmet): (String, Option<sqlx::types::Json<Value>>) = sqlx::query_as(
            "SELECT a.outcome, j.unmet FROM attempts a \
             LEFT JOIN attempt_judgements j ON j.attempt_id = a.id WHERE a.id = $1",
        )
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap();
        let codes: Vec<String> =
            sqlx::query_scalar("SELECT code FROM harness_errors WHERE attempt_id = $1 ORDER BY id")
                .bind(id)
                .fetch_all(pool)
                .await
                .unwrap();
        let calls: i64 = sqlx::query_scalar("SELECT count(*) FROM evidence WHERE attempt_id = $1")
            .bind(id)
            .fetch_one(pool)
            .await
            .unwrap();
        out.push(
            json!({"id": id, "outcome": outcome, "codes": codes, "calls": calls,
                        "unmet": unmet.map(|j| j.0)}),
        );
    }
    (out, took)
}

/// One attempt of `case` through a worker whose agent services reach the
/// API at `api`: the attempt as `run_through_a_worker` answers it.
async fn one_attempt(pool: &PgPool, mut case: Value, api: String) -> Value {
    case["attempts"] = json!(1);
    let (attempts, _) = run_through_a_worker(
        pool,
        json!([case]),
        agents(Some(api), Duration::from_secs(30)),
    )
    .await;
    attempts[0].clone()
}

/// The service is on 127.0.0.1: private targets are allowed explicitly.
fn agents(api: Option<String>, timeout: Duration) -> Agents {
    Agents {
        api_url: api,
        service_timeout: timeout,
        targets: toolmock_discovery::TargetPolicy::open(),
        ..Agents::none()
    }
}

async fn get(url: &str) -> Value {
    reqwest::get(url).await.unwrap().json().await.unwrap()
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn an_agent_service_plays_the_attempt_through_the_api_and_finishes_it(pool: PgPool) {
    let service = service();
    let api = listening_api(&pool).await;
    let (attempts, _) = run_through_a_worker(
        &pool,
        json!([http_case(&format!("{}/play", service.url))]),
        agents(Some(api.clone()), Duration::from_secs(30)),
    )
    .await;
    for attempt in &attempts {
        assert_eq!(attempt["outcome"], "passed", "{attempt:#}");
        assert_eq!(attempt["calls"], 2);
        assert_eq!(
            attempt["unmet"],
            json!([]),
            "the finish recorded its judgement"
        );
    }
    // What the service was handed: the attempt, its capability, the
    // endpoints under the API's URL, the case's data and messages.
    let received = get(&format!("{}/received", service.url)).await;
    let received = received.as_array().unwrap();
    assert_eq!(received.len(), 2);
    for handover in received {
        let body = &handover["body"];
        let id = body["attempt"].as_str().unwrap();
        assert!(attempts.iter().any(|a| a["id"] == id));
        assert!(!body["capability"].as_str().unwrap().is_empty());
        assert_eq!(
            body["tool_calls_url"],
            format!("{api}/api/attempts/{id}/tool-calls")
        );
        assert_eq!(
            body["finish_url"],
            format!("{api}/api/attempts/{id}/finish")
        );
        assert_eq!(body["case"]["data"], json!({"customer": "c-7"}));
        assert_eq!(body["case"]["messages"], json!(["milk", "b"]));
        assert_eq!(body["case"]["name"], "service notes");
        // No simulated user: nobody to ask.
        assert_eq!(body["case"]["user"], false);
        assert_eq!(body.get("ask_user_url"), None);
    }
    // And what the API answered it: the mocks' results, then the finish.
    let played = get(&format!("{}/played", service.url)).await;
    for attempt in played.as_array().unwrap() {
        assert_eq!(attempt["calls"][0]["body"], json!({"id": "n-1"}));
        assert_eq!(attempt["calls"][1]["body"], json!({"id": "n-2"}));
        assert_eq!(attempt["finish"]["status"], 200);
        assert_eq!(attempt["finish"]["body"]["outcome"], "passed");
    }
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_service_that_never_finishes_ends_harness_error_within_the_time_out(pool: PgPool) {
    let service = service();
    let api = listening_api(&pool).await;
    let timeout = Duration::from_secs(2);
    let (attempts, took) = run_through_a_worker(
        &pool,
        json!([http_case(&format!("{}/never", service.url))]),
        agents(Some(api), timeout),
    )
    .await;
    for attempt in &attempts {
        assert_eq!(attempt["outcome"], "harness_error", "{attempt:#}");
        assert_eq!(attempt["codes"], json!(["agent_service_timeout"]));
    }
    // Both attempts waited at once (4 at a time), each its own time-out.
    assert!(took >= timeout, "{took:?}");
    assert!(took < timeout * 4, "{took:?}");
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_service_that_refuses_or_cannot_be_reached_ends_harness_error(pool: PgPool) {
    let service = service();
    let api = listening_api(&pool).await;
    // A port nobody listens on: bound, then let go.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let cases = json!([
        http_case(&format!("{}/refuse", service.url)),
        {"name": "unreachable", "driver": {"type": "http", "url": format!("http://{closed}/play")}}
    ]);
    let mut cases = cases;
    cases[0]["attempts"] = json!(1);
    let (attempts, _) =
        run_through_a_worker(&pool, cases, agents(Some(api), Duration::from_secs(30))).await;
    assert_eq!(attempts[0]["outcome"], "harness_error");
    assert_eq!(attempts[0]["codes"], json!(["agent_service_refused"]));
    assert_eq!(attempts[1]["outcome"], "harness_error");
    assert_eq!(attempts[1]["codes"], json!(["agent_service_unreachable"]));
    // A worker that cannot tell a service where the API is never hands over.
    let (attempts, _) = run_through_a_worker(
        &pool,
        json!([{"name": "no api", "driver": {"type": "http", "url": format!("{}/play", service.url)}}]),
        agents(None, Duration::from_secs(30)),
    )
    .await;
    assert_eq!(attempts[0]["codes"], json!(["agent_service_unreachable"]));
}

/// A 307 from an agent service is never followed (issue 32, item 5): the
/// hand-over carries the attempt's capability, so a client that followed
/// would POST it to the `Location` (here the service's own `/play`, which
/// would play and pass the attempt). It is refused and recorded as
/// `agent_service_refused`, and nothing reaches the redirect's target.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_redirect_from_an_agent_service_is_refused_never_followed(pool: PgPool) {
    let service = service();
    let api = listening_api(&pool).await;
    let case = http_case(&format!("{}/redirect", service.url));
    let attempt = one_attempt(&pool, case, api).await;
    assert_eq!(attempt["outcome"], "harness_error", "{attempt:#}");
    assert_eq!(attempt["codes"], json!(["agent_service_refused"]));
    assert_eq!(attempt["calls"], 0);
    let message = first_message(&pool, &attempt).await;
    assert!(message.contains("redirect (HTTP 307)"), "{message}");
    let received = get(&format!("{}/received", service.url)).await;
    let paths: Vec<&str> = received
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["/redirect"], "the capability went nowhere else");
}

/// A worker refuses an agent service on its own network (issue 32, item 6):
/// by default a service on 127.0.0.1 is never contacted — the attempt ends
/// `agent_service_unreachable` naming the address's class, and the service
/// receives nothing — while the operator's host allow-list lets it play.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_private_agent_service_is_refused_unless_the_operator_allows_it(pool: PgPool) {
    let service = service();
    let api = listening_api(&pool).await;
    let mut case = http_case(&format!("{}/play", service.url));
    case["attempts"] = json!(1);
    let closed = Agents {
        api_url: Some(api.clone()),
        ..Agents::none()
    };
    let (attempts, _) = run_through_a_worker(&pool, json!([case.clone()]), closed).await;
    assert_eq!(attempts[0]["outcome"], "harness_error", "{:#}", attempts[0]);
    assert_eq!(attempts[0]["codes"], json!(["agent_service_unreachable"]));
    let message = first_message(&pool, &attempts[0]).await;
    assert!(
        message.contains("private_target") && message.contains("loopback address"),
        "{message}"
    );
    let received = get(&format!("{}/received", service.url)).await;
    assert_eq!(received, json!([]), "nothing was sent");
    let listed = Agents {
        api_url: Some(api),
        targets: toolmock_discovery::TargetPolicy {
            allow_private: false,
            allowed_hosts: vec!["127.0.0.1".into()],
        },
        ..Agents::none()
    };
    let (attempts, _) = run_through_a_worker(&pool, json!([case]), listed).await;
    assert_eq!(attempts[0]["outcome"], "passed", "{:#}", attempts[0]);
}

/// The message of the attempt's first harness error.
async fn first_message(pool: &PgPool, attempt: &Value) -> String {
    sqlx::query_scalar("SELECT message FROM harness_errors WHERE attempt_id = $1 ORDER BY id")
        .bind(Uuid::parse_str(attempt["id"].as_str().unwrap()).unwrap())
        .fetch_one(pool)
        .await
        .unwrap()
}

/// An `http` case whose user `user_model` (a model of the conversation
/// server) plays: the user wants the note "milk", and the service must tell
/// it the note's id.
fn user_case(url: &str) -> Value {
    json!({"name": "service asks", "attempts": 2,
           "driver": {"type": "http", "url": url},
           "user": {"type": "model", "instructions": "You want a note.\nThe note says: milk", "max_turns": 4},
           "expect": {"final_state": {"subset": {"last": "milk"}}, "agent_said": {"contains": ["n-1"]}}})
}

/// The API on a real socket, its simulated users played by `user` of the
/// conversation server.
async fn listening_playing(pool: &PgPool, server: &Server, user: &str) -> String {
    let config = ApiConfig {
        user_model: Some(model(server, user)),
        ..ApiConfig::default()
    };
    listening(app_with(pool, config)).await
}

/// An agent service meets its case's simulated user (issue 35): the worker
/// hands it `ask_user_url` and says the case has a user; the service asks
/// the user (the API's user model) through it until the user ends the
/// conversation, calling the tools as it goes, and finishes. The
/// conversation is kept with both roles and judged by the finish.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn an_agent_service_talks_with_its_simulated_user_through_ask_user(pool: PgPool) {
    let service = service();
    let server = server();
    let api = listening_playing(&pool, &server, "customer").await;
    let (attempts, _) = run_through_a_worker(
        &pool,
        json!([user_case(&format!("{}/play", service.url))]),
        agents(Some(api.clone()), Duration::from_secs(30)),
    )
    .await;
    for attempt in &attempts {
        assert_eq!(attempt["outcome"], "passed", "{attempt:#}");
        assert_eq!(attempt["calls"], 1);
        assert_eq!(attempt["unmet"], json!([]));
        let id = attempt["id"].as_str().unwrap().to_owned();
        let seen = view(&app(&pool), &(id, String::new())).await;
        assert_eq!(turns(&seen), expected_turns(), "{seen:#}");
    }
    let received = get(&format!("{}/received", service.url)).await;
    for handover in received.as_array().unwrap() {
        let body = &handover["body"];
        let id = body["attempt"].as_str().unwrap();
        assert_eq!(body["case"]["user"], true);
        assert_eq!(
            body["ask_user_url"],
            format!("{api}/api/attempts/{id}/ask-user")
        );
    }
    let played = get(&format!("{}/played", service.url)).await;
    for attempt in played.as_array().unwrap() {
        let asks = attempt["asks"].as_array().unwrap();
        assert_eq!(asks.len(), 3, "{attempt:#}");
        assert_eq!(asks[2]["body"]["stop"], "###STOP###");
        assert_eq!(attempt["finish"]["body"]["outcome"], "passed");
    }

    // A user that never ends the conversation uses up its turns: the
    // service's note is not the one wanted, and the verdict says so.
    let chatty = listening_playing(&pool, &server, "customer_chatty").await;
    let case = user_case(&format!("{}/play", service.url));
    let attempt = one_attempt(&pool, case, chatty).await;
    assert_eq!(attempt["outcome"], "failed", "{attempt:#}");
    let codes: Vec<&str> = attempt["unmet"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"turn_limit"), "{codes:?}");
}

/// A user model the API cannot reach (or none configured) ends the
/// service's attempt `harness_error` (`user_unavailable`): never a pass,
/// though the service finished it.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn an_unreachable_user_model_ends_the_service_attempt_harness_error(pool: PgPool) {
    let service = service();
    let server = server();
    for api in [
        listening_playing(&pool, &server, "unavailable").await,
        listening_api(&pool).await,
    ] {
        let case = user_case(&format!("{}/play", service.url));
        let attempt = one_attempt(&pool, case, api).await;
        assert_eq!(attempt["outcome"], "harness_error", "{attempt:#}");
        assert_eq!(attempt["codes"], json!(["user_unavailable"]));
    }
    let played = get(&format!("{}/played", service.url)).await;
    for attempt in played.as_array().unwrap() {
        assert_eq!(attempt["asks"][0]["status"], 424, "{attempt:#}");
        assert_eq!(attempt["finish"]["body"]["outcome"], "harness_error");
    }
}
