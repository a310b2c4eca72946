//! Installing a loaded simulation in a backend: its tools (library or
//! inline) with their definitions as revisions, then its agent.

use crate::load::LoadedSimulation;
use crate::problem::FileProblem;
use std::collections::HashMap;
use toolmock_contract::{Problem, pointer};
use toolmock_runtime::backend::{Backend, Catalog};
use toolmock_runtime::dispatcher::Dispatcher;
use toolmock_runtime::error::{IncompleteStatus, SaveRevisionError, StartProblem, StoreError};
use toolmock_runtime::model::NodeDoc;
use toolmock_runtime::model::{AgentId, TenantId, ToolId};
use toolmock_runtime::model::{
    AgentSpec, InlineOperation, InlineTool, NewTool, Provenance, SaveRevision, ToolRef,
};

use super::error::*;

/// What an installed simulation needs to start.
#[derive(Debug, Clone)]
pub struct Installed {
    /// The tenant it was installed in.
    pub tenant: TenantId,
    /// The agent.
    pub agent: AgentId,
    /// Library tool ids by name.
    pub tools: HashMap<String, ToolId>,
}

/// Loads every tool as a library tool with its definitions as revisions
/// (checked against their contracts by the store, as any save is), then
/// creates the agent. Every problem is reported.
pub async fn install<B: Backend>(
    dispatcher: &Dispatcher<B>,
    tenant: TenantId,
    loaded: &LoadedSimulation,
) -> Result<Installed, RunError> {
    let (installed, problems) = install_listing(dispatcher, tenant, loaded).await?;
    if problems.is_empty() {
        Ok(installed)
    } else {
        Err(RunError::Problems(problems))
    }
}

/// [`install`], listing the definitions that fail instead of stopping at
/// them: a failing definition is not saved (its operation stays without a
/// revision), and the agent is created all the same, so that the start can
/// be checked too.
pub(super) async fn install_listing<B: Backend>(
    dispatcher: &Dispatcher<B>,
    tenant: TenantId,
    loaded: &LoadedSimulation,
) -> Result<(Installed, Vec<FileProblem>), RunError> {
    let store = dispatcher.backend();
    let mut problems = Vec::new();
    let mut ids: HashMap<String, ToolId> = HashMap::new();
    for tool in &loaded.tools {
        let id = store
            .create_tool(
                tenant,
                &NewTool {
                    name: tool.name.clone(),
                    kind: tool.kind,
                    source_config: tool.source_config.clone(),
                    output_schema: tool.output_schema.clone(),
                },
            )
            .await?;
        ids.insert(tool.name.clone(), id);
        let mut views = HashMap::new();
        for op in &tool.operations {
            let view = store.upsert_operation(tenant, id, op).await?;
            views.insert(op.operation.name.clone(), view);
        }
        for def in &tool.definitions {
            let Some(view) = views.get(&def.operation) else {
                continue;
            };
            let Some(contract_hash) = view.contract_hash.clone() else {
                problems.push(def.origin.problem(Problem::new(
                    IncompleteStatus::NeedsOutputSchema,
                    "",
                    format!(
                        "{}/{} has no output schema (neither its contract nor the tool's output_schema), so it cannot be mocked",
                        tool.name, def.operation
                    ),
                )));
                continue;
            };
            let saved = store
                .save_revision(
                    tenant,
                    view.id,
                    &SaveRevision {
                        contract_hash,
                        definition: def.definition.clone(),
                        author: "toolmock run".into(),
                        provenance: Provenance::Authored,
                    },
                )
                .await;
            match saved {
                Ok(_) => {}
                Err(SaveRevisionError::InvalidDefinition(diagnostics)) => {
                    problems.extend(diagnostics.into_iter().map(|d| def.origin.problem(d)));
                }
                Err(SaveRevisionError::Store(e)) => return Err(e.into()),
                Err(other) => problems.push(FileProblem {
                    file: def.origin.file.clone(),
                    path: def.origin.path.clone(),
                    code: other.code(),
                    message: other.to_string(),
                }),
            }
        }
    }
    let spec = agent_spec(loaded, |name| {
        ids.get(name)
            .or_else(|| loaded.library.get(name))
            .map(|id| ToolRef::Library { tool: *id })
    });
    let agent = &loaded.document.agent;
    let agent = store.create_agent(tenant, &agent.name, &spec).await?;
    let installed = Installed {
        tenant,
        agent,
        tools: ids,
    };
    Ok((installed, problems))
}

/// The agent of a document: what it calls directly, and the tools only its
/// workflows call, each resolved by `tool` (`None`: a workflow of the agent,
/// or nothing the loader would have let through).
fn agent_spec(loaded: &LoadedSimulation, tool: impl Fn(&str) -> Option<ToolRef>) -> AgentSpec {
    let agent = &loaded.document.agent;
    let workflow_names: Vec<&str> = agent.workflows.iter().map(|w| w.name.as_str()).collect();
    let reference = |name: &str| -> Option<ToolRef> {
        tool(name).or_else(|| {
            workflow_names.contains(&name).then(|| ToolRef::Workflow {
                workflow: name.to_owned(),
            })
        })
    };
    // A workflow's tool node names its tool like the agent's own calls do,
    // so the tools only workflows call are the agent's tools too: the start
    // pins exactly what can be called.
    let mut names: Vec<&str> = agent.tools.iter().map(String::as_str).collect();
    for workflow in &agent.workflows {
        for node in &workflow.nodes {
            if let NodeDoc::Tool {
                tool: Some(tool), ..
            } = node
                && !names.contains(&tool.as_str())
            {
                names.push(tool);
            }
        }
    }
    // A simulated user's tools are called under the attempt's capability
    // too (their calls share its state): the start pins them with the
    // agent's, and only the user is offered them.
    for case in &loaded.document.cases {
        if let Some(crate::document::UserDoc::Model { tools, .. }) = &case.user {
            for tool in tools {
                if !names.contains(&tool.as_str()) {
                    names.push(tool);
                }
            }
        }
    }
    AgentSpec {
        tools: names.into_iter().filter_map(reference).collect(),
        workflows: agent.workflows.clone(),
        prompt: agent.prompt.clone(),
        guards: agent.guards.clone(),
    }
}

/// The document's `from: library` tools that are not the tenant's (another
/// tenant's reads as absent): one `unknown_tool` problem each (the start
/// problem's code: a library tool the agent references does not exist for
/// this tenant), at the tool's `id` in `file`. An API start checks this
/// before it installs anything.
pub async fn unknown_library_tools<C: Catalog>(
    catalog: &C,
    tenant: TenantId,
    loaded: &LoadedSimulation,
    file: &str,
) -> Result<Vec<FileProblem>, StoreError> {
    let mut problems = Vec::new();
    for (index, tool) in loaded.document.tools.iter().enumerate() {
        let Some(id) = loaded.library.get(&tool.name) else {
            continue;
        };
        match catalog.tool(tenant, *id).await {
            Ok(_) => {}
            Err(e) if e.is_not_found() => {
                let unknown = StartProblem::UnknownTool {
                    tool: id.to_string(),
                };
                problems.push(FileProblem {
                    file: file.to_owned(),
                    path: pointer::push(&pointer::index("/tools", index), "id"),
                    code: unknown.code(),
                    message: format!("the tenant has no library tool {id}"),
                });
            }
            Err(e) => return Err(e),
        }
    }
    Ok(problems)
}

/// Creates the document's agent with its own tools as inline tools (each
/// operation carrying its contract and definition, pinned by hash at the
/// start) and its `from: library` tools by id: what `POST /api/simulations`
/// does, so that a start adds no library tools to the tenant's catalog.
/// The definitions are checked by the start, as any inline definition is.
pub async fn install_inline<B: Backend>(
    dispatcher: &Dispatcher<B>,
    tenant: TenantId,
    loaded: &LoadedSimulation,
) -> Result<Installed, RunError> {
    let inline: HashMap<&str, InlineTool> = loaded
        .tools
        .iter()
        .map(|tool| {
            let operations = tool
                .operations
                .iter()
                .map(|op| InlineOperation {
                    name: op.operation.name.clone(),
                    source: op.operation.source,
                    description: op.description.clone(),
                    input_schema: op.input_schema.clone(),
                    output_schema: op
                        .output_schema
                        .clone()
                        .or_else(|| tool.output_schema.clone()),
                    testing: tool
                        .definitions
                        .iter()
                        .find(|d| d.operation == op.operation.name)
                        .map(|d| d.definition.clone()),
                })
                .collect();
            (
                tool.name.as_str(),
                InlineTool {
                    name: tool.name.clone(),
                    operations,
                },
            )
        })
        .collect();
    let spec = agent_spec(loaded, |name| {
        inline
            .get(name)
            .map(|t| ToolRef::Inline(t.clone()))
            .or_else(|| {
                loaded
                    .library
                    .get(name)
                    .map(|id| ToolRef::Library { tool: *id })
            })
    });
    let agent = dispatcher
        .backend()
        .create_agent(tenant, &loaded.document.agent.name, &spec)
        .await?;
    Ok(Installed {
        tenant,
        agent,
        tools: loaded.library.clone(),
    })
}
