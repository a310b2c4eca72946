//! Model-driven cases through the real `toolmock` binary against the local
//! OpenAI-compatible conversation server (`fixtures/conversation-server/`,
//! which checks every request and builds every answer with the official
//! `openai` SDK's types): each fixed conversation ends as designed, the
//! conversation is evidence, and the endpoint's key never reaches a report.

#![allow(clippy::unwrap_used)]

mod conversation_common;

use conversation_common::{
    Server, first_attempt as attempt, reqwest_get, run_json, scratch, server, server_with, toolmock,
};

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One notes tool (`add` answers `n-1`, or `n-2` for text `b`; `get`), an
/// agent with a prompt and a guard, and `cases`.
fn document(cases: Value) -> Value {
    json!({
        "simulation_version": 1,
        "name": "notes agent",
        "tools": [{
            "name": "notes", "from": "custom",
            "operations": [
                {"name": "add", "description": "Adds a note.",
                 "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": false},
                 "output_schema": {"type": "object", "required": ["id"]}},
                {"name": "get", "description": "Reads the last note.", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}}
            ],
            "definitions": {
                "add": {
                    "schema_version": 1, "default_variant": "ok",
                    "variants": {"ok": {"result": {"id": "n-1"}, "set_state": {"last": {"$input": "text"}},
                                        "rules": [{"when": [{"source": "input", "path": "text", "op": "eq", "value": "b"}], "result": {"id": "n-2"}}]}},
                    "examples": [{"variant": "ok", "input": {"text": "a"}, "expected": {"id": "n-1"}},
                                 {"variant": "ok", "input": {"text": "b"}, "expected": {"id": "n-2"}}]
                },
                "get": {
                    "schema_version": 1, "default_variant": "ok", "initial_state": {"last": null},
                    "variants": {"ok": {"result": {"last": {"$state": "last"}}}},
                    "examples": [{"variant": "ok", "input": {}, "expected": {"last": null}}]
                }
            }
        }],
        "agent": {"name": "scribe", "prompt": "You keep notes.", "guards": ["never delete notes"], "tools": ["notes"]},
        "cases": cases
    })
}

fn model_case(name: &str, expect: Value) -> Value {
    json!({"name": name, "driver": {"type": "model", "messages": ["Note down milk."], "max_turns": 4}, "expect": expect})
}

/// Runs `cases` with the conversation `model`; returns the exit code, the
/// results document and the evidence folder.
fn run(server: &Server, model: &str, cases: Value, extra: &[&str]) -> (i32, Value, PathBuf) {
    let dir = scratch();
    let mut args = vec![
        "run",
        "sim.json",
        "--json",
        "--evidence",
        "evidence",
        "--jobs",
        "1",
        "--model-url",
        &server.url,
        "--model",
        model,
        "--model-retries",
        "4",
    ];
    args.extend_from_slice(extra);
    let (out, results) = run_json(
        &dir,
        &document(cases),
        &args,
        &[("TOOLMOCK_MODEL_API_KEY", "sk-very-secret-key")],
    );
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!said.contains("sk-very-secret-key"), "the key leaked");
    (out.status.code().unwrap(), results, dir.join("evidence"))
}

fn roles(attempt: &Value) -> Vec<String> {
    attempt["conversation"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_owned())
        .collect()
}

fn evidence_lines(dir: &Path) -> Vec<Value> {
    let file = dir.join("01-c/attempt-1.jsonl");
    std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn secret_free(dir: &Path) {
    let text = std::fs::read_to_string(dir.join("01-c/attempt-1.jsonl")).unwrap();
    assert!(!text.contains("sk-very-secret-key"));
    assert!(!text.contains("127.0.0.1"), "the endpoint is not evidence");
}

#[test]
fn correct_tool_use_ends_in_a_right_answer_and_the_conversation_is_evidence() {
    let server = server();
    let expect = json!({
        "trajectory": [{"kind": "sequence", "mode": "strict", "calls": [{"tool": "notes", "operation": "add", "arguments": {"text": "milk"}, "status": "ok"}]}],
        "final_state": {"subset": {"last": "milk"}},
        "final_answer": {"contains": ["n-1"], "not_contains": ["sorry"], "matches": "^Added note n-\\d+\\.$"}
    });
    let (code, results, evidence) = run(&server, "correct", json!([model_case("c", expect)]), &[]);
    assert_eq!(code, 0, "{results:#}");
    let a = attempt(&results);
    assert_eq!(a["outcome"], "passed");
    assert_eq!(
        roles(a),
        ["system", "user", "assistant", "tool", "assistant"]
    );
    let conversation = &a["conversation"];
    assert_eq!(
        conversation[0]["content"],
        "You keep notes.\n\nPrerequisites you must respect:\n- never delete notes"
    );
    assert_eq!(conversation[2]["tool_calls"][0]["name"], "notes__add");
    // The result exactly as rendered: its JSON text, no wrapper.
    assert_eq!(conversation[3]["content"], "{\"id\":\"n-1\"}");
    assert_eq!(conversation[4]["content"], "Added note n-1.");
    // The evidence file: the messages among the records, in order.
    let lines = evidence_lines(&evidence);
    let kinds: Vec<String> = lines
        .iter()
        .map(|l| match l["kind"].as_str().unwrap() {
            "message" => format!("message:{}", l["role"].as_str().unwrap()),
            other => other.to_owned(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "message:system",
            "message:user",
            "message:assistant",
            "evidence",
            "message:tool",
            "message:assistant",
            "final_state"
        ]
    );
    secret_free(&evidence);
}

#[test]
fn a_bad_argument_call_is_recoverable_and_recorded() {
    let server = server();
    let expect = json!({"trajectory": [{"kind": "count", "call": {"tool": "notes", "status": "tool_input_error"}, "exactly": 1}]});
    let (code, results, _) = run(
        &server,
        "bad_then_fixed",
        json!([model_case("c", expect)]),
        &[],
    );
    assert_eq!(code, 0, "{results:#}");
    let a = attempt(&results);
    assert_eq!(a["tool_input_errors"][0]["code"], "invalid_arguments");
    let error = tool_message(a, 3);
    assert_eq!(error["error"]["code"], "invalid_arguments");
    assert_eq!(error["error"]["class"], "tool_input_error");
}

/// The JSON of the conversation's message `i`, a tool message.
fn tool_message(attempt: &Value, i: usize) -> Value {
    let message = &attempt["conversation"][i];
    assert_eq!(message["role"], "tool", "{message}");
    serde_json::from_str(message["content"].as_str().unwrap()).unwrap()
}

#[test]
fn an_invented_tool_name_is_never_executed_and_is_recoverable() {
    let server = server();
    let (code, results, _) = run(
        &server,
        "invented",
        json!([model_case("c", json!({}))]),
        &[],
    );
    assert_eq!(code, 0, "{results:#}");
    let a = attempt(&results);
    assert_eq!(a["outcome"], "passed");
    assert_eq!(a["tool_input_errors"][0]["code"], "unknown_function");
    assert_eq!(a["tool_input_errors"][0]["tool"], "delete_everything");
    // The tool message names no path: an invented name has none.
    assert_eq!(
        tool_message(a, 3)["error"],
        json!({"class": "tool_input_error", "code": "unknown_function",
               "message": "there is no function \"delete_everything\"; call one of the functions you were given"})
    );
    // Only the right call ran.
    assert_eq!(
        a["calls"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["status"] == "ok")
            .count(),
        1
    );
}

#[test]
fn malformed_arguments_json_is_a_tool_input_error() {
    let server = server();
    let (code, results, _) = run(
        &server,
        "malformed",
        json!([model_case("c", json!({}))]),
        &[],
    );
    assert_eq!(code, 0, "{results:#}");
    let a = attempt(&results);
    assert_eq!(a["tool_input_errors"][0]["code"], "invalid_arguments_json");
    assert_eq!(a["tool_input_errors"][0]["tool"], "notes");
    assert_eq!(a["tool_input_errors"][0]["operation"], "add");
    let error = &tool_message(a, 3)["error"];
    assert_eq!(error["code"], "invalid_arguments_json");
    assert!(error.get("path").is_none(), "{error}");
}

#[test]
fn parallel_calls_of_one_turn_run_in_their_order() {
    let server = server();
    let expect = json!({"trajectory": [{"kind": "sequence", "mode": "strict", "calls": [
        {"tool": "notes", "operation": "add", "arguments": {"text": "a"}},
        {"tool": "notes", "operation": "add", "arguments": {"text": "b"}}
    ]}], "final_state": {"exact": {"last": "b"}}});
    let (code, results, _) = run(&server, "parallel", json!([model_case("c", expect)]), &[]);
    assert_eq!(code, 0, "{results:#}");
    assert_eq!(
        roles(attempt(&results)),
        ["system", "user", "assistant", "tool", "tool", "assistant"]
    );
}

/// `run` of one model case (no expectations) played by `model`; also how
/// long the run took.
fn run_timed(server: &Server, model: &str, extra: &[&str]) -> (i32, Value, Duration) {
    let began = Instant::now();
    let (code, results, _) = run(server, model, json!([model_case("c", json!({}))]), extra);
    (code, results, began.elapsed())
}

/// The run failed (exit 1) with its attempt ended `harness_error` by `code`.
fn assert_ended_by(code: i32, results: &Value, expected: &str) {
    assert_eq!(code, 1, "{results:#}");
    let a = attempt(results);
    assert_eq!(a["outcome"], "harness_error", "{a:#}");
    assert_eq!(a["harness_errors"][0]["code"], expected, "{a:#}");
}

#[test]
fn a_429_is_retried_after_its_retry_after() {
    let server = server();
    let (code, results, took) = run_timed(&server, "rate_limited", &[]);
    assert_eq!(code, 0, "{results:#}");
    assert_eq!(attempt(&results)["outcome"], "passed");
    // Two 429s, each followed by a wait of its Retry-After (1 s).
    assert!(took >= Duration::from_secs(2));
}

/// Issue 32, item 3: a 429 asking for a wait of an hour (`Retry-After:
/// 3600`, longer than the model time-out) is not waited for: the endpoint
/// is unavailable now, with no retry (one request), and the run ends at
/// once (the attempt deadline, a minute here, never comes into play).
#[test]
fn a_retry_after_longer_than_the_model_time_out_is_unavailable_at_once() {
    let server = server();
    let (code, results, took) = run_timed(
        &server,
        "rate_limited_long",
        &["--attempt-timeout-secs", "60"],
    );
    assert_ended_by(code, &results, "agent_unavailable");
    assert!(took < Duration::from_secs(30), "{took:?}");
    let counts: Value = reqwest_get(&format!("{}/../counts", server.url));
    assert_eq!(
        counts["rate_limited_long"], 1,
        "no retry of a wait too long"
    );
}

/// Issue 32, item 3: with a model time-out of an hour, the same endpoint's
/// `Retry-After: 3600` is within the bound and would be waited for; the
/// attempt's deadline (`--attempt-timeout-secs 2`) ends it
/// `harness_error` (`attempt_timeout`) and `toolmock run` returns.
#[test]
fn the_attempt_deadline_ends_an_attempt_its_model_keeps_waiting() {
    let server = server();
    let (code, results, took) = run_timed(
        &server,
        "rate_limited_long",
        &[
            "--model-timeout-secs",
            "3600",
            "--attempt-timeout-secs",
            "2",
        ],
    );
    assert_ended_by(code, &results, "attempt_timeout");
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(30),
        "{took:?}"
    );
}

#[test]
fn five_500s_end_the_attempt_agent_unavailable_never_failed() {
    let server = server();
    let (code, results, _) = run(
        &server,
        "unavailable",
        json!([model_case("c", json!({}))]),
        &[],
    );
    assert_eq!(code, 1);
    let a = attempt(&results);
    assert_eq!(a["outcome"], "harness_error", "{a:#}");
    assert_eq!(a["harness_errors"][0]["code"], "agent_unavailable");
    let counts: Value = reqwest_get(&format!("{}/../counts", server.url));
    assert_eq!(counts["unavailable"], 5, "one request and four retries");
}

/// A refused request is `model_failed`, described by its status class: what
/// the endpoint answered (its message, the model name it echoes, a
/// secret-looking string) reaches neither the results nor the evidence.
#[test]
fn model_failed_never_carries_what_the_endpoint_answered() {
    let server = server();
    let (code, results, evidence) = run(
        &server,
        "echo_secret",
        json!([model_case("c", json!({}))]),
        &[],
    );
    assert_eq!(code, 1);
    let a = attempt(&results);
    assert_eq!(a["harness_errors"][0]["code"], "model_failed", "{a:#}");
    let message = a["harness_errors"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("HTTP 400 (the request was refused)"),
        "{message}"
    );
    let everything = format!(
        "{results}{}",
        std::fs::read_to_string(evidence.join("01-c/attempt-1.jsonl")).unwrap()
    );
    assert!(!everything.contains("ECHOED-SECRET"), "{everything}");
    assert!(!everything.contains("refused: "), "{everything}");
    secret_free(&evidence);
}

/// A model answer without end (a chunked body the server writes until the
/// client hangs up) is cut at `--model-max-response-bytes`: the attempt
/// ends `model_failed` with the reason `response_too_large`, and the
/// process lives on to report it (issue 32, item 4).
#[test]
fn an_endless_model_answer_is_model_failed_response_too_large() {
    let server = server();
    let (code, results, evidence) = run(
        &server,
        "endless",
        json!([model_case("c", json!({}))]),
        &["--model-max-response-bytes", "1048576"],
    );
    assert_eq!(code, 1);
    let a = attempt(&results);
    assert_eq!(a["outcome"], "harness_error", "{a:#}");
    let error = &a["harness_errors"][0];
    assert_eq!(error["code"], "model_failed", "{a:#}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("exceeded the 1048576-byte limit"),
        "{error}"
    );
    let recorded = evidence_lines(&evidence);
    let fault = recorded
        .iter()
        .find(|line| line["code"] == "model_failed")
        .unwrap_or_else(|| panic!("{recorded:#?}"));
    assert_eq!(
        fault["detail"],
        json!({"reason": "response_too_large", "limit_bytes": 1048576}),
        "{fault:#}"
    );
}

#[test]
fn a_harness_error_stops_the_loop_and_is_never_shown_to_the_model() {
    let server = server();
    let mut case = model_case("c", json!({"outcome": "harness_error"}));
    case["variants"] = json!([{"tool": "notes", "operation": "get", "variant": "missing"}]);
    let (code, results, _) = run(&server, "harness", json!([case]), &[]);
    assert_eq!(code, 0, "{results:#}");
    let a = attempt(&results);
    assert_eq!(a["harness_errors"][0]["code"], "unknown_variant");
    // The conversation ends at the call: no tool message, no second request.
    assert_eq!(roles(a), ["system", "user", "assistant"]);
    let counts: Value = reqwest_get(&format!("{}/../counts", server.url));
    assert_eq!(counts["harness"], 1);
}

/// At `max_turns` the last turn's tool calls are still run and recorded
/// (evidence, and tool messages the model never sees) and count in the
/// trajectory; the attempt fails with `turn_limit` alone.
#[test]
fn the_turn_limit_fails_the_attempt() {
    let server = server();
    let expect = json!({"trajectory": [{"kind": "count", "call": {"tool": "notes", "operation": "add", "status": "ok"}, "exactly": 4}]});
    let (code, results, _) = run(&server, "loop", json!([model_case("c", expect)]), &[]);
    assert_eq!(code, 1);
    let a = attempt(&results);
    assert_eq!(a["outcome"], "failed");
    assert_eq!(a["unmet"].as_array().unwrap().len(), 1, "{a:#}");
    assert_eq!(a["unmet"][0]["code"], "turn_limit");
    assert_eq!(a["unmet"][0]["at"], "/cases/0/driver/max_turns");
    assert_eq!(a["calls"].as_array().unwrap().len(), 4);
    // Four requests, four answered calls: the fourth turn's answer closes
    // the conversation, and the model was never asked again.
    assert_eq!(
        roles(a),
        [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant",
            "tool"
        ]
    );
    assert_eq!(tool_message(a, 9), json!({"id": "n-1"}));
    let counts = reqwest_get(&format!("{}/../counts", server.url));
    assert_eq!(counts["loop"], 4, "{counts}");
}

#[test]
fn a_model_case_without_a_model_is_refused_at_its_driver() {
    let dir = scratch();
    std::fs::write(
        dir.join("sim.json"),
        serde_json::to_vec(&document(json!([model_case("c", json!({}))]))).unwrap(),
    )
    .unwrap();
    let out = toolmock(&dir, &["run", "sim.json"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("sim.json: /cases/0/driver: model_not_configured:"),
        "{stderr}"
    );
}

#[test]
fn attempts_per_case_give_a_pass_rate_and_min_pass_rate_decides() {
    let server = server();
    let mut case = model_case("c", json!({"final_answer": {"contains": ["n-1"]}}));
    case["attempts"] = json!(4);
    let (code, results, _) = run(
        &server,
        "flaky",
        json!([case.clone()]),
        &["--min-pass-rate", "0.5"],
    );
    assert_eq!(code, 0, "{results:#}");
    let c = &results["cases"][0];
    assert_eq!(c["attempts"].as_array().unwrap().len(), 4);
    assert_eq!(c["pass_rate"], 0.5);
    assert_eq!(c["pass_k"], json!({"k": 4, "passed": false}));
    let outcomes: Vec<&str> = c["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["passed", "failed", "passed", "failed"]);
    assert_eq!(
        c["attempts"][1]["unmet"][0]["code"],
        "final_answer_contains"
    );
    let (code, _, _) = run(
        &server,
        "flaky",
        json!([case]),
        &["--min-pass-rate", "0.75"],
    );
    assert_eq!(code, 1);
}

fn judged(server: &Server, model: &str, judge: &str, expect_outcome: &str) -> Value {
    let expect = json!({"outcome": expect_outcome, "judge": {"rubric": "The agent adds the note and confirms it with its id."}});
    let mut case = model_case("c", expect);
    if model == "harness" {
        case["variants"] = json!([{"tool": "notes", "operation": "get", "variant": "missing"}]);
    }
    let (code, results, _) = run(server, model, json!([case]), &["--judge-model", judge]);
    assert_eq!(code, 0, "{results:#}");
    attempt(&results).clone()
}

#[test]
fn a_judge_grades_the_recorded_conversation() {
    let server = server();
    let passed = judged(&server, "correct", "judge_pass", "passed");
    assert_eq!(passed["judge"]["verdict"], "pass");
    assert_eq!(passed["judge"]["score"], 0.9);
    assert_eq!(
        passed["judge"]["reasoning"],
        "It added the note and said so."
    );
    let failed = judged(&server, "correct", "judge_fail", "failed");
    assert_eq!(failed["unmet"][0]["code"], "judge_verdict");
    assert_eq!(failed["unmet"][0]["at"], "/cases/0/expect/judge");
    // Garbage from the judge is the harness's fault, never a verdict.
    let garbage = judged(&server, "correct", "judge_garbage", "harness_error");
    assert_eq!(garbage["harness_errors"][0]["code"], "judge_failed");
    assert!(garbage.get("judge").is_none());
    // A judge is never asked to grade an attempt with a harness error.
    let broken = judged(&server, "harness", "judge_pass", "harness_error");
    assert!(broken.get("judge").is_none());
    let counts = reqwest_get(&format!("{}/../counts", server.url));
    assert_eq!(counts["judge_pass"], 1, "{counts}");
}

/// The judge's answer is read strictly (docs/agents.md): a verdict object
/// that repeats `verdict` (fail, then pass — serde_json alone keeps the
/// last) and one inside a Markdown code fence are `judge_failed`, never a
/// verdict; and what the judge answered never reaches the message.
#[test]
fn a_judge_answer_with_a_repeated_key_or_a_fence_is_judge_failed() {
    let server = server();
    for (judge, why) in [
        ("judge_duplicate", "repeats the key at /verdict"),
        ("judge_fenced", "Markdown code fence"),
        ("judge_garbage", "is not JSON"),
    ] {
        let attempt = judged(&server, "correct", judge, "harness_error");
        let error = &attempt["harness_errors"][0];
        assert_eq!(error["code"], "judge_failed", "{judge}: {attempt:#}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(why), "{judge}: {message}");
        assert!(
            !message.contains("ECHOED")
                && !message.contains("fenced")
                && !message.contains("looks fine"),
            "{judge}: {message}"
        );
        assert!(attempt.get("judge").is_none(), "{judge}");
    }
}

/// However many attempts run at once (`--jobs`), the model requests in
/// flight stay within `--model-concurrency`, and the bound is used.
#[test]
fn model_requests_in_flight_stay_within_the_configured_bound() {
    // Each answer takes 150 ms, so requests overlap whenever they may.
    let server = server_with(&["--delay-ms", "150"]);
    let dir = scratch();
    let mut case = model_case("c", json!({}));
    case["attempts"] = json!(8);
    std::fs::write(
        dir.join("sim.json"),
        serde_json::to_vec(&document(json!([case]))).unwrap(),
    )
    .unwrap();
    let out = toolmock(
        &dir,
        &[
            "run",
            "sim.json",
            "--json",
            "--jobs",
            "8",
            "--model-url",
            &server.url,
            "--model",
            "correct",
            "--model-concurrency",
            "2",
        ],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let counts = reqwest_get(&format!("{}/../counts", server.url));
    assert_eq!(counts["correct"], 16, "{counts}");
    assert_eq!(counts["max_in_flight"], 2, "{counts}");
}
