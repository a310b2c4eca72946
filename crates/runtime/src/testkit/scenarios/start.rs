//! Starting a simulation: every refusal, and incomplete starts that fail closed.

use super::super::fixtures::*;
use super::super::prelude::*;

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
    assert_eq!(view.status(), TestingStatus::Stale);
    b.upsert_operation(tenant, crm, &op("missing", Some(json!({"type": "object"}))))
        .await
        .unwrap();
    let unmockable = b
        .upsert_operation(tenant, crm, &op("unmockable", None))
        .await
        .unwrap();
    assert_eq!(unmockable.status(), TestingStatus::NeedsOutputSchema);
    let listing = b.tool(tenant, crm).await.unwrap();
    let statuses: Vec<_> = listing
        .operations
        .iter()
        .map(|o| (o.operation.name.as_str(), o.status()))
        .collect();
    assert_eq!(
        statuses,
        vec![
            ("current", TestingStatus::Current),
            ("missing", TestingStatus::Missing),
            ("stale", TestingStatus::Stale),
            ("unmockable", TestingStatus::NeedsOutputSchema),
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
    // The workflows are the documented format the engine runs: `inner` calls
    // the tools by name (so they are the agent's tools) and calls `outer`
    // back, a cycle.
    let spec = AgentSpec {
        tools: vec![
            ToolRef::Library { tool: crm },
            ToolRef::Workflow {
                workflow: "outer".into(),
            },
            ToolRef::Inline(conflicting),
            ToolRef::Library { tool: ledger },
        ],
        workflows: vec![
            workflow(json!({"name": "outer", "nodes": [
                {"type": "branch", "id": "route",
                 "when": [{"source": "input", "path": "urgent", "op": "eq", "value": true}],
                 "then": "notify", "else": "inner_call"},
                {"type": "effect", "id": "notify", "effect": "email", "next": "inner_call"},
                {"type": "tool", "id": "inner_call", "workflow": "inner",
                 "arguments": {"q": {"$input": "q"}}, "next": "done"},
                {"type": "return", "id": "done", "value": {"$node": "inner_call"}}
            ]})),
            workflow(json!({"name": "inner", "nodes": [
                {"type": "tool", "id": "locate", "tool": "geo", "operation": "locate",
                 "next": "post", "catch": "post"},
                {"type": "effect", "id": "post", "effect": "http_request", "next": "log"},
                {"type": "tool", "id": "log", "tool": "ledger", "operation": "append",
                 "next": "again"},
                {"type": "tool", "id": "again", "workflow": "outer"}
            ]})),
        ],
        ..Default::default()
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
    let cycles: Vec<&[String]> = problems
        .iter()
        .filter_map(|p| match p {
            StartProblem::WorkflowCycle { cycle } => Some(cycle.as_slice()),
            _ => None,
        })
        .collect();
    assert_eq!(cycles, vec![["outer", "inner", "outer"]]);
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
    assert_eq!(problems.len(), 7, "{problems:?}");
    assert!(error.to_string().contains("crm/stale is stale"));
    assert!(
        error
            .to_string()
            .contains("workflows call each other in a cycle: outer -> inner -> outer")
    );

    // A real-tools run keeps the real handlers: effect nodes are no problem
    // there, but the cycle still is.
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
    assert_eq!(problems.len(), 5, "{problems:?}");
    assert!(
        problems
            .iter()
            .any(|p| matches!(p, StartProblem::WorkflowCycle { .. }))
    );

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
        ..Default::default()
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

/// An agent created without the simulation loader (as an API caller
/// creates one) gets the loader's refusals from the start itself: every
/// cycle between its workflows, each once in call order, and every effect
/// node of a reached workflow in a sandbox run, each named.
pub async fn workflow_cycles_and_effects_are_refused_at_start<B: Backend>(backend: B) {
    let rig = Rig::new(backend);
    let tenant = tenant(rig.backend(), "acme").await;
    let (ledger, _) = library_ledger(rig.backend(), tenant).await;
    let spec = AgentSpec {
        tools: vec![
            ToolRef::Library { tool: ledger },
            ToolRef::Workflow {
                workflow: "a".into(),
            },
        ],
        workflows: vec![
            workflow(json!({"name": "a", "nodes": [
                {"type": "tool", "id": "log", "tool": "ledger", "operation": "append",
                 "next": "to_b", "catch": "mail"},
                {"type": "effect", "id": "mail", "effect": "email", "next": "to_b"},
                {"type": "tool", "id": "to_b", "workflow": "b", "next": "to_c"},
                {"type": "tool", "id": "to_c", "workflow": "c"}
            ]})),
            workflow(json!({"name": "b", "nodes": [
                {"type": "effect", "id": "write", "effect": "db_write", "next": "back"},
                {"type": "tool", "id": "back", "workflow": "a"}
            ]})),
            workflow(json!({"name": "c", "nodes": [
                {"type": "branch", "id": "again",
                 "when": [{"source": "input", "path": "more", "op": "exists", "value": true}],
                 "then": "self", "else": "done"},
                {"type": "tool", "id": "self", "workflow": "c", "next": "done"},
                {"type": "return", "id": "done", "value": {"$literal": null}}
            ]})),
            // Never reached: its effect is no problem, but its cycle is.
            workflow(json!({"name": "unused", "nodes": [
                {"type": "effect", "id": "post", "effect": "http_request", "next": "loop"},
                {"type": "tool", "id": "loop", "workflow": "unused"}
            ]})),
        ],
        ..Default::default()
    };
    let agent = rig
        .backend()
        .create_agent(tenant, "cyclic", &spec)
        .await
        .unwrap();
    let refused = |mode: SimulationMode| {
        let mut req = request(agent, vec![case("c")], 1);
        req.mode = mode;
        let dispatcher = &rig.dispatcher;
        async move {
            match dispatcher.start(tenant, &req).await {
                Err(StartError::Refused { problems }) => problems,
                other => panic!("expected a refusal, got {other:?}"),
            }
        }
    };
    let listed = |problems: &[StartProblem]| -> Vec<String> {
        problems
            .iter()
            .map(|p| match p {
                StartProblem::WorkflowCycle { cycle } => format!("cycle {}", cycle.join(">")),
                StartProblem::EffectNode {
                    workflow,
                    node,
                    effect,
                } => format!("effect {workflow}/{node} {effect}"),
                other => format!("other {}", other.code()),
            })
            .collect()
    };
    assert_eq!(
        listed(&refused(SimulationMode::Sandbox).await),
        vec![
            "cycle a>b>a",
            "cycle c>c",
            "cycle unused>unused",
            "effect a/mail email",
            "effect b/write db_write",
        ]
    );
    assert_eq!(
        listed(&refused(SimulationMode::RealTools).await),
        vec!["cycle a>b>a", "cycle c>c", "cycle unused>unused"]
    );
    let codes: Vec<&str> = refused(SimulationMode::Sandbox)
        .await
        .iter()
        .map(StartProblem::code)
        .collect();
    assert_eq!(
        codes,
        vec![
            "workflow_cycle",
            "workflow_cycle",
            "workflow_cycle",
            "effect_node",
            "effect_node"
        ]
    );
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
        tools: vec![
            ToolRef::Workflow {
                workflow: "booking".into(),
            },
            ToolRef::Inline(calendar),
            ToolRef::Library { tool: ledger },
        ],
        workflows: vec![
            workflow(json!({"name": "booking", "nodes": [
                {"type": "tool", "id": "cal", "tool": "calendar", "operation": "book",
                 "next": "sub"},
                {"type": "tool", "id": "sub", "workflow": "audit"}
            ]})),
            workflow(json!({"name": "audit", "nodes": [
                {"type": "tool", "id": "log", "tool": "ledger", "operation": "append"}
            ]})),
        ],
        ..Default::default()
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
        "the tools a nested workflow calls are pinned"
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
