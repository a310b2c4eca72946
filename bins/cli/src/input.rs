//! Reading the files the commands take.

use crate::Failure;
use std::path::Path;
use toolmock_contract::OperationContract;
use toolmock_evaluator::CompiledContract;

/// Files larger than this are refused before they are read whole.
pub(crate) const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

/// Reads a whole file, refusing unreadable and oversized ones.
pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>, Failure> {
    let metadata = std::fs::metadata(path)
        .map_err(|e| Failure::usage(format!("{}: cannot read: {e}", path.display())))?;
    if metadata.len() > MAX_INPUT_BYTES {
        return Err(Failure::usage(format!(
            "{}: {} bytes is more than the {} bytes toolmock reads",
            path.display(),
            metadata.len(),
            MAX_INPUT_BYTES
        )));
    }
    std::fs::read(path).map_err(|e| Failure::usage(format!("{}: cannot read: {e}", path.display())))
}

/// Reads a contract file (docs/spec.md §2 form).
pub(crate) fn read_contract(path: &Path) -> Result<OperationContract, Failure> {
    let bytes = read_file(path)?;
    OperationContract::from_json_slice(&bytes).map_err(|e| {
        Failure::usage(format!(
            "{}: {}{}: {e}",
            path.display(),
            at(e.path()),
            e.code()
        ))
    })
}

/// Reads a contract file and compiles its schemas.
pub(crate) fn read_compiled_contract(path: &Path) -> Result<CompiledContract, Failure> {
    let contract = read_contract(path)?;
    CompiledContract::new(contract).map_err(|e| {
        Failure::usage(format!(
            "{}: {}{}: {e}",
            path.display(),
            at(e.path()),
            e.code()
        ))
    })
}

/// `PATH: ` when an error names a JSON pointer, else nothing.
fn at(path: Option<&str>) -> String {
    match path {
        Some("") => "/: ".to_owned(),
        Some(path) => format!("{path}: "),
        None => String::new(),
    }
}
