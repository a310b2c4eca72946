//! Storage failing in the middle of a call never lets the attempt pass.

use super::super::fakes::*;
use super::super::fixtures::*;
use super::super::prelude::*;

fn append(id: Value) -> ToolCall {
    ToolCall::new("ledger", "append", json!({ "id": id }))
}

/// The codes of an attempt's recorded harness errors.
async fn recorded<B: Backend>(
    rig: &Rig<Faulty<B>>,
    tenant: TenantId,
    attempt: AttemptId,
) -> Vec<HarnessCode> {
    rig.backend()
        .harness_errors(tenant, attempt)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.code)
        .collect()
}

/// With chosen storage operations failing (a fault-injecting wrapper around
/// the backend): the locked step, the write of a tool input error or a
/// harness error, the pins, the capability. Each failure is recorded as
/// `storage_failed` when storage allows; when nothing could be written, the
/// finish finds the attempt's records short of the calls the dispatcher
/// answered and records `storage_failed` itself; while the calls cannot be
/// accounted for, the finish fails rather than pass. Attempts without a
/// fault still pass.
pub async fn storage_faults_never_pass<B: Backend>(backend: B) {
    let rig = Rig::new(Faulty::new(backend));
    let (tenant, started) = ledger_simulation(&rig, "acme", 10).await;
    let faulty = rig.backend();
    let attempt = |i: usize| &started.attempts[i];
    let finish = |i: usize| {
        let rig = &rig;
        let id = attempt(i).id;
        async move {
            rig.dispatcher
                .finish_attempt(tenant, id, Verdict::Passed)
                .await
        }
    };

    // 0: the locked step fails; the storage_failed record is written.
    faulty.fail(Fault::ApplyCall, 1);
    let error = rig
        .dispatcher
        .call(tenant, &attempt(0).capability, &append(json!("a")))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, DispatchError::Harness(f) if f.code == HarnessCode::StorageFailed),
        "{error:?}"
    );
    assert_eq!(finish(0).await.unwrap(), AttemptOutcome::HarnessError);
    assert_eq!(
        recorded(&rig, tenant, attempt(0).id).await,
        [HarnessCode::StorageFailed]
    );

    // 1: the locked step fails and no harness error can be written either:
    // the finish sees one call answered and none recorded.
    faulty.fail(Fault::ApplyCall, 1);
    faulty.fail(Fault::RecordHarnessError, u32::MAX);
    let error = rig
        .dispatcher
        .call(tenant, &attempt(1).capability, &append(json!("a")))
        .await
        .unwrap_err();
    assert!(matches!(error, DispatchError::Store(_)), "{error:?}");
    faulty.heal();
    assert_eq!(finish(1).await.unwrap(), AttemptOutcome::HarnessError);
    assert_eq!(
        recorded(&rig, tenant, attempt(1).id).await,
        [HarnessCode::StorageFailed]
    );

    // 2: an unknown tool whose harness error cannot be written.
    faulty.fail(Fault::RecordHarnessError, u32::MAX);
    let error = rig
        .dispatcher
        .call(
            tenant,
            &attempt(2).capability,
            &ToolCall::new("payments", "charge", json!({})),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, DispatchError::Store(_)), "{error:?}");
    faulty.heal();
    assert_eq!(finish(2).await.unwrap(), AttemptOutcome::HarnessError);

    // 3: a tool input error that cannot be written becomes storage_failed.
    faulty.fail(Fault::RecordToolInputError, 1);
    let error = rig
        .dispatcher
        .call(tenant, &attempt(3).capability, &append(json!(7)))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, DispatchError::Harness(f) if f.code == HarnessCode::StorageFailed),
        "{error:?}"
    );
    assert_eq!(finish(3).await.unwrap(), AttemptOutcome::HarnessError);

    // 4: a good call, then a bad one whose records all fail.
    rig.dispatcher
        .call(tenant, &attempt(4).capability, &append(json!("ok")))
        .await
        .unwrap();
    faulty.fail(Fault::RecordToolInputError, 1);
    faulty.fail(Fault::RecordHarnessError, u32::MAX);
    rig.dispatcher
        .call(tenant, &attempt(4).capability, &append(json!(7)))
        .await
        .unwrap_err();
    faulty.heal();
    assert_eq!(finish(4).await.unwrap(), AttemptOutcome::HarnessError);

    // 5: a capability storage cannot resolve (no cached binding yet); the
    // finish cannot account for the call while storage still fails, and
    // finds it once storage is back.
    faulty.fail(Fault::ResolveCapability, 1);
    let error = rig
        .dispatcher
        .call(tenant, &attempt(5).capability, &append(json!("a")))
        .await
        .unwrap_err();
    assert!(matches!(error, DispatchError::Store(_)), "{error:?}");
    faulty.fail(Fault::ResolveCapability, u32::MAX);
    assert!(
        finish(5).await.is_err(),
        "no finish while the call cannot be accounted for"
    );
    faulty.heal();
    assert_eq!(finish(5).await.unwrap(), AttemptOutcome::HarnessError);

    // 9: likewise for a workflow's effect node: its capability cannot be
    // resolved, nothing of it is recorded, and the finish never passes.
    faulty.fail(Fault::ResolveCapability, 1);
    let node = ToolCall::new("notify", "post", json!({"url": "http://127.0.0.1:9/"}));
    let definition = DefinitionHash::of(&json!({"effect": "http_request"})).expect("hashable");
    let error = rig
        .dispatcher
        .effect(
            tenant,
            &attempt(9).capability,
            EffectKind::HttpRequest,
            &node,
            definition,
        )
        .await
        .unwrap_err();
    assert!(matches!(error, DispatchError::Store(_)), "{error:?}");
    faulty.fail(Fault::ResolveCapability, u32::MAX);
    assert!(
        finish(9).await.is_err(),
        "no finish while the effect cannot be accounted for"
    );
    faulty.heal();
    assert_eq!(finish(9).await.unwrap(), AttemptOutcome::HarnessError);

    // 6: the pins cannot be read (the dispatcher's cache dropped first).
    rig.dispatcher.forget_simulation(started.id);
    faulty.fail(Fault::SimulationPins, 1);
    let error = rig
        .dispatcher
        .call(tenant, &attempt(6).capability, &append(json!("a")))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, DispatchError::Harness(f) if f.code == HarnessCode::StorageFailed),
        "{error:?}"
    );
    assert_eq!(finish(6).await.unwrap(), AttemptOutcome::HarnessError);

    // 7 and 8: without faults, a good call passes, and so does a recorded
    // tool input error followed by a good call.
    rig.dispatcher
        .call(tenant, &attempt(7).capability, &append(json!("a")))
        .await
        .unwrap();
    assert_eq!(finish(7).await.unwrap(), AttemptOutcome::Passed);
    rig.dispatcher
        .call(tenant, &attempt(8).capability, &append(json!(7)))
        .await
        .unwrap_err();
    rig.dispatcher
        .call(tenant, &attempt(8).capability, &append(json!("b")))
        .await
        .unwrap();
    assert_eq!(finish(8).await.unwrap(), AttemptOutcome::Passed);
}
