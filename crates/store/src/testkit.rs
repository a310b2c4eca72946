//! The shop of the store's shared-fixture tests and benches (feature
//! `testkit`, on for this crate's own tests and benches only): an inline
//! tool whose `get` reads an order by a computed path, `cancel` writes one
//! order's status (a nested write) and `note` replaces a top-level key; a
//! fixture of `orders`; a start of it on any backend; a call.

#![allow(clippy::unwrap_used, clippy::expect_used)] // set-up: a failure must stop the test or bench

mod round_trips;
pub use round_trips::{RoundTrips, counted_app_pool};

use serde_json::{Map, Value, json};
use sqlx::PgPool;
use std::time::Duration;
use toolmock_contract::OperationSource;
use toolmock_runtime::backend::Backend;
use toolmock_runtime::dispatcher::StartedSimulation;
use toolmock_runtime::model::{
    AgentSpec, InlineOperation, InlineTool, SimulationMode, TenantId, TestCaseSpec, ToolRef,
};
use toolmock_runtime::testkit::Rig;
use toolmock_runtime::{FixtureInput, StartRequest, ToolCall};

/// A pool on the same database as `pool`, connected as the application role.
pub async fn app_pool(pool: &PgPool) -> PgPool {
    let options = crate::as_app_role((*pool.connect_options()).clone());
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(4)
        .connect_with(options)
        .await
        .unwrap()
}

/// An inline custom operation `name` with the mock definition `testing`.
pub fn op(name: &str, testing: Value) -> InlineOperation {
    let open = json!({"type": "object"});
    InlineOperation {
        name: name.into(),
        source: OperationSource::Custom,
        description: format!("{name} operation"),
        input_schema: open.clone(),
        output_schema: Some(open),
        testing: Some(testing),
    }
}

/// `get` reads an order, `cancel` writes one order's status (a nested
/// write), `note` replaces a top-level key of its own.
pub fn shop() -> InlineTool {
    let id = json!({"$input": "id"});
    InlineTool {
        name: "shop".into(),
        operations: vec![
            op(
                "get",
                json!({
                    "schema_version": 2, "default_variant": "ok",
                    "variants": {"ok": {"result": {"order": {"$state": ["orders", id]}}}},
                    "examples": [{"variant": "ok", "input": {"id": "a"},
                                  "state": {"orders": {"a": {"s": 1}}}, "expected": {"order": {"s": 1}}}]
                }),
            ),
            op(
                "cancel",
                json!({
                    "schema_version": 2, "default_variant": "ok",
                    "variants": {"ok": {"result": {"ok": true},
                        "set_state": [{"path": ["orders", id, "status"], "value": "cancelled"}]}},
                    "examples": [{"variant": "ok", "input": {"id": "a"},
                                  "state": {"orders": {"a": {}}}, "expected": {"ok": true}}]
                }),
            ),
            op(
                "note",
                json!({
                    "schema_version": 2, "default_variant": "ok",
                    "variants": {"ok": {"result": {"ok": true},
                        "set_state": [{"path": ["notes"], "value": {"last": {"$input": "id"}}}]}},
                    "examples": [{"variant": "ok", "input": {"id": "a"},
                                  "state": {}, "expected": {"ok": true}}]
                }),
            ),
        ],
    }
}

/// `orders` of `n` members of about `size` bytes each.
pub fn orders(n: usize, size: usize) -> Map<String, Value> {
    (0..n)
        .map(|i| {
            (
                format!("#W{i}"),
                json!({"status": "pending", "total": i, "note": "x".repeat(size)}),
            )
        })
        .collect()
}

/// Starts a sandbox simulation of the shop over `fixture` (none when empty).
pub async fn start<B: Backend>(
    rig: &Rig<B>,
    name: &str,
    fixture: Map<String, Value>,
    attempts: u32,
) -> (TenantId, StartedSimulation) {
    let members = (!fixture.is_empty())
        .then(|| Map::from_iter([("orders".to_owned(), Value::Object(fixture))]));
    start_tool(rig, name, shop(), members, attempts, "worker-1").await
}

/// Starts a sandbox simulation of `tool` in a new tenant `name`: one case of
/// `attempts` attempts leased to `owner`, over one shared fixture of
/// `fixture`'s members when there is one.
pub async fn start_tool<B: Backend>(
    rig: &Rig<B>,
    name: &str,
    tool: InlineTool,
    fixture: Option<Map<String, Value>>,
    attempts: u32,
    owner: &str,
) -> (TenantId, StartedSimulation) {
    let backend = rig.backend();
    let tenant = backend.create_tenant(name).await.unwrap();
    let spec = AgentSpec {
        tools: vec![ToolRef::Inline(tool)],
        workflows: vec![],
        ..Default::default()
    };
    let agent = backend.create_agent(tenant, "agent", &spec).await.unwrap();
    let request = StartRequest {
        agent,
        mode: SimulationMode::Sandbox,
        allow_incomplete: false,
        test_cases: vec![TestCaseSpec {
            name: "case".into(),
            variants: vec![],
            attempts: None,
        }],
        attempts_per_case: attempts,
        lease_owner: owner.into(),
        lease: Duration::from_secs(600),
        fixtures: fixture
            .into_iter()
            .map(|members| FixtureInput {
                label: "/fixtures/0".into(),
                members,
            })
            .collect(),
    };
    let started = rig.dispatcher.start(tenant, &request).await.unwrap();
    (tenant, started)
}

/// Calls the shop's `op` with `{"id": id}` in attempt `attempt` and
/// gives its result.
pub async fn call<B: Backend>(
    rig: &Rig<B>,
    tenant: TenantId,
    started: &StartedSimulation,
    attempt: usize,
    op: &str,
    id: &str,
) -> Value {
    rig.dispatcher
        .call(
            tenant,
            &started.attempts[attempt].capability,
            &ToolCall::new("shop", op, json!({ "id": id })),
        )
        .await
        .unwrap()
}
