//! The shared behaviour suite: every scenario here runs against the
//! in-memory backend (this crate's `tests/behaviour.rs`) and against
//! PostgreSQL (`toolmock-store`'s `tests/behaviour.rs`, one fresh database per
//! scenario), so both implementations are held to the same guarantees.
//!
//! Enabled by the `testkit` feature. This is test code: a scenario that finds
//! a broken guarantee panics with a message saying which.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::BoxFuture;
use crate::{
    AgentId, AgentSpec, AttemptOutcome, Backend, Capability, Clock, DispatchError, Dispatcher,
    ExternalExecutor, InlineOperation, InlineTool, NewOperation, NewTool, NodeKind, OperationId,
    OperationStatus, PinRef, PinTarget, Provenance, SaveRevision, SaveRevisionError,
    SimulationMode, Sleeper, StartError, StartProblem, StartRequest, StartedSimulation, TenantId,
    TestCaseSpec, ToolCall, ToolId, ToolKind, ToolRef, VariantChoice, Verdict, Workflow,
    WorkflowNode,
};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolmock_contract::{DefinitionHash, OperationContract, OperationIdentity, OperationSource};
use toolmock_evaluator::{Call, CompiledContract, compile_checked, evaluate};

/// A clock the test moves by hand.
#[derive(Debug)]
pub struct ManualClock(Mutex<DateTime<Utc>>);

impl ManualClock {
    /// Starts at the system's now.
    pub fn new() -> Self {
        Self(Mutex::new(Utc::now()))
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock().unwrap();
        *now += chrono::Duration::from_std(by).unwrap();
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap()
    }
}

/// A sleeper that records the delays instead of waiting.
#[derive(Debug, Default)]
pub struct RecordingSleeper(Mutex<Vec<Duration>>);

impl RecordingSleeper {
    /// The delays asked for, in order.
    pub fn delays(&self) -> Vec<Duration> {
        self.0.lock().unwrap().clone()
    }
}

impl Sleeper for RecordingSleeper {
    fn sleep(&self, delay: Duration) -> BoxFuture<'_, ()> {
        self.0.lock().unwrap().push(delay);
        Box::pin(async {})
    }
}

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

    fn with_executor(backend: B, executor: Option<Arc<dyn ExternalExecutor>>) -> Self {
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

    fn backend(&self) -> &B {
        self.dispatcher.backend()
    }
}

fn identity(source: OperationSource, name: &str) -> OperationIdentity {
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

fn contract_of(operation: &NewOperation) -> OperationContract {
    crate::effective_contract(operation, None).expect("the operation has an output schema")
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

async fn save<B: Backend>(
    backend: &B,
    tenant: TenantId,
    operation: OperationId,
    spec: &NewOperation,
    definition: Value,
) -> Result<crate::RevisionRecord, SaveRevisionError> {
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

fn inline_op(
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

fn definition(
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

fn request(agent: AgentId, cases: Vec<TestCaseSpec>, attempts: u32) -> StartRequest {
    StartRequest {
        agent,
        mode: SimulationMode::Sandbox,
        allow_incomplete: false,
        test_cases: cases,
        attempts_per_case: attempts,
        lease_owner: "worker-1".into(),
        lease: Duration::from_secs(600),
    }
}

fn case(name: &str) -> TestCaseSpec {
    TestCaseSpec {
        name: name.into(),
        variants: vec![],
    }
}

async fn start_agent<B: Backend>(
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

async fn tenant<B: Backend>(backend: &B, name: &str) -> TenantId {
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
    };
    (tenant, start_agent(rig, tenant, spec, attempts).await)
}

/// `tasks` concurrent tasks × `calls` calls on one attempt: the evidence's
/// state versions run 1…tasks×calls with no gap and no repeat, and each
/// call's pre-call state is the previous call's post-call state.
pub async fn linearizable_state<B: Backend + 'static>(backend: B, tasks: usize, calls: usize) {
    let rig = Rig::new(backend);
    let (tenant, started) = ledger_simulation(&rig, "acme", 1).await;
    let attempt = started.attempts[0].clone();
    let mut handles = Vec::new();
    for task in 0..tasks {
        let dispatcher = rig.dispatcher.clone();
        let capability = attempt.capability.clone();
        handles.push(tokio::spawn(async move {
            for call in 0..calls {
                let id = format!("t{task}-c{call}");
                let result = dispatcher
                    .call(
                        tenant,
                        &capability,
                        &ToolCall::new("ledger", "append", json!({ "id": id })),
                    )
                    .await
                    .expect("a ledger call succeeds");
                assert_eq!(result["id"], json!(id));
            }
        }));
    }
    for handle in handles {
        handle.await.expect("a task completes");
    }
    let total = tasks * calls;
    let evidence = rig
        .backend()
        .evidence(tenant, attempt.id)
        .await
        .expect("read the evidence");
    assert_eq!(evidence.len(), total, "one evidence row per call");
    let mut seen_ids = HashSet::new();
    let mut previous_after: Option<&Map<String, Value>> = None;
    for (index, row) in evidence.iter().enumerate() {
        let expected_version = u64::try_from(index + 1).unwrap();
        assert_eq!(
            row.version_after, expected_version,
            "versions have no gap or repeat"
        );
        assert_eq!(row.version_before, expected_version - 1);
        if let Some(after) = previous_after {
            assert_eq!(
                &row.state_before, after,
                "pre-call state = previous post-call state"
            );
        } else {
            assert_eq!(row.state_before["last"], json!("start"));
        }
        assert_eq!(row.result["previous"], row.state_before["last"]);
        assert_eq!(row.state_after["last"], row.arguments["id"]);
        assert!(
            seen_ids.insert(row.arguments["id"].clone()),
            "each call once"
        );
        previous_after = Some(&row.state_after);
    }
    let state = rig
        .backend()
        .state(tenant, attempt.id)
        .await
        .expect("read the state");
    assert_eq!(state.version, u64::try_from(total).unwrap());
    assert_eq!(Some(&state.state), previous_after);
}

/// Two attempts of one simulation never see each other's state.
pub async fn attempts_are_isolated<B: Backend>(backend: B) {
    let rig = Rig::new(backend);
    let (tenant, started) = ledger_simulation(&rig, "acme", 2).await;
    let (a, b) = (&started.attempts[0], &started.attempts[1]);
    let append = |id: &str| ToolCall::new("ledger", "append", json!({ "id": id }));
    let first = rig
        .dispatcher
        .call(tenant, &a.capability, &append("a1"))
        .await
        .unwrap();
    assert_eq!(first["previous"], json!("start"));
    let second = rig
        .dispatcher
        .call(tenant, &a.capability, &append("a2"))
        .await
        .unwrap();
    assert_eq!(second["previous"], json!("a1"));
    let other = rig
        .dispatcher
        .call(tenant, &b.capability, &append("b1"))
        .await
        .unwrap();
    assert_eq!(
        other["previous"],
        json!("start"),
        "b does not see a's writes"
    );
    let again = rig
        .dispatcher
        .call(tenant, &a.capability, &append("a3"))
        .await
        .unwrap();
    assert_eq!(again["previous"], json!("a2"), "a does not see b's writes");
    let state_a = rig.backend().state(tenant, a.id).await.unwrap();
    let state_b = rig.backend().state(tenant, b.id).await.unwrap();
    assert_eq!((state_a.version, state_b.version), (3, 1));
    assert_eq!(state_b.state["last"], json!("b1"));
    assert_eq!(rig.backend().evidence(tenant, b.id).await.unwrap().len(), 1);
}

fn faults_tool() -> InlineTool {
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

/// Every harness fault is recorded when it happens and makes its attempt end
/// `harness_error`, even when the test code swallows the error and hands
/// `finish_attempt` a pass.
pub async fn harness_faults_never_pass<B: Backend>(backend: B) {
    let rig = Rig::new(backend);
    let tenant = tenant(rig.backend(), "acme").await;
    let agent = rig
        .backend()
        .create_agent(
            tenant,
            "faulty",
            &AgentSpec {
                tools: vec![ToolRef::Inline(faults_tool())],
                workflows: vec![],
            },
        )
        .await
        .unwrap();
    let mut req = request(
        agent,
        vec![
            case("faults"),
            TestCaseSpec {
                name: "bad variant".into(),
                variants: vec![VariantChoice {
                    tool: "faults".into(),
                    operation: "echo".into(),
                    variant: "no_such_variant".into(),
                }],
            },
        ],
        6,
    );
    req.allow_incomplete = true;
    let started = rig
        .dispatcher
        .start(tenant, &req)
        .await
        .expect("starts with allow_incomplete");
    let attempts = &started.attempts;
    let call = |tool: &str, operation: &str, input: Value| ToolCall::new(tool, operation, input);
    let cases: Vec<(&str, Vec<ToolCall>)> = vec![
        (
            "missing_definition",
            vec![call("faults", "unmocked", json!({}))],
        ),
        (
            "unknown_tool",
            vec![call("payments", "charge", json!({"amount": 5}))],
        ),
        (
            "missing_reference",
            vec![call("faults", "greet", json!({"customer": {}}))],
        ),
        (
            "output_schema_violation",
            vec![call("faults", "echo", json!({"value": {"nope": 1}}))],
        ),
        (
            "invalid_fixture_literal",
            vec![
                call("faults", "set_amount", json!({"amount": "twelve"})),
                call("faults", "charge", json!({})),
            ],
        ),
    ];
    for ((code, calls), attempt) in cases.iter().zip(attempts.iter()) {
        let (last, setup) = calls.split_last().unwrap();
        for step in setup {
            rig.dispatcher
                .call(tenant, &attempt.capability, step)
                .await
                .expect("setup call");
        }
        let before = rig.backend().state(tenant, attempt.id).await.unwrap();
        // The test code "catches" the error...
        let error = rig
            .dispatcher
            .call(tenant, &attempt.capability, last)
            .await
            .expect_err("the faulty call fails");
        assert!(
            matches!(&error, DispatchError::Harness(f) if f.code == *code),
            "{code}: {error:?}"
        );
        assert_eq!(error.code(), *code);
        let after = rig.backend().state(tenant, attempt.id).await.unwrap();
        assert_eq!(before, after, "{code}: a failed call changes no state");
        let recorded = rig
            .backend()
            .harness_errors(tenant, attempt.id)
            .await
            .unwrap();
        assert_eq!(recorded.len(), 1, "{code}: recorded once");
        assert_eq!(recorded[0].code, *code);
        assert_eq!(recorded[0].tool.as_deref(), Some(last.tool.as_str()));
        assert_eq!(recorded[0].arguments.as_ref(), Some(&last.input));
        // ...and hands finish_attempt a pass.
        let outcome = rig
            .dispatcher
            .finish_attempt(tenant, attempt.id, Verdict::Passed)
            .await
            .unwrap();
        assert_eq!(outcome, AttemptOutcome::HarnessError, "{code} never passes");
        let stored = rig.backend().attempt(tenant, attempt.id).await.unwrap();
        assert_eq!(stored.outcome, Some(AttemptOutcome::HarnessError));
        assert!(stored.has_harness_error);
    }
    // The sixth attempt of the first case has no fault and passes.
    let clean = &attempts[5];
    rig.dispatcher
        .call(
            tenant,
            &clean.capability,
            &call("faults", "echo", json!({"value": {"ok": 1}})),
        )
        .await
        .expect("a good call");
    let outcome = rig
        .dispatcher
        .finish_attempt(tenant, clean.id, Verdict::Passed)
        .await
        .unwrap();
    assert_eq!(outcome, AttemptOutcome::Passed);
    // A test case naming a variant the definition lacks: unknown_variant.
    let bad_variant = attempts
        .iter()
        .find(|a| a.test_case_name == "bad variant")
        .unwrap();
    let error = rig
        .dispatcher
        .call(
            tenant,
            &bad_variant.capability,
            &call("faults", "echo", json!({"value": {"ok": 1}})),
        )
        .await
        .expect_err("unknown variant");
    assert_eq!(error.code(), "unknown_variant");
    assert_eq!(
        rig.dispatcher
            .finish_attempt(tenant, bad_variant.id, Verdict::Failed)
            .await
            .unwrap(),
        AttemptOutcome::HarnessError
    );
    // A harness error recorded after the verdict still turns the attempt.
    let late = attempts
        .iter()
        .rfind(|a| a.test_case_name == "bad variant")
        .unwrap();
    assert_eq!(
        rig.dispatcher
            .finish_attempt(tenant, late.id, Verdict::Passed)
            .await
            .unwrap(),
        AttemptOutcome::Passed
    );
    let error = rig
        .dispatcher
        .call(
            tenant,
            &late.capability,
            &call("faults", "echo", json!({"value": {"ok": 1}})),
        )
        .await
        .expect_err("a call after the attempt ended");
    assert_eq!(error.code(), "lease_expired");
    let stored = rig.backend().attempt(tenant, late.id).await.unwrap();
    assert_eq!(stored.outcome, Some(AttemptOutcome::HarnessError));
}

/// A call with bad arguments returns a tool input error, stores it and
/// changes no state; the corrected call then succeeds and the attempt can pass.
pub async fn tool_input_errors_are_recoverable<B: Backend>(backend: B) {
    let rig = Rig::new(backend);
    let tenant = tenant(rig.backend(), "acme").await;
    let lookup = inline_op(
        "lookup",
        json!({"type": "object", "properties": {"member_id": {"type": "string"}},
               "required": ["member_id"], "additionalProperties": false}),
        json!({"type": "object"}),
        Some(definition(
            json!({}),
            json!({"result": {"member": {"$input": "member_id"}},
                   "set_state": {"looked_up": {"$input": "member_id"}}}),
            json!({"member_id": "M-1"}),
            json!({"member": "M-1"}),
        )),
    );
    let refund = inline_op(
        "refund",
        json!({"type": "object"}),
        json!({"type": "object"}),
        Some(definition(
            json!({}),
            json!({"result": {"amount": {"$number": {"$input": "amount"}}}}),
            json!({"amount": "10.00"}),
            json!({"amount": 10}),
        )),
    );
    let started = start_agent(
        &rig,
        tenant,
        AgentSpec {
            tools: vec![ToolRef::Inline(InlineTool {
                name: "patients".into(),
                operations: vec![lookup, refund],
            })],
            workflows: vec![],
        },
        1,
    )
    .await;
    let attempt = &started.attempts[0];
    let call = |operation: &str, input: Value| ToolCall::new("patients", operation, input);
    let error = rig
        .dispatcher
        .call(
            tenant,
            &attempt.capability,
            &call("lookup", json!({"memberId": "M-1"})),
        )
        .await
        .expect_err("bad arguments");
    let DispatchError::ToolInput(fault) = &error else {
        panic!("expected a tool input error, got {error:?}");
    };
    assert_eq!(fault.code, "invalid_arguments");
    assert!(
        fault.violations.as_array().is_some_and(|v| v.len() >= 2),
        "{fault:?}"
    );
    assert_eq!(
        rig.backend()
            .state(tenant, attempt.id)
            .await
            .unwrap()
            .version,
        0
    );
    let error = rig
        .dispatcher
        .call(
            tenant,
            &attempt.capability,
            &call("refund", json!({"amount": "1e3"})),
        )
        .await
        .expect_err("an exponent is no $number");
    assert_eq!(error.code(), "invalid_number");
    assert!(matches!(error, DispatchError::ToolInput(_)));
    let stored = rig
        .backend()
        .tool_input_errors(tenant, attempt.id)
        .await
        .unwrap();
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[0].code, "invalid_arguments");
    assert_eq!(stored[0].arguments, json!({"memberId": "M-1"}));
    assert!(matches!(stored[0].pin, Some(PinRef::Inline { .. })));
    assert_eq!(stored[1].code, "invalid_number");
    assert_eq!(stored[1].path.as_deref(), Some("/amount"));
    let snapshot = rig.backend().state(tenant, attempt.id).await.unwrap();
    assert_eq!(snapshot.version, 0, "no state change");
    assert!(snapshot.state.is_empty());
    // The agent recovers.
    let result = rig
        .dispatcher
        .call(
            tenant,
            &attempt.capability,
            &call("lookup", json!({"member_id": "M-1"})),
        )
        .await
        .expect("the corrected call succeeds");
    assert_eq!(result, json!({"member": "M-1"}));
    let result = rig
        .dispatcher
        .call(
            tenant,
            &attempt.capability,
            &call("refund", json!({"amount": "10.50"})),
        )
        .await
        .expect("the corrected refund succeeds");
    assert_eq!(result, json!({"amount": 10.5}));
    let snapshot = rig.backend().state(tenant, attempt.id).await.unwrap();
    assert_eq!(snapshot.version, 2);
    assert_eq!(snapshot.state["looked_up"], json!("M-1"));
    assert!(
        rig.backend()
            .harness_errors(tenant, attempt.id)
            .await
            .unwrap()
            .is_empty()
    );
    let outcome = rig
        .dispatcher
        .finish_attempt(tenant, attempt.id, Verdict::Passed)
        .await
        .unwrap();
    assert_eq!(
        outcome,
        AttemptOutcome::Passed,
        "tool input errors do not fail the harness"
    );
}

/// The caller receives exactly the rendered result, and the evidence holds
/// tool, operation, revision or inline hash, variant, rule, arguments, result.
pub async fn result_is_exactly_rendered<B: Backend>(backend: B) {
    let rig = Rig::new(backend);
    let tenant = tenant(rig.backend(), "acme").await;
    let (tool, operation) = library_ledger(rig.backend(), tenant).await;
    // A second revision: the latest is the one pinned.
    let second = save(
        rig.backend(),
        tenant,
        operation,
        &ledger_operation(),
        ledger_definition(),
    )
    .await
    .unwrap();
    assert_eq!(second.revision, 2);
    let inline_definition = definition(
        json!({"reference": "TEST-742"}),
        json!({"result": {"reference": {"$state": "reference"}, "note": "{{input.name}}",
                          "n": 1.0, "list": [3, "x", null]},
               "set_state": {"booked": true}}),
        json!({}),
        json!({"reference": "TEST-742", "note": "{{input.name}}", "n": 1.0, "list": [3, "x", null]}),
    );
    let calendar = InlineTool {
        name: "calendar".into(),
        operations: vec![inline_op(
            "book",
            json!({"type": "object"}),
            json!({"type": "object", "properties": {"reference": {"type": "string"}}}),
            Some(inline_definition.clone()),
        )],
    };
    let started = start_agent(
        &rig,
        tenant,
        AgentSpec {
            tools: vec![ToolRef::Library { tool }, ToolRef::Inline(calendar)],
            workflows: vec![],
        },
        1,
    )
    .await;
    let attempt = &started.attempts[0];

    // What the pure evaluator renders for the same call and pre-call state.
    let contract = CompiledContract::new(contract_of(&ledger_operation())).unwrap();
    let compiled = compile_checked(&ledger_definition(), Some(&contract)).unwrap();
    let pre = rig.backend().state(tenant, attempt.id).await.unwrap().state;
    let input = json!({"id": "vip"});
    let expected = evaluate(
        &compiled,
        &Call {
            input: &input,
            state: &pre,
            variant: None,
        },
    )
    .unwrap()
    .result;
    let result = rig
        .dispatcher
        .call(
            tenant,
            &attempt.capability,
            &ToolCall::new("ledger", "append", input.clone()),
        )
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_vec(&result).unwrap(),
        serde_json::to_vec(&expected).unwrap()
    );
    assert_eq!(result, json!({"previous": "start", "id": "VIP"}));
    assert!(
        result.get("success").is_none() && result.get("result").is_none(),
        "no wrapper"
    );

    let booked = rig
        .dispatcher
        .call(
            tenant,
            &attempt.capability,
            &ToolCall::new("calendar", "book", json!({"name": "Ada"})),
        )
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_string(&booked).unwrap(),
        r#"{"list":[3,"x",null],"n":1.0,"note":"{{input.name}}","reference":"TEST-742"}"#
    );

    let evidence = rig.backend().evidence(tenant, attempt.id).await.unwrap();
    assert_eq!(evidence.len(), 2);
    let first = &evidence[0];
    assert_eq!(
        (first.tool.as_str(), first.operation.as_str()),
        ("ledger", "append")
    );
    assert_eq!(
        first.pin,
        PinRef::Library {
            tool,
            operation,
            revision: 2,
            definition_hash: DefinitionHash::of(&ledger_definition()).unwrap(),
        }
    );
    assert_eq!(first.variant.as_deref(), Some("success"));
    assert_eq!(first.rule, Some(0));
    assert_eq!(first.arguments, input);
    assert_eq!(first.result, result);
    assert_eq!(first.executor, crate::Executor::Mock);
    let second = &evidence[1];
    assert_eq!(
        second.pin,
        PinRef::Inline {
            definition_hash: DefinitionHash::of(&inline_definition).unwrap()
        }
    );
    assert_eq!(second.rule, None);
    assert_eq!(
        serde_json::to_vec(&second.result).unwrap(),
        serde_json::to_vec(&booked).unwrap()
    );
    assert_eq!(second.state_after["booked"], json!(true));
    assert_eq!(second.state_before["reference"], json!("TEST-742"));
}

/// A start refuses, listing every problem: stale, missing and unmockable
/// operations, a state conflict naming both definitions, and every effect
/// node of a sandbox run (nested workflows included).
pub async fn start_refusals<B: Backend>(backend: B) {
    let rig = Rig::new(backend);
    let tenant = tenant(rig.backend(), "acme").await;
    let b = rig.backend();
    let crm = b
        .create_tool(
            tenant,
            &NewTool {
                name: "crm".into(),
                kind: ToolKind::Mcp,
                source_config: json!({"server": "crm"}),
                output_schema: None,
            },
        )
        .await
        .unwrap();
    let op = |name: &str, output: Option<Value>| NewOperation {
        operation: identity(OperationSource::Mcp, name),
        description: name.into(),
        input_schema: json!({"type": "object"}),
        output_schema: output,
    };
    let simple = |state: Value| {
        definition(
            state,
            json!({"result": {"ok": true}}),
            json!({}),
            json!({"ok": true}),
        )
    };
    let current = b
        .upsert_operation(tenant, crm, &op("current", Some(json!({"type": "object"}))))
        .await
        .unwrap();
    save(
        b,
        tenant,
        current.id,
        &op("current", Some(json!({"type": "object"}))),
        simple(json!({"region": "eu"})),
    )
    .await
    .unwrap();
    let stale = b
        .upsert_operation(tenant, crm, &op("stale", Some(json!({"type": "object"}))))
        .await
        .unwrap();
    save(
        b,
        tenant,
        stale.id,
        &op("stale", Some(json!({"type": "object"}))),
        simple(json!({})),
    )
    .await
    .unwrap();
    // A schema correction makes the old revision stale.
    let corrected = op("stale", Some(json!({"type": "object", "required": ["ok"]})));
    let view = b.upsert_operation(tenant, crm, &corrected).await.unwrap();
    assert_eq!(view.status(), OperationStatus::Stale);
    b.upsert_operation(tenant, crm, &op("missing", Some(json!({"type": "object"}))))
        .await
        .unwrap();
    let unmockable = b
        .upsert_operation(tenant, crm, &op("unmockable", None))
        .await
        .unwrap();
    assert_eq!(unmockable.status(), OperationStatus::NeedsOutputSchema);
    let listing = b.tool(tenant, crm).await.unwrap();
    let statuses: Vec<_> = listing
        .operations
        .iter()
        .map(|o| (o.operation.name.as_str(), o.status()))
        .collect();
    assert_eq!(
        statuses,
        vec![
            ("current", OperationStatus::Current),
            ("missing", OperationStatus::Missing),
            ("stale", OperationStatus::Stale),
            ("unmockable", OperationStatus::NeedsOutputSchema),
        ]
    );

    let (ledger, _) = library_ledger(b, tenant).await;
    let conflicting = InlineTool {
        name: "geo".into(),
        operations: vec![inline_op(
            "locate",
            json!({"type": "object"}),
            json!({"type": "object"}),
            Some(simple(json!({"region": "us"}))),
        )],
    };
    let spec = AgentSpec {
        tools: vec![
            ToolRef::Library { tool: crm },
            ToolRef::Workflow {
                workflow: "outer".into(),
            },
        ],
        workflows: vec![
            Workflow {
                name: "outer".into(),
                nodes: vec![
                    WorkflowNode {
                        id: "route".into(),
                        kind: NodeKind::Control,
                    },
                    WorkflowNode {
                        id: "notify".into(),
                        kind: NodeKind::Effect {
                            effect: "email".into(),
                        },
                    },
                    WorkflowNode {
                        id: "inner_call".into(),
                        kind: NodeKind::Tool {
                            tool: ToolRef::Workflow {
                                workflow: "inner".into(),
                            },
                        },
                    },
                ],
            },
            Workflow {
                name: "inner".into(),
                nodes: vec![
                    WorkflowNode {
                        id: "locate".into(),
                        kind: NodeKind::Tool {
                            tool: ToolRef::Inline(conflicting),
                        },
                    },
                    WorkflowNode {
                        id: "post".into(),
                        kind: NodeKind::Effect {
                            effect: "http_request".into(),
                        },
                    },
                    WorkflowNode {
                        id: "log".into(),
                        kind: NodeKind::Tool {
                            tool: ToolRef::Library { tool: ledger },
                        },
                    },
                    WorkflowNode {
                        id: "again".into(),
                        kind: NodeKind::Tool {
                            tool: ToolRef::Workflow {
                                workflow: "outer".into(),
                            },
                        },
                    },
                ],
            },
        ],
    };
    let agent = b.create_agent(tenant, "refused", &spec).await.unwrap();
    let error = rig
        .dispatcher
        .start(tenant, &request(agent, vec![case("c")], 1))
        .await
        .expect_err("the start is refused");
    let StartError::Refused { problems } = &error else {
        panic!("expected a refusal, got {error:?}");
    };
    let incomplete: Vec<(&str, &str)> = problems
        .iter()
        .filter_map(|p| match p {
            StartProblem::Incomplete {
                operation, status, ..
            } => Some((operation.as_str(), status.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        incomplete,
        vec![
            ("missing", "missing"),
            ("stale", "stale"),
            ("unmockable", "needs_output_schema")
        ]
    );
    let effects: Vec<(&str, &str)> = problems
        .iter()
        .filter_map(|p| match p {
            StartProblem::EffectNode { workflow, node, .. } => {
                Some((workflow.as_str(), node.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(effects, vec![("outer", "notify"), ("inner", "post")]);
    let conflicts: Vec<&StartProblem> = problems
        .iter()
        .filter(|p| matches!(p, StartProblem::StateConflict { .. }))
        .collect();
    assert_eq!(conflicts.len(), 1, "{problems:?}");
    let StartProblem::StateConflict { key, first, second } = conflicts[0] else {
        unreachable!()
    };
    assert_eq!(key, "region");
    assert!(first.starts_with("crm/current@revision 1"), "{first}");
    assert!(second.starts_with("geo/locate@inline "), "{second}");
    assert_eq!(problems.len(), 6, "{problems:?}");
    assert!(error.to_string().contains("crm/stale is stale"));

    // A real-tools run keeps the real handlers: effect nodes are no problem there.
    let mut real = request(agent, vec![case("c")], 1);
    real.mode = SimulationMode::RealTools;
    let StartError::Refused { problems } = rig.dispatcher.start(tenant, &real).await.unwrap_err()
    else {
        panic!("expected a refusal");
    };
    assert!(
        problems
            .iter()
            .all(|p| !matches!(p, StartProblem::EffectNode { .. }))
    );
    assert_eq!(problems.len(), 4);

    // An unknown library tool and an unknown workflow are named too.
    let ghost = AgentSpec {
        tools: vec![
            ToolRef::Library {
                tool: ToolId::random(),
            },
            ToolRef::Workflow {
                workflow: "nowhere".into(),
            },
        ],
        workflows: vec![],
    };
    let agent = b.create_agent(tenant, "ghost", &ghost).await.unwrap();
    let StartError::Refused { problems } = rig
        .dispatcher
        .start(tenant, &request(agent, vec![case("c")], 1))
        .await
        .unwrap_err()
    else {
        panic!("expected a refusal");
    };
    let codes: Vec<&str> = problems.iter().map(StartProblem::code).collect();
    assert_eq!(codes, vec!["unknown_workflow", "unknown_tool"]);
}

/// With `allow_incomplete`, the start succeeds and calls to the unpinned
/// operations fail closed as `missing_definition`; nested workflows' tools
/// are pinned and share the attempt's state.
pub async fn incomplete_starts_fail_closed<B: Backend>(backend: B) {
    let rig = Rig::new(backend);
    let tenant = tenant(rig.backend(), "acme").await;
    let b = rig.backend();
    let (ledger, _) = library_ledger(b, tenant).await;
    let open = json!({"type": "object"});
    let calendar = InlineTool {
        name: "calendar".into(),
        operations: vec![
            inline_op(
                "book",
                open.clone(),
                open.clone(),
                Some(definition(
                    json!({"booked": false}),
                    json!({"result": {"ok": true}, "set_state": {"booked": true}}),
                    json!({}),
                    json!({"ok": true}),
                )),
            ),
            inline_op(
                "status",
                open.clone(),
                open.clone(),
                Some(definition(
                    json!({"booked": false}),
                    json!({"result": {"booked": {"$state": "booked"}}}),
                    json!({}),
                    json!({"booked": false}),
                )),
            ),
            inline_op("cancel", open.clone(), open, None),
        ],
    };
    let spec = AgentSpec {
        tools: vec![ToolRef::Workflow {
            workflow: "booking".into(),
        }],
        workflows: vec![
            Workflow {
                name: "booking".into(),
                nodes: vec![
                    WorkflowNode {
                        id: "cal".into(),
                        kind: NodeKind::Tool {
                            tool: ToolRef::Inline(calendar),
                        },
                    },
                    WorkflowNode {
                        id: "sub".into(),
                        kind: NodeKind::Tool {
                            tool: ToolRef::Workflow {
                                workflow: "audit".into(),
                            },
                        },
                    },
                ],
            },
            Workflow {
                name: "audit".into(),
                nodes: vec![WorkflowNode {
                    id: "log".into(),
                    kind: NodeKind::Tool {
                        tool: ToolRef::Library { tool: ledger },
                    },
                }],
            },
        ],
    };
    let agent = b.create_agent(tenant, "booker", &spec).await.unwrap();
    let error = rig
        .dispatcher
        .start(tenant, &request(agent, vec![case("c")], 1))
        .await
        .expect_err("cancel has no definition");
    assert!(
        matches!(&error, StartError::Refused { problems } if problems.len() == 1),
        "{error:?}"
    );
    let mut req = request(agent, vec![case("c")], 1);
    req.allow_incomplete = true;
    let started = rig
        .dispatcher
        .start(tenant, &req)
        .await
        .expect("allow_incomplete starts");
    let pinned: Vec<(&str, &str, bool)> = started
        .pins
        .iter()
        .map(|p| {
            (
                p.tool.as_str(),
                p.operation.as_str(),
                matches!(p.pin, PinTarget::Pinned { .. }),
            )
        })
        .collect();
    assert!(
        pinned.contains(&("ledger", "append", true)),
        "nested workflow tools are pinned"
    );
    assert!(pinned.contains(&("calendar", "cancel", false)));
    let attempt = &started.attempts[0];
    let initial = b.state(tenant, attempt.id).await.unwrap();
    assert_eq!(initial.state["booked"], json!(false));
    assert_eq!(
        initial.state["last"],
        json!("start"),
        "the union of the initial states"
    );
    let call = |op: &str| ToolCall::new("calendar", op, json!({}));
    let cap = &attempt.capability;
    assert_eq!(
        rig.dispatcher
            .call(tenant, cap, &call("status"))
            .await
            .unwrap(),
        json!({"booked": false})
    );
    rig.dispatcher
        .call(tenant, cap, &call("book"))
        .await
        .unwrap();
    // A write by one operation shows in a later lookup by another (a nested
    // service holding the same capability).
    assert_eq!(
        rig.dispatcher
            .call(tenant, cap, &call("status"))
            .await
            .unwrap(),
        json!({"booked": true})
    );
    let error = rig
        .dispatcher
        .call(tenant, cap, &call("cancel"))
        .await
        .expect_err("unpinned");
    assert_eq!(error.code(), "missing_definition");
    assert_eq!(
        rig.dispatcher
            .finish_attempt(tenant, attempt.id, Verdict::Passed)
            .await
            .unwrap(),
        AttemptOutcome::HarnessError
    );
}

/// Saves are numbered 1, 2, 3… with no gap or duplicate under concurrency; a
/// changed contract is `ContractChanged { current }`; a failing definition is
/// refused with its diagnostics.
pub async fn revisions_are_dense<B: Backend + Clone + 'static>(backend: B, concurrent: usize) {
    let tenant = tenant(&backend, "acme").await;
    let (_, operation) = library_ledger(&backend, tenant).await;
    let mut handles = Vec::new();
    for _ in 0..concurrent {
        let backend = backend.clone();
        handles.push(tokio::spawn(async move {
            save(
                &backend,
                tenant,
                operation,
                &ledger_operation(),
                ledger_definition(),
            )
            .await
            .expect("a concurrent save succeeds")
            .revision
        }));
    }
    let mut numbers = Vec::new();
    for handle in handles {
        numbers.push(handle.await.unwrap());
    }
    numbers.sort_unstable();
    let expected: Vec<u32> = (2..=u32::try_from(concurrent).unwrap() + 1).collect();
    assert_eq!(numbers, expected, "N and N+1, never a duplicate or a gap");

    let stale_hash = contract_of(&ledger_operation()).hash().unwrap();
    let mut changed = ledger_operation();
    changed.description = "Append an entry to the ledger".into();
    let tool = backend.revision(tenant, operation, 1).await.unwrap().tool;
    let view = backend
        .upsert_operation(tenant, tool, &changed)
        .await
        .unwrap();
    let current = view.contract_hash.clone().unwrap();
    assert_ne!(current, stale_hash);
    let error = backend
        .save_revision(
            tenant,
            operation,
            &SaveRevision {
                contract_hash: stale_hash.clone(),
                definition: ledger_definition(),
                author: "a".into(),
                provenance: Provenance::Authored,
            },
        )
        .await
        .expect_err("the contract changed");
    assert!(
        matches!(&error, SaveRevisionError::ContractChanged { current: c } if *c == current),
        "{error:?}"
    );
    let mut broken = ledger_definition();
    broken["variants"]["success"]["delay_ms"] = json!(99_999);
    broken["extra"] = json!(1);
    let error = backend
        .save_revision(
            tenant,
            operation,
            &SaveRevision {
                contract_hash: current.clone(),
                definition: broken,
                author: "a".into(),
                provenance: Provenance::Generated {
                    instructions: Some("be brief".into()),
                },
            },
        )
        .await
        .expect_err("the definition fails its check");
    let SaveRevisionError::InvalidDefinition(diagnostics) = &error else {
        panic!("expected InvalidDefinition, got {error:?}");
    };
    assert!(diagnostics.len() >= 2, "every problem at once");
    let saved = backend
        .save_revision(
            tenant,
            operation,
            &SaveRevision {
                contract_hash: current.clone(),
                definition: ledger_definition(),
                author: "gen".into(),
                provenance: Provenance::Generated {
                    instructions: Some("be brief".into()),
                },
            },
        )
        .await
        .unwrap();
    let next = u32::try_from(concurrent).unwrap() + 2;
    assert_eq!(saved.revision, next);
    let read = backend.revision(tenant, operation, next).await.unwrap();
    assert_eq!(read, saved);
    assert_eq!(read.provenance.instructions(), Some("be brief"));
    // The old revisions keep the hash they were saved against.
    assert_eq!(
        backend
            .revision(tenant, operation, 1)
            .await
            .unwrap()
            .contract_hash,
        stale_hash
    );
    let listing = backend.tool(tenant, tool).await.unwrap();
    assert_eq!(listing.operations[0].status(), OperationStatus::Current);
    assert_eq!(
        listing.operations[0].latest.as_ref().map(|r| r.revision),
        Some(next)
    );
}

/// Capabilities are valid only while the attempt's lease is: expired or
/// revoked ones are refused and recorded as `lease_expired`; foreign and
/// unknown ones are refused without touching any attempt.
pub async fn capabilities_follow_the_lease<B: Backend>(backend: B) {
    let rig = Rig::new(backend);
    let tenant_a = tenant(rig.backend(), "a").await;
    let tenant_b = tenant(rig.backend(), "b").await;
    let (tool, _) = library_ledger(rig.backend(), tenant_a).await;
    let agent = rig
        .backend()
        .create_agent(
            tenant_a,
            "agent",
            &AgentSpec {
                tools: vec![ToolRef::Library { tool }],
                workflows: vec![],
            },
        )
        .await
        .unwrap();
    let mut req = request(agent, vec![case("c")], 3);
    req.lease = Duration::from_secs(60);
    let started = rig.dispatcher.start(tenant_a, &req).await.unwrap();
    let append = |id: &str| ToolCall::new("ledger", "append", json!({ "id": id }));
    let (expiring, revoked, renewed) = (
        &started.attempts[0],
        &started.attempts[1],
        &started.attempts[2],
    );

    // Foreign: tenant b presenting tenant a's capability; unknown: a random token.
    for (tenant, capability) in [
        (tenant_b, expiring.capability.clone()),
        (tenant_a, Capability::generate()),
        (tenant_a, Capability::from_token("not-a-token")),
    ] {
        let error = rig
            .dispatcher
            .call(tenant, &capability, &append("x"))
            .await
            .unwrap_err();
        assert!(
            matches!(error, DispatchError::CapabilityRejected),
            "{error:?}"
        );
    }
    assert!(
        rig.backend()
            .harness_errors(tenant_a, expiring.id)
            .await
            .unwrap()
            .is_empty()
    );

    rig.dispatcher
        .call(tenant_a, &expiring.capability, &append("ok"))
        .await
        .unwrap();
    rig.backend()
        .revoke_capabilities(tenant_a, revoked.id, rig.clock.now())
        .await
        .unwrap();
    let error = rig
        .dispatcher
        .call(tenant_a, &revoked.capability, &append("r"))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "lease_expired");

    rig.clock.advance(Duration::from_secs(30));
    rig.backend()
        .renew_lease(
            tenant_a,
            renewed.id,
            "worker-1",
            rig.clock.now() + chrono::Duration::seconds(600),
        )
        .await
        .unwrap();
    assert!(
        rig.backend()
            .renew_lease(tenant_a, renewed.id, "worker-2", rig.clock.now())
            .await
            .is_err()
    );
    rig.clock.advance(Duration::from_secs(31));
    let error = rig
        .dispatcher
        .call(tenant_a, &expiring.capability, &append("late"))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "lease_expired");
    let recorded = rig
        .backend()
        .harness_errors(tenant_a, expiring.id)
        .await
        .unwrap();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].code, "lease_expired");
    assert_eq!(
        rig.backend()
            .state(tenant_a, expiring.id)
            .await
            .unwrap()
            .version,
        1
    );
    rig.dispatcher
        .call(tenant_a, &renewed.capability, &append("still"))
        .await
        .expect("the renewed lease holds");
    for attempt in [expiring, revoked] {
        assert_eq!(
            rig.dispatcher
                .finish_attempt(tenant_a, attempt.id, Verdict::Passed)
                .await
                .unwrap(),
            AttemptOutcome::HarnessError
        );
    }
    assert_eq!(
        rig.dispatcher
            .finish_attempt(tenant_a, renewed.id, Verdict::Failed)
            .await
            .unwrap(),
        AttemptOutcome::Failed
    );
    assert!(
        rig.dispatcher
            .finish_attempt(tenant_a, renewed.id, Verdict::Passed)
            .await
            .is_err()
    );
}

/// Every read and write of every storage trait, given a second tenant's
/// credentials and the first tenant's ids, is "not found", and changes nothing.
pub async fn tenancy_is_total<B: Backend>(backend: B) {
    let rig = Rig::new(backend);
    let b = rig.backend();
    let owner = tenant(b, "owner").await;
    let other = tenant(b, "other").await;
    let (tool, operation) = library_ledger(b, owner).await;
    let spec = AgentSpec {
        tools: vec![ToolRef::Library { tool }],
        workflows: vec![],
    };
    let agent = b.create_agent(owner, "agent", &spec).await.unwrap();
    let started = rig
        .dispatcher
        .start(owner, &request(agent, vec![case("c")], 1))
        .await
        .unwrap();
    let attempt = &started.attempts[0];
    rig.dispatcher
        .call(
            owner,
            &attempt.capability,
            &ToolCall::new("ledger", "append", json!({"id": "a"})),
        )
        .await
        .unwrap();
    let now = rig.clock.now();
    let nf = |r: Result<(), crate::StoreError>, what: &str| match r {
        Err(e) if e.is_not_found() => {}
        other => panic!("{what} with another tenant's id: expected not found, got {other:?}"),
    };

    nf(
        b.upsert_operation(other, tool, &ledger_operation())
            .await
            .map(|_| ()),
        "upsert_operation",
    );
    nf(b.tool(other, tool).await.map(|_| ()), "tool");
    match save(
        b,
        other,
        operation,
        &ledger_operation(),
        ledger_definition(),
    )
    .await
    {
        Err(SaveRevisionError::Store(e)) if e.is_not_found() => {}
        other => panic!("save_revision: {other:?}"),
    }
    nf(
        b.revision(other, operation, 1).await.map(|_| ()),
        "revision",
    );
    nf(b.agent(other, agent).await.map(|_| ()), "agent");
    match rig
        .dispatcher
        .start(other, &request(agent, vec![case("c")], 1))
        .await
    {
        Err(StartError::Store(e)) if e.is_not_found() => {}
        other => panic!("start: {other:?}"),
    }
    let foreign_sim = crate::NewSimulation {
        id: crate::SimulationId::random(),
        agent,
        mode: SimulationMode::Sandbox,
        allow_incomplete: false,
        pins: vec![],
        test_cases: vec![],
        attempts: vec![],
        created_at: now,
    };
    nf(
        b.create_simulation(other, &foreign_sim).await,
        "create_simulation",
    );
    nf(
        b.simulation_pins(other, started.id).await.map(|_| ()),
        "simulation_pins",
    );
    nf(b.state(other, attempt.id).await.map(|_| ()), "state");
    let foreign_binding = crate::AttemptBinding {
        tenant: other,
        attempt: attempt.id,
        simulation: started.id,
        variants: vec![],
    };
    let applied = b
        .apply_call(&foreign_binding, &attempt.capability.hash(), now, |_| {
            panic!("the step must not run for another tenant")
        })
        .await;
    assert!(
        matches!(applied, Err(crate::ApplyError::CapabilityRejected)),
        "{applied:?}"
    );
    let input_error = crate::ToolInputErrorRecord {
        tenant: other,
        attempt: attempt.id,
        tool: "ledger".into(),
        operation: "append".into(),
        pin: None,
        arguments: json!({}),
        code: "invalid_arguments".into(),
        message: "m".into(),
        path: None,
        violations: json!([]),
        at: now,
    };
    nf(
        b.record_tool_input_error(&input_error).await,
        "record_tool_input_error",
    );
    let harness = crate::HarnessErrorRecord {
        tenant: other,
        attempt: attempt.id,
        tool: None,
        operation: None,
        pin: None,
        arguments: None,
        code: "unknown_tool".into(),
        message: "m".into(),
        path: None,
        detail: json!({}),
        at: now,
    };
    nf(
        b.record_harness_error(&harness).await,
        "record_harness_error",
    );
    nf(b.evidence(other, attempt.id).await.map(|_| ()), "evidence");
    nf(
        b.tool_input_errors(other, attempt.id).await.map(|_| ()),
        "tool_input_errors",
    );
    nf(
        b.harness_errors(other, attempt.id).await.map(|_| ()),
        "harness_errors",
    );
    nf(
        b.resolve_capability(other, &attempt.capability.hash(), now)
            .await
            .map(|_| ()),
        "resolve_capability",
    );
    nf(
        b.renew_lease(other, attempt.id, "worker-1", now).await,
        "renew_lease",
    );
    nf(
        b.revoke_capabilities(other, attempt.id, now).await,
        "revoke_capabilities",
    );
    match b
        .finish_attempt(other, attempt.id, Verdict::Passed, now)
        .await
    {
        Err(crate::FinishError::Store(e)) if e.is_not_found() => {}
        other => panic!("finish_attempt: {other:?}"),
    }
    nf(b.attempt(other, attempt.id).await.map(|_| ()), "attempt");
    let error = rig
        .dispatcher
        .call(
            other,
            &attempt.capability,
            &ToolCall::new("ledger", "append", json!({"id": "b"})),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, DispatchError::CapabilityRejected));

    // Nothing of the owner's changed.
    let record = b.attempt(owner, attempt.id).await.unwrap();
    assert_eq!(record.outcome, None);
    assert!(!record.has_harness_error);
    assert_eq!(b.state(owner, attempt.id).await.unwrap().version, 1);
    assert!(
        b.tool_input_errors(owner, attempt.id)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        b.harness_errors(owner, attempt.id)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(b.evidence(owner, attempt.id).await.unwrap().len(), 1);
    assert!(
        b.resolve_capability(owner, &attempt.capability.hash(), now)
            .await
            .unwrap()
            .live
    );
    // The same names are free for the other tenant.
    library_ledger(b, other).await;
}

/// `delay_ms` is applied after the commit through the injected sleeper.
pub async fn delays_use_the_sleeper<B: Backend>(backend: B) {
    let rig = Rig::new(backend);
    let tenant = tenant(rig.backend(), "acme").await;
    let slow = InlineTool {
        name: "slow".into(),
        operations: vec![inline_op(
            "wait",
            json!({"type": "object"}),
            json!({"type": "object"}),
            Some(json!({
                "schema_version": 1,
                "default_variant": "success",
                "variants": {"success": {"result": {"ok": true}, "delay_ms": 1500,
                    "rules": [{"when": [{"source": "input", "path": "fast", "op": "eq", "value": true}],
                               "delay_ms": 0}]}},
                "examples": [{"variant": "success", "input": {}, "expected": {"ok": true}}]
            })),
        )],
    };
    let started = start_agent(
        &rig,
        tenant,
        AgentSpec {
            tools: vec![ToolRef::Inline(slow)],
            workflows: vec![],
        },
        1,
    )
    .await;
    let attempt = &started.attempts[0];
    let call = |input: Value| ToolCall::new("slow", "wait", input);
    rig.dispatcher
        .call(tenant, &attempt.capability, &call(json!({})))
        .await
        .unwrap();
    rig.dispatcher
        .call(tenant, &attempt.capability, &call(json!({"fast": true})))
        .await
        .unwrap();
    assert_eq!(rig.sleeper.delays(), vec![Duration::from_millis(1500)]);
    let evidence = rig.backend().evidence(tenant, attempt.id).await.unwrap();
    assert_eq!(evidence[0].delay_ms, 1500);
    assert_eq!(evidence[1].delay_ms, 0);
}

#[derive(Default)]
struct CountingExecutor(AtomicUsize);

impl ExternalExecutor for CountingExecutor {
    fn execute<'a>(
        &'a self,
        tool: &'a str,
        operation: &'a str,
        input: &'a Value,
    ) -> BoxFuture<'a, Result<Value, String>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let result = json!({"executed": format!("{tool}/{operation}"), "echo": input});
        Box::pin(async move { Ok(result) })
    }
}

/// A real-tools run executes pinned calls with the external handlers (effect
/// nodes allowed), records them as evidence, and still never executes an
/// unknown tool.
pub async fn real_tools_runs_use_the_executor<B: Backend>(backend: B) {
    let executor = Arc::new(CountingExecutor::default());
    let rig = Rig::with_executor(backend, Some(executor.clone()));
    let tenant = tenant(rig.backend(), "acme").await;
    let (tool, _) = library_ledger(rig.backend(), tenant).await;
    let spec = AgentSpec {
        tools: vec![
            ToolRef::Library { tool },
            ToolRef::Workflow {
                workflow: "w".into(),
            },
        ],
        workflows: vec![Workflow {
            name: "w".into(),
            nodes: vec![WorkflowNode {
                id: "mail".into(),
                kind: NodeKind::Effect {
                    effect: "email".into(),
                },
            }],
        }],
    };
    let agent = rig
        .backend()
        .create_agent(tenant, "agent", &spec)
        .await
        .unwrap();
    let mut req = request(agent, vec![case("c")], 1);
    req.mode = SimulationMode::RealTools;
    let started = rig
        .dispatcher
        .start(tenant, &req)
        .await
        .expect("effect nodes are fine in real-tools runs");
    let attempt = &started.attempts[0];
    let error = rig
        .dispatcher
        .call(
            tenant,
            &attempt.capability,
            &ToolCall::new("ledger", "append", json!({"id": 7})),
        )
        .await
        .unwrap_err();
    assert_eq!(
        error.code(),
        "invalid_arguments",
        "inputs are validated before real execution"
    );
    let result = rig
        .dispatcher
        .call(
            tenant,
            &attempt.capability,
            &ToolCall::new("ledger", "append", json!({"id": "r"})),
        )
        .await
        .unwrap_err();
    // The fake real tool's answer lacks `previous`: an output-schema violation.
    assert_eq!(result.code(), "output_schema_violation");
    let unknown = rig
        .dispatcher
        .call(
            tenant,
            &attempt.capability,
            &ToolCall::new("mailer", "send", json!({})),
        )
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), "unknown_tool");
    assert_eq!(
        executor.0.load(Ordering::SeqCst),
        1,
        "only the valid, known call was executed"
    );
    assert!(
        rig.backend()
            .evidence(tenant, attempt.id)
            .await
            .unwrap()
            .is_empty()
    );
}
