//! `toolmock-api seed FOLDER`: a simulation folder's tools, mocks and agent
//! saved as a tenant's library, idempotently.
//!
//! The seed is a client of the API's own routes, called in-process with a
//! token it mints for itself: every rule a tool, a revision or an agent
//! obeys over HTTP, it obeys here, with the same errors. Run twice, it
//! changes nothing the second time:
//!
//! - a tool absent from the library is created from the file's source; a
//!   present one is updated from it (an unchanged source changes nothing; a
//!   corrected schema gives the operation a new contract, and its latest
//!   revision goes stale);
//! - an operation's definition is appended as a revision only when the
//!   operation has none, its latest is stale (saved against another
//!   contract), or the latest differs from the file's — always against the
//!   current contract's hash, so an old definition is never relabelled as
//!   current;
//! - the agent is created when the tenant has none of its name; an existing
//!   one is left exactly as it is (prompt and guards included).

use crate::{AppState, AuthConfig, Claims, mint_hs256};
use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use serde_json::{Value, json};
use std::path::Path;
use toolmock_simulation::FileProblem;
use toolmock_store::PgStore;
use tower::ServiceExt;

/// What one seed did to one thing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeedAction {
    /// It did not exist and was created.
    Created,
    /// A revision was appended, or a tool's operations were updated.
    Appended,
    /// It was already as the folder has it.
    LeftAlone,
}

impl SeedAction {
    /// How the report prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            SeedAction::Created => "created",
            SeedAction::Appended => "appended",
            SeedAction::LeftAlone => "left alone",
        }
    }
}

/// What a seed did, in the order it did it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeedReport {
    /// Each thing it looked at: what it did, and what the thing is.
    pub lines: Vec<(SeedAction, String)>,
}

impl SeedReport {
    fn note(&mut self, action: SeedAction, what: impl Into<String>) {
        self.lines.push((action, what.into()));
    }

    /// How many lines took this action.
    pub fn count(&self, action: SeedAction) -> usize {
        self.lines.iter().filter(|(a, _)| *a == action).count()
    }
}

/// Why a seed stopped. What it did before stopping stays done, and a second
/// run goes on from there.
#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    /// The folder's simulation file does not load: every problem.
    #[error("the simulation file does not load: {}", list(.0))]
    Load(Vec<FileProblem>),
    /// A tool whose source is not kept in a library (a library reference).
    #[error("{at}: {message}")]
    Unsupported {
        /// A JSON pointer into the simulation file.
        at: String,
        /// Why.
        message: String,
    },
    /// The API refused a request: its status and error body.
    #[error("{request} was refused ({status}): {body}")]
    Refused {
        /// Method and path.
        request: String,
        /// The status.
        status: u16,
        /// The error body.
        body: Value,
    },
    /// The database could not be read.
    #[error("the database: {0}")]
    Database(String),
}

impl SeedError {
    /// A stable code for scripts.
    pub fn code(&self) -> &'static str {
        match self {
            SeedError::Load(_) => "seed_load_failed",
            SeedError::Unsupported { .. } => "seed_unsupported_tool",
            SeedError::Refused { .. } => "seed_refused",
            SeedError::Database(_) => "seed_database",
        }
    }
}

fn list(problems: &[FileProblem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// The API's routes, called in-process under a token of the tenant.
struct Client {
    app: Router,
    bearer: String,
}

impl Client {
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(StatusCode, Value), SeedError> {
        let request = Request::builder()
            .method(method.clone())
            .uri(path)
            .header(header::AUTHORIZATION, format!("Bearer {}", self.bearer));
        let request = match body {
            Some(body) => request
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body.to_string())),
            None => request.body(Body::empty()),
        };
        let internal = |message: String| SeedError::Refused {
            request: format!("{method} {path}"),
            status: 500,
            body: json!({ "message": message }),
        };
        let request = request.map_err(|e| internal(e.to_string()))?;
        let response = self
            .app
            .clone()
            .oneshot(request)
            .await
            .map_err(|e| internal(e.to_string()))?;
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .map_err(|e| internal(e.to_string()))?;
        let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Ok((status, value))
    }

    /// A call that must succeed.
    async fn ok(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, SeedError> {
        let (status, value) = self.call(method.clone(), path, body).await?;
        if status.is_success() {
            Ok(value)
        } else {
            Err(SeedError::Refused {
                request: format!("{method} {path}"),
                status: status.as_u16(),
                body: value,
            })
        }
    }
}

/// Seeds the tenant (a name or UUID, as in a token's `tenant` claim) from
/// `folder/simulation.json` (or the simulation file itself).
pub async fn seed(
    pool: sqlx::PgPool,
    tenant: &str,
    folder: &Path,
) -> Result<SeedReport, SeedError> {
    let file = if folder.is_dir() {
        folder.join("simulation.json")
    } else {
        folder.to_path_buf()
    };
    let document = toolmock_simulation::inline_file(&file).map_err(SeedError::Load)?;
    // A secret of this process alone: the token below is the only one it
    // ever verifies.
    let secret = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let auth =
        AuthConfig::hs256(secret.as_bytes()).map_err(|e| SeedError::Database(e.to_string()))?;
    let now = chrono::Utc::now().timestamp().max(0) as u64;
    let claims = Claims {
        sub: "toolmock-api seed".into(),
        tenant: tenant.to_owned(),
        permissions: vec![
            "AIManager:ManageTools".into(),
            "AIManager:RunSimulations".into(),
        ],
        exp: now + 3600,
        iat: Some(now),
        iss: None,
        aud: None,
    };
    let bearer =
        mint_hs256(secret.as_bytes(), &claims).map_err(|e| SeedError::Database(e.to_string()))?;
    let state = AppState::new(pool.clone(), auth, crate::ApiConfig::default());
    let client = Client {
        app: crate::router(state),
        bearer,
    };
    let mut report = SeedReport::default();
    let library = library_tools(&client).await?;
    let mut tool_ids = serde_json::Map::new();
    let tools = document["tools"].as_array().cloned().unwrap_or_default();
    for (index, tool) in tools.iter().enumerate() {
        let name = tool["name"].as_str().unwrap_or_default().to_owned();
        let source = library_source(tool, &format!("/tools/{index}"))?;
        let id = match library.get(&name) {
            None => {
                let mut body = json!({ "name": name, "source": source });
                if let Some(fallback) = tool.get("output_schema") {
                    body["output_schema"] = fallback.clone();
                }
                let created = client.ok(Method::POST, "/api/tools", Some(&body)).await?;
                report.note(SeedAction::Created, format!("tool {name}"));
                created["id"].as_str().unwrap_or_default().to_owned()
            }
            Some(id) => {
                let before = contract_hashes(&client, id).await?;
                client
                    .ok(
                        Method::PUT,
                        &format!("/api/tools/{id}"),
                        Some(&json!({ "source": source })),
                    )
                    .await?;
                let after = contract_hashes(&client, id).await?;
                if before == after {
                    report.note(SeedAction::LeftAlone, format!("tool {name}"));
                } else {
                    let changed: Vec<&str> = after
                        .iter()
                        .filter(|(op, hash)| before.get(*op) != Some(*hash))
                        .map(|(op, _)| op.as_str())
                        .collect();
                    report.note(
                        SeedAction::Appended,
                        format!("tool {name}: new contract for {}", changed.join(", ")),
                    );
                }
                id.clone()
            }
        };
        seed_definitions(&client, &id, &name, tool, &mut report).await?;
        tool_ids.insert(name, Value::String(id));
    }
    seed_agent(
        &client,
        &pool,
        tenant,
        &document["agent"],
        &tool_ids,
        &mut report,
    )
    .await?;
    Ok(report)
}

/// The tenant's library tools by name.
async fn library_tools(
    client: &Client,
) -> Result<std::collections::BTreeMap<String, String>, SeedError> {
    let mut tools = std::collections::BTreeMap::new();
    let mut after: Option<String> = None;
    loop {
        let path = match &after {
            Some(after) => format!("/api/tools?limit=100&after={after}"),
            None => "/api/tools?limit=100".to_owned(),
        };
        let page = client.ok(Method::GET, &path, None).await?;
        for tool in page["tools"].as_array().into_iter().flatten() {
            if let (Some(name), Some(id)) = (tool["name"].as_str(), tool["id"].as_str()) {
                tools.insert(name.to_owned(), id.to_owned());
            }
        }
        match page["next"].as_str() {
            Some(next) => after = Some(next.to_owned()),
            None => return Ok(tools),
        }
    }
}

/// A simulation tool's source as the library takes it.
fn library_source(tool: &Value, at: &str) -> Result<Value, SeedError> {
    match tool["from"].as_str() {
        Some("manifest") => Ok(json!({"type": "platform", "manifest": tool["manifest"]})),
        Some("custom") => Ok(json!({"type": "custom", "operations": tool["operations"]})),
        Some("contracts") => {
            // A contract list (what `toolmock discover` writes): its MCP
            // operations as the server listed them, the rest as custom ones.
            let contracts: Vec<&Value> = tool["contracts"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|entry| entry.get("contract").unwrap_or(entry))
                .collect();
            // MCP tools as a server lists them; anything else as custom
            // operations, whose schemas go by other names.
            let mcp = contracts.iter().all(|c| c["operation"]["source"] == "mcp");
            let (kind, list, input, output) = if mcp {
                ("mcp", "tools", "inputSchema", "outputSchema")
            } else {
                ("custom", "operations", "input_schema", "output_schema")
            };
            let operations: Vec<Value> = contracts
                .iter()
                .map(|c| {
                    json!({
                        "name": c["operation"]["name"],
                        "description": c["description"],
                        input: c["input_schema"],
                        output: c["output_schema"],
                    })
                })
                .collect();
            Ok(json!({"type": kind, list: operations}))
        }
        other => Err(SeedError::Unsupported {
            at: format!("{at}/from"),
            message: format!(
                "a tool from {} is not seeded: only manifest, contracts and custom tools become library tools",
                other.unwrap_or("nowhere")
            ),
        }),
    }
}

/// Each operation's current contract hash, by operation name.
async fn contract_hashes(
    client: &Client,
    tool: &str,
) -> Result<std::collections::BTreeMap<String, Value>, SeedError> {
    let testing = client
        .ok(Method::GET, &format!("/api/tools/{tool}/testing"), None)
        .await?;
    Ok(testing["operations"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|op| {
            (
                op["name"].as_str().unwrap_or_default().to_owned(),
                op["contract_hash"].clone(),
            )
        })
        .collect())
}

/// Appends a revision for each of the tool's definitions that is not the
/// operation's current one already.
async fn seed_definitions(
    client: &Client,
    tool_id: &str,
    tool_name: &str,
    tool: &Value,
    report: &mut SeedReport,
) -> Result<(), SeedError> {
    let Some(definitions) = tool["definitions"].as_object() else {
        return Ok(());
    };
    let testing = client
        .ok(Method::GET, &format!("/api/tools/{tool_id}/testing"), None)
        .await?;
    let operations = testing["operations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (name, definition) in definitions {
        let what = format!("{tool_name}/{name}");
        let Some(op) = operations.iter().find(|op| op["name"] == name.as_str()) else {
            return Err(SeedError::Unsupported {
                at: format!("/tools/{tool_name}/definitions/{name}"),
                message: format!("the library tool {tool_name} has no operation {name}"),
            });
        };
        let op_id = op["id"].as_str().unwrap_or_default();
        let latest = op["latest_revision"]["revision"].as_u64();
        let unchanged = match (op["status"].as_str(), latest) {
            (Some("current"), Some(revision)) => {
                let saved = client
                    .ok(
                        Method::GET,
                        &format!("/api/tools/{tool_id}/operations/{op_id}/revisions/{revision}"),
                        None,
                    )
                    .await?;
                saved["definition"] == *definition
            }
            _ => false,
        };
        if unchanged {
            report.note(SeedAction::LeftAlone, format!("mock {what}"));
            continue;
        }
        let body = json!({
            "action": "save",
            "operation_id": op_id,
            "contract_hash": op["contract_hash"],
            "definition": definition,
        });
        let saved = client
            .ok(
                Method::POST,
                &format!("/api/tools/{tool_id}/testing"),
                Some(&body),
            )
            .await?;
        let action = if latest.is_some() {
            SeedAction::Appended
        } else {
            SeedAction::Created
        };
        report.note(
            action,
            format!("mock {what}: revision {}", saved["revision"]),
        );
    }
    Ok(())
}

/// Creates the agent unless the tenant has one of its name; never changes
/// an existing one.
async fn seed_agent(
    client: &Client,
    pool: &sqlx::PgPool,
    tenant: &str,
    agent: &Value,
    tool_ids: &serde_json::Map<String, Value>,
    report: &mut SeedReport,
) -> Result<(), SeedError> {
    let name = agent["name"].as_str().unwrap_or_default();
    let store = PgStore::new(pool.clone());
    let existing = store
        .agents_named(crate::auth::tenant_id(tenant), name)
        .await
        .map_err(|e| SeedError::Database(e.to_string()))?;
    if !existing.is_empty() {
        report.note(SeedAction::LeftAlone, format!("agent {name}"));
        return Ok(());
    }
    let mut tools = Vec::new();
    let workflows = agent["workflows"].as_array().cloned().unwrap_or_default();
    for tool in agent["tools"].as_array().into_iter().flatten() {
        let tool = tool.as_str().unwrap_or_default();
        if let Some(id) = tool_ids.get(tool) {
            tools.push(json!({"type": "library", "tool": id}));
        } else if workflows.iter().any(|w| w["name"] == tool) {
            tools.push(json!({"type": "workflow", "workflow": tool}));
        }
    }
    let body = json!({
        "name": name,
        "tools": tools,
        "workflows": workflows,
        "prompt": agent["prompt"].as_str().unwrap_or_default(),
        "guards": agent["guards"].clone(),
    });
    client.ok(Method::POST, "/api/agents", Some(&body)).await?;
    report.note(SeedAction::Created, format!("agent {name}"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::SeedError;

    #[test]
    fn every_code_is_documented_and_every_documented_code_exists() {
        let errors = [
            SeedError::Load(Vec::new()),
            SeedError::Unsupported {
                at: String::new(),
                message: String::new(),
            },
            SeedError::Refused {
                request: String::new(),
                status: 0,
                body: serde_json::Value::Null,
            },
            SeedError::Database(String::new()),
        ];
        let codes: Vec<&str> = errors.iter().map(SeedError::code).collect();
        let doc = include_str!("../../../docs/error-codes.md");
        toolmock_contract::check_documented_codes(doc, "toolmock-api seed", &codes)
            .unwrap_or_else(|e| panic!("{e}"));
    }
}
