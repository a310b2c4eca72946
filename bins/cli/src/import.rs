//! `toolmock import tau2`: a τ²-bench domain's tasks as one simulation file
//! (docs/tau2.md). The expected final database of each task is computed by
//! toolmock itself: the task's expected actions replayed as a scripted case
//! through the same mocks, on the embedded runtime.

use crate::Failure;
use clap::{Args, Subcommand};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolmock_evaluator::{Overlay, Patch};
use toolmock_runtime::backend::Catalog;
use toolmock_simulation::{
    self as simulation, ChatModel, Files, Message, ModelFuture, ModelReply, ModelRequest,
    RunOptions, ToolCallRequest,
};

/// Import a benchmark's tasks as a simulation file.
#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    #[command(subcommand)]
    source: Source,
}

#[derive(Debug, Subcommand)]
enum Source {
    Tau2(Tau2Args),
}

/// Import a τ²-bench domain: its policy as the agent's prompt, its ported
/// mocks as the agent's tools, db.json as the shared fixture, and one case
/// per task whose expected actions use only ported tools, played by a model
/// against a simulated user (docs/tau2.md).
///
/// Example:
///   toolmock import tau2 --domain retail --tasks tasks.json --db db.json \
///       --policy policy.md --mocks fixtures/tau2-retail/mocks --out suite.json --attempts 4
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct Tau2Args {
    /// The domain's name (the tool's name in the suite), e.g. retail.
    #[arg(long, value_name = "NAME")]
    domain: String,
    /// The benchmark's tasks.json.
    #[arg(long, value_name = "FILE")]
    tasks: PathBuf,
    /// The benchmark's db.json (the shared fixture).
    #[arg(long, value_name = "FILE")]
    db: PathBuf,
    /// The benchmark's policy.md (the agent's system prompt).
    #[arg(long, value_name = "FILE")]
    policy: PathBuf,
    /// The folder of ported mock definitions, one NAME.json per tool.
    #[arg(long, value_name = "DIR")]
    mocks: PathBuf,
    /// The tools' contracts (default: contracts.json beside DIR); those of
    /// the ported tools are written into the suite.
    #[arg(long, value_name = "FILE")]
    contracts: Option<PathBuf>,
    /// Where the simulation file is written.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Attempts per case: pass^k over k attempts is the benchmark's pass^k.
    #[arg(long, value_name = "K", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    attempts: u32,
    /// The bound on the agent's model requests per attempt.
    #[arg(long, value_name = "N", default_value_t = 30,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    max_turns: u32,
    /// The bound on the simulated user's messages per attempt.
    #[arg(long, value_name = "N", default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    user_max_turns: u32,
}

/// The agent's instructions around the policy, as the benchmark's own
/// agent gets them.
const AGENT_INSTRUCTION: &str = "You are a customer service agent that helps the user according to the <policy> provided below.\n\
In each turn you can either:\n\
- Send a message to the user.\n\
- Make a tool call.\n\
You cannot do both at the same time.\n\n\
Try to be helpful and always follow the policy. Always make sure you generate valid JSON only.";

pub(crate) fn run(args: &ImportArgs) -> Result<u8, Failure> {
    match &args.source {
        Source::Tau2(args) => tau2(args),
    }
}

fn read_json(path: &Path) -> Result<Value, Failure> {
    let text = std::fs::read(path)
        .map_err(|e| Failure::usage(format!("{}: cannot read: {e}", path.display())))?;
    serde_json::from_slice(&text)
        .map_err(|e| Failure::usage(format!("{}: not JSON: {e}", path.display())))
}

/// `path` as the simulation file at `out` names it: relative to its folder
/// when both are absolute or both relative, else absolute.
fn relative(path: &Path, out: &Path) -> String {
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let (path, base) = (
        absolute(path),
        absolute(out.parent().unwrap_or(Path::new("."))),
    );
    let (mut p, mut b) = (path.components().peekable(), base.components().peekable());
    while let (Some(x), Some(y)) = (p.peek(), b.peek()) {
        if x != y {
            break;
        }
        p.next();
        b.next();
    }
    let mut rel = PathBuf::new();
    for _ in b {
        rel.push("..");
    }
    rel.extend(p);
    rel.display().to_string()
}

/// Indents every non-empty line with a tab, as Python's `textwrap.indent`.
fn indent(text: &str) -> String {
    text.split_inclusive('\n')
        .map(|line| {
            if line.trim().is_empty() {
                line.to_owned()
            } else {
                format!("\t{line}")
            }
        })
        .collect()
}

/// A task's user instructions, written as the benchmark writes them for
/// its user simulator.
fn user_instructions(instructions: &Value) -> String {
    let Value::Object(fields) = instructions else {
        return instructions.as_str().unwrap_or_default().to_owned();
    };
    let text = |key: &str| fields.get(key).and_then(Value::as_str);
    let mut lines = vec![format!("Domain: {}", text("domain").unwrap_or_default())];
    lines.push(format!(
        "Reason for call:\n{}",
        indent(text("reason_for_call").unwrap_or_default())
    ));
    if let Some(known) = text("known_info") {
        lines.push(format!("Known info:\n{}", indent(known)));
    }
    if let Some(unknown) = text("unknown_info") {
        lines.push(format!("Unknown info:\n{}", indent(unknown)));
    }
    lines.push(format!(
        "Task instructions:\n{}",
        indent(text("task_instructions").unwrap_or_default())
    ));
    lines.join("\n")
}

/// The records of `after` that differ from `before` (or are new), or that
/// the replay `wrote` (even back to what they were), per top-level
/// collection, each record whole: a record the expected actions change and
/// change back is named too, at its value before, as the benchmark's
/// whole-database comparison holds it (docs/tau2.md, "The final database").
fn changed(before: &Value, after: &Value, wrote: &Overlay) -> Map<String, Value> {
    let mut out = Map::new();
    let Value::Object(after) = after else {
        return out;
    };
    for (collection, records) in after {
        let was = before.get(collection);
        let Value::Object(records) = records else {
            if was != Some(records) {
                out.insert(collection.clone(), records.clone());
            }
            continue;
        };
        // The records of this collection the replay wrote: every one when
        // it replaced the collection whole.
        let written = |id: &str| match wrote.get(collection) {
            Some(Patch::Members(members)) => members.contains_key(id),
            Some(_) => true,
            None => false,
        };
        let mut changed = Map::new();
        for (id, record) in records {
            if was.and_then(|w| w.get(id)) != Some(record) || written(id) {
                changed.insert(id.clone(), record.clone());
            }
        }
        if !changed.is_empty() {
            out.insert(collection.clone(), Value::Object(changed));
        }
    }
    out
}

/// Whether `basis` (a task's `reward_basis`; the benchmark's default is
/// DB and COMMUNICATE) counts `component`.
fn counts(criteria: &Value, component: &str) -> bool {
    match criteria.get("reward_basis").and_then(Value::as_array) {
        Some(basis) => basis.iter().any(|b| b.as_str() == Some(component)),
        None => matches!(component, "DB" | "COMMUNICATE"),
    }
}

fn tau2(args: &Tau2Args) -> Result<u8, Failure> {
    let tasks = read_json(&args.tasks)?;
    let db = read_json(&args.db)?;
    let policy = std::fs::read_to_string(&args.policy)
        .map_err(|e| Failure::usage(format!("{}: cannot read: {e}", args.policy.display())))?;
    let contracts_path = args.contracts.clone().unwrap_or_else(|| {
        args.mocks
            .parent()
            .unwrap_or(Path::new("."))
            .join("contracts.json")
    });
    let contracts = read_json(&contracts_path)?;
    let mut ported: Vec<(String, PathBuf)> = std::fs::read_dir(&args.mocks)
        .map_err(|e| Failure::usage(format!("{}: cannot read: {e}", args.mocks.display())))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|p| Some((p.file_stem()?.to_str()?.to_owned(), p)))
        .collect();
    ported.sort();
    let Value::Array(tasks) = tasks else {
        return Err(Failure::usage(format!(
            "{}: not a JSON array of tasks",
            args.tasks.display()
        )));
    };
    let is_ported = |name: &str| ported.iter().any(|(n, _)| n == name);
    // The ported tools' contracts only: a tool without a mock is not
    // offered (its calls would fail closed).
    let contracts = Value::Array(
        contracts
            .as_array()
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .filter(|c| {
                c.pointer("/contract/operation/name")
                    .and_then(Value::as_str)
                    .is_some_and(is_ported)
            })
            .cloned()
            .collect(),
    );
    let actions_of = |task: &Value| -> Vec<Value> {
        task.pointer("/evaluation_criteria/actions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let portable: Vec<&Value> = tasks
        .iter()
        .filter(|t| {
            actions_of(t)
                .iter()
                .all(|a| a["name"].as_str().is_some_and(is_ported))
        })
        .collect();
    let domain = &args.domain;
    // The expected final database: each task's expected actions replayed
    // through the same mocks, on the embedded runtime.
    let mut definitions = Map::new();
    for (name, path) in &ported {
        definitions.insert(name.clone(), read_json(path)?);
    }
    // Played by a model that calls each expected action in turn, whatever
    // the one before answered (an expected action may answer a domain
    // error), under the case's first message: the task's index.
    let scripts: Vec<Vec<Value>> = portable.iter().map(|t| actions_of(t)).collect();
    let replay_cases: Vec<Value> = scripts
        .iter()
        .enumerate()
        .map(|(i, actions)| {
            json!({"name": format!("replay {i}"),
                   "driver": {"type": "model", "messages": [i.to_string()], "max_turns": actions.len() + 1}})
        })
        .collect();
    let replay = json!({
        "simulation_version": 1, "name": "replay",
        "fixtures": [{"value": db}],
        "tools": [{"name": domain, "from": "contracts", "contracts": &contracts, "definitions": definitions}],
        "agent": {"name": "replay", "tools": [domain]},
        "cases": replay_cases,
    });
    let replayer = Replayer {
        domain: domain.clone(),
        scripts,
    };
    let finals = replay_finals(&replay, Arc::new(replayer))?;
    let mut cases = Vec::new();
    let mut skipped = Vec::new();
    for (task, last) in portable.iter().zip(finals) {
        let id = task["id"]
            .as_str()
            .map_or_else(|| task["id"].to_string(), str::to_owned);
        let Some((last, wrote)) = last else {
            skipped.push(id);
            continue;
        };
        let criteria = &task["evaluation_criteria"];
        let mut expect = Map::new();
        if counts(criteria, "DB") {
            expect.insert(
                "final_state".into(),
                json!({"subset": changed(&db, &last, &wrote)}),
            );
        }
        if counts(criteria, "ACTION") {
            let used: Vec<Value> = actions_of(task)
                .iter()
                .map(|a| json!({"kind": "used", "call": {"tool": domain, "operation": a["name"], "arguments": a["arguments"], "arguments_match": "exact"}}))
                .collect();
            expect.insert("trajectory".into(), Value::Array(used));
        }
        let info = criteria["communicate_info"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if counts(criteria, "COMMUNICATE") && !info.is_empty() {
            expect.insert("agent_said".into(), json!({"contains": info}));
        }
        let assertions = criteria["nl_assertions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if counts(criteria, "NL_ASSERTION") && !assertions.is_empty() {
            let rubric: Vec<String> = assertions
                .iter()
                .filter_map(Value::as_str)
                .map(|a| format!("- {a}"))
                .collect();
            expect.insert(
                "judge".into(),
                json!({"rubric": format!("Every one of these holds:\n{}", rubric.join("\n"))}),
            );
        }
        let scenario = &task["user_scenario"];
        let mut user = json!({
            "type": "model",
            "instructions": user_instructions(&scenario["instructions"]),
            "max_turns": args.user_max_turns,
        });
        if let Some(persona) = scenario["persona"].as_str() {
            user["persona"] = json!(persona);
        }
        cases.push(json!({
            "name": format!("task {id}"),
            "driver": {"type": "model", "max_turns": args.max_turns},
            "user": user,
            "expect": expect,
        }));
    }
    let definitions: Map<String, Value> = ported
        .iter()
        .map(|(name, path)| (name.clone(), json!(relative(path, &args.out))))
        .collect();
    let suite = json!({
        "simulation_version": 1,
        "name": format!("tau2 {domain}"),
        "description": format!("Imported by toolmock import tau2: {} of {} tasks (every expected action ported).", cases.len(), tasks.len()),
        "attempts": args.attempts,
        "fixtures": [{"file": relative(&args.db, &args.out)}],
        "tools": [{"name": domain, "from": "contracts", "contracts": contracts, "definitions": definitions}],
        "agent": {
            "name": format!("{domain} agent"),
            "prompt": format!("<instructions>\n{AGENT_INSTRUCTION}\n</instructions>\n<policy>\n{}\n</policy>", policy.trim_end()),
            "tools": [domain],
        },
        "cases": cases,
    });
    let text = serde_json::to_vec_pretty(&suite)
        .map_err(|e| Failure::usage(format!("cannot write the suite: {e}")))?;
    std::fs::write(&args.out, text)
        .map_err(|e| Failure::usage(format!("{}: cannot write: {e}", args.out.display())))?;
    eprintln!(
        "{}: {} case(s) from {} task(s): {} task(s) use a tool not ported{}",
        args.out.display(),
        cases.len(),
        tasks.len(),
        tasks.len() - portable.len(),
        if skipped.is_empty() {
            String::new()
        } else {
            format!(
                "; left out, their expected actions do not replay: {}",
                skipped.join(", ")
            )
        }
    );
    Ok(0)
}

/// A model that calls a task's expected actions in order, then answers:
/// the replay that computes the expected final database.
#[derive(Debug)]
struct Replayer {
    domain: String,
    /// Each replay case's actions, by the index its first message gives.
    scripts: Vec<Vec<Value>>,
}

impl ChatModel for Replayer {
    fn complete<'a>(&'a self, request: ModelRequest<'a>) -> ModelFuture<'a> {
        let script = request
            .messages
            .iter()
            .find_map(|m| match m {
                Message::User { content, .. } => content.parse::<usize>().ok(),
                _ => None,
            })
            .and_then(|i| self.scripts.get(i));
        let done = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count();
        let reply = match script.and_then(|actions| actions.get(done)) {
            Some(action) => ModelReply {
                content: None,
                tool_calls: vec![ToolCallRequest {
                    id: format!("replay_{done}"),
                    name: format!("{}__{}", self.domain, action["name"].as_str().unwrap_or("")),
                    arguments: action["arguments"].to_string(),
                }],
                usage: None,
            },
            None => ModelReply {
                content: Some("replayed".into()),
                tool_calls: Vec::new(),
                usage: None,
            },
        };
        Box::pin(std::future::ready(Ok(reply)))
    }
}

/// Each replay case's final state and its writes over the fixtures (none
/// when its replay did not pass: a harness error, or an action the mocks
/// refused as a tool input error).
fn replay_finals(
    replay: &Value,
    replayer: Arc<dyn ChatModel>,
) -> Result<Vec<Option<(Value, Overlay)>>, Failure> {
    let loaded =
        simulation::load_value(replay, "replay", &Files::InlineOnly).map_err(|problems| {
            let listed: Vec<String> = problems.iter().map(ToString::to_string).collect();
            Failure::usage(format!("the mocks do not load: {}", listed.join("; ")))
        })?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::usage(format!("cannot start the runtime: {e}")))?;
    let dispatcher = crate::run::embedded_dispatcher(&loaded, false, Default::default());
    let results = runtime
        .block_on(async {
            let tenant = dispatcher
                .backend()
                .create_tenant("toolmock-import")
                .await?;
            simulation::run(
                dispatcher.clone(),
                tenant,
                Arc::new(loaded),
                &RunOptions {
                    jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
                    keep_raw: true,
                    model: Some(replayer),
                    ..RunOptions::default()
                },
                Arc::new(|| {}),
            )
            .await
        })
        .map_err(|e| match e {
            simulation::RunError::Problems(problems) => {
                let listed: Vec<String> = problems.iter().map(ToString::to_string).collect();
                Failure::usage(format!("the replay cannot start: {}", listed.join("; ")))
            }
            other => Failure::usage(format!("the replay failed: {other}")),
        })?;
    Ok(results
        .cases
        .into_iter()
        .map(|case| {
            let attempt = case.attempts.into_iter().next()?;
            let clean = attempt.outcome == toolmock_runtime::model::AttemptOutcome::Passed
                && attempt.tool_input_errors.is_empty();
            let state = attempt.raw?.final_state;
            clean.then(|| (Value::Object(state.whole()), (*state.overlay).clone()))
        })
        .collect())
}
