//! Model cassettes through the real `toolmock` binary: a suite of
//! model-driven cases recorded against the local OpenAI-compatible
//! conversation server (`fixtures/conversation-server/`), replayed with the
//! server stopped, missed with the pointer of a prompt change, extended by
//! `auto`, and checked by `toolmock check-cassette`.

#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Output;

mod conversation_common;

use conversation_common::{Server, attempts, reqwest_get, scratch, server};

/// `GET /counts`: the requests per conversation and the tokens answered.
fn counts(server: &Server) -> Value {
    reqwest_get(&format!("{}/../counts", server.url))
}

const KEY: &str = "sk-very-secret-key";

/// `toolmock ARGS` in `dir`, with the endpoint's key in the environment.
fn toolmock(dir: &Path, args: &[&str]) -> Output {
    conversation_common::toolmock(dir, args, &[("TOOLMOCK_MODEL_API_KEY", KEY)])
}

/// A model case playing the server's conversation `conversation`.
fn case(name: &str, conversation: &str, expect: Value) -> Value {
    json!({"name": name, "driver": {"type": "model", "messages": [format!("play {conversation}")], "max_turns": 4},
           "expect": expect})
}

/// Eleven model-driven cases (twelve attempts): tool calls, a recovered
/// bad call, an invented function, unreadable arguments, parallel calls,
/// retries after 429s, a domain error, a harness fault, the turn limit and
/// a judge.
fn suite(prompt: &str, extra: &[Value]) -> Value {
    let mut cases = vec![
        {
            let mut c = case(
                "adds a note",
                "correct",
                json!({"final_answer": {"contains": ["n-1"]}}),
            );
            c["attempts"] = json!(2);
            c
        },
        case("recovers from bad arguments", "bad_then_fixed", json!({})),
        case("invents a function", "invented", json!({})),
        case("writes broken arguments", "malformed", json!({})),
        case(
            "adds two at once",
            "parallel",
            json!({"final_answer": {"contains": ["n-2"]}}),
        ),
        case("is rate limited", "rate_limited", json!({})),
        case(
            "meets a domain error",
            "domain",
            json!({"final_answer": {"contains": ["n-9"]}}),
        ),
        {
            let mut c = case(
                "meets a harness fault",
                "harness",
                json!({"outcome": "harness_error"}),
            );
            c["variants"] = json!([{"tool": "notes", "operation": "get", "variant": "missing"}]);
            c
        },
        case("loops", "loop", json!({"outcome": "failed"})),
        case(
            "is judged",
            "correct",
            json!({"judge": {"rubric": "The agent adds the note and confirms it."}}),
        ),
        case(
            "is judged again",
            "parallel",
            json!({"judge": {"rubric": "The agent adds both notes."}}),
        ),
    ];
    cases.extend(extra.iter().cloned());
    json!({
        "simulation_version": 1,
        "name": "notes suite",
        "tools": [{
            "name": "notes", "from": "custom",
            "operations": [
                {"name": "add", "description": "Adds a note.",
                 "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": false},
                 "output_schema": {"type": "object", "required": ["id"]}},
                {"name": "get", "description": "Reads the last note.", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}},
                {"name": "remove", "description": "Removes a note.", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}}
            ],
            "definitions": {
                "add": {
                    "schema_version": 1, "default_variant": "ok",
                    "variants": {"ok": {"result": {"id": "n-1"},
                                        "rules": [{"when": [{"source": "input", "path": "text", "op": "eq", "value": "b"}], "result": {"id": "n-2"}}]}},
                    "examples": [{"variant": "ok", "input": {"text": "a"}, "expected": {"id": "n-1"}}]
                },
                "get": {
                    "schema_version": 1, "default_variant": "ok",
                    "variants": {"ok": {"result": {"last": null}}},
                    "examples": [{"variant": "ok", "input": {}, "expected": {"last": null}}]
                },
                "remove": {
                    "schema_version": 2, "default_variant": "gone",
                    "variants": {"gone": {"error": {"code": "note_not_found", "message": "No such note"}}},
                    "examples": [{"variant": "gone", "input": {"id": "n-9"},
                                  "expected_error": {"code": "note_not_found", "message": "No such note"}}]
                }
            }
        }],
        "agent": {"name": "scribe", "prompt": prompt, "tools": ["notes"]},
        "cases": cases
    })
}

/// What one run printed and wrote.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
    evidence: Vec<(String, String)>,
}

fn run(dir: &Path, sim: &Value, name: &str, flags: &[&str]) -> Ran {
    std::fs::write(
        dir.join("sim.json"),
        serde_json::to_vec_pretty(sim).unwrap(),
    )
    .unwrap();
    let evidence = dir.join(format!("evidence-{name}"));
    let evidence_arg = evidence.display().to_string();
    let mut args = vec![
        "run",
        "sim.json",
        "--json",
        "--jobs",
        "2",
        "--evidence",
        &evidence_arg,
    ];
    args.extend_from_slice(flags);
    let out = toolmock(dir, &args);
    let mut files = Vec::new();
    for entry in walk(&evidence) {
        let text = std::fs::read_to_string(&entry).unwrap();
        files.push((
            entry.strip_prefix(&evidence).unwrap().display().to_string(),
            timeless(&text),
        ));
    }
    files.sort();
    let ran = Ran {
        code: out.status.code().unwrap(),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
        evidence: files,
    };
    assert!(!ran.stdout.contains(KEY) && !ran.stderr.contains(KEY));
    ran
}

/// Evidence lines without the run's clock (`at`, `started_at`: when a
/// record was written; `duration_us`: how long a call took), which no two
/// runs share, replayed or not.
fn timeless(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut value: Value = serde_json::from_str(line).unwrap();
        for clock in ["at", "started_at", "duration_us"] {
            value.as_object_mut().unwrap().remove(clock);
        }
        out.push_str(&value.to_string());
        out.push('\n');
    }
    out
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

fn results(ran: &Ran) -> Value {
    serde_json::from_str(&ran.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", ran.stdout, ran.stderr))
}

#[test]
fn a_recorded_suite_replays_offline_byte_for_byte_and_misses_on_a_prompt_change() {
    let dir = scratch();
    let sim = suite("You keep notes.", &[]);
    let server = server();
    let mut record = live(&server).to_vec();
    record.extend([
        "--cassette",
        "cassette",
        "--cassette-mode",
        "record",
        "--price",
        "suite=2,8",
        "--junit",
        "junit.xml",
    ]);
    let recorded = run(&dir, &sim, "record", &record);
    assert_eq!(recorded.code, 0, "{}{}", recorded.stdout, recorded.stderr);
    let outcomes: Vec<String> = attempts(&results(&recorded))
        .iter()
        .map(|(_, a)| a["outcome"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(outcomes.len(), 12);
    assert!(
        recorded.stderr.contains("0 exchange(s) replayed"),
        "{}",
        recorded.stderr
    );
    let counts = counts(&server);
    drop(server);

    // Usage: each answer's tokens, summed per attempt, case and run, equal
    // what the server counted; priced by --price; in the evidence and JUnit.
    let document = results(&recorded);
    let tokens = &document["summary"]["tokens"];
    assert_eq!(tokens["prompt_tokens"], counts["prompt_tokens"], "{tokens}");
    assert_eq!(tokens["completion_tokens"], counts["completion_tokens"]);
    assert_eq!(tokens["requests"], counts["answered"]);
    let (prompt, completion) = (
        counts["prompt_tokens"].as_f64().unwrap(),
        counts["completion_tokens"].as_f64().unwrap(),
    );
    let cost = tokens["cost"].as_f64().unwrap();
    assert!(
        (cost - (prompt * 2.0 + completion * 8.0) / 1e6).abs() < 1e-9,
        "{cost}"
    );
    let per_case: u64 = document["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["tokens"]["prompt_tokens"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(per_case, counts["prompt_tokens"].as_u64().unwrap());
    let usage_lines: usize = recorded
        .evidence
        .iter()
        .map(|(_, text)| text.matches("\"kind\":\"model_usage\"").count())
        .sum();
    assert_eq!(usage_lines as u64, counts["answered"].as_u64().unwrap());
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(
        junit.contains("<property name=\"prompt_tokens\" value=\""),
        "{junit}"
    );

    // The cassette: one file per case, sorted canonical lines, no key, no URL.
    let cassette = dir.join("cassette");
    let mut lines = 0;
    for file in walk(&cassette) {
        let text = std::fs::read_to_string(&file).unwrap();
        for secret in [KEY, "127.0.0.1", "http://", "Bearer"] {
            assert!(!text.contains(secret), "{} holds {secret}", file.display());
        }
        lines += text.lines().count();
    }
    assert_eq!(lines as u64, requests(&counts), "one line per request sent");
    assert!(cassette.join("adds-a-note.jsonl").exists());
    let check = toolmock(&dir, &["check-cassette", "sim.json", "cassette"]);
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );

    // The server is gone: the replay prints and writes the same bytes.
    let replayed = run(
        &dir,
        &sim,
        "replay",
        &[
            "--cassette",
            "cassette",
            "--cassette-mode",
            "replay",
            "--price",
            "suite=2,8",
        ],
    );
    assert_eq!(replayed.code, recorded.code);
    assert_eq!(replayed.stdout, recorded.stdout);
    assert_eq!(replayed.evidence, recorded.evidence);
    assert!(
        replayed
            .stderr
            .contains(&format!("{lines} exchange(s) replayed, 0 recorded")),
        "{}",
        replayed.stderr
    );

    // The table has a tokens column and a tokens line.
    let table = toolmock(&dir, &["run", "sim.json", "--cassette", "cassette"]);
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(table.contains("pass^k  tokens"), "{table}");
    assert!(
        table.contains(&format!("tokens: {} in", (prompt + completion) as u64)),
        "{table}"
    );

    // A changed prompt: every model attempt is cassette_miss at the system
    // message, never a pass and never a live call.
    let changed = suite("You keep lists.", &[]);
    let missed = run(&dir, &changed, "changed", &["--cassette", "cassette"]);
    assert_eq!(missed.code, 1);
    for (case, attempt) in attempts(&results(&missed)) {
        assert_eq!(attempt["outcome"], "harness_error", "{case}");
        let error = &attempt["harness_errors"][0];
        assert_eq!(error["code"], "cassette_miss", "{case}");
        assert_eq!(error["path"], "/messages/0/content", "{case}");
        let number = attempt["number"].as_u64().unwrap();
        let named = format!("case {case:?}, attempt {number}, agent turn 1");
        assert!(
            error["message"].as_str().unwrap().contains(&named),
            "{error}"
        );
    }
    let check = toolmock(&dir, &["check-cassette", "sim.json", "cassette"]);
    let said = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(1), "{said}");
    assert!(
        said.contains(": /messages/0/content: cassette_stale: "),
        "{said}"
    );
    assert_eq!(said.matches("cassette_stale").count(), lines - 2, "{said}");
}

/// The requests the server answered with a completion: the suite's
/// (`answered`, never a 429) and the judge's (under its model name).
fn requests(counts: &Value) -> u64 {
    counts["answered"].as_u64().unwrap_or(0) + counts["judge_pass"].as_u64().unwrap_or(0)
}

#[test]
fn auto_records_only_the_new_turns() {
    let dir = scratch();
    let server = server();
    let mut flags = live(&server).to_vec();
    flags.extend(["--cassette", "cassette", "--cassette-mode", "auto"]);
    let first = run(&dir, &suite("You keep notes.", &[]), "first", &flags);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let before = requests(&counts(&server));
    let bytes: Vec<(PathBuf, Vec<u8>)> = walk(&dir.join("cassette"))
        .into_iter()
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    // One new case: only its two turns reach the server.
    let new = case("adds another note", "correct", json!({}));
    let second = run(&dir, &suite("You keep notes.", &[new]), "second", &flags);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert_eq!(requests(&counts(&server)) - before, 2);
    assert!(
        second
            .stderr
            .contains(&format!("{before} exchange(s) replayed, 2 recorded")),
        "{}",
        second.stderr
    );
    for (path, old) in bytes {
        assert_eq!(
            std::fs::read(&path).unwrap(),
            old,
            "{} changed",
            path.display()
        );
    }
    assert!(dir.join("cassette/adds-another-note.jsonl").exists());
}

#[test]
fn check_cassette_finds_orphans_edits_and_bad_lines() {
    let dir = scratch();
    let server = server();
    let flags = [
        "--model-url",
        server.url.as_str(),
        "--model",
        "suite",
        "--cassette",
        "cassette",
        "--cassette-mode",
        "record",
    ];
    let sim = json!({"cases": [case("adds a note", "correct", json!({}))]});
    let mut document = suite("You keep notes.", &[]);
    document["cases"] = sim["cases"].clone();
    let ran = run(&dir, &document, "record", &flags);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let file = dir.join("cassette/adds-a-note.jsonl");
    let text = std::fs::read_to_string(&file).unwrap();
    let mut first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    first["case"] = json!("gone");
    let mut edited: Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    edited["request"]["messages"][1]["content"] = json!("play invented");
    std::fs::write(
        dir.join("cassette/other.jsonl"),
        format!("{first}\n{edited}\nnot json\n"),
    )
    .unwrap();
    let check = toolmock(&dir, &["check-cassette", "sim.json", "cassette"]);
    let said = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(1), "{said}");
    assert!(
        said.contains("other.jsonl:1: : cassette_orphan: the document has no case \"gone\""),
        "{said}"
    );
    assert!(
        said.contains("other.jsonl:2: /key: cassette_key_mismatch: "),
        "{said}"
    );
    assert!(
        said.contains(
            "other.jsonl:2: : cassette_orphan: cassette/adds-a-note.jsonl:2 holds the same turn"
        ),
        "{said}"
    );
    assert!(
        said.contains("other.jsonl:3: : cassette_invalid: "),
        "{said}"
    );
    // A replay refuses a cassette with a line it cannot read.
    let refused = toolmock(&dir, &["run", "sim.json", "--cassette", "cassette"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("cassette_invalid"));
}

#[test]
fn a_budget_runs_out_mid_suite_and_replays_cost_nothing() {
    let dir = scratch();
    let sim = suite("You keep notes.", &[]);
    let server = server();
    let live = live(&server);
    let mut record = live.to_vec();
    record.extend(["--cassette", "cassette", "--cassette-mode", "record"]);
    let full = run(&dir, &sim, "full", &record);
    assert_eq!(full.code, 0, "{}", full.stderr);
    let answered = counts(&server)["answered"].as_u64().unwrap();

    // 60 tokens: a few requests, then none.
    let mut limited = live.to_vec();
    limited.extend(["--max-tokens", "60"]);
    let ran = run(&dir, &sim, "limited", &limited);
    assert_eq!(ran.code, 3, "{}", ran.stderr);
    assert!(ran.stderr.contains("the budget ran out"), "{}", ran.stderr);
    let document = results(&ran);
    let all = attempts(&document);
    assert_eq!(all.len(), 12, "the report is complete");
    let exhausted = all
        .iter()
        .filter(|(_, a)| a["harness_errors"][0]["code"] == "budget_exhausted")
        .count();
    assert!(exhausted > 0 && exhausted < 12, "{exhausted}");
    for (case, a) in &all {
        if a["harness_errors"][0]["code"] == "budget_exhausted" {
            assert_eq!(a["outcome"], "harness_error", "{case}");
        }
    }
    assert!(all.iter().any(|(_, a)| a["outcome"] == "passed"));
    let sent = counts(&server)["answered"].as_u64().unwrap() - answered;
    assert!(sent < answered, "{sent} of {answered} requests were sent");

    // Replayed answers cost nothing: one token is enough.
    let replay = run(
        &dir,
        &sim,
        "replay",
        &["--cassette", "cassette", "--max-tokens", "1"],
    );
    assert_eq!(replay.code, 0, "{}", replay.stderr);
    assert_eq!(replay.stdout, full.stdout);

    // A cost budget needs a price.
    let refused = toolmock(
        &dir,
        &[
            "run",
            "sim.json",
            "--cassette",
            "cassette",
            "--max-cost",
            "1",
        ],
    );
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--max-cost needs --price"));
}

/// `auto` with one case changed and a budget smaller than the recorded
/// usage but larger than the changed case's new turns: the replayed
/// answers cost nothing (the budget is not exhausted), are reported as
/// replayed in `--json`, `--evidence`, JUnit and the table, and only the
/// new turns are sent; the same budget live runs out.
#[test]
fn auto_charges_only_the_new_turns_and_reports_the_replayed_ones_apart() {
    let dir = scratch();
    let server = server();
    let live = live(&server);
    let sim = suite("You keep notes.", &[]);
    let mut record = live.to_vec();
    record.extend(["--cassette", "cassette", "--cassette-mode", "record"]);
    let recorded = run(&dir, &sim, "record", &record);
    assert_eq!(recorded.code, 0, "{}", recorded.stderr);
    let recorded = results(&recorded);
    let recorded_total = total(&recorded["summary"]["tokens"]);
    // The changed case will play the conversation "adds a note" played:
    // the same requests, so the same tokens.
    let new_tokens = total(&recorded["cases"][0]["attempts"][0]["tokens"]);
    let budget = new_tokens + 1;
    assert!(budget < recorded_total, "{budget} of {recorded_total}");
    let budget_flag = budget.to_string();

    let mut changed = sim.clone();
    let position = changed["cases"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c["name"] == "invents a function")
        .unwrap();
    changed["cases"][position]["driver"]["messages"] = json!(["play correct"]);
    let before = counts(&server)["answered"].as_u64().unwrap();
    let mut auto = live.to_vec();
    auto.extend([
        "--cassette",
        "cassette",
        "--cassette-mode",
        "auto",
        "--max-tokens",
        &budget_flag,
        "--junit",
        "junit.xml",
    ]);
    let ran = run(&dir, &changed, "auto", &auto);
    assert_eq!(ran.code, 0, "{}{}", ran.stdout, ran.stderr);
    assert!(!ran.stderr.contains("budget ran out"), "{}", ran.stderr);
    assert_eq!(counts(&server)["answered"].as_u64().unwrap() - before, 2);
    let document = results(&ran);
    for (case, attempt) in attempts(&document) {
        assert_eq!(attempt["as_expected"], true, "{case}: {attempt}");
        let requests = attempt["model_requests"].as_array().unwrap();
        let fresh = case == "invents a function";
        for request in requests {
            assert_eq!(
                request.get("replayed").is_some(),
                !fresh,
                "{case}: {request}"
            );
        }
        let replayed = attempt["tokens"]["replayed_requests"].as_u64().unwrap_or(0);
        assert_eq!(
            replayed,
            if fresh { 0 } else { requests.len() as u64 },
            "{case}"
        );
    }
    let tokens = &document["summary"]["tokens"];
    let replayed_tokens = tokens["replayed_tokens"].as_u64().unwrap();
    assert_eq!(total(tokens) - replayed_tokens, new_tokens, "{tokens}");
    assert_eq!(
        tokens["replayed_requests"].as_u64().unwrap() + 2,
        tokens["requests"].as_u64().unwrap(),
        "{tokens}"
    );
    let evidence: String = ran.evidence.iter().map(|(_, t)| t.as_str()).collect();
    assert!(evidence.contains("\"replayed\":true"), "{evidence}");
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(
        junit.contains("<property name=\"replayed_requests\" value=\""),
        "{junit}"
    );
    assert_eq!(
        junit
            .matches("<property name=\"replayed_requests\"")
            .count(),
        attempts(&document).len() - 1,
        "every attempt but the changed one"
    );

    // The table's tokens line: everything replayed now, nothing sent.
    let table = toolmock(
        &dir,
        &[
            "run",
            "sim.json",
            "--cassette",
            "cassette",
            "--cassette-mode",
            "auto",
        ],
    );
    let table = String::from_utf8(table.stdout).unwrap();
    let all = tokens["requests"].as_u64().unwrap();
    assert!(
        table.contains(&format!("{all} replayed ({} tokens)", total(tokens))),
        "{table}"
    );

    // The same budget, live: it runs out.
    let mut limited = live.to_vec();
    limited.extend(["--max-tokens", &budget_flag]);
    let live_run = run(&dir, &changed, "live", &limited);
    assert_eq!(live_run.code, 3, "{}", live_run.stderr);
    assert!(
        live_run.stderr.contains("the budget ran out"),
        "{}",
        live_run.stderr
    );
}

/// The flags of a run against `server`: the suite's model and the judge.
fn live(server: &Server) -> [&str; 6] {
    [
        "--model-url",
        server.url.as_str(),
        "--model",
        "suite",
        "--judge-model",
        "judge_pass",
    ]
}

/// Prompt plus completion tokens of a `tokens` object.
fn total(tokens: &Value) -> u64 {
    tokens["prompt_tokens"].as_u64().unwrap() + tokens["completion_tokens"].as_u64().unwrap()
}
