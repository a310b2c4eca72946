//! One capability lookup per MCP call: an attempt whose capability its
//! server was handed already resolved (the API's `/api/attempts/{id}/mcp`,
//! whose extractor found it by the bearer token) is called through
//! `Dispatcher::call_resolved`, never through a second lookup — the call is
//! answered while every lookup of the storage fails and the dispatcher
//! holds no binding of its own. The same holds for every node of a workflow
//! the agent calls: its tool calls go through the resolution handed over.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed expectation must panic

use serde_json::{Value, json};
use std::sync::Arc;
use toolmock_mcp::{FixedAttempt, ServedTools, ToolServer};
use toolmock_runtime::backend::{AttemptStore, EvidenceSink};
use toolmock_runtime::model::{AttemptId, TenantId, WorkflowDoc};
use toolmock_runtime::testkit::{Fault, Faulty, Rig, ledger_simulation};
use toolmock_runtime::{Dispatcher, MemoryStore, ToolCall};

/// A server over a dispatcher that holds no binding, handed the attempt's
/// capability already resolved, while every storage lookup of a capability
/// fails; with the attempt, to read its evidence.
async fn resolved_server(
    workflows: Vec<WorkflowDoc>,
) -> (
    Rig<Faulty<MemoryStore>>,
    ToolServer<Faulty<MemoryStore>, FixedAttempt>,
    (TenantId, AttemptId),
) {
    let rig = Rig::new(Faulty::new(MemoryStore::new()));
    let (tenant, started) = ledger_simulation(&rig, "acme", 1).await;
    let capability = &started.attempts[0].capability;
    let check = rig
        .backend()
        .resolve_capability(tenant, &capability.hash(), rig.dispatcher.now())
        .await
        .unwrap();
    let resolved = rig.dispatcher.adopt_capability(capability, check);
    rig.backend().fail(Fault::ResolveCapability, u32::MAX);

    // A dispatcher without the binding: only the resolution handed over can
    // answer, since its own lookup fails.
    let fresh = Arc::new(Dispatcher::new(rig.backend().clone()));
    let looked_up = fresh
        .call(
            tenant,
            capability,
            &ToolCall::new("ledger", "append", json!({"id": "a"})),
        )
        .await
        .unwrap_err();
    assert_eq!(looked_up.code(), "backend_failed", "{looked_up:?}");

    // What the agent is shown: the tool, and each workflow by its name.
    let direct: Vec<String> = std::iter::once(started.pins[0].tool.clone())
        .chain(workflows.iter().map(|w| w.name.clone()))
        .collect();
    let tools = ServedTools::new(&direct, &started.pins, &workflows).unwrap();
    let server = ToolServer::new(
        fresh,
        tools,
        workflows
            .into_iter()
            .map(|w| (w.name.clone(), w))
            .collect::<std::collections::HashMap<_, _>>(),
        FixedAttempt::new(resolved, capability.clone()),
        "toolmock",
    );
    (rig, server, (tenant, started.attempts[0].id))
}

async fn evidence_count(
    rig: &Rig<Faulty<MemoryStore>>,
    (tenant, attempt): (TenantId, AttemptId),
) -> usize {
    rig.backend().evidence(tenant, attempt).await.unwrap().len()
}

#[tokio::test]
async fn a_resolved_capability_is_not_looked_up_again() {
    let (rig, server, attempt) = resolved_server(vec![]).await;
    let answer = server
        .call(None, "append", json!({"id": "b"}))
        .await
        .unwrap();
    assert_ne!(answer.is_error, Some(true), "{answer:?}");
    assert_eq!(
        evidence_count(&rig, attempt).await,
        1,
        "the call was answered and recorded"
    );
}

#[tokio::test]
async fn a_workflows_nodes_use_the_resolved_capability() {
    let workflow: WorkflowDoc = serde_json::from_value(json!({
        "name": "append_twice",
        "description": "Append two entries, then say which.",
        "nodes": [
            {"type": "tool", "id": "first", "tool": "ledger", "operation": "append",
             "arguments": {"id": {"$input": "first"}}, "next": "second"},
            {"type": "tool", "id": "second", "tool": "ledger", "operation": "append",
             "arguments": {"id": {"$input": "second"}}, "next": "done"},
            {"type": "return", "id": "done", "value": {"appended": 2}}
        ]
    }))
    .unwrap();
    let (rig, server, attempt) = resolved_server(vec![workflow]).await;
    let answer = server
        .call(None, "append_twice", json!({"first": "c", "second": "d"}))
        .await
        .unwrap();
    assert_ne!(answer.is_error, Some(true), "{answer:?}");
    let text = answer.content[0].as_text().unwrap().text.clone();
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value, json!({"appended": 2}), "{text}");
    assert_eq!(
        evidence_count(&rig, attempt).await,
        2,
        "both of the workflow's tool nodes were answered and recorded"
    );
}
