//! Tool testing (SPEC §10): operation contracts, hashes, revisions and
//! status; generating and saving revisions; checking and generating for
//! inline tools without a row.

mod cache;

pub(crate) use cache::TestingCache;

use crate::AppState;
use crate::auth::{Authorized, ManageTools};
use crate::error::{ApiCode, ApiError};
use crate::extract::{ApiJson, ApiPath};
use crate::generator::GenerateResult;
use cache::Rendered;
use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolmock_contract::ContractHash;
use toolmock_evaluator::{CompiledContract, compile_checked};
use toolmock_runtime::backend::Catalog;
use toolmock_runtime::model::{
    InlineTool, OperationId, OperationView, Provenance, RevisionRecord, SaveRevision, TenantId,
    ToolId,
};
use utoipa::ToSchema;
use uuid::Uuid;

/// A revision, without its definition.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RevisionSummary {
    /// 1, 2, 3… per operation.
    pub(crate) revision: u32,
    /// The contract hash it was saved against.
    pub(crate) contract_hash: String,
    /// The definition's hash.
    pub(crate) definition_hash: String,
    /// Who saved it (the token's subject).
    pub(crate) author: String,
    /// `authored` or `generated`.
    pub(crate) provenance: String,
    /// The generation instructions, for generated revisions.
    pub(crate) instructions: Option<String>,
    /// When.
    pub(crate) created_at: chrono::DateTime<chrono::Utc>,
}

/// A revision with its definition.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RevisionView {
    /// The tool.
    tool_id: Uuid,
    /// The operation.
    operation_id: Uuid,
    /// Number, hashes, author, time, provenance.
    #[serde(flatten)]
    summary: RevisionSummary,
    /// The definition document.
    #[schema(value_type = Object)]
    definition: Value,
}

/// One operation's testing view.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct OperationTesting {
    /// The operation's id (`operation_id` in requests).
    pub(crate) id: Uuid,
    /// Runtime name.
    pub(crate) name: String,
    /// `platform`, `mcp` or `custom`.
    pub(crate) source: String,
    /// `current`, `stale`, `missing` or `needs_output_schema`.
    pub(crate) status: String,
    /// The current contract (absent: needs an output schema).
    #[schema(value_type = Option<Object>)]
    pub(crate) contract: Option<Rendered>,
    /// Its hash.
    pub(crate) contract_hash: Option<String>,
    /// The latest revision.
    #[schema(value_type = Option<RevisionSummary>)]
    pub(crate) latest_revision: Option<Rendered>,
    /// For a stale operation: the contract diff (the schema crate's `diff`)
    /// from the contract the latest revision was saved against to the current one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub(crate) stale_diff: Option<Value>,
}

/// `GET /api/tools/{id}/testing`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ToolTesting {
    /// The tool.
    pub(crate) tool_id: Uuid,
    /// Its name.
    pub(crate) tool_name: String,
    /// Its operations.
    pub(crate) operations: Vec<OperationTesting>,
}

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
        /// The definition (default: the operation's own `testing`).
        #[serde(default)]
        #[schema(value_type = Option<Object>)]
        definition: Option<Value>,
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

/// The outcome of `check`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct CheckResult {
    /// The definition passes.
    ok: bool,
    /// The contract checked against.
    contract_hash: String,
    /// Every problem: `{code, path, message}`.
    #[schema(value_type = Vec<Object>)]
    diagnostics: Value,
}

/// Either answer of `POST /api/tools/testing`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub(crate) enum InlineResult {
    /// For `check`.
    Check(CheckResult),
    /// For `generate`.
    Generate(GenerateResult),
}

fn revision_summary(record: &RevisionRecord) -> RevisionSummary {
    RevisionSummary {
        revision: record.revision,
        contract_hash: record.contract_hash.to_string(),
        definition_hash: record.definition_hash.to_string(),
        author: record.author.clone(),
        provenance: record.provenance.as_str().to_owned(),
        instructions: record.provenance.instructions().map(str::to_owned),
        created_at: record.created_at,
    }
}

fn revision_view(record: RevisionRecord) -> RevisionView {
    RevisionView {
        tool_id: record.tool.as_uuid(),
        operation_id: record.operation.as_uuid(),
        summary: revision_summary(&record),
        definition: record.definition,
    }
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
    ApiPath(id): ApiPath<Uuid>,
) -> Result<Response, ApiError> {
    // The fingerprint of the tool's index in one query, and the answer kept
    // under it; else the index, and contracts and revisions only when not
    // kept from an earlier request (routes/testing_view.rs).
    let body =
        cache::testing_answer(&state, auth.principal.tenant, ToolId(id))
            .await?;
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
                    return Err(ApiError::Unprocessable {
                        code: ApiCode::InstructionsWithoutGeneration,
                        message: "instructions belong to generated revisions only".into(),
                        details: json!({"problems": [{"code": "instructions_without_generation", "path": "/instructions", "message": "set provenance to generated, or leave instructions out"}]}),
                    });
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
        .ok_or_else(|| ApiError::Unprocessable {
            code: ApiCode::UnknownOperation,
            message: format!("the tool has no operation {operation_id:?}"),
            details: json!({"problems": [{"code": "unknown_operation", "path": "/operation_id", "message": "not an operation of the tool"}]}),
        })?;
    let contract = op.contract().ok_or(ApiError::NeedsOutputSchema)?;
    let unusable = |message: String| ApiError::Unprocessable {
        code: ApiCode::InvalidContract,
        message: format!("the operation's contract is unusable: {message}"),
        details: json!({"problems": [{"code": "invalid_contract", "path": format!("/tool/operations/{index}"), "message": message}]}),
    };
    let contract_hash = contract.hash().map_err(|e| unusable(e.to_string()))?;
    match body {
        InlineRequest::Check { definition, .. } => {
            let definition = definition.or_else(|| op.testing.clone()).ok_or_else(|| {
                ApiError::Unprocessable {
                    code: ApiCode::MissingDefinition,
                    message: "send a definition or give the operation a testing definition".into(),
                    details: json!({"problems": [{"code": "missing_definition", "path": "/definition", "message": "no definition to check"}]}),
                }
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
