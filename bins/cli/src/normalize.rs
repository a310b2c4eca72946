//! `toolmock normalize`.

use crate::{Failure, input, output};
use clap::Args;
use std::path::PathBuf;
use toolmock_schema::{ContractEntry, PlatformManifest};

/// Normalize a platform manifest (version 1) to operation contracts.
///
/// Prints a JSON array with one {"contract": …, "contract_hash": …} per
/// operation, in manifest order; each contract is named {tool}__{operation}
/// and has source "platform" (docs/spec.md §9). With --out DIR, each contract is
/// also written to DIR/NAME.contract.json, ready for `toolmock generate`.
///
/// An invalid manifest prints every problem on stderr, one line each, as
/// FILE: /json/pointer: code: message, then a count, and exits 1.
/// Exits 2 when a file cannot be read or written.
///
/// Example:
///   toolmock normalize salesforce.manifest.json
///   [{"contract": {"operation": {"source": "platform", "name": "salesforce__query"}, …},
///     "contract_hash": "5d0c…"}, …]
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct NormalizeArgs {
    /// The platform manifest.
    manifest: PathBuf,
    /// Also write each contract to DIR/NAME.contract.json.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

pub(crate) fn run(args: &NormalizeArgs) -> Result<u8, Failure> {
    let bytes = input::read_file(&args.manifest)?;
    let manifest = match PlatformManifest::from_json_slice(&bytes) {
        Ok(manifest) => manifest,
        Err(errors) => {
            let name = args.manifest.display().to_string();
            let _ = output::print_problems(&mut std::io::stderr().lock(), &name, &errors);
            return Ok(1);
        }
    };
    let contracts = manifest.into_contracts();
    let mut entries = Vec::with_capacity(contracts.len());
    for contract in &contracts {
        let entry = ContractEntry::of_contract(contract).map_err(|e| {
            Failure::usage(format!(
                "{}: {}: {}: {e}",
                args.manifest.display(),
                contract.operation.name,
                e.code()
            ))
        })?;
        entries.push(entry);
    }
    if let Some(dir) = &args.out {
        output::write_contracts(dir, entries.iter())?;
    }
    output::print_entries(&entries)?;
    Ok(0)
}
