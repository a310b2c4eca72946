//! `toolmock check-cassette`.

use crate::Failure;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

/// Check a model cassette against the simulation it was recorded for.
///
/// Every line of every DIR/*.jsonl file must be an exchange of the current
/// format whose key is its request's hash (cassette_invalid,
/// cassette_key_mismatch); every exchange must be one the document can
/// send — its case, attempt, model and turn exist, and no other line holds
/// the same turn (cassette_orphan); and every agent request must carry the
/// system message and the tools the document sends now (cassette_stale,
/// with the JSON pointer of the first change). Problems print as
/// FILE:LINE: /pointer: code: message.
///
/// Exits 0 when the cassette is sound, 1 when it has problems, 2 when the
/// simulation or the folder cannot be read.
///
/// Example:
///   toolmock check-cassette agent.json cassettes
///   cassettes/adds-a-note.jsonl:1: /messages/0/content: cassette_stale: recorded against another agent: …
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct CheckCassetteArgs {
    /// The simulation file.
    simulation: PathBuf,
    /// The cassette folder.
    cassette: PathBuf,
}

pub(crate) fn run(args: &CheckCassetteArgs) -> Result<u8, Failure> {
    let file = args.simulation.display().to_string();
    let loaded = match toolmock_simulation::read_file(&args.simulation) {
        Ok(loaded) if loaded.problems.is_empty() => loaded.simulation,
        Ok(loaded) => {
            crate::run::print_problems(&file, &loaded.problems);
            return Ok(2);
        }
        Err(problems) => {
            crate::run::print_problems(&file, &problems);
            return Ok(2);
        }
    };
    if !args.cassette.is_dir() {
        return Err(Failure::usage(format!(
            "{}: cassette_unreadable: not a folder",
            args.cassette.display()
        )));
    }
    let problems = toolmock_agent::cassette::check_cassette(&loaded, &args.cassette)
        .map_err(|e| Failure::usage(format!("{}: {e}", e.code())))?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut written = Ok(());
    for problem in &problems {
        written = written.and_then(|()| writeln!(out, "{problem}"));
    }
    let exchanges = toolmock_agent::cassette::count(&args.cassette)
        .map_err(|e| Failure::usage(format!("{}: {e}", e.code())))?;
    written = written.and_then(|()| {
        if problems.is_empty() {
            writeln!(
                out,
                "{}: ok: {exchanges} exchange(s)",
                args.cassette.display()
            )
        } else {
            writeln!(
                out,
                "{}: {} problem(s) in {exchanges} line(s)",
                args.cassette.display(),
                problems.len()
            )
        }
    });
    crate::output::written(written, "cannot write the output")?;
    Ok(u8::from(!problems.is_empty()))
}
