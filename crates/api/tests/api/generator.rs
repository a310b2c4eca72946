//! The chat-completions generator against a small local server speaking that
//! protocol, through the agent's client: failing drafts are retried with
//! their diagnostics fed back, a draft is returned only once it passes the
//! check, the bound holds; a 5xx is retried, an answer past the size limit
//! or a `Retry-After` past the time-out is refused, and no failure quotes
//! what the endpoint sent.

use crate::common::*;
use axum::Json;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolmock_agent::Endpoint;
use toolmock_api::{ApiConfig, ChatCompletions, Generator};

/// What the server answers one request with.
#[derive(Debug, Clone)]
enum Answer {
    /// A chat completion whose message is this text.
    Draft(String),
    /// This status, `Retry-After` (when given) and body.
    Status(StatusCode, Option<&'static str>, String),
}

/// A chat-completions server answering with `answers` in turn (the last one
/// repeated) and keeping every request it received.
struct FakeModel {
    base_url: String,
    requests: Arc<Mutex<Vec<Value>>>,
}

/// An OpenAI chat completion as the API answers it (every field the
/// protocol requires, the request's model echoed).
fn completion(model: &Value, content: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_733_400_000,
        "model": model,
        "system_fingerprint": null,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": null},
            "logprobs": null,
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}
    })
}

async fn fake_model(answers: Vec<Answer>) -> FakeModel {
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = requests.clone();
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        post(move |Json(body): Json<Value>| {
            let seen = seen.clone();
            let answers = answers.clone();
            async move {
                let answer = {
                    let mut seen = seen.lock().unwrap();
                    seen.push(body.clone());
                    answers[(seen.len() - 1).min(answers.len() - 1)].clone()
                };
                match answer {
                    Answer::Draft(content) => {
                        Json(completion(&body["model"], &content)).into_response()
                    }
                    Answer::Status(status, retry_after, body) => {
                        let mut headers = HeaderMap::new();
                        headers.insert("content-type", "application/json".parse().unwrap());
                        if let Some(wait) = retry_after {
                            headers.insert("retry-after", wait.parse().unwrap());
                        }
                        (status, headers, body).into_response()
                    }
                }
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

fn endpoint(model: &FakeModel) -> Endpoint {
    Endpoint {
        base_url: model.base_url.clone(),
        model: "test-model".into(),
        api_key: Some("sk-test".into()),
        temperature: Some(0.0),
        seed: None,
        timeout: Duration::from_secs(10),
        max_retries: 2,
        concurrency: 4,
        max_response_bytes: 64 * 1024,
    }
}

fn config_of(endpoint: &Endpoint) -> ApiConfig {
    ApiConfig {
        generator: Generator::ChatCompletions(ChatCompletions::new(endpoint, 3).unwrap()),
        ..ApiConfig::default()
    }
}

fn config(model: &FakeModel) -> ApiConfig {
    config_of(&endpoint(model))
}

async fn generate(app: &axum::Router, bearer: &str, tool: &Created) -> Reply {
    send(app, Method::POST, &format!("/api/tools/{}/testing", tool.id), Some(bearer),
        Some(&json!({"action": "generate", "operation_id": tool.book, "instructions": "reference TEST-742"}))).await
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn failing_drafts_are_retried_with_their_diagnostics(pool: PgPool) {
    let mut wrong = booking_definition();
    wrong["examples"][0]["expected"] = json!({"reference": "WRONG"});
    let model = fake_model(vec![
        Answer::Draft("not json at all".into()),
        Answer::Draft(format!("Here you go:\n```json\n{wrong}\n```")),
        Answer::Draft(booking_definition().to_string()),
    ])
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
    let model = fake_model(vec![Answer::Draft(wrong.to_string())]).await;
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

/// What the endpoint echoes must never reach a response.
const ECHOED: &str = "ECHOED-SECRET-0123456789";

/// The generator's answer to one `generate` against `answers`, with the
/// requests the endpoint received.
async fn generated(pool: &PgPool, answers: Vec<Answer>) -> (Reply, usize) {
    let model = fake_model(answers).await;
    let app = app_with(pool, config(&model));
    let bearer = token("acme", &[MANAGE]);
    let tool = create_calendar(&app, &bearer).await;
    let reply = generate(&app, &bearer, &tool).await;
    let requests = model.requests.lock().unwrap().len();
    (reply, requests)
}

/// A 5xx (and a 429 after its `Retry-After`) is the endpoint's
/// unavailability: the client asks again, and the draft that follows is
/// the answer.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_5xx_or_a_429_is_retried(pool: PgPool) {
    let (reply, requests) = generated(
        &pool,
        vec![
            Answer::Status(StatusCode::SERVICE_UNAVAILABLE, None, ECHOED.into()),
            Answer::Status(StatusCode::TOO_MANY_REQUESTS, Some("1"), ECHOED.into()),
            Answer::Draft(booking_definition().to_string()),
        ],
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.json);
    assert_eq!(reply.json["outcome"], "draft");
    assert_eq!(reply.json["attempts"], 1, "retries are not drafts");
    assert_eq!(requests, 3);
}

/// A 5xx past the retries is 502 `generator_failed` (`unavailable`), after
/// exactly 1 + retries requests; its message names the status class, never
/// the body or reason phrase.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_failing_endpoint_is_a_502(pool: PgPool) {
    let (reply, requests) = generated(
        &pool,
        vec![Answer::Status(
            StatusCode::INTERNAL_SERVER_ERROR,
            None,
            json!({"error": {"message": ECHOED}}).to_string(),
        )],
    )
    .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::BAD_GATEWAY, "generator_failed")
    );
    assert_eq!(
        reply.json["error"]["details"],
        json!({"reason": "unavailable"})
    );
    let message = reply.json["error"]["message"].as_str().unwrap();
    assert!(message.contains("HTTP 500 (a server error)"), "{message}");
    assert!(!String::from_utf8_lossy(&reply.bytes).contains(ECHOED));
    assert_eq!(requests, 3, "one request and two retries");
}

/// A refusal (4xx but 429) is not retried, and an answer that is not a
/// chat completion is unusable; neither quotes the endpoint.
async fn unusable(pool: &PgPool, answer: Answer, said: &str) {
    let (reply, requests) = generated(pool, vec![answer]).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::BAD_GATEWAY, "generator_failed"),
        "{}",
        reply.json
    );
    assert_eq!(reply.json["error"]["details"]["reason"], "unusable");
    let message = reply.json["error"]["message"].as_str().unwrap();
    assert!(message.contains(said), "{message}");
    assert!(!String::from_utf8_lossy(&reply.bytes).contains(ECHOED));
    assert_eq!(requests, 1);
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_refusal_is_a_502_not_retried(pool: PgPool) {
    let body = json!({"error": {"message": ECHOED}}).to_string();
    unusable(
        &pool,
        Answer::Status(StatusCode::BAD_REQUEST, None, body),
        "HTTP 400 (the request was refused)",
    )
    .await;
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn an_answer_that_is_no_completion_is_a_502(pool: PgPool) {
    let body = json!({"choices": ECHOED}).to_string();
    unusable(
        &pool,
        Answer::Status(StatusCode::OK, None, body),
        "is not a chat completion",
    )
    .await;
}

/// An answer longer than the client reads is refused as soon as it passes
/// the limit: 502 `generator_failed` (`response_too_large`, the limit).
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn an_answer_past_the_size_limit_is_refused(pool: PgPool) {
    let long = format!("{ECHOED}{}", "y".repeat(70 * 1024));
    let (reply, _) = generated(&pool, vec![Answer::Draft(long)]).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::BAD_GATEWAY, "generator_failed"),
        "{}",
        reply.json
    );
    assert_eq!(
        reply.json["error"]["details"],
        json!({"reason": "response_too_large", "limit_bytes": 64 * 1024})
    );
    assert!(!String::from_utf8_lossy(&reply.bytes).contains(ECHOED));
}

/// A `Retry-After` longer than the time-out is not waited for: the
/// endpoint is unavailable now.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_retry_after_past_the_time_out_is_not_waited_for(pool: PgPool) {
    let started = std::time::Instant::now();
    let (reply, requests) = generated(
        &pool,
        vec![Answer::Status(
            StatusCode::TOO_MANY_REQUESTS,
            Some("3600"),
            ECHOED.into(),
        )],
    )
    .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::BAD_GATEWAY, "generator_failed")
    );
    assert_eq!(reply.json["error"]["details"]["reason"], "unavailable");
    assert_eq!(requests, 1);
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// An endpoint that cannot be reached is unavailable; the message names
/// neither its address nor the connection error's text.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn an_unreachable_endpoint_is_a_502_without_its_address(pool: PgPool) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let mut unreachable = endpoint(&FakeModel {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        requests: Arc::default(),
    });
    unreachable.max_retries = 0;
    let app = app_with(&pool, config_of(&unreachable));
    let bearer = token("acme", &[MANAGE]);
    let tool = create_calendar(&app, &bearer).await;
    let reply = generate(&app, &bearer, &tool).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::BAD_GATEWAY, "generator_failed")
    );
    assert_eq!(reply.json["error"]["details"]["reason"], "unavailable");
    assert!(
        !String::from_utf8_lossy(&reply.bytes).contains(&port.to_string()),
        "{}",
        reply.json
    );
}
