//! The toolmock runtime: the dispatcher every tool call of a simulated
//! attempt goes through, the simulation start that pins what answers those
//! calls, the storage traits it runs on and their in-memory implementation.
//!
//! [`Dispatcher::start`] pins every operation an agent can reach and creates
//! the attempts, each with its fixture state and capability;
//! [`Dispatcher::call`] runs one call through docs/spec.md §8's pipeline and returns
//! exactly the rendered result; [`Dispatcher::finish_attempt`] ends an
//! attempt, as `harness_error` whenever the harness was at fault. The
//! modules are `dispatcher`, `backend` (the storage traits, [`MemoryStore`],
//! the injected clock and sleeper), `model` (what is stored and passed) and
//! `error`; the `testkit` feature holds the behaviour suite every backend
//! runs.
//!
//! It is not a database (the PostgreSQL backend is `toolmock-store`), not
//! an HTTP API (`toolmock-api`), and not the simulation format, its runner
//! or the workflow engine (`toolmock-simulation`, built on this crate). Its
//! invariants and boundary are in ARCHITECTURE.md, section
//! "`crates/runtime`".
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
//!     test_cases: vec![TestCaseSpec { name: "books".into(), variants: vec![], attempts: None }],
//!     attempts_per_case: 1,
//!     lease_owner: "worker-1".into(),
//!     lease: Duration::from_secs(600),
//!     fixtures: vec![], // no shared fixtures: the definitions' initial states
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
pub use dispatcher::{Dispatcher, FixtureInput, StartRequest, ToolCall};
