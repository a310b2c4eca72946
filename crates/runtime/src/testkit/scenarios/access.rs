//! Who may call and read: capabilities follow the lease; tenancy is total.

use super::super::fixtures::*;
use super::super::prelude::*;

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
                ..Default::default()
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
    assert_eq!(recorded[0].code, HarnessCode::LeaseExpired);
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

/// A tenant with a row in every table: the ledger tool, its operation and
/// revision, an agent, a started simulation (pins, test case, attempt,
/// capability, state) and, on its attempt, one evidence row, one tool input
/// error and one harness error.
async fn seeded_tenant<B: Backend>(
    rig: &Rig<B>,
    name: &str,
) -> (TenantId, ToolId, OperationId, AgentId, StartedSimulation) {
    let b = rig.backend();
    let tenant = tenant(b, name).await;
    let (tool, operation) = library_ledger(b, tenant).await;
    let spec = AgentSpec {
        tools: vec![ToolRef::Library { tool }],
        workflows: vec![],
        ..Default::default()
    };
    let agent = b.create_agent(tenant, "agent", &spec).await.unwrap();
    let started = rig
        .dispatcher
        .start(tenant, &request(agent, vec![case("c")], 1))
        .await
        .unwrap();
    let capability = &started.attempts[0].capability;
    let call = |input: Value| ToolCall::new("ledger", "append", input);
    rig.dispatcher
        .call(tenant, capability, &call(json!({"id": name})))
        .await
        .unwrap();
    rig.dispatcher
        .call(tenant, capability, &call(json!({"id": 7})))
        .await
        .unwrap_err();
    rig.dispatcher
        .call(
            tenant,
            capability,
            &ToolCall::new("payments", "charge", json!({})),
        )
        .await
        .unwrap_err();
    (tenant, tool, operation, agent, started)
}

/// Every read and write of every storage trait, given a second tenant's
/// credentials and the first tenant's ids, is "not found", and changes
/// nothing. Both tenants have rows in every table, so a read that lost
/// its tenant filter finds the owner's rows, and one that lost its id
/// filter finds the other tenant's own: either way the test fails.
pub async fn tenancy_is_total<B: Backend>(backend: B) {
    let rig = Rig::new(backend);
    let b = rig.backend();
    let (owner, tool, operation, agent, started) = seeded_tenant(&rig, "owner").await;
    let (other, ..) = seeded_tenant(&rig, "other").await;
    let attempt = &started.attempts[0];
    let now = rig.clock.now();
    let nf = |r: Result<(), StoreError>, what: &str| match r {
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
    let foreign_sim = NewSimulation {
        id: SimulationId::random(),
        agent,
        mode: SimulationMode::Sandbox,
        allow_incomplete: false,
        pins: vec![],
        test_cases: vec![],
        attempts: vec![],
        initial_state: Map::new(),
        fixtures_hash: None,
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
    let foreign_binding = AttemptBinding {
        tenant: other,
        attempt: attempt.id,
        simulation: started.id,
        variants: vec![],
    };
    let applied = b
        .apply_call(
            &foreign_binding,
            &attempt.capability.hash(),
            now,
            false,
            |_| panic!("the step must not run for another tenant"),
        )
        .await;
    assert!(
        matches!(applied, Err(ApplyError::CapabilityRejected)),
        "{applied:?}"
    );
    let input_error = ToolInputErrorRecord {
        tenant: other,
        attempt: attempt.id,
        tool: "ledger".into(),
        operation: "append".into(),
        pin: None,
        arguments: json!({}),
        code: ToolInputCode::InvalidArguments,
        message: "m".into(),
        path: None,
        violations: json!([]),
        at: now,
    };
    nf(
        b.record_tool_input_error(&input_error).await,
        "record_tool_input_error",
    );
    let harness = HarnessErrorRecord::new(
        other,
        attempt.id,
        None,
        &HarnessFault {
            code: HarnessCode::UnknownTool,
            message: "m".into(),
            path: None,
        },
        json!({}),
        now,
    );
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
    nf(b.begin_call(other, attempt.id, now).await, "begin_call");
    match b
        .finish_attempt(other, attempt.id, Verdict::Passed, now, 0)
        .await
    {
        Err(FinishError::Store(e)) if e.is_not_found() => {}
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
    assert!(record.has_harness_error, "the seeded harness error");
    assert_eq!(b.state(owner, attempt.id).await.unwrap().version, 1);
    assert_eq!(
        b.tool_input_errors(owner, attempt.id).await.unwrap().len(),
        1
    );
    assert_eq!(b.harness_errors(owner, attempt.id).await.unwrap().len(), 1);
    assert_eq!(b.evidence(owner, attempt.id).await.unwrap().len(), 1);
    assert!(
        b.resolve_capability(owner, &attempt.capability.hash(), now)
            .await
            .unwrap()
            .live
    );
}
