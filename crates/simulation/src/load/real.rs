//! Real-tools runs (`mode: real_tools`): the real handler of each of a
//! simulation's operations, and the check that refuses to start one with an
//! operation or an effect node nothing can execute for real.
//!
//! An operation's handler is its `endpoint` (a custom operation: a `POST`
//! of the arguments), else its tool's `server` (`tools/call` on that MCP
//! server); a platform operation, a library tool's and an operation that
//! names neither have none. An `http_request` effect node is executed with
//! its `config.url`; `db_write` and `email` nodes have no handler. Pure:
//! this module only reads the document; the handlers themselves are an
//! adapter's (`toolmock_discovery::RealExecutor`).

use super::{LoadedSimulation, LoadedTool, Loader};
use crate::document::{DriverDoc, SimulationDocument, ToolFrom};
use crate::problem::LoadCode;
use std::collections::BTreeMap;
use toolmock_contract::pointer;
use toolmock_runtime::model::{EffectKind, NodeDoc, RealHandler, ToolKind};

/// Every operation's real handler, by tool and runtime operation name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RealHandlers {
    /// (tool, operation) → handler.
    pub operations: BTreeMap<(String, String), RealHandler>,
}

/// One operation or node without a real handler: where, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Unhandled {
    at: String,
    message: String,
}

impl Loader {
    /// A `real_tools` document: one `no_real_handler` problem for each
    /// operation and effect node without a real handler.
    pub(super) fn check_real_handlers(
        &mut self,
        document: &SimulationDocument,
        tools: &[LoadedTool],
    ) {
        for unhandled in handlers(document, tools).1 {
            self.problem(unhandled.at, LoadCode::NoRealHandler, unhandled.message);
        }
        // An outside agent's (or an agent service's) calls come through the
        // API's attempt endpoints (MCP and tool-call), which only ever
        // answer with the pinned mocks: such a case in a real-tools run
        // would silently execute nothing real, so the start is refused.
        for (c, case) in document.cases.iter().enumerate() {
            let driver = match case.driver {
                DriverDoc::External => "external",
                DriverDoc::Http { .. } => "http",
                DriverDoc::Scripted { .. } | DriverDoc::Model { .. } => continue,
            };
            self.problem(
                pointer::push(&pointer::push(&pointer::index("/cases", c), "driver"), "type"),
                LoadCode::RealToolsThroughApi,
                format!(
                    "case {:?} has an {driver} driver: its agent calls through the API's attempt endpoints, which answer with the pinned mocks only, so a real_tools run cannot execute its calls for real (use a scripted or model driver, or mode sandbox)",
                    case.name
                ),
            );
        }
    }
}

/// The handlers of `simulation`'s operations, and everything that has none
/// (every one named). Effect nodes are checked too; an `http_request`
/// node's `config.url` must be an `http(s)://` string.
fn handlers(document: &SimulationDocument, tools: &[LoadedTool]) -> (RealHandlers, Vec<Unhandled>) {
    let mut found = RealHandlers::default();
    let mut missing = Vec::new();
    for tool in tools {
        let spec = &document.tools[tool.index];
        let at = pointer::index("/tools", tool.index);
        for (position, op) in tool.operations.iter().enumerate() {
            let name = &op.operation.name;
            if tool.kind == ToolKind::Platform {
                missing.push(Unhandled {
                    at: at.clone(),
                    message: format!(
                        "{}/{name} is a platform operation: nothing executes it for real",
                        tool.name
                    ),
                });
                continue;
            }
            let endpoint = (spec.from == ToolFrom::Custom)
                .then(|| spec.operations.as_ref()?.get(position)?.endpoint.clone())
                .flatten();
            let handler = match (endpoint, &spec.server) {
                (Some(url), _) => RealHandler::Http { url },
                (None, Some(server)) => RealHandler::Mcp {
                    url: server.url.clone(),
                },
                (None, None) => {
                    let at = if spec.from == ToolFrom::Custom {
                        pointer::index(&pointer::push(&at, "operations"), position)
                    } else {
                        at.clone()
                    };
                    missing.push(Unhandled {
                        at,
                        message: format!(
                            "{}/{name} has no real handler: give the operation an `endpoint` or its tool a `server`",
                            tool.name
                        ),
                    });
                    continue;
                }
            };
            found
                .operations
                .insert((tool.name.clone(), name.clone()), handler);
        }
    }
    for (i, spec) in document.tools.iter().enumerate() {
        if spec.from == ToolFrom::Library {
            missing.push(Unhandled {
                at: pointer::index("/tools", i),
                message: format!(
                    "{} is a library tool: its operations have no real handler here",
                    spec.name
                ),
            });
        }
    }
    missing.extend(effect_nodes(document));
    (found, missing)
}

fn effect_nodes(document: &SimulationDocument) -> Vec<Unhandled> {
    let mut missing = Vec::new();
    for (w, workflow) in document.agent.workflows.iter().enumerate() {
        for (n, node) in workflow.nodes.iter().enumerate() {
            let NodeDoc::Effect {
                id, effect, config, ..
            } = node
            else {
                continue;
            };
            let at = pointer::index(
                &pointer::push(&pointer::index("/agent/workflows", w), "nodes"),
                n,
            );
            let message = match effect {
                EffectKind::HttpRequest => match config.get("url").and_then(|u| u.as_str()) {
                    Some(url) if url.starts_with("http://") || url.starts_with("https://") => {
                        continue;
                    }
                    _ => format!(
                        "workflow {}, node {id}: an http_request node needs `config.url`, an http:// or https:// URL",
                        workflow.name
                    ),
                },
                other => format!(
                    "workflow {}, node {id}: nothing executes {} effects for real",
                    workflow.name,
                    other.as_str()
                ),
            };
            missing.push(Unhandled { at, message });
        }
    }
    missing
}

/// The real handlers of a loaded `real_tools` simulation's operations (the
/// loader has refused one where any is missing).
pub fn real_handlers(simulation: &LoadedSimulation) -> RealHandlers {
    handlers(&simulation.document, &simulation.tools).0
}
