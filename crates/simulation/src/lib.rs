//! Simulations you can run on `toolmock-runtime`: the simulation document
//! (`docs/simulations.md`) and its JSON Schema, the loader that reports
//! every problem of a file at once ([`read_file`], [`FileProblem`]), the
//! scripted driver, expectations judged over what an attempt recorded
//! ([`unmet_expectations`]: a worker that plays a real agent judges its attempts
//! with the same code), the workflow engine, and the runner that installs a
//! document's tools, starts it through `Dispatcher::start`, runs its
//! attempts concurrently and reports them ([`RunResults`], [`coverage`]).
//!
//! It stores nothing and serves nothing itself: it runs on the backend of
//! the dispatcher it is handed (in memory for `toolmock run`, PostgreSQL
//! for the API). Its invariants and boundary are in ARCHITECTURE.md,
//! section "`crates/simulation`".
//!
//! ```
//! use serde_json::json;
//! use std::sync::Arc;
//! use toolmock_runtime::backend::Catalog;
//! use toolmock_runtime::{Dispatcher, MemoryStore};
//! use toolmock_simulation::{Files, RunOptions, VirtualSleeper, load_value, run};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let document = json!({
//!     "simulation_version": 1,
//!     "name": "books",
//!     "tools": [{
//!         "name": "calendar", "from": "custom",
//!         "operations": [{"name": "book", "input_schema": {"type": "object"},
//!                         "output_schema": {"type": "object", "required": ["reference"]}}],
//!         "definitions": {"book": {
//!             "schema_version": 1, "default_variant": "success",
//!             "variants": {"success": {"result": {"reference": "TEST-742"}, "delay_ms": 800}},
//!             "examples": [{"variant": "success", "input": {}, "expected": {"reference": "TEST-742"}}]
//!         }}
//!     }],
//!     "agent": {"name": "receptionist", "tools": ["calendar"]},
//!     "cases": [{"name": "books", "driver": {"type": "scripted", "steps": [
//!         {"tool": "calendar", "operation": "book", "arguments": {},
//!          "expect": {"result": {"reference": "TEST-742"}}}
//!     ]}}]
//! });
//! let loaded = load_value(&document, "books.json", &Files::InlineOnly)
//!     .map_err(|problems| format!("{problems:?}"))?;
//! let store = MemoryStore::new();
//! let tenant = store.create_tenant("acme").await?;
//! // Delays cost virtual time, not wall time.
//! let dispatcher = Dispatcher::new(store).with_sleeper(Arc::new(VirtualSleeper));
//! let options = RunOptions { jobs: 2, ..RunOptions::default() };
//! let results = run(Arc::new(dispatcher), tenant, Arc::new(loaded), &options, Arc::new(|| {})).await?;
//! assert!(results.ok);
//! assert_eq!(results.summary.virtual_time_ms, 800);
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod clock;
mod conversation;
pub mod document;
mod driver;
mod expect;
mod judge;
mod load;
mod model_driver;
mod problem;
mod reference;
mod results;
mod runner;
mod simulated_user;
mod starting;
mod usage;
mod workflow;

pub use clock::{SequenceClock, VirtualSleeper};
pub use conversation::{
    Actor, AttemptScope, ChatModel, ConversationSink, FunctionMap, FunctionTarget, FunctionTool,
    MAX_FUNCTION_NAME, Message, ModelError, ModelFuture, ModelReply, ModelRequest, ModelRole,
    SinkFuture, ToolCallRequest, Usage, attempt_model, system_message,
};
pub use expect::{RecordedCall, Unmet, recorded_calls, unmet_expectations};
pub use load::real::{RealHandlers, real_handlers};
pub use load::{
    Files, Loaded, LoadedDefinition, LoadedSimulation, LoadedTool, Origin, SIMULATION_SCHEMA,
    inline_file, load_file, load_slice, load_value, read_file, read_slice, read_value,
    schema_problems,
};
pub use model_driver::{UserConversation, UserReply, user_turns_used_up};
pub use problem::{FileProblem, LoadCode};
pub use results::{
    AttemptResult, CallReport, CaseResult, DivergedMock, ErrorEntry, JudgeReport,
    OperationCoverage, PassK, RawAttempt, RunResults, Summary, VariantCoverage, coverage,
};
pub use runner::{
    DEFAULT_ATTEMPT_TIMEOUT, Installed, Keeping, Players, RunError, RunOptions, assemble_results,
    attempt_result, check, conclude_attempt, conclude_conversation, install, install_inline,
    play_attempt, run, run_attempt, start, start_request, unknown_library_tools,
};
pub use simulated_user::{OPENER, USER_GUIDELINES, UserPlayer, agent_view, user_view};
pub use starting::start_problems;
pub use usage::{Price, RequestUsage, TokenUsage};
pub use workflow::{AttemptContext, CallFailure};
