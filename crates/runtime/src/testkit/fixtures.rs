//! The shared set-ups: the rig around a backend, the ledger tool and its
//! simulation, and small builders for inline tools, definitions and starts.

use super::fakes::{ManualClock, RecordingSleeper};
use super::prelude::*;

/// A dispatcher with a manual clock and a recording sleeper.
#[derive(Debug)]
pub struct Rig<B> {
    /// The dispatcher.
    pub dispatcher: Arc<Dispatcher<B>>,
    /// Its clock.
    pub clock: Arc<ManualClock>,
    /// Its sleeper.
    pub sleeper: Arc<RecordingSleeper>,
}

impl<B: Backend> Rig<B> {
    /// Wraps a backend.
    pub fn new(backend: B) -> Self {
        Self::with_executor(backend, None)
    }

    pub(crate) fn with_executor(backend: B, executor: Option<Arc<dyn ExternalExecutor>>) -> Self {
        let clock = Arc::new(ManualClock::new());
        let sleeper = Arc::new(RecordingSleeper::default());
        let mut dispatcher = Dispatcher::new(backend)
            .with_clock(clock.clone())
            .with_sleeper(sleeper.clone());
        if let Some(executor) = executor {
            dispatcher = dispatcher.with_executor(executor);
        }
        Self {
            dispatcher: Arc::new(dispatcher),
            clock,
            sleeper,
        }
    }

    /// The backend under test.
    pub fn backend(&self) -> &B {
        self.dispatcher.backend()
    }
}

pub(crate) fn identity(source: OperationSource, name: &str) -> OperationIdentity {
    OperationIdentity {
        source,
        name: name.into(),
    }
}

/// The ledger operation: each call returns the previous caller's id and
/// stores its own, so any lost or reordered update shows in the evidence.
pub fn ledger_operation() -> NewOperation {
    NewOperation {
        operation: identity(OperationSource::Custom, "append"),
        description: "Append an entry".into(),
        input_schema: json!({"type": "object", "properties": {"id": {"type": "string"}},
                             "required": ["id"]}),
        output_schema: Some(json!({"type": "object", "required": ["previous", "id"]})),
    }
}

/// The ledger definition.
pub fn ledger_definition() -> Value {
    json!({
        "schema_version": 1,
        "default_variant": "success",
        "initial_state": {"last": "start"},
        "variants": {"success": {
            "result": {"previous": {"$state": "last"}, "id": {"$input": "id"}},
            "set_state": {"last": {"$input": "id"}},
            "rules": [{"when": [{"source": "input", "path": "id", "op": "eq", "value": "vip"}],
                       "result": {"previous": {"$state": "last"}, "id": "VIP"}}]
        }},
        "examples": [{"variant": "success", "input": {"id": "x"},
                      "expected": {"previous": "start", "id": "x"}}]
    })
}

pub(crate) fn contract_of(operation: &NewOperation) -> OperationContract {
    operation
        .effective_contract(None)
        .expect("the operation has an output schema")
}

/// Creates the `ledger` library tool with one current revision.
pub async fn library_ledger<B: Backend>(backend: &B, tenant: TenantId) -> (ToolId, OperationId) {
    let tool = backend
        .create_tool(
            tenant,
            &NewTool {
                name: "ledger".into(),
                kind: ToolKind::Custom,
                source_config: json!({}),
                output_schema: None,
            },
        )
        .await
        .expect("create the ledger tool");
    let view = backend
        .upsert_operation(tenant, tool, &ledger_operation())
        .await
        .expect("create the append operation");
    save(
        backend,
        tenant,
        view.id,
        &ledger_operation(),
        ledger_definition(),
    )
    .await
    .expect("save the ledger revision");
    (tool, view.id)
}

pub(crate) async fn save<B: Backend>(
    backend: &B,
    tenant: TenantId,
    operation: OperationId,
    spec: &NewOperation,
    definition: Value,
) -> Result<RevisionRecord, SaveRevisionError> {
    backend
        .save_revision(
            tenant,
            operation,
            &SaveRevision {
                contract_hash: contract_of(spec).hash().unwrap(),
                definition,
                author: "tester@example.com".into(),
                provenance: Provenance::Authored,
            },
        )
        .await
}

pub(crate) fn inline_op(
    name: &str,
    input_schema: Value,
    output_schema: Value,
    testing: Option<Value>,
) -> InlineOperation {
    InlineOperation {
        name: name.into(),
        source: OperationSource::Custom,
        description: format!("{name} operation"),
        input_schema,
        output_schema: Some(output_schema),
        testing,
    }
}

pub(crate) fn definition(
    initial_state: Value,
    variant: Value,
    example_input: Value,
    expected: Value,
) -> Value {
    json!({
        "schema_version": 1,
        "default_variant": "success",
        "initial_state": initial_state,
        "variants": {"success": variant},
        "examples": [{"variant": "success", "input": example_input, "expected": expected}]
    })
}

pub(crate) fn request(agent: AgentId, cases: Vec<TestCaseSpec>, attempts: u32) -> StartRequest {
    StartRequest {
        agent,
        mode: SimulationMode::Sandbox,
        allow_incomplete: false,
        test_cases: cases,
        attempts_per_case: attempts,
        lease_owner: "worker-1".into(),
        lease: Duration::from_secs(600),
        fixtures: Vec::new(),
    }
}

pub(crate) fn workflow(document: Value) -> WorkflowDoc {
    serde_json::from_value(document).expect("a workflow in the documented format")
}

pub(crate) fn case(name: &str) -> TestCaseSpec {
    TestCaseSpec {
        name: name.into(),
        variants: vec![],
        attempts: None,
    }
}

pub(crate) async fn start_agent<B: Backend>(
    rig: &Rig<B>,
    tenant: TenantId,
    spec: AgentSpec,
    attempts: u32,
) -> StartedSimulation {
    let agent = rig
        .backend()
        .create_agent(tenant, "agent", &spec)
        .await
        .expect("create the agent");
    rig.dispatcher
        .start(tenant, &request(agent, vec![case("case")], attempts))
        .await
        .expect("the simulation starts")
}

pub(crate) async fn tenant<B: Backend>(backend: &B, name: &str) -> TenantId {
    backend.create_tenant(name).await.expect("create a tenant")
}

/// The set-up most scenarios, benches and backend tests share: a tenant
/// named `tenant_name` with the library ledger tool, an agent that uses it,
/// and a started sandbox simulation of one test case with `attempts` attempts.
pub async fn ledger_simulation<B: Backend>(
    rig: &Rig<B>,
    tenant_name: &str,
    attempts: u32,
) -> (TenantId, StartedSimulation) {
    let tenant = tenant(rig.backend(), tenant_name).await;
    let (tool, _) = library_ledger(rig.backend(), tenant).await;
    let spec = AgentSpec {
        tools: vec![ToolRef::Library { tool }],
        workflows: vec![],
        ..Default::default()
    };
    (tenant, start_agent(rig, tenant, spec, attempts).await)
}

pub(crate) fn faults_tool() -> InlineTool {
    let open = json!({"type": "object"});
    InlineTool {
        name: "faults".into(),
        operations: vec![
            inline_op(
                "echo",
                open.clone(),
                json!({"type": "object", "required": ["ok"]}),
                Some(definition(
                    json!({}),
                    json!({"result": {"$input": "value"}}),
                    json!({"value": {"ok": true}}),
                    json!({"ok": true}),
                )),
            ),
            inline_op(
                "greet",
                open.clone(),
                open.clone(),
                Some(definition(
                    json!({}),
                    json!({"result": {"name": {"$input": "customer.name"}}}),
                    json!({"customer": {"name": "Ada"}}),
                    json!({"name": "Ada"}),
                )),
            ),
            inline_op(
                "set_amount",
                open.clone(),
                open.clone(),
                Some(definition(
                    json!({}),
                    json!({"result": {"ok": true}, "set_state": {"amount": {"$input": "amount"}}}),
                    json!({"amount": "12.50"}),
                    json!({"ok": true}),
                )),
            ),
            inline_op(
                "charge",
                open.clone(),
                open.clone(),
                Some(definition(
                    json!({"amount": "12.50"}),
                    json!({"result": {"charged": {"$number": {"$state": "amount"}}}}),
                    json!({}),
                    json!({"charged": 12.5}),
                )),
            ),
            inline_op("unmocked", open.clone(), open, None),
        ],
    }
}
