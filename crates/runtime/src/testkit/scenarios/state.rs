//! Per-attempt fixture state: linearizable, and isolated between attempts.

use super::super::fixtures::*;
use super::super::prelude::*;

/// 64 concurrent tasks × 50 calls on one attempt: the evidence's state
/// versions run 1…3200 with no gap and no repeat, and each call's pre-call
/// state is the previous call's post-call state.
pub async fn linearizable_state<B: Backend + 'static>(backend: B) {
    let (tasks, calls) = (64, 50);
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

/// Shared fixtures are one base for every attempt: a nested write by one
/// attempt changes its own state only, reads see the merged state, and the
/// base the next attempt starts from is untouched.
pub async fn shared_fixtures_are_one_base<B: Backend>(backend: B) {
    let rig = Rig::new(backend);
    let tenant = tenant(rig.backend(), "acme").await;
    let open = json!({"type": "object"});
    let id = json!({"$input": "id"});
    let shop = InlineTool {
        name: "shop".into(),
        operations: vec![
            inline_op(
                "get",
                open.clone(),
                open.clone(),
                Some(json!({
                    "schema_version": 2, "default_variant": "ok",
                    "variants": {"ok": {"result": {"order": {"$state": ["orders", id]}}}},
                    "examples": [{"variant": "ok", "input": {"id": "a"},
                                  "state": {"orders": {"a": {"s": 1}}}, "expected": {"order": {"s": 1}}}]
                })),
            ),
            inline_op(
                "cancel",
                open.clone(),
                open.clone(),
                Some(json!({
                    "schema_version": 2, "default_variant": "ok",
                    "variants": {"ok": {"result": {"ok": true},
                        "set_state": [{"path": ["orders", id, "status"], "value": "cancelled"}]}},
                    "examples": [{"variant": "ok", "input": {"id": "a"},
                                  "state": {"orders": {"a": {}}}, "expected": {"ok": true}}]
                })),
            ),
        ],
    };
    let agent = rig
        .backend()
        .create_agent(
            tenant,
            "agent",
            &AgentSpec {
                tools: vec![ToolRef::Inline(shop)],
                workflows: vec![],
                ..Default::default()
            },
        )
        .await
        .expect("create the agent");
    let orders: Map<String, Value> = (0..100)
        .map(|i| (format!("#W{i}"), json!({"status": "pending", "total": i})))
        .collect();
    let mut request = request(agent, vec![case("case")], 2);
    request.fixtures = vec![crate::FixtureInput {
        label: "/fixtures/0".into(),
        members: [("orders".to_owned(), Value::Object(orders))]
            .into_iter()
            .collect(),
    }];
    let started = rig
        .dispatcher
        .start(tenant, &request)
        .await
        .expect("the simulation starts");
    let (a, b) = (&started.attempts[0], &started.attempts[1]);
    let call = |op: &str, id: &str| ToolCall::new("shop", op, json!({ "id": id }));
    rig.dispatcher
        .call(tenant, &a.capability, &call("cancel", "#W7"))
        .await
        .expect("a cancels");
    let seen_by_a = rig
        .dispatcher
        .call(tenant, &a.capability, &call("get", "#W7"))
        .await
        .expect("a reads");
    assert_eq!(
        seen_by_a,
        json!({"order": {"status": "cancelled", "total": 7}})
    );
    let seen_by_b = rig
        .dispatcher
        .call(tenant, &b.capability, &call("get", "#W7"))
        .await
        .expect("b reads");
    assert_eq!(
        seen_by_b,
        json!({"order": {"status": "pending", "total": 7}}),
        "b never sees a's write"
    );
    let state_a = rig.backend().state(tenant, a.id).await.expect("a's state");
    assert_eq!(state_a.state["orders"]["#W7"]["status"], json!("cancelled"));
    assert_eq!(state_a.state["orders"]["#W8"]["status"], json!("pending"));
    assert_eq!(state_a.state["orders"].as_object().map(Map::len), Some(100));
    let state_b = rig.backend().state(tenant, b.id).await.expect("b's state");
    assert_eq!(state_b.state["orders"]["#W7"]["status"], json!("pending"));
    let evidence = rig
        .backend()
        .evidence(tenant, a.id)
        .await
        .expect("evidence");
    assert_eq!(
        evidence[0].state_after["orders"]["#W7"]["status"],
        json!("cancelled")
    );
}
