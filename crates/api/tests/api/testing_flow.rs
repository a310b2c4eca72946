//! docs/spec.md §10 end to end: save, change the schema, the 409 with the current
//! hash, regenerate, save revision 2; revision 1 unchanged; every diagnostic
//! in a 422; inline tools checked and generated without a row.

use crate::common::*;
use axum::http::{Method, StatusCode, header};
use serde_json::{Value, json};
use sqlx::PgPool;

/// `PUT /api/tools/{id}` with a new source; the reply, asserted 200.
async fn update_source(app: &axum::Router, bearer: &str, id: &str, source: Value) -> Reply {
    let updated = send(
        app,
        Method::PUT,
        &format!("/api/tools/{id}"),
        Some(bearer),
        Some(&json!({"source": source})),
    )
    .await;
    assert_eq!(updated.status, StatusCode::OK, "{}", updated.json);
    updated
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn the_409_flow_end_to_end(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE]);
    let tool = create_calendar(&app, &bearer).await;
    let testing_path = format!("/api/tools/{}/testing", tool.id);

    let testing = send(&app, Method::GET, &testing_path, Some(&bearer), None).await;
    assert_eq!(testing.status, StatusCode::OK);
    assert_eq!(operation(&testing.json, "book")["status"], "missing");
    assert_eq!(
        operation(&testing.json, "cancel")["status"],
        "needs_output_schema"
    );
    assert_eq!(
        operation(&testing.json, "book")["contract_hash"],
        tool.book_hash.as_str()
    );
    assert_eq!(
        operation(&testing.json, "book")["contract"]["operation"],
        json!({"source": "custom", "name": "book"})
    );

    // Save revision 1, authored.
    let saved = save_booking(&app, &bearer, &tool).await;
    assert_eq!(saved.status, StatusCode::CREATED, "{}", saved.json);
    assert_eq!(saved.json["revision"], 1);
    assert_eq!(saved.json["author"], "acme-user");
    assert_eq!(saved.json["provenance"], "authored");
    let revision_1 = saved.json.clone();
    let testing = send(&app, Method::GET, &testing_path, Some(&bearer), None).await;
    let book = operation(&testing.json, "book");
    assert_eq!(book["status"], "current");
    assert_eq!(book["latest_revision"]["revision"], 1);
    assert_eq!(
        book["latest_revision"]["contract_hash"],
        tool.book_hash.as_str()
    );

    // A schema correction: the output gains a required member.
    let mut source = calendar_tool("calendar")["source"].clone();
    source["operations"][0]["output_schema"] = json!({"type": "object",
        "properties": {"reference": {"type": "string"}, "day": {"type": "string"}},
        "required": ["reference", "day"]});
    let updated = update_source(&app, &bearer, &tool.id, source).await;
    let stale = updated.json["stale"].as_array().unwrap();
    assert_eq!(stale.len(), 1);
    assert_eq!(stale[0]["name"], "book");
    assert_eq!(stale[0]["diff"]["hash_changed"], true);
    assert_eq!(stale[0]["diff"]["old_hash"], tool.book_hash.as_str());
    assert!(
        !stale[0]["diff"]["output_schema"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let new_hash = stale[0]["diff"]["new_hash"].as_str().unwrap().to_owned();
    assert_ne!(new_hash, tool.book_hash);

    let testing = send(&app, Method::GET, &testing_path, Some(&bearer), None).await;
    assert_eq!(operation(&testing.json, "book")["status"], "stale");
    // Why it is stale: the diff from the contract revision 1 was saved against.
    let why = &operation(&testing.json, "book")["stale_diff"];
    assert_eq!(why["old_hash"], tool.book_hash.as_str());
    assert_eq!(why["new_hash"], new_hash.as_str());
    assert_eq!(why, &stale[0]["diff"]);
    assert!(
        operation(&testing.json, "cancel")
            .get("stale_diff")
            .is_none()
    );
    assert_eq!(
        operation(&testing.json, "book")["contract_hash"],
        new_hash.as_str()
    );

    // Saving against the old hash: 409 with the current hash.
    let conflict = save_booking(&app, &bearer, &tool).await;
    assert_eq!(
        (conflict.status, conflict.code()),
        (StatusCode::CONFLICT, "contract_changed")
    );
    assert_eq!(
        conflict.json["error"]["details"]["current_hash"],
        new_hash.as_str()
    );

    // Regenerate against the new contract and save it: revision 2, current.
    let generated = send(
        &app,
        Method::POST,
        &testing_path,
        Some(&bearer),
        Some(
            &json!({"action": "generate", "operation_id": tool.book, "instructions": "a Tuesday"}),
        ),
    )
    .await;
    assert_eq!(generated.status, StatusCode::OK, "{}", generated.json);
    assert_eq!(generated.json["outcome"], "draft");
    assert_eq!(generated.json["contract_hash"], new_hash.as_str());
    assert_eq!(generated.json["instructions"], "a Tuesday");
    let saved = send(&app, Method::POST, &testing_path, Some(&bearer), Some(&json!({
        "action": "save", "operation_id": tool.book, "contract_hash": new_hash,
        "definition": generated.json["definition"], "provenance": "generated", "instructions": "a Tuesday"}))).await;
    assert_eq!(saved.status, StatusCode::CREATED, "{}", saved.json);
    assert_eq!(saved.json["revision"], 2);
    assert_eq!(saved.json["provenance"], "generated");
    assert_eq!(saved.json["instructions"], "a Tuesday");
    let testing = send(&app, Method::GET, &testing_path, Some(&bearer), None).await;
    assert_eq!(operation(&testing.json, "book")["status"], "current");

    // Revision 1 is unchanged and still readable; the history is newest first.
    let one = send(
        &app,
        Method::GET,
        &format!(
            "/api/tools/{}/operations/{}/revisions/1",
            tool.id, tool.book
        ),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(one.status, StatusCode::OK);
    assert_eq!(one.json, revision_1);
    assert_eq!(one.json["contract_hash"], tool.book_hash.as_str());
    let history = send(
        &app,
        Method::GET,
        &format!("/api/tools/{}/operations/{}/revisions", tool.id, tool.book),
        Some(&bearer),
        None,
    )
    .await;
    let numbers: Vec<_> = history
        .json
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["revision"].clone())
        .collect();
    assert_eq!(numbers, vec![json!(2), json!(1)]);
    let missing = send(
        &app,
        Method::GET,
        &format!(
            "/api/tools/{}/operations/{}/revisions/3",
            tool.id, tool.book
        ),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    // The operation exists, but under another tool id it is absent.
    let elsewhere = send(
        &app,
        Method::GET,
        &format!(
            "/api/tools/{}/operations/{}/revisions/1",
            tool.book, tool.book
        ),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(elsewhere.status, StatusCode::NOT_FOUND);
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_failing_definition_lists_every_diagnostic(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE]);
    let tool = create_calendar(&app, &bearer).await;
    let path = format!("/api/tools/{}/testing", tool.id);
    let mut definition = booking_definition();
    definition["default_variant"] = json!("nope");
    definition["variants"]["success"]["delay_ms"] = json!(999_999_999);
    definition["surprise"] = json!(true);
    let reply = send(&app, Method::POST, &path, Some(&bearer), Some(&json!({
        "action": "save", "operation_id": tool.book, "contract_hash": tool.book_hash, "definition": definition}))).await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_definition")
    );
    let diagnostics = reply.json["error"]["details"]["diagnostics"]
        .as_array()
        .unwrap();
    let codes: Vec<&str> = diagnostics
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    for code in [
        "unknown_default_variant",
        "delay_out_of_range",
        "unknown_field",
    ] {
        assert!(codes.contains(&code), "{code} missing from {codes:?}");
    }
    assert!(
        diagnostics
            .iter()
            .all(|d| d["path"].is_string() && d["message"].is_string())
    );

    // No output schema: neither generated nor saved.
    for body in [
        json!({"action": "generate", "operation_id": tool.cancel}),
        json!({"action": "save", "operation_id": tool.cancel, "contract_hash": tool.book_hash, "definition": booking_definition()}),
    ] {
        let reply = send(&app, Method::POST, &path, Some(&bearer), Some(&body)).await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::UNPROCESSABLE_ENTITY, "needs_output_schema"),
            "{body}"
        );
    }
    // Instructions only belong to generated revisions.
    let reply = send(
        &app,
        Method::POST,
        &path,
        Some(&bearer),
        Some(&json!({
        "action": "save", "operation_id": tool.book, "contract_hash": tool.book_hash,
        "definition": booking_definition(), "instructions": "x"})),
    )
    .await;
    assert_eq!(
        (reply.status, reply.code()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            "instructions_without_generation"
        )
    );
    // An unknown action and an operation of no tool.
    let reply = send(
        &app,
        Method::POST,
        &path,
        Some(&bearer),
        Some(&json!({"action": "publish", "operation_id": tool.book})),
    )
    .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "unknown_field")
    );
    let reply = send(
        &app,
        Method::POST,
        &path,
        Some(&bearer),
        Some(&json!({"action": "generate", "operation_id": tool.id})),
    )
    .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::NOT_FOUND, "not_found")
    );
    // Nothing was saved by any of these.
    let testing = send(&app, Method::GET, &path, Some(&bearer), None).await;
    assert_eq!(operation(&testing.json, "book")["status"], "missing");
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn unsatisfiable_schemas_need_an_authored_mock(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE]);
    let created = send(
        &app,
        Method::POST,
        "/api/tools",
        Some(&bearer),
        Some(&json!({
        "name": "codes", "source": {"type": "custom", "operations": [{"name": "code",
            "input_schema": {"type": "object"},
            "output_schema": {"type": "string", "pattern": "^[A-Z]{3}$"}}]}})),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let id = created.json["id"].as_str().unwrap();
    let op = created.json["operations"][0]["id"].as_str().unwrap();
    let reply = send(
        &app,
        Method::POST,
        &format!("/api/tools/{id}/testing"),
        Some(&bearer),
        Some(&json!({"action": "generate", "operation_id": op})),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json["outcome"], "needs_authored_mock");
    assert_eq!(reply.json["problems"][0]["path"], "/output_schema/pattern");
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn inline_tools_are_checked_and_generated_without_a_row(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE]);
    let tool = json!({"name": "calendar", "operations": [{
        "name": "book", "source": "custom", "description": "Book an appointment",
        "input_schema": {"type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"]},
        "output_schema": {"type": "object", "properties": {"reference": {"type": "string"}}, "required": ["reference"]},
        "testing": booking_definition()}]});
    let check = |definition: Option<Value>| {
        let mut body = json!({"action": "check", "tool": tool, "operation_id": "book"});
        if let Some(d) = definition {
            body["definition"] = d;
        }
        body
    };
    let reply = send(
        &app,
        Method::POST,
        "/api/tools/testing",
        Some(&bearer),
        Some(&check(None)),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.json);
    assert_eq!(reply.json["ok"], true);
    assert_eq!(reply.json["diagnostics"], json!([]));
    let mut bad = booking_definition();
    bad["examples"][0]["expected"] = json!({"reference": "OTHER"});
    let reply = send(
        &app,
        Method::POST,
        "/api/tools/testing",
        Some(&bearer),
        Some(&check(Some(bad))),
    )
    .await;
    assert_eq!(reply.json["ok"], false);
    assert_eq!(reply.json["diagnostics"][0]["code"], "example_mismatch");
    assert_eq!(reply.json["diagnostics"][0]["path"], "/examples/0/expected");
    // The schema says the definition is an object: anything else is a bad body.
    for not_an_object in [json!(5), json!("text"), json!([booking_definition()])] {
        let reply = send(
            &app,
            Method::POST,
            "/api/tools/testing",
            Some(&bearer),
            Some(&check(Some(not_an_object))),
        )
        .await;
        assert_eq!(
            (reply.status, reply.code()),
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_body"),
            "{}",
            reply.json
        );
    }
    let reply = send(
        &app,
        Method::POST,
        "/api/tools/testing",
        Some(&bearer),
        Some(&json!({"action": "generate", "tool": tool, "operation_id": "book"})),
    )
    .await;
    assert_eq!(reply.json["outcome"], "draft", "{}", reply.json);
    let reply = send(
        &app,
        Method::POST,
        "/api/tools/testing",
        Some(&bearer),
        Some(&json!({"action": "generate", "tool": tool, "operation_id": "nope"})),
    )
    .await;
    assert_eq!(
        (reply.status, reply.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "unknown_operation")
    );
    // No row was created.
    let tools: i64 = sqlx::query_scalar("SELECT count(*) FROM tools")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(tools, 0);
}

/// The testing view as it was computed before it became one query: the
/// tool with every operation and its latest revision from the catalog, and
/// for each stale operation the contract its revision was saved against.
async fn testing_view_from_the_catalog(pool: &PgPool, tool: &str) -> Value {
    use toolmock_runtime::backend::Catalog;
    use toolmock_runtime::model::{TestingStatus, ToolId};
    let store = toolmock_store::PgStore::new(pool.clone());
    let tenant = toolmock_api::auth::tenant_id("acme");
    let tool = store
        .tool(tenant, ToolId(tool.parse().unwrap()))
        .await
        .unwrap();
    let mut operations = Vec::new();
    for op in &tool.operations {
        let mut view = json!({
            "id": op.id.as_uuid(),
            "name": op.operation.name,
            "source": op.operation.source.as_str(),
            "status": op.status().as_str(),
            "contract": op.contract,
            "contract_hash": op.contract_hash.as_ref().map(ToString::to_string),
            "latest_revision": op.latest.as_ref().map(|r| json!({
                "revision": r.revision,
                "contract_hash": r.contract_hash.to_string(),
                "definition_hash": r.definition_hash.to_string(),
                "author": r.author,
                "provenance": r.provenance.as_str(),
                "instructions": r.provenance.instructions(),
                "created_at": r.created_at,
            })),
        });
        if let (TestingStatus::Stale, Some(latest)) = (op.status(), &op.latest) {
            let saved_against = store
                .contract_at(tenant, op.id, &latest.contract_hash)
                .await
                .unwrap();
            let diff = toolmock_schema::diff(
                saved_against.as_ref().unwrap(),
                op.contract.as_ref().unwrap(),
            )
            .unwrap();
            view["stale_diff"] = serde_json::to_value(diff).unwrap();
        }
        operations.push(view);
    }
    json!({"tool_id": tool.id.as_uuid(), "tool_name": tool.name, "operations": operations})
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn the_testing_view_is_what_the_catalog_holds(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE]);
    // current, generated with instructions, stale, missing, needs_output_schema
    let mut tool = calendar_tool("calendar");
    let extra = |name: &str| {
        json!({"name": name, "description": format!("the {name} lookup"),
        "input_schema": {"type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"]},
        "output_schema": {"type": "object", "properties": {"reference": {"type": "string"}, "n": {"type": "number", "minimum": 1.5}}, "required": ["reference"]}})
    };
    for name in ["generated", "stale", "missing"] {
        tool["source"]["operations"]
            .as_array_mut()
            .unwrap()
            .push(extra(name));
    }
    let created = send(&app, Method::POST, "/api/tools", Some(&bearer), Some(&tool)).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.json);
    let id = created.json["id"].as_str().unwrap().to_owned();
    let path = format!("/api/tools/{id}/testing");
    let op = |name: &str| {
        created.json["operations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == name)
            .unwrap()
            .clone()
    };
    for (name, provenance) in [
        ("book", json!({})),
        (
            "generated",
            json!({"provenance": "generated", "instructions": "be brief"}),
        ),
        ("stale", json!({})),
        ("stale", json!({})),
    ] {
        let mut body = json!({"action": "save", "operation_id": op(name)["id"],
            "contract_hash": op(name)["contract_hash"], "definition": booking_definition()});
        body.as_object_mut()
            .unwrap()
            .extend(provenance.as_object().unwrap().clone());
        let saved = send(&app, Method::POST, &path, Some(&bearer), Some(&body)).await;
        assert_eq!(saved.status, StatusCode::CREATED, "{}", saved.json);
    }
    // Read once before the change: what the view keeps must not outlive it.
    let before = send(&app, Method::GET, &path, Some(&bearer), None).await;
    assert_eq!(before.json, testing_view_from_the_catalog(&pool, &id).await);
    // `stale` changes its output schema after its two revisions.
    let mut source = tool["source"].clone();
    source["operations"][3]["output_schema"]["required"] = json!(["reference", "n"]);
    update_source(&app, &bearer, &id, source).await;

    let testing = send(&app, Method::GET, &path, Some(&bearer), None).await;
    assert_eq!(testing.status, StatusCode::OK);
    let statuses: Vec<(&str, &str)> = testing.json["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["name"].as_str().unwrap(), o["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("book", "current"),
            ("cancel", "needs_output_schema"),
            ("generated", "current"),
            ("missing", "missing"),
            ("stale", "stale"),
        ]
    );
    assert_eq!(
        testing.json["operations"][4]["latest_revision"]["revision"],
        2
    );
    assert_eq!(
        testing.json,
        testing_view_from_the_catalog(&pool, &id).await
    );
}

/// Two API processes on one database: each keeps the answers it built, and
/// neither sends a kept answer after the other changed the tool — a saved
/// revision, an updated schema; and another tenant never gets one.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn a_kept_testing_view_never_outlives_a_change_made_elsewhere(pool: PgPool) {
    let (first, second) = (app(&pool), app(&pool));
    let bearer = token("acme", &[MANAGE]);
    let tool = calendar_tool("calendar");
    let created = send(
        &first,
        Method::POST,
        "/api/tools",
        Some(&bearer),
        Some(&tool),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.json);
    let id = created.json["id"].as_str().unwrap().to_owned();
    let path = format!("/api/tools/{id}/testing");
    let read = |app: &axum::Router| {
        let (app, path, bearer) = (app.clone(), path.clone(), bearer.clone());
        async move {
            let reply = send(&app, Method::GET, &path, Some(&bearer), None).await;
            assert_eq!(reply.status, StatusCode::OK, "{}", reply.json);
            assert_eq!(reply.headers[header::CONTENT_TYPE], "application/json");
            reply
        }
    };
    let before = read(&first).await;
    assert_eq!(
        read(&first).await.bytes,
        before.bytes,
        "a kept answer, byte for byte"
    );
    assert_eq!(operation(&before.json, "book")["status"], "missing");

    // The second process saves a revision: the first one's next answer has it.
    let book = operation(&before.json, "book");
    let save = json!({"action": "save", "operation_id": book["id"],
        "contract_hash": book["contract_hash"], "definition": booking_definition()});
    let saved = send(&second, Method::POST, &path, Some(&bearer), Some(&save)).await;
    assert_eq!(saved.status, StatusCode::CREATED, "{}", saved.json);
    let after_save = read(&first).await;
    assert_eq!(operation(&after_save.json, "book")["status"], "current");
    assert_eq!(
        after_save.json,
        testing_view_from_the_catalog(&pool, &id).await
    );

    // The second process changes the schema: the first one says stale, why.
    let mut source = tool["source"].clone();
    source["operations"][0]["output_schema"]["required"] = json!(["reference", "extra"]);
    source["operations"][0]["output_schema"]["properties"]["extra"] = json!({"type": "string"});
    update_source(&second, &bearer, &id, source).await;
    let after_update = read(&first).await;
    assert_eq!(operation(&after_update.json, "book")["status"], "stale");
    assert!(operation(&after_update.json, "book")["stale_diff"].is_object());
    assert_eq!(
        after_update.json,
        testing_view_from_the_catalog(&pool, &id).await
    );
    assert_eq!(read(&second).await.bytes, after_update.bytes);

    // Another tenant never gets this tenant's kept answer.
    let other = token("globex", &[MANAGE]);
    let foreign = send(&first, Method::GET, &path, Some(&other), None).await;
    assert_eq!(
        (foreign.status, foreign.code()),
        (StatusCode::NOT_FOUND, "not_found")
    );
}
