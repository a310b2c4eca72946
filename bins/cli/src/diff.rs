//! `toolmock diff`.

use crate::{Failure, input};
use clap::Args;
use serde_json::Value;
use std::io::Write;
use std::path::PathBuf;
use toolmock_schema::SchemaChange;

/// Compare two versions of an operation contract: did the hash change, and why?
///
/// Prints whether the contract hash changed and which parts did: the
/// identity, the description, and each changed path of the input and
/// output schemas (JSON pointers into the schema), so a user sees why a
/// saved mock went stale. Key order and whitespace never count; numbers
/// compare by value. With --json prints
/// {"hash_changed", "old_hash", "new_hash", "identity"?, "description"?,
///  "input_schema": [{"change", "path", "old"?, "new"?}], "output_schema": […]}.
///
/// Exits 0 when the hashes are equal, 1 when they differ, 2 when a file
/// cannot be read.
///
/// Example:
///   toolmock diff lookup.v1.contract.json lookup.v2.contract.json
///   hash changed: 3f1c…e9 -> 8a02…41
///   output_schema: changed /properties/visits/maximum: 100 -> 500
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct DiffArgs {
    /// The old contract (the one a saved mock was checked against).
    old: PathBuf,
    /// The new contract.
    new: PathBuf,
    /// Print the differences as one JSON object.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &DiffArgs) -> Result<u8, Failure> {
    let old = input::read_contract(&args.old)?;
    let new = input::read_contract(&args.new)?;
    let diff = toolmock_schema::diff(&old, &new)
        .map_err(|e| Failure::usage(format!("{}: {e}", e.code())))?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let written = if args.json {
        serde_json::to_writer(&mut out, &diff)
            .map_err(std::io::Error::other)
            .and_then(|()| writeln!(out))
    } else {
        write_human(&mut out, &diff)
    };
    crate::output::written(written, "cannot write the output")?;
    Ok(u8::from(diff.hash_changed))
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 120 {
        let cut: String = text.chars().take(117).collect();
        format!("{cut}...")
    } else {
        text
    }
}

fn write_human(out: &mut impl Write, diff: &toolmock_schema::ContractDiff) -> std::io::Result<()> {
    if !diff.hash_changed {
        return writeln!(out, "hash unchanged: {}", diff.old_hash);
    }
    writeln!(out, "hash changed: {} -> {}", diff.old_hash, diff.new_hash)?;
    if let Some((old, new)) = &diff.identity {
        writeln!(
            out,
            "identity: {}:{} -> {}:{}",
            old.source, old.name, new.source, new.name
        )?;
    }
    if let Some((old, new)) = &diff.description {
        writeln!(
            out,
            "description: {} -> {}",
            short(&Value::String(old.clone())),
            short(&Value::String(new.clone()))
        )?;
    }
    write_changes(out, "", diff)
}

/// Writes each changed path of the input and output schemas, one a line:
/// `INDENT{member}: added|removed|changed POINTER: …` (`toolmock diff`'s
/// lines; `toolmock verify` indents them under a changed contract).
pub(crate) fn write_changes(
    out: &mut impl Write,
    indent: &str,
    diff: &toolmock_schema::ContractDiff,
) -> std::io::Result<()> {
    for (member, changes) in [
        ("input_schema", &diff.input_schema),
        ("output_schema", &diff.output_schema),
    ] {
        for change in changes {
            let path = if change.path().is_empty() {
                "/"
            } else {
                change.path()
            };
            match change {
                SchemaChange::Added { new, .. } => {
                    writeln!(out, "{indent}{member}: added {path}: {}", short(new))?
                }
                SchemaChange::Removed { old, .. } => {
                    writeln!(out, "{indent}{member}: removed {path}: {}", short(old))?
                }
                SchemaChange::Changed { old, new, .. } => writeln!(
                    out,
                    "{indent}{member}: changed {path}: {} -> {}",
                    short(old),
                    short(new)
                )?,
            }
        }
    }
    Ok(())
}
