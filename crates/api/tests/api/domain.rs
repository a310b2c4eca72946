//! A version-2 simulation with shared fixtures through the HTTP API on
//! PostgreSQL: the tool-call endpoint answers a domain error with its
//! documented 422 body (class `domain_error`, the mock's code and message,
//! `details.data`), records it as evidence with the status `domain_error`
//! and leaves the state alone; the simulation's views and its results name
//! the fixtures' hash.

use crate::common::*;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;

fn orders() -> serde_json::Map<String, Value> {
    (1..=3)
        .map(|i| (format!("#W{i}"), json!({"status": "pending"})))
        .collect()
}

/// One tool `shop` whose `get_order` reads the shared fixture by a
/// computed path and answers `order_not_found` for an id it lacks.
fn document() -> Value {
    let id = json!({"$input": "order_id"});
    json!({
        "simulation_version": 1,
        "name": "orders",
        "fixtures": [{"value": {"orders": orders()}}],
        "tools": [{
            "name": "shop", "from": "custom",
            "operations": [{
                "name": "get_order",
                "input_schema": {"type": "object", "required": ["order_id"],
                                 "properties": {"order_id": {"type": "string"}}},
                "output_schema": {"type": "object"}
            }],
            "definitions": {"get_order": {
                "schema_version": 2, "default_variant": "ok",
                "variants": {"ok": {
                    "result": {"order": {"$state": ["orders", id]}},
                    "rules": [{
                        "when": [{"source": "state", "path": ["orders", id], "op": "exists", "value": false}],
                        "error": {"code": "order_not_found", "message": "Order not found",
                                  "data": {"order_id": {"$input": "order_id"}}}
                    }]
                }},
                "examples": [
                    {"variant": "ok", "input": {"order_id": "#W1"},
                     "state": {"orders": {"#W1": {"status": "pending"}}},
                     "expected": {"order": {"status": "pending"}}},
                    {"variant": "ok", "input": {"order_id": "#W9"}, "state": {"orders": {}},
                     "expected_error": {"code": "order_not_found", "message": "Order not found",
                                        "data": {"order_id": "#W9"}}}
                ]
            }}
        }],
        "agent": {"name": "clerk", "tools": ["shop"]},
        "cases": [{
            "name": "looks up",
            "driver": {"type": "external"},
            "expect": {"trajectory": [
                {"kind": "used", "call": {"tool": "shop", "operation": "get_order",
                                          "status": "domain_error", "code": "order_not_found"}}
            ]}
        }]
    })
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_domain_error_is_a_422_of_its_own_class_and_evidence_without_a_state_change(
    pool: PgPool,
) {
    let app = app(&pool);
    let bearer = token("acme", &[RUN]);
    let started = start(&app, &bearer, &document()).await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.json);
    let simulation = started.json["id"].as_str().unwrap().to_owned();
    let attempt = &started.json["attempts"][0];
    let (id, cap) = (
        attempt["id"].as_str().unwrap(),
        attempt["capability"].as_str().unwrap(),
    );
    let calls = format!("/api/attempts/{id}/tool-calls");
    let call = |order: &str| json!({"tool": "shop", "operation": "get_order", "arguments": {"order_id": order}});

    let found = send(&app, Method::POST, &calls, Some(cap), Some(&call("#W2"))).await;
    assert_eq!(found.status, StatusCode::OK, "{}", found.json);
    assert_eq!(found.json, json!({"order": {"status": "pending"}}));

    let missing = send(&app, Method::POST, &calls, Some(cap), Some(&call("#W9"))).await;
    assert_eq!(missing.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        missing.json,
        json!({"error": {"class": "domain_error", "code": "order_not_found",
                         "message": "Order not found",
                         "details": {"data": {"order_id": "#W9"}}}})
    );
    // A bad input is still the tool input error, told apart by its class.
    let invalid = send(
        &app,
        Method::POST,
        &calls,
        Some(cap),
        Some(&json!({"tool": "shop", "operation": "get_order", "arguments": {}})),
    )
    .await;
    assert_eq!(invalid.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(invalid.json["error"]["class"], "tool_input_error");

    let read = send(
        &app,
        Method::GET,
        &format!("/api/attempts/{id}"),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.json);
    let evidence = read.json["evidence"].as_array().unwrap();
    assert_eq!(evidence.len(), 2, "{}", read.json);
    assert_eq!(evidence[1]["status"], "domain_error", "{}", evidence[1]);
    assert_eq!(evidence[1]["error"]["code"], "order_not_found");
    assert_eq!(
        evidence[1]["state_before"], evidence[1]["state_after"],
        "{}",
        evidence[1]
    );
    assert_eq!(read.json["has_harness_error"], false);

    // The domain error is what the case expects: the attempt passes.
    let finished = send(
        &app,
        Method::POST,
        &format!("/api/attempts/{id}/finish"),
        Some(cap),
        None,
    )
    .await;
    assert_eq!(finished.status, StatusCode::OK, "{}", finished.json);
    assert_eq!(finished.json["outcome"], "passed", "{}", finished.json);

    // The fixtures' hash: sha256 of the canonical JSON of the fixtures, in
    // the simulation's view, its listing and its results alike.
    let expected = toolmock_runtime::FixtureInput::hash_all(&[toolmock_runtime::FixtureInput {
        label: String::new(),
        members: json!({"orders": orders()}).as_object().cloned().unwrap(),
    }])
    .unwrap();
    let view = send(
        &app,
        Method::GET,
        &format!("/api/simulations/{simulation}"),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(view.json["fixtures_hash"], json!(expected), "{}", view.json);
    let listed = send(&app, Method::GET, "/api/simulations", Some(&bearer), None).await;
    assert_eq!(
        listed.json["simulations"][0]["fixtures_hash"],
        json!(expected)
    );
    let results = send(
        &app,
        Method::GET,
        &format!("/api/simulations/{simulation}/results"),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(results.status, StatusCode::OK, "{}", results.json);
    assert_eq!(results.json["fixtures_hash"], json!(expected));
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_simulation_without_fixtures_shows_no_hash(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[RUN]);
    let mut doc = document();
    doc.as_object_mut().unwrap().remove("fixtures");
    doc["tools"][0]["definitions"]["get_order"]["initial_state"] = json!({"orders": orders()});
    let started = start(&app, &bearer, &doc).await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.json);
    let view = send(
        &app,
        Method::GET,
        &format!("/api/simulations/{}", started.json["id"].as_str().unwrap()),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(view.status, StatusCode::OK);
    assert!(view.json.get("fixtures_hash").is_none(), "{}", view.json);
}
