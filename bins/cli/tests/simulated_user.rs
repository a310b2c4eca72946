//! Simulated users through the real `toolmock` binary against the local
//! OpenAI-compatible conversation server, which plays both the agent
//! (`asker`: asks before it acts) and the user (`customer…`), and checks
//! every user-model request as toolmock sends it (the guidelines and the
//! instructions as the system message, the agent's greeting, the roles
//! flipped, the agent's calls never shown). The conversation ends on the
//! stop marker (recorded), the user's turn limit is an unmet expectation,
//! and the user model's faults are harness errors of their own.

#![allow(clippy::unwrap_used)]

mod conversation_common;

use conversation_common::{
    Server, first_attempt as attempt, notes_with_a_customer as document, reqwest_get, run_json,
    scratch, server, toolmock,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A case whose user is a model told the note's text.
fn user_case(user: Value, expect: Value) -> Value {
    let mut user_doc = json!({"type": "model", "instructions": "You want a note.\nThe note says: milk", "persona": "Brief."});
    user_doc
        .as_object_mut()
        .unwrap()
        .extend(user.as_object().unwrap().clone());
    json!({"name": "c", "driver": {"type": "model", "max_turns": 8}, "user": user_doc, "expect": expect})
}

/// Runs `cases` with the agent model `asker`; `extra` names the user model.
fn run(server: &Server, cases: Value, extra: &[&str]) -> (i32, Value, PathBuf) {
    let dir = scratch();
    let mut args = vec![
        "run",
        "sim.json",
        "--json",
        "--evidence",
        "evidence",
        "--junit",
        "junit.xml",
        "--model-url",
        &server.url,
        "--model",
        "asker",
        "--model-retries",
        "0",
    ];
    args.extend_from_slice(extra);
    let (out, results) = run_json(&dir, &document(cases), &args, &[]);
    (out.status.code().unwrap(), results, dir)
}

/// Each message as `role: content` (tool calls by name).
fn said(attempt: &Value) -> Vec<String> {
    attempt["conversation"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let what = m["content"].as_str().filter(|t| !t.is_empty()).map_or_else(
                || {
                    let calls: Vec<&str> = m["tool_calls"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|c| c["name"].as_str().unwrap())
                        .collect();
                    format!("calls {}", calls.join(","))
                },
                str::to_owned,
            );
            format!("{}: {what}", m["role"].as_str().unwrap())
        })
        .collect()
}

fn evidence_lines(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("evidence/01-c/attempt-1.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_agent_asks_the_simulated_user_answers_and_stops() {
    let server = server();
    let expect = json!({
        "trajectory": [{"kind": "sequence", "mode": "strict", "calls": [{"tool": "notes", "operation": "add", "arguments": {"text": "milk"}}]}],
        "final_state": {"subset": {"last": "milk"}},
        "final_answer": {"contains": ["n-1"]}
    });
    let (code, results, dir) = run(
        &server,
        json!([user_case(json!({}), expect)]),
        &["--user-model", "customer"],
    );
    assert_eq!(code, 0, "{results:#}");
    let a = attempt(&results);
    assert_eq!(a["outcome"], "passed");
    assert_eq!(
        said(a),
        [
            "system: You keep notes.",
            "user: I need a note, please.",
            "assistant: What should the note say?",
            "user: milk",
            "assistant: calls notes__add",
            "tool: {\"id\":\"n-1\"}",
            "assistant: Added note n-1.",
            "user: Thanks! ###STOP###",
        ]
    );
    // The marker that ended it is recorded on the user's last message.
    assert_eq!(a["conversation"][7]["stop"], "###STOP###");
    assert!(a["conversation"][3].get("stop").is_none());
    // The agent's calls are the agent's.
    assert!(a["calls"][0].get("actor").is_none(), "{a:#}");
    // --evidence: both sides, with their roles, among the records.
    let lines = evidence_lines(&dir);
    let roles: Vec<String> = lines
        .iter()
        .map(|l| match l["kind"].as_str().unwrap() {
            "message" => l["role"].as_str().unwrap().to_owned(),
            other => format!("{other}:{}", l["actor"].as_str().unwrap_or("-")),
        })
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "user",
            "assistant",
            "evidence:agent",
            "tool",
            "assistant",
            "user",
            "final_state:-"
        ]
    );
    // JUnit: who said what.
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(
        junit.contains("<system-out>user: I need a note, please.\nassistant: What should the note say?\nuser: milk\nassistant calls notes__add {&quot;text&quot;: &quot;milk&quot;}\nassistant: Added note n-1.\nuser: Thanks! ###STOP### [stop: ###STOP###]\n</system-out>"),
        "{junit}"
    );
    // The user model shares the agent's endpoint and key unless told
    // otherwise: the same server answered both.
    let counts: Value = reqwest_get(&format!("{}/../counts", server.url));
    assert_eq!(counts["asker"], 3, "{counts}");
    assert_eq!(counts["customer"], 3, "{counts}");
}

#[test]
fn the_users_own_tools_are_recorded_as_the_users_and_share_the_state() {
    let server = server();
    let expect = json!({
        "trajectory": [{"kind": "sequence", "mode": "strict", "calls": [
            {"tool": "phone", "operation": "unlock"},
            {"tool": "notes", "operation": "add", "arguments": {"text": "milk"}}
        ]}],
        "final_state": {"subset": {"last": "milk", "unlocked": true}}
    });
    let (code, results, dir) = run(
        &server,
        json!([user_case(json!({"tools": ["phone"]}), expect)]),
        &["--user-model", "customer_tools"],
    );
    assert_eq!(code, 0, "{results:#}");
    let a = attempt(&results);
    assert_eq!(
        said(a)[..4],
        [
            "system: You keep notes.",
            "user: calls phone__unlock",
            "tool: {\"unlocked\":true}",
            "user: I need a note, please.",
        ]
    );
    assert_eq!(a["conversation"][2]["actor"], "user");
    assert_eq!(a["calls"][0]["tool"], "phone");
    assert_eq!(a["calls"][0]["actor"], "user");
    assert!(a["calls"][1].get("actor").is_none());
    let actors: Vec<(String, String)> = evidence_lines(&dir)
        .iter()
        .filter(|l| l["kind"] == "evidence")
        .map(|l| {
            (
                l["tool"].as_str().unwrap().to_owned(),
                l["actor"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        actors,
        [
            ("phone".to_owned(), "user".to_owned()),
            ("notes".to_owned(), "agent".to_owned())
        ]
    );
}

#[test]
fn the_users_turn_limit_is_an_unmet_expectation() {
    let server = server();
    let (code, results, _) = run(
        &server,
        json!([user_case(json!({"max_turns": 2}), json!({}))]),
        &["--user-model", "customer_chatty"],
    );
    assert_eq!(code, 1, "{results:#}");
    let a = attempt(&results);
    assert_eq!(a["outcome"], "failed");
    assert_eq!(a["unmet"][0]["code"], "turn_limit");
    assert_eq!(a["unmet"][0]["at"], "/cases/0/user/max_turns");
    let users = a["conversation"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .count();
    assert_eq!(users, 2);
}

/// The run failed (exit 1) with its attempt ended `harness_error` by `code`.
fn assert_ended_by(code: i32, results: &Value, expected: &str) {
    assert_eq!(code, 1, "{results:#}");
    let a = attempt(results);
    assert_eq!(a["outcome"], "harness_error", "{a:#}");
    assert_eq!(a["harness_errors"][0]["code"], expected, "{a:#}");
}

#[test]
fn a_user_model_that_cannot_be_reached_is_user_unavailable() {
    let server = server();
    let (code, results, _) = run(
        &server,
        json!([user_case(json!({}), json!({}))]),
        &[
            "--user-model-url",
            "http://127.0.0.1:9/v1",
            "--user-model",
            "customer",
        ],
    );
    assert_ended_by(code, &results, "user_unavailable");
    let message = attempt(&results)["harness_errors"][0]["message"]
        .as_str()
        .unwrap();
    assert!(
        message.starts_with("the user model is unavailable"),
        "{message}"
    );
    // The agent was never asked: nobody had spoken to it.
    let counts: Value = reqwest_get(&format!("{}/../counts", server.url));
    assert!(counts.get("asker").is_none(), "{counts}");
}

#[test]
fn a_user_model_that_answers_nothing_or_refuses_is_user_failed() {
    let server = server();
    let (code, results, _) = run(
        &server,
        json!([user_case(json!({}), json!({}))]),
        &["--user-model", "customer_empty"],
    );
    assert_ended_by(code, &results, "user_failed");
    // A refused request (a 400: the server knows no such conversation).
    let (code, results, _) = run(
        &server,
        json!([user_case(json!({}), json!({}))]),
        &["--user-model", "nobody"],
    );
    assert_ended_by(code, &results, "user_failed");
}

#[test]
fn the_user_model_flags_need_their_partners_and_the_file_is_checked() {
    let server = server();
    let dir = scratch();
    std::fs::write(
        dir.join("sim.json"),
        serde_json::to_vec(&document(json!([user_case(json!({}), json!({}))]))).unwrap(),
    )
    .unwrap();
    let out = toolmock(
        &dir,
        &["run", "sim.json", "--user-model-url", &server.url],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--user-model-url needs --user-model"));
    // Without any model, the model driver is refused first.
    let out = toolmock(&dir, &["run", "sim.json"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/cases/0/driver: model_not_configured"));
    // A user on a scripted driver, a model driver with nobody to speak,
    // a user tool that is the agent's; an agent service (`http`) may have a
    // user (refused here only because `toolmock run` cannot hand it over).
    let cases = json!([
        {"name": "a", "driver": {"type": "scripted", "steps": []}, "user": {"type": "model", "instructions": "x"}},
        {"name": "b", "driver": {"type": "model"}},
        {"name": "c", "driver": {"type": "model"}, "user": {"type": "model", "instructions": "x", "tools": ["notes", "nope"]}},
        {"name": "d", "driver": {"type": "http", "url": "http://agents.example/play"}, "user": {"type": "model", "instructions": "x"}}
    ]);
    std::fs::write(
        dir.join("bad.json"),
        serde_json::to_vec(&document(cases)).unwrap(),
    )
    .unwrap();
    let out = toolmock(&dir, &["run", "bad.json", "--check"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for line in [
        "bad.json: /cases/0/user: user_not_supported:",
        "bad.json: /cases/1/driver/messages: no_user_turns:",
        "bad.json: /cases/2/user/tools/0: user_tool_of_agent:",
        "bad.json: /cases/2/user/tools/1: unknown_tool:",
        "bad.json: /cases/3/driver/type: external_driver_not_embedded:",
    ] {
        assert!(stderr.contains(line), "{line} in {stderr}");
    }
    assert!(!stderr.contains("/cases/3/user"), "{stderr}");
}

mod serve_common;

/// An MCP agent (this test, over `toolmock serve --stdio`) meets the case's
/// simulated user through `ask_user`: the user's replies come back as the
/// tool's result, the conversation ends on the stop marker, and the report
/// holds both sides with their roles.
#[test]
fn an_mcp_agent_asks_the_simulated_user_through_ask_user() {
    let server = server();
    let dir = scratch();
    let served = serve_ask_user(
        &dir,
        &["--user-model-url", &server.url, "--user-model", "customer"],
    );
    let results: Value = serde_json::from_str(&served).unwrap();
    let a = attempt(&results);
    assert_eq!(a["outcome"], "passed", "{results:#}");
    assert_eq!(
        said(a),
        [
            "user: I need a note, please.",
            "assistant: What should the note say?",
            "user: milk",
            "assistant: Added note n-1.",
            "user: Thanks! ###STOP###",
        ]
    );
    assert_eq!(a["conversation"][4]["stop"], "###STOP###");
}

/// `toolmock serve --stdio` of an external case with a simulated user, with
/// `flags`, played by an MCP client that asks the user, adds the note and
/// ends: the results document it wrote, as text.
fn serve_ask_user(dir: &Path, flags: &[&str]) -> String {
    let mut case = user_case(
        json!({}),
        json!({"final_state": {"subset": {"last": "milk"}}}),
    );
    case["driver"] = json!({"type": "external"});
    let simulation = dir.join("sim.json");
    std::fs::write(
        &simulation,
        serde_json::to_vec(&document(json!([case]))).unwrap(),
    )
    .unwrap();
    let results = dir.join("results.json");
    let mut args = vec!["--json", results.to_str().unwrap()];
    args.extend_from_slice(flags);
    let mut served = serve_common::StdioServed::serve(&simulation, &args);
    let listed = served.request(1, "tools/list", json!({}));
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["add", "ask_user"], "{listed}");
    let reply = |answer: &Value| answer["result"]["structuredContent"].clone();
    let first = served.call(2, "ask_user", json!({}));
    assert_eq!(reply(&first), json!({"reply": "I need a note, please."}));
    let asked = served.call(
        3,
        "ask_user",
        json!({"message": "What should the note say?"}),
    );
    assert_eq!(reply(&asked), json!({"reply": "milk"}));
    let added = served.call(4, "add", json!({"text": "milk"}));
    assert_eq!(reply(&added), json!({"id": "n-1"}));
    let done = served.call(5, "ask_user", json!({"message": "Added note n-1."}));
    assert_eq!(
        reply(&done),
        json!({"reply": "Thanks! ###STOP###", "stop": "###STOP###", "ended": true})
    );
    let again = served.call(6, "ask_user", json!({"message": "Anything else?"}));
    assert_eq!(reply(&again), json!({"ended": true}));
    let wrong = served.call(7, "ask_user", json!({"message": 7}));
    assert_eq!(wrong["result"]["isError"], true, "{wrong}");
    served.close_stdin();
    assert_eq!(served.exits_within(std::time::Duration::from_secs(20)), 0);
    std::fs::read_to_string(&results).unwrap()
}

/// `toolmock serve --cassette` tapes the served case's user model: recorded
/// once, replayed with the server stopped and no user model flags — the
/// same results document.
#[test]
fn serve_replays_the_simulated_user_from_a_cassette() {
    let server = server();
    let dir = scratch();
    let cassette = dir.join("cassette");
    let cassette = cassette.to_str().unwrap();
    let recorded = serve_ask_user(
        &dir,
        &[
            "--user-model-url",
            &server.url,
            "--user-model",
            "customer",
            "--cassette",
            cassette,
            "--cassette-mode",
            "record",
        ],
    );
    drop(server);
    let text = std::fs::read_to_string(dir.join("cassette/c.jsonl")).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        text.lines().all(|l| l.contains("\"role\":\"user\"")),
        "{text}"
    );
    let replayed = serve_ask_user(&dir, &["--cassette", cassette]);
    assert_eq!(replayed, recorded);
}

#[test]
fn serving_a_simulated_user_needs_a_user_model() {
    let dir = scratch();
    let mut case = user_case(json!({}), json!({}));
    case["driver"] = json!({"type": "external"});
    std::fs::write(
        dir.join("sim.json"),
        serde_json::to_vec(&document(json!([case]))).unwrap(),
    )
    .unwrap();
    let out = toolmock(&dir, &["serve", "sim.json", "--stdio"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("/cases/0/user: user_model_not_configured"),
        "{stderr}"
    );
}

/// The simulated user's model is taped beside the agent's: recorded once,
/// replayed with the server stopped and no model flags at all — the same
/// bytes on stdout —, and a changed instruction misses at the user model's
/// system message, naming the user's turn.
#[test]
fn a_simulated_users_conversation_replays_from_the_cassette_with_the_server_stopped() {
    let server = server();
    let dir = scratch();
    let write = |instructions: &str| {
        let mut case = user_case(
            json!({"tools": ["phone"]}),
            json!({"final_answer": {"contains": ["n-1"]}}),
        );
        case["user"]["instructions"] = json!(instructions);
        std::fs::write(
            dir.join("sim.json"),
            serde_json::to_vec_pretty(&document(json!([case]))).unwrap(),
        )
        .unwrap();
    };
    write("You want a note.\nThe note says: milk");
    let recorded = toolmock(
        &dir,
        &[
            "run",
            "sim.json",
            "--json",
            "--model-url",
            &server.url,
            "--model",
            "asker",
            "--user-model",
            "customer_tools",
            "--cassette",
            "cassette",
            "--cassette-mode",
            "record",
        ],
        &[],
    );
    let stdout = String::from_utf8(recorded.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&recorded.stderr);
    assert_eq!(recorded.status.code(), Some(0), "{stdout}{stderr}");
    let results: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        said(attempt(&results))[1..3],
        ["user: calls phone__unlock", "tool: {\"unlocked\":true}"],
        "{results}"
    );
    drop(server);

    // The user's requests are lines of their own, its tool calls with ids
    // apart from the agent's.
    let text = std::fs::read_to_string(dir.join("cassette/c.jsonl")).unwrap();
    let roles: Vec<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["role"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(roles.iter().any(|r| r == "user"), "{text}");
    assert!(roles.iter().any(|r| r == "agent"), "{text}");
    assert!(text.contains("\"id\":\"user_call_1_1\""), "{text}");
    let check = toolmock(&dir, &["check-cassette", "sim.json", "cassette"], &[]);
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );

    let replayed = toolmock(
        &dir,
        &["run", "sim.json", "--json", "--cassette", "cassette"],
        &[],
    );
    let replayed_err = String::from_utf8_lossy(&replayed.stderr);
    assert_eq!(replayed.status.code(), Some(0), "{replayed_err}");
    assert_eq!(String::from_utf8(replayed.stdout).unwrap(), stdout);
    assert!(
        replayed_err.contains(&format!("{} exchange(s) replayed, 0 recorded", roles.len())),
        "{replayed_err}"
    );

    write("You want a note.\nThe note says: eggs");
    let missed = toolmock(
        &dir,
        &["run", "sim.json", "--json", "--cassette", "cassette"],
        &[],
    );
    assert_eq!(missed.status.code(), Some(1));
    let results: Value = serde_json::from_slice(&missed.stdout).unwrap();
    let a = attempt(&results);
    assert_eq!(a["outcome"], "harness_error", "{a}");
    let error = &a["harness_errors"][0];
    assert_eq!(error["code"], "cassette_miss", "{error}");
    assert_eq!(error["path"], "/messages/0/content", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("case \"c\", attempt 1, user turn 1"),
        "{error}"
    );

    // `check-cassette` finds every user line stale at the user's system
    // message; the agent's lines (its prompt and tools unchanged) are not.
    let check = toolmock(&dir, &["check-cassette", "sim.json", "cassette"], &[]);
    let diagnostics = String::from_utf8(check.stdout).unwrap();
    assert_eq!(check.status.code(), Some(1), "{diagnostics}");
    let users = roles.iter().filter(|r| *r == "user").count();
    assert_eq!(
        diagnostics.matches("cassette_stale").count(),
        users,
        "{diagnostics}"
    );
    insta::assert_snapshot!("stale_simulated_user", diagnostics);
}
