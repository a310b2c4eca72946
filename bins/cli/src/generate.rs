//! `toolmock generate`.

use crate::{CliCode, Failure, input, output};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

/// Derive a draft mock definition from an operation contract's schemas.
///
/// Prints a version-1 definition with one "success" variant whose result is
/// derived from the output schema, and one example whose input is derived
/// from the input schema: default, then examples, const, enum, then by type
/// (required, bounds, multipleOf, lengths, local $ref/$defs, nullable anyOf,
/// formats date, date-time, email, uuid, uri, …). The draft has passed the
/// check of `toolmock check --contract` before it is printed.
///
/// A schema that cannot honestly be satisfied (pattern, not, if/then/else,
/// dependentSchemas, patternProperties-only objects, remote or cyclic $ref,
/// contradictory bounds, …) needs an authored mock: every schema pointer at
/// fault is printed on stderr as FILE: /pointer: code: reason, exit 1.
/// Exits 2 when the contract cannot be read.
///
/// Example:
///   toolmock generate lookup.contract.json > lookup.mock.json
///   toolmock check lookup.mock.json --contract lookup.contract.json
///   lookup.mock.json: ok (1 variant)
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct GenerateArgs {
    /// The operation contract.
    contract: PathBuf,
}

pub(crate) fn run(args: &GenerateArgs) -> Result<u8, Failure> {
    let contract = input::read_contract(&args.contract)?;
    match toolmock_schema::generate(&contract) {
        Ok(draft) => {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            let result = serde_json::to_writer_pretty(&mut out, &draft.to_value())
                .map_err(std::io::Error::from)
                .and_then(|()| writeln!(out));
            output::written(result, "cannot write the draft")?;
            Ok(0)
        }
        Err(needs) => {
            let name = args.contract.display();
            let stderr = std::io::stderr();
            let mut err = stderr.lock();
            let _ = writeln!(
                err,
                "{name}: {}: the schemas cannot be satisfied by a derived draft; author the mock by hand",
                CliCode::NeedsAuthoredMock
            );
            let _ = output::print_problems(&mut err, &name.to_string(), &needs);
            Ok(1)
        }
    }
}
