//! A simulated user in the workers: the conversation server plays the
//! agent (`asker`, which asks before it acts) and the user (`customer`),
//! and the same case gives the same outcome, evidence and conversation
//! embedded and through the API and a worker; the attempt view shows both
//! sides, the stop marker and the user's own calls as the user's.

use crate::agents::{Views, embedded_with, model, notes_document, served, server};
use crate::common::*;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use toolmock_simulation::RunOptions;
use toolmock_worker::Agents;

fn user_case() -> Value {
    json!([{"name": "asks", "attempts": 2,
        "driver": {"type": "model", "max_turns": 6},
        "user": {"type": "model", "instructions": "You want a note.\nThe note says: milk"},
        "expect": {"final_state": {"subset": {"last": "milk"}}, "final_answer": {"contains": ["n-1"]}}}])
}

fn outcomes(views: &Views) -> Vec<String> {
    views
        .values()
        .map(|v| v["outcome"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_simulated_user_plays_the_same_embedded_and_through_a_worker(pool: PgPool) {
    let server = server();
    let doc = notes_document(user_case());
    let here = embedded_with(
        &doc,
        &RunOptions {
            jobs: 1,
            keep_raw: true,
            model: Some(model(&server, "asker")),
            user: Some(model(&server, "customer")),
            ..RunOptions::default()
        },
    )
    .await;
    let agents = Agents {
        model: Some(model(&server, "asker")),
        user: Some(model(&server, "customer")),
        ..Agents::none()
    };
    let (there, attempts) = served(&pool, &doc, agents).await;
    assert_eq!(outcomes(&here), ["passed", "passed"], "{here:#?}");
    assert_eq!(here, there);
    // The attempt view: both sides with their roles, the stop recorded.
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
    let turns: Vec<(String, String)> = reply.json["conversation"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user" || m["role"] == "assistant")
        .filter_map(|m| {
            Some((
                m["role"].as_str()?.to_owned(),
                m["content"].as_str()?.to_owned(),
            ))
        })
        .collect();
    let expected = [
        ("user", "I need a note, please."),
        ("assistant", "What should the note say?"),
        ("user", "milk"),
        ("assistant", "Added note n-1."),
        ("user", "Thanks! ###STOP###"),
    ]
    .map(|(r, c)| (r.to_owned(), c.to_owned()));
    assert_eq!(turns, expected);
    let last = reply.json["conversation"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["stop"], "###STOP###", "{last:#}");
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_worker_whose_user_model_is_down_ends_the_attempt_user_unavailable(pool: PgPool) {
    let server = server();
    let doc = notes_document(user_case());
    let agents = Agents {
        model: Some(model(&server, "asker")),
        user: Some(model(&server, "unavailable")),
        ..Agents::none()
    };
    let (there, _) = served(&pool, &doc, agents).await;
    for view in there.values() {
        assert_eq!(view["outcome"], "harness_error", "{view:#}");
        assert_eq!(
            view["harness_errors"][0]["code"], "user_unavailable",
            "{view:#}"
        );
    }
}
