//! One capability lookup per MCP call: an attempt whose capability its
//! server was handed already resolved (the API's `/api/attempts/{id}/mcp`,
//! whose extractor found it by the bearer token) is called through
//! `Dispatcher::call_resolved`, never through a second lookup — the call is
//! answered while every lookup of the storage fails and the dispatcher
//! holds no binding of its own.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed expectation must panic

use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use toolmock_mcp::{FixedAttempt, ServedTools, ToolServer};
use toolmock_runtime::MemoryStore;
use toolmock_runtime::backend::{AttemptStore, EvidenceSink};
use toolmock_runtime::testkit::{Fault, Faulty, Rig, ledger_simulation};
use toolmock_runtime::{Dispatcher, ToolCall};

#[tokio::test]
async fn a_resolved_capability_is_not_looked_up_again() {
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

    let direct: Vec<String> = vec![started.pins[0].tool.clone()];
    let tools = ServedTools::new(&direct, &started.pins, &[]).unwrap();
    let server = ToolServer::new(
        fresh,
        tools,
        HashMap::new(),
        FixedAttempt::new(resolved, capability.clone()),
        "toolmock",
    );
    let answer = server
        .call(None, "append", json!({"id": "b"}))
        .await
        .unwrap();
    assert_ne!(answer.is_error, Some(true), "{answer:?}");
    let evidence = rig
        .backend()
        .evidence(tenant, started.attempts[0].id)
        .await
        .unwrap();
    assert_eq!(evidence.len(), 1, "the call was answered and recorded");
}
