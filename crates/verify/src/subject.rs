//! What one verification checks: a real tool (a [`Subject`]) — where it
//! is, its operations with the contracts and mocks saved for them, the
//! recordings to replay, and its compiled `verify` settings. Built from a
//! simulation file (`crate::simulation`) or, on the service, from a library
//! tool and its latest revisions.

use crate::settings::Settings;
use serde_json::{Map, Value};
use std::sync::Arc;
use toolmock_contract::OperationContract;
use toolmock_discovery::Endpoint;
use toolmock_evaluator::{CompiledContract, CompiledDefinition};
use toolmock_mcp::record::RecordedCall;

/// Where a document, a call or an example was written: a file (or a
/// revision) and a JSON pointer into it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Source {
    /// The file (relative to where the verification was started), or
    /// `revision N` of a library operation.
    pub file: String,
    /// A JSON pointer into it.
    pub path: String,
}

/// Where the current OpenAPI document of a tool's HTTP operations is.
#[derive(Debug, Clone, PartialEq)]
pub enum OpenApiSource {
    /// Read already (a file named by the simulation).
    Document {
        /// The file, for reports.
        file: String,
        /// The document.
        value: Value,
    },
    /// Fetched when the verification runs.
    Url(String),
}

/// A saved mock: the definition and its compiled form (it passed its check
/// against the operation's contract).
#[derive(Debug, Clone)]
pub struct Mock {
    /// The definition document.
    pub definition: Value,
    /// Compiled.
    pub compiled: Arc<CompiledDefinition>,
    /// Its hash (`DefinitionHash`, hex).
    pub hash: String,
    /// Where it was written.
    pub source: Source,
}

/// One operation of a real tool.
#[derive(Debug, Clone)]
pub struct SubjectOperation {
    /// Its runtime name (the MCP tool's name).
    pub name: String,
    /// The contract the mock was saved against (the pinned one).
    pub contract: OperationContract,
    /// Compiled.
    pub compiled_contract: Arc<CompiledContract>,
    /// Its mock, when one is saved.
    pub mock: Option<Mock>,
    /// A custom operation's HTTP endpoint (a `POST` of the arguments).
    pub endpoint: Option<String>,
    /// The library revision of the mock (the service), when it is one.
    pub revision: Option<u32>,
}

/// One `toolmock record` folder's calls.
#[derive(Debug, Clone)]
pub struct Recording {
    /// The folder, as named.
    pub name: String,
    /// Its `calls.jsonl`, for reports.
    pub file: String,
    /// The calls, in order.
    pub calls: Vec<RecordedCall>,
}

/// One real tool and what is checked against it.
#[derive(Debug, Clone)]
pub struct Subject {
    /// The tool's name.
    pub tool: String,
    /// Its MCP server (`tools/list` and `tools/call`), when it has one.
    pub server: Option<Endpoint>,
    /// Its OpenAPI document, when one is named.
    pub openapi: Option<OpenApiSource>,
    /// The tool's fallback output schema (docs/spec.md §9), applied to a
    /// discovered tool that declares none, as when it was pinned.
    pub fallback_output_schema: Option<Value>,
    /// Its operations, in order.
    pub operations: Vec<SubjectOperation>,
    /// Its `verify` settings.
    pub settings: Settings,
    /// Where those settings were written (a chain step's source is in it).
    pub block: Source,
    /// Recordings to replay.
    pub recordings: Vec<Recording>,
}

impl Subject {
    /// The operation called `name`.
    pub fn operation(&self, name: &str) -> Option<&SubjectOperation> {
        self.operations.iter().find(|o| o.name == name)
    }

    /// Whether `operation` has a real handler here: an endpoint, or the server.
    pub fn handled(&self, operation: &SubjectOperation) -> bool {
        operation.endpoint.is_some() || self.server.is_some()
    }

    /// The state a sequence starts from on the mock's side: every mock's
    /// `initial_state`, merged (a start refuses two that share a key).
    pub fn initial_state(&self) -> Map<String, Value> {
        let mut state = Map::new();
        for op in &self.operations {
            if let Some(mock) = &op.mock {
                for (key, value) in mock.compiled.initial_state() {
                    state.entry(key.clone()).or_insert_with(|| value.clone());
                }
            }
        }
        state
    }

    /// Points the tool at a staging copy (`--sandbox-url`): an MCP tool's
    /// server becomes `url`; each custom operation's endpoint, and an
    /// OpenAPI document's URL, keep their path and query but take `url`'s
    /// scheme, host and port.
    pub fn point_at(&mut self, url: &str) -> Result<(), String> {
        let base = reqwest::Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(format!("{url:?} is not an http:// or https:// URL"));
        }
        if self.server.is_some() {
            self.server = Some(Endpoint::http(url).map_err(|e| e.to_string())?);
        }
        for op in &mut self.operations {
            if let Some(endpoint) = &op.endpoint {
                op.endpoint = Some(moved(endpoint, &base)?);
            }
        }
        if let Some(OpenApiSource::Url(document)) = &self.openapi {
            self.openapi = Some(OpenApiSource::Url(moved(document, &base)?));
        }
        if self.server.is_none() && self.operations.iter().all(|o| o.endpoint.is_none()) {
            return Err(format!(
                "{} has no MCP server and no endpoint to point at {url}",
                self.tool
            ));
        }
        Ok(())
    }
}

/// `url` with `base`'s scheme, host and port.
fn moved(url: &str, base: &reqwest::Url) -> Result<String, String> {
    let mut moved = reqwest::Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    moved
        .set_scheme(base.scheme())
        .and_then(|()| moved.set_host(base.host_str()).map_err(|_| ()))
        .and_then(|()| moved.set_port(base.port()))
        .map_err(|()| format!("cannot move {url:?} to {base}"))?;
    Ok(moved.to_string())
}
