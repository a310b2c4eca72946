//! Every route of the API, in one table ([`ROUTES`]) that says who may call
//! it. The router is built from this table and nothing else, and the OpenAPI
//! document from the same handlers, so the tests that walk the table (the
//! permission and tenant matrices, the OpenAPI completeness check) cover
//! every route there is.

mod agents;
mod attempts;
mod cassettes;
mod health;
mod simulations;
mod testing;
mod tools;
mod verifications;

use crate::AppState;
use crate::auth::{MANAGE_TOOLS, RUN_SIMULATIONS};
use axum::Router;
use utoipa::Modify;
use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};
use utoipa_axum::routes;

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone (health, readiness, the OpenAPI document).
    Public,
    /// A bearer JWT holding this permission, scoped to its tenant.
    Permission(&'static str),
    /// The capability of the attempt named in the path.
    Capability,
}

/// One route.
#[derive(Debug)]
pub struct Route {
    /// `GET`, `POST`, …
    pub method: &'static str,
    /// The path template, as in the OpenAPI document (`/api/tools/{id}`).
    pub path: &'static str,
    /// Who may call it.
    pub access: Access,
    register: fn() -> UtoipaMethodRouter<AppState>,
}

/// Every route of the API.
pub const ROUTES: &[Route] = &[
    Route {
        method: "GET",
        path: "/healthz",
        access: Access::Public,
        register: || routes!(health::healthz),
    },
    Route {
        method: "GET",
        path: "/readyz",
        access: Access::Public,
        register: || routes!(health::readyz),
    },
    Route {
        method: "POST",
        path: "/api/tools",
        access: Access::Permission(MANAGE_TOOLS),
        register: || routes!(tools::create_tool),
    },
    Route {
        method: "GET",
        path: "/api/tools",
        access: Access::Permission(MANAGE_TOOLS),
        register: || routes!(tools::list_tools),
    },
    Route {
        method: "GET",
        path: "/api/tools/{id}",
        access: Access::Permission(MANAGE_TOOLS),
        register: || routes!(tools::get_tool),
    },
    Route {
        method: "PUT",
        path: "/api/tools/{id}",
        access: Access::Permission(MANAGE_TOOLS),
        register: || routes!(tools::update_tool),
    },
    Route {
        method: "POST",
        path: "/api/tools/{id}/discover",
        access: Access::Permission(MANAGE_TOOLS),
        register: || routes!(tools::discover_tool),
    },
    Route {
        method: "GET",
        path: "/api/tools/{id}/testing",
        access: Access::Permission(MANAGE_TOOLS),
        register: || routes!(testing::get_testing),
    },
    Route {
        method: "POST",
        path: "/api/tools/{id}/testing",
        access: Access::Permission(MANAGE_TOOLS),
        register: || routes!(testing::post_testing),
    },
    Route {
        method: "GET",
        path: "/api/tools/{id}/operations/{operation_id}/revisions",
        access: Access::Permission(MANAGE_TOOLS),
        register: || routes!(testing::list_revisions),
    },
    Route {
        method: "GET",
        path: "/api/tools/{id}/operations/{operation_id}/revisions/{revision}",
        access: Access::Permission(MANAGE_TOOLS),
        register: || routes!(testing::get_revision),
    },
    Route {
        method: "PUT",
        path: "/api/tools/{id}/verification",
        access: Access::Permission(MANAGE_TOOLS),
        register: || routes!(verifications::put_settings),
    },
    Route {
        method: "GET",
        path: "/api/tools/{id}/verification",
        access: Access::Permission(MANAGE_TOOLS),
        register: || routes!(verifications::get_settings),
    },
    Route {
        method: "POST",
        path: "/api/tools/{id}/verifications",
        access: Access::Permission(MANAGE_TOOLS),
        register: || routes!(verifications::queue_verification),
    },
    Route {
        method: "GET",
        path: "/api/tools/{id}/verifications",
        access: Access::Permission(MANAGE_TOOLS),
        register: || routes!(verifications::list_verifications),
    },
    Route {
        method: "GET",
        path: "/api/tools/{id}/verifications/{verification_id}",
        access: Access::Permission(MANAGE_TOOLS),
        register: || routes!(verifications::get_verification),
    },
    Route {
        method: "POST",
        path: "/api/tools/testing",
        access: Access::Permission(MANAGE_TOOLS),
        register: || routes!(testing::post_inline_testing),
    },
    Route {
        method: "POST",
        path: "/api/agents",
        access: Access::Permission(RUN_SIMULATIONS),
        register: || routes!(agents::create_agent),
    },
    Route {
        method: "GET",
        path: "/api/agents/{id}",
        access: Access::Permission(RUN_SIMULATIONS),
        register: || routes!(agents::get_agent),
    },
    Route {
        method: "POST",
        path: "/api/simulations",
        access: Access::Permission(RUN_SIMULATIONS),
        register: || routes!(simulations::start_simulation),
    },
    Route {
        method: "GET",
        path: "/api/simulations",
        access: Access::Permission(RUN_SIMULATIONS),
        register: || routes!(simulations::list_simulations),
    },
    Route {
        method: "GET",
        path: "/api/simulations/{id}",
        access: Access::Permission(RUN_SIMULATIONS),
        register: || routes!(simulations::get_simulation),
    },
    Route {
        method: "GET",
        path: "/api/simulations/{id}/coverage",
        access: Access::Permission(RUN_SIMULATIONS),
        register: || routes!(simulations::get_coverage),
    },
    Route {
        method: "GET",
        path: "/api/simulations/{id}/results",
        access: Access::Permission(RUN_SIMULATIONS),
        register: || routes!(simulations::get_results),
    },
    Route {
        method: "GET",
        path: "/api/simulations/{id}/cassette",
        access: Access::Permission(RUN_SIMULATIONS),
        register: || routes!(cassettes::get_cassette),
    },
    Route {
        method: "GET",
        path: "/api/simulations/{id}/events",
        access: Access::Permission(RUN_SIMULATIONS),
        register: || routes!(simulations::simulation_events),
    },
    Route {
        method: "GET",
        path: "/api/attempts/{id}",
        access: Access::Permission(RUN_SIMULATIONS),
        register: || routes!(attempts::get_attempt),
    },
    Route {
        method: "POST",
        path: "/api/attempts/{id}/tool-calls",
        access: Access::Capability,
        register: || routes!(attempts::tool_call),
    },
    Route {
        method: "POST",
        path: "/api/attempts/{id}/mcp",
        access: Access::Capability,
        register: || routes!(attempts::mcp),
    },
    Route {
        method: "POST",
        path: "/api/attempts/{id}/ask-user",
        access: Access::Capability,
        register: || routes!(attempts::ask_user),
    },
    Route {
        method: "POST",
        path: "/api/attempts/{id}/finish",
        access: Access::Capability,
        register: || routes!(attempts::finish_attempt),
    },
];

#[derive(OpenApi)]
#[openapi(
    info(
        title = "toolmock API",
        description = "Tool mock contracts: library tools, their operations and mock revisions, \
                       simulations and the dispatcher endpoint. Errors are \
                       `{\"error\": {\"code\", \"message\", \"details\"?}}`.",
    ),
    modifiers(&SecuritySchemes),
    components(schemas(crate::ErrorEnvelope, crate::ErrorBody))
)]
struct ApiDoc;

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "A JWT with `sub`, `tenant`, `permissions` and `exp` claims.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "capability",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("The attempt's capability token (64 hex digits)."))
                    .build(),
            ),
        );
    }
}

/// Adds the error answers every route can give (by its shape) where the
/// handler did not document them, so that every status the API can send is
/// in the document: 400/404 with path parameters, 401/403 with a security
/// requirement, 413/415/422 with a body, 405, 500 and 503 everywhere.
struct ErrorResponses;

impl Modify for ErrorResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder};
        let error = |description: &str| {
            RefOr::T(
                ResponseBuilder::new()
                    .description(description)
                    .content(
                        "application/json",
                        ContentBuilder::new()
                            .schema(Some(Ref::from_schema_name("ErrorEnvelope")))
                            .build(),
                    )
                    .build(),
            )
        };
        for item in openapi.paths.paths.values_mut() {
            for operation in [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ]
            .into_iter()
            .flatten()
            {
                let mut statuses = vec![
                    ("405", "`method_not_allowed`"),
                    ("500", "`internal`: a request id names it in the logs"),
                    ("503", "`timeout`, `overloaded` or `not_ready`"),
                ];
                if operation.parameters.as_ref().is_some_and(|p| !p.is_empty()) {
                    statuses.push(("400", "`invalid_path_parameter`"));
                    statuses.push(("404", "`not_found`: absent, or another tenant's"));
                }
                if operation.security.as_ref().is_some_and(|s| !s.is_empty()) {
                    statuses.push(("401", "`unauthenticated` or `invalid_capability`"));
                    statuses.push(("403", "`forbidden` or `foreign_capability`"));
                }
                if operation.request_body.is_some() {
                    statuses.push(("400", "`malformed_json`, with line and column"));
                    statuses.push(("413", "`body_too_large`"));
                    statuses.push(("415", "`unsupported_media_type`"));
                    statuses.push(("422", "`unknown_field` or `invalid_body`"));
                }
                for (status, description) in statuses {
                    operation
                        .responses
                        .responses
                        .entry(status.to_owned())
                        .or_insert_with(|| error(description));
                }
            }
        }
    }
}

/// One example body for each operation that takes one, shown as its request
/// example in the document; `fixtures/api/requests/README.md` says how the
/// test keeps them working against the real API.
pub(crate) const REQUEST_EXAMPLES: [(&str, &str, &str); 12] = [
    (
        "POST",
        "/api/tools",
        include_str!("../../../../fixtures/api/requests/create-tool.json"),
    ),
    (
        "PUT",
        "/api/tools/{id}",
        include_str!("../../../../fixtures/api/requests/update-tool.json"),
    ),
    (
        "POST",
        "/api/tools/{id}/discover",
        include_str!("../../../../fixtures/api/requests/discover-tool.json"),
    ),
    (
        "POST",
        "/api/tools/{id}/testing",
        include_str!("../../../../fixtures/api/requests/testing-save.json"),
    ),
    (
        "POST",
        "/api/tools/testing",
        include_str!("../../../../fixtures/api/requests/testing-inline.json"),
    ),
    (
        "PUT",
        "/api/tools/{id}/verification",
        include_str!("../../../../fixtures/api/requests/verification-settings.json"),
    ),
    (
        "POST",
        "/api/tools/{id}/verifications",
        include_str!("../../../../fixtures/api/requests/queue-verification.json"),
    ),
    (
        "POST",
        "/api/agents",
        include_str!("../../../../fixtures/api/requests/create-agent.json"),
    ),
    (
        "POST",
        "/api/simulations",
        include_str!("../../../../fixtures/api/notes-simulation.json"),
    ),
    (
        "POST",
        "/api/attempts/{id}/tool-calls",
        include_str!("../../../../fixtures/api/requests/tool-call.json"),
    ),
    (
        "POST",
        "/api/attempts/{id}/mcp",
        include_str!("../../../../fixtures/api/requests/attempt-mcp.json"),
    ),
    (
        "POST",
        "/api/attempts/{id}/ask-user",
        include_str!("../../../../fixtures/api/requests/ask-user.json"),
    ),
];

/// Sets each operation's request example from [`REQUEST_EXAMPLES`].
struct RequestExamples;

impl Modify for RequestExamples {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for (method, path, text) in REQUEST_EXAMPLES {
            // The files are compiled in and parsed by a test; a file that did
            // not parse would show no example rather than stop the server.
            let Ok(example) = serde_json::from_str::<serde_json::Value>(text) else {
                continue;
            };
            let Some(item) = openapi.paths.paths.get_mut(path) else {
                continue;
            };
            let operation = match method {
                "POST" => item.post.as_mut(),
                "PUT" => item.put.as_mut(),
                _ => None,
            };
            let body = operation.and_then(|o| o.request_body.as_mut());
            if let Some(content) = body.and_then(|b| b.content.get_mut("application/json")) {
                content.example = Some(example);
            }
        }
    }
}

/// The routes with their documentation.
fn openapi_router() -> OpenApiRouter<AppState> {
    ROUTES.iter().fold(
        OpenApiRouter::with_openapi(ApiDoc::openapi()),
        |router, route| router.routes((route.register)()),
    )
}

/// The routes and their complete document (the routes' paths exist only
/// once the router has collected them, so the error answers are added then).
pub(crate) fn documented() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    let (router, mut openapi) = openapi_router().split_for_parts();
    ErrorResponses.modify(&mut openapi);
    RequestExamples.modify(&mut openapi);
    (router, openapi)
}

/// The routes, plus the OpenAPI document at `/api/openapi.json`. What a
/// route keeps between requests is its module's, handed to its handlers as
/// an extension of this router (so it lives as long as the router does).
pub(crate) fn api_router() -> Router<AppState> {
    let (router, openapi) = documented();
    let document = std::sync::Arc::new(openapi);
    router
        .route(
            OPENAPI_PATH,
            axum::routing::get(move || {
                let document = document.clone();
                async move { axum::Json(document.as_ref().clone()) }
            }),
        )
        .layer(axum::Extension(std::sync::Arc::new(
            testing::TestingCache::default(),
        )))
        .layer(axum::Extension(std::sync::Arc::new(
            crate::user_talk::UserTalks::default(),
        )))
}

/// Where the OpenAPI document is served.
pub const OPENAPI_PATH: &str = "/api/openapi.json";
