//! Why a run did not produce results: the runner's one error type.

use crate::problem::FileProblem;
use toolmock_runtime::error::{DispatchError, FinishError, StoreError};

/// Why a run did not produce results.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The document cannot be installed or started; every problem is listed.
    #[error("the simulation cannot start ({} problem(s))", .0.len())]
    Problems(Vec<FileProblem>),
    /// Storage failed, or a call could not be recorded.
    #[error("the run failed: {0}")]
    Storage(String),
    /// The attempt was finished by someone else first (a concurrent finish).
    #[error("the attempt is already finished")]
    AlreadyFinished,
    /// A shared fixture still names its file: the document was never
    /// loaded (`load` turns every fixture file into its value), and
    /// starting without the fixture would run on the wrong state.
    #[error("the fixture at /fixtures/{index} names a file that was never loaded")]
    FixtureNotLoaded {
        /// Its position in `fixtures`.
        index: usize,
    },
}

impl RunError {
    /// A stable code.
    pub fn code(&self) -> &'static str {
        match self {
            RunError::Problems(_) => "start_refused",
            RunError::Storage(_) => "storage_failed",
            RunError::AlreadyFinished => FinishError::AlreadyFinished.code(),
            RunError::FixtureNotLoaded { .. } => "fixture_not_loaded",
        }
    }
}

impl From<StoreError> for RunError {
    fn from(e: StoreError) -> Self {
        RunError::Storage(e.to_string())
    }
}

impl From<DispatchError> for RunError {
    fn from(e: DispatchError) -> Self {
        RunError::Storage(e.to_string())
    }
}

impl From<FinishError> for RunError {
    fn from(e: FinishError) -> Self {
        match e {
            FinishError::AlreadyFinished => RunError::AlreadyFinished,
            FinishError::Store(e) => RunError::Storage(e.to_string()),
        }
    }
}
