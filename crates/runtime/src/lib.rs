//! The toolmock runtime: the dispatcher every tool call of a simulated attempt
//! goes through, and the simulation start that pins what answers those calls.
//!
//! [`Dispatcher::start`] resolves every operation an agent can reach (its
//! tools and, transitively, the tool nodes of its workflows) to a pin: a
//! library revision, or an inline definition by its hash. It refuses, listing
//! every problem, stale, missing and unmockable operations (unless
//! `allow_incomplete`), `state_conflict`s between pinned initial states, and,
//! in sandbox mode, workflow nodes that cause effects without the dispatcher.
//! It creates the attempts with their initial fixture state and a 256-bit
//! capability each. [`Dispatcher::call`] is SPEC §8's pipeline: find the pin,
//! then under the attempt's state lock check the lease first, validate the
//! input, evaluate the mock and validate its output, commit the state with
//! its evidence, apply the delay, and return exactly the rendered result.
//! Tool input errors and harness errors are recorded before the call
//! returns, storage failures as `storage_failed` (or, when nothing can be
//! written, found by the finish); an attempt with a harness error always
//! ends `harness_error`.
//!
//! The public surface is four modules: [`dispatcher`] (the dispatcher, its
//! requests and results), [`backend`] (the storage traits — [`Catalog`],
//! [`PinStore`], [`FixtureStore`], [`EvidenceSink`], [`AttemptStore`],
//! together [`Backend`] — the in-memory [`MemoryStore`], and the injected
//! clock, sleeper and external executor), [`model`] (what is stored and
//! passed: ids, capabilities, agents, pins, attempts, evidence) and [`error`]
//! (every error and its typed code). The main path — [`Dispatcher`],
//! [`MemoryStore`], [`StartRequest`], [`ToolCall`] — is also at the crate
//! root. This crate does not depend on any database: the PostgreSQL backend
//! lives in `toolmock-store`. It is not an HTTP API, and it never executes a
//! tool for real in a sandbox run.
//!
//! [`Catalog`]: backend::Catalog
//! [`PinStore`]: backend::PinStore
//! [`FixtureStore`]: backend::FixtureStore
//! [`EvidenceSink`]: backend::EvidenceSink
//! [`AttemptStore`]: backend::AttemptStore
//! [`Backend`]: backend::Backend
//!
//! ```
//! use serde_json::json;
//! use std::time::Duration;
//! use toolmock_contract::{OperationIdentity, OperationSource};
//! use toolmock_runtime::backend::Catalog;
//! use toolmock_runtime::model::{
//!     AgentSpec, AttemptOutcome, InlineOperation, InlineTool, SimulationMode, TestCaseSpec,
//!     ToolRef, Verdict,
//! };
//! use toolmock_runtime::{Dispatcher, MemoryStore, StartRequest, ToolCall};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store = MemoryStore::new();
//! let tenant = store.create_tenant("acme").await?;
//! let booking = InlineOperation {
//!     name: "book".into(),
//!     source: OperationSource::Custom,
//!     description: "Book an appointment".into(),
//!     input_schema: json!({"type": "object"}),
//!     output_schema: Some(json!({"type": "object", "required": ["reference"]})),
//!     testing: Some(json!({
//!         "schema_version": 1,
//!         "default_variant": "success",
//!         "initial_state": {"reference": "TEST-742"},
//!         "variants": {"success": {
//!             "result": {"reference": {"$state": "reference"}},
//!             "set_state": {"booked": true}
//!         }},
//!         "examples": [{"variant": "success", "input": {}, "expected": {"reference": "TEST-742"}}]
//!     })),
//! };
//! let spec = AgentSpec {
//!     tools: vec![ToolRef::Inline(InlineTool { name: "calendar".into(), operations: vec![booking] })],
//!     workflows: vec![],
//!     ..Default::default()
//! };
//! let agent = store.create_agent(tenant, "receptionist", &spec).await?;
//!
//! let dispatcher = Dispatcher::new(store);
//! let started = dispatcher.start(tenant, &StartRequest {
//!     agent,
//!     mode: SimulationMode::Sandbox,
//!     allow_incomplete: false,
//!     test_cases: vec![TestCaseSpec { name: "books".into(), variants: vec![] }],
//!     attempts_per_case: 1,
//!     lease_owner: "worker-1".into(),
//!     lease: Duration::from_secs(600),
//! }).await?;
//! let attempt = &started.attempts[0];
//!
//! let result = dispatcher
//!     .call(tenant, &attempt.capability, &ToolCall::new("calendar", "book", json!({})))
//!     .await?;
//! assert_eq!(result, json!({"reference": "TEST-742"})); // no wrapper
//!
//! // A tool nobody can reach is a harness error, never executed...
//! let unknown = ToolCall::new("payments", "charge", json!({}));
//! assert!(dispatcher.call(tenant, &attempt.capability, &unknown).await.is_err());
//! // ...and the attempt can no longer pass, whatever the test code says.
//! let outcome = dispatcher.finish_attempt(tenant, attempt.id, Verdict::Passed).await?;
//! assert_eq!(outcome, AttemptOutcome::HarnessError);
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod backend;
pub mod dispatcher;
pub mod error;
pub mod model;
#[cfg(feature = "testkit")]
pub mod testkit;

pub use backend::MemoryStore;
pub use dispatcher::{Dispatcher, StartRequest, ToolCall};
