//! What `tools/list` shows: the agent's directly callable operations, each
//! with exactly its pinned contract, and its workflows called as tools.

use crate::error::ServeError;
use rmcp::model::{JsonObject, Tool};
use serde_json::{Map, Value, json};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use toolmock_runtime::model::{PinRecord, PinTarget, WorkflowDoc};

/// What an MCP tool name calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// An operation of a tool, through the dispatcher.
    Operation {
        /// The tool's name in the simulation.
        tool: String,
        /// The operation's runtime name.
        operation: String,
    },
    /// A workflow of the agent, run by the workflow engine (its tool nodes
    /// go through the dispatcher).
    Workflow {
        /// The workflow's name.
        name: String,
    },
    /// The case's simulated user: the agent says something and hears the
    /// user's reply (docs/mcp.md, "A simulated user over MCP").
    AskUser,
}

/// The MCP tool through which an agent talks with a case's simulated user.
pub const ASK_USER: &str = "ask_user";

/// The served tools: the `tools/list` answer and the name → target table.
#[derive(Debug, Clone)]
pub struct ServedTools {
    tools: Arc<Vec<Tool>>,
    targets: HashMap<String, Target>,
}

/// A JSON Schema as MCP carries it: an object. A boolean schema becomes its
/// object form (`true` → `{}`, `false` → `{"not": {}}`), which validates the
/// same values.
fn schema_object(schema: &Value) -> JsonObject {
    match schema {
        Value::Object(map) => map.clone(),
        Value::Bool(false) => {
            let mut map = Map::new();
            map.insert("not".into(), json!({}));
            map
        }
        _ => Map::new(),
    }
}

impl ServedTools {
    /// The tools of an agent that calls `direct` (tool and workflow names,
    /// in its order) with these `pins` (every reachable operation) and
    /// `workflows`. An operation is listed under its runtime name with its
    /// pinned contract's description and schemas; an operation left unpinned
    /// (`allow_incomplete`) is listed with an open object input, and its
    /// calls fail closed in the dispatcher (`missing_definition`). Two
    /// listed tools with one name are refused (`duplicate_tool_name`).
    pub fn new(
        direct: &[String],
        pins: &[PinRecord],
        workflows: &[WorkflowDoc],
    ) -> Result<Self, ServeError> {
        let mut tools = Vec::new();
        let mut targets = HashMap::new();
        let mut add = |tool: Tool, target: Target| -> Result<(), ServeError> {
            let name = tool.name.to_string();
            if let Some(first) = targets.insert(name.clone(), target.clone()) {
                return Err(ServeError::DuplicateToolName {
                    name,
                    first: describe(&first),
                    second: describe(&target),
                });
            }
            tools.push(tool);
            Ok(())
        };
        for name in direct {
            if let Some(workflow) = workflows.iter().find(|w| &w.name == name) {
                let mut input = Map::new();
                input.insert("type".into(), json!("object"));
                let mut tool = Tool::new(
                    Cow::Owned(workflow.name.clone()),
                    Cow::Owned(workflow.description.clone()),
                    Arc::new(input),
                );
                if workflow.description.is_empty() {
                    tool.description = None;
                }
                add(
                    tool,
                    Target::Workflow {
                        name: workflow.name.clone(),
                    },
                )?;
                continue;
            }
            for pin in pins.iter().filter(|p| &p.tool == name) {
                let tool = match &pin.pin {
                    PinTarget::Pinned { contract, .. } => {
                        let mut tool = Tool::new(
                            Cow::Owned(contract.operation.name.clone()),
                            Cow::Owned(contract.description.clone()),
                            Arc::new(schema_object(&contract.input_schema)),
                        );
                        if contract.description.is_empty() {
                            tool.description = None;
                        }
                        tool.output_schema = Some(Arc::new(schema_object(&contract.output_schema)));
                        tool
                    }
                    PinTarget::Unpinned { reason } => {
                        let mut input = Map::new();
                        input.insert("type".into(), json!("object"));
                        Tool::new(
                            Cow::Owned(pin.operation.clone()),
                            Cow::Owned(format!(
                                "(not pinned: {}; every call fails closed)",
                                reason.as_str()
                            )),
                            Arc::new(input),
                        )
                    }
                };
                add(
                    tool,
                    Target::Operation {
                        tool: pin.tool.clone(),
                        operation: pin.operation.clone(),
                    },
                )?;
            }
        }
        Ok(Self {
            tools: Arc::new(tools),
            targets,
        })
    }

    /// With [`ASK_USER`] listed last: the served case has a simulated user.
    /// An operation or workflow of that name is refused
    /// (`duplicate_tool_name`).
    pub fn with_ask_user(mut self) -> Result<Self, ServeError> {
        if let Some(first) = self.targets.get(ASK_USER) {
            return Err(ServeError::DuplicateToolName {
                name: ASK_USER.into(),
                first: describe(first),
                second: describe(&Target::AskUser),
            });
        }
        let input = json!({
            "type": "object",
            "properties": {"message": {"type": "string",
                "description": "What you say to the user; leave it out to hear the user's first message."}},
            "additionalProperties": false
        });
        let tool = Tool::new(
            Cow::Borrowed(ASK_USER),
            Cow::Borrowed(
                "Say something to the user and get their reply. The answer is {\"reply\": TEXT}; when the user ends the conversation it also has \"ended\": true (and the user's \"stop\" marker), and you should stop.",
            ),
            Arc::new(schema_object(&input)),
        );
        let mut tools = self.tools.as_ref().clone();
        tools.push(tool);
        self.tools = Arc::new(tools);
        self.targets.insert(ASK_USER.into(), Target::AskUser);
        Ok(self)
    }

    /// The `tools/list` answer, in the agent's order.
    pub fn list(&self) -> &[Tool] {
        &self.tools
    }

    /// What `name` calls, if it is listed.
    pub fn target(&self, name: &str) -> Option<&Target> {
        self.targets.get(name)
    }
}

fn describe(target: &Target) -> String {
    match target {
        Target::Operation { tool, operation } => format!("{tool}/{operation}"),
        Target::Workflow { name } => format!("workflow {name}"),
        Target::AskUser => "the simulated user's ask_user".to_owned(),
    }
}
