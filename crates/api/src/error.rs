//! The one error type of the API and its wire form.
//!
//! Every failure answers `{"error": {"code", "message", "details"?}}`; the
//! dispatcher endpoint's two recorded classes add `class` and `path`
//! (`{"error": {"class", "code", "message", "path"?}}`). The status of each
//! variant is fixed in [`ApiError::status`], an exhaustive match, so a new
//! variant cannot be added without deciding its status.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Value, json};
use toolmock_contract::problem_codes;
use toolmock_evaluator::Diagnostics;
use toolmock_runtime::error::{
    DispatchError, HarnessFault, SaveRevisionError, StoreError, ToolInputFault,
};
use utoipa::ToSchema;

problem_codes! {
    /// The stable codes of API errors (the dispatcher endpoint's tool input
    /// and harness errors carry the runtime's codes instead).
    pub enum ApiCode {
        /// The body is not JSON; `details` has its line and column.
        MalformedJson => "malformed_json",
        /// The body is larger than the configured limit.
        BodyTooLarge => "body_too_large",
        /// A body not sent as `application/json`.
        UnsupportedMediaType => "unsupported_media_type",
        /// A body member the endpoint does not define.
        UnknownField => "unknown_field",
        /// A body member that is missing or of the wrong type.
        InvalidBody => "invalid_body",
        /// A string or key of the body holds U+0000 (not storable); `details.path` points at it.
        NulCharacter => "nul_character",
        /// A path parameter of the wrong form (e.g. not a UUID).
        InvalidPathParameter => "invalid_path_parameter",
        /// A query parameter of the wrong form (e.g. `limit=0`).
        InvalidQuery => "invalid_query",
        /// No valid bearer token (missing, malformed, expired, wrongly signed, wrong issuer or audience).
        Unauthenticated => "unauthenticated",
        /// The token lacks the route's permission.
        Forbidden => "forbidden",
        /// No attempt holds this capability.
        InvalidCapability => "invalid_capability",
        /// The capability belongs to another attempt.
        ForeignCapability => "foreign_capability",
        /// No such row for this tenant (another tenant's rows answer so too).
        NotFound => "not_found",
        /// No route for this path.
        RouteNotFound => "route_not_found",
        /// The route does not take this method.
        MethodNotAllowed => "method_not_allowed",
        /// A save against a contract hash that is no longer current.
        ContractChanged => "contract_changed",
        /// A uniqueness rule, e.g. a tool name the tenant already uses.
        Conflict => "conflict",
        /// The definition fails its check; every diagnostic is listed.
        InvalidDefinition => "invalid_definition",
        /// The operation has no output schema and cannot be mocked.
        NeedsOutputSchema => "needs_output_schema",
        /// The platform manifest of a tool is not valid.
        InvalidManifest => "invalid_manifest",
        /// The MCP tools of a tool are not valid.
        InvalidMcpTools => "invalid_mcp_tools",
        /// A tool's operations are unusable (names, schemas, numbers).
        InvalidOperations => "invalid_operations",
        /// A tool without a name.
        InvalidName => "invalid_name",
        /// A tool updated from a source of another kind.
        KindMismatch => "kind_mismatch",
        /// An inline tool has no operation of that name.
        UnknownOperation => "unknown_operation",
        /// An operation's contract cannot be compiled or hashed.
        InvalidContract => "invalid_contract",
        /// An inline check with no definition to check.
        MissingDefinition => "missing_definition",
        /// Instructions sent with an authored save.
        InstructionsWithoutGeneration => "instructions_without_generation",
        /// An agent whose tools or workflows are malformed or name unknown library tools.
        InvalidAgent => "invalid_agent",
        /// A simulation start refused; every stale or missing operation, state conflict and effect node is listed.
        StartRefused => "start_refused",
        /// A start request that is unusable (no test case, zero attempts).
        InvalidStart => "invalid_start",
        /// A start that would create more than one start may (attempts, initial-state bytes).
        StartTooLarge => "start_too_large",
        /// A simulation document that does not load; every problem is listed with its pointer.
        InvalidSimulation => "invalid_simulation",
        /// The attempt is already finished.
        AttemptFinished => "attempt_finished",
        /// The simulation's results are asked for while attempts still run.
        SimulationRunning => "simulation_running",
        /// A simulation started without a document has no results document.
        NoSimulationDocument => "no_simulation_document",
        /// A start's `cassette` member is unusable; every problem is listed with its pointer.
        InvalidCassette => "invalid_cassette",
        /// A simulation started without a cassette has none to download.
        NoCassette => "no_cassette",
        /// The attempt's case is played by its scripted driver, not by the caller.
        NotExternal => "not_external",
        /// `ask-user` (or `ask_user`) of an attempt whose case has no simulated user an agent outside toolmock talks with (an `external` or `http` case without `user`).
        NoSimulatedUser => "no_simulated_user",
        /// Another `ask-user` of the same attempt was answered meanwhile (the simulated user is asked one message at a time).
        UserBusy => "user_busy",
        /// The tool has no MCP server to discover from.
        NoMcpServer => "no_mcp_server",
        /// The MCP server could not be discovered (unreachable, a protocol error, invalid tools).
        DiscoveryFailed => "discovery_failed",
        /// A stored operation's contract cannot be compiled.
        UnusableContract => "unusable_contract",
        /// A definition that cannot be hashed reproducibly.
        UnhashableDefinition => "unhashable_definition",
        /// The configured chat-completions generator failed.
        GeneratorFailed => "generator_failed",
        /// The request took longer than the configured timeout.
        Timeout => "timeout",
        /// The client did not send its whole body within the body-read time-out.
        BodyTimeout => "body_timeout",
        /// The body could not be read (the client closed the connection or sent a malformed chunk).
        BodyUnreadable => "body_unreadable",
        /// An MCP server URL outside the configured allow-list (`--mcp-allow`).
        McpUrlNotAllowed => "mcp_url_not_allowed",
        /// A tool's verification settings the tool cannot take, or a verification of a tool with no real tool; every problem is listed.
        InvalidVerificationSettings => "invalid_verification_settings",
        /// The server is at its concurrency limit.
        Overloaded => "overloaded",
        /// The database is unreachable or migrations are missing.
        NotReady => "not_ready",
        /// A database or internal failure; `request_id` names it in the logs.
        Internal => "internal",
    }
}

tokio::task_local! {
    /// The id of the request being served, set by the request-id middleware
    /// for the handler's whole future so that a 500 can name it.
    pub(crate) static REQUEST_ID: String;
}

/// The current request's id, when called while serving one.
pub(crate) fn current_request_id() -> Option<String> {
    REQUEST_ID.try_with(Clone::clone).ok()
}

/// One entry of a 422's `details.problems`: `{code, path, message}`, the
/// path a JSON pointer into the request body. Handlers build them from the
/// libraries' typed problems (or, for a rule of the request itself, from an
/// [`ApiCode`]); this is the one place that writes their JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    code: String,
    path: String,
    message: String,
}

impl Listed {
    /// A problem of `code` at `path` of the request body.
    pub(crate) fn new(
        code: impl Into<String>,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            code: code.into(),
            path: path.into(),
            message: message.into(),
        }
    }

    /// A library's problem, its pointer moved under `base` (where the
    /// document it is about sits in the request body).
    pub(crate) fn under<C: toolmock_contract::ProblemCode>(
        base: &str,
        problem: &toolmock_contract::Problem<C>,
    ) -> Self {
        Self::new(
            problem.code.as_str(),
            format!("{base}{}", problem.path),
            problem.message.clone(),
        )
    }
}

impl ApiError {
    /// A 422 with `code`, a sentence, and every problem in `details.problems`.
    pub(crate) fn unprocessable(
        code: ApiCode,
        message: impl Into<String>,
        problems: impl IntoIterator<Item = Listed>,
    ) -> Self {
        let problems: Vec<Value> = problems
            .into_iter()
            .map(|p| json!({"code": p.code, "path": p.path, "message": p.message}))
            .collect();
        ApiError::Unprocessable {
            code,
            message: message.into(),
            details: json!({ "problems": problems }),
        }
    }

    /// A start past one of its limits: which limit, its maximum and what the
    /// start asked for, beside an empty problem list.
    pub(crate) fn start_too_large(
        limit: toolmock_runtime::error::StartLimit,
        maximum: u64,
        actual: u64,
    ) -> Self {
        let message = toolmock_runtime::error::StartError::TooLarge {
            limit,
            maximum,
            actual,
        }
        .to_string();
        ApiError::Unprocessable {
            code: ApiCode::StartTooLarge,
            message,
            details: json!({
                "limit": limit.as_str(),
                "maximum": maximum,
                "actual": actual,
                "problems": [],
            }),
        }
    }
}

/// Everything a request can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The body is not JSON; `line` and `column` locate the first problem.
    #[error("the body is not valid JSON (line {line}, column {column}): {message}")]
    MalformedJson {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// The body is larger than the configured limit.
    #[error("the body is larger than {limit} bytes")]
    BodyTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The client did not send its whole body within the body-read time-out.
    #[error("the request's body did not arrive within the body-read time-out")]
    BodyTimeout,
    /// The body could not be read to its end.
    #[error("the request's body could not be read to its end")]
    BodyUnreadable,
    /// The body was not declared as `application/json`.
    #[error("the body must be sent as application/json")]
    UnsupportedMediaType,
    /// The body is JSON but has a member this endpoint does not know.
    #[error("{message}")]
    UnknownField {
        /// The deserializer's message, naming the field.
        message: String,
    },
    /// The body is JSON of the wrong shape (a missing member, a wrong type).
    #[error("{message}")]
    InvalidBody {
        /// The deserializer's message.
        message: String,
    },
    /// A string or key of the body holds U+0000, which cannot be stored.
    #[error("the body holds the character U+0000 at {path}")]
    NulCharacter {
        /// JSON pointer to the string or key.
        path: String,
    },
    /// A query parameter is unusable.
    #[error("invalid query: {message}")]
    InvalidQuery {
        /// Why.
        message: String,
    },
    /// A path parameter is not what the route expects (e.g. not a UUID).
    #[error("invalid path parameter: {message}")]
    InvalidPathParameter {
        /// Why.
        message: String,
    },
    /// No usable bearer token: missing, malformed, expired, wrongly signed,
    /// or with the wrong issuer or audience.
    #[error("authentication required: {reason}")]
    Unauthenticated {
        /// Why the token was refused (never echoes the token).
        reason: String,
    },
    /// The principal lacks the permission the route needs.
    #[error("the permission {permission} is required")]
    Forbidden {
        /// The missing permission.
        permission: &'static str,
    },
    /// The attempt capability is unknown (or of another tenant's attempt).
    #[error("the attempt capability is not valid")]
    InvalidCapability,
    /// The capability is valid but bound to another attempt.
    #[error("the capability does not belong to this attempt")]
    ForeignCapability,
    /// Nothing of that kind with that id for this tenant (another tenant's
    /// rows answer exactly so).
    #[error("{entity} not found")]
    NotFound {
        /// What was looked for.
        entity: &'static str,
    },
    /// No route matches the path.
    #[error("no route for this path")]
    RouteNotFound,
    /// The route exists but not with this method.
    #[error("method not allowed")]
    MethodNotAllowed,
    /// The operation's contract changed since the caller checked (docs/spec.md §10).
    #[error("the contract changed; the current hash is {current}")]
    ContractChanged {
        /// The current contract hash.
        current: String,
    },
    /// A uniqueness rule was broken (e.g. a tool name already in use).
    #[error("conflict: {what}")]
    Conflict {
        /// Which rule.
        what: String,
    },
    /// The request conflicts with the state of a row (e.g. finishing an
    /// attempt that is finished).
    #[error("{message}")]
    StateConflict {
        /// A stable code (`attempt_finished`, `not_external`).
        code: ApiCode,
        /// A sentence.
        message: String,
    },
    /// An upstream the request needed failed (an MCP server to discover).
    #[error("{message}")]
    Upstream {
        /// A stable code (`discovery_failed`).
        code: ApiCode,
        /// What went wrong, in the user's words.
        message: String,
    },
    /// The definition fails its check; every diagnostic is listed.
    #[error("the definition fails its check ({} problem(s))", .0.len())]
    InvalidDefinition(Diagnostics),
    /// The operation has no output schema and cannot be mocked.
    #[error("the operation has no output schema and cannot be mocked")]
    NeedsOutputSchema,
    /// A request is well-formed JSON but unusable; every problem is listed.
    #[error("{message}")]
    Unprocessable {
        /// A stable code (`invalid_manifest`, `invalid_contract`, …).
        code: ApiCode,
        /// A sentence.
        message: String,
        /// Every problem, each with its JSON pointer.
        details: Value,
    },
    /// A tool call's arguments are wrong: the agent's error, recorded, recoverable.
    #[error("tool input error {}: {}", .0.code, .0.message)]
    ToolInput(ToolInputFault),
    /// The harness failed a tool call: recorded; the attempt can never pass.
    #[error("harness error {}: {}", .0.code, .0.message)]
    Harness(HarnessFault),
    /// (Version 2) the mock answered a domain error: recorded as evidence,
    /// neither the agent's input error nor the harness's; the attempt can
    /// still pass.
    #[error("{}", .0.message)]
    Domain(toolmock_evaluator::DomainError),
    /// The configured chat-completions generator failed (unavailable after
    /// the client's retries, an unusable answer, an answer past the size
    /// limit). The message never quotes what the endpoint sent.
    #[error("the generator failed: {message}")]
    GeneratorFailed {
        /// `unavailable`, `unusable` or `response_too_large`.
        reason: &'static str,
        /// The limit an answer passed (`response_too_large`).
        limit_bytes: Option<u64>,
        /// What went wrong.
        message: String,
    },
    /// The request took longer than the configured timeout.
    #[error("the request timed out")]
    Timeout,
    /// The database is unreachable or its migrations are not all applied.
    #[error("not ready: {reason}")]
    NotReady {
        /// Why.
        reason: String,
    },
    /// The server is at its concurrency limit.
    #[error("the server is overloaded; retry later")]
    Overloaded,
    /// A database or internal failure: logged with the request id, never
    /// described to the caller.
    #[error("internal error: {0}")]
    Internal(String),
}

/// The wire form of an error.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorEnvelope {
    /// The error.
    pub error: ErrorBody,
}

/// `{"code", "message", "details"?}`, plus `class` and `path` for the
/// dispatcher's recorded errors and `request_id` for internal errors.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// `tool_input_error`, `harness_error` or `domain_error` (dispatcher
    /// endpoint only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<&'static str>,
    /// A stable, machine-readable code.
    pub code: String,
    /// A sentence for humans.
    pub message: String,
    /// A JSON pointer into the arguments (dispatcher endpoint only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Structured details (diagnostics, the current hash, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// The request's id (internal errors), to find it in the logs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

impl ApiError {
    /// The HTTP status of each variant.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::MalformedJson { .. }
            | ApiError::InvalidPathParameter { .. }
            | ApiError::InvalidQuery { .. }
            | ApiError::BodyUnreadable => StatusCode::BAD_REQUEST,
            ApiError::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            ApiError::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::UnknownField { .. }
            | ApiError::InvalidBody { .. }
            | ApiError::NulCharacter { .. }
            | ApiError::InvalidDefinition(_)
            | ApiError::NeedsOutputSchema
            | ApiError::Unprocessable { .. }
            | ApiError::ToolInput(_)
            | ApiError::Domain(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Unauthenticated { .. } | ApiError::InvalidCapability => {
                StatusCode::UNAUTHORIZED
            }
            ApiError::Forbidden { .. } | ApiError::ForeignCapability => StatusCode::FORBIDDEN,
            ApiError::NotFound { .. } | ApiError::RouteNotFound => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::ContractChanged { .. }
            | ApiError::Conflict { .. }
            | ApiError::StateConflict { .. } => StatusCode::CONFLICT,
            ApiError::Upstream { .. } => StatusCode::BAD_GATEWAY,
            ApiError::Harness(_) => StatusCode::FAILED_DEPENDENCY,
            ApiError::GeneratorFailed { .. } => StatusCode::BAD_GATEWAY,
            ApiError::Timeout | ApiError::Overloaded | ApiError::NotReady { .. } => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// A stable, machine-readable code.
    pub fn code(&self) -> &str {
        match self {
            ApiError::ToolInput(fault) => fault.code.as_str(),
            ApiError::Harness(fault) => fault.code.as_str(),
            ApiError::Domain(error) => &error.code,
            other => other.api_code().map_or("internal", ApiCode::as_str),
        }
    }

    /// The API's own code; `None` for the dispatcher's recorded errors,
    /// which carry the runtime's codes.
    pub fn api_code(&self) -> Option<ApiCode> {
        Some(match self {
            ApiError::MalformedJson { .. } => ApiCode::MalformedJson,
            ApiError::BodyTooLarge { .. } => ApiCode::BodyTooLarge,
            ApiError::BodyTimeout => ApiCode::BodyTimeout,
            ApiError::BodyUnreadable => ApiCode::BodyUnreadable,
            ApiError::UnsupportedMediaType => ApiCode::UnsupportedMediaType,
            ApiError::UnknownField { .. } => ApiCode::UnknownField,
            ApiError::InvalidBody { .. } => ApiCode::InvalidBody,
            ApiError::NulCharacter { .. } => ApiCode::NulCharacter,
            ApiError::InvalidPathParameter { .. } => ApiCode::InvalidPathParameter,
            ApiError::InvalidQuery { .. } => ApiCode::InvalidQuery,
            ApiError::Unauthenticated { .. } => ApiCode::Unauthenticated,
            ApiError::Forbidden { .. } => ApiCode::Forbidden,
            ApiError::InvalidCapability => ApiCode::InvalidCapability,
            ApiError::ForeignCapability => ApiCode::ForeignCapability,
            ApiError::NotFound { .. } => ApiCode::NotFound,
            ApiError::RouteNotFound => ApiCode::RouteNotFound,
            ApiError::MethodNotAllowed => ApiCode::MethodNotAllowed,
            ApiError::ContractChanged { .. } => ApiCode::ContractChanged,
            ApiError::Conflict { .. } => ApiCode::Conflict,
            ApiError::StateConflict { code, .. } | ApiError::Upstream { code, .. } => *code,
            ApiError::InvalidDefinition(_) => ApiCode::InvalidDefinition,
            ApiError::NeedsOutputSchema => ApiCode::NeedsOutputSchema,
            ApiError::Unprocessable { code, .. } => *code,
            ApiError::ToolInput(_) | ApiError::Harness(_) | ApiError::Domain(_) => return None,
            ApiError::GeneratorFailed { .. } => ApiCode::GeneratorFailed,
            ApiError::Timeout => ApiCode::Timeout,
            ApiError::Overloaded => ApiCode::Overloaded,
            ApiError::NotReady { .. } => ApiCode::NotReady,
            ApiError::Internal(_) => ApiCode::Internal,
        })
    }

    /// The wire body.
    pub fn body(&self) -> ErrorBody {
        let mut body = ErrorBody {
            class: None,
            code: self.code().to_owned(),
            message: self.to_string(),
            path: None,
            details: None,
            request_id: None,
        };
        match self {
            ApiError::MalformedJson { line, column, .. } => {
                body.details = Some(json!({"line": line, "column": column}));
            }
            ApiError::NulCharacter { path } => {
                body.details = Some(json!({"path": path}));
            }
            ApiError::BodyTooLarge { limit } => {
                body.details = Some(json!({"limit_bytes": limit}));
            }
            ApiError::Forbidden { permission } => {
                body.details = Some(json!({"permission": permission}));
            }
            ApiError::ContractChanged { current } => {
                body.details = Some(json!({"current_hash": current}));
            }
            ApiError::InvalidDefinition(diagnostics) => {
                body.details = Some(json!({"diagnostics": diagnostics}));
            }
            ApiError::Unprocessable { details, .. } => body.details = Some(details.clone()),
            ApiError::ToolInput(fault) => {
                body.class = Some("tool_input_error");
                body.message = fault.message.clone();
                body.path = fault.path.clone();
                if fault.violations.as_array().is_some_and(|v| !v.is_empty()) {
                    body.details = Some(json!({"violations": fault.violations}));
                }
            }
            ApiError::Harness(fault) => {
                body.class = Some("harness_error");
                body.message = fault.message.clone();
                body.path = fault.path.clone();
            }
            ApiError::Domain(error) => {
                body.class = Some("domain_error");
                if let Some(data) = &error.data {
                    body.details = Some(json!({ "data": data }));
                }
            }
            ApiError::GeneratorFailed {
                reason,
                limit_bytes,
                ..
            } => {
                let mut details = json!({ "reason": reason });
                if let Some(limit) = limit_bytes {
                    details["limit_bytes"] = json!(limit);
                }
                body.details = Some(details);
            }
            ApiError::Internal(_) => {
                // The cause stays in the log; the caller gets the id to quote.
                body.message = "internal error".into();
                body.request_id = current_request_id();
            }
            _ => {}
        }
        body
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::error!(
                request_id = current_request_id().unwrap_or_default(),
                code = self.code(),
                error = %self,
                "request failed"
            );
        }
        let mut response =
            (status, axum::Json(ErrorEnvelope { error: self.body() })).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::NotFound { entity } => ApiError::NotFound { entity },
            StoreError::Conflict { what } => ApiError::Conflict { what },
            other @ (StoreError::AppendOnly { .. }
            | StoreError::Corrupt { .. }
            | StoreError::Backend(_)
            | StoreError::Fenced) => ApiError::Internal(other.to_string()),
        }
    }
}

impl From<SaveRevisionError> for ApiError {
    fn from(error: SaveRevisionError) -> Self {
        match error {
            SaveRevisionError::ContractChanged { current } => ApiError::ContractChanged {
                current: current.to_string(),
            },
            SaveRevisionError::NeedsOutputSchema => ApiError::NeedsOutputSchema,
            SaveRevisionError::InvalidDefinition(diagnostics) => {
                ApiError::InvalidDefinition(diagnostics)
            }
            SaveRevisionError::UnusableContract(message) => ApiError::Unprocessable {
                code: ApiCode::UnusableContract,
                message: format!("the operation's contract is unusable: {message}"),
                details: json!([]),
            },
            SaveRevisionError::UnhashableDefinition(message) => ApiError::Unprocessable {
                code: ApiCode::UnhashableDefinition,
                message: format!("the definition cannot be hashed: {message}"),
                details: json!([]),
            },
            SaveRevisionError::Store(e) => e.into(),
        }
    }
}

impl From<DispatchError> for ApiError {
    fn from(error: DispatchError) -> Self {
        match error {
            DispatchError::ToolInput(fault) => ApiError::ToolInput(fault),
            DispatchError::Harness(fault) => ApiError::Harness(fault),
            DispatchError::Domain(error) => ApiError::Domain(error),
            DispatchError::CapabilityRejected => ApiError::InvalidCapability,
            DispatchError::Store(e) => e.into(),
        }
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(error: sqlx::Error) -> Self {
        ApiError::Internal(error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_docs_error_codes() {
        let doc = include_str!("../../../docs/error-codes.md");
        let codes = toolmock_contract::code_strings::<ApiCode>();
        toolmock_contract::check_documented_codes(doc, "toolmock-api", &codes)
            .unwrap_or_else(|e| panic!("{e}"));
    }

    /// A version-2 domain error answers 422 with its own code and message,
    /// `class` `domain_error` and its data under `details` — told apart
    /// from a tool input error (also 422) by `class`.
    #[test]
    fn domain_errors_have_their_own_class() {
        let error = ApiError::from(DispatchError::Domain(toolmock_evaluator::DomainError {
            code: "order_not_found".into(),
            message: "Order not found".into(),
            data: Some(json!({"order_id": "#W9"})),
        }));
        assert_eq!(error.status(), StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(error.api_code(), None);
        let body = serde_json::to_value(error.body()).expect("serializes");
        assert_eq!(
            body,
            json!({"class": "domain_error", "code": "order_not_found", "message": "Order not found",
                   "details": {"data": {"order_id": "#W9"}}})
        );
        let bare = ApiError::Domain(toolmock_evaluator::DomainError {
            code: "E".into(),
            message: "m".into(),
            data: None,
        });
        assert!(bare.body().details.is_none());
    }

    #[test]
    fn internal_errors_never_describe_their_cause() {
        let body = ApiError::Internal("password authentication failed for user x".into()).body();
        assert_eq!(body.message, "internal error");
        assert!(body.details.is_none());
    }
}
