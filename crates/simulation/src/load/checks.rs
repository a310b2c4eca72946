//! The document's static checks: calls, workflows and their cycles, cases,
//! steps and their typed references — each problem at its pointer.

use super::{Files, KnownTool, Loader};
use crate::document::{CallMatcher, CaseDoc, DriverDoc, StepExpect, TrajectoryExpect, UserDoc};
use crate::problem::LoadCode;
use crate::reference::{BadReference, FoundReference, Scope, resolve_path, scan, split_head};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use toolmock_contract::pointer;
use toolmock_runtime::model::AttemptOutcome;
use toolmock_runtime::model::{NodeDoc, WorkflowDoc};

impl Loader {
    pub(super) fn bad_references(&mut self, bad: Vec<BadReference>) {
        for b in bad {
            self.problem(b.at, LoadCode::InvalidReference, b.message);
        }
    }

    pub(super) fn check_call(
        &mut self,
        at: &str,
        (tool, operation, workflow): (Option<&str>, Option<&str>, Option<&str>),
        known: &HashMap<String, KnownTool>,
        workflows: &HashMap<&str, usize>,
        tolerate_unknown: bool,
        code_for_form: LoadCode,
    ) {
        match (tool, operation, workflow) {
            (None, None, Some(w)) => {
                if !workflows.contains_key(w) && !tolerate_unknown {
                    self.problem(
                        pointer::push(at, "workflow"),
                        LoadCode::UnknownWorkflow,
                        format!("the agent has no workflow {w:?}"),
                    );
                }
            }
            (Some(t), Some(o), None) => {
                if tolerate_unknown {
                    return;
                }
                match known.get(t) {
                    None => self.problem(
                        pointer::push(at, "tool"),
                        LoadCode::UnknownTool,
                        if workflows.contains_key(t) {
                            format!("{t:?} is a workflow; call it with \"workflow\"")
                        } else {
                            format!("no tool is called {t:?}")
                        },
                    ),
                    Some(KnownTool {
                        operations: Some(ops),
                    }) if !ops.contains_key(o) => self.problem(
                        pointer::push(at, "operation"),
                        LoadCode::UnknownTool,
                        format!(
                            "tool {t:?} has no operation {o:?}; it has {}",
                            ops.keys().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    ),
                    Some(_) => {}
                }
            }
            _ => self.problem(
                at,
                code_for_form,
                "a call names either \"tool\" and \"operation\", or \"workflow\"",
            ),
        }
    }

    pub(super) fn check_workflow(
        &mut self,
        workflow: &WorkflowDoc,
        at: &str,
        known: &HashMap<String, KnownTool>,
        workflows: &HashMap<&str, usize>,
    ) {
        let mut ids = HashSet::new();
        for (n, node) in workflow.nodes.iter().enumerate() {
            if !ids.insert(node.id()) {
                self.problem(
                    pointer::push(&pointer::index(&pointer::push(at, "nodes"), n), "id"),
                    LoadCode::DuplicateName,
                    format!("another node is already called {:?}", node.id()),
                );
            }
        }
        if let Some(start) = &workflow.start
            && !ids.contains(start.as_str())
        {
            self.problem(
                pointer::push(at, "start"),
                LoadCode::UnknownNode,
                format!("workflow {:?} has no node {start:?}", workflow.name),
            );
        }
        for (n, node) in workflow.nodes.iter().enumerate() {
            let here = pointer::index(&pointer::push(at, "nodes"), n);
            for (field, target) in node.successors() {
                if !ids.contains(target) {
                    self.problem(
                        pointer::push(&here, field),
                        LoadCode::UnknownNode,
                        format!("workflow {:?} has no node {target:?}", workflow.name),
                    );
                }
            }
            let (mut found, mut bad) = (Vec::new(), Vec::new());
            match node {
                NodeDoc::Tool {
                    tool,
                    operation,
                    workflow: nested,
                    arguments,
                    ..
                } => {
                    self.check_call(
                        &here,
                        (tool.as_deref(), operation.as_deref(), nested.as_deref()),
                        known,
                        workflows,
                        false,
                        LoadCode::InvalidNode,
                    );
                    scan(
                        arguments,
                        Scope::Workflow,
                        &pointer::push(&here, "arguments"),
                        &mut found,
                        &mut bad,
                    );
                }
                NodeDoc::Return { value, .. } => {
                    scan(
                        value,
                        Scope::Workflow,
                        &pointer::push(&here, "value"),
                        &mut found,
                        &mut bad,
                    );
                }
                NodeDoc::Branch { when, .. } => {
                    for (k, c) in when.iter().enumerate() {
                        if !crate::reference::valid_path(c.path()) {
                            self.problem(
                                pointer::push(
                                    &pointer::index(&pointer::push(&here, "when"), k),
                                    "path",
                                ),
                                LoadCode::InvalidValue,
                                format!("{:?} is not a path", c.path()),
                            );
                        }
                    }
                }
                NodeDoc::Effect { .. } => {}
            }
            self.bad_references(bad);
            for r in found {
                if r.operator == "$node" {
                    let (node, _) = split_head(&r.path);
                    if !ids.contains(node) {
                        self.problem(
                            pointer::push(&r.at, "$node"),
                            LoadCode::UnknownNode,
                            format!("workflow {:?} has no node {node:?}", workflow.name),
                        );
                    }
                }
            }
        }
    }

    pub(super) fn check_cycles(&mut self, workflows: &[WorkflowDoc]) {
        for cycle in WorkflowDoc::cycles(workflows) {
            let first = cycle.iter().min().copied().unwrap_or(0);
            let mut names: Vec<&str> = cycle.iter().map(|&i| workflows[i].name.as_str()).collect();
            names.push(names[0]);
            self.problem(
                pointer::index("/agent/workflows", first),
                LoadCode::WorkflowCycle,
                format!(
                    "workflows call each other in a cycle: {}",
                    names.join(" -> ")
                ),
            );
        }
    }

    pub(super) fn check_case(
        &mut self,
        case: &CaseDoc,
        at: &str,
        known: &HashMap<String, KnownTool>,
        workflows: &HashMap<&str, usize>,
        direct: &HashSet<&str>,
    ) {
        let expects_harness = case.expect.outcome == AttemptOutcome::HarnessError;
        for (v, choice) in case.variants.iter().enumerate() {
            let here = pointer::index(&pointer::push(at, "variants"), v);
            match known.get(&choice.tool) {
                None => self.problem(
                    pointer::push(&here, "tool"),
                    LoadCode::UnknownTool,
                    format!("no tool is called {:?}", choice.tool),
                ),
                Some(KnownTool { operations: None }) => {}
                Some(KnownTool {
                    operations: Some(ops),
                }) => match ops.get(&choice.operation) {
                    None => self.problem(
                        pointer::push(&here, "operation"),
                        LoadCode::UnknownTool,
                        format!(
                            "tool {:?} has no operation {:?}",
                            choice.tool, choice.operation
                        ),
                    ),
                    Some(Some(variants))
                        if !variants.contains(&choice.variant) && !expects_harness =>
                    {
                        self.problem(
                            pointer::push(&here, "variant"),
                            LoadCode::UnknownVariant,
                            format!(
                                "{}/{} has no variant {:?}; it has {} (a case that means to hit unknown_variant expects \"outcome\": \"harness_error\")",
                                choice.tool,
                                choice.operation,
                                choice.variant,
                                variants.join(", ")
                            ),
                        );
                    }
                    Some(_) => {}
                },
            }
        }
        if case.driver == DriverDoc::External && matches!(self.files, Files::Relative(_)) {
            self.problem(
                pointer::push(&pointer::push(at, "driver"), "type"),
                LoadCode::ExternalDriverNotEmbedded,
                "an external driver is played by an agent outside toolmock through the API; toolmock run has nobody to play it (give the case scripted steps)",
            );
        }
        if matches!(case.driver, DriverDoc::Http { .. }) && matches!(self.files, Files::Relative(_))
        {
            self.problem(
                pointer::push(&pointer::push(at, "driver"), "type"),
                LoadCode::ExternalDriverNotEmbedded,
                "an http driver hands the attempt to an agent service that plays it through the API's tool-call endpoint; toolmock run has no such endpoint (start the simulation through the API with a worker)",
            );
        }
        self.check_user(case, at, known, direct);
        if let Some(pattern) = case
            .expect
            .final_answer
            .as_ref()
            .and_then(|f| f.matches.as_ref())
            && let Err(e) = regex::Regex::new(pattern)
        {
            self.problem(
                pointer::push(
                    &pointer::push(&pointer::push(at, "expect"), "final_answer"),
                    "matches",
                ),
                LoadCode::InvalidRegex,
                format!("not a regular expression: {e}"),
            );
        }
        let steps = case.driver.steps();
        let steps_at = pointer::push(&pointer::push(at, "driver"), "steps");
        let mut earlier: HashSet<&str> = HashSet::new();
        let data = Value::Object(case.data.clone());
        for (s, step) in steps.iter().enumerate() {
            let here = pointer::index(&steps_at, s);
            let tolerate = matches!(&step.expect, Some(StepExpect::HarnessError(code)) if code == "unknown_tool");
            self.check_call(
                &here,
                (
                    step.tool.as_deref(),
                    step.operation.as_deref(),
                    step.workflow.as_deref(),
                ),
                known,
                workflows,
                tolerate,
                LoadCode::InvalidValue,
            );
            let name = step.workflow.as_deref().or(step.tool.as_deref());
            if let Some(name) = name
                && !tolerate
                && (known.contains_key(name) || workflows.contains_key(name))
                && !direct.contains(name)
            {
                self.problem(
                    pointer::push(
                        &here,
                        if step.workflow.is_some() {
                            "workflow"
                        } else {
                            "tool"
                        },
                    ),
                    LoadCode::UnknownTool,
                    format!("the agent cannot call {name:?} directly; add it to /agent/tools"),
                );
            }
            let (mut found, mut bad) = (Vec::new(), Vec::new());
            scan(
                &step.arguments,
                Scope::Step,
                &pointer::push(&here, "arguments"),
                &mut found,
                &mut bad,
            );
            for (key, value) in step.repair.iter().flatten() {
                scan(
                    value,
                    Scope::Step,
                    &pointer::push(&pointer::push(&here, "repair"), key),
                    &mut found,
                    &mut bad,
                );
            }
            self.bad_references(bad);
            for r in found {
                self.check_step_reference(&r, &earlier, &data);
            }
            if let Some(id) = &step.id
                && !earlier.insert(id.as_str())
            {
                self.problem(
                    pointer::push(&here, "id"),
                    LoadCode::DuplicateName,
                    format!("another step of this case is already called {id:?}"),
                );
            }
        }
        let trajectory_at = pointer::push(&pointer::push(at, "expect"), "trajectory");
        for (t, expect) in case.expect.trajectory.iter().enumerate() {
            let here = pointer::index(&trajectory_at, t);
            let matchers: Vec<(String, &CallMatcher)> = match expect {
                TrajectoryExpect::Used { call }
                | TrajectoryExpect::NotUsed { call }
                | TrajectoryExpect::Count { call, .. } => {
                    vec![(pointer::push(&here, "call"), call)]
                }
                TrajectoryExpect::Sequence { calls, .. } => calls
                    .iter()
                    .enumerate()
                    .map(|(k, c)| (pointer::index(&pointer::push(&here, "calls"), k), c))
                    .collect(),
            };
            for (m_at, m) in matchers {
                match known.get(&m.tool) {
                    None => self.problem(
                        pointer::push(&m_at, "tool"),
                        LoadCode::UnknownTool,
                        format!(
                            "no tool is called {:?} (trajectories see tool calls; a workflow shows as the calls of its nodes)",
                            m.tool
                        ),
                    ),
                    Some(KnownTool {
                        operations: Some(ops),
                    }) => {
                        if let Some(o) = &m.operation
                            && !ops.contains_key(o)
                        {
                            self.problem(
                                pointer::push(&m_at, "operation"),
                                LoadCode::UnknownTool,
                                format!("tool {:?} has no operation {o:?}", m.tool),
                            );
                        }
                    }
                    Some(_) => {}
                }
            }
        }
    }

    /// A case's simulated user: on a driver that holds a conversation,
    /// with tools of its own; a `model` driver without one needs messages.
    fn check_user(
        &mut self,
        case: &CaseDoc,
        at: &str,
        known: &HashMap<String, KnownTool>,
        direct: &HashSet<&str>,
    ) {
        let Some(UserDoc::Model { tools, .. }) = &case.user else {
            if matches!(&case.driver, DriverDoc::Model { messages, .. } if messages.is_empty()) {
                self.problem(
                    pointer::push(&pointer::push(at, "driver"), "messages"),
                    LoadCode::NoUserTurns,
                    "a model driver needs the user's messages, or a simulated user (the case's \"user\")",
                );
            }
            return;
        };
        let user_at = pointer::push(at, "user");
        if matches!(case.driver, DriverDoc::Scripted { .. }) {
            self.problem(
                user_at.clone(),
                LoadCode::UserNotSupported,
                "a simulated user talks with a model agent (a model driver) or an agent outside toolmock (an external or http driver, through toolmock serve or the API's ask-user); a scripted driver holds no conversation",
            );
        }
        for (t, tool) in tools.iter().enumerate() {
            let here = pointer::index(&pointer::push(&user_at, "tools"), t);
            if !known.contains_key(tool) {
                self.problem(
                    here,
                    LoadCode::UnknownTool,
                    format!("no tool is called {tool:?}"),
                );
            } else if direct.contains(tool.as_str()) {
                self.problem(
                    here,
                    LoadCode::UserToolOfAgent,
                    format!("{tool:?} is the agent's tool too: a tool belongs to the agent or to the user"),
                );
            }
        }
    }

    pub(super) fn check_step_reference(
        &mut self,
        r: &FoundReference,
        earlier: &HashSet<&str>,
        data: &Value,
    ) {
        match r.operator.as_str() {
            "$case" if resolve_path(data, &r.path).is_none() => {
                self.problem(
                    pointer::push(&r.at, "$case"),
                    LoadCode::UnknownCaseData,
                    format!("the case's data has nothing at {:?}", r.path),
                );
            }
            "$step" => {
                let (id, rest) = split_head(&r.path);
                if !earlier.contains(id) {
                    self.problem(
                        pointer::push(&r.at, "$step"),
                        LoadCode::DanglingStepReference,
                        format!("no earlier step has the id {id:?}"),
                    );
                    return;
                }
                let (part, _) = split_head(rest);
                if !matches!(part, "result" | "arguments" | "error") {
                    self.problem(
                        pointer::push(&r.at, "$step"),
                        LoadCode::InvalidReference,
                        format!(
                            "{:?} must continue with result, arguments or error after the step id",
                            r.path
                        ),
                    );
                }
            }
            _ => {}
        }
    }
}
