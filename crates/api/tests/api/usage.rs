//! Token usage, budgets and the comparison of two simulations on the
//! service (issue 36), against the local conversation server
//! (`fixtures/conversation-server/`: its `suite` model reports usage and
//! sums what it reported at `/counts`) and real PostgreSQL: every request's
//! usage recorded by the worker and summed per attempt, case and
//! simulation as the server counted it, priced by the worker's `--price`;
//! a simulation's budget (its start's, else the tenant's default) shared by
//! two workers, spent without over-spending beyond the requests in flight,
//! the attempts that needed a request ending `budget_exhausted` and the
//! rest completing; and two runs of one suite compared case by case.

use crate::agents::{Server, model, notes_document, server, wait_finished};
use crate::common::*;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use std::time::Duration;
use toolmock_simulation::Price;
use toolmock_store::{BudgetLimits, PgStore};
use toolmock_worker::{Agents, RolePrices};
use uuid::Uuid;

/// `n` model cases the `suite` model plays as `conversation`, each
/// `attempts` times.
fn suite_cases(n: usize, conversation: &str, attempts: u32) -> Value {
    json!((1..=n)
        .map(|i| json!({"name": format!("case {i}"), "attempts": attempts,
            "driver": {"type": "model", "messages": [format!("play {conversation}")], "max_turns": 4},
            "expect": {"final_answer": {"contains": ["n-1"]}}}))
        .collect::<Vec<_>>())
}

/// The agent price of these tests: 2 per million prompt tokens, 8 per
/// million completion tokens.
const PRICE: Price = Price {
    input: 2.0,
    output: 8.0,
};

fn suite_agents(server: &Server, price: Option<Price>) -> Agents {
    Agents {
        model: Some(model(server, "suite")),
        prices: RolePrices {
            agent: price,
            ..RolePrices::default()
        },
        ..Agents::none()
    }
}

/// What the conversation server reported in all (`/counts`).
async fn counts(server: &Server) -> Value {
    let url = format!("{}/counts", server.url.trim_end_matches("/v1"));
    reqwest::get(&url).await.unwrap().json().await.unwrap()
}

async fn get(app: &axum::Router, bearer: &str, path: &str) -> Value {
    let reply = send(app, Method::GET, path, Some(bearer), None).await;
    assert_eq!(reply.status, StatusCode::OK, "{path}: {}", reply.json);
    reply.json
}

/// Starts `doc` with the query `query` (`""` or `?max_tokens=…`).
async fn start_with(app: &axum::Router, bearer: &str, doc: &Value, query: &str) -> Uuid {
    let reply = send(
        app,
        Method::POST,
        &format!("/api/simulations{query}"),
        Some(bearer),
        Some(doc),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.json);
    Uuid::parse_str(reply.json["id"].as_str().unwrap()).unwrap()
}

/// Runs `doc` to its end on one worker with `agents`.
async fn run_on(pool: &PgPool, doc: &Value, query: &str, agents: Agents) -> Uuid {
    let app = app(pool);
    let bearer = token("acme", &[RUN]);
    let id = start_with(&app, &bearer, doc, query).await;
    let worker = Worker::start_with(pool, "usage-worker", agents);
    wait_finished(pool, id, Duration::from_secs(90)).await;
    worker.stop().await;
    id
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn usage_is_recorded_per_request_and_summed_as_the_server_counted_it(pool: PgPool) {
    let server = server();
    let doc = notes_document(suite_cases(3, "correct", 2));
    let id = run_on(&pool, &doc, "", suite_agents(&server, Some(PRICE))).await;
    let counted = counts(&server).await;
    let (prompt, completion) = (
        counted["prompt_tokens"].as_u64().unwrap(),
        counted["completion_tokens"].as_u64().unwrap(),
    );
    // Two requests per attempt (the call, then the answer), six attempts.
    assert_eq!(counted["answered"], 12, "{counted}");
    let app = app(&pool);
    let bearer = token("acme", &[RUN]);
    let view = get(&app, &bearer, &format!("/api/simulations/{id}")).await;
    assert_eq!(view["passed"], 6, "{view:#}");
    let tokens = &view["tokens"];
    assert_eq!(tokens["requests"], 12);
    assert_eq!(tokens["prompt_tokens"], prompt);
    assert_eq!(tokens["completion_tokens"], completion);
    assert_eq!(tokens["total_tokens"], prompt + completion);
    #[allow(clippy::cast_precision_loss)]
    let cost = (prompt as f64 * 2.0 + completion as f64 * 8.0) / 1e6;
    assert!(
        (tokens["cost"].as_f64().unwrap() - cost).abs() < 1e-12,
        "{tokens}"
    );
    assert!(view["budget"].is_null(), "no budget: {view:#}");
    // Each attempt's sum in the list is its requests' sum on its page.
    let mut summed = 0;
    for item in view["attempts"].as_array().unwrap() {
        let attempt = get(
            &app,
            &bearer,
            &format!("/api/attempts/{}", item["id"].as_str().unwrap()),
        )
        .await;
        let requests = attempt["model_requests"].as_array().unwrap();
        assert_eq!(requests.len(), 2, "{attempt:#}");
        let turns: Vec<(&str, u64)> = requests
            .iter()
            .map(|r| (r["role"].as_str().unwrap(), r["turn"].as_u64().unwrap()))
            .collect();
        assert_eq!(turns, [("agent", 1), ("agent", 2)]);
        assert!(
            requests
                .iter()
                .all(|r| r["replayed"] == false && r["cost"].is_number())
        );
        let total: u64 = requests
            .iter()
            .map(|r| {
                r["prompt_tokens"].as_u64().unwrap() + r["completion_tokens"].as_u64().unwrap()
            })
            .sum();
        assert_eq!(item["tokens"]["total_tokens"], total);
        assert_eq!(attempt["tokens"], item["tokens"]);
        summed += total;
    }
    assert_eq!(summed, prompt + completion);
    // The results document sums them per case and in all, as `toolmock run
    // --json` does.
    let results = get(&app, &bearer, &format!("/api/simulations/{id}/results")).await;
    assert_eq!(results["summary"]["tokens"]["prompt_tokens"], prompt);
    assert_eq!(
        results["summary"]["tokens"]["completion_tokens"],
        completion
    );
    let case = &results["cases"][0];
    assert_eq!(
        case["attempts"][0]["model_requests"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        case["tokens"]["requests"], 4,
        "two attempts of two requests: {case:#}"
    );
    // Nothing of the endpoint is kept.
    let kept: Vec<String> = sqlx::query_scalar("SELECT row_to_json(u)::text FROM model_usage u")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(kept.len(), 12);
    assert!(kept.iter().all(|row| !row.contains(&server.url)
        && !row.contains("sk-never-stored")
        && !row.contains("suite")));
}

/// Two workers share one simulation's token budget through PostgreSQL:
/// once it is spent no request is sent, the attempts that needed one end
/// `harness_error` (`budget_exhausted`), the others end as they would, and
/// the spend passes the budget by no more than the requests in flight.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn two_workers_share_one_budget_and_stop_sending_when_it_is_spent(pool: PgPool) {
    let server = server();
    let doc = notes_document(suite_cases(12, "correct", 1));
    let app = app(&pool);
    let bearer = token("acme", &[RUN]);
    // Each attempt's two requests take some 60 to 80 tokens: 300 runs out
    // after about four attempts of twelve.
    let id = start_with(&app, &bearer, &doc, "?max_tokens=300").await;
    let one = Worker::start_with(&pool, "budget-one", suite_agents(&server, None));
    let two = Worker::start_with(&pool, "budget-two", suite_agents(&server, None));
    wait_finished(&pool, id, Duration::from_secs(90)).await;
    one.stop().await;
    two.stop().await;
    let view = get(&app, &bearer, &format!("/api/simulations/{id}")).await;
    let budget = &view["budget"];
    assert_eq!(budget["max_tokens"], 300, "{view:#}");
    assert_eq!(budget["max_tokens_from"], "request");
    assert_eq!(budget["exhausted"], true);
    let exhausted: Vec<&Value> = view["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["outcome"] == "harness_error")
        .collect();
    assert!(
        !exhausted.is_empty(),
        "the budget ran out mid-suite: {view:#}"
    );
    assert_eq!(budget["budget_exhausted_attempts"], exhausted.len());
    // The rest ran to their end and passed: the report is complete.
    assert_eq!(
        view["passed"].as_u64().unwrap() + exhausted.len() as u64,
        12
    );
    assert!(view["passed"].as_u64().unwrap() >= 2, "{view:#}");
    let codes: Vec<String> = sqlx::query_scalar(
        "SELECT h.code FROM harness_errors h JOIN attempts a ON a.id = h.attempt_id \
         WHERE a.simulation_id = $1",
    )
    .bind(id)
    .fetch_all(&pool)
    .await
    .unwrap();
    assert!(codes.iter().all(|c| c == "budget_exhausted"), "{codes:?}");
    // Every request the server answered was recorded, and none was sent
    // past the spend but those in flight: sent (checked against the spend)
    // and not yet answered — two workers of four attempts each, so at most
    // eight at once.
    let counted = counts(&server).await;
    let spent = budget["spent_tokens"].as_u64().unwrap();
    assert_eq!(
        spent,
        counted["prompt_tokens"].as_u64().unwrap() + counted["completion_tokens"].as_u64().unwrap()
    );
    assert_eq!(view["tokens"]["requests"], counted["answered"]);
    let largest: i64 = sqlx::query_scalar(
        "SELECT max(prompt_tokens + completion_tokens) FROM model_usage WHERE simulation_id = $1",
    )
    .bind(id)
    .fetch_one(&pool)
    .await
    .unwrap();
    let in_flight = 8;
    assert!(spent >= 300, "spent {spent}");
    assert!(
        spent < 300 + in_flight * u64::try_from(largest).unwrap(),
        "spent {spent}: more than the {in_flight} request(s) in flight past 300"
    );
    // The attempt's harness error says why.
    let attempt = get(
        &app,
        &bearer,
        &format!("/api/attempts/{}", exhausted[0]["id"].as_str().unwrap()),
    )
    .await;
    let message = attempt["harness_errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("token budget is spent"), "{message}");
}

/// The tenant's default applies to a start that names no bound; a start's
/// own bound replaces it; a bad bound is refused; a cost bound over a model
/// without a price sends nothing.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn the_tenant_default_applies_unless_the_start_names_a_bound(pool: PgPool) {
    let server = server();
    let app = app(&pool);
    let bearer = token("acme", &[RUN]);
    let store = PgStore::new(pool.clone());
    let tenant = toolmock_api::auth::tenant_id("acme");
    store
        .set_tenant_budget(
            tenant,
            "acme",
            BudgetLimits {
                max_tokens: Some(5_000),
                max_cost: Some(0.5),
            },
        )
        .await
        .unwrap();
    let doc = notes_document(suite_cases(1, "correct", 1));
    let defaulted = start_with(&app, &bearer, &doc, "?max_cost=0.25").await;
    let view = get(&app, &bearer, &format!("/api/simulations/{defaulted}")).await;
    assert_eq!(view["budget"]["max_tokens"], 5_000, "{view:#}");
    assert_eq!(view["budget"]["max_tokens_from"], "tenant");
    assert_eq!(view["budget"]["max_cost"], 0.25);
    assert_eq!(view["budget"]["max_cost_from"], "request");
    assert_eq!(view["budget"]["exhausted"], false);
    // The worker has no price for the agent model: a cost bound cannot be
    // kept, so no request is sent.
    let worker = Worker::start_with(&pool, "unpriced", suite_agents(&server, None));
    wait_finished(&pool, defaulted, Duration::from_secs(60)).await;
    worker.stop().await;
    let view = get(&app, &bearer, &format!("/api/simulations/{defaulted}")).await;
    assert_eq!(view["harness_error"], 1, "{view:#}");
    assert_eq!(
        counts(&server).await["answered"],
        Value::Null,
        "nothing was sent"
    );
    let attempt = get(
        &app,
        &bearer,
        &format!(
            "/api/attempts/{}",
            view["attempts"][0]["id"].as_str().unwrap()
        ),
    )
    .await;
    assert_eq!(attempt["harness_errors"][0]["code"], "budget_exhausted");
    assert!(
        attempt["harness_errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("--price"),
        "{attempt:#}"
    );
    // Cleared, a start names its own budget or has none.
    store
        .set_tenant_budget(tenant, "acme", BudgetLimits::default())
        .await
        .unwrap();
    let none = start_with(&app, &bearer, &doc, "").await;
    assert!(get(&app, &bearer, &format!("/api/simulations/{none}")).await["budget"].is_null());
    for query in [
        "?max_tokens=0",
        "?max_cost=-1",
        "?max_cost=NaN",
        "?max_tokens=x",
        "?budget=1",
    ] {
        let reply = send(
            &app,
            Method::POST,
            &format!("/api/simulations{query}"),
            Some(&bearer),
            Some(&doc),
        )
        .await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{query}: {}",
            reply.json
        );
        assert_eq!(reply.code(), "invalid_query", "{query}");
    }
}

/// Two runs of one suite side by side: per case the pass rate, pass^k,
/// tokens and cost on each side and the change, regressions first — the
/// comparison `toolmock compare` makes of their results documents.
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn two_runs_of_one_suite_compare_case_by_case_regressions_first(pool: PgPool) {
    let server = server();
    let mut cases = suite_cases(3, "correct", 2);
    let base_doc = notes_document(cases.clone());
    let base = run_on(&pool, &base_doc, "", suite_agents(&server, Some(PRICE))).await;
    // The change: case 3's model now loops until the turn limit.
    cases[2]["driver"]["messages"] = json!(["play loop"]);
    let head_doc = notes_document(cases);
    let head = run_on(&pool, &head_doc, "", suite_agents(&server, Some(PRICE))).await;
    let app = app(&pool);
    let bearer = token("acme", &[RUN]);
    let compared = get(
        &app,
        &bearer,
        &format!("/api/simulations/{base}/compare/{head}"),
    )
    .await;
    assert_eq!(compared["regressions"], 1, "{compared:#}");
    assert_eq!(compared["same_suite"], true);
    let rows = compared["cases"].as_array().unwrap();
    let order: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r["change"].as_str().unwrap()))
        .collect();
    assert_eq!(
        order,
        [
            ("case 3", "regression"),
            ("case 1", "same"),
            ("case 2", "same")
        ]
    );
    let regression = &rows[0];
    assert_eq!(regression["base"]["pass_rate"], 1.0);
    assert_eq!(regression["head"]["pass_rate"], 0.0);
    assert_eq!(regression["base"]["pass_k"], true);
    assert_eq!(regression["head"]["pass_k"], false);
    assert!(
        regression["head"]["tokens"].as_u64().unwrap()
            > regression["base"]["tokens"].as_u64().unwrap()
    );
    assert!(regression["head"]["cost"].is_number());
    // The same rows `toolmock compare` makes of the two results documents.
    let documents = [base, head].map(|id| format!("/api/simulations/{id}/results"));
    let base_results = get(&app, &bearer, &documents[0]).await;
    let head_results = get(&app, &bearer, &documents[1]).await;
    let rows_of = toolmock_simulation::compare::compare_cases(
        &toolmock_simulation::compare::results_cases(&base_results).unwrap(),
        &toolmock_simulation::compare::results_cases(&head_results).unwrap(),
    );
    assert_eq!(json!(rows_of), compared["cases"]);
    assert_eq!(
        compared["head"]["tokens"],
        head_results["summary"]["tokens"]["prompt_tokens"]
            .as_u64()
            .unwrap()
            + head_results["summary"]["tokens"]["completion_tokens"]
                .as_u64()
                .unwrap()
    );
    // Another tenant's simulation is not found; a running one is refused.
    let other = token("globex", &[RUN]);
    let reply = send(
        &app,
        Method::GET,
        &format!("/api/simulations/{base}/compare/{head}"),
        Some(&other),
        None,
    )
    .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    let running = start_with(&app, &bearer, &base_doc, "").await;
    let reply = send(
        &app,
        Method::GET,
        &format!("/api/simulations/{base}/compare/{running}"),
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(reply.status, StatusCode::CONFLICT, "{}", reply.json);
    assert_eq!(reply.code(), "simulation_running");
}

/// A replayed answer (a cassette's) is shown with its tokens but costs
/// nothing against the budget; a live one counts; a finished attempt takes
/// no more usage (sealed, like its conversation).
#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn replayed_requests_are_shown_but_cost_nothing(pool: PgPool) {
    let app = app(&pool);
    let bearer = token("acme", &[RUN]);
    let doc = notes_document(suite_cases(1, "correct", 1));
    let id = start_with(&app, &bearer, &doc, "?max_tokens=100").await;
    let view = get(&app, &bearer, &format!("/api/simulations/{id}")).await;
    let attempt = toolmock_runtime::model::AttemptId(
        Uuid::parse_str(view["attempts"][0]["id"].as_str().unwrap()).unwrap(),
    );
    let store = PgStore::new(pool.clone());
    let tenant = toolmock_api::auth::tenant_id("acme");
    let simulation = toolmock_runtime::model::SimulationId(id);
    let usage = |turn, tokens, replayed| toolmock_store::UsageRecord {
        role: "agent".into(),
        turn,
        prompt_tokens: tokens,
        completion_tokens: 10,
        cached_tokens: None,
        cost: None,
        replayed,
        at: chrono::Utc::now(),
    };
    store
        .record_model_usage(tenant, (simulation, attempt), &usage(1, 990, true))
        .await
        .unwrap();
    let standing = store
        .budget_standing(tenant, simulation)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(standing.spent_tokens, 0);
    assert_eq!(standing.exhausted(), None);
    store
        .record_model_usage(tenant, (simulation, attempt), &usage(2, 90, false))
        .await
        .unwrap();
    let view = get(&app, &bearer, &format!("/api/simulations/{id}")).await;
    assert_eq!(view["budget"]["spent_tokens"], 100, "{view:#}");
    assert_eq!(view["budget"]["exhausted"], true);
    assert_eq!(view["tokens"]["total_tokens"], 1_100);
    let page = get(
        &app,
        &bearer,
        &format!("/api/attempts/{}", attempt.as_uuid()),
    )
    .await;
    let replayed: Vec<&Value> = page["model_requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["replayed"])
        .collect();
    assert_eq!(replayed, [&json!(true), &json!(false)]);
    // Finished, the attempt is sealed.
    sqlx::query("UPDATE attempts SET status = 'finished', outcome = 'failed', finished_at = now() WHERE id = $1")
        .bind(attempt.as_uuid())
        .execute(&pool)
        .await
        .unwrap();
    store
        .record_model_usage(tenant, (simulation, attempt), &usage(3, 1, false))
        .await
        .expect_err("sealed");
}
