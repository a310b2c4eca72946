//! Finishing an attempt: it counts every call begun whichever dispatcher
//! (process) answered it, it honours the lease, and of concurrent finishes
//! exactly one takes effect.

use super::super::fakes::*;
use super::super::fixtures::*;
use super::super::prelude::*;

fn append(id: Value) -> ToolCall {
    ToolCall::new("ledger", "append", json!({ "id": id }))
}

fn unknown_tool() -> ToolCall {
    ToolCall::new("payments", "charge", json!({"amount": 5}))
}

/// A second dispatcher over the same storage: another process, with nothing
/// of the first one's memory.
fn other_process<B: Backend + Clone>(rig: &Rig<B>) -> Dispatcher<B> {
    Dispatcher::new(rig.backend().clone()).with_clock(rig.clock.clone())
}

/// A call whose fault cannot be written (no harness error can be stored)
/// leaves its begin mark in storage, so a finish by *another* dispatcher —
/// which never saw the call — still records `storage_failed` and ends the
/// attempt `harness_error`. A call whose begin mark cannot be written is
/// not processed, and the dispatcher that refused it counts it for its own
/// finish. Attempts whose calls are all recorded still pass elsewhere.
pub async fn lost_faults_fail_every_finisher<B: Backend + Clone>(backend: B) {
    let rig = Rig::new(Faulty::new(backend));
    let (tenant, started) = ledger_simulation(&rig, "acme", 3).await;
    let faulty = rig.backend();
    let p2 = other_process(&rig);

    // 0: an unknown tool while no harness error can be written.
    let lost = &started.attempts[0];
    faulty.fail(Fault::RecordHarnessError, u32::MAX);
    let error = rig
        .dispatcher
        .call(tenant, &lost.capability, &unknown_tool())
        .await
        .unwrap_err();
    assert!(matches!(error, DispatchError::Store(_)), "{error:?}");
    faulty.heal();
    assert!(
        faulty
            .harness_errors(tenant, lost.id)
            .await
            .unwrap()
            .is_empty(),
        "nothing of the fault was written"
    );
    let outcome = p2
        .finish_attempt(tenant, lost.id, Verdict::Passed)
        .await
        .unwrap();
    assert_eq!(
        outcome,
        AttemptOutcome::HarnessError,
        "the other process sees the lost call"
    );
    let recorded = faulty.harness_errors(tenant, lost.id).await.unwrap();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].code, HarnessCode::StorageFailed);
    assert_eq!(recorded[0].detail["begun"], json!(1));
    assert_eq!(recorded[0].detail["recorded"], json!(0));

    // 1: the begin mark itself cannot be written, nor anything else: the
    // call is refused unprocessed, and its dispatcher's finish fails closed.
    let unmarked = &started.attempts[1];
    faulty.fail(Fault::BeginCall, 1);
    faulty.fail(Fault::RecordHarnessError, u32::MAX);
    let error = rig
        .dispatcher
        .call(tenant, &unmarked.capability, &append(json!("a")))
        .await
        .unwrap_err();
    assert!(matches!(error, DispatchError::Store(_)), "{error:?}");
    faulty.heal();
    assert_eq!(
        faulty.state(tenant, unmarked.id).await.unwrap().version,
        0,
        "an unmarked call is not processed"
    );
    assert_eq!(
        rig.dispatcher
            .finish_attempt(tenant, unmarked.id, Verdict::Passed)
            .await
            .unwrap(),
        AttemptOutcome::HarnessError
    );

    // 2: every call recorded: the other process's finish passes.
    let clean = &started.attempts[2];
    for id in ["a", "b"] {
        rig.dispatcher
            .call(tenant, &clean.capability, &append(json!(id)))
            .await
            .unwrap();
    }
    assert_eq!(
        p2.finish_attempt(tenant, clean.id, Verdict::Passed)
            .await
            .unwrap(),
        AttemptOutcome::Passed
    );
}

/// A finish after the attempt's lease has ended, or after its capabilities
/// were revoked, records `lease_expired` and ends the attempt
/// `harness_error`, whatever verdict it is handed; a finish within the lease
/// takes the verdict.
pub async fn finish_honours_the_lease<B: Backend>(backend: B) {
    let rig = Rig::new(backend);
    let (tenant, started) = ledger_simulation(&rig, "acme", 3).await;
    let [late, revoked, timely] = &started.attempts[..] else {
        panic!("three attempts");
    };
    for attempt in [late, revoked, timely] {
        rig.dispatcher
            .call(tenant, &attempt.capability, &append(json!("a")))
            .await
            .unwrap();
    }
    rig.backend()
        .revoke_capabilities(tenant, revoked.id, rig.clock.now())
        .await
        .unwrap();
    assert_eq!(
        rig.dispatcher
            .finish_attempt(tenant, revoked.id, Verdict::Passed)
            .await
            .unwrap(),
        AttemptOutcome::HarnessError,
        "finished with a revoked capability"
    );
    assert_eq!(
        rig.dispatcher
            .finish_attempt(tenant, timely.id, Verdict::Passed)
            .await
            .unwrap(),
        AttemptOutcome::Passed
    );
    // The lease of `request` is 600 s.
    rig.clock.advance(Duration::from_secs(601));
    assert_eq!(
        rig.dispatcher
            .finish_attempt(tenant, late.id, Verdict::Passed)
            .await
            .unwrap(),
        AttemptOutcome::HarnessError,
        "finished after the lease"
    );
    for attempt in [late, revoked] {
        let codes: Vec<HarnessCode> = rig
            .backend()
            .harness_errors(tenant, attempt.id)
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.code)
            .collect();
        assert_eq!(codes, [HarnessCode::LeaseExpired]);
        let stored = rig.backend().attempt(tenant, attempt.id).await.unwrap();
        assert_eq!(stored.outcome, Some(AttemptOutcome::HarnessError));
    }
}

/// Of concurrent finishes of one attempt exactly one takes effect; every
/// other is told the attempt is already finished.
pub async fn concurrent_finishes_have_one_winner<B: Backend + Clone + 'static>(backend: B) {
    let rig = Rig::new(backend);
    let (tenant, started) = ledger_simulation(&rig, "acme", 1).await;
    let attempt = started.attempts[0].id;
    let mut finishes = tokio::task::JoinSet::new();
    for i in 0..8 {
        // Half through this dispatcher, half through "another process".
        let dispatcher = if i % 2 == 0 {
            rig.dispatcher.clone()
        } else {
            Arc::new(other_process(&rig))
        };
        finishes.spawn(async move {
            dispatcher
                .finish_attempt(tenant, attempt, Verdict::Passed)
                .await
        });
    }
    let (mut won, mut lost) = (0, 0);
    while let Some(joined) = finishes.join_next().await {
        match joined.expect("a finish does not panic") {
            Ok(outcome) => {
                assert_eq!(outcome, AttemptOutcome::Passed);
                won += 1;
            }
            Err(FinishError::AlreadyFinished) => lost += 1,
            Err(other) => panic!("a losing finish failed otherwise: {other:?}"),
        }
    }
    assert_eq!((won, lost), (1, 7));
}
