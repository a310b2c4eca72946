//! Model-driven cases in the workers, against the local OpenAI-compatible
//! conversation server (`fixtures/conversation-server/`, every request
//! checked and every answer built with the official `openai` SDK's types):
//! the same case played embedded (the runner `toolmock run` uses) and
//! through the API and a worker gives the same outcome, the same evidence
//! and errors, the same judgement and judge report, and the same
//! conversation — kept in PostgreSQL as it is played and shown by
//! `GET /api/attempts/{id}`. A worker without a model (or without a judge)
//! ends such attempts `harness_error` with its own code.

use crate::common::*;
use crate::parity::{embedded_view, root, stored_view};
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolmock_agent::{Endpoint, OpenAiChat};
use toolmock_runtime::Dispatcher;
use toolmock_runtime::backend::{Catalog, MemoryStore};
use toolmock_runtime::model::{AttemptId, TenantId};
use toolmock_simulation::{
    ChatModel, Files, RunOptions, SequenceClock, VirtualSleeper, load_value, run,
};
use toolmock_store::PgStore;
use toolmock_worker::Agents;
use uuid::Uuid;

/// The conversation server, killed when dropped.
pub(crate) struct Server {
    child: Child,
    pub(crate) url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn python() -> std::path::PathBuf {
    let python = root().join(".cache/test-venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/install-test-tools.sh",
        python.display()
    );
    python
}

/// Starts a fixture script that prints its port on its first line.
pub(crate) fn spawn_fixture(script: &str, args: &[&str]) -> (Child, u16) {
    let mut child = Command::new(python())
        .arg(root().join(script))
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("the fixture starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("its port");
    (child, line.trim().parse().expect("a port"))
}

pub(crate) fn server() -> Server {
    server_with(&[])
}

/// The conversation server started with `args` (e.g. `--delay-ms N`).
pub(crate) fn server_with(args: &[&str]) -> Server {
    let (child, port) = spawn_fixture("fixtures/conversation-server/server.py", args);
    Server {
        child,
        url: format!("http://127.0.0.1:{port}/v1"),
    }
}

pub(crate) fn model(server: &Server, name: &str) -> Arc<dyn ChatModel> {
    model_timed(server, name, Duration::from_secs(20))
}

/// `model` with the model time-out `timeout`.
fn model_timed(server: &Server, name: &str, timeout: Duration) -> Arc<dyn ChatModel> {
    Arc::new(
        OpenAiChat::new(&Endpoint {
            base_url: server.url.clone(),
            model: name.into(),
            api_key: Some("sk-never-stored".into()),
            temperature: None,
            seed: None,
            timeout,
            max_retries: 1,
            concurrency: 4,
            max_response_bytes: toolmock_agent::DEFAULT_MAX_RESPONSE_BYTES,
        })
        .unwrap(),
    )
}

/// One notes tool (`add` answers `n-1`, or `n-2` for text `b`; `get`), an
/// agent with a prompt and a guard, and `cases`.
pub(crate) fn notes_document(cases: Value) -> Value {
    json!({
        "simulation_version": 1,
        "name": "notes agent",
        "tools": [{
            "name": "notes", "from": "custom",
            "operations": [
                {"name": "add", "description": "Adds a note.",
                 "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": false},
                 "output_schema": {"type": "object", "required": ["id"]}},
                {"name": "get", "description": "Reads the last note.", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}}
            ],
            "definitions": {
                "add": {
                    "schema_version": 1, "default_variant": "ok",
                    "variants": {"ok": {"result": {"id": "n-1"}, "set_state": {"last": {"$input": "text"}},
                                        "rules": [{"when": [{"source": "input", "path": "text", "op": "eq", "value": "b"}], "result": {"id": "n-2"}}]}},
                    "examples": [{"variant": "ok", "input": {"text": "a"}, "expected": {"id": "n-1"}},
                                 {"variant": "ok", "input": {"text": "b"}, "expected": {"id": "n-2"}}]
                },
                "get": {
                    "schema_version": 1, "default_variant": "ok", "initial_state": {"last": null},
                    "variants": {"ok": {"result": {"last": {"$state": "last"}}}},
                    "examples": [{"variant": "ok", "input": {}, "expected": {"last": null}}]
                }
            }
        }],
        "agent": {"name": "scribe", "prompt": "You keep notes.", "guards": ["never delete notes"], "tools": ["notes"]},
        "cases": cases
    })
}

/// The one case of the conversation `model` plays.
fn case_of(model: &str) -> Value {
    let mut case = json!({"name": model, "attempts": 2,
        "driver": {"type": "model", "messages": ["Note down milk."], "max_turns": 4}});
    match model {
        "correct" => {
            case["expect"] = json!({
                "trajectory": [{"kind": "used", "call": {"tool": "notes", "operation": "add"}}],
                "final_answer": {"contains": ["n-1"], "matches": "^Added note n-\\d+"},
                "judge": {"rubric": "The agent adds the note and confirms it with its id.", "min_score": 0.5}
            });
        }
        "harness" => {
            case["variants"] = json!([{"tool": "notes", "operation": "get", "variant": "missing"}]);
            case["expect"] = json!({"outcome": "harness_error"});
        }
        _ => {}
    }
    case
}

/// Per (case, attempt number): outcome, unmet expectations, evidence,
/// errors, conversation and judge report.
pub(crate) type Views = BTreeMap<(String, u32), Value>;

async fn embedded(doc: &Value, model: Arc<dyn ChatModel>, judge: Arc<dyn ChatModel>) -> Views {
    let options = RunOptions {
        jobs: 1,
        keep_raw: true,
        model: Some(model),
        judge: Some(judge),
        ..RunOptions::default()
    };
    embedded_with(doc, &options).await
}

/// `doc` played by the embedded runner with `options`.
pub(crate) async fn embedded_with(doc: &Value, options: &RunOptions) -> Views {
    let loaded = load_value(doc, "request", &Files::InlineOnly).unwrap();
    let store = MemoryStore::new();
    let tenant = store.create_tenant("acme").await.unwrap();
    let dispatcher = Dispatcher::new(store)
        .with_clock(Arc::new(SequenceClock::default()))
        .with_sleeper(Arc::new(VirtualSleeper));
    let results = run(
        Arc::new(dispatcher),
        tenant,
        Arc::new(loaded),
        options,
        Arc::new(|| {}),
    )
    .await
    .unwrap();
    let mut views = Views::new();
    for case in &results.cases {
        for attempt in &case.attempts {
            let mut view = embedded_view(attempt);
            view["conversation"] = json!(attempt.conversation);
            view["judge"] = json!(attempt.judge);
            views.insert((case.name.clone(), attempt.number), view);
        }
    }
    views
}

/// Waits until every attempt of `simulation` has finished.
pub(crate) async fn wait_finished(pool: &PgPool, simulation: Uuid, within: Duration) {
    let began = Instant::now();
    loop {
        let open: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM attempts WHERE simulation_id = $1 AND status <> 'finished'",
        )
        .bind(simulation)
        .fetch_one(pool)
        .await
        .unwrap();
        if open == 0 {
            return;
        }
        assert!(
            began.elapsed() < within,
            "the simulation did not finish within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Starts `doc` through the API, lets one worker with `agents` play it,
/// and reads back what PostgreSQL kept; also the attempts as started.
pub(crate) async fn served(pool: &PgPool, doc: &Value, agents: Agents) -> (Views, Vec<Value>) {
    let app = app(pool);
    let bearer = token("acme", &[RUN]);
    let started = start(&app, &bearer, doc).await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.json);
    let simulation = Uuid::parse_str(started.json["id"].as_str().unwrap()).unwrap();
    let worker = Worker::start_with(pool, "model-worker", agents);
    wait_finished(pool, simulation, Duration::from_secs(60)).await;
    let report = worker.stop().await;
    let attempts = started.json["attempts"].as_array().unwrap().clone();
    assert_eq!(report.finished, attempts.len() as u64, "{report:?}");
    let store = PgStore::new(pool.clone());
    let tenant: Uuid = sqlx::query_scalar("SELECT tenant_id FROM simulations WHERE id = $1")
        .bind(simulation)
        .fetch_one(pool)
        .await
        .unwrap();
    let tenant = TenantId(tenant);
    let mut views = Views::new();
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
        let id = AttemptId(id);
        let messages = store.attempt_messages(tenant, id).await.unwrap();
        assert!(
            messages
                .iter()
                .enumerate()
                .all(|(i, m)| m.position as usize == i),
            "positions are dense from 0"
        );
        views.insert(
            (
                attempt["test_case"].as_str().unwrap().to_owned(),
                u32::try_from(attempt["number"].as_u64().unwrap()).unwrap(),
            ),
            {
                let unmet = unmet.map(|j| j.0).unwrap_or(Value::Null);
                let mut view = stored_view(&store, tenant, id, &outcome, unmet).await;
                view["conversation"] =
                    json!(messages.into_iter().map(|m| m.message).collect::<Vec<_>>());
                view["judge"] = json!(store.attempt_judge_report(tenant, id).await.unwrap());
                view
            },
        );
    }
    (views, attempts)
}

fn agents_of(server: &Server, model_name: &str) -> Agents {
    Agents {
        model: Some(model(server, model_name)),
        judge: Some(model(server, "judge_pass")),
        ..Agents::none()
    }
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn model_cases_play_the_same_embedded_and_through_the_api_and_a_worker(pool: PgPool) {
    let server = server();
    let expected_outcomes = [
        ("correct", "passed"),
        ("bad_then_fixed", "passed"),
        ("invented", "passed"),
        ("malformed", "passed"),
        ("parallel", "passed"),
        ("harness", "harness_error"),
        ("loop", "failed"),
    ];
    for (conversation, outcome) in expected_outcomes {
        let doc = notes_document(json!([case_of(conversation)]));
        let here = embedded(
            &doc,
            model(&server, conversation),
            model(&server, "judge_pass"),
        )
        .await;
        let (there, _) = served(&pool, &doc, agents_of(&server, conversation)).await;
        assert_eq!(here.len(), 2, "{conversation}: {here:#?}");
        assert_eq!(
            here.keys().collect::<Vec<_>>(),
            there.keys().collect::<Vec<_>>()
        );
        for (key, view) in &here {
            assert_eq!(view["outcome"], outcome, "{conversation}: {view:#}");
            assert_eq!(
                view, &there[key],
                "{conversation} {key:?} differs (left: embedded, right: API + worker)"
            );
            let text = there[key].to_string();
            assert!(!text.contains("sk-never-stored") && !text.contains(&server.url));
        }
    }
    // What each conversation exercised is there on the API side too.
    let doc = notes_document(json!([case_of("correct")]));
    let (views, _) = served(&pool, &doc, agents_of(&server, "correct")).await;
    let view = &views[&("correct".to_owned(), 1)];
    assert_eq!(view["judge"]["verdict"], "pass", "{view:#}");
    let roles: Vec<&str> = view["conversation"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "assistant"]);
    assert_eq!(view["conversation"][4]["content"], "Added note n-1.");
    // The results document (what `toolmock submit` prints) carries them too,
    // as `toolmock run --json` does.
    let simulation: Uuid =
        sqlx::query_scalar("SELECT id FROM simulations ORDER BY created_at DESC LIMIT 1")
            .fetch_one(&pool)
            .await
            .unwrap();
    let results = send(
        &app(&pool),
        Method::GET,
        &format!("/api/simulations/{simulation}/results"),
        Some(&token("acme", &[RUN])),
        None,
    )
    .await;
    assert_eq!(results.status, StatusCode::OK, "{}", results.json);
    let attempt = &results.json["cases"][0]["attempts"][0];
    assert_eq!(attempt["conversation"], view["conversation"], "{attempt:#}");
    assert_eq!(attempt["judge"], view["judge"], "{attempt:#}");
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_worker_without_a_model_ends_a_model_attempt_model_not_configured(pool: PgPool) {
    let doc = notes_document(json!([case_of("correct")]));
    let (views, _) = served(&pool, &doc, Agents::none()).await;
    for view in views.values() {
        assert_eq!(view["outcome"], "harness_error", "{view:#}");
        assert_eq!(view["harness_errors"][0]["code"], "model_not_configured");
        assert_eq!(view["conversation"], json!([]));
        assert_eq!(view["evidence"], json!([]));
    }
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_rubric_without_a_judge_ends_judge_failed_never_passed(pool: PgPool) {
    let server = server();
    let doc = notes_document(json!([case_of("correct")]));
    let agents = Agents {
        model: Some(model(&server, "correct")),
        ..Agents::none()
    };
    let (views, _) = served(&pool, &doc, agents).await;
    for view in views.values() {
        assert_eq!(view["outcome"], "harness_error", "{view:#}");
        assert_eq!(view["harness_errors"][0]["code"], "judge_failed");
        assert_eq!(view["judge"], Value::Null);
        // Played all the same: the conversation is evidence.
        assert_eq!(view["conversation"].as_array().unwrap().len(), 5);
    }
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn the_attempt_view_shows_the_conversation(pool: PgPool) {
    let server = server();
    let doc = notes_document(json!([case_of("correct")]));
    let (_, attempts) = served(&pool, &doc, agents_of(&server, "correct")).await;
    let app = app(&pool);
    let bearer = token("acme", &[RUN]);
    let id = attempts[0]["id"].as_str().unwrap();
    let reply = send(
        &app,
        Method::GET,
        &format!("/api/attempts/{id}"),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.json);
    let conversation = reply.json["conversation"].as_array().unwrap();
    assert_eq!(conversation.len(), 5, "{:#}", reply.json);
    assert_eq!(conversation[0]["role"], "system");
    assert_eq!(conversation[0]["position"], 0);
    assert!(conversation[0]["at"].is_string());
    assert_eq!(conversation[2]["role"], "assistant");
    assert_eq!(conversation[2]["tool_calls"][0]["name"], "notes__add");
    assert_eq!(conversation[4]["content"], "Added note n-1.");
    assert_eq!(reply.json["judge"]["verdict"], "pass");
    assert_eq!(reply.json["driver"], "model");
    // A scripted attempt has none.
    let text = reply.json.to_string();
    assert!(!text.contains("sk-never-stored") && !text.contains(&server.url));
}

/// Issue 32, item 3, in a worker: an endpoint answering 429 with
/// `Retry-After: 3600` (longer than the model time-out, 20 s here) is
/// unavailable at once — the attempts end `agent_unavailable` instead of
/// staying `running` while the heartbeat renews their lease.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_worker_never_waits_for_a_retry_after_past_the_model_time_out(pool: PgPool) {
    let server = server();
    let doc = notes_document(json!([case_of("rate_limited_long")]));
    let agents = Agents {
        model: Some(model(&server, "rate_limited_long")),
        ..Agents::none()
    };
    let began = Instant::now();
    let (views, _) = served(&pool, &doc, agents).await;
    assert!(
        began.elapsed() < Duration::from_secs(30),
        "{:?}",
        began.elapsed()
    );
    for view in views.values() {
        assert_eq!(view["outcome"], "harness_error", "{view:#}");
        assert_eq!(view["harness_errors"][0]["code"], "agent_unavailable");
    }
}

/// Issue 32, item 3, in a worker: with a model time-out of an hour the same
/// wait is within the bound; the attempt deadline (2 s here) ends each
/// attempt `harness_error` (`attempt_timeout`).
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_worker_ends_a_model_attempt_at_its_deadline(pool: PgPool) {
    let server = server();
    let doc = notes_document(json!([case_of("rate_limited_long")]));
    let agents = Agents {
        model: Some(model_timed(
            &server,
            "rate_limited_long",
            Duration::from_secs(3600),
        )),
        attempt_timeout: Duration::from_secs(2),
        ..Agents::none()
    };
    let (views, _) = served(&pool, &doc, agents).await;
    for view in views.values() {
        assert_eq!(view["outcome"], "harness_error", "{view:#}");
        assert_eq!(view["harness_errors"][0]["code"], "attempt_timeout");
    }
}
