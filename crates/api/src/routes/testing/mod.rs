//! Tool testing (docs/spec.md §10): operation contracts, hashes, revisions and
//! status; generating and saving revisions; checking and generating for
//! inline tools without a row.

mod cache;

pub(crate) use cache::TestingCache;

use crate::AppState;
use crate::auth::{Authorized, ManageTools};
use crate::error::{ApiCode, ApiError, Listed};
use crate::extract::{ApiJson, ApiPath};
use crate::generator::GenerateResult;
use crate::views::testing::{CheckResult, InlineResult, RevisionView, ToolTesting, revision_view};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use toolmock_contract::{ContractHash, pointer};
use toolmock_evaluator::{CompiledContract, compile_checked};
use toolmock_runtime::backend::Catalog;
use toolmock_runtime::model::{
    InlineTool, OperationId, OperationView, Provenance, SaveRevision, TenantId, ToolId,
};
use utoipa::ToSchema;
use uuid::Uuid;

/// Authored by a person, or generated (with the instructions used).
#[derive(Debug, Clone, Copy, Default, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ProvenanceIn {
    /// Written or edited by a person.
    #[default]
    Authored,
    /// Accepted from `generate` unchanged.
    Generated,
}

/// `POST /api/tools/{id}/testing`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum TestingRequest {
    /// Derive a checked draft from the operation's current contract.
    Generate {
        /// The operation's id.
        operation_id: Uuid,
        /// Guidance for a model-backed generator (recorded with a generated save).
        #[serde(default)]
        instructions: Option<String>,
    },
    /// Append a revision.
    Save {
        /// The operation's id.
        operation_id: Uuid,
        /// The contract hash the definition was checked against (409 when not current).
        contract_hash: String,
        /// The definition document.
        #[schema(value_type = Object)]
        definition: Value,
        /// `authored` (default) or `generated`.
        #[serde(default)]
        provenance: ProvenanceIn,
        /// The generation instructions (generated only).
        #[serde(default)]
        instructions: Option<String>,
    },
}

/// `POST /api/tools/testing`: an inline (agent-local) tool, no row.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum InlineRequest {
    /// Check a definition against the operation's contract.
    Check {
        /// The inline tool, as in the agent's definition.
        #[schema(value_type = Object)]
        tool: InlineTool,
        /// The operation's name.
        operation_id: String,
        /// The definition (default: the operation's own `testing`). A JSON
        /// object: anything else is refused as `invalid_body`, as the schema says.
        #[serde(default)]
        #[schema(value_type = Option<Object>)]
        definition: Option<serde_json::Map<String, Value>>,
    },
    /// Derive a checked draft.
    Generate {
        /// The inline tool.
        #[schema(value_type = Object)]
        tool: InlineTool,
        /// The operation's name.
        operation_id: String,
        /// Guidance for a model-backed generator.
        #[serde(default)]
        instructions: Option<String>,
    },
}

/// The operation `operation` of tool `tool`, 404 when either is absent for
/// this tenant or the operation belongs to another tool.
async fn find_operation(
    state: &AppState,
    tenant: TenantId,
    tool: Uuid,
    operation: Uuid,
) -> Result<OperationView, ApiError> {
    let tool = state.store().tool(tenant, ToolId(tool)).await?;
    tool.operations
        .into_iter()
        .find(|o| o.id.as_uuid() == operation)
        .ok_or(ApiError::NotFound {
            entity: "operation",
        })
}

/// Per operation: contract, current hash, latest revision and status.
#[utoipa::path(get, path = "/api/tools/{id}/testing", tag = "testing",
    params(("id" = Uuid, Path, description = "The tool's id")),
    security(("bearer" = ["AIManager:ManageTools"])),
    responses(
        (status = 200, description = "Every operation's testing state", body = ToolTesting),
        (status = 404, description = "No such tool for this tenant", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn get_testing(
    auth: Authorized<ManageTools>,
    State(state): State<AppState>,
    Extension(cache): Extension<Arc<TestingCache>>,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<Response, ApiError> {
    // The fingerprint of the tool's index in one query, and the answer kept
    // under it; else the index, and contracts and revisions only when not
    // kept from an earlier request (`cache.rs`).
    let body =
        cache::testing_answer(&cache, state.store(), auth.principal.tenant, ToolId(id)).await?;
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// `generate` a checked draft, or `save` a revision.
#[utoipa::path(post, path = "/api/tools/{id}/testing", tag = "testing",
    params(("id" = Uuid, Path, description = "The tool's id")),
    request_body = TestingRequest,
    security(("bearer" = ["AIManager:ManageTools"])),
    responses(
        (status = 200, description = "`generate`: a checked draft, `needs_authored_mock`, or (model backend) `generation_failed` with the last diagnostics", body = GenerateResult),
        (status = 201, description = "`save`: the new revision", body = RevisionView),
        (status = 404, description = "No such tool or operation for this tenant", body = crate::ErrorEnvelope),
        (status = 409, description = "`contract_changed`: `details.current_hash` is the current hash", body = crate::ErrorEnvelope),
        (status = 422, description = "`invalid_definition` with every diagnostic in `details.diagnostics`, or `needs_output_schema`", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn post_testing(
    auth: Authorized<ManageTools>,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<TestingRequest>,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    let tenant = auth.principal.tenant;
    match body {
        TestingRequest::Generate {
            operation_id,
            instructions,
        } => {
            let op = find_operation(&state, tenant, id, operation_id).await?;
            let contract = op.contract.as_ref().ok_or(ApiError::NeedsOutputSchema)?;
            Ok(Json(
                state
                    .config()
                    .generator
                    .generate(contract, instructions)
                    .await?,
            )
            .into_response())
        }
        TestingRequest::Save {
            operation_id,
            contract_hash,
            definition,
            provenance,
            instructions,
        } => {
            let op = find_operation(&state, tenant, id, operation_id).await?;
            let Ok(contract_hash) = ContractHash::try_from(contract_hash) else {
                // A hash that cannot be any contract's is simply not the current one.
                let current = op.contract_hash.ok_or(ApiError::NeedsOutputSchema)?;
                return Err(ApiError::ContractChanged {
                    current: current.to_string(),
                });
            };
            let provenance = match provenance {
                ProvenanceIn::Authored if instructions.is_some() => {
                    let code = ApiCode::InstructionsWithoutGeneration;
                    return Err(ApiError::unprocessable(
                        code,
                        "instructions belong to generated revisions only",
                        [Listed::new(
                            code.as_str(),
                            "/instructions",
                            "set provenance to generated, or leave instructions out",
                        )],
                    ));
                }
                ProvenanceIn::Authored => Provenance::Authored,
                ProvenanceIn::Generated => Provenance::Generated { instructions },
            };
            let record = state
                .store()
                .save_revision(
                    tenant,
                    op.id,
                    &SaveRevision {
                        contract_hash,
                        definition,
                        author: auth.principal.subject.clone(),
                        provenance,
                    },
                )
                .await?;
            Ok((StatusCode::CREATED, Json(revision_view(record))).into_response())
        }
    }
}

/// Every revision of an operation, newest first.
#[utoipa::path(get, path = "/api/tools/{id}/operations/{operation_id}/revisions", tag = "testing",
    params(
        ("id" = Uuid, Path, description = "The tool's id"),
        ("operation_id" = Uuid, Path, description = "The operation's id"),
    ),
    security(("bearer" = ["AIManager:ManageTools"])),
    responses(
        (status = 200, description = "The history", body = Vec<RevisionView>),
        (status = 404, description = "No such tool or operation for this tenant", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn list_revisions(
    auth: Authorized<ManageTools>,
    State(state): State<AppState>,
    ApiPath((id, operation_id)): ApiPath<(Uuid, Uuid)>,
) -> Result<Json<Vec<RevisionView>>, ApiError> {
    let history = state
        .store()
        .revisions(auth.principal.tenant, ToolId(id), OperationId(operation_id))
        .await?
        .into_iter()
        .map(revision_view)
        .collect();
    Ok(Json(history))
}

/// One revision, as saved.
#[utoipa::path(get, path = "/api/tools/{id}/operations/{operation_id}/revisions/{revision}", tag = "testing",
    params(
        ("id" = Uuid, Path, description = "The tool's id"),
        ("operation_id" = Uuid, Path, description = "The operation's id"),
        ("revision" = u32, Path, description = "The revision number (1, 2, …)"),
    ),
    security(("bearer" = ["AIManager:ManageTools"])),
    responses(
        (status = 200, description = "The revision", body = RevisionView),
        (status = 404, description = "No such tool, operation or revision for this tenant", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn get_revision(
    auth: Authorized<ManageTools>,
    State(state): State<AppState>,
    ApiPath((id, operation_id, revision)): ApiPath<(Uuid, Uuid, u32)>,
) -> Result<Json<RevisionView>, ApiError> {
    // Revisions are numbered from 1 and stored as SQL integers: no other
    // number can name one.
    if revision == 0 || i32::try_from(revision).is_err() {
        return Err(ApiError::NotFound { entity: "revision" });
    }
    let record = state
        .store()
        .revision(auth.principal.tenant, OperationId(operation_id), revision)
        .await?;
    if record.tool.as_uuid() != id {
        return Err(ApiError::NotFound { entity: "revision" });
    }
    Ok(Json(revision_view(record)))
}

/// Check or generate for an inline tool sent in the body; creates no row.
#[utoipa::path(post, path = "/api/tools/testing", tag = "testing",
    request_body = InlineRequest,
    security(("bearer" = ["AIManager:ManageTools"])),
    responses(
        (status = 200, description = "`check`: `{ok, contract_hash, diagnostics}`; `generate`: a draft or `needs_authored_mock`", body = InlineResult),
        (status = 422, description = "No such operation in the tool (`unknown_operation`), an unusable contract, or `needs_output_schema`", body = crate::ErrorEnvelope),
    ))]
pub(crate) async fn post_inline_testing(
    _auth: Authorized<ManageTools>,
    State(state): State<AppState>,
    ApiJson(body): ApiJson<InlineRequest>,
) -> Result<Json<InlineResult>, ApiError> {
    let (tool, operation_id) = match &body {
        // Borrowed only to find the operation; cloned so the body can be consumed below.
        InlineRequest::Check {
            tool, operation_id, ..
        }
        | InlineRequest::Generate {
            tool, operation_id, ..
        } => (tool, operation_id),
    };
    let (index, op) = tool
        .operations
        .iter()
        .enumerate()
        .find(|(_, o)| &o.name == operation_id)
        .map(|(i, o)| (i, o.clone()))
        .ok_or_else(|| {
            let code = ApiCode::UnknownOperation;
            ApiError::unprocessable(
                code,
                format!("the tool has no operation {operation_id:?}"),
                [Listed::new(
                    code.as_str(),
                    "/operation_id",
                    "not an operation of the tool",
                )],
            )
        })?;
    let contract = op.contract().ok_or(ApiError::NeedsOutputSchema)?;
    let unusable = |message: String| {
        let code = ApiCode::InvalidContract;
        ApiError::unprocessable(
            code,
            format!("the operation's contract is unusable: {message}"),
            [Listed::new(
                code.as_str(),
                pointer::index("/tool/operations", index),
                message,
            )],
        )
    };
    let contract_hash = contract.hash().map_err(|e| unusable(e.to_string()))?;
    match body {
        InlineRequest::Check { definition, .. } => {
            let definition = definition
                .map(Value::Object)
                .or_else(|| op.testing.clone())
                .ok_or_else(|| {
                    let code = ApiCode::MissingDefinition;
                    ApiError::unprocessable(
                        code,
                        "send a definition or give the operation a testing definition",
                        [Listed::new(
                            code.as_str(),
                            "/definition",
                            "no definition to check",
                        )],
                    )
                })?;
            let compiled = CompiledContract::new(contract).map_err(|e| unusable(e.to_string()))?;
            let diagnostics = match compile_checked(&definition, Some(&compiled)) {
                Ok(_) => Value::Array(Vec::new()),
                Err(diagnostics) => serde_json::to_value(diagnostics)
                    .map_err(|e| ApiError::Internal(e.to_string()))?,
            };
            Ok(Json(InlineResult::Check(CheckResult {
                ok: diagnostics.as_array().is_some_and(Vec::is_empty),
                contract_hash: contract_hash.to_string(),
                diagnostics,
            })))
        }
        InlineRequest::Generate { instructions, .. } => Ok(Json(InlineResult::Generate(
            state
                .config()
                .generator
                .generate(&contract, instructions)
                .await?,
        ))),
    }
}
