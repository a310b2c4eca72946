//! Running simulations on the runtime, one room per job: `install` (a
//! document's tools and agent), `start` (the start request and the start),
//! `play` (one attempt: its script or its model), `conclude` (an attempt's
//! expectations, the LLM judge, its finish), `results` (the results
//! document) and `suite` (every attempt of a document, concurrently). The
//! API, the worker and `toolmock serve` call these same functions.

mod conclude;
mod error;
mod install;
mod play;
mod results;
mod start;
mod suite;

pub use conclude::{conclude_attempt, conclude_conversation};
pub use error::RunError;
pub use install::{Installed, install, install_inline, unknown_library_tools};
pub use play::{DEFAULT_ATTEMPT_TIMEOUT, Keeping, Players, play_attempt, run_attempt};
pub use results::{assemble_results, attempt_result};
pub use start::{start, start_request};
pub use suite::{RunOptions, check, run};
