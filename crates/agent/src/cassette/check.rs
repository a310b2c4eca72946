//! `toolmock check-cassette`: a cassette against the simulation it was
//! recorded for — every line an exchange whose key is its request's hash,
//! no exchange the document cannot reach (an orphan), and none recorded
//! against another agent prompt or other tools, or against another
//! simulated user (stale, with the pointer of the change).

use super::file::{Exchange, files};
use super::{CASSETTE_VERSION, CassetteError, canonical_text, first_difference, request_key};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;
use toolmock_simulation::document::DriverDoc;
use toolmock_simulation::{FunctionMap, LoadedSimulation, ModelRole, UserPlayer, system_message};

/// One thing wrong with a cassette line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckProblem {
    /// The cassette file.
    pub file: String,
    /// Its line (1-based).
    pub line: usize,
    /// Where in the line's request (or the line) it is.
    pub pointer: String,
    /// `cassette_invalid`, `cassette_key_mismatch`, `cassette_orphan` or
    /// `cassette_stale`.
    pub code: &'static str,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for CheckProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: {}: {}: {}",
            self.file, self.line, self.pointer, self.code, self.message
        )
    }
}

/// The exchange lines of the cassette in `dir` (every non-blank line of
/// its files).
pub fn count(dir: &Path) -> Result<usize, CassetteError> {
    let mut n = 0;
    for path in files(dir)? {
        let text = std::fs::read_to_string(&path).map_err(|e| CassetteError::Unreadable {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        n += text.lines().filter(|l| !l.trim().is_empty()).count();
    }
    Ok(n)
}

/// Every problem of the cassette in `dir` for `loaded`, in file and line
/// order; `Err` only when a file cannot be read at all.
pub fn check_cassette(
    loaded: &LoadedSimulation,
    dir: &Path,
) -> Result<Vec<CheckProblem>, CassetteError> {
    // What the document sends each model first: its system message and
    // its tools — the agent's, and each case's simulated user's (by case).
    let agent = Sent {
        system: json!({"role": "system", "content": system_message(&loaded.document.agent)}),
        tools: serde_json::to_value(FunctionMap::of_agent(loaded).tools()).unwrap_or(Value::Null),
    };
    let mut users: HashMap<String, Option<Sent>> = HashMap::new();
    let mut problems = Vec::new();
    // (role, case, attempt, turn) → the first `FILE:LINE` that holds it.
    let mut turns: HashMap<(ModelRole, String, u32, u32), String> = HashMap::new();
    for path in files(dir)? {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(&path).map_err(|e| CassetteError::Unreadable {
            path: file.clone(),
            message: e.to_string(),
        })?;
        for (i, line) in text.lines().enumerate() {
            let problem = |pointer: String, code: &'static str, message: String| CheckProblem {
                file: file.clone(),
                line: i + 1,
                pointer,
                code,
                message,
            };
            if line.trim().is_empty() {
                continue;
            }
            let exchange: Exchange = match serde_json::from_str(line) {
                Ok(e) => e,
                Err(e) => {
                    problems.push(problem(String::new(), "cassette_invalid", e.to_string()));
                    continue;
                }
            };
            if exchange.cassette_version != CASSETTE_VERSION {
                problems.push(problem(
                    "/cassette_version".into(),
                    "cassette_invalid",
                    format!("the format is version {CASSETTE_VERSION}"),
                ));
                continue;
            }
            let Ok(request) = serde_json::from_str::<Value>(exchange.request.get()) else {
                continue;
            };
            if request_key(&canonical_text(&request)) != exchange.key {
                problems.push(problem(
                    "/key".into(),
                    "cassette_key_mismatch",
                    "the key is not the hash of the request: the line was edited".into(),
                ));
            }
            if let Some(why) = orphan(loaded, &exchange) {
                problems.push(problem(String::new(), "cassette_orphan", why));
            } else if let Some(first) = turns.get(&(
                exchange.role,
                exchange.case.clone(),
                exchange.attempt,
                exchange.turn,
            )) {
                problems.push(problem(
                    String::new(),
                    "cassette_orphan",
                    format!(
                        "{first} holds the same turn: one of them is an earlier recording no replay reaches (record again to drop it)"
                    ),
                ));
            } else {
                turns.insert(
                    (
                        exchange.role,
                        exchange.case.clone(),
                        exchange.attempt,
                        exchange.turn,
                    ),
                    format!("{file}:{}", i + 1),
                );
            }
            let sent = match exchange.role {
                ModelRole::Agent => Some(&agent),
                ModelRole::User => users
                    .entry(exchange.case.clone())
                    .or_insert_with(|| user_sent(loaded, &exchange.case))
                    .as_ref(),
                ModelRole::Judge => None,
            };
            if let Some(sent) = sent {
                let stale = first_difference(&request["messages"][0], &sent.system, "/messages/0")
                    .or_else(|| first_difference(&request["tools"], &sent.tools, "/tools"));
                if let Some(at) = stale {
                    let whom = match exchange.role {
                        ModelRole::User => "simulated user",
                        _ => "agent",
                    };
                    problems.push(problem(
                        at.clone(),
                        "cassette_stale",
                        format!("recorded against another {whom}: the request differs from what the document sends at {at}"),
                    ));
                }
            }
        }
    }
    Ok(problems)
}

/// The system message and the tools a model is sent first.
struct Sent {
    system: Value,
    tools: Value,
}

/// What the simulated user of `case` is sent first: its system message
/// (the guidelines, the case's instructions and persona) and its own tools;
/// `None` when the case has no simulated user (its lines are orphans).
fn user_sent(loaded: &LoadedSimulation, case: &str) -> Option<Sent> {
    let user = loaded
        .document
        .cases
        .iter()
        .find(|c| c.name == case)?
        .user
        .as_ref()?;
    let player = UserPlayer::new(loaded, user);
    Some(Sent {
        system: json!({"role": "system", "content": player.system}),
        tools: serde_json::to_value(player.functions.tools()).unwrap_or(Value::Null),
    })
}

/// Why the document never sends `exchange`'s request, if it does not.
fn orphan(loaded: &LoadedSimulation, exchange: &Exchange) -> Option<String> {
    let document = &loaded.document;
    let Some(case) = document.cases.iter().find(|c| c.name == exchange.case) else {
        return Some(format!("the document has no case {:?}", exchange.case));
    };
    let attempts = case.attempts.unwrap_or(document.attempts);
    if exchange.attempt == 0 || exchange.attempt > attempts {
        return Some(format!(
            "case {:?} has {attempts} attempt(s), not an attempt {}",
            case.name, exchange.attempt
        ));
    }
    let model = matches!(case.driver, DriverDoc::Model { .. });
    match exchange.role {
        ModelRole::Agent if !model => {
            Some(format!("case {:?} is not played by a model", case.name))
        }
        ModelRole::Judge if case.expect.judge.is_none() => {
            Some(format!("case {:?} has no judge rubric", case.name))
        }
        ModelRole::Agent => match &case.driver {
            DriverDoc::Model { max_turns, .. } if exchange.turn > *max_turns => Some(format!(
                "case {:?} sends at most {max_turns} request(s), not a turn {}",
                case.name, exchange.turn
            )),
            _ => None,
        },
        ModelRole::Judge if exchange.turn > 1 => {
            Some("a judge is asked once per attempt".to_owned())
        }
        ModelRole::Judge => None,
        ModelRole::User => match &case.user {
            None => Some(format!("case {:?} has no simulated user", case.name)),
            Some(_) if !model => Some(format!("case {:?} is not played by a model", case.name)),
            Some(toolmock_simulation::document::UserDoc::Model { max_turns, .. })
                if exchange.turn > *max_turns =>
            {
                Some(format!(
                    "case {:?}'s user writes at most {max_turns} message(s), not a turn {}",
                    case.name, exchange.turn
                ))
            }
            Some(_) => None,
        },
    }
}
