//! A start's model cassette: an unusable one refused with every problem at
//! its pointer (a hand-edited line included), a usable one kept with the
//! simulation and downloaded in the order of a cassette folder, and none to
//! download for a simulation started without one.

use crate::common::*;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;

/// An exchange of `case` whose key is its request's hash.
fn exchange(case: &str, turn: u32) -> Value {
    let request = json!({"messages": [{"content": format!("turn {turn}"), "role": "user"}],
                         "model": {"model": "m"}, "tools": []});
    let text = String::from_utf8(toolmock_contract::canonical_json(&request).unwrap()).unwrap();
    json!({"cassette_version": 1, "case": case, "attempt": 1, "role": "agent", "turn": turn,
           "occurrence": 1, "key": toolmock_agent::cassette::request_key(&text),
           "request": request, "answer": {"content": "ok"}})
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_starts_cassette_is_checked_kept_and_downloaded(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE, RUN]);
    let tool = create_calendar(&app, &bearer).await;
    let start = |cassette: Option<Value>| {
        let mut document = calendar_simulation(&tool, 1);
        if let Some(cassette) = cassette {
            document["cassette"] = cassette;
        }
        document
    };

    let mut edited = exchange("b", 1);
    edited["answer"]["content"] = json!("edited");
    edited["request"]["messages"][0]["content"] = json!("edited");
    let refused = send(
        &app,
        Method::POST,
        "/api/simulations",
        Some(&bearer),
        Some(&start(Some(json!({"mode": "rewind", "exchanges": [
            exchange("a", 1), {"turn": 1}, edited
        ], "tape": 1})))),
    )
    .await;
    assert_eq!(
        refused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        refused.json
    );
    assert_eq!(refused.code(), "invalid_cassette");
    let paths: Vec<&str> = refused.json["error"]["details"]["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "/cassette/mode",
            "/cassette/tape",
            "/cassette/exchanges/1",
            "/cassette/exchanges/2"
        ],
        "{}",
        refused.json
    );
    assert!(
        refused.json["error"]["details"]["problems"][2]["message"]
            .as_str()
            .unwrap()
            .contains("missing field"),
        "{}",
        refused.json
    );

    // Kept with the simulation (not with its document) and downloaded in
    // file order.
    let started = send(
        &app,
        Method::POST,
        "/api/simulations",
        Some(&bearer),
        Some(&start(Some(
            json!({"mode": "auto", "exchanges": [exchange("b", 2), exchange("a", 1)]}),
        ))),
    )
    .await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.json);
    let id = started.json["id"].as_str().unwrap();
    let read = send(
        &app,
        Method::GET,
        &format!("/api/simulations/{id}"),
        Some(&bearer),
        None,
    )
    .await;
    assert!(
        read.json["document"].get("cassette").is_none(),
        "{}",
        read.json
    );
    let cassette = send(
        &app,
        Method::GET,
        &format!("/api/simulations/{id}/cassette"),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(cassette.status, StatusCode::OK, "{}", cassette.json);
    assert_eq!(cassette.json["mode"], "auto");
    assert_eq!(cassette.json["recorded"], 0);
    assert_eq!(
        cassette.json["exchanges"],
        json!([exchange("a", 1), exchange("b", 2)])
    );
    // Another tenant's simulation is not found.
    let other = token("other", &[RUN]);
    let hidden = send(
        &app,
        Method::GET,
        &format!("/api/simulations/{id}/cassette"),
        Some(&other),
        None,
    )
    .await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND, "{}", hidden.json);

    let plain = send(
        &app,
        Method::POST,
        "/api/simulations",
        Some(&bearer),
        Some(&start(None)),
    )
    .await;
    let id = plain.json["id"].as_str().unwrap();
    let none = send(
        &app,
        Method::GET,
        &format!("/api/simulations/{id}/cassette"),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(
        (none.status, none.code()),
        (StatusCode::CONFLICT, "no_cassette")
    );
}
