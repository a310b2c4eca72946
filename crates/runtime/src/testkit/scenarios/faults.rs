//! Harness faults never pass; tool input errors are recoverable.

use super::super::fixtures::*;
use super::super::prelude::*;

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
                ..Default::default()
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
                attempts: None,
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
            matches!(&error, DispatchError::Harness(f) if f.code.as_str() == *code),
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
        assert_eq!(recorded[0].code.as_str(), *code);
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
            ..Default::default()
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
    assert_eq!(fault.code, ToolInputCode::InvalidArguments);
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
    assert_eq!(stored[0].code, ToolInputCode::InvalidArguments);
    assert_eq!(stored[0].arguments, json!({"memberId": "M-1"}));
    assert!(matches!(stored[0].pin, Some(PinRef::Inline { .. })));
    assert_eq!(stored[1].code, ToolInputCode::InvalidNumber);
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
