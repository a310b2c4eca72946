//! The crate's errors, each with a stable code (`docs/error-codes.md`,
//! section toolmock-mcp).

use toolmock_contract::problem_codes;
use toolmock_simulation::{FileProblem, RunError};

problem_codes! {
    /// The codes of [`ServeError`] and of the JSON-RPC errors this crate
    /// answers itself (beside the runtime's harness error codes).
    pub enum McpCode {
        /// The document has several cases and `--case` names none.
        CaseRequired => "case_required",
        /// `--case` names no case of the document.
        UnknownCase => "unknown_case",
        /// Two served tools would have one MCP name.
        DuplicateToolName => "duplicate_tool_name",
        /// The attempt path names no attempt (or a number out of range).
        UnknownAttempt => "unknown_attempt",
        /// The attempt has ended; its URL answers no more calls.
        AttemptFinished => "attempt_finished",
        /// The simulation cannot be installed or started (its problems are listed).
        StartRefused => "start_refused",
        /// Storage failed, or a call could not be recorded.
        StorageFailed => "storage_failed",
        /// The capability is not valid for this attempt (nothing was recorded).
        CapabilityRejected => "capability_rejected",
        /// `ask_user` was called where no simulated user is served (nothing
        /// was recorded).
        AskUserNotServed => "ask_user_not_served",
    }
}

/// Why serving could not start, or an attempt could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The document has several cases and none was chosen.
    #[error("the simulation has {} cases; choose one with --case ({})", .names.len(), .names.join(", "))]
    CaseRequired {
        /// The cases' names.
        names: Vec<String>,
    },
    /// The chosen case does not exist.
    #[error("the simulation has no case {name:?}; it has {}", .names.join(", "))]
    UnknownCase {
        /// The name asked for.
        name: String,
        /// The cases' names.
        names: Vec<String>,
    },
    /// Two served tools would have one name.
    #[error("two served tools would be called {name:?}: {first} and {second}")]
    DuplicateToolName {
        /// The name.
        name: String,
        /// The first.
        first: String,
        /// The second.
        second: String,
    },
    /// No such attempt.
    #[error("no attempt {attempt} (attempts are numbered 1 to {max})")]
    UnknownAttempt {
        /// The number asked for.
        attempt: String,
        /// The largest number.
        max: u32,
    },
    /// The attempt has ended.
    #[error("attempt {attempt} has ended; start another one")]
    AttemptFinished {
        /// Its number.
        attempt: u32,
    },
    /// The simulation's problems (every one listed).
    #[error("the simulation cannot start ({} problem(s))", .0.len())]
    Problems(Vec<FileProblem>),
    /// Storage failed.
    #[error("storage failed: {0}")]
    Storage(String),
}

impl ServeError {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            ServeError::CaseRequired { .. } => McpCode::CaseRequired,
            ServeError::UnknownCase { .. } => McpCode::UnknownCase,
            ServeError::DuplicateToolName { .. } => McpCode::DuplicateToolName,
            ServeError::UnknownAttempt { .. } => McpCode::UnknownAttempt,
            ServeError::AttemptFinished { .. } => McpCode::AttemptFinished,
            ServeError::Problems(_) => McpCode::StartRefused,
            ServeError::Storage(_) => McpCode::StorageFailed,
        }
        .as_str()
    }
}

impl From<RunError> for ServeError {
    fn from(e: RunError) -> Self {
        match e {
            RunError::Problems(problems) => ServeError::Problems(problems),
            other => ServeError::Storage(other.to_string()),
        }
    }
}
