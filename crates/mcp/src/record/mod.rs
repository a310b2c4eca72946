//! `toolmock record`: a recording MCP proxy in front of a real server, and
//! `toolmock record emit`, which turns a recording into checked mock
//! definitions.
//!
//! A recording is a folder:
//!
//! - `recording.json`: `{"recording_version": 1, "server": {name, version,
//!   protocol_version}, "redacted_paths": [...]}`;
//! - `contracts.json`: the real server's tools as `toolmock discover` prints
//!   them (one entry per tool, with its contract and hash);
//! - `calls.jsonl`: one line per forwarded `tools/call`, in order:
//!   `{"tool", "arguments", "result"}` (the server's `CallToolResult`) or
//!   `{"tool", "arguments", "error": {"code", "message", "data"?}}`,
//!   already redacted.

mod emit;
mod infer;
mod proxy;
mod redact;

pub use emit::{EmitReport, Emitted, OperationReport, RecordedCall, emit, file_stem, read_calls};
pub use infer::{Inferred, Observation, Shape, infer};
pub use proxy::{RecordOptions, Recorded, record, record_stdio};
pub use redact::{REDACTED, Redactor};

use std::path::{Path, PathBuf};
use toolmock_contract::problem_codes;
use toolmock_discovery::DiscoveryError;

/// The recording's format version.
pub const RECORDING_VERSION: u64 = 1;
/// The recording's metadata file.
pub const RECORDING_FILE: &str = "recording.json";
/// The discovered contracts.
pub const CONTRACTS_FILE: &str = "contracts.json";
/// The recorded calls, one JSON object a line.
pub const CALLS_FILE: &str = "calls.jsonl";

problem_codes! {
    /// The codes of [`RecordError`] and of an operation `emit` could not
    /// turn into a definition ([`OperationReport::code`]).
    pub enum RecordCode {
        /// A `--redact` path has an empty segment.
        InvalidRedactPath => "invalid_redact_path",
        /// The output folder cannot be created or written.
        CannotWrite => "cannot_write",
        /// The recording folder or one of its files cannot be read.
        UnreadableRecording => "unreadable_recording",
        /// A recording file is not what `toolmock record` writes.
        InvalidRecording => "invalid_recording",
        /// The recorded server failed a forwarded call without a JSON-RPC error of its own (the transport broke).
        UpstreamFailed => "upstream_failed",
        /// The recording holds no calls: there is nothing to emit.
        EmptyRecording => "empty_recording",
        /// emit: the server declares no output schema for the tool, so no mock can be checked.
        NeedsOutputSchema => "needs_output_schema",
        /// emit: the tool was never called.
        NotCalled => "not_called",
        /// emit: no call of the tool returned a structured, non-error result.
        NoStructuredResults => "no_structured_results",
        /// emit: the emitted definition fails its check against the contract (diagnostics follow).
        CheckFailed => "check_failed",
        /// emit: the recorded calls name a tool the server did not list.
        UnlistedTool => "unlisted_tool",
    }
}

/// Why recording or emitting could not go on.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// A `--redact` path cannot be used.
    #[error("--redact {given:?}: a path is dot-separated non-empty segments (`*` for any key)")]
    InvalidRedactPath {
        /// `/redact/i`.
        path: String,
        /// The path as given.
        given: String,
    },
    /// The real server cannot be reached, started or listed (discovery's code).
    #[error("{0}")]
    Upstream(#[source] DiscoveryError),
    /// The output folder cannot be created or written.
    #[error("cannot write {}: {source}", .file.display())]
    CannotWrite {
        /// The file or folder.
        file: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The recording cannot be read.
    #[error("cannot read the recording {}: {source}", .file.display())]
    Unreadable {
        /// The file or folder.
        file: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// A recording file is malformed.
    #[error("{}: {}: {message}", .file.display(), if .path.is_empty() { "/" } else { .path.as_str() })]
    Invalid {
        /// The file.
        file: PathBuf,
        /// A JSON pointer into it (`/calls/i/...` for the i-th line of calls.jsonl).
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The recording holds no calls.
    #[error("{} holds no calls: record some through the proxy first", .file.display())]
    Empty {
        /// The calls file.
        file: PathBuf,
    },
}

impl RecordError {
    /// The stable code (a discovery failure keeps discovery's own code).
    pub fn code(&self) -> &'static str {
        match self {
            RecordError::InvalidRedactPath { .. } => RecordCode::InvalidRedactPath.as_str(),
            RecordError::Upstream(e) => e.code(),
            RecordError::CannotWrite { .. } => RecordCode::CannotWrite.as_str(),
            RecordError::Unreadable { .. } => RecordCode::UnreadableRecording.as_str(),
            RecordError::Invalid { .. } => RecordCode::InvalidRecording.as_str(),
            RecordError::Empty { .. } => RecordCode::EmptyRecording.as_str(),
        }
    }

    /// The JSON pointer of the fault, when it has one.
    pub fn path(&self) -> Option<&str> {
        match self {
            RecordError::InvalidRedactPath { path, .. } | RecordError::Invalid { path, .. } => {
                Some(path)
            }
            _ => None,
        }
    }
}

fn write_file(file: &Path, bytes: &[u8]) -> Result<(), RecordError> {
    std::fs::write(file, bytes).map_err(|source| RecordError::CannotWrite {
        file: file.to_owned(),
        source,
    })
}

fn write_json(file: &Path, value: &serde_json::Value) -> Result<(), RecordError> {
    let mut bytes = serde_json::to_vec_pretty(value).unwrap_or_default();
    bytes.push(b'\n');
    write_file(file, &bytes)
}

fn create_dir(dir: &Path) -> Result<(), RecordError> {
    std::fs::create_dir_all(dir).map_err(|source| RecordError::CannotWrite {
        file: dir.to_owned(),
        source,
    })
}
