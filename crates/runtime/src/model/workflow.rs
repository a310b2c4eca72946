//! The workflow document: nodes with real control flow.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// A workflow: control flow that stays real, whose tool nodes go through the
/// dispatcher with the calling attempt's capability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowDoc {
    /// Unique per agent; the name the agent (or another workflow) calls it by.
    pub name: String,
    /// For people and drivers; no meaning.
    #[serde(default)]
    pub description: String,
    /// The node to start at (default: the first node).
    #[serde(default)]
    pub start: Option<String>,
    /// The bound on node executions of one run (default
    /// [`WorkflowDoc::DEFAULT_MAX_STEPS`]);
    /// exceeding it ends the attempt as `harness_error`.
    #[serde(default)]
    pub max_steps: Option<u32>,
    /// The nodes.
    pub nodes: Vec<NodeDoc>,
}

impl WorkflowDoc {
    /// The default bound on node executions of one workflow run (nested runs
    /// count towards their caller's bound too).
    pub const DEFAULT_MAX_STEPS: u32 = 1000;

    /// The bound on node executions of one run of this workflow.
    pub fn step_limit(&self) -> u32 {
        self.max_steps.unwrap_or(Self::DEFAULT_MAX_STEPS)
    }

    /// The node called `id`.
    pub fn node(&self, id: &str) -> Option<&NodeDoc> {
        self.nodes.iter().find(|n| n.id() == id)
    }

    /// The id of the first node to run.
    pub fn start_node(&self) -> Option<&str> {
        self.start
            .as_deref()
            .or_else(|| self.nodes.first().map(NodeDoc::id))
    }

    /// The workflows its nodes call directly.
    pub fn called_workflows(&self) -> impl Iterator<Item = &str> {
        self.nodes.iter().filter_map(|n| match n {
            NodeDoc::Tool {
                workflow: Some(w), ..
            } => Some(w.as_str()),
            _ => None,
        })
    }
}

/// One node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum NodeDoc {
    /// Calls a tool operation (`tool` + `operation`) or a nested workflow
    /// (`workflow`) through the dispatcher; its output is the result.
    Tool {
        /// Unique in its workflow.
        id: String,
        /// The tool's name (with `operation`).
        #[serde(default)]
        tool: Option<String>,
        /// The operation's runtime name.
        #[serde(default)]
        operation: Option<String>,
        /// A nested workflow's name (instead of `tool` and `operation`).
        #[serde(default)]
        workflow: Option<String>,
        /// The arguments; `{"$input": P}`, `{"$node": "ID.P"}` and
        /// `{"$literal": V}` are typed references.
        #[serde(default = "empty_object")]
        arguments: Value,
        /// The node to run next (none: the workflow returns `null`).
        #[serde(default)]
        next: Option<String>,
        /// Where an error of this call goes instead of failing the workflow;
        /// the error is then this node's output as `{"error": {class, code, message}}`.
        #[serde(default)]
        catch: Option<String>,
    },
    /// Goes to `then` when every condition holds, else to `else`.
    Branch {
        /// Unique in its workflow.
        id: String,
        /// Conditions in the language of mock rules, over `input` and `nodes`.
        when: Vec<Condition>,
        /// The node when all hold.
        then: String,
        /// The node otherwise.
        #[serde(rename = "else")]
        otherwise: String,
    },
    /// Ends the workflow with a value built from references.
    Return {
        /// Unique in its workflow.
        id: String,
        /// The workflow's result.
        #[serde(default)]
        value: Value,
    },
    /// An effect that bypasses the dispatcher: refused by a sandbox start.
    Effect {
        /// Unique in its workflow.
        id: String,
        /// What kind of effect.
        effect: EffectKind,
        /// Opaque configuration of the real handler.
        #[serde(default)]
        config: Value,
        /// The node to run next.
        #[serde(default)]
        next: Option<String>,
    },
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

impl NodeDoc {
    /// The node's id.
    pub fn id(&self) -> &str {
        match self {
            NodeDoc::Tool { id, .. }
            | NodeDoc::Branch { id, .. }
            | NodeDoc::Return { id, .. }
            | NodeDoc::Effect { id, .. } => id,
        }
    }

    /// The nodes it may go to next, with the field naming each.
    pub fn successors(&self) -> Vec<(&'static str, &str)> {
        match self {
            NodeDoc::Tool { next, catch, .. } => next
                .iter()
                .map(|n| ("next", n.as_str()))
                .chain(catch.iter().map(|c| ("catch", c.as_str())))
                .collect(),
            NodeDoc::Branch {
                then, otherwise, ..
            } => vec![("then", then.as_str()), ("else", otherwise.as_str())],
            NodeDoc::Return { .. } => vec![],
            NodeDoc::Effect { next, .. } => next.iter().map(|n| ("next", n.as_str())).collect(),
        }
    }
}

/// An effect kind (docs/spec.md §8: refused by a sandbox start, naming each node).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectKind {
    /// An HTTP request.
    HttpRequest,
    /// A database write.
    DbWrite,
    /// An email.
    Email,
}

impl EffectKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            EffectKind::HttpRequest => "http_request",
            EffectKind::DbWrite => "db_write",
            EffectKind::Email => "email",
        }
    }
}

/// A branch condition: docs/spec.md §5's language with sources `input` (the
/// workflow's input) and `nodes` (the outputs so far, by node id). Read
/// from a workflow document only; its parts are read through its methods.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    /// `input` or `nodes`.
    source: ConditionSource,
    /// A docs/spec.md §5 path; for `nodes` its first segment is a node id.
    path: String,
    /// `eq`, `ne`, `in` or `exists`.
    op: ConditionOp,
    /// A literal.
    value: Value,
}

/// Where a condition reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ConditionSource {
    /// The workflow's input.
    Input,
    /// The outputs of the nodes run so far, by node id.
    Nodes,
}

/// A condition operator (docs/spec.md §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ConditionOp {
    /// Deep equality.
    Eq,
    /// Not `eq`.
    Ne,
    /// Equal to one element of the array `value`.
    In,
    /// Whether the path resolves equals the boolean `value`.
    Exists,
}

impl Condition {
    /// The docs/spec.md §5 path it reads; when it [reads the nodes' outputs](Self::reads_nodes)
    /// its first segment is a node id.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether it reads the outputs of the nodes run so far (by node id)
    /// rather than the workflow's input.
    pub fn reads_nodes(&self) -> bool {
        self.source == ConditionSource::Nodes
    }

    /// Whether the condition holds, given the value its path resolved to.
    pub fn holds(&self, found: Option<&Value>) -> bool {
        use toolmock_evaluator::json_equal;
        match self.op {
            ConditionOp::Eq => found.is_some_and(|v| json_equal(v, &self.value)),
            ConditionOp::Ne => !found.is_some_and(|v| json_equal(v, &self.value)),
            ConditionOp::In => match (&self.value, found) {
                (Value::Array(items), Some(v)) => items.iter().any(|i| json_equal(i, v)),
                _ => false,
            },
            ConditionOp::Exists => self.value.as_bool() == Some(found.is_some()),
        }
    }
}

impl WorkflowDoc {
    /// Every cycle of workflows calling each other, each once: the indexes into
    /// `workflows` along it in call order, without repeating the first at the
    /// end. A workflow calling an unknown workflow is no cycle (that is an
    /// unknown workflow).
    pub fn cycles(workflows: &[WorkflowDoc]) -> Vec<Vec<usize>> {
        fn visit(
            i: usize,
            workflows: &[WorkflowDoc],
            index: &HashMap<&str, usize>,
            mark: &mut [u8],
            path: &mut Vec<usize>,
            cycles: &mut Vec<Vec<usize>>,
        ) {
            mark[i] = 1;
            path.push(i);
            for callee in workflows[i].called_workflows() {
                let Some(&j) = index.get(callee) else {
                    continue;
                };
                match mark[j] {
                    1 => {
                        let start = path.iter().position(|&p| p == j).unwrap_or(0);
                        cycles.push(path[start..].to_vec());
                    }
                    0 => visit(j, workflows, index, mark, path, cycles),
                    _ => {}
                }
            }
            path.pop();
            mark[i] = 2;
        }
        let index: HashMap<&str, usize> = workflows
            .iter()
            .enumerate()
            .map(|(i, w)| (w.name.as_str(), i))
            .collect();
        // 0 unvisited, 1 on the current path, 2 done.
        let mut mark = vec![0u8; workflows.len()];
        let mut cycles = Vec::new();
        for i in 0..workflows.len() {
            if mark[i] == 0 {
                visit(
                    i,
                    workflows,
                    &index,
                    &mut mark,
                    &mut Vec::new(),
                    &mut cycles,
                );
            }
        }
        let mut reported = HashSet::new();
        let mut named = Vec::new();
        for cycle in cycles {
            let Some(first) = cycle.iter().min().copied() else {
                continue;
            };
            if reported.insert(first) {
                named.push(cycle);
            }
        }
        named
    }
}
