//! Simulations you can run: the simulation document (`docs/simulations.md`),
//! its loader with compiler-style problems, the scripted driver, expectations
//! judged over the recorded evidence, and the runner that installs the
//! document's tools as library tools with revisions, starts it through
//! `toolmock_runtime::Dispatcher::start` and runs its attempts concurrently.
//!
//! The expectation code ([`expect`]) reads only what an attempt recorded, so
//! a worker that plays a real agent can judge its attempts with it too.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod document;
mod driver;
mod expect;
mod load;
mod problem;
mod reference;
mod results;
mod runner;
mod workflow;

pub use expect::{RecordedCall, Unmet, judge_attempt, recorded_calls};
pub use load::{
    Files, Loaded, LoadedDefinition, LoadedSimulation, LoadedTool, Origin, SIMULATION_SCHEMA,
    load_file, load_slice, load_value, read_file, read_slice, read_value, schema_problems,
};
pub use problem::{FileProblem, LoadCode};
pub use results::{
    AttemptResult, CallReport, CaseResult, ErrorEntry, OperationCoverage, PassK, RawAttempt,
    RunResults, Summary, VariantCoverage, coverage,
};
pub use runner::{
    Installed, RunError, RunOptions, SequenceClock, VirtualSleeper, check, install, install_inline,
    judge_and_finish, run, run_attempt, start, start_problems, start_request,
    unknown_library_tools,
};
pub use workflow::{AttemptContext, CallFailure};
