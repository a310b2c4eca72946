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
mod service_common;

use conversation_common::{attempts, notes_with_a_customer, scratch, server};
use serde_json::{Value, json};
use service_common::{Service, token};
use sqlx::PgPool;
use std::path::Path;
use std::process::Output;
use std::sync::Arc;
use std::time::Duration;
use toolmock_worker::Agents;

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

/// `toolmock submit sim.json --json` in `dir` with `extra` flags and
/// `envs`, none of the caller's `TOOLMOCK_*` variables.
async fn submit(dir: &Path, base: &str, extra: &[&str], envs: &[(&str, &str)]) -> Output {
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
    let envs: Vec<(String, String)> = envs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let dir = dir.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_toolmock"));
        command.current_dir(&dir).args(&args);
        for (var, _) in std::env::vars() {
            if var.starts_with("TOOLMOCK_") {
                command.env_remove(var);
            }
        }
        command.env("TOOLMOCK_TOKEN", token(&["AIManager:RunSimulations"]));
        command.envs(envs);
        command.output().unwrap()
    })
    .await
    .unwrap()
}

/// The notes tool (the agent's) and the phone tool (the user's), and one
/// case of two attempts whose user is a model and whose answer is judged.
fn document(instructions: &str) -> Value {
    notes_with_a_customer(json!([{
        "name": "c", "attempts": 2,
        "driver": {"type": "model", "max_turns": 8},
        "user": {"type": "model", "instructions": instructions, "persona": "Brief.", "tools": ["phone"]},
        "expect": {"final_answer": {"contains": ["n-1"]},
                   "judge": {"rubric": "The agent adds the note and confirms it."}}
    }]))
}

/// Workers' models on the conversation server at `url`: the agent, the
/// judge and the simulated user.
fn live(url: &str) -> Agents {
    Agents {
        model: Some(model(url, "asker")),
        judge: Some(model(url, "judge_pass")),
        user: Some(model(url, "customer_tools")),
        ..Agents::none()
    }
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
    let service = Service::start(&pool, "recorder", &live(&conversation.url)).await;
    let recorded = submit(
        &dir,
        &service.base,
        &["--cassette", "cassette", "--cassette-mode", "record"],
        &[],
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
    let replayed = submit(&dir, &service.base, &["--cassette", "cassette"], &[]).await;
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
    let missed = submit(&dir, &service.base, &["--cassette", "cassette"], &[]).await;
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

/// The model usage the workers recorded for the latest simulation that
/// recorded any: (tokens sent live, replayed answers, their tokens).
async fn latest_usage(pool: &PgPool) -> (i64, i64, i64) {
    sqlx::query_as(
        "SELECT COALESCE(sum(prompt_tokens + completion_tokens) FILTER (WHERE NOT replayed), 0)::bigint, \
                count(*) FILTER (WHERE replayed), \
                COALESCE(sum(prompt_tokens + completion_tokens) FILTER (WHERE replayed), 0)::bigint \
         FROM model_usage WHERE simulation_id = \
             (SELECT simulation_id FROM model_usage GROUP BY simulation_id ORDER BY max(id) DESC LIMIT 1)",
    )
    .fetch_one(pool)
    .await
    .unwrap()
}

/// The notes suite for the server's `suite` model, whose answers report
/// usage: case "a" (two attempts) and case "b" (one), each playing the
/// conversation "five" (five requests), b's message being `b_says`; no
/// user, no judge.
fn write_suite(dir: &Path, b_says: &str) {
    let mut document = document("unused");
    let mut a = document["cases"][0].clone();
    a.as_object_mut().unwrap().remove("user");
    a["name"] = json!("a");
    a["driver"]["messages"] = json!(["play five"]);
    a["expect"] = json!({"final_answer": {"contains": ["four notes"]}});
    let mut b = a.clone();
    b["name"] = json!("b");
    b["attempts"] = json!(1);
    b["driver"]["messages"] = json!([b_says]);
    document["cases"] = json!([a, b]);
    std::fs::write(
        dir.join("sim.json"),
        serde_json::to_vec_pretty(&document).unwrap(),
    )
    .unwrap();
}

/// Workers whose agent model is the server's `suite` model.
fn suite_agents(url: &str) -> Agents {
    Agents {
        model: Some(model(url, "suite")),
        ..Agents::none()
    }
}

/// `toolmock submit --max-tokens` / `--max-cost` (or `TOOLMOCK_MAX_TOKENS`
/// / `TOOLMOCK_MAX_COST`) give the simulation its budget: smaller than the
/// suite needs, the attempts that needed another model request end
/// `harness_error` with `budget_exhausted`, the report is complete, and the
/// exit status is 3.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn submit_gives_the_simulation_its_budget(pool: PgPool) {
    let dir = scratch();
    write_suite(&dir, "play five");
    let conversation = server();
    let agents = Agents {
        prices: toolmock_worker::RolePrices {
            agent: Some(toolmock_simulation::Price {
                input: 1.0,
                output: 1.0,
            }),
            ..toolmock_worker::RolePrices::default()
        },
        ..suite_agents(&conversation.url)
    };
    let service = Service::start(&pool, "budgeted", &agents).await;
    // Within the budget: every attempt passes.
    let enough = submit(&dir, &service.base, &["--max-tokens", "1000000"], &[]).await;
    assert_eq!(enough.status.code(), Some(0), "{}", text(&enough.stderr));
    // One token, or a millionth: each attempt's first request is sent, the
    // second is not.
    for (flags, envs) in [
        (&["--max-tokens", "1"][..], &[][..]),
        (&[][..], &[("TOOLMOCK_MAX_TOKENS", "1")][..]),
        (&["--max-cost", "0.000001"][..], &[][..]),
        (&[][..], &[("TOOLMOCK_MAX_COST", "0.000001")][..]),
    ] {
        let out = submit(&dir, &service.base, flags, envs).await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{flags:?} {envs:?}: {stderr}");
        assert!(
            stderr.contains("the simulation's budget ran out: 3 attempt(s)"),
            "{stderr}"
        );
        let results: Value = serde_json::from_slice(&out.stdout).unwrap();
        let all = attempts(&results);
        assert_eq!(all.len(), 3, "the report is complete");
        for (_, attempt) in all {
            assert_eq!(attempt["outcome"], "harness_error", "{attempt}");
            assert_eq!(
                attempt["harness_errors"][0]["code"], "budget_exhausted",
                "{attempt}"
            );
        }
    }
    // A cost bound that is no positive number is refused before the start.
    let refused = submit(&dir, &service.base, &["--max-cost", "0"], &[]).await;
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
}

/// Through the workers, `auto` with one case changed and a budget smaller
/// than the recorded usage but larger than the changed case's new turns:
/// the replayed answers are recorded as `replayed` and cost nothing (every
/// attempt passes), only the new turns are charged; the same budget with
/// every request live runs out.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn auto_through_the_workers_charges_only_the_new_turns(pool: PgPool) {
    let dir = scratch();
    write_suite(&dir, "play five");
    let conversation = server();
    let service = Service::start(&pool, "auto", &suite_agents(&conversation.url)).await;
    let record = ["--cassette", "cassette", "--cassette-mode", "record"];
    let recorded = submit(&dir, &service.base, &record, &[]).await;
    assert_eq!(
        recorded.status.code(),
        Some(0),
        "{}",
        text(&recorded.stderr)
    );
    let (recorded_total, _, _) = latest_usage(&pool).await;
    // Three attempts of one conversation: a third of the whole each, and
    // the changed case's a few tokens more than its recorded one. Live,
    // the three attempts reach the budget before their last requests.
    let budget = recorded_total * 2 / 5;
    let budget_flag = budget.to_string();

    write_suite(&dir, "play five again");
    // The same cassette, in `auto`, under the budget.
    let auto = [
        &record[..2],
        &["--cassette-mode", "auto", "--max-tokens", &budget_flag],
    ]
    .concat();
    let ran = submit(&dir, &service.base, &auto, &[]).await;
    let stdout = text(&ran.stdout);
    assert_eq!(ran.status.code(), Some(0), "{stdout}{}", text(&ran.stderr));
    let results: Value = serde_json::from_str(&stdout).unwrap();
    for (case, attempt) in attempts(&results) {
        assert_eq!(attempt["outcome"], "passed", "{case}: {attempt}");
    }
    let (spent, replayed, replayed_tokens) = latest_usage(&pool).await;
    assert!(spent > 0 && spent < budget, "{spent} of {budget}");
    assert_eq!(replayed, 10, "case a's two attempts, five requests each");
    assert!(
        spent + replayed_tokens > budget,
        "counted as live, the replayed answers would have spent the budget"
    );
    let file = std::fs::read_to_string(dir.join("cassette/b.jsonl")).unwrap();
    assert!(file.contains("play five again"), "{file}");

    // The same budget, every request live: it runs out.
    let ran = submit(&dir, &service.base, &["--max-tokens", &budget_flag], &[]).await;
    assert_eq!(ran.status.code(), Some(3), "{}", text(&ran.stderr));
    let results: Value = serde_json::from_slice(&ran.stdout).unwrap();
    assert!(
        attempts(&results)
            .iter()
            .any(|(_, a)| a["harness_errors"][0]["code"] == "budget_exhausted"),
        "{results}"
    );
}
