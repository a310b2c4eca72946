//! The permission and tenant matrices over every route of `ROUTES`, and the
//! 401s for missing, expired and wrongly signed tokens. A route added to the
//! table without a sample request here fails `every_route_has_a_sample`.

use crate::common::*;
use axum::Router;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use toolmock_api::routes::{Access, ROUTES, Route};
use toolmock_api::{ApiConfig, AppState, AuthConfig, mint_hs256, router};

/// Ids of tenant A's rows that routes name.
struct Ids {
    tool: Created,
    agent: String,
    simulation: String,
    attempt: String,
    verification: String,
}

impl Ids {
    /// Every id of A's, to swap for absent ones.
    fn all(&self) -> Vec<&str> {
        vec![
            &self.tool.id,
            &self.tool.book,
            &self.agent,
            &self.simulation,
            &self.attempt,
            &self.verification,
        ]
    }
}

/// A concrete request for a route: its path with A's ids filled in, and a
/// body that would succeed for tenant A.
fn sample(route: &Route, ids: &Ids) -> Option<(String, Option<Value>)> {
    let t = &ids.tool;
    let id = if route.path.starts_with("/api/agents/") {
        &ids.agent
    } else if route.path.starts_with("/api/attempts/") {
        &ids.attempt
    } else if route.path.starts_with("/api/simulations/") {
        &ids.simulation
    } else {
        &t.id
    };
    let path = route
        .path
        .replace("{id}", id)
        .replace("{operation_id}", &t.book)
        .replace("{verification_id}", &ids.verification)
        .replace("{revision}", "1");
    let body = match (route.method, route.path) {
        ("GET", _) => None,
        ("POST", "/api/tools") => Some(calendar_tool("calendar-2")),
        ("PUT", "/api/tools/{id}") => Some(json!({"source": calendar_tool("x")["source"]})),
        ("POST", "/api/tools/{id}/testing") => {
            Some(json!({"action": "generate", "operation_id": t.book}))
        }
        ("POST", "/api/tools/testing") => {
            Some(json!({"action": "generate", "operation_id": "book",
            "tool": {"name": "calendar", "operations": [{"name": "book", "source": "custom",
                     "input_schema": {"type": "object"}, "output_schema": {"type": "object"}}]}}))
        }
        ("POST", "/api/agents") => {
            Some(json!({"name": "agent-2", "tools": [{"type": "library", "tool": t.id}]}))
        }
        ("POST", "/api/simulations") => Some(calendar_simulation(t, 1)),
        ("PUT", "/api/tools/{id}/verification") => Some(verification_settings()),
        // Queued (no worker runs it here).
        ("POST", "/api/tools/{id}/verifications") => Some(json!({})),
        // A custom tool has no server: served (auth passed), refused as 422.
        ("POST", "/api/tools/{id}/discover") => Some(json!({})),
        ("POST", "/api/attempts/{id}/finish") => None,
        ("POST", "/api/attempts/{id}/ask-user") => Some(json!({"message": "Hello"})),
        ("POST", "/api/attempts/{id}/mcp") => {
            Some(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "book", "arguments": {"day": "2026-01-02"}}}))
        }
        ("POST", "/api/attempts/{id}/tool-calls") => Some(
            json!({"tool": "calendar", "operation": "book", "arguments": {"day": "2026-01-02"}}),
        ),
        _ => return None,
    };
    Some((path, body))
}

/// Settings that reach a real tool (an endpoint nothing listens at: a
/// verification is only queued here, never run).
fn verification_settings() -> Value {
    json!({"verify": {"safe": ["book"]}, "endpoints": {"book": "http://127.0.0.1:9/book"}})
}

fn method(route: &Route) -> Method {
    route.method.parse().unwrap()
}

async fn tenant_a(app: &Router) -> Ids {
    let bearer = token("tenant-a", &[MANAGE, RUN]);
    let tool = create_calendar(app, &bearer).await;
    let saved = save_booking(app, &bearer, &tool).await;
    assert_eq!(saved.status, StatusCode::CREATED, "{:?}", saved.json);
    let agent = send(
        app,
        Method::POST,
        "/api/agents",
        Some(&bearer),
        Some(&json!({"name": "receptionist", "tools": [{"type": "library", "tool": tool.id}]})),
    )
    .await;
    assert_eq!(agent.status, StatusCode::CREATED, "{}", agent.json);
    let agent = agent.json["id"].as_str().unwrap().to_owned();
    // Started with a (still empty) model cassette, so that its download is
    // served.
    let mut document = calendar_simulation(&tool, 1);
    document["cassette"] = json!({"mode": "record", "exchanges": []});
    let started = send(
        app,
        Method::POST,
        "/api/simulations",
        Some(&bearer),
        Some(&document),
    )
    .await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.json);
    let simulation = started.json["id"].as_str().unwrap().to_owned();
    let attempt = &started.json["attempts"][0];
    let (attempt, capability) = (
        attempt["id"].as_str().unwrap().to_owned(),
        attempt["capability"].as_str().unwrap().to_owned(),
    );
    // Finished, so that its events stream ends.
    let finished = send(
        app,
        Method::POST,
        &format!("/api/attempts/{attempt}/finish"),
        Some(&capability),
        None,
    )
    .await;
    assert_eq!(finished.status, StatusCode::OK, "{}", finished.json);
    let path = format!("/api/tools/{}/verification", tool.id);
    let set = send(
        app,
        Method::PUT,
        &path,
        Some(&bearer),
        Some(&verification_settings()),
    )
    .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.json);
    let path = format!("/api/tools/{}/verifications", tool.id);
    let queued = send(app, Method::POST, &path, Some(&bearer), Some(&json!({}))).await;
    assert_eq!(queued.status, StatusCode::ACCEPTED, "{}", queued.json);
    let verification = queued.json["id"].as_str().unwrap().to_owned();
    Ids {
        tool,
        agent,
        simulation,
        attempt,
        verification,
    }
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn every_route_has_a_sample(pool: PgPool) {
    let app = app(&pool);
    let ids = tenant_a(&app).await;
    for route in ROUTES {
        assert!(
            sample(route, &ids).is_some(),
            "no sample request for {} {}",
            route.method,
            route.path
        );
    }
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn permission_matrix(pool: PgPool) {
    let app = app(&pool);
    let ids = tenant_a(&app).await;
    let mut checked = 0;
    for route in ROUTES {
        let (path, body) = sample(route, &ids).unwrap();
        let what = format!("{} {}", route.method, route.path);
        match route.access {
            Access::Public => {
                let reply = send(&app, method(route), &path, None, body.as_ref()).await;
                assert_eq!(reply.status, StatusCode::OK, "{what}");
            }
            Access::Permission(permission) => {
                // Every other permission, but not this one.
                let others: Vec<&str> = [MANAGE, RUN, "AIManager:Something"]
                    .into_iter()
                    .filter(|p| *p != permission)
                    .collect();
                let unrelated = token("tenant-a", &others);
                let reply = send(&app, method(route), &path, None, body.as_ref()).await;
                assert_eq!(
                    (reply.status, reply.code()),
                    (StatusCode::UNAUTHORIZED, "unauthenticated"),
                    "{what}"
                );
                assert_eq!(reply.headers["www-authenticate"], "Bearer", "{what}");
                let reply = send(&app, method(route), &path, Some(&unrelated), body.as_ref()).await;
                assert_eq!(
                    (reply.status, reply.code()),
                    (StatusCode::FORBIDDEN, "forbidden"),
                    "{what}"
                );
                assert_eq!(
                    reply.json["error"]["details"]["permission"], permission,
                    "{what}"
                );
                // With the permission the same request is served.
                let granted = token("tenant-a", &[permission]);
                let reply = send(&app, method(route), &path, Some(&granted), body.as_ref()).await;
                if route.path == "/api/tools/{id}/discover" {
                    assert_eq!(
                        (reply.status, reply.code()),
                        (StatusCode::UNPROCESSABLE_ENTITY, "kind_mismatch"),
                        "{what}"
                    );
                } else {
                    assert!(
                        reply.status.is_success(),
                        "{what}: {} {}",
                        reply.status,
                        reply.json
                    );
                }
            }
            Access::Capability => {
                let reply = send(&app, method(route), &path, None, body.as_ref()).await;
                assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{what}");
                // A user's token is no capability.
                let user = token("tenant-a", &[MANAGE]);
                let reply = send(&app, method(route), &path, Some(&user), body.as_ref()).await;
                assert_eq!(
                    (reply.status, reply.code()),
                    (StatusCode::UNAUTHORIZED, "invalid_capability"),
                    "{what}"
                );
            }
        }
        checked += 1;
    }
    assert_eq!(checked, ROUTES.len());
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn tenant_matrix(pool: PgPool) {
    let app = app(&pool);
    let ids = tenant_a(&app).await;
    let other = token("tenant-b", &[MANAGE, RUN]);
    for route in ROUTES {
        let Access::Permission(_) = route.access else {
            continue;
        };
        let (path, body) = sample(route, &ids).unwrap();
        let what = format!("{} {}", route.method, route.path);
        let reply = send(&app, method(route), &path, Some(&other), body.as_ref()).await;
        // The same request naming absent ids instead of A's.
        let mut absent_path = path.clone();
        let mut absent_body = body.as_ref().map(ToString::to_string);
        let mut names_a = false;
        for (n, id) in ids.all().into_iter().enumerate() {
            let absent = format!("00000000-0000-4000-8000-{n:012}");
            names_a |=
                absent_path.contains(id) || absent_body.as_ref().is_some_and(|b| b.contains(id));
            absent_path = absent_path.replace(id, &absent);
            absent_body = absent_body.map(|b| b.replace(id, &absent));
        }
        let absent_body: Option<Value> = absent_body.map(|b| serde_json::from_str(&b).unwrap());
        let missing = send(
            &app,
            method(route),
            &absent_path,
            Some(&other),
            absent_body.as_ref(),
        )
        .await;
        if names_a {
            // Another tenant's rows answer exactly as absent ones.
            assert!(!reply.status.is_success(), "{what}: {}", reply.json);
            assert_eq!(reply.status, missing.status, "{what}");
            assert_eq!(
                reply.json["error"]["code"], missing.json["error"]["code"],
                "{what}"
            );
            // Ids in messages aside, the details are the same too.
            let mask = |v: &Value| {
                let mut text = v.to_string();
                for (n, id) in ids.all().into_iter().enumerate() {
                    text = text
                        .replace(id, "<id>")
                        .replace(&format!("00000000-0000-4000-8000-{n:012}"), "<id>");
                }
                text
            };
            assert_eq!(
                mask(&reply.json["error"]["details"]),
                mask(&missing.json["error"]["details"]),
                "{what}"
            );
        } else {
            // Routes naming no row touch only the caller's own tenant.
            assert!(
                reply.status.is_success(),
                "{what}: {} {}",
                reply.status,
                reply.json
            );
        }
    }
    // Tenant B's own tool of the same name does not collide with A's.
    let reply = send(
        &app,
        Method::POST,
        "/api/tools",
        Some(&other),
        Some(&calendar_tool("calendar")),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED);
    // And A still sees only its own revision history.
    let a = token("tenant-a", &[MANAGE]);
    let history = send(
        &app,
        Method::GET,
        &format!(
            "/api/tools/{}/operations/{}/revisions",
            ids.tool.id, ids.tool.book
        ),
        Some(&a),
        None,
    )
    .await;
    assert_eq!(history.json.as_array().unwrap().len(), 1);
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn tokens_missing_expired_or_wrongly_signed_are_401(pool: PgPool) {
    let app = app(&pool);
    let path = "/api/tools/00000000-0000-4000-8000-000000000000";
    let cases: Vec<(&str, Option<String>)> = vec![
        ("missing", None),
        ("empty", Some(String::new())),
        ("garbage", Some("not.a.jwt".into())),
        (
            "expired",
            Some({
                let mut c = claims("acme", &[MANAGE]);
                c.exp = now() - 3600;
                mint_hs256(SECRET, &c).unwrap()
            }),
        ),
        (
            "wrong secret",
            Some(
                mint_hs256(
                    b"another secret of at least 32 bytes!!",
                    &claims("acme", &[MANAGE]),
                )
                .unwrap(),
            ),
        ),
        (
            "tampered",
            Some({
                let good = token("acme", &[MANAGE]);
                let evil = token("evil", &[MANAGE]);
                let g: Vec<&str> = good.split('.').collect();
                let e: Vec<&str> = evil.split('.').collect();
                format!("{}.{}.{}", g[0], e[1], g[2])
            }),
        ),
        (
            "alg none",
            Some({
                use base64_like::encode;
                format!(
                    "{}.{}.",
                    encode(br#"{"alg":"none","typ":"JWT"}"#),
                    encode(
                        serde_json::to_string(&claims("acme", &[MANAGE]))
                            .unwrap()
                            .as_bytes()
                    )
                )
            }),
        ),
    ];
    for (what, bearer) in cases {
        let reply = send(&app, Method::GET, path, bearer.as_deref(), None).await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::UNAUTHORIZED, "unauthenticated"),
            "{what}"
        );
    }
    // A valid token for a missing tool is a 404, so the 401s above are about the token.
    let reply = send(
        &app,
        Method::GET,
        path,
        Some(&token("acme", &[MANAGE])),
        None,
    )
    .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn issuer_and_audience_are_required_when_configured(pool: PgPool) {
    let auth = AuthConfig::hs256(SECRET)
        .unwrap()
        .with_issuer("idp")
        .with_audience("toolmock");
    let app = router(AppState::new(pool.clone(), auth, ApiConfig::default()));
    let path = "/api/tools/00000000-0000-4000-8000-000000000000";
    let with = |iss: Option<&str>, aud: Option<&str>| {
        let mut c = claims("acme", &[MANAGE]);
        c.iss = iss.map(str::to_owned);
        c.aud = aud.map(str::to_owned);
        mint_hs256(SECRET, &c).unwrap()
    };
    for (iss, aud) in [
        (None, Some("toolmock")),
        (Some("idp"), None),
        (Some("other"), Some("toolmock")),
        (Some("idp"), Some("other")),
    ] {
        let reply = send(&app, Method::GET, path, Some(&with(iss, aud)), None).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{iss:?} {aud:?}");
    }
    let reply = send(
        &app,
        Method::GET,
        path,
        Some(&with(Some("idp"), Some("toolmock"))),
        None,
    )
    .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
}

/// URL-safe base64 without padding, for hand-made tokens.
mod base64_like {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

    pub(super) fn encode(bytes: &[u8]) -> String {
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
            for i in 0..=chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            }
        }
        out
    }
}
