//! `toolmock normalize`, `discover`, `generate` and `diff`, end to end
//! through the binary.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn toolmock(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolmock"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("the binary runs")
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("an exit code")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolmock-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

fn write(path: &Path, value: &Value) {
    std::fs::write(path, serde_json::to_vec_pretty(value).expect("serializes")).expect("writes");
}

fn s(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

#[test]
fn normalize_prints_contracts_with_their_hashes() {
    let dir = scratch("normalize");
    let out = toolmock(&[
        "normalize",
        "fixtures/salesforce/salesforce.manifest.json",
        "--out",
        s(&dir),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let entries: Value = serde_json::from_str(&stdout(&out)).expect("a JSON array");
    let entries = entries.as_array().expect("an array");
    let names: Vec<&str> = entries
        .iter()
        .map(|e| e["contract"]["operation"]["name"].as_str().expect("a name"))
        .collect();
    assert_eq!(
        names,
        [
            "salesforce__query",
            "salesforce__get_record",
            "salesforce__create_record",
            "salesforce__update_record",
            "salesforce__publish_platform_event"
        ]
    );
    for entry in entries {
        assert_eq!(entry["contract"]["operation"]["source"], "platform");
        let name = entry["contract"]["operation"]["name"]
            .as_str()
            .expect("a name");
        // The written contract hashes, via `toolmock hash`, to the printed hash.
        let file = dir.join(format!("{name}.contract.json"));
        let hashed = toolmock(&["hash", s(&file)]);
        assert_eq!(code(&hashed), 0, "{}", stderr(&hashed));
        assert_eq!(stdout(&hashed).trim(), entry["contract_hash"], "{name}");
    }
    let create = &entries[2]["contract"];
    assert_eq!(
        create["output_schema"]["properties"]["status"],
        json!({"const": 201})
    );
    assert_eq!(
        create["input_schema"]["required"],
        json!(["object_type", "fields"])
    );
}

#[test]
fn normalize_lists_every_problem_and_exits_1() {
    let out = toolmock(&["normalize", "fixtures/manifests/invalid.manifest.json"]);
    assert_eq!(code(&out), 1);
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    for line in [
        "/manifest_version: unsupported_manifest_version:",
        "/extra: unknown_field:",
        "/operations/0/name: invalid_runtime_name:",
        "/operations/0/parameters/0/type: unknown_parameter_type:",
        "/operations/0/parameters/1/name: duplicate_parameter:",
        "/operations/0/parameters/2/options: empty_options:",
        "/operations/0/parameters/3/options/0/value: option_type_mismatch:",
        "/operations/0/parameters/3/default: default_type_mismatch:",
        "/operations/0/required/0: required_not_a_parameter:",
        "/operations/0/output/envelope: unknown_envelope:",
        "/operations/0/output/status: invalid_status:",
        "/operations/1/output: invalid_output:",
    ] {
        assert!(err.contains(line), "missing {line:?} in\n{err}");
    }
    assert!(err.contains("12 problems"), "{err}");
}

#[test]
fn normalize_refuses_unreadable_files_with_exit_2() {
    let out = toolmock(&["normalize", "fixtures/no-such-manifest.json"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("cannot read"), "{}", stderr(&out));
    let dir = scratch("not-json");
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{not json").expect("writes");
    let out = toolmock(&["normalize", s(&bad)]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("invalid_json"), "{}", stderr(&out));
}

#[test]
fn generated_drafts_pass_toolmock_check_as_they_are() {
    let dir = scratch("generate");
    for manifest in [
        "fixtures/salesforce/salesforce.manifest.json",
        "fixtures/manifests/healthplus.manifest.json",
        "fixtures/manifests/spec-example.manifest.json",
    ] {
        let out = toolmock(&["normalize", manifest, "--out", s(&dir)]);
        assert_eq!(code(&out), 0, "{manifest}: {}", stderr(&out));
    }
    let mut contracts: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("lists")
        .map(|e| e.expect("an entry").path())
        .collect();
    contracts.sort();
    // The example manifest of docs/platform-manifest.md replaces the fixture's salesforce__create_record.
    assert_eq!(contracts.len(), 7, "{contracts:?}");
    let mut checked = 0;
    for contract in contracts {
        let draft = contract.with_extension("").with_extension("mock.json");
        let out = toolmock(&["generate", s(&contract)]);
        assert_eq!(code(&out), 0, "{}: {}", contract.display(), stderr(&out));
        std::fs::write(&draft, &out.stdout).expect("writes");
        let check = toolmock(&["check", s(&draft), "--contract", s(&contract)]);
        assert_eq!(code(&check), 0, "{}: {}", draft.display(), stdout(&check));
        assert!(stdout(&check).contains("ok (1 variant)"));
        checked += 1;
    }
    assert_eq!(checked, 7);
}

#[test]
fn generate_names_the_schema_paths_that_need_an_authored_mock() {
    let dir = scratch("needs");
    let contract = dir.join("code.contract.json");
    write(
        &contract,
        &json!({
            "operation": {"source": "custom", "name": "code"},
            "input_schema": {"type": "object", "properties": {"when": {"if": {"type": "string"}}}, "required": ["when"]},
            "output_schema": {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}}, "required": ["code"]}
        }),
    );
    let out = toolmock(&["generate", s(&contract)]);
    assert_eq!(code(&out), 1);
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    assert!(err.contains("needs_authored_mock"), "{err}");
    assert!(
        err.contains("/input_schema/properties/when/if: unsupported_keyword"),
        "{err}"
    );
    assert!(
        err.contains("/output_schema/properties/code/pattern: unsupported_keyword"),
        "{err}"
    );
    assert!(err.contains("2 problems"), "{err}");

    let out = toolmock(&["generate", "fixtures/no-such.contract.json"]);
    assert_eq!(code(&out), 2);
}

#[test]
fn diff_says_whether_and_why_the_hash_changed() {
    let dir = scratch("diff");
    let old = json!({
        "operation": {"source": "mcp", "name": "lookup"},
        "description": "Find",
        "input_schema": {"type": "object"},
        "output_schema": {"type": "object", "properties": {"visits": {"type": "integer", "maximum": 100}}}
    });
    let mut new = old.clone();
    new["description"] = json!("Find a patient");
    new["output_schema"]["properties"]["visits"]["maximum"] = json!(500);
    new["input_schema"]["required"] = json!([]);
    let (a, b) = (dir.join("old.json"), dir.join("new.json"));
    write(&a, &old);
    write(&b, &new);

    let same = toolmock(&["diff", s(&a), s(&a)]);
    assert_eq!(code(&same), 0);
    assert!(
        stdout(&same).starts_with("hash unchanged: "),
        "{}",
        stdout(&same)
    );

    let out = toolmock(&["diff", s(&a), s(&b)]);
    assert_eq!(code(&out), 1);
    let text = stdout(&out);
    assert!(text.starts_with("hash changed: "), "{text}");
    assert!(
        text.contains("description: \"Find\" -> \"Find a patient\""),
        "{text}"
    );
    assert!(text.contains("input_schema: added /required: []"), "{text}");
    assert!(
        text.contains("output_schema: changed /properties/visits/maximum: 100 -> 500"),
        "{text}"
    );

    let out = toolmock(&["diff", s(&a), s(&b), "--json"]);
    assert_eq!(code(&out), 1);
    let report: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(report["hash_changed"], true);
    assert_eq!(
        report["output_schema"][0]["path"],
        "/properties/visits/maximum"
    );

    let out = toolmock(&["diff", s(&a), "fixtures/no-such.json"]);
    assert_eq!(code(&out), 2);
}

#[test]
fn discover_prints_the_same_array_form() {
    let python = root().join(".cache/mcp-venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/install-mcp-servers.sh",
        python.display()
    );
    let command = format!("{} fixtures/mcp/fixture_server.py", python.display());
    let out = toolmock(&["discover", "--stdio", &command]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let entries: Value = serde_json::from_str(&stdout(&out)).expect("a JSON array");
    let entries = entries.as_array().expect("an array");
    assert_eq!(entries.len(), 4);
    for entry in &entries[..3] {
        assert_eq!(entry["status"], "ready");
        assert_eq!(entry["contract_hash"].as_str().map(str::len), Some(64));
        assert_eq!(entry["output_schema_source"], "discovered");
    }
    let reminder = &entries[3];
    assert_eq!(reminder["status"], "needs_output_schema");
    assert!(reminder.get("contract_hash").is_none());
    assert!(reminder["contract"].get("output_schema").is_none());
    assert_eq!(reminder["contract"]["operation"]["name"], "send_reminder");

    // With the library tool's own output schema as the fallback.
    let dir = scratch("discover");
    let fallback = dir.join("fallback.json");
    write(
        &fallback,
        &json!({"type": "object", "properties": {"sent": {"type": "boolean"}}}),
    );
    let out = toolmock(&[
        "discover",
        "--stdio",
        &command,
        "--fallback-output-schema",
        s(&fallback),
        "--out",
        s(&dir),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let entries: Value = serde_json::from_str(&stdout(&out)).expect("a JSON array");
    assert_eq!(entries[3]["status"], "ready");
    assert_eq!(entries[3]["output_schema_source"], "fallback");
    assert!(dir.join("send_reminder.contract.json").exists());
}

#[test]
fn discover_refuses_unusable_endpoints() {
    let out = toolmock(&["discover", "--url", "ftp://example.invalid/mcp"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("invalid_url"), "{}", stderr(&out));
    let out = toolmock(&["discover", "--stdio", "'unterminated"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("invalid_command"), "{}", stderr(&out));
    let out = toolmock(&["discover", "--stdio", "/nonexistent/toolmock-server"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("spawn_failed"), "{}", stderr(&out));
    let out = toolmock(&["discover"]);
    assert_eq!(code(&out), 2);
}

#[test]
fn every_new_command_documents_itself_with_an_example() {
    for command in ["normalize", "discover", "generate", "diff"] {
        let out = toolmock(&[command, "--help"]);
        assert_eq!(code(&out), 0);
        let help = stdout(&out);
        assert!(
            help.contains("Example:"),
            "{command} --help has no example:\n{help}"
        );
        assert!(
            help.contains(&format!("toolmock {command}")),
            "{command}: {help}"
        );
    }
}

#[test]
fn version_names_the_package_version_and_the_commit() {
    let out = toolmock(&["--version"]);
    assert_eq!(code(&out), 0);
    let printed = stdout(&out);
    // Built in a git checkout: its HEAD, as `git rev-parse --short=12` names it.
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map_or_else(
            || "unknown".to_owned(),
            |o| String::from_utf8_lossy(&o.stdout).trim().to_owned(),
        );
    let commit = std::env::var("TOOLMOCK_COMMIT").unwrap_or(head);
    assert_eq!(
        printed,
        format!("toolmock {} (commit {commit})\n", env!("CARGO_PKG_VERSION"))
    );
}
