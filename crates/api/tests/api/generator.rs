//! The chat-completions generator against a small local server speaking that
//! protocol: failing drafts are retried with their diagnostics fed back, a
//! draft is returned only once it passes the check, and the bound holds.

use crate::common::*;
use axum::Json;
use axum::http::{Method, StatusCode};
use axum::routing::post;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolmock_api::{ApiConfig, ChatCompletions, Generator};

/// A chat-completions server answering with `replies` in turn (the last one
/// repeated) and keeping every request it received.
struct FakeModel {
    base_url: String,
    requests: Arc<Mutex<Vec<Value>>>,
}

async fn fake_model(replies: Vec<String>, status: StatusCode) -> FakeModel {
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = requests.clone();
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        post(move |Json(body): Json<Value>| {
            let seen = seen.clone();
            let replies = replies.clone();
            async move {
                let mut seen = seen.lock().unwrap();
                seen.push(body);
                let reply = replies[(seen.len() - 1).min(replies.len() - 1)].clone();
                (status, Json(json!({"id": "x", "object": "chat.completion",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}]})))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    FakeModel {
        base_url: format!("http://{address}/v1"),
        requests,
    }
}

fn config(model: &FakeModel) -> ApiConfig {
    ApiConfig {
        generator: Generator::ChatCompletions(ChatCompletions {
            base_url: model.base_url.clone(),
            model: "test-model".into(),
            api_key: Some("sk-test".into()),
            max_attempts: 3,
            timeout: Duration::from_secs(10),
        }),
        ..ApiConfig::default()
    }
}

async fn generate(app: &axum::Router, bearer: &str, tool: &Created) -> Reply {
    send(app, Method::POST, &format!("/api/tools/{}/testing", tool.id), Some(bearer),
        Some(&json!({"action": "generate", "operation_id": tool.book, "instructions": "reference TEST-742"}))).await
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn failing_drafts_are_retried_with_their_diagnostics(pool: PgPool) {
    let mut wrong = booking_definition();
    wrong["examples"][0]["expected"] = json!({"reference": "WRONG"});
    let model = fake_model(
        vec![
            "not json at all".into(),
            format!("Here you go:\n```json\n{wrong}\n```"),
            booking_definition().to_string(),
        ],
        StatusCode::OK,
    )
    .await;
    let app = app_with(&pool, config(&model));
    let bearer = token("acme", &[MANAGE]);
    let tool = create_calendar(&app, &bearer).await;
    let reply = generate(&app, &bearer, &tool).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.json);
    assert_eq!(reply.json["outcome"], "draft");
    assert_eq!(reply.json["backend"], "chat_completions");
    assert_eq!(reply.json["attempts"], 3);
    assert_eq!(reply.json["definition"], booking_definition());

    let requests = model.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0]["model"], "test-model");
    let first_prompt = requests[0]["messages"][1]["content"].as_str().unwrap();
    assert!(
        first_prompt.contains("\"book\"") && first_prompt.contains("reference TEST-742"),
        "{first_prompt}"
    );
    // Each retry carries the previous reply and its problems.
    let second = requests[1]["messages"].as_array().unwrap();
    assert!(
        second[second.len() - 1]["content"]
            .as_str()
            .unwrap()
            .contains("invalid_json")
    );
    let third = requests[2]["messages"].as_array().unwrap();
    let feedback = third[third.len() - 1]["content"].as_str().unwrap();
    assert!(
        feedback.contains("example_mismatch") && feedback.contains("/examples/0/expected"),
        "{feedback}"
    );

    // The checked draft saves as revision 1.
    let saved = send(&app, Method::POST, &format!("/api/tools/{}/testing", tool.id), Some(&bearer), Some(&json!({
        "action": "save", "operation_id": tool.book, "contract_hash": reply.json["contract_hash"],
        "definition": reply.json["definition"], "provenance": "generated", "instructions": "reference TEST-742"}))).await;
    assert_eq!(saved.status, StatusCode::CREATED);
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn the_retry_bound_holds_and_nothing_unchecked_comes_back(pool: PgPool) {
    let mut wrong = booking_definition();
    wrong["default_variant"] = json!("nope");
    let model = fake_model(vec![wrong.to_string()], StatusCode::OK).await;
    let app = app_with(&pool, config(&model));
    let bearer = token("acme", &[MANAGE]);
    let tool = create_calendar(&app, &bearer).await;
    let reply = generate(&app, &bearer, &tool).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json["outcome"], "generation_failed");
    assert_eq!(reply.json["attempts"], 3);
    assert!(reply.json.get("definition").is_none());
    assert_eq!(
        reply.json["diagnostics"][0]["code"],
        "unknown_default_variant"
    );
    assert_eq!(model.requests.lock().unwrap().len(), 3);
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_failing_endpoint_is_a_502(pool: PgPool) {
    let model = fake_model(vec!["{}".into()], StatusCode::INTERNAL_SERVER_ERROR).await;
    let app = app_with(&pool, config(&model));
    let bearer = token("acme", &[MANAGE]);
    let tool = create_calendar(&app, &bearer).await;
    let reply = generate(&app, &bearer, &tool).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::BAD_GATEWAY, "generator_failed")
    );
}
