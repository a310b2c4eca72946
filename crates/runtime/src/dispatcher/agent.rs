//! The rules an agent obeys before it is stored: the shapes of its tools and
//! workflows, its library tools being the tenant's, and its workflows calling
//! only its own tools (one that did would fail only at call time).

use crate::backend::Catalog;
use crate::error::{AgentCode, AgentRejected};
use crate::model::{AgentSpec, TenantId, ToolRef};
use crate::model::{NodeDoc, WorkflowDoc};
use serde_json::Value;
use toolmock_contract::{Problems, pointer};

impl AgentSpec {
    /// Checks an agent of `tenant` as a caller describes it — its `name`,
    /// its `tools` (library, inline and workflow tools: `ToolRef`s to be)
    /// and its `workflows` (in the documented format: `WorkflowDoc`s to be),
    /// still JSON — and reads its tools and workflows. Every problem is
    /// reported at once, each with a JSON pointer into the agent as
    /// described (`/name`, `/tools/N`, `/workflows/N/nodes/M/tool`, …); the
    /// returned spec has no prompt or guards (they are opaque to toolmock).
    pub async fn check<C: Catalog>(
        catalog: &C,
        tenant: TenantId,
        name: &str,
        tools: &[Value],
        workflows: &[Value],
    ) -> Result<AgentSpec, AgentRejected> {
        let mut problems = Problems::new();
        if name.is_empty() {
            problems.push(AgentCode::InvalidName, "/name", "the agent needs a name");
        }
        let mut refs = Vec::new();
        for (i, value) in tools.iter().enumerate() {
            match serde_json::from_value::<ToolRef>(value.clone()) {
                Ok(tool) => refs.push((i, tool)),
                Err(e) => problems.push(
                    AgentCode::MalformedTool,
                    pointer::index("/tools", i),
                    e.to_string(),
                ),
            }
        }
        let mut docs: Vec<WorkflowDoc> = Vec::new();
        for (i, value) in workflows.iter().enumerate() {
            match serde_json::from_value(value.clone()) {
                Ok(workflow) => docs.push(workflow),
                Err(e) => problems.push(
                    AgentCode::MalformedWorkflow,
                    pointer::index("/workflows", i),
                    e.to_string(),
                ),
            }
        }
        // The names the agent's calls can use: its tools' and its workflows'.
        let mut names: Vec<String> = Vec::new();
        let mut names_known = true;
        for (i, tool) in &refs {
            match tool {
                ToolRef::Library { tool } => match catalog.tool(tenant, *tool).await {
                    Ok(found) => names.push(found.name),
                    Err(e) if e.is_not_found() => {
                        names_known = false;
                        problems.push(
                            AgentCode::UnknownTool,
                            pointer::push(&pointer::index("/tools", *i), "tool"),
                            format!("the tenant has no library tool {tool}"),
                        );
                    }
                    Err(e) => return Err(e.into()),
                },
                ToolRef::Inline(inline) => names.push(inline.name.clone()),
                ToolRef::Workflow { workflow } => names.push(workflow.clone()),
            }
        }
        // With an unknown library tool its name is unknown too: that one
        // problem is enough.
        for (w, workflow) in docs.iter().enumerate().filter(|_| names_known) {
            for (n, node) in workflow.nodes.iter().enumerate() {
                if let NodeDoc::Tool {
                    tool: Some(tool), ..
                } = node
                    && !names.contains(tool)
                {
                    problems.push(
                    AgentCode::UnknownTool,
                    format!("/workflows/{w}/nodes/{n}/tool"),
                    format!(
                        "the agent has no tool {tool:?}; a workflow calls only the agent's tools"
                    ),
                );
                }
            }
        }
        if !problems.is_empty() {
            return Err(AgentRejected::Invalid(problems));
        }
        Ok(AgentSpec {
            tools: refs.into_iter().map(|(_, tool)| tool).collect(),
            workflows: docs,
            prompt: String::new(),
            guards: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryStore;
    use crate::model::{NewTool, ToolId, ToolKind};
    use serde_json::json;

    fn listed(rejected: AgentRejected) -> Vec<(&'static str, String)> {
        let AgentRejected::Invalid(problems) = rejected else {
            panic!("not a rule: {rejected}");
        };
        problems
            .into_iter()
            .map(|p| (p.code.as_str(), p.path))
            .collect()
    }

    #[tokio::test]
    async fn every_problem_of_an_agent_is_reported_at_its_pointer() {
        let store = MemoryStore::new();
        let tenant = TenantId(uuid::Uuid::new_v4());
        let missing = ToolId(uuid::Uuid::new_v4());
        let tools = [
            json!({"type": "library", "tool": missing}),
            json!({"type": "teleport"}),
        ];
        let workflows = [json!({"name": "w", "nodes": 3})];
        let rejected = AgentSpec::check(&store, tenant, "", &tools, &workflows)
            .await
            .unwrap_err();
        assert_eq!(
            listed(rejected),
            [
                ("invalid_name", "/name".to_owned()),
                ("malformed_tool", "/tools/1".to_owned()),
                ("malformed_workflow", "/workflows/0".to_owned()),
                ("unknown_tool", "/tools/0/tool".to_owned()),
            ]
        );
    }

    #[tokio::test]
    async fn a_workflow_calls_only_the_agents_tools() {
        let store = MemoryStore::new();
        let tenant = store.create_tenant("acme").await.unwrap();
        let crm = store
            .create_tool(
                tenant,
                &NewTool {
                    name: "crm".into(),
                    kind: ToolKind::Custom,
                    source_config: json!({}),
                    output_schema: None,
                },
            )
            .await
            .unwrap();
        let tools = [json!({"type": "library", "tool": crm})];
        let workflow = |tool: &str| {
            json!({"name": "w", "nodes": [
                {"id": "call", "type": "tool", "tool": tool, "operation": "find"}]})
        };
        let good = [workflow("crm")];
        let spec = AgentSpec::check(&store, tenant, "agent", &tools, &good)
            .await
            .unwrap();
        assert_eq!((spec.tools.len(), spec.workflows.len()), (1, 1));
        let bad = [workflow("billing")];
        let rejected = AgentSpec::check(&store, tenant, "agent", &tools, &bad)
            .await
            .unwrap_err();
        assert_eq!(
            listed(rejected),
            [("unknown_tool", "/workflows/0/nodes/0/tool".to_owned())]
        );
    }
}
