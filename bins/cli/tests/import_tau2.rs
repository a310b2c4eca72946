//! `toolmock import tau2` on the installed benchmark's retail domain
//! (`.cache/tau2-venv`, scripts/install-test-tools.sh) with the ported
//! mocks of `fixtures/tau2-retail/`: one case per task whose expected
//! actions are all ported, each expecting the database its expected actions
//! leave when replayed through the same mocks. Then the suite runs against
//! the conversation server playing the agent (it replays each task's
//! expected actions) and the user (it says its instructions, then stops):
//! every case passes, and an agent that skips each task's last action fails
//! exactly the cases whose database that action changes.

#![allow(clippy::unwrap_used)]

mod conversation_common;

use conversation_common::{root, scratch, server_with, toolmock};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Output;

fn retail() -> PathBuf {
    let lib = root().join(".cache/tau2-venv/lib");
    let python = std::fs::read_dir(&lib)
        .unwrap_or_else(|e| panic!("{}: {e}: run scripts/install-test-tools.sh", lib.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("python"))
        })
        .expect("the tau2 venv's python library");
    python.join("site-packages/tau2/data/tau2/domains/retail")
}

fn run(args: &[&str]) -> Output {
    toolmock(&root(), args, &[])
}

/// The tasks every expected action of which has a ported mock.
fn portable(tasks: &[Value]) -> Vec<&Value> {
    let mocks = root().join("fixtures/tau2-retail/mocks");
    tasks
        .iter()
        .filter(|t| {
            t["evaluation_criteria"]["actions"]
                .as_array()
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .all(|a| {
                    mocks
                        .join(format!("{}.json", a["name"].as_str().unwrap()))
                        .exists()
                })
        })
        .collect()
}

#[test]
fn imported_retail_tasks_pass_with_their_expected_actions_and_fail_without_the_last() {
    let retail = retail();
    let dir = scratch();
    let suite = dir.join("suite.json");
    let path = |p: PathBuf| p.to_str().unwrap().to_owned();
    let out = run(&[
        "import",
        "tau2",
        "--domain",
        "retail",
        "--tasks",
        &path(retail.join("tasks.json")),
        "--db",
        &path(retail.join("db.json")),
        "--policy",
        &path(retail.join("policy.md")),
        "--mocks",
        &path(root().join("fixtures/tau2-retail/mocks")),
        "--out",
        &path(suite.clone()),
        "--attempts",
        "1",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tasks: Vec<Value> =
        serde_json::from_slice(&std::fs::read(retail.join("tasks.json")).unwrap()).unwrap();
    let portable = portable(&tasks);
    let document: Value = serde_json::from_slice(&std::fs::read(&suite).unwrap()).unwrap();
    let cases = document["cases"].as_array().unwrap();
    assert_eq!(cases.len(), portable.len(), "every portable task is a case");
    assert!(cases.len() >= 40, "{} cases", cases.len());
    // The mapping, on the first task with something to communicate.
    let (case, task) = cases
        .iter()
        .zip(&portable)
        .find(|(_, t)| {
            t["evaluation_criteria"]["communicate_info"]
                .as_array()
                .is_some_and(|i| !i.is_empty())
        })
        .unwrap();
    assert_eq!(
        case["name"],
        format!("task {}", task["id"].as_str().unwrap())
    );
    assert_eq!(
        case["expect"]["agent_said"]["contains"],
        task["evaluation_criteria"]["communicate_info"]
    );
    let instructions = case["user"]["instructions"].as_str().unwrap();
    assert!(
        instructions.starts_with("Domain: retail\nReason for call:\n\t"),
        "{instructions}"
    );
    assert!(
        document["agent"]["prompt"]
            .as_str()
            .unwrap()
            .contains("<policy>\n")
    );
    let check = run(&["run", &path(suite.clone()), "--check"]);
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );

    let server = server_with(&["--tau2-tasks", &path(retail.join("tasks.json"))]);
    let play = |agent: &str| -> (i32, Value) {
        let out = run(&[
            "run",
            &path(suite.clone()),
            "--json",
            "--jobs",
            "4",
            "--model-url",
            &server.url,
            "--model",
            agent,
            "--user-model",
            "tau2_user",
        ]);
        let results: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        (out.status.code().unwrap(), results)
    };
    let (code, results) = play("tau2_agent");
    assert_eq!(code, 0, "{:#}", results["summary"]);
    assert_eq!(results["summary"]["passed"], json!(cases.len()));
    // Every conversation ended on the user's stop marker.
    for case in results["cases"].as_array().unwrap() {
        let last = case["attempts"][0]["conversation"]
            .as_array()
            .unwrap()
            .last()
            .unwrap();
        assert_eq!(last["stop"], "###STOP###", "{last}");
    }
    let (code, skipped) = play("tau2_agent_skip");
    assert_eq!(code, 1);
    let mut failed = 0;
    for (case, imported) in skipped["cases"].as_array().unwrap().iter().zip(cases) {
        let attempt = &case["attempts"][0];
        // A task that changes nothing and has nothing to say passes
        // whatever read the agent skips, in toolmock as in the benchmark.
        let nothing_to_miss = imported["expect"]["final_state"]["subset"]
            .as_object()
            .is_some_and(serde_json::Map::is_empty)
            && imported["expect"].get("agent_said").is_none();
        if nothing_to_miss {
            assert_eq!(attempt["outcome"], "passed", "{attempt:#}");
        }
        if attempt["outcome"] == "failed" {
            failed += 1;
            assert!(
                attempt["unmet"].as_array().unwrap().iter().any(|u| u["at"]
                    .as_str()
                    .unwrap()
                    .contains("/expect/final_state")
                    || u["code"] == "agent_said_contains"),
                "{attempt:#}"
            );
        } else {
            assert_eq!(attempt["outcome"], "passed", "{attempt:#}");
        }
    }
    assert!(failed > 0 && failed < cases.len(), "{failed} failed");
}
