//! The simulation document as the API will take it: inline only, library
//! tools referenced by id, installed and run on the same runtime.

use serde_json::{Value, json};
use std::sync::Arc;
use toolmock_contract::{ContractHash, OperationIdentity, OperationSource};
use toolmock_runtime::backend::Catalog;
use toolmock_runtime::model::{NewOperation, NewTool, Provenance, SaveRevision, ToolKind};
use toolmock_runtime::{Dispatcher, MemoryStore};
use toolmock_simulation::{self as simulation, Files, RunOptions, SequenceClock, VirtualSleeper};

fn document(tool_id: &str) -> Value {
    json!({
        "simulation_version": 1,
        "name": "api",
        "tools": [{"name": "calendar", "from": "library", "id": tool_id}],
        "agent": {"name": "receptionist", "tools": ["calendar"]},
        "cases": [{"name": "books", "driver": {"type": "scripted", "steps": [
            {"tool": "calendar", "operation": "book", "arguments": {"day": "2026-12-04"},
             "expect": {"result": {"reference": "TEST-742"}}}]},
            "expect": {"final_state": {"exact": {"reference": "TEST-742", "booked": true}}}}]
    })
}

#[tokio::test]
async fn library_tools_by_id_run_on_the_same_runtime() {
    let store = MemoryStore::new();
    let tenant = store.create_tenant("acme").await.expect("tenant");
    let tool = store
        .create_tool(
            tenant,
            &NewTool {
                name: "calendar".into(),
                kind: ToolKind::Custom,
                source_config: json!({}),
                output_schema: None,
            },
        )
        .await
        .expect("tool");
    let op = store
        .upsert_operation(
            tenant,
            tool,
            &NewOperation {
                operation: OperationIdentity {
                    source: OperationSource::Custom,
                    name: "book".into(),
                },
                description: String::new(),
                input_schema: json!({"type": "object"}),
                output_schema: Some(json!({"type": "object"})),
            },
        )
        .await
        .expect("operation");
    let hash: ContractHash = op.contract_hash.clone().expect("hash");
    store
        .save_revision(
            tenant,
            op.id,
            &SaveRevision {
                contract_hash: hash,
                definition: json!({
                    "schema_version": 1, "default_variant": "ok",
                    "initial_state": {"reference": "TEST-742"},
                    "variants": {"ok": {"result": {"reference": {"$state": "reference"}}, "set_state": {"booked": true}}},
                    "examples": [{"variant": "ok", "input": {}, "expected": {"reference": "TEST-742"}}]
                }),
                author: "test".into(),
                provenance: Provenance::Authored,
            },
        )
        .await
        .expect("revision");

    let body = document(&tool.to_string());
    let loaded = simulation::load_value(&body, "request body", &Files::InlineOnly).expect("loads");
    let dispatcher = Arc::new(
        Dispatcher::new(store)
            .with_clock(Arc::new(SequenceClock::default()))
            .with_sleeper(Arc::new(VirtualSleeper)),
    );
    let results = simulation::run(
        dispatcher,
        tenant,
        Arc::new(loaded),
        &RunOptions {
            jobs: 2,
            ..RunOptions::default()
        },
        Arc::new(|| {}),
    )
    .await
    .expect("runs");
    assert!(
        results.ok,
        "{:#}",
        serde_json::to_value(&results).expect("json")
    );
    assert_eq!(results.coverage[0].pin, "revision 1");
}

#[test]
fn api_bodies_take_no_file_paths_and_the_cli_takes_no_library_ids() {
    let mut body = document("7d0f3c7e-0000-4000-8000-000000000000");
    body["tools"].as_array_mut().expect("tools").push(json!({
        "name": "notes", "from": "manifest", "manifest": "notes.manifest.json"}));
    let problems = simulation::load_value(&body, "body", &Files::InlineOnly).expect_err("refused");
    let found: Vec<(&str, &str)> = problems.iter().map(|p| (p.path.as_str(), p.code)).collect();
    assert_eq!(found, vec![("/tools/1/manifest", "file_not_allowed")]);

    let problems = simulation::load_value(&document("not-a-uuid"), "body", &Files::InlineOnly)
        .expect_err("refused");
    assert_eq!(problems[0].code, "invalid_value");

    let embedded = Files::Relative(std::path::PathBuf::from("."));
    let problems = simulation::load_value(
        &document("7d0f3c7e-0000-4000-8000-000000000000"),
        "sim.json",
        &embedded,
    )
    .expect_err("refused");
    assert_eq!(
        (problems[0].path.as_str(), problems[0].code),
        ("/tools/0/id", "library_tool_not_embedded")
    );
    // A library tool has no real handler: a real-tools run refuses it,
    // through the API as anywhere.
    let mut real = document("7d0f3c7e-0000-4000-8000-000000000000");
    real["mode"] = json!("real_tools");
    let problems = simulation::load_value(&real, "body", &Files::InlineOnly).expect_err("refused");
    assert!(
        problems
            .iter()
            .any(|p| p.path == "/tools/0" && p.code == "no_real_handler"),
        "{problems:?}"
    );
}

/// A `real_tools` case played through the API's attempt endpoints (an
/// `external` or `http` driver) is refused wherever the document is
/// loaded: those endpoints only mock.
#[test]
fn a_real_tools_case_played_through_the_api_is_refused() {
    let mut body = document("7d0f3c7e-0000-4000-8000-000000000000");
    body["mode"] = json!("real_tools");
    body["cases"][0]["driver"] = json!({"type": "external"});
    body["cases"][0]["name"] = json!("outside");
    let problems = simulation::load_value(&body, "body", &Files::InlineOnly).expect_err("refused");
    let found: Vec<_> = problems
        .iter()
        .filter(|p| p.code == "real_tools_through_api")
        .map(|p| (p.path.as_str(), p.message.as_str()))
        .collect();
    assert_eq!(found.len(), 1, "{problems:?}");
    assert_eq!(found[0].0, "/cases/0/driver/type");
    assert!(
        found[0]
            .1
            .starts_with("case \"outside\" has an external driver"),
        "{}",
        found[0].1
    );
    body["cases"][0]["driver"] = json!({"type": "http", "url": "http://127.0.0.1:9/agent"});
    let problems = simulation::load_value(&body, "body", &Files::InlineOnly).expect_err("refused");
    assert!(
        problems.iter().any(|p| p.code == "real_tools_through_api"
            && p.path == "/cases/0/driver/type"
            && p.message.contains("has an http driver")),
        "{problems:?}"
    );
    // The same case in a sandbox run is the API's to take.
    body["mode"] = json!("sandbox");
    body["cases"][0]["driver"] = json!({"type": "external"});
    simulation::load_value(&body, "body", &Files::InlineOnly).expect("a sandbox run takes it");
}

#[test]
fn external_drivers_are_for_the_api_only() {
    let mut body = document("7d0f3c7e-0000-4000-8000-000000000000");
    body["cases"][0]["driver"] = json!({"type": "external"});
    let loaded =
        simulation::load_value(&body, "body", &Files::InlineOnly).expect("the API takes it");
    assert!(loaded.document.cases[0].driver.steps().is_empty());

    body["tools"][0] = json!({"name": "calendar", "from": "custom", "operations": [
        {"name": "book", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}}]});
    let embedded = Files::Relative(std::path::PathBuf::from("."));
    let problems = simulation::load_value(&body, "sim.json", &embedded).expect_err("refused");
    let found: Vec<(&str, &str)> = problems.iter().map(|p| (p.path.as_str(), p.code)).collect();
    assert_eq!(
        found,
        vec![("/cases/0/driver/type", "external_driver_not_embedded")]
    );

    // An http driver too: a worker hands it to its agent service, which
    // plays it through the API's tool-call endpoint; toolmock run has none.
    let mut http = body.clone();
    http["cases"][0]["driver"] =
        json!({"type": "http", "url": "http://127.0.0.1:9/agent", "messages": ["hi"]});
    let problems = simulation::load_value(&http, "sim.json", &embedded).expect_err("refused");
    let found: Vec<(&str, &str)> = problems.iter().map(|p| (p.path.as_str(), p.code)).collect();
    assert_eq!(
        found,
        vec![("/cases/0/driver/type", "external_driver_not_embedded")]
    );
    let loaded =
        simulation::load_value(&http, "body", &Files::InlineOnly).expect("the API takes it");
    assert_eq!(
        loaded.document.cases[0].driver,
        simulation::document::DriverDoc::Http {
            url: "http://127.0.0.1:9/agent".into(),
            messages: vec!["hi".into()]
        }
    );
    for bad in [
        json!({"type": "http", "url": "ftp://127.0.0.1/agent"}),
        json!({"type": "http"}),
        json!({"type": "http", "url": "http://x", "steps": []}),
        json!({"type": "model", "messages": ["hi"], "url": "http://x"}),
    ] {
        http["cases"][0]["driver"] = bad.clone();
        let problems =
            simulation::load_value(&http, "body", &Files::InlineOnly).expect_err("refused");
        assert!(
            problems
                .iter()
                .all(|p| p.path.starts_with("/cases/0/driver")),
            "{bad}: {problems:?}"
        );
    }

    // Steps belong to scripted drivers only, and scripted drivers need them.
    body["cases"][0]["driver"] = json!({"type": "external", "steps": []});
    let problems = simulation::load_value(&body, "body", &Files::InlineOnly).expect_err("refused");
    assert_eq!(
        (problems[0].path.as_str(), problems[0].message.as_str()),
        (
            "/cases/0/driver/steps",
            "the field \"steps\" is not allowed here"
        )
    );
    body["cases"][0]["driver"] = json!({"type": "scripted"});
    let problems = simulation::load_value(&body, "body", &Files::InlineOnly).expect_err("refused");
    assert_eq!(
        (problems[0].path.as_str(), problems[0].code),
        ("/cases/0/driver/steps", "missing_field")
    );
}

/// A process without a model (a worker started without one, through
/// `run_attempt`) never lets a `model` case pass with no conversation: the
/// attempt ends `harness_error` (`model_not_configured`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_case_without_a_model_never_passes() {
    let document = json!({
        "simulation_version": 1, "name": "m",
        "tools": [{"name": "notes", "from": "custom",
            "operations": [{"name": "add", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}}],
            "definitions": {"add": {"schema_version": 1, "default_variant": "ok",
                "variants": {"ok": {"result": {}}},
                "examples": [{"variant": "ok", "input": {}, "expected": {}}]}}}],
        "agent": {"name": "a", "tools": ["notes"]},
        "cases": [{"name": "c", "driver": {"type": "model", "messages": ["hi"]}}]
    });
    let loaded = simulation::load_value(&document, "m.json", &Files::InlineOnly).expect("loads");
    let store = MemoryStore::new();
    let tenant = store.create_tenant("t").await.expect("tenant");
    let dispatcher = Dispatcher::new(store).with_clock(Arc::new(SequenceClock::default()));
    let installed = simulation::install_inline(&dispatcher, tenant, &loaded)
        .await
        .expect("installed");
    let started = simulation::start(&dispatcher, &loaded, &installed)
        .await
        .expect("started");
    let result = simulation::run_attempt(
        &dispatcher,
        tenant,
        &loaded.workflows(),
        &loaded.document.cases[0],
        "/cases/0",
        &started.attempts[0],
        false,
    )
    .await
    .expect("ran");
    assert_eq!(
        result.outcome,
        toolmock_runtime::model::AttemptOutcome::HarnessError
    );
    assert_eq!(result.harness_errors[0].code, "model_not_configured");
    // And `run` without a model refuses the file at the case's driver.
    let refused = simulation::run(
        Arc::new(Dispatcher::new(MemoryStore::new())),
        tenant,
        Arc::new(loaded),
        &RunOptions {
            jobs: 1,
            ..RunOptions::default()
        },
        Arc::new(|| {}),
    )
    .await;
    match refused {
        Err(simulation::RunError::Problems(problems)) => {
            assert_eq!(problems[0].code, "model_not_configured");
            assert_eq!(problems[0].path, "/cases/0/driver");
        }
        other => panic!("{other:?}"),
    }
}

/// `inline_file` turns a simulation folder into the one document the API
/// takes: it loads where no file may be read, with the same tools, contracts,
/// definitions and cases as the file itself.
#[test]
fn an_inlined_file_loads_without_files_as_the_file_does() {
    let path = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/healthplus/simulation.json"
    ));
    let from_files = simulation::load_file(path).expect("HealthPlus loads");
    let inlined = simulation::inline_file(path).expect("HealthPlus inlines");
    let from_body = simulation::load_value(&inlined, "body", &Files::InlineOnly)
        .unwrap_or_else(|problems| panic!("the inlined document loads inline: {problems:?}"));
    // The document differs where a path became its file's content.
    assert!(from_body.document.cases == from_files.document.cases);
    assert!(from_body.document.agent == from_files.document.agent);
    assert_eq!(from_body.tools.len(), from_files.tools.len());
    for (inline, file) in from_body.tools.iter().zip(&from_files.tools) {
        assert_eq!(
            (&inline.name, &inline.operations, &inline.source_config),
            (&file.name, &file.operations, &file.source_config)
        );
        let definitions = |tool: &simulation::LoadedTool| -> Vec<(String, Value)> {
            tool.definitions
                .iter()
                .map(|d| (d.operation.clone(), d.definition.clone()))
                .collect()
        };
        assert_eq!(definitions(inline), definitions(file), "{}", inline.name);
    }
    assert!(inlined.get("$schema").is_none());

    // A file that does not load gives its problems, not a half-inlined body.
    let broken = std::env::temp_dir().join(format!("inline-{}.json", std::process::id()));
    std::fs::write(
        &broken,
        r#"{"simulation_version": 1, "name": "x", "tools": [{"name": "t", "from": "manifest", "manifest": "absent.json"}],
            "agent": {"name": "a", "tools": ["t"]},
            "cases": [{"name": "c", "driver": {"type": "scripted", "steps": []}}]}"#,
    )
    .expect("write");
    let problems = simulation::inline_file(&broken).expect_err("a missing file is a problem");
    std::fs::remove_file(&broken).expect("remove");
    assert!(
        problems
            .iter()
            .any(|p| p.code == "missing_file" && p.path == "/tools/0/manifest"),
        "{problems:?}"
    );
}

/// A file sent to the service may hold what only the service plays — a
/// library tool by id, an external driver — which `toolmock run` refuses:
/// `inline_file` leaves them for the API to accept.
#[test]
fn an_inlined_file_may_name_what_only_the_service_plays() {
    let dir = std::env::temp_dir().join(format!("inline-service-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("folder");
    let path = dir.join("simulation.json");
    let id = "6f1d2b1e-8a0e-4c56-9d7a-3f2b1c0d9e8f";
    std::fs::write(
        &path,
        serde_json::to_vec(&serde_json::json!({
            "simulation_version": 1, "name": "service only",
            "tools": [{"name": "calendar", "from": "library", "id": id}],
            "agent": {"name": "a", "tools": ["calendar"]},
            "cases": [{"name": "c", "driver": {"type": "external"}}]
        }))
        .expect("json"),
    )
    .expect("write");
    let embedded = simulation::load_file(&path).expect_err("toolmock run refuses both");
    let codes: Vec<&str> = embedded.iter().map(|p| p.code).collect();
    assert!(codes.contains(&"library_tool_not_embedded"), "{codes:?}");
    assert!(codes.contains(&"external_driver_not_embedded"), "{codes:?}");
    let inlined = simulation::inline_file(&path).expect("the service's to accept");
    std::fs::remove_dir_all(&dir).expect("remove");
    assert_eq!(inlined["tools"][0]["id"], id);
    simulation::load_value(&inlined, "body", &Files::InlineOnly).expect("the API loads it");
}
