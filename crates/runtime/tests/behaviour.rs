//! The shared behaviour suite against the in-memory backend.

use toolmock_runtime::MemoryStore;

toolmock_runtime::behaviour_suite! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    fn () => MemoryStore::new()
}

/// One capability lookup per call: a capability resolved once — as the
/// API's extractor does, by the token's hash — is handed to the dispatcher
/// (`adopt_capability`, then `call_resolved`), which does not look it up
/// again: the call is answered while every lookup of the backend fails.
/// A dispatcher handed only the capability has to look it up, and fails.
#[tokio::test]
async fn a_resolved_capability_is_not_looked_up_again() {
    use serde_json::json;
    use toolmock_runtime::backend::AttemptStore;
    use toolmock_runtime::testkit::{Fault, Faulty, Rig, ledger_simulation};
    use toolmock_runtime::{Dispatcher, ToolCall};

    let rig = Rig::new(Faulty::new(MemoryStore::new()));
    let (tenant, started) = ledger_simulation(&rig, "acme", 1).await;
    let capability = &started.attempts[0].capability;
    let check = rig
        .backend()
        .resolve_capability(tenant, &capability.hash(), rig.dispatcher.now())
        .await
        .unwrap();
    let resolved = rig.dispatcher.adopt_capability(capability, check);
    assert_eq!(resolved.attempt(), started.attempts[0].id);
    rig.backend().fail(Fault::ResolveCapability, u32::MAX);
    let append = |id: &str| ToolCall::new("ledger", "append", json!({ "id": id }));
    rig.dispatcher
        .call_resolved(&resolved, &append("a"))
        .await
        .unwrap();

    let fresh = Dispatcher::new(rig.backend().clone());
    let error = fresh
        .call(tenant, capability, &append("b"))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "backend_failed", "{error:?}");
}
