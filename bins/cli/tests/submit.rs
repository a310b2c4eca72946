//! `toolmock submit`: the real binary sends HealthPlus to the API (served on
//! a real socket over PostgreSQL, with two workers running its attempts) and
//! prints the same table as `toolmock run`; a refused document, a wrong
//! token and an unreachable API each end with their own message and exit code.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed expectation must panic

mod service_common;

use service_common::{Service, token};

use sqlx::PgPool;
use std::path::{Path, PathBuf};
use std::process::Output;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

async fn toolmock(args: Vec<String>, token: Option<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_toolmock"));
        command
            .current_dir(root())
            .args(&args)
            .env_remove("TOOLMOCK_TOKEN");
        if let Some(token) = token {
            command.env("TOOLMOCK_TOKEN", token);
        }
        command.output().unwrap()
    })
    .await
    .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const HEALTHPLUS: &str = "fixtures/healthplus/simulation.json";

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn healthplus_through_the_api_prints_the_table_toolmock_run_prints(pool: PgPool) {
    let service = Service::start(&pool, "submit-worker", &toolmock_worker::Agents::none()).await;
    let embedded = toolmock(vec!["run".into(), HEALTHPLUS.into()], None).await;
    let junit = Path::new(env!("CARGO_TARGET_TMPDIR")).join("submit-healthplus.xml");
    let submitted = toolmock(
        vec![
            "submit".into(),
            HEALTHPLUS.into(),
            "--api".into(),
            service.base.clone(),
            "--junit".into(),
            junit.display().to_string(),
        ],
        Some(token(&["AIManager:RunSimulations"])),
    )
    .await;
    assert_eq!(
        text(&submitted.stdout),
        text(&embedded.stdout),
        "stderr: {}",
        text(&submitted.stderr)
    );
    assert_eq!(submitted.status.code(), embedded.status.code());
    assert_eq!(submitted.status.code(), Some(0));
    assert!(text(&submitted.stderr).contains("the API ran 24 attempts"));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("<testsuite"), "{xml}");

    // --json gives the document `toolmock run --json` gives.
    let json = toolmock(
        vec![
            "submit".into(),
            HEALTHPLUS.into(),
            "--api".into(),
            service.base.clone(),
            "--json".into(),
        ],
        Some(token(&["AIManager:RunSimulations"])),
    )
    .await;
    let embedded = toolmock(vec!["run".into(), HEALTHPLUS.into(), "--json".into()], None).await;
    let (mut submitted, mut embedded): (serde_json::Value, serde_json::Value) = (
        serde_json::from_slice(&json.stdout).unwrap(),
        serde_json::from_slice(&embedded.stdout).unwrap(),
    );
    // The pins differ in kind only: the API pins the file's tools inline, the
    // embedded runtime as revisions of its own library; the hashes agree.
    for results in [&mut submitted, &mut embedded] {
        for op in results["coverage"].as_array_mut().unwrap() {
            assert!(op["definition_hash"].is_string(), "{op}");
            op.as_object_mut().unwrap().remove("pin");
        }
    }
    assert_eq!(submitted, embedded);
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn refusals_end_with_the_api_s_own_words(pool: PgPool) {
    let service = Service::start(&pool, "submit-worker", &toolmock_worker::Agents::none()).await;
    // A file that loads here but that the API refuses at the start (its
    // definition's example does not hold): the API's problems with their
    // paths, exit 2 as `toolmock run` does for a file it refuses.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("submit-refused");
    std::fs::create_dir_all(&dir).unwrap();
    let notes = |expected: serde_json::Value| {
        serde_json::to_vec(&serde_json::json!({
            "simulation_version": 1, "name": "notes",
            "tools": [{"name": "notes", "from": "custom", "operations": [{"name": "add",
                "input_schema": {"type": "object"},
                "output_schema": {"type": "object", "properties": {"id": {"type": "integer"}}}}],
                "definitions": {"add": {"schema_version": 1, "default_variant": "ok",
                    "variants": {"ok": {"result": {"id": 1}}},
                    "examples": [{"variant": "ok", "input": {}, "expected": expected}]}}}],
            "agent": {"name": "a", "tools": ["notes"]},
            "cases": [{"name": "c", "driver": {"type": "scripted", "steps": [
                {"tool": "notes", "operation": "add", "arguments": {}}]}}]
        }))
        .unwrap()
    };
    let file = dir.join("notes.json");
    std::fs::write(&file, notes(serde_json::json!({"id": 1}))).unwrap();
    let refused = dir.join("refused.json");
    std::fs::write(&refused, notes(serde_json::json!({"id": 2}))).unwrap();
    let args = |f: &Path| {
        vec![
            "submit".to_owned(),
            f.display().to_string(),
            "--api".into(),
            service.base.clone(),
        ]
    };
    let ok = toolmock(args(&file), Some(token(&["AIManager:RunSimulations"]))).await;
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    let out = toolmock(args(&refused), Some(token(&["AIManager:RunSimulations"]))).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let said = text(&out.stderr);
    assert!(
        said.contains("invalid_definition at /tools/0/definitions/add: ")
            && said.contains("example_mismatch"),
        "{said}"
    );
    assert!(out.stdout.is_empty());

    // A real_tools document whose case is played by an outside agent: its
    // calls would come through the API's attempt endpoints, which only
    // mock, so the API refuses the start naming the case (exit 2).
    let mut outside: serde_json::Value =
        serde_json::from_slice(&notes(serde_json::json!({"id": 1}))).unwrap();
    outside["mode"] = serde_json::json!("real_tools");
    outside["tools"][0]["operations"][0]["endpoint"] = serde_json::json!("http://127.0.0.1:9/add");
    outside["cases"][0]["driver"] = serde_json::json!({"type": "external"});
    let real = dir.join("real-external.json");
    std::fs::write(&real, serde_json::to_vec(&outside).unwrap()).unwrap();
    let out = toolmock(args(&real), Some(token(&["AIManager:RunSimulations"]))).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let said = text(&out.stderr);
    assert!(
        said.contains(
            "/cases/0/driver/type: real_tools_through_api: case \"c\" has an external driver"
        ),
        "{said}"
    );

    // A file that does not load: the loader's problems, nothing sent.
    let broken = dir.join("broken.json");
    std::fs::write(&broken, b"{\"simulation_version\": 1").unwrap();
    let out = toolmock(args(&broken), Some(token(&["AIManager:RunSimulations"]))).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("1 problem"),
        "{}",
        text(&out.stderr)
    );

    // A token without the permission: the API's code, exit 1.
    let out = toolmock(args(&file), Some(token(&["AIManager:ManageTools"]))).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("forbidden"),
        "{}",
        text(&out.stderr)
    );

    // No token at all: clap says which flag or variable is missing.
    let out = toolmock(args(&file), None).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--token"),
        "{}",
        text(&out.stderr)
    );

    // Nothing listening: the address in the message, exit 1.
    let out = toolmock(
        vec![
            "submit".into(),
            file.display().to_string(),
            "--api".into(),
            "http://127.0.0.1:9".into(),
        ],
        Some(token(&["AIManager:RunSimulations"])),
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("cannot reach the API at http://127.0.0.1:9/api/simulations"),
        "{}",
        text(&out.stderr)
    );
}
