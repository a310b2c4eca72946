//! `toolmock hash`.

use crate::{Failure, input};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

/// Print the contract hash of an operation contract.
///
/// The hash is the lowercase hex SHA-256 of the RFC 8785 canonical form of
/// {description, input_schema, operation: {name, source}, output_schema}:
/// key order and whitespace never change it, any change of meaning does.
///
/// Example:
///   toolmock hash lookup_patient.contract.json
///   3f1c…e9 (64 hex digits)
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct HashArgs {
    /// The contract file: {"operation": {"source", "name"}, "description", "input_schema", "output_schema"}.
    contract: PathBuf,
}

pub(crate) fn run(args: &HashArgs) -> Result<u8, Failure> {
    let contract = input::read_contract(&args.contract)?;
    let hash = contract
        .hash()
        .map_err(|e| Failure::usage(format!("{}: {}: {e}", args.contract.display(), e.code())))?;
    crate::output::written(
        writeln!(std::io::stdout(), "{hash}"),
        "cannot write the output",
    )?;
    Ok(0)
}
