//! The OpenAPI document: 3.1, served, and complete: every route of the table
//! is in it with the security the table states, and nothing else is.

use crate::common::*;
use axum::http::{Method, StatusCode};
use sqlx::PgPool;
use std::collections::BTreeSet;
use toolmock_api::routes::{Access, ROUTES};

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn the_document_lists_exactly_the_routes(pool: PgPool) {
    let app = app(&pool);
    let reply = send(&app, Method::GET, "/api/openapi.json", None, None).await;
    assert_eq!(reply.status, StatusCode::OK);
    let doc = reply.json;
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );

    let mut documented = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            documented.insert((method.to_uppercase(), path.clone()));
            assert!(
                operation["responses"]
                    .as_object()
                    .is_some_and(|r| !r.is_empty()),
                "{method} {path}"
            );
        }
    }
    let table: BTreeSet<_> = ROUTES
        .iter()
        .map(|r| (r.method.to_owned(), r.path.to_owned()))
        .collect();
    let missing: Vec<_> = table.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&table).collect();
    assert!(
        missing.is_empty(),
        "routes missing from the OpenAPI document: {missing:?}"
    );
    assert!(
        extra.is_empty(),
        "documented routes that are not in ROUTES: {extra:?}"
    );

    for route in ROUTES {
        let operation = &doc["paths"][route.path][route.method.to_lowercase()];
        let security = &operation["security"];
        match route.access {
            Access::Public => assert!(security.is_null(), "{} {}", route.method, route.path),
            Access::Permission(permission) => {
                assert_eq!(
                    security[0]["bearer"][0], permission,
                    "{} {}",
                    route.method, route.path
                );
            }
            Access::Capability => assert!(
                security[0]["capability"].is_array(),
                "{} {}",
                route.method,
                route.path
            ),
        }
        // Every authenticated operation says what a missing or wrong
        // credential (401) and a credential without the right (403) answer.
        if route.access != Access::Public {
            for status in ["401", "403"] {
                let response = &operation["responses"][status];
                assert!(
                    response["content"]["application/json"]["schema"]["$ref"]
                        .as_str()
                        .is_some_and(|r| r.ends_with("/ErrorEnvelope")),
                    "{} {}: {status} is not documented as an error: {response}",
                    route.method,
                    route.path
                );
                assert!(
                    response["description"]
                        .as_str()
                        .is_some_and(|d| !d.is_empty()),
                    "{} {}: {status} has no description",
                    route.method,
                    route.path
                );
            }
        }
    }
    // A path parameter must be in its path, and every placeholder documented
    // (schemathesis once sent `limit` in a path it was not part of).
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let params = operation["parameters"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for p in &params {
                if p["in"] == "path" {
                    let name = p["name"].as_str().unwrap();
                    assert!(
                        path.contains(&format!("{{{name}}}")),
                        "{method} {path}: {name} is no path parameter"
                    );
                }
            }
            for placeholder in path
                .split('{')
                .skip(1)
                .map(|rest| rest.split('}').next().unwrap())
            {
                assert!(
                    params
                        .iter()
                        .any(|p| p["in"] == "path" && p["name"] == placeholder),
                    "{method} {path}: {placeholder} undocumented"
                );
            }
        }
    }
    assert_eq!(doc, serde_json::to_value(toolmock_api::openapi()).unwrap());
}

/// Every operation that takes a body shows an example of one, and every
/// example works: sent to the real API in order, with the placeholder ids
/// and hash replaced by those the earlier answers gave, each is accepted.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn every_request_body_has_an_example_that_the_api_accepts(pool: PgPool) {
    let app = app(&pool);
    let doc = send(&app, Method::GET, "/api/openapi.json", None, None)
        .await
        .json;
    let example = |method: &str, path: &str| -> serde_json::Value {
        doc["paths"][path][method.to_lowercase()]["requestBody"]["content"]["application/json"]
            ["example"]
            .clone()
    };
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            if operation.get("requestBody").is_some() {
                assert!(
                    example(method, path).is_object(),
                    "{method} {path} takes a body but shows no example"
                );
            }
        }
    }

    let bearer = token("acme", &[MANAGE, RUN]);
    let sent = |method: Method, path: String, body: serde_json::Value| {
        let app = app.clone();
        let bearer = bearer.clone();
        async move {
            let reply = send(&app, method.clone(), &path, Some(&bearer), Some(&body)).await;
            assert!(
                reply.status.is_success(),
                "{method} {path}: {} {}",
                reply.status,
                reply.json
            );
            reply.json
        }
    };
    let tool = sent(
        Method::POST,
        "/api/tools".into(),
        example("POST", "/api/tools"),
    )
    .await;
    let tool_id = tool["id"].as_str().unwrap().to_owned();
    let updated = sent(
        Method::PUT,
        format!("/api/tools/{tool_id}"),
        example("PUT", "/api/tools/{id}"),
    )
    .await;
    let operation = &updated["tool"]["operations"][0];
    let mut save = example("POST", "/api/tools/{id}/testing");
    save["operation_id"] = operation["id"].clone();
    save["contract_hash"] = operation["contract_hash"].clone();
    sent(Method::POST, format!("/api/tools/{tool_id}/testing"), save).await;
    let inline = sent(
        Method::POST,
        "/api/tools/testing".into(),
        example("POST", "/api/tools/testing"),
    )
    .await;
    assert_eq!(inline["ok"], true, "{inline}");
    sent(
        Method::PUT,
        format!("/api/tools/{tool_id}/verification"),
        example("PUT", "/api/tools/{id}/verification"),
    )
    .await;
    let queued = sent(
        Method::POST,
        format!("/api/tools/{tool_id}/verifications"),
        example("POST", "/api/tools/{id}/verifications"),
    )
    .await;
    assert_eq!(queued["status"], "queued", "{queued}");
    let mut agent = example("POST", "/api/agents");
    agent["tools"][0]["tool"] = tool_id.clone().into();
    sent(Method::POST, "/api/agents".into(), agent).await;
    let simulation = example("POST", "/api/simulations");
    sent(Method::POST, "/api/simulations".into(), simulation.clone()).await;
    // The tool-call example is an external agent's call: a case it plays
    // (with a simulated user, for the ask-user example).
    let mut external = simulation;
    external["cases"][0]["driver"] = serde_json::json!({"type": "external"});
    external["cases"][0]["user"] =
        serde_json::json!({"type": "model", "instructions": "You want a note."});
    let started = sent(Method::POST, "/api/simulations".into(), external).await;
    let attempt = &started["attempts"][0];
    let reply = send(
        &app,
        Method::POST,
        &format!(
            "/api/attempts/{}/tool-calls",
            attempt["id"].as_str().unwrap()
        ),
        Some(attempt["capability"].as_str().unwrap()),
        Some(&example("POST", "/api/attempts/{id}/tool-calls")),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.json);
    // The same call over MCP, as an MCP client sends it.
    let request = axum::http::Request::builder()
        .method(Method::POST)
        .uri(format!(
            "/api/attempts/{}/mcp",
            attempt["id"].as_str().unwrap()
        ))
        .header(
            "authorization",
            format!("Bearer {}", attempt["capability"].as_str().unwrap()),
        )
        .header("content-type", "application/json")
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .body(axum::body::Body::from(
            example("POST", "/api/attempts/{id}/mcp").to_string(),
        ))
        .unwrap();
    let reply = raw(&app, request).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.json);
    assert!(
        reply.json["result"]["structuredContent"].is_object(),
        "{}",
        reply.json
    );
    // Accepted, and answered by the user model this API lacks (a recorded
    // harness error, never a refusal of the body).
    let reply = send(
        &app,
        Method::POST,
        &format!("/api/attempts/{}/ask-user", attempt["id"].as_str().unwrap()),
        Some(attempt["capability"].as_str().unwrap()),
        Some(&example("POST", "/api/attempts/{id}/ask-user")),
    )
    .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::FAILED_DEPENDENCY, "user_unavailable"),
        "{}",
        reply.json
    );
}
