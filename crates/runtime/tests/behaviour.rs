//! The shared behaviour suite against the in-memory backend.

use toolmock_runtime::MemoryStore;
use toolmock_runtime::testkit;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn linearizable_state() {
    testkit::linearizable_state(MemoryStore::new(), 64, 50).await;
}

#[tokio::test]
async fn attempts_are_isolated() {
    testkit::attempts_are_isolated(MemoryStore::new()).await;
}

#[tokio::test]
async fn harness_faults_never_pass() {
    testkit::harness_faults_never_pass(MemoryStore::new()).await;
}

#[tokio::test]
async fn tool_input_errors_are_recoverable() {
    testkit::tool_input_errors_are_recoverable(MemoryStore::new()).await;
}

#[tokio::test]
async fn result_is_exactly_rendered() {
    testkit::result_is_exactly_rendered(MemoryStore::new()).await;
}

#[tokio::test]
async fn start_refusals() {
    testkit::start_refusals(MemoryStore::new()).await;
}

#[tokio::test]
async fn incomplete_starts_fail_closed() {
    testkit::incomplete_starts_fail_closed(MemoryStore::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revisions_are_dense() {
    testkit::revisions_are_dense(MemoryStore::new(), 16).await;
}

#[tokio::test]
async fn capabilities_follow_the_lease() {
    testkit::capabilities_follow_the_lease(MemoryStore::new()).await;
}

#[tokio::test]
async fn tenancy_is_total() {
    testkit::tenancy_is_total(MemoryStore::new()).await;
}

#[tokio::test]
async fn delays_use_the_sleeper() {
    testkit::delays_use_the_sleeper(MemoryStore::new()).await;
}

#[tokio::test]
async fn real_tools_runs_use_the_executor() {
    testkit::real_tools_runs_use_the_executor(MemoryStore::new()).await;
}
