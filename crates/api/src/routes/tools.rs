//! Library tools: create and update from a platform manifest, an MCP
//! `tools/list` result or custom contracts; read one.

use crate::AppState;
use crate::auth::{Authorized, ManageTools};
use crate::error::{ApiCode, ApiError, Listed};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::views::tools::{
    StaleOperation, ToolListItem, ToolPage, ToolView, UpdatedTool, contract_diff, marked, tool_view,
};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use toolmock_contract::{OperationIdentity, OperationSource};
use toolmock_discovery::Endpoint;
use toolmock_runtime::backend::Catalog;
use toolmock_runtime::model::{
    LibraryTool, NewOperation, NewTool, TenantId, TestingStatus, ToolId, ToolKind,
};
use utoipa::ToSchema;
use uuid::Uuid;

/// Where a tool's operations come from.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum ToolSource {
    /// A platform manifest (version 1, docs/spec.md §9).
    Platform {
        /// The manifest.
        #[schema(value_type = Object)]
        manifest: Value,
    },
    /// The `tools` of an MCP server's `tools/list` answer(s).
    Mcp {
        /// The tools, as the server listed them.
        #[schema(value_type = Vec<Object>)]
        tools: Vec<Value>,
    },
    /// An MCP server speaking streamable HTTP, discovered now with the
    /// official MCP client; its URL is kept so that
    /// `POST /api/tools/{id}/discover` can read it again.
    McpServer {
        /// `http://…` or `https://…` (e.g. `http://127.0.0.1:3001/mcp`).
        url: String,
    },
    /// Operations described by hand.
    Custom {
        /// The operations.
        operations: Vec<CustomOperation>,
    },
}

/// A hand-written operation.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CustomOperation {
    /// Runtime name.
    name: String,
    /// Shown to the agent.
    #[serde(default)]
    description: String,
    /// Input JSON Schema.
    #[schema(value_type = Object)]
    input_schema: Value,
    /// Output JSON Schema (absent: the tool's fallback, else `needs_output_schema`).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    output_schema: Option<Value>,
}

/// `POST /api/tools`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateTool {
    /// Unique per tenant: the name agents call the tool by.
    name: String,
    /// The fallback output schema for operations that declare none (docs/spec.md §9).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    output_schema: Option<Value>,
    /// Where the operations come from.
    source: ToolSource,
}

/// `PUT /api/tools/{id}`: the tool's operations re-read from a new source.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpdateTool {
    /// Of the tool's kind.
    source: ToolSource,
}

/// The source's kind and operations, every problem reported at once with a
/// JSON pointer into the request body.
fn operations(
    source: &ToolSource,
    fallback: Option<&Value>,
) -> Result<(ToolKind, Vec<NewOperation>), ApiError> {
    let (kind, ops): (ToolKind, Vec<NewOperation>) = match source {
        ToolSource::Platform { manifest } => {
            let contracts = toolmock_schema::normalize_manifest(manifest).map_err(|errors| {
                ApiError::unprocessable(
                    ApiCode::InvalidManifest,
                    "the platform manifest is not valid",
                    errors.iter().map(|e| Listed::under("/source/manifest", e)),
                )
            })?;
            let ops = contracts.into_iter().map(NewOperation::from).collect();
            (ToolKind::Platform, ops)
        }
        ToolSource::Mcp { tools } => {
            let page = json!({ "tools": tools });
            let discovered =
                toolmock_schema::normalize_pages(&[page], fallback).map_err(|errors| {
                    ApiError::unprocessable(
                        ApiCode::InvalidMcpTools,
                        "the MCP tools are not valid",
                        errors.iter().map(|e| Listed::under("/source", e)),
                    )
                })?;
            let ops = discovered.into_iter().map(discovered_operation).collect();
            (ToolKind::Mcp, ops)
        }
        ToolSource::McpServer { .. } => {
            // Discovered by `resolve_source`, which is async; never reached.
            return Err(ApiError::Internal(
                "an MCP server source reached the synchronous normalizer".into(),
            ));
        }
        ToolSource::Custom { operations } => {
            let ops = operations
                .iter()
                .map(|o| NewOperation {
                    operation: OperationIdentity {
                        source: OperationSource::Custom,
                        name: o.name.clone(),
                    },
                    description: o.description.clone(),
                    input_schema: o.input_schema.clone(),
                    output_schema: o.output_schema.clone(),
                })
                .collect();
            (ToolKind::Custom, ops)
        }
    };
    check_operations(&ops, fallback)?;
    Ok((kind, ops))
}

fn discovered_operation(d: toolmock_schema::DiscoveredOperation) -> NewOperation {
    NewOperation {
        operation: d.operation,
        description: d.description,
        input_schema: d.input_schema,
        // The fallback is the store's to apply, so that a later change of
        // the tool's fallback reaches these operations.
        output_schema: d.output.and_then(|(schema, from)| {
            (from == toolmock_schema::OutputSchemaSource::Discovered).then_some(schema)
        }),
    }
}

/// How long a discovery through the API may take.
const DISCOVERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// Reads an MCP server's tools over streamable HTTP. The API never spawns a
/// stdio server: that would let any tenant run commands on the API's host.
async fn discover_server(
    allow: &crate::McpAllowList,
    url: &str,
    at: &str,
) -> Result<Vec<NewOperation>, ApiError> {
    if !allow.permits(url) {
        return Err(ApiError::unprocessable(
            ApiCode::McpUrlNotAllowed,
            "the MCP server URL is not on this server's allow-list",
            [Listed::new(
                ApiCode::McpUrlNotAllowed.as_str(),
                at,
                format!("{url} is not allowed (--mcp-allow {allow})"),
            )],
        ));
    }
    let endpoint = Endpoint::http(url).map_err(|e| {
        ApiError::unprocessable(
            ApiCode::InvalidOperations,
            "the MCP server URL is not usable",
            [Listed::new(e.code(), at, e.to_string())],
        )
    })?;
    let options = toolmock_discovery::Options {
        // The fallback is the store's to apply (see `discovered_operation`).
        fallback_output_schema: None,
        timeout: DISCOVERY_TIMEOUT,
    };
    let discovery = toolmock_discovery::discover(&endpoint, &options)
        .await
        .map_err(|e| ApiError::Upstream {
            code: ApiCode::DiscoveryFailed,
            // Only the failure's class: what the URL answered is never
            // shown (it may be any internal service, not an MCP server).
            message: format!(
                "discovering {url} failed ({}): {}",
                e.code(),
                e.failure_class()
            ),
        })?;
    Ok(discovery
        .operations
        .into_iter()
        .map(discovered_operation)
        .collect())
}

/// A source's kind, operations and the configuration to keep: a server
/// source is discovered here, every other one normalized by [`operations`].
async fn resolve_source(
    allow: &crate::McpAllowList,
    source: &ToolSource,
    fallback: Option<&Value>,
) -> Result<(ToolKind, Vec<NewOperation>, Value), ApiError> {
    match source {
        ToolSource::McpServer { url } => {
            let ops = discover_server(allow, url, "/source/url").await?;
            check_operations(&ops, fallback)?;
            Ok((ToolKind::Mcp, ops, json!({ "url": url })))
        }
        other => {
            let (kind, ops) = operations(other, fallback)?;
            Ok((kind, ops, json!({})))
        }
    }
}

/// The operations' rules (`toolmock_runtime::model::NewOperation::check_list`),
/// their pointers moved into the request: an operation's under `/source`,
/// the fallback's at `/output_schema` as it is.
fn check_operations(ops: &[NewOperation], fallback: Option<&Value>) -> Result<(), ApiError> {
    NewOperation::check_list(ops, fallback).map_err(|problems| {
        ApiError::unprocessable(
            ApiCode::InvalidOperations,
            "the operations are not valid",
            problems.iter().map(|p| {
                let base = if p.path.starts_with("/operations") {
                    "/source"
                } else {
                    ""
                };
                Listed::under(base, p)
            }),
        )
    })
}

/// Creates a library tool and its operations.
#[utoipa::path(post, path = "/api/tools", tag = "tools",
    request_body = CreateTool,
    security(("bearer" = ["AIManager:ManageTools"])),
    responses(
        (status = 201, description = "Created", body = ToolView),
        (status = 409, description = "The tenant already has a tool of that name (`conflict`)", body = crate::ErrorEnvelope),
        (status = 422, description = "An invalid manifest, MCP tool list or operation, every problem listed", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn create_tool(
    auth: Authorized<ManageTools>,
    State(state): State<AppState>,
    ApiJson(body): ApiJson<CreateTool>,
) -> Result<(StatusCode, Json<ToolView>), ApiError> {
    let tenant = auth.principal.tenant;
    if body.name.is_empty() {
        return Err(ApiError::unprocessable(
            ApiCode::InvalidName,
            "the tool needs a name",
            [Listed::new(
                ApiCode::InvalidName.as_str(),
                "/name",
                "the name is empty",
            )],
        ));
    }
    let (kind, ops, source_config) = resolve_source(
        &state.config().mcp_allow,
        &body.source,
        body.output_schema.as_ref(),
    )
    .await?;
    state
        .ensure_tenant(tenant, &auth.principal.tenant_name)
        .await?;
    let store = state.store();
    let id = store
        .create_tool(
            tenant,
            &NewTool {
                name: body.name,
                kind,
                source_config,
                output_schema: body.output_schema,
            },
        )
        .await?;
    for op in &ops {
        store.upsert_operation(tenant, id, op).await?;
    }
    let tool = store.tool(tenant, id).await?;
    Ok((StatusCode::CREATED, Json(tool_view(&tool))))
}

/// `GET /api/tools` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListQuery {
    /// The `next` of the previous page (a tool name); absent for the first page.
    after: Option<String>,
    /// Page size, 1 to 200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    limit: Option<u32>,
}

/// The tenant's tools, by name, a page at a time.
#[utoipa::path(get, path = "/api/tools", tag = "tools",
    params(ListQuery),
    security(("bearer" = ["AIManager:ManageTools"])),
    responses(
        (status = 200, description = "A page of tools", body = ToolPage),
        (status = 400, description = "`invalid_query`", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn list_tools(
    auth: Authorized<ManageTools>,
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<ToolPage>, ApiError> {
    let limit = query.limit.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(ApiError::InvalidQuery {
            message: format!("limit must be between 1 and 200, not {limit}"),
        });
    }
    // One more than asked tells whether there is a next page.
    let mut tools = state
        .store()
        .list_tools(auth.principal.tenant, query.after.as_deref(), limit + 1)
        .await?;
    let more = tools.len() > limit as usize;
    tools.truncate(limit as usize);
    let next = more.then(|| tools.last().map(|t| t.name.clone())).flatten();
    Ok(Json(ToolPage {
        tools: tools
            .into_iter()
            .map(|t| ToolListItem {
                id: t.id.as_uuid(),
                name: t.name,
                kind: t.kind.as_str().to_owned(),
                current: t.current,
                stale: t.stale,
                missing: t.missing,
                needs_output_schema: t.needs_output_schema,
            })
            .collect(),
        next,
    }))
}

/// One tool with its operations and their status.
#[utoipa::path(get, path = "/api/tools/{id}", tag = "tools",
    params(("id" = Uuid, Path, description = "The tool's id")),
    security(("bearer" = ["AIManager:ManageTools"])),
    responses(
        (status = 200, description = "The tool", body = ToolView),
        (status = 404, description = "No such tool for this tenant", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn get_tool(
    auth: Authorized<ManageTools>,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<Json<ToolView>, ApiError> {
    let tenant = auth.principal.tenant;
    let tool = state.store().tool(tenant, ToolId(id)).await?;
    let marks = state.store().latest_verdicts(tenant, tool.id).await?;
    Ok(Json(marked(tool_view(&tool), &tool, &marks)))
}

/// Re-reads a tool's operations from a new source of the same kind. A
/// changed schema changes the operation's hash; the answer lists every
/// operation that was current and is now stale, with the contract diff.
#[utoipa::path(put, path = "/api/tools/{id}", tag = "tools",
    params(("id" = Uuid, Path, description = "The tool's id")),
    request_body = UpdateTool,
    security(("bearer" = ["AIManager:ManageTools"])),
    responses(
        (status = 200, description = "Updated", body = UpdatedTool),
        (status = 404, description = "No such tool for this tenant", body = crate::ErrorEnvelope),
        (status = 422, description = "An invalid source, or one of another kind (`kind_mismatch`)", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn update_tool(
    auth: Authorized<ManageTools>,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<UpdateTool>,
) -> Result<Json<UpdatedTool>, ApiError> {
    let tenant = auth.principal.tenant;
    let before = state.store().tool(tenant, ToolId(id)).await?;
    let (kind, ops, _) = resolve_source(
        &state.config().mcp_allow,
        &body.source,
        before.output_schema.as_ref(),
    )
    .await?;
    apply_update(&state, tenant, before, kind, &ops)
        .await
        .map(Json)
}

/// `POST /api/tools/{id}/discover`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DiscoverRequest {
    /// The server to read this time (absent: the URL the tool was created
    /// with). Not kept.
    #[serde(default)]
    url: Option<String>,
}

/// Re-reads an MCP tool's operations from its server (streamable HTTP) with
/// the official MCP client, exactly as `PUT` does with a given source: a
/// changed schema changes the operation's hash and makes its latest
/// revision stale, and the answer says which, with the contract diff.
#[utoipa::path(post, path = "/api/tools/{id}/discover", tag = "tools",
    params(("id" = Uuid, Path, description = "The tool's id")),
    request_body = DiscoverRequest,
    security(("bearer" = ["AIManager:ManageTools"])),
    responses(
        (status = 200, description = "Re-discovered", body = UpdatedTool),
        (status = 404, description = "No such tool for this tenant", body = crate::ErrorEnvelope),
        (status = 422, description = "`no_mcp_server`: neither the request nor the tool names a server; `kind_mismatch`: not an MCP tool; `invalid_operations`", body = crate::ErrorEnvelope),
        (status = 502, description = "`discovery_failed`: the server is unreachable, speaks no MCP, or lists invalid tools", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn discover_tool(
    auth: Authorized<ManageTools>,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<DiscoverRequest>,
) -> Result<Json<UpdatedTool>, ApiError> {
    let tenant = auth.principal.tenant;
    let before = state.store().tool(tenant, ToolId(id)).await?;
    if before.kind != ToolKind::Mcp {
        return Err(ApiError::unprocessable(
            ApiCode::KindMismatch,
            format!(
                "a {} tool has no MCP server to discover",
                before.kind.as_str()
            ),
            [Listed::new(
                ApiCode::KindMismatch.as_str(),
                "",
                "only MCP tools are discovered",
            )],
        ));
    }
    let (url, at) = match (
        &body.url,
        before.source_config.get("url").and_then(Value::as_str),
    ) {
        (Some(url), _) => (url.clone(), "/url"),
        (None, Some(url)) => (url.to_owned(), ""),
        (None, None) => {
            return Err(ApiError::unprocessable(
                ApiCode::NoMcpServer,
                "the tool was created from a tools list, not a server: send the server's url",
                [Listed::new(
                    ApiCode::NoMcpServer.as_str(),
                    "/url",
                    "no url given and none kept",
                )],
            ));
        }
    };
    let ops = discover_server(&state.config().mcp_allow, &url, at).await?;
    check_operations(&ops, before.output_schema.as_ref())?;
    apply_update(&state, tenant, before, ToolKind::Mcp, &ops)
        .await
        .map(Json)
}

/// Writes a tool's re-read operations and reports which current ones went
/// stale (with the contract diff) and which the source no longer lists.
async fn apply_update(
    state: &AppState,
    tenant: TenantId,
    before: LibraryTool,
    kind: ToolKind,
    ops: &[NewOperation],
) -> Result<UpdatedTool, ApiError> {
    let store = state.store();
    if kind != before.kind {
        return Err(ApiError::unprocessable(
            ApiCode::KindMismatch,
            format!(
                "a {} tool cannot be updated from a {} source",
                before.kind.as_str(),
                kind.as_str()
            ),
            [Listed::new(
                ApiCode::KindMismatch.as_str(),
                "/source/type",
                "the source is of another kind than the tool",
            )],
        ));
    }
    let mut stale = Vec::new();
    for op in ops {
        let after = store.upsert_operation(tenant, before.id, op).await?;
        let previous = before
            .operations
            .iter()
            .find(|o| o.operation.name == op.operation.name);
        if let Some(previous) = previous
            && previous.status() == TestingStatus::Current
            && after.status() == TestingStatus::Stale
        {
            stale.push(StaleOperation {
                operation_id: after.id.as_uuid(),
                name: after.operation.name.clone(),
                diff: contract_diff(previous.contract.as_ref(), after.contract.as_ref())?,
            });
        }
    }
    let unlisted = before
        .operations
        .iter()
        .filter(|o| !ops.iter().any(|n| n.operation.name == o.operation.name))
        .map(|o| o.operation.name.clone())
        .collect();
    let tool = store.tool(tenant, before.id).await?;
    Ok(UpdatedTool {
        tool: tool_view(&tool),
        stale,
        unlisted,
    })
}
