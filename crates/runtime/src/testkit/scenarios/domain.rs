//! Version 2's domain errors: an answer recorded as evidence with the
//! status `domain_error`, no state change, neither a tool input error nor a
//! harness error, and an attempt that still passes.

use super::super::fixtures::*;
use super::super::prelude::*;

/// A call the mock answers with a domain error returns
/// `DispatchError::Domain`, after its delay; it is evidence (result `null`,
/// the error, equal states, the next version), the state keeps every key
/// (the variant's `set_state` is not applied), no tool input or harness
/// error is recorded, and a passing verdict finishes the attempt `passed`.
pub async fn domain_errors_are_evidence<B: Backend>(backend: B) {
    let rig = Rig::new(backend);
    let tenant = tenant(rig.backend(), "acme").await;
    let definition = json!({
        "schema_version": 2,
        "default_variant": "success",
        "initial_state": {"n": 0},
        "variants": {"success": {
            "result": {"n": {"$state": "n"}},
            "set_state": {"n": {"$input": "n"}},
            "rules": [{
                "when": [{"source": "input", "path": "fail", "op": "eq", "value": true}],
                "error": {"code": "order_not_found", "message": "Order not found",
                          "data": {"asked": {"$input": "n"}}},
                "delay_ms": 7
            }]
        }},
        "examples": [
            {"variant": "success", "input": {"n": 1}, "expected": {"n": 0}},
            {"variant": "success", "input": {"n": 1, "fail": true},
             "expected_error": {"code": "order_not_found", "message": "Order not found",
                                "data": {"asked": 1}}}
        ]
    });
    let orders = inline_op(
        "get",
        json!({"type": "object"}),
        // Every result has `n`: the output schema never applies to an error.
        json!({"type": "object", "required": ["n"]}),
        Some(definition),
    );
    let started = start_agent(
        &rig,
        tenant,
        AgentSpec {
            tools: vec![ToolRef::Inline(InlineTool {
                name: "orders".into(),
                operations: vec![orders],
            })],
            workflows: vec![],
            ..Default::default()
        },
        1,
    )
    .await;
    let attempt = &started.attempts[0];
    let call = |input: Value| ToolCall::new("orders", "get", input);
    let error = rig
        .dispatcher
        .call(
            tenant,
            &attempt.capability,
            &call(json!({"n": 5, "fail": true})),
        )
        .await
        .expect_err("a domain error");
    let DispatchError::Domain(domain) = &error else {
        panic!("expected a domain error, got {error:?}");
    };
    assert_eq!(
        domain.to_json(),
        json!({"code": "order_not_found", "message": "Order not found", "data": {"asked": 5}})
    );
    assert_eq!((error.code(), error.class()), ("domain_error", None));
    let after = rig.backend().state(tenant, attempt.id).await.unwrap();
    assert_eq!((after.state, after.version), (json_map(json!({"n": 0})), 1));
    let ok = rig
        .dispatcher
        .call(tenant, &attempt.capability, &call(json!({"n": 3})))
        .await
        .expect("a result");
    assert_eq!(ok, json!({"n": 0}));

    let evidence = rig.backend().evidence(tenant, attempt.id).await.unwrap();
    assert_eq!(evidence.len(), 2);
    let first = &evidence[0];
    assert_eq!(first.error.as_ref(), Some(domain));
    assert_eq!(first.result, Value::Null);
    assert_eq!((first.rule, first.delay_ms), (Some(0), 7));
    assert_eq!(first.state_before, first.state_after);
    assert_eq!((first.version_before, first.version_after), (0, 1));
    assert_eq!(evidence[1].error, None);
    assert_eq!(evidence[1].state_after, json_map(json!({"n": 3})));
    assert!(
        rig.backend()
            .tool_input_errors(tenant, attempt.id)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        rig.backend()
            .harness_errors(tenant, attempt.id)
            .await
            .unwrap()
            .is_empty()
    );
    let finished = rig
        .dispatcher
        .finish_attempt(tenant, attempt.id, Verdict::Passed)
        .await
        .unwrap();
    assert_eq!(finished, AttemptOutcome::Passed);
}

fn json_map(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
