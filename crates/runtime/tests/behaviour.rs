//! The shared behaviour suite against the in-memory backend.

use toolmock_runtime::MemoryStore;

toolmock_runtime::behaviour_suite! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    fn () => MemoryStore::new()
}
