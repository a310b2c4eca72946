//! A start's refusals as problems pointing into the simulation file.

use crate::load::LoadedSimulation;
use crate::problem::{FileProblem, LoadCode};
use toolmock_contract::pointer;
use toolmock_runtime::error::StartProblem;

/// Where in the file the definition of `tool`/`operation` is (or would be).
pub(crate) fn definition_at(loaded: &LoadedSimulation, tool: &str, operation: &str) -> String {
    match loaded.tools.iter().find(|t| t.name == tool) {
        Some(t) => {
            let at = pointer::index("/tools", t.index);
            if loaded.document.tools[t.index]
                .definitions
                .contains_key(operation)
            {
                pointer::push(&pointer::push(&at, "definitions"), operation)
            } else {
                pointer::push(&at, "definitions")
            }
        }
        None => "/tools".into(),
    }
}

/// Start refusals as problems pointing into the simulation file.
pub fn start_problems(loaded: &LoadedSimulation, refused: &[StartProblem]) -> Vec<FileProblem> {
    let problem = |path: String, code: &'static str, message: String| FileProblem {
        file: loaded.file.clone(),
        path,
        code,
        message,
    };
    let workflow_at = |workflow: &str| {
        loaded
            .document
            .agent
            .workflows
            .iter()
            .position(|w| w.name == workflow)
            .map_or_else(
                || "/agent/workflows".to_owned(),
                |i| pointer::index("/agent/workflows", i),
            )
    };
    refused
        .iter()
        .map(|p| match p {
            StartProblem::Incomplete {
                tool,
                operation,
                status,
                message,
            } => problem(
                definition_at(loaded, tool, operation),
                status.as_str(),
                format!("{tool}/{operation} is {status}: {message}"),
            ),
            // A key of a shared fixture given again, by another fixture
            // (pointing at that one) or by a definition (pointing at it).
            StartProblem::StateConflict { key, first, second } if first.starts_with("/fixtures") => {
                let at = if second.starts_with("/fixtures") {
                    second.clone()
                } else {
                    let (tool, rest) = second.split_once('/').unwrap_or((second, ""));
                    let operation = rest.split('@').next().unwrap_or_default();
                    pointer::push(&definition_at(loaded, tool, operation), "initial_state")
                };
                problem(
                    at,
                    p.code(),
                    format!(
                        "state key {key:?} is given by both {first} and {second}; a shared fixture's keys come from it alone"
                    ),
                )
            }
            StartProblem::StateConflict { key, first, second } => {
                let (tool, rest) = second.split_once('/').unwrap_or((second, ""));
                let operation = rest.split('@').next().unwrap_or_default();
                problem(
                    definition_at(loaded, tool, operation),
                    p.code(),
                    format!("initial_state key {key:?} differs between {first} and {second}"),
                )
            }
            StartProblem::EffectNode {
                workflow,
                node,
                effect,
            } => {
                let w = workflow_at(workflow);
                let at = loaded
                    .document
                    .agent
                    .workflows
                    .iter()
                    .find(|x| &x.name == workflow)
                    .and_then(|x| x.nodes.iter().position(|n| n.id() == node))
                    .map_or(w.clone(), |n| pointer::index(&pointer::push(&w, "nodes"), n));
                problem(
                    at,
                    p.code(),
                    format!(
                        "node {node} of workflow {workflow} causes an effect ({effect}) without the dispatcher; a sandbox run refuses it"
                    ),
                )
            }
            StartProblem::UnknownWorkflow { workflow } => problem(
                "/agent".to_owned(),
                LoadCode::UnknownWorkflow.as_str(),
                format!("the agent has no workflow {workflow:?}"),
            ),
            // The loader refuses cycles before any start; should one still
            // reach the start, it points at the cycle's first workflow.
            StartProblem::WorkflowCycle { cycle } => problem(
                cycle
                    .first()
                    .map_or_else(|| "/agent/workflows".to_owned(), |w| workflow_at(w)),
                LoadCode::WorkflowCycle.as_str(),
                format!("workflows call each other in a cycle: {}", cycle.join(" -> ")),
            ),
            other => problem(String::new(), other.code(), format!("{other:?}")),
        })
        .collect()
}
