//! What a call returns and records: the exact result, the delay, real tools.

use super::super::fakes::*;
use super::super::fixtures::*;
use super::super::prelude::*;

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
            ..Default::default()
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
    assert_eq!(first.executor, Executor::Mock);
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
            ..Default::default()
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
        workflows: vec![workflow(json!({"name": "w", "nodes": [
            {"type": "effect", "id": "mail", "effect": "email"}
        ]}))],
        ..Default::default()
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
        executor.count(),
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
