//! Point 6 of issue 13: every bad input, with its status and code, in the one
//! error shape.

use crate::common::*;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use serde_json::json;
use sqlx::PgPool;
use toolmock_api::ApiConfig;

fn json_request(path: &str, bearer: &str, body: impl Into<Body>) -> Request<Body> {
    Request::builder()
        .method(Method::POST)
        .uri(path)
        .header(header::AUTHORIZATION, format!("Bearer {bearer}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(body.into())
        .unwrap()
}

/// Every error body is `{"error": {"code", "message", "details"?}}` and nothing else.
fn assert_shape(reply: &Reply) {
    let object = reply.json.as_object().expect("an object");
    assert_eq!(object.len(), 1, "{}", reply.json);
    let error = reply.json["error"].as_object().expect("error is an object");
    assert!(
        error["code"].is_string() && error["message"].is_string(),
        "{}",
        reply.json
    );
    for key in error.keys() {
        assert!(
            ["code", "message", "details", "request_id", "class", "path"].contains(&key.as_str()),
            "unexpected member {key}"
        );
    }
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn bad_inputs_have_their_status_and_code(pool: PgPool) {
    let app = app_with(
        &pool,
        ApiConfig {
            body_limit: 4096,
            ..ApiConfig::default()
        },
    );
    let bearer = token("acme", &[MANAGE]);

    // Malformed JSON: 400 with line and column.
    let reply = raw(
        &app,
        json_request("/api/tools", &bearer, "{\n  \"name\": \"x\",\n  oops\n}"),
    )
    .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::BAD_REQUEST, "malformed_json")
    );
    assert_eq!(
        reply.json["error"]["details"],
        json!({"line": 3, "column": 3})
    );
    assert_shape(&reply);

    // Truncated JSON is malformed too.
    let reply = raw(&app, json_request("/api/tools", &bearer, "{\"name\": ")).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::BAD_REQUEST, "malformed_json")
    );

    // Over the body limit: 413.
    let big = json!({"name": "x".repeat(5000)}).to_string();
    let reply = raw(&app, json_request("/api/tools", &bearer, big)).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::PAYLOAD_TOO_LARGE, "body_too_large")
    );
    assert_eq!(reply.json["error"]["details"]["limit_bytes"], 4096);
    assert_shape(&reply);

    // Unknown fields: 422, at the top level and nested.
    let mut body = calendar_tool("calendar");
    body["colour"] = json!("blue");
    let reply = send(&app, Method::POST, "/api/tools", Some(&bearer), Some(&body)).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "unknown_field")
    );
    assert!(
        reply.json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("colour")
    );
    let mut body = calendar_tool("calendar");
    body["source"]["operations"][0]["extra"] = json!(1);
    let reply = send(&app, Method::POST, "/api/tools", Some(&bearer), Some(&body)).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "unknown_field")
    );

    // A member of the wrong type or a missing one: 422 invalid_body.
    let reply = send(
        &app,
        Method::POST,
        "/api/tools",
        Some(&bearer),
        Some(&json!({"name": 3})),
    )
    .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_body")
    );

    // Any body but a JSON object: 422 invalid_body — also `[]` where serde
    // would read a struct without fields from it (a verification's queue
    // body; before, the tool's 404 or a queued verification).
    let verifications = "/api/tools/00000000-0000-4000-8000-000000000000/verifications";
    for (path, body) in [
        (verifications, json!([])),
        (verifications, json!(null)),
        ("/api/tools", json!([])),
        ("/api/tools", json!(["calendar"])),
        ("/api/tools", json!("calendar")),
    ] {
        let reply = send(&app, Method::POST, path, Some(&bearer), Some(&body)).await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_body"),
            "{path} {body}: {}",
            reply.json
        );
        assert_shape(&reply);
    }
    let reply = send(
        &app,
        Method::POST,
        verifications,
        Some(&bearer),
        Some(&json!({})),
    )
    .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND, "{}", reply.json);

    // Not declared as JSON: 415.
    let request = Request::builder()
        .method(Method::POST)
        .uri("/api/tools")
        .header(header::AUTHORIZATION, format!("Bearer {bearer}"))
        .body(Body::from(calendar_tool("calendar").to_string()))
        .unwrap();
    let reply = raw(&app, request).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type")
    );

    // A path parameter that is no UUID: 400.
    let reply = send(
        &app,
        Method::GET,
        "/api/tools/not-a-uuid",
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::BAD_REQUEST, "invalid_path_parameter")
    );

    // An unknown route and an unknown method: JSON 404 and 405.
    let reply = send(&app, Method::GET, "/api/nothing-here", Some(&bearer), None).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::NOT_FOUND, "route_not_found")
    );
    assert_shape(&reply);
    let reply = send(&app, Method::DELETE, "/api/tools", Some(&bearer), None).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed")
    );

    // An invalid manifest: 422 with every problem and its pointer.
    let body = json!({"name": "sf", "source": {"type": "platform", "manifest": {
        "manifest_version": 1, "tool": "salesforce",
        "operations": [{"name": "q", "parameters": [{"name": "a", "type": "blob"}, {"name": "a", "type": "string"}],
                        "output": {"schema": {"type": "object"}}}]}}});
    let reply = send(&app, Method::POST, "/api/tools", Some(&bearer), Some(&body)).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_manifest")
    );
    let problems = reply.problems();
    assert!(problems.len() >= 2, "{problems:?}");
    assert!(
        problems
            .iter()
            .all(|p| p["path"].as_str().unwrap().starts_with("/source/manifest/"))
    );

    // U+0000 in a string or a key: 422 with the pointer (found by schemathesis as a 500).
    let reply = raw(
        &app,
        json_request(
            "/api/agents",
            &token("acme", &[RUN]),
            r#"{"name": "a\u0000b"}"#,
        ),
    )
    .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "nul_character")
    );
    assert_eq!(reply.json["error"]["details"]["path"], "/name");
    let mut body = calendar_tool("calendar");
    body["source"]["operations"][0]["input_schema"]["properties"] = json!({"d\u{0}y": {}});
    let reply = send(&app, Method::POST, "/api/tools", Some(&bearer), Some(&body)).await;
    assert_eq!(reply.code(), "nul_character");
    assert_eq!(
        reply.json["error"]["details"]["path"],
        "/source/operations/0/input_schema/properties/d\u{0}y"
    );

    // A revision number no revision can have (found by schemathesis as a 500).
    let reply = send(&app, Method::GET, "/api/tools/00000000-0000-4000-8000-000000000000/operations/00000000-0000-4000-8000-000000000000/revisions/4294967295", Some(&bearer), None).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::NOT_FOUND, "not_found")
    );

    // A name already used by the tenant: 409.
    create_calendar(&app, &bearer).await;
    let reply = send(
        &app,
        Method::POST,
        "/api/tools",
        Some(&bearer),
        Some(&calendar_tool("calendar")),
    )
    .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::CONFLICT, "conflict")
    );
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn internal_errors_name_the_request_and_hide_the_cause(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE]);
    let tool = create_calendar(&app, &bearer).await;
    // The database going away is an internal failure.
    pool.close().await;
    let request = Request::builder()
        .method(Method::GET)
        .uri(format!("/api/tools/{}", tool.id))
        .header(header::AUTHORIZATION, format!("Bearer {bearer}"))
        .header("x-request-id", "trace-me-42")
        .body(Body::empty())
        .unwrap();
    let reply = raw(&app, request).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::INTERNAL_SERVER_ERROR, "internal")
    );
    assert_eq!(reply.json["error"]["request_id"], "trace-me-42");
    assert_eq!(reply.json["error"]["message"], "internal error");
    assert_eq!(reply.headers["x-request-id"], "trace-me-42");
    let text = String::from_utf8_lossy(&reply.bytes).to_lowercase();
    assert!(!text.contains("pool") && !text.contains("sqlx"), "{text}");
    assert_shape(&reply);
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn every_response_has_a_request_id(pool: PgPool) {
    let app = app(&pool);
    let reply = send(&app, Method::GET, "/healthz", None, None).await;
    assert_eq!(reply.status, StatusCode::OK);
    let id = reply.headers["x-request-id"].to_str().unwrap();
    assert!(uuid::Uuid::parse_str(id).is_ok(), "{id}");
    // An unusable incoming id is replaced rather than echoed.
    let request = Request::builder()
        .uri("/healthz")
        .header("x-request-id", "has spaces and {braces}")
        .body(Body::empty())
        .unwrap();
    let reply = raw(&app, request).await;
    assert!(uuid::Uuid::parse_str(reply.headers["x-request-id"].to_str().unwrap()).is_ok());
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn readiness_follows_the_database(pool: PgPool) {
    let app = app(&pool);
    assert_eq!(
        send(&app, Method::GET, "/readyz", None, None).await.status,
        StatusCode::OK
    );
    sqlx::query("DELETE FROM _sqlx_migrations")
        .execute(&pool)
        .await
        .unwrap();
    let reply = send(&app, Method::GET, "/readyz", None, None).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::SERVICE_UNAVAILABLE, "not_ready")
    );
    pool.close().await;
    let reply = send(&app, Method::GET, "/readyz", None, None).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::SERVICE_UNAVAILABLE, "not_ready")
    );
    assert_eq!(
        send(&app, Method::GET, "/healthz", None, None).await.status,
        StatusCode::OK
    );
}
