//! The shared behaviour suite: every scenario here runs against the
//! in-memory backend (this crate's `tests/behaviour.rs`) and against
//! PostgreSQL (`toolmock-store`'s `tests/behaviour.rs`, one fresh database per
//! scenario), so both implementations are held to the same guarantees.
//!
//! [`behaviour_suite!`](crate::behaviour_suite) generates one test per
//! scenario for a backend from the single list inside it: a new scenario is
//! added to that list once and then runs on every backend. The parts:
//! `fakes` (a manual clock, a recording sleeper, a counting executor),
//! `fixtures` (the [`Rig`], the ledger tool and simulation, builders) and the
//! scenarios themselves.
//!
//! Enabled by the `testkit` feature. This is test code: a scenario that finds
//! a broken guarantee panics with a message saying which.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod fakes;
mod fixtures;
mod scenarios;

pub use fakes::{CountingExecutor, Fault, Faulty, ManualClock, RecordingSleeper};
pub use fixtures::{Rig, ledger_definition, ledger_operation, ledger_simulation, library_ledger};
pub use scenarios::*;

/// The imports every part of the testkit shares.
mod prelude {
    pub(crate) use crate::backend::*;
    pub(crate) use crate::dispatcher::*;
    pub(crate) use crate::error::*;
    pub(crate) use crate::model::WorkflowDoc;
    pub(crate) use crate::model::*;
    pub(crate) use chrono::{DateTime, Utc};
    pub(crate) use serde_json::{Map, Value, json};
    pub(crate) use std::collections::HashSet;
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    pub(crate) use std::sync::{Arc, Mutex};
    pub(crate) use std::time::Duration;
    pub(crate) use toolmock_contract::{
        DefinitionHash, OperationContract, OperationIdentity, OperationSource,
    };
    pub(crate) use toolmock_evaluator::{
        Call, CallError, CompiledContract, compile_checked, evaluate,
    };
}

/// Generates the behaviour suite's tests for one backend: one test function
/// per scenario of the list below, each with the given test attribute(s) and
/// parameters, an expression building a fresh backend from them, and
/// optionally `after` a closure that tears the backend down (it receives the
/// backend and returns a future).
///
/// ```text
/// // The in-memory backend:
/// toolmock_runtime::behaviour_suite! {
///     #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
///     fn () => toolmock_runtime::MemoryStore::new()
/// }
/// // PostgreSQL, one fresh migrated database per scenario, as the app role:
/// toolmock_runtime::behaviour_suite! {
///     #[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
///     fn (_pool: PgPoolOptions, connect: PgConnectOptions) => app_store(connect).await,
///     after |store: PgStore| async move { store.pool().close().await }
/// }
/// ```
#[macro_export]
macro_rules! behaviour_suite {
    (
        $(#[$attr:meta])*
        fn ($($param:ident : $ty:ty),* $(,)?) => $backend:expr
        $(, after $after:expr)? $(,)?
    ) => {
        // The one list of scenarios.
        $crate::behaviour_suite!(@each [$(#[$attr])*] ($($param: $ty),*) ($backend) [$($after)?];
            linearizable_state,
            attempts_are_isolated,
            shared_fixtures_are_one_base,
            harness_faults_never_pass,
            tool_input_errors_are_recoverable,
            result_is_exactly_rendered,
            start_refusals,
            workflow_cycles_and_effects_are_refused_at_start,
            incomplete_starts_fail_closed,
            revisions_are_dense,
            capabilities_follow_the_lease,
            tenancy_is_total,
            delays_use_the_sleeper,
            real_tools_runs_use_the_executor,
            expired_leases_refuse_every_call,
            nothing_real_runs_after_the_lease,
            storage_faults_never_pass,
            lost_faults_fail_every_finisher,
            finish_honours_the_lease,
            concurrent_finishes_have_one_winner,
            starts_are_bounded,
            nul_in_arguments_is_a_tool_input_error,
            arbitrary_arguments_are_always_answered,
            domain_errors_are_evidence,
        );
    };
    (@each $attrs:tt $params:tt $backend:tt $after:tt; $($name:ident),* $(,)?) => {
        $( $crate::behaviour_suite!(@one $attrs $params $backend $after $name); )*
    };
    (@one [$($attr:tt)*] ($($params:tt)*) ($backend:expr) [] $name:ident) => {
        $($attr)*
        async fn $name($($params)*) {
            $crate::testkit::$name($backend).await;
        }
    };
    (@one [$($attr:tt)*] ($($params:tt)*) ($backend:expr) [$after:expr] $name:ident) => {
        $($attr)*
        async fn $name($($params)*) {
            let backend = $backend;
            $crate::testkit::$name(::std::clone::Clone::clone(&backend)).await;
            ($after)(backend).await;
        }
    };
}
