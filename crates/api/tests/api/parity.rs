//! One outcome whichever runtime plays a simulation: every simulation file
//! under `fixtures/` (HealthPlus included) run embedded (the in-memory
//! backend, as `toolmock run`) and through the API and two workers on
//! PostgreSQL gives the same outcomes, the same evidence and errors (ids and
//! times aside) and the same judgements; on the virtual clock both ways.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolmock_runtime::Dispatcher;
use toolmock_runtime::backend::{Catalog, EvidenceSink, MemoryStore};
use toolmock_runtime::model::{
    AttemptId, EvidenceRecord, HarnessErrorRecord, TenantId, ToolInputErrorRecord,
};
use toolmock_simulation::{Files, RunOptions, SequenceClock, VirtualSleeper, load_value, run};
use toolmock_store::PgStore;
use uuid::Uuid;

pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every simulation document under fixtures/ (the schema aside).
fn simulation_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "json")
                && !path.ends_with("simulation.schema.json")
            {
                let text = std::fs::read_to_string(&path).unwrap();
                if let Ok(value) = serde_json::from_str::<Value>(&text)
                    && value.get("simulation_version").is_some()
                {
                    out.push(path);
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join("fixtures"), &mut out);
    out.sort();
    out
}

/// What the two runtimes must agree on for one attempt: its outcome, its
/// unmet expectations and its records, ids and times aside.
pub(crate) fn attempt_view(
    outcome: &str,
    unmet: Value,
    (evidence, harness, input): (
        &[EvidenceRecord],
        &[HarnessErrorRecord],
        &[ToolInputErrorRecord],
    ),
) -> Value {
    json!({
        "outcome": outcome,
        "unmet": unmet,
        "evidence": evidence.iter().map(evidence_view).collect::<Vec<_>>(),
        "harness_errors": harness.iter().map(harness_view).collect::<Vec<_>>(),
        "tool_input_errors": input.iter().map(input_view).collect::<Vec<_>>(),
    })
}

/// [`attempt_view`] of an attempt the embedded runner kept raw.
pub(crate) fn embedded_view(attempt: &toolmock_simulation::AttemptResult) -> Value {
    let raw = attempt.raw.as_ref().unwrap();
    attempt_view(
        attempt.outcome.as_str(),
        json!(attempt.unmet),
        (&raw.evidence, &raw.harness_errors, &raw.tool_input_errors),
    )
}

/// [`attempt_view`] of an attempt read back from PostgreSQL.
pub(crate) async fn stored_view(
    store: &PgStore,
    tenant: TenantId,
    attempt: AttemptId,
    outcome: &str,
    unmet: Value,
) -> Value {
    let evidence = store.evidence(tenant, attempt).await.unwrap();
    let harness = store.harness_errors(tenant, attempt).await.unwrap();
    let input = store.tool_input_errors(tenant, attempt).await.unwrap();
    attempt_view(outcome, unmet, (&evidence, &harness, &input))
}

fn evidence_view(e: &EvidenceRecord) -> Value {
    json!({
        "tool": e.tool, "operation": e.operation, "variant": e.variant, "rule": e.rule,
        "arguments": e.arguments, "result": e.result, "state_before": e.state_before,
        "state_after": e.state_after, "delay_ms": e.delay_ms, "executor": e.executor.as_str(),
        "versions": [e.version_before, e.version_after],
    })
}

fn harness_view(e: &HarnessErrorRecord) -> Value {
    json!({"code": e.code.as_str(), "tool": e.tool, "operation": e.operation, "path": e.path})
}

fn input_view(e: &ToolInputErrorRecord) -> Value {
    json!({"code": e.code.as_str(), "tool": e.tool, "operation": e.operation, "path": e.path,
           "arguments": e.arguments})
}

/// Per (case, attempt number): outcome, unmet expectations, evidence, errors.
type Views = BTreeMap<(String, u32), Value>;

async fn embedded(doc: &Value) -> Result<Views, usize> {
    let loaded = load_value(doc, "request", &Files::InlineOnly).map_err(|p| p.len())?;
    let store = MemoryStore::new();
    let tenant = store.create_tenant("acme").await.unwrap();
    let dispatcher = Dispatcher::new(store)
        .with_clock(Arc::new(SequenceClock::default()))
        .with_sleeper(Arc::new(VirtualSleeper));
    let options = RunOptions {
        jobs: 1,
        keep_raw: true,
        ..RunOptions::default()
    };
    let results = run(
        Arc::new(dispatcher),
        tenant,
        Arc::new(loaded),
        &options,
        Arc::new(|| {}),
    )
    .await
    .unwrap();
    let mut views = Views::new();
    for case in &results.cases {
        for attempt in &case.attempts {
            views.insert((case.name.clone(), attempt.number), embedded_view(attempt));
        }
    }
    Ok(views)
}

async fn through_the_api(pool: &PgPool, doc: &Value) -> Result<(Views, Duration), Value> {
    let app = app(pool);
    let bearer = token("acme", &[RUN]);
    let began = Instant::now();
    let started = start(&app, &bearer, doc).await;
    if started.status != StatusCode::CREATED {
        return Err(started.json);
    }
    let simulation = Uuid::parse_str(started.json["id"].as_str().unwrap()).unwrap();
    let (one, two) = (
        Worker::start_named(pool, "one"),
        Worker::start_named(pool, "two"),
    );
    loop {
        let open: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM attempts WHERE simulation_id = $1 AND status <> 'finished'",
        )
        .bind(simulation)
        .fetch_one(pool)
        .await
        .unwrap();
        if open == 0 {
            break;
        }
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "the simulation did not finish"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let took = began.elapsed();
    let reports = (one.stop().await, two.stop().await);
    assert_eq!(
        reports.0.finished + reports.1.finished,
        started.json["attempts"].as_array().unwrap().len() as u64,
        "{reports:?}"
    );
    let store = PgStore::new(pool.clone());
    let tenant: Uuid = sqlx::query_scalar("SELECT tenant_id FROM simulations WHERE id = $1")
        .bind(simulation)
        .fetch_one(pool)
        .await
        .unwrap();
    let tenant = TenantId(tenant);
    let mut views = Views::new();
    for attempt in started.json["attempts"].as_array().unwrap() {
        let id = Uuid::parse_str(attempt["id"].as_str().unwrap()).unwrap();
        let (outcome, unmet): (String, Option<sqlx::types::Json<Value>>) = sqlx::query_as(
            "SELECT a.outcome, j.unmet FROM attempts a \
             LEFT JOIN attempt_judgements j ON j.attempt_id = a.id WHERE a.id = $1",
        )
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap();
        let unmet = unmet.map(|j| j.0).unwrap_or(Value::Null);
        views.insert(
            (
                attempt["test_case"].as_str().unwrap().to_owned(),
                u32::try_from(attempt["number"].as_u64().unwrap()).unwrap(),
            ),
            stored_view(&store, tenant, AttemptId(id), &outcome, unmet).await,
        );
    }
    Ok((views, took))
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn every_fixture_simulation_plays_the_same_embedded_and_through_api_and_workers(
    pool: PgPool,
) {
    let files = simulation_files();
    assert!(
        files
            .iter()
            .any(|f| f.ends_with("healthplus/simulation.json")),
        "{files:?}"
    );
    let mut compared = 0;
    for file in &files {
        // Every file it references read in (the API takes inline documents
        // only); a file that does not load embedded is refused by the API too.
        let doc = match toolmock_simulation::inline_file(file) {
            Ok(doc) => doc,
            Err(problems) => {
                assert!(!problems.is_empty());
                let raw: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
                let answer = through_the_api(&pool, &raw)
                    .await
                    .expect_err("refused by the API too");
                assert_eq!(answer["error"]["code"], "invalid_simulation", "{answer}");
                continue;
            }
        };
        // A case an agent plays (external, served over MCP, or a model) is
        // not the workers' to run: only simulations played wholly by scripts
        // are compared.
        let played_by_an_agent = doc["cases"].as_array().is_some_and(|cases| {
            cases
                .iter()
                .any(|c| c["driver"]["type"].is_string() && c["driver"]["type"] != "scripted")
        });
        if played_by_an_agent {
            continue;
        }
        match (embedded(&doc).await, through_the_api(&pool, &doc).await) {
            (Ok(embedded), Ok((served, took))) => {
                assert_eq!(
                    embedded.keys().collect::<Vec<_>>(),
                    served.keys().collect::<Vec<_>>(),
                    "{}",
                    file.display()
                );
                for (key, view) in &embedded {
                    assert_eq!(
                        view,
                        &served[key],
                        "{}: {key:?} differs (left: embedded, right: API + workers)",
                        file.display()
                    );
                }
                // HealthPlus's outage case alone asks for more than 30 s of
                // delays: the workers count them on the virtual clock.
                assert!(
                    took < Duration::from_secs(30),
                    "{}: {took:?}",
                    file.display()
                );
                compared += 1;
            }
            // A document that does not load embedded is refused by the API too.
            (Err(problems), Err(answer)) => {
                assert!(problems > 0);
                assert_eq!(answer["error"]["code"], "invalid_simulation", "{answer}");
            }
            (embedded, served) => panic!(
                "{}: embedded {:?} but through the API {:?}",
                file.display(),
                embedded.map(|v| v.len()),
                served.map(|(v, _)| v.len())
            ),
        }
    }
    assert!(compared >= 2, "{compared} of {files:?}");
}

/// A simulation with shared fixtures (`{"value": …}`) and nested writes
/// plays the same embedded (base `Arc` + overlay in memory) and through the
/// API and workers (base row + overlay rows on PostgreSQL): same outcomes,
/// same unmet expectations, same evidence — each call's `state_before` and
/// `state_after` the attempt's changes, not the fixture.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn shared_fixtures_play_the_same_embedded_and_through_api_and_workers(pool: PgPool) {
    let orders: serde_json::Map<String, Value> = (0..200)
        .map(|i| {
            (
                format!("#W{i}"),
                json!({"status": "pending", "items": [{"id": i, "price": "10.00"}]}),
            )
        })
        .collect();
    let id = json!({"$input": "order_id"});
    let get = |order: &str, status: &str, n: u32| {
        json!({"tool": "shop", "operation": "get_order", "arguments": {"order_id": order},
               "expect": {"result": {"order": {"status": status, "items": [{"id": n, "price": "10.00"}]}}}})
    };
    let cancel = |order: &str| json!({"tool": "shop", "operation": "cancel", "arguments": {"order_id": order}});
    let doc = json!({
        "simulation_version": 1,
        "name": "shared fixtures",
        "attempts": 2,
        "fixtures": [{"value": {"orders": orders}}],
        "tools": [{
            "name": "shop", "from": "custom",
            "operations": [
                {"name": "get_order", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}},
                {"name": "cancel", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}}
            ],
            "definitions": {
                "get_order": {
                    "schema_version": 2, "default_variant": "ok", "initial_state": {"audit": []},
                    "variants": {"ok": {"result": {"order": {"$state": ["orders", id]}}}},
                    "examples": [{"variant": "ok", "input": {"order_id": "#W1"},
                                  "state": {"orders": {"#W1": {"status": "pending"}}},
                                  "expected": {"order": {"status": "pending"}}}]
                },
                "cancel": {
                    "schema_version": 2, "default_variant": "ok",
                    "variants": {"ok": {
                        "result": {"was": {"$state": ["orders", id, "status"]}},
                        "set_state": [
                            {"path": ["orders", id, "status"], "value": "cancelled"},
                            {"path": ["audit"], "value": [{"$input": "order_id"}]}
                        ]
                    }},
                    "examples": [{"variant": "ok", "input": {"order_id": "#W1"},
                                  "state": {"orders": {"#W1": {"status": "pending"}}},
                                  "expected": {"was": "pending"}}]
                }
            }
        }],
        "agent": {"name": "clerk", "tools": ["shop"]},
        "cases": [
            {"name": "cancels", "driver": {"type": "scripted", "steps": [
                get("#W1", "pending", 1), cancel("#W1"), get("#W1", "cancelled", 1),
                cancel("#W7"), get("#W7", "cancelled", 7)
             ]},
             "expect": {"final_state": {"subset": {"audit": ["#W7"],
                 "orders": {"#W1": {"status": "cancelled"}, "#W2": {"status": "pending"}}}}}},
            {"name": "reads", "driver": {"type": "scripted", "steps": [get("#W1", "pending", 1)]},
             "expect": {"final_state": {"subset": {"orders": {"#W1": {"status": "pending"}}}}}},
            {"name": "expects a write it never made", "driver": {"type": "scripted", "steps": [
                cancel("#W3")
             ]},
             "expect": {"final_state": {"subset": {"orders": {"#W4": {"status": "cancelled"}}}},
                        "outcome": "failed"}}
        ]
    });
    let embedded = embedded(&doc).await.expect("loads embedded");
    let (served, _) = through_the_api(&pool, &doc).await.expect("starts");
    assert_eq!(embedded.len(), 6);
    assert_eq!(embedded, served, "left: embedded, right: API + workers");
    let cancels = &served[&("cancels".to_owned(), 1)];
    assert_eq!(cancels["outcome"], "passed", "{cancels}");
    assert_eq!(
        cancels["evidence"][3]["state_after"],
        json!({"audit": ["#W7"],
               "orders": {"#W1": {"status": "cancelled"}, "#W7": {"status": "cancelled"}}}),
        "evidence is the attempt's changes, not the fixture"
    );
    assert_eq!(
        served[&("expects a write it never made".to_owned(), 2)]["outcome"],
        "failed"
    );
}
