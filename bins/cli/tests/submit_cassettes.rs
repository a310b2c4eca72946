//! Model cassettes through the API and its workers: `toolmock submit
//! --cassette DIR --cassette-mode record` sends the cassette with the
//! simulation, the workers (their model, simulated user and judge on the
//! local conversation server) record into the one stored with it, and the
//! recording is downloaded into DIR; with the server stopped and workers
//! that have no model at all, the replay prints the same bytes, and a
//! changed instruction is `cassette_miss` naming the case, the attempt, the
//! user's turn and the pointer.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed expectation must panic

mod conversation_common;

use conversation_common::{scratch, server};
use serde_json::{Value, json};
use sqlx::PgPool;
use std::path::Path;
use std::process::Output;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use toolmock_api::{ApiConfig, AppState, AuthConfig, Claims, mint_hs256, router};
use toolmock_worker::Agents;

const SECRET: &[u8] = b"cassette test secret, at least 32 bytes";

fn token() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    mint_hs256(
        SECRET,
        &Claims {
            sub: "submitter".into(),
            tenant: "acme".into(),
            permissions: vec!["AIManager:RunSimulations".into()],
            exp: now + 3600,
            iat: Some(now),
            iss: None,
            aud: None,
        },
    )
    .unwrap()
}

/// The API on a real socket and two workers with `agents`, stopped when
/// dropped.
struct Service {
    base: String,
    stops: Vec<tokio::sync::oneshot::Sender<()>>,
}

impl Service {
    async fn start(pool: &PgPool, name: &str, agents: &Agents) -> Service {
        let auth = AuthConfig::hs256(SECRET).unwrap();
        let app = router(AppState::new(pool.clone(), auth, ApiConfig::default()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let mut stops = Vec::new();
        for n in 1..=2 {
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let mut config = toolmock_worker::WorkerConfig::new(format!("{name}-{n}"));
            config.poll = Duration::from_millis(50);
            let store = toolmock_store::PgStore::new(pool.clone());
            tokio::spawn(toolmock_worker::run_with(
                store,
                config,
                agents.clone(),
                async {
                    let _ = stopped.await;
                },
            ));
            stops.push(stop);
        }
        Service { base, stops }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        for stop in self.stops.drain(..) {
            let _ = stop.send(());
        }
    }
}

/// A model on the conversation server at `url`.
fn model(url: &str, name: &str) -> Arc<dyn toolmock_simulation::ChatModel> {
    let endpoint = toolmock_agent::Endpoint {
        base_url: url.to_owned(),
        model: name.to_owned(),
        api_key: Some("sk-very-secret-key".into()),
        temperature: None,
        seed: None,
        timeout: Duration::from_secs(60),
        max_retries: 0,
        concurrency: 4,
        max_response_bytes: toolmock_agent::DEFAULT_MAX_RESPONSE_BYTES,
    };
    Arc::new(toolmock_agent::OpenAiChat::new(&endpoint).unwrap())
}

async fn submit(dir: &Path, base: &str, extra: &[&str]) -> Output {
    let mut args: Vec<String> = vec![
        "submit".into(),
        "sim.json".into(),
        "--api".into(),
        base.to_owned(),
        "--json".into(),
        "--timeout".into(),
        "240".into(),
    ];
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    let dir = dir.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_toolmock"));
        command.current_dir(&dir).args(&args);
        for (var, _) in std::env::vars() {
            if var.starts_with("TOOLMOCK_") {
                command.env_remove(var);
            }
        }
        command.env("TOOLMOCK_TOKEN", token());
        command.output().unwrap()
    })
    .await
    .unwrap()
}

/// The notes tool (the agent's) and the phone tool (the user's), and one
/// case of two attempts whose user is a model and whose answer is judged.
fn document(instructions: &str) -> Value {
    json!({
        "simulation_version": 1,
        "name": "notes with a customer",
        "tools": [
            {"name": "notes", "from": "custom",
             "operations": [{"name": "add", "description": "Adds a note.",
                "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                "output_schema": {"type": "object", "required": ["id"]}}],
             "definitions": {"add": {
                "schema_version": 1, "default_variant": "ok",
                "variants": {"ok": {"result": {"id": "n-1"}, "set_state": {"last": {"$input": "text"}}}},
                "examples": [{"variant": "ok", "input": {"text": "a"}, "expected": {"id": "n-1"}}]}}},
            {"name": "phone", "from": "custom",
             "operations": [{"name": "unlock", "description": "Unlocks the user's phone.",
                "input_schema": {"type": "object"}, "output_schema": {"type": "object"}}],
             "definitions": {"unlock": {
                "schema_version": 1, "default_variant": "ok",
                "variants": {"ok": {"result": {"unlocked": true}, "set_state": {"unlocked": true}}},
                "examples": [{"variant": "ok", "input": {}, "expected": {"unlocked": true}}]}}}
        ],
        "agent": {"name": "scribe", "prompt": "You keep notes.", "tools": ["notes"]},
        "cases": [{
            "name": "c", "attempts": 2,
            "driver": {"type": "model", "max_turns": 8},
            "user": {"type": "model", "instructions": instructions, "persona": "Brief.", "tools": ["phone"]},
            "expect": {"final_answer": {"contains": ["n-1"]},
                       "judge": {"rubric": "The agent adds the note and confirms it."}}
        }]
    })
}

fn write(dir: &Path, instructions: &str) {
    std::fs::write(
        dir.join("sim.json"),
        serde_json::to_vec_pretty(&document(instructions)).unwrap(),
    )
    .unwrap();
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_cassette_recorded_through_the_workers_replays_without_a_model(pool: PgPool) {
    let dir = scratch();
    write(&dir, "You want a note.\nThe note says: milk");
    let conversation = server();
    let live = Agents {
        model: Some(model(&conversation.url, "asker")),
        judge: Some(model(&conversation.url, "judge_pass")),
        user: Some(model(&conversation.url, "customer_tools")),
        ..Agents::none()
    };
    let service = Service::start(&pool, "recorder", &live).await;
    let recorded = submit(
        &dir,
        &service.base,
        &["--cassette", "cassette", "--cassette-mode", "record"],
    )
    .await;
    let stdout = text(&recorded.stdout);
    assert_eq!(
        recorded.status.code(),
        Some(0),
        "{stdout}{}",
        text(&recorded.stderr)
    );
    let results: Value = serde_json::from_str(&stdout).unwrap();
    for attempt in results["cases"][0]["attempts"].as_array().unwrap() {
        assert_eq!(attempt["outcome"], "passed", "{attempt}");
    }
    assert!(
        text(&recorded.stderr).contains("exchange(s) recorded by the workers"),
        "{}",
        text(&recorded.stderr)
    );
    drop(service);
    drop(conversation);

    // The downloaded cassette: one file, every role of both attempts, no
    // key and no URL; sound for check-cassette.
    let file = std::fs::read_to_string(dir.join("cassette/c.jsonl")).unwrap();
    for secret in ["sk-very-secret-key", "127.0.0.1", "http://"] {
        assert!(!file.contains(secret), "the cassette holds {secret}");
    }
    let lines: Vec<Value> = file
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for role in ["agent", "user", "judge"] {
        for attempt in [1, 2] {
            assert!(
                lines
                    .iter()
                    .any(|l| l["role"] == role && l["attempt"] == attempt),
                "no {role} exchange of attempt {attempt}: {file}"
            );
        }
    }
    let check = std::process::Command::new(env!("CARGO_BIN_EXE_toolmock"))
        .current_dir(&dir)
        .args(["check-cassette", "sim.json", "cassette"])
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stdout));

    // Workers with no model at all replay it: the same bytes.
    let service = Service::start(&pool, "replayer", &Agents::none()).await;
    let replayed = submit(&dir, &service.base, &["--cassette", "cassette"]).await;
    assert_eq!(
        text(&replayed.stdout),
        stdout,
        "stderr: {}",
        text(&replayed.stderr)
    );
    assert_eq!(replayed.status.code(), Some(0));
    // A replay writes nothing back.
    assert_eq!(
        std::fs::read_to_string(dir.join("cassette/c.jsonl")).unwrap(),
        file
    );

    // The embedded runtime replays the same cassette.
    let embedded = std::process::Command::new(env!("CARGO_BIN_EXE_toolmock"))
        .current_dir(&dir)
        .args(["run", "sim.json", "--json", "--cassette", "cassette"])
        .output()
        .unwrap();
    assert_eq!(
        embedded.status.code(),
        Some(0),
        "{}",
        text(&embedded.stderr)
    );

    // A changed instruction: each attempt misses at the user model's
    // system message, never a pass and never a live call.
    write(&dir, "You want a note.\nThe note says: eggs");
    let missed = submit(&dir, &service.base, &["--cassette", "cassette"]).await;
    assert_eq!(missed.status.code(), Some(1), "{}", text(&missed.stderr));
    let results: Value = serde_json::from_slice(&missed.stdout).unwrap();
    for attempt in results["cases"][0]["attempts"].as_array().unwrap() {
        assert_eq!(attempt["outcome"], "harness_error", "{attempt}");
        let error = &attempt["harness_errors"][0];
        assert_eq!(error["code"], "cassette_miss", "{error}");
        assert_eq!(error["path"], "/messages/0/content", "{error}");
        let named = format!(
            "case \"c\", attempt {}, user turn 1",
            attempt["number"].as_u64().unwrap()
        );
        assert!(
            error["message"].as_str().unwrap().contains(&named),
            "{error}"
        );
    }
}
