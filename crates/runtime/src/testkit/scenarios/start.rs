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
    let spec = AgentSpec {
        tools: vec![
            ToolRef::Library { tool: crm },
            ToolRef::Workflow {
                workflow: "outer".into(),
            },
        ],
        workflows: vec![
            Workflow {
                name: "outer".into(),
                nodes: vec![
                    WorkflowNode {
                        id: "route".into(),
                        kind: NodeKind::Control,
                    },
                    WorkflowNode {
                        id: "notify".into(),
                        kind: NodeKind::Effect {
                            effect: "email".into(),
                        },
                    },
                    WorkflowNode {
                        id: "inner_call".into(),
                        kind: NodeKind::Tool {
                            tool: ToolRef::Workflow {
                                workflow: "inner".into(),
                            },
                        },
                    },
                ],
            },
            Workflow {
                name: "inner".into(),
                nodes: vec![
                    WorkflowNode {
                        id: "locate".into(),
                        kind: NodeKind::Tool {
                            tool: ToolRef::Inline(conflicting),
                        },
                    },
                    WorkflowNode {
                        id: "post".into(),
                        kind: NodeKind::Effect {
                            effect: "http_request".into(),
                        },
                    },
                    WorkflowNode {
                        id: "log".into(),
                        kind: NodeKind::Tool {
                            tool: ToolRef::Library { tool: ledger },
                        },
                    },
                    WorkflowNode {
                        id: "again".into(),
                        kind: NodeKind::Tool {
                            tool: ToolRef::Workflow {
                                workflow: "outer".into(),
                            },
                        },
                    },
                ],
            },
        ],
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
    assert_eq!(problems.len(), 6, "{problems:?}");
    assert!(error.to_string().contains("crm/stale is stale"));

    // A real-tools run keeps the real handlers: effect nodes are no problem there.
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
    assert_eq!(problems.len(), 4);

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
        tools: vec![ToolRef::Workflow {
            workflow: "booking".into(),
        }],
        workflows: vec![
            Workflow {
                name: "booking".into(),
                nodes: vec![
                    WorkflowNode {
                        id: "cal".into(),
                        kind: NodeKind::Tool {
                            tool: ToolRef::Inline(calendar),
                        },
                    },
                    WorkflowNode {
                        id: "sub".into(),
                        kind: NodeKind::Tool {
                            tool: ToolRef::Workflow {
                                workflow: "audit".into(),
                            },
                        },
                    },
                ],
            },
            Workflow {
                name: "audit".into(),
                nodes: vec![WorkflowNode {
                    id: "log".into(),
                    kind: NodeKind::Tool {
                        tool: ToolRef::Library { tool: ledger },
                    },
                }],
            },
        ],
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
        "nested workflow tools are pinned"
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
