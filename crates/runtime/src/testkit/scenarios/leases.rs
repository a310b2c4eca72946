//! After the lease: every call refused and recorded as `lease_expired`
//! before anything else happens — cached bindings included — and nothing
//! real runs.

use super::super::fakes::*;
use super::super::fixtures::*;
use super::super::prelude::*;

fn append(id: Value) -> ToolCall {
    ToolCall::new("ledger", "append", json!({ "id": id }))
}

/// Asserts that `call` is refused as a recorded `lease_expired`.
async fn refused_as_expired<B: Backend>(
    rig: &Rig<B>,
    tenant: TenantId,
    capability: &Capability,
    call: &ToolCall,
    what: &str,
) {
    let error = rig
        .dispatcher
        .call(tenant, capability, call)
        .await
        .expect_err(what);
    assert!(
        matches!(&error, DispatchError::Harness(f) if f.code == HarnessCode::LeaseExpired),
        "{what}: expected lease_expired, got {error:?}"
    );
}

/// A call succeeds, caching the capability's binding; then the lease ends
/// (expiry, revocation): every later call — good arguments, bad arguments,
/// an unknown tool — is `lease_expired`, recorded, changes nothing, records
/// no tool input error, and the attempt can no longer pass. Another
/// tenant presenting a cached capability is refused without a trace on the
/// attempt, which still passes.
pub async fn expired_leases_refuse_every_call<B: Backend>(backend: B) {
    let rig = Rig::new(backend);
    let (tenant, started) = ledger_simulation(&rig, "acme", 3).await;
    let (expired, revoked, foreign) = (
        &started.attempts[0],
        &started.attempts[1],
        &started.attempts[2],
    );
    for attempt in &started.attempts {
        rig.dispatcher
            .call(tenant, &attempt.capability, &append(json!("first")))
            .await
            .expect("the first call succeeds and caches the binding");
    }

    // A foreign tenant with a cached capability.
    let other = rig.backend().create_tenant("other").await.unwrap();
    let error = rig
        .dispatcher
        .call(other, &foreign.capability, &append(json!("x")))
        .await
        .unwrap_err();
    assert!(
        matches!(error, DispatchError::CapabilityRejected),
        "{error:?}"
    );
    assert!(
        rig.backend()
            .harness_errors(tenant, foreign.id)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        rig.dispatcher
            .finish_attempt(tenant, foreign.id, Verdict::Passed)
            .await
            .unwrap(),
        AttemptOutcome::Passed,
        "a foreign tenant's attempt leaves no trace"
    );

    // A revoked capability with a cached binding.
    rig.backend()
        .revoke_capabilities(tenant, revoked.id, rig.clock.now())
        .await
        .unwrap();
    refused_as_expired(
        &rig,
        tenant,
        &revoked.capability,
        &append(json!(7)),
        "bad arguments after revocation",
    )
    .await;

    // An expired lease with a cached binding.
    rig.clock.advance(Duration::from_secs(601));
    let calls = [
        (append(json!(7)), "bad arguments after expiry"),
        (append(json!("good")), "good arguments after expiry"),
        (
            ToolCall::new("payments", "charge", json!({})),
            "an unknown tool after expiry",
        ),
    ];
    for (call, what) in &calls {
        refused_as_expired(&rig, tenant, &expired.capability, call, what).await;
    }

    for (attempt, expected) in [(expired, 3), (revoked, 1)] {
        let b = rig.backend();
        let recorded = b.harness_errors(tenant, attempt.id).await.unwrap();
        assert_eq!(recorded.len(), expected);
        assert!(
            recorded.iter().all(|r| r.code == HarnessCode::LeaseExpired),
            "{recorded:?}"
        );
        assert!(
            b.tool_input_errors(tenant, attempt.id)
                .await
                .unwrap()
                .is_empty(),
            "nothing is validated once the lease is over"
        );
        assert_eq!(b.state(tenant, attempt.id).await.unwrap().version, 1);
        assert_eq!(
            rig.dispatcher
                .finish_attempt(tenant, attempt.id, Verdict::Passed)
                .await
                .unwrap(),
            AttemptOutcome::HarnessError
        );
    }
}

/// In a real-tools run the lease (and the input) is checked before anything
/// real runs: after the lease ends nothing is executed, whatever the
/// arguments; an external failure is recorded (`external_failed`) and the
/// attempt cannot pass.
pub async fn nothing_real_runs_after_the_lease<B: Backend>(backend: B) {
    let executor = Arc::new(CountingExecutor::ledger());
    let rig = Rig::with_executor(backend, Some(executor.clone()));
    let tenant = tenant(rig.backend(), "acme").await;
    let (tool, _) = library_ledger(rig.backend(), tenant).await;
    let spec = AgentSpec {
        tools: vec![ToolRef::Library { tool }],
        workflows: vec![],
        ..Default::default()
    };
    let agent = rig
        .backend()
        .create_agent(tenant, "agent", &spec)
        .await
        .unwrap();
    let mut req = request(agent, vec![case("c")], 3);
    req.mode = SimulationMode::RealTools;
    let started = rig.dispatcher.start(tenant, &req).await.unwrap();
    let (expired, failing, clean) = (
        &started.attempts[0],
        &started.attempts[1],
        &started.attempts[2],
    );

    let answer = rig
        .dispatcher
        .call(tenant, &clean.capability, &append(json!("c1")))
        .await
        .expect("a real call in a live lease");
    assert_eq!(answer, json!({"previous": "real", "id": "c1"}));
    assert_eq!(
        rig.dispatcher
            .finish_attempt(tenant, clean.id, Verdict::Passed)
            .await
            .unwrap(),
        AttemptOutcome::Passed,
        "a clean real-tools attempt passes"
    );

    rig.dispatcher
        .call(tenant, &expired.capability, &append(json!("e1")))
        .await
        .expect("a real call in a live lease");
    assert_eq!(executor.count(), 2);

    executor.set_failing(true);
    let error = rig
        .dispatcher
        .call(tenant, &failing.capability, &append(json!("f1")))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, DispatchError::Harness(f) if f.code == HarnessCode::ExternalFailed),
        "{error:?}"
    );
    assert_eq!(executor.count(), 3);
    let recorded = rig
        .backend()
        .harness_errors(tenant, failing.id)
        .await
        .unwrap();
    assert_eq!(recorded.len(), 1, "the external failure is recorded");
    assert!(recorded[0].message.contains("503"), "{recorded:?}");
    assert_eq!(
        rig.dispatcher
            .finish_attempt(tenant, failing.id, Verdict::Passed)
            .await
            .unwrap(),
        AttemptOutcome::HarnessError
    );
    executor.set_failing(false);

    rig.clock.advance(Duration::from_secs(601));
    for (call, what) in [
        (append(json!("e2")), "good arguments after expiry"),
        (append(json!(7)), "bad arguments after expiry"),
    ] {
        refused_as_expired(&rig, tenant, &expired.capability, &call, what).await;
    }
    assert_eq!(executor.count(), 3, "nothing real ran after the lease");
    assert_eq!(
        rig.dispatcher
            .finish_attempt(tenant, expired.id, Verdict::Passed)
            .await
            .unwrap(),
        AttemptOutcome::HarnessError
    );
}
