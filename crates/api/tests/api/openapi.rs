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
