//! What several commands print or write alike: problem reports and contract entries.

use crate::Failure;
use std::io::Write;
use std::path::Path;
use toolmock_contract::{ProblemCode, Problems};
use toolmock_schema::ContractEntry;

/// Prints every problem as `PREFIX: /json/pointer: code: message`, then
/// `PREFIX: N problem(s)`.
pub(crate) fn print_problems<C: ProblemCode>(
    out: &mut impl Write,
    prefix: &str,
    problems: &Problems<C>,
) -> std::io::Result<()> {
    for p in problems {
        writeln!(
            out,
            "{prefix}: {}: {}: {}",
            p.display_path(),
            p.code.as_str(),
            p.message
        )?;
    }
    let n = problems.len();
    writeln!(
        out,
        "{prefix}: {n} problem{}",
        if n == 1 { "" } else { "s" }
    )
}

/// What became of writing a command's output. A reader that closed the pipe
/// early (`toolmock … | head`) took what it wanted: that is not a failure of
/// the command, so the command ends quietly with its own exit code, as
/// `grep` and `cat` do. Any other write error is reported, with `what`.
pub(crate) fn written(result: std::io::Result<()>, what: &str) -> Result<(), Failure> {
    match result {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Failure::usage(format!("{what}: {e}")))
        }
        _ => Ok(()),
    }
}

/// Prints entries as a pretty JSON array and a newline.
pub(crate) fn print_entries(entries: &[ContractEntry]) -> Result<(), Failure> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let result = serde_json::to_writer_pretty(&mut out, entries)
        .map_err(std::io::Error::from)
        .and_then(|()| writeln!(out));
    written(result, "cannot write the output")
}

/// Writes each entry's contract to DIR/NAME.contract.json.
pub(crate) fn write_contracts<'a>(
    dir: &Path,
    entries: impl Iterator<Item = &'a ContractEntry>,
) -> Result<(), Failure> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::usage(format!("{}: cannot create: {e}", dir.display())))?;
    for entry in entries {
        let name = entry.contract["operation"]["name"]
            .as_str()
            .unwrap_or_default();
        if !is_safe_file_stem(name) {
            return Err(Failure::usage(format!(
                "the operation name {name:?} cannot be used as a file name; leave out --out"
            )));
        }
        let path = dir.join(format!("{name}.contract.json"));
        let mut text = serde_json::to_string_pretty(&entry.contract)
            .map_err(|e| Failure::usage(format!("cannot serialize {name}: {e}")))?;
        text.push('\n');
        std::fs::write(&path, text)
            .map_err(|e| Failure::usage(format!("{}: cannot write: {e}", path.display())))?;
    }
    Ok(())
}

fn is_safe_file_stem(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}
