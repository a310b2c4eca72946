//! Agents, simulations started from their document through the API
//! (refusals listing every problem), external attempts played and finished
//! through the capability endpoints, scripted attempts run in the
//! background and followed as server-sent events, listings, coverage, and an
//! attempt's recorded evidence read back.

use crate::common::*;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use toolmock_api::{ApiConfig, AppState, AuthConfig, router};

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn start_call_and_read_the_attempt(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE, RUN]);
    let tool = create_calendar(&app, &bearer).await;
    let agent = send(
        &app,
        Method::POST,
        "/api/agents",
        Some(&bearer),
        Some(
            &json!({"name": "receptionist", "tools": [{"type": "library", "tool": tool.id}],
                     "prompt": "You book appointments.", "guards": ["confirm the day first"]}),
        ),
    )
    .await;
    assert_eq!(agent.status, StatusCode::CREATED, "{}", agent.json);
    assert_eq!(agent.json["prompt"], "You book appointments.");
    assert_eq!(agent.json["guards"], json!(["confirm the day first"]));
    let agent_id = agent.json["id"].as_str().unwrap().to_owned();
    let read = send(
        &app,
        Method::GET,
        &format!("/api/agents/{agent_id}"),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(read.json, agent.json);

    // Nothing saved yet: the start is refused, listing every operation.
    let mut document = calendar_simulation(&tool, 2);
    document["allow_incomplete"] = json!(false);
    let refused = start(&app, &bearer, &document).await;
    assert_eq!(
        (refused.status, refused.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "start_refused"),
        "{}",
        refused.json
    );
    let problems = refused.problems();
    let codes: Vec<_> = problems
        .iter()
        .map(|p| p["code"].as_str().unwrap())
        .collect();
    assert!(
        codes.contains(&"missing") && codes.contains(&"needs_output_schema"),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .all(|p| p["message"].as_str().unwrap().contains("calendar/"))
    );

    // With book saved and cancel knowingly unpinned, it starts.
    assert_eq!(
        save_booking(&app, &bearer, &tool).await.status,
        StatusCode::CREATED
    );
    let started = start(&app, &bearer, &calendar_simulation(&tool, 2)).await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.json);
    assert_eq!(started.json["attempts"].as_array().unwrap().len(), 2);
    assert_eq!(started.json["attempts"][0]["driver"], "external");
    let pins = started.json["pins"].as_array().unwrap();
    let book = pins.iter().find(|p| p["operation"] == "book").unwrap();
    assert_eq!(
        (book["kind"].as_str(), book["revision"].as_u64()),
        (Some("library"), Some(1))
    );
    let cancel = pins.iter().find(|p| p["operation"] == "cancel").unwrap();
    assert_eq!(cancel["kind"], "unpinned");

    let attempt = &started.json["attempts"][0];
    let (id, cap) = (
        attempt["id"].as_str().unwrap(),
        attempt["capability"].as_str().unwrap(),
    );
    let calls = format!("/api/attempts/{id}/tool-calls");
    let ok = send(
        &app,
        Method::POST,
        &calls,
        Some(cap),
        Some(&json!({"tool": "calendar", "operation": "book", "arguments": {"day": "2026-01-02"}})),
    )
    .await;
    assert_eq!(ok.json, json!({"reference": "TEST-742"}));
    let bad = send(
        &app,
        Method::POST,
        &calls,
        Some(cap),
        Some(&json!({"tool": "calendar", "operation": "book", "arguments": {}})),
    )
    .await;
    assert_eq!(bad.json["error"]["class"], "tool_input_error");
    let unpinned = send(
        &app,
        Method::POST,
        &calls,
        Some(cap),
        Some(&json!({"tool": "calendar", "operation": "cancel", "arguments": {}})),
    )
    .await;
    assert_eq!(
        (unpinned.status, unpinned.json["error"]["code"].as_str()),
        (StatusCode::FAILED_DEPENDENCY, Some("missing_definition"))
    );

    let read = send(
        &app,
        Method::GET,
        &format!("/api/attempts/{id}"),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.json);
    assert_eq!(read.json["has_harness_error"], true);
    let evidence = read.json["evidence"].as_array().unwrap();
    assert_eq!(evidence.len(), 1);
    assert_eq!(evidence[0]["result"], json!({"reference": "TEST-742"}));
    assert_eq!(
        evidence[0]["state_before"],
        json!({"reference": "TEST-742"})
    );
    assert_eq!(evidence[0]["pin"]["revision"], 1);
    assert_eq!(
        read.json["tool_input_errors"][0]["code"],
        "invalid_arguments"
    );
    assert_eq!(read.json["harness_errors"][0]["code"], "missing_definition");
    assert_eq!(read.json["state"]["version"], 1);
    // The capability is never shown again.
    assert!(!read.json.to_string().contains(cap));
    assert_eq!(
        (read.json["status"].as_str(), read.json["calls"].as_u64()),
        (Some("running"), Some(3)),
        "every recorded call counts: the answered one, the tool input error and the harness error"
    );

    // The external agent is done: judged over what was recorded. The harness
    // error decides, whatever the expectations say.
    let finish = format!("/api/attempts/{id}/finish");
    let finished = send(&app, Method::POST, &finish, Some(cap), None).await;
    assert_eq!(finished.status, StatusCode::OK, "{}", finished.json);
    assert_eq!(finished.json["outcome"], "harness_error");
    assert_eq!(finished.json["as_expected"], false);
    assert_eq!(finished.json["unmet"], json!([]));
    let again = send(&app, Method::POST, &finish, Some(cap), None).await;
    assert_eq!(
        (again.status, again.code()),
        (StatusCode::CONFLICT, "attempt_finished")
    );
    // The capability works no more.
    let late = send(
        &app,
        Method::POST,
        &calls,
        Some(cap),
        Some(&json!({"tool": "calendar", "operation": "book", "arguments": {"day": "2026-01-02"}})),
    )
    .await;
    assert_eq!(
        late.json["error"]["class"], "harness_error",
        "{}",
        late.json
    );

    // The second attempt calls nothing and finishes: its expectation is unmet.
    let second = &started.json["attempts"][1];
    let (id2, cap2) = (
        second["id"].as_str().unwrap(),
        second["capability"].as_str().unwrap(),
    );
    // Another attempt's capability is refused.
    let foreign = send(&app, Method::POST, &finish, Some(cap2), None).await;
    assert_eq!(
        (foreign.status, foreign.code()),
        (StatusCode::FORBIDDEN, "foreign_capability")
    );
    let finished = send(
        &app,
        Method::POST,
        &format!("/api/attempts/{id2}/finish"),
        Some(cap2),
        None,
    )
    .await;
    assert_eq!(finished.json["outcome"], "failed", "{}", finished.json);
    assert_eq!(
        finished.json["unmet"][0]["at"],
        "/cases/0/expect/trajectory/0"
    );

    let simulation = started.json["id"].as_str().unwrap();
    let view = send(
        &app,
        Method::GET,
        &format!("/api/simulations/{simulation}"),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(view.status, StatusCode::OK, "{}", view.json);
    assert_eq!(
        (
            view.json["status"].as_str(),
            view.json["harness_error"].as_u64(),
            view.json["failed"].as_u64()
        ),
        (Some("finished"), Some(1), Some(1))
    );
    assert_eq!(view.json["name"], "calendar checks");
    assert_eq!(view.json["pins"].as_array().unwrap().len(), 2);
    assert_eq!(
        view.json["attempts"][1]["unmet"][0]["code"],
        finished.json["unmet"][0]["code"]
    );
    assert_eq!(view.json["document"]["tools"][0]["id"], json!(tool.id));
    let coverage = send(
        &app,
        Method::GET,
        &format!("/api/simulations/{simulation}/coverage"),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(coverage.status, StatusCode::OK, "{}", coverage.json);
    assert_eq!(coverage.json["attempts"], 2);
    let book = coverage.json["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["operation"] == "book")
        .unwrap();
    assert_eq!(book["calls"], 1, "{}", coverage.json);
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn agents_name_only_their_tenants_tools(pool: PgPool) {
    let app = app(&pool);
    let a = token("acme", &[MANAGE, RUN]);
    let tool = create_calendar(&app, &a).await;
    let b = token("globex", &[RUN]);
    let reply = send(
        &app,
        Method::POST,
        "/api/agents",
        Some(&b),
        Some(&json!({"name": "x",
        "tools": [{"type": "library", "tool": tool.id}, {"type": "telepathy"}],
        "workflows": [{"name": "w"}]})),
    )
    .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_agent")
    );
    // The runtime's agent codes, each at its pointer (a malformed tool or
    // workflow has its own code, not a harness error's).
    let listed: Vec<_> = reply
        .problems()
        .iter()
        .map(|p| {
            (
                p["code"].as_str().unwrap().to_owned(),
                p["path"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("malformed_tool", "/tools/1"),
        ("malformed_workflow", "/workflows/0"),
        ("unknown_tool", "/tools/0/tool"),
    ]
    .map(|(code, path)| (code.to_owned(), path.to_owned()));
    assert_eq!(listed, expected);
    // A simulation naming another tenant's tool: as if it did not exist.
    let reply = start(&app, &b, &calendar_simulation(&tool, 1)).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_simulation")
    );
    assert_eq!(
        reply.json["error"]["details"]["problems"],
        json!([{"code": "unknown_tool", "path": "/tools/0/id",
                "message": format!("the tenant has no library tool {}", tool.id)}])
    );
}

/// `fixtures/api/notes-simulation.json`: a document with its own tool
/// (inline in the agent, no library row) and scripted cases: one that passes,
/// one whose expectation fails, one that hits a harness error on purpose.
fn scripted_document() -> Value {
    serde_json::from_str(include_str!(
        "../../../../fixtures/api/notes-simulation.json"
    ))
    .unwrap()
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn queued_attempts_show_as_queued_until_a_worker_claims_them(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[RUN]);
    // No worker yet: the start only queues the scripted attempts.
    let started = start(&app, &bearer, &scripted_document()).await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.json);
    let id = started.json["id"].as_str().unwrap().to_owned();
    let path = format!("/api/simulations/{id}");
    let view = send(&app, Method::GET, &path, Some(&bearer), None).await;
    assert_eq!(view.status, StatusCode::OK, "{}", view.json);
    assert_eq!(
        (
            view.json["status"].as_str(),
            view.json["queued"].as_u64(),
            view.json["running"].as_u64()
        ),
        (Some("queued"), Some(6), Some(0)),
        "{}",
        view.json
    );
    let attempts = view.json["attempts"].as_array().unwrap();
    assert!(
        attempts.iter().all(|a| a["status"] == "queued"),
        "{attempts:?}"
    );
    let one = attempts[0]["id"].as_str().unwrap();
    let attempt = send(
        &app,
        Method::GET,
        &format!("/api/attempts/{one}"),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(attempt.json["status"], "queued", "{}", attempt.json);
    let page = send(&app, Method::GET, "/api/simulations", Some(&bearer), None).await;
    assert_eq!(page.json["simulations"][0]["status"], "queued");

    // A worker claims and runs them: finished, none queued any more.
    let worker = Worker::start(&pool);
    let began = std::time::Instant::now();
    let view = loop {
        let view = send(&app, Method::GET, &path, Some(&bearer), None).await;
        if view.json["status"] == "finished" {
            break view;
        }
        assert!(
            began.elapsed() < std::time::Duration::from_secs(30),
            "{}",
            view.json
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    worker.stop().await;
    assert_eq!(
        (view.json["queued"].as_u64(), view.json["running"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(
        view.json["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["status"] == "finished")
    );
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn scripted_attempts_run_in_the_background_and_stream_their_progress(pool: PgPool) {
    let app = app(&pool);
    // The API only queues them; a worker runs them.
    let worker = Worker::start(&pool);
    let bearer = token("acme", &[RUN]);
    let started = start(&app, &bearer, &scripted_document()).await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.json);
    let id = started.json["id"].as_str().unwrap().to_owned();
    assert_eq!(started.json["attempts"].as_array().unwrap().len(), 6);
    assert!(
        started.json["pins"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["kind"] == "inline"),
        "{}",
        started.json
    );

    // The events stream ends once every attempt has finished.
    let events = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        send(
            &app,
            Method::GET,
            &format!("/api/simulations/{id}/events"),
            Some(&bearer),
            None,
        ),
    )
    .await
    .expect("the stream ends when the simulation finishes");
    assert_eq!(events.status, StatusCode::OK);
    assert_eq!(
        events.headers[axum::http::header::CONTENT_TYPE],
        "text/event-stream"
    );
    let text = String::from_utf8(events.bytes.clone()).unwrap();
    let names: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("event: "))
        .collect();
    assert_eq!(names.first(), Some(&"snapshot"), "{text}");
    assert_eq!(names.last(), Some(&"finished"), "{text}");
    let finished: Value = text
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .unwrap();
    assert_eq!(
        (
            finished["passed"].as_u64(),
            finished["failed"].as_u64(),
            finished["harness_error"].as_u64(),
            finished["running"].as_u64()
        ),
        (Some(2), Some(2), Some(2), Some(0)),
        "{finished}"
    );

    let view = send(
        &app,
        Method::GET,
        &format!("/api/simulations/{id}"),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(
        top_level_keys(&view.bytes).len(),
        view.json.as_object().unwrap().len(),
        "a key written twice: {}",
        String::from_utf8_lossy(&view.bytes)
    );
    assert_eq!(view.json["attempt_count"], 6);
    let attempts = view.json["attempts"].as_array().unwrap();
    assert!(
        attempts
            .iter()
            .all(|a| a["as_expected"] == true && a["driver"] == "scripted"),
        "{}",
        view.json
    );
    let failed = attempts
        .iter()
        .find(|a| a["test_case"] == "expects too much")
        .unwrap();
    assert_eq!(
        failed["unmet"][0]["at"],
        "/cases/1/expect/final_state/exact"
    );
    // Scripted attempts are toolmock's to play and finish: their capability
    // is never handed out, so nobody can inject calls into them.
    for attempt in started.json["attempts"].as_array().unwrap() {
        assert_eq!(attempt["driver"], "scripted");
        assert!(attempt["capability"].is_null(), "{attempt}");
    }
    let attempt = started.json["attempts"][0]["id"].as_str().unwrap();

    // Its evidence shows the state before and after each call.
    let read = send(
        &app,
        Method::GET,
        &format!("/api/attempts/{attempt}"),
        Some(&bearer),
        None,
    )
    .await;
    let evidence = read.json["evidence"].as_array().unwrap();
    assert_eq!(
        (
            evidence[1]["state_before"].clone(),
            evidence[1]["state_after"].clone()
        ),
        (json!({"last": "a"}), json!({"last": "b"}))
    );

    // Coverage over the six finished attempts: the one variant, used.
    let coverage = send(
        &app,
        Method::GET,
        &format!("/api/simulations/{id}/coverage"),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(coverage.json["attempts"], 6);
    assert_eq!(
        coverage.json["operations"][0]["calls"], 6,
        "{}",
        coverage.json
    );
    // The agent the start created keeps the document's prompt and guards.
    let agent = send(
        &app,
        Method::GET,
        &format!("/api/agents/{}", started.json["agent"].as_str().unwrap()),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(agent.json["prompt"], scripted_document()["agent"]["prompt"]);
    assert_eq!(agent.json["guards"], scripted_document()["agent"]["guards"]);
    // The start added nothing to the tenant's tool library.
    let tools = send(
        &app,
        Method::GET,
        "/api/tools",
        Some(&token("acme", &[MANAGE])),
        None,
    )
    .await;
    assert_eq!(tools.json["tools"], json!([]));
    let report = worker.stop().await;
    assert_eq!((report.claimed, report.finished), (6, 6), "{report:?}");
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn an_invalid_document_lists_every_problem(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[RUN]);
    let mut document = scripted_document();
    document["cases"][0]["driver"]["steps"][0]["tool"] = json!("notebook");
    document["cases"][1]["colour"] = json!("red");
    document["tools"][0]["definitions"]["add"]["source"] = json!("defs/add.json");
    let reply = start(&app, &bearer, &document).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_simulation"),
        "{}",
        reply.json
    );
    let problems = reply.problems();
    assert!(
        problems
            .iter()
            .any(|p| p["path"] == "/cases/1/colour" || p["path"] == "/cases/1"),
        "{problems:?}"
    );
    // A file path where the API takes only inline documents.
    let mut document = scripted_document();
    document["tools"][0]["definitions"]["add"] = json!("defs/add.json");
    let reply = start(&app, &bearer, &document).await;
    assert_eq!(
        reply.json["error"]["details"]["problems"][0]["code"], "file_not_allowed",
        "{}",
        reply.json
    );
    // A step naming a tool the document lacks.
    let mut document = scripted_document();
    document["cases"][0]["driver"]["steps"][0]["tool"] = json!("notebook");
    let reply = start(&app, &bearer, &document).await;
    assert_eq!(
        reply.json["error"]["details"]["problems"][0],
        json!({"code": "unknown_tool", "path": "/cases/0/driver/steps/0/tool",
               "message": "no tool is called \"notebook\""}),
        "{}",
        reply.json
    );
    // A real-tools run whose case an outside agent plays: its calls would
    // come through the attempt endpoints, which only mock.
    let mut document = scripted_document();
    document["mode"] = json!("real_tools");
    document["cases"][0]["driver"] = json!({"type": "external"});
    let reply = start(&app, &bearer, &document).await;
    assert_eq!(
        reply.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        reply.json
    );
    let case = document["cases"][0]["name"].as_str().unwrap();
    assert!(
        reply
            .problems()
            .iter()
            .any(|p| p["code"] == "real_tools_through_api"
                && p["path"] == "/cases/0/driver/type"
                && p["message"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("case {case:?} has an external driver"))),
        "{}",
        reply.json
    );
    // An invalid inline definition refuses the start.
    let mut document = scripted_document();
    document["tools"][0]["definitions"]["add"]["default_variant"] = json!("nope");
    let reply = start(&app, &bearer, &document).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "start_refused"),
        "{}",
        reply.json
    );
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn simulations_are_listed_newest_first_a_page_at_a_time(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE, RUN]);
    let tool = create_calendar(&app, &bearer).await;
    save_booking(&app, &bearer, &tool).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let started = start(&app, &bearer, &calendar_simulation(&tool, 1)).await;
        ids.push(started.json["id"].as_str().unwrap().to_owned());
    }
    let first = send(
        &app,
        Method::GET,
        "/api/simulations?limit=2",
        Some(&bearer),
        None,
    )
    .await;
    let page: Vec<_> = first.json["simulations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(page, vec![ids[2].clone(), ids[1].clone()]);
    assert_eq!(first.json["simulations"][0]["status"], "running");
    let next = first.json["next"].as_str().unwrap();
    let second = send(
        &app,
        Method::GET,
        &format!("/api/simulations?limit=2&before={next}"),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(second.json["simulations"][0]["id"], json!(ids[0]));
    assert_eq!(second.json["next"], Value::Null);
    let other = send(
        &app,
        Method::GET,
        "/api/simulations",
        Some(&token("globex", &[RUN])),
        None,
    )
    .await;
    assert_eq!(other.json["simulations"], json!([]));
    let bad = send(
        &app,
        Method::GET,
        "/api/simulations?limit=0",
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(bad.code(), "invalid_query");
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_workflow_calls_only_its_agents_tools(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE, RUN]);
    let tool = create_calendar(&app, &bearer).await;
    let workflow = |calls: &str| {
        json!({"name": "rebook", "nodes": [
            {"type": "tool", "id": "book", "tool": calls, "operation": "book",
             "arguments": {"day": {"$input": "day"}}}]})
    };
    let agent = |calls: &str| {
        json!({"name": "receptionist",
               "tools": [{"type": "library", "tool": tool.id}, {"type": "workflow", "workflow": "rebook"}],
               "workflows": [workflow(calls)]})
    };
    let refused = send(
        &app,
        Method::POST,
        "/api/agents",
        Some(&bearer),
        Some(&agent("diary")),
    )
    .await;
    assert_eq!(
        (refused.status, refused.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_agent"),
        "{}",
        refused.json
    );
    assert_eq!(
        refused.json["error"]["details"]["problems"][0]["path"],
        "/workflows/0/nodes/0/tool"
    );
    let created = send(
        &app,
        Method::POST,
        "/api/agents",
        Some(&bearer),
        Some(&agent("calendar")),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.json);
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn an_attempt_nobody_finishes_ends_as_harness_error_when_its_lease_runs_out(pool: PgPool) {
    let config = ApiConfig {
        // Long enough that a loaded machine starts and finishes the first
        // attempt before the lease runs out (300 ms was not, at load 14).
        attempt_lease: std::time::Duration::from_secs(2),
        ..ApiConfig::default()
    };
    let state = AppState::new(pool.clone(), AuthConfig::hs256(SECRET).unwrap(), config);
    let app = router(state.clone());
    let bearer = token("acme", &[MANAGE, RUN]);
    let tool = create_calendar(&app, &bearer).await;
    save_booking(&app, &bearer, &tool).await;
    let started = start(&app, &bearer, &calendar_simulation(&tool, 2)).await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.json);
    // The external agent finishes one attempt and abandons the other.
    let first = &started.json["attempts"][0];
    let finish = format!("/api/attempts/{}/finish", first["id"].as_str().unwrap());
    let finished = send(
        &app,
        Method::POST,
        &finish,
        first["capability"].as_str(),
        None,
    )
    .await;
    assert_eq!(finished.status, StatusCode::OK, "{}", finished.json);
    assert_eq!(
        toolmock_api::expire_abandoned_attempts(&state)
            .await
            .unwrap(),
        0
    );

    tokio::time::sleep(std::time::Duration::from_millis(2_100)).await;
    assert_eq!(
        toolmock_api::expire_abandoned_attempts(&state)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        toolmock_api::expire_abandoned_attempts(&state)
            .await
            .unwrap(),
        0
    );
    let abandoned = started.json["attempts"][1]["id"].as_str().unwrap();
    let read = send(
        &app,
        Method::GET,
        &format!("/api/attempts/{abandoned}"),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(read.json["outcome"], "harness_error", "{}", read.json);
    assert_eq!(read.json["harness_errors"][0]["code"], "lease_expired");
    // The finished one keeps its outcome.
    let read = send(
        &app,
        Method::GET,
        &format!("/api/attempts/{}", first["id"].as_str().unwrap()),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(read.json["outcome"], "failed", "{}", read.json);
}

/// Every top-level key of a JSON object as written, duplicates included
/// (`serde_json::Value` keeps only the last of two equal keys).
fn top_level_keys(bytes: &[u8]) -> Vec<String> {
    struct Keys(Vec<String>);
    impl<'de> serde::Deserialize<'de> for Keys {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Visit;
            impl<'de> serde::de::Visitor<'de> for Visit {
                type Value = Keys;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> Result<Keys, A::Error> {
                    let mut keys = Vec::new();
                    while let Some((key, _)) = map.next_entry::<String, serde::de::IgnoredAny>()? {
                        keys.push(key);
                    }
                    Ok(Keys(keys))
                }
            }
            d.deserialize_map(Visit)
        }
    }
    serde_json::from_slice::<Keys>(bytes)
        .expect("a JSON object")
        .0
}
