//! MCP `tools/list` results (revisions 2025-06-18 through 2026-07-28) and their
//! normalization to operation contracts with source `mcp`.
//!
//! This module reads the JSON of one page; following `nextCursor` from page to
//! page is the I/O adapter's job (`toolmock-discovery`). Members a revision
//! added that the contract does not use (`icons`, `execution`, `_meta`,
//! `ttlMs`, …) are ignored; a declared `$schema` is kept as part of the
//! schema; `title` and `annotations` are kept as untrusted hints, outside the
//! contract and its hash.

use crate::pointer::{self, type_name};
use crate::problems::{
    NormalizeCode, NormalizeProblems, inexact_numbers, missing_field, wrong_type,
};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use toolmock_contract::Problem;
use toolmock_contract::{ContractHash, OperationContract, OperationIdentity, OperationSource};

/// One tool of a `tools/list` page, as the contract needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// The tool's name: the operation's runtime name.
    pub name: String,
    /// The description shown to the model (`""` when absent).
    pub description: String,
    /// `inputSchema`, exactly as discovered.
    pub input_schema: Value,
    /// `outputSchema`, exactly as discovered, when the server declared one.
    pub output_schema: Option<Value>,
    /// Untrusted hints: `title` and `annotations`.
    pub hints: ToolHints,
}

/// What a server says about a tool beyond its contract. Untrusted: a server
/// may claim `readOnlyHint` for a tool that writes; nothing here is hashed or
/// enforced.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ToolHints {
    /// The human-readable title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool's `annotations` object as sent (`readOnlyHint`, `destructiveHint`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Map<String, Value>>,
}

impl ToolHints {
    /// No title and no annotations.
    pub fn is_empty(&self) -> bool {
        self.title.is_none() && self.annotations.is_none()
    }
}

/// One page of `tools/list`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolsPage {
    /// The tools of this page, in order.
    pub tools: Vec<McpTool>,
    /// The cursor of the next page, when there is one.
    pub next_cursor: Option<String>,
}

impl ToolsPage {
    /// Reads one `tools/list` result (`{"tools": […], "nextCursor"?: "…"}`),
    /// reporting every problem.
    pub fn from_value(value: &Value) -> Result<Self, NormalizeProblems> {
        let mut errors = NormalizeProblems::new();
        let Value::Object(map) = value else {
            return Err(NormalizeProblems::from(wrong_type("", "an object", value)));
        };
        let next_cursor = match map.get("nextCursor") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                errors.push_problem(wrong_type("/nextCursor", "a string", other));
                None
            }
        };
        let mut tools = Vec::new();
        match map.get("tools") {
            None => errors.push_problem(missing_field("", "tools")),
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    if let Some(tool) = read_tool(item, &pointer::index("/tools", i), &mut errors) {
                        tools.push(tool);
                    }
                }
            }
            Some(other) => errors.push_problem(wrong_type("/tools", "an array", other)),
        }
        if errors.is_empty() {
            Ok(ToolsPage { tools, next_cursor })
        } else {
            Err(errors)
        }
    }
}

fn read_tool(value: &Value, path: &str, errors: &mut NormalizeProblems) -> Option<McpTool> {
    let Value::Object(map) = value else {
        errors.push_problem(wrong_type(path, "a tool object", value));
        return None;
    };
    let before = errors.len();
    let name = match map.get("name") {
        None => {
            errors.push_problem(missing_field(path, "name"));
            None
        }
        Some(Value::String(s)) if s.is_empty() => {
            errors.push_problem(Problem::new(
                NormalizeCode::EmptyName,
                pointer::push(path, "name"),
                "a tool name must not be empty",
            ));
            None
        }
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            errors.push_problem(wrong_type(&pointer::push(path, "name"), "a string", other));
            None
        }
    };
    let description = optional_string(map, "description", path, errors);
    let title = optional_string(map, "title", path, errors);
    let input_schema = match map.get("inputSchema") {
        None => {
            errors.push_problem(missing_field(path, "inputSchema"));
            None
        }
        Some(v @ Value::Object(_)) => Some(v.clone()),
        Some(other) => {
            errors.push_problem(wrong_type(
                &pointer::push(path, "inputSchema"),
                "a JSON Schema object",
                other,
            ));
            None
        }
    };
    let output_schema = match map.get("outputSchema") {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(v.clone()),
        Some(other) => {
            errors.push_problem(wrong_type(
                &pointer::push(path, "outputSchema"),
                "a JSON Schema object",
                other,
            ));
            None
        }
    };
    let annotations = match map.get("annotations") {
        None | Some(Value::Null) => None,
        Some(Value::Object(a)) => Some(a.clone()),
        Some(other) => {
            errors.push_problem(wrong_type(
                &pointer::push(path, "annotations"),
                "an object",
                other,
            ));
            None
        }
    };
    for (member, schema) in [
        ("inputSchema", input_schema.as_ref()),
        ("outputSchema", output_schema.as_ref()),
    ] {
        if let Some(schema) = schema {
            errors.extend(inexact_numbers(schema, &pointer::push(path, member)));
        }
    }
    if errors.len() > before {
        return None;
    }
    Some(McpTool {
        name: name?,
        description: description.unwrap_or_default(),
        input_schema: input_schema?,
        output_schema,
        hints: ToolHints { title, annotations },
    })
}

fn optional_string(
    map: &Map<String, Value>,
    field: &str,
    path: &str,
    errors: &mut NormalizeProblems,
) -> Option<String> {
    match map.get(field) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            errors.push_problem(wrong_type(&pointer::push(path, field), "a string", other));
            None
        }
    }
}

/// Where a discovered operation's output schema came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputSchemaSource {
    /// The server declared `outputSchema`.
    Discovered,
    /// The server declared none; the library tool's own `output_schema` is used.
    Fallback,
}

/// Whether an operation can be mocked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiscoveryStatus {
    /// Both schemas are known: the contract can be hashed, mocked and pinned.
    Ready,
    /// No output schema was discovered and there is no fallback: not mockable,
    /// cannot be saved or pinned (docs/spec.md §2).
    NeedsOutputSchema,
}

impl DiscoveryStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            DiscoveryStatus::Ready => "ready",
            DiscoveryStatus::NeedsOutputSchema => "needs_output_schema",
        }
    }
}

/// One discovered operation after the output-schema fallback of docs/spec.md §9.
#[derive(Debug, Clone, PartialEq)]
pub struct DiscoveredOperation {
    /// `{source: mcp, name}`.
    pub operation: OperationIdentity,
    /// The description (`""` when absent).
    pub description: String,
    /// The input schema as discovered.
    pub input_schema: Value,
    /// The output schema and its source; `None` means `needs_output_schema`.
    pub output: Option<(Value, OutputSchemaSource)>,
    /// Untrusted hints.
    pub hints: ToolHints,
}

impl DiscoveredOperation {
    /// `ready` or `needs_output_schema`.
    pub fn status(&self) -> DiscoveryStatus {
        if self.output.is_some() {
            DiscoveryStatus::Ready
        } else {
            DiscoveryStatus::NeedsOutputSchema
        }
    }

    /// The operation contract, when the operation is ready.
    pub fn contract(&self) -> Option<OperationContract> {
        self.output.as_ref().map(|(schema, _)| OperationContract {
            operation: self.operation.clone(),
            description: self.description.clone(),
            input_schema: self.input_schema.clone(),
            output_schema: schema.clone(),
        })
    }
}

/// Normalizes the tools of every page (in order) to operations with source
/// `mcp`: input schema as discovered; output schema as discovered, else
/// `fallback` (the library tool's own `output_schema`), else
/// `needs_output_schema`. Duplicate names across pages are refused, with
/// pointers into the concatenated list (`/tools/N`).
pub fn normalize_tools(
    tools: &[McpTool],
    fallback: Option<&Value>,
) -> Result<Vec<DiscoveredOperation>, NormalizeProblems> {
    let mut errors = NormalizeProblems::new();
    if let Some(f) = fallback {
        if !(f.is_object() || f.is_boolean()) {
            errors.push_problem(Problem::new(NormalizeCode::InvalidFallback, "", format!("the fallback output schema must be a JSON Schema (an object or a boolean), found {found}", found = type_name(f))));
        } else {
            errors.extend(inexact_numbers(f, "/fallback_output_schema"));
        }
    }
    let mut seen: BTreeMap<&str, String> = BTreeMap::new();
    let mut out = Vec::with_capacity(tools.len());
    for (i, tool) in tools.iter().enumerate() {
        let path = pointer::push(&pointer::index("/tools", i), "name");
        if let Some(first) = seen.get(tool.name.as_str()) {
            errors.push_problem(Problem::new(
                NormalizeCode::DuplicateTool,
                path,
                format!(
                    "the tool {name:?} is listed twice (first at {first})",
                    name = tool.name
                ),
            ));
            continue;
        }
        seen.insert(&tool.name, path);
        let output = match (&tool.output_schema, fallback) {
            (Some(schema), _) => Some((schema.clone(), OutputSchemaSource::Discovered)),
            (None, Some(f)) => Some((f.clone(), OutputSchemaSource::Fallback)),
            (None, None) => None,
        };
        out.push(DiscoveredOperation {
            operation: OperationIdentity {
                source: OperationSource::Mcp,
                name: tool.name.clone(),
            },
            description: tool.description.clone(),
            input_schema: tool.input_schema.clone(),
            output,
            hints: tool.hints.clone(),
        });
    }
    errors.into_result(out)
}

/// Reads every page (in order) and normalizes their tools; see
/// [`normalize_tools`]. A page's problems are reported under `/pages/N`.
pub fn normalize_pages(
    pages: &[Value],
    fallback: Option<&Value>,
) -> Result<Vec<DiscoveredOperation>, NormalizeProblems> {
    let mut tools = Vec::new();
    let mut errors = NormalizeProblems::new();
    for (p, page) in pages.iter().enumerate() {
        match ToolsPage::from_value(page) {
            Ok(page) => tools.extend(page.tools),
            Err(problems) => {
                let base = pointer::index("/pages", p);
                errors.extend(problems.into_iter().map(|mut problem| {
                    problem.path.insert_str(0, &base);
                    problem
                }));
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    normalize_tools(&tools, fallback)
}

/// One entry of the JSON array `toolmock normalize` and `toolmock discover`
/// print: `{"contract", "contract_hash"}`, plus for discovered operations
/// `status`, `output_schema_source` and `hints`. An operation that
/// `needs_output_schema` has no hash and its `contract` has no `output_schema`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContractEntry {
    /// `ready` or `needs_output_schema` (absent for platform operations, always ready).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<DiscoveryStatus>,
    /// The contract in docs/spec.md §2's form (without `output_schema` when there is none).
    pub contract: Value,
    /// The contract hash, when the contract is complete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contract_hash: Option<ContractHash>,
    /// Where the output schema came from (discovered operations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema_source: Option<OutputSchemaSource>,
    /// Untrusted hints (discovered operations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hints: Option<ToolHints>,
}

impl ContractEntry {
    /// The entry of a complete contract (a platform operation).
    pub fn of_contract(
        contract: &OperationContract,
    ) -> Result<Self, toolmock_contract::ContractError> {
        let hash = contract.hash()?;
        Ok(ContractEntry {
            status: None,
            contract: contract_value(contract),
            contract_hash: Some(hash),
            output_schema_source: None,
            hints: None,
        })
    }

    /// The entry of a discovered operation.
    pub fn of_discovered(
        op: &DiscoveredOperation,
    ) -> Result<Self, toolmock_contract::ContractError> {
        let (contract, contract_hash) = match op.contract() {
            Some(contract) => {
                let hash = contract.hash()?;
                (contract_value(&contract), Some(hash))
            }
            None => {
                let mut map = Map::new();
                map.insert(
                    "operation".into(),
                    serde_json::json!({"source": op.operation.source.as_str(), "name": op.operation.name}),
                );
                map.insert("description".into(), Value::String(op.description.clone()));
                map.insert("input_schema".into(), op.input_schema.clone());
                (Value::Object(map), None)
            }
        };
        Ok(ContractEntry {
            status: Some(op.status()),
            contract,
            contract_hash,
            output_schema_source: op.output.as_ref().map(|(_, source)| *source),
            hints: (!op.hints.is_empty()).then(|| op.hints.clone()),
        })
    }
}

/// A contract as JSON (docs/spec.md §2's form).
pub fn contract_value(contract: &OperationContract) -> Value {
    serde_json::json!({
        "operation": {"source": contract.operation.source.as_str(), "name": contract.operation.name},
        "description": contract.description,
        "input_schema": contract.input_schema,
        "output_schema": contract.output_schema,
    })
}
