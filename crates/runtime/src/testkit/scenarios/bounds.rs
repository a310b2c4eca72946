//! What one start may create is bounded.

use super::super::fixtures::*;
use super::super::prelude::*;

/// An agent whose inline operations each start with one of `blobs` in the
/// state (a definition is at most 100 KiB; their union can be larger).
async fn agent_with_state<B: Backend>(rig: &Rig<B>, tenant: TenantId, blobs: &[&str]) -> AgentId {
    let open = json!({"type": "object"});
    let operations = blobs
        .iter()
        .enumerate()
        .map(|(i, blob)| {
            inline_op(
                &format!("read{i}"),
                open.clone(),
                open.clone(),
                Some(definition(
                    json!({ format!("blob{i}"): blob }),
                    json!({"result": {}}),
                    json!({}),
                    json!({}),
                )),
            )
        })
        .collect();
    let spec = AgentSpec {
        tools: vec![ToolRef::Inline(InlineTool {
            name: "store".into(),
            operations,
        })],
        workflows: vec![],
        ..Default::default()
    };
    rig.backend()
        .create_agent(tenant, "agent", &spec)
        .await
        .expect("create the agent")
}

fn too_large(result: Result<StartedSimulation, StartError>) -> (StartLimit, u64, u64) {
    match result {
        Err(StartError::TooLarge {
            limit,
            maximum,
            actual,
        }) => (limit, maximum, actual),
        other => panic!("expected start_too_large, got {other:?}"),
    }
}

/// More attempts than one start may create, too large an initial state, or
/// too many bytes of it over all attempts: `start_too_large`, naming the
/// limit. The largest start allowed creates every attempt, each with the
/// initial state, and a call changes only its own attempt's state.
pub async fn starts_are_bounded<B: Backend>(backend: B) {
    let rig = Rig::new(backend);
    let tenant = tenant(rig.backend(), "acme").await;
    let per_case = u32::try_from(StartLimit::Attempts.maximum() / 2).unwrap();
    let small = agent_with_state(&rig, tenant, &["start"]).await;
    let cases = vec![case("a"), case("b")];
    let (limit, maximum, actual) = too_large(
        rig.dispatcher
            .start(tenant, &request(small, cases.clone(), per_case + 1))
            .await,
    );
    assert_eq!(limit, StartLimit::Attempts);
    assert_eq!(
        (maximum, actual),
        (
            StartLimit::Attempts.maximum(),
            StartLimit::Attempts.maximum() + 2
        )
    );

    let third =
        "x".repeat(usize::try_from(StartLimit::InitialStateBytes.maximum() / 3).unwrap() + 1);
    let huge = agent_with_state(&rig, tenant, &[&third, &third, &third]).await;
    let (limit, ..) = too_large(
        rig.dispatcher
            .start(tenant, &request(huge, vec![case("a")], 1))
            .await,
    );
    assert_eq!(limit, StartLimit::InitialStateBytes);

    let each =
        usize::try_from(StartLimit::StartStateBytes.maximum() / StartLimit::Attempts.maximum())
            .unwrap();
    let wide = agent_with_state(&rig, tenant, &[&"x".repeat(each)]).await;
    let (limit, maximum, _) = too_large(
        rig.dispatcher
            .start(tenant, &request(wide, cases.clone(), per_case))
            .await,
    );
    assert_eq!(
        (limit, maximum),
        (
            StartLimit::StartStateBytes,
            StartLimit::StartStateBytes.maximum()
        )
    );

    let started = rig
        .dispatcher
        .start(tenant, &request(small, cases, per_case))
        .await
        .expect("the largest start allowed");
    assert_eq!(
        u64::try_from(started.attempts.len()).unwrap(),
        StartLimit::Attempts.maximum()
    );
    let (first, last) = (&started.attempts[0], started.attempts.last().unwrap());
    for attempt in [first, last] {
        let snapshot = rig.backend().state(tenant, attempt.id).await.unwrap();
        assert_eq!(snapshot.version, 0);
        assert_eq!(snapshot.state.get("blob0"), Some(&json!("start")));
    }
    rig.dispatcher
        .call(
            tenant,
            &last.capability,
            &ToolCall::new("store", "read0", json!({})),
        )
        .await
        .expect("the last attempt's capability works");
}
