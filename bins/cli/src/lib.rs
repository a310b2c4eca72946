//! The `toolmock` command as a library: every subcommand of the CLI, and
//! the two entry points the Python package needs beside it.
//!
//! `bins/cli/src/main.rs` is only `main` over [`main()`]; the Python
//! package (`bindings/python`) links this library, so that the `toolmock`
//! command a wheel installs runs this very code — the same clap tree, the
//! same output, byte for byte, and the same exit codes — and so that
//! `toolmock.run` and `toolmock.serve` set up the embedded runtime exactly
//! as `toolmock run` and `toolmock serve` do ([`run_results`],
//! [`Background`]). It is not an API for other programs: the libraries
//! under `crates/` are.
//!
//! ```
//! // What `toolmock hash CONTRACT` does, from a caller holding argv:
//! let contract = std::env::temp_dir().join(format!("toolmock-cli-doc-{}.json", std::process::id()));
//! std::fs::write(&contract, r#"{"operation": {"source": "custom", "name": "ping"},
//!     "description": "", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}}"#)?;
//! let program = std::ffi::OsStr::new("toolmock");
//! assert_eq!(toolmock_cli::main([program, "hash".as_ref(), contract.as_os_str()]), 0);
//! std::fs::remove_file(contract)?;
//! // Exit 2: an unusable argument (clap's message on stderr).
//! assert_eq!(toolmock_cli::main(["toolmock", "hash", "--no-such-flag"]), 2);
//! # Ok::<(), std::io::Error>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use clap::{Parser, Subcommand};
use std::ffi::OsString;
use std::io::Write;

mod check;
mod check_cassette;
mod compare;
mod diff;
mod discover;
mod eval;
mod evidence;
mod generate;
mod hash;
mod import;
mod input;
mod normalize;
mod output;
mod record;
mod run;
mod serve;
mod submit;
mod verify;

pub use run::run_results;
pub use serve::Background;

/// Test AI agents against tool contracts with checked, deterministic mocks.
#[derive(Debug, Parser)]
#[command(name = "toolmock", version = VERSION, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Hash(hash::HashArgs),
    Check(check::CheckArgs),
    Eval(eval::EvalArgs),
    Normalize(normalize::NormalizeArgs),
    Discover(discover::DiscoverArgs),
    Generate(generate::GenerateArgs),
    Diff(diff::DiffArgs),
    Run(run::RunArgs),
    Serve(serve::ServeArgs),
    Submit(submit::SubmitArgs),
    Record(record::RecordArgs),
    Verify(verify::VerifyArgs),
    CheckCassette(check_cassette::CheckCassetteArgs),
    Import(import::ImportArgs),
    Compare(compare::CompareArgs),
    Evidence(evidence::EvidenceArgs),
}

toolmock_contract::problem_codes! {
    /// The codes the CLI prints itself (beyond those of the libraries).
    pub(crate) enum CliCode {
        /// `generate`: the contract's schemas cannot honestly be satisfied by
        /// a derived draft; the problems that follow say where.
        NeedsAuthoredMock => "needs_authored_mock",
        /// `evidence`: the case, the attempt or the run's base is not in
        /// the evidence folder.
        EvidenceNotFound => "evidence_not_found",
        /// `evidence`: an evidence file is not what `run --evidence`
        /// writes (not JSON, no `final_state`, an overlay of another form,
        /// a base of other fixtures than the attempt's).
        EvidenceInvalid => "evidence_invalid",
    }
}

/// A failure of the command itself (not a failed check or a failed call).
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    /// What to print on stderr.
    pub(crate) message: String,
    /// 2 for unusable arguments or unreadable files.
    pub(crate) exit: u8,
}

/// Why [`run_results`] or [`Background::start`] produced nothing. The
/// caller gives each its code (the Python package: `invalid_option`,
/// `invalid_simulation`, the library error's code or `command_failed`).
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The arguments are not the command's: clap's message, or a flag that
    /// does not apply to a library caller.
    #[error("{0}")]
    Options(String),
    /// The simulation file cannot be used: every problem, each in its file
    /// at its JSON pointer (what the command prints before exiting 2).
    #[error("{} problem(s): {}", .0.len(), .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Problems(Vec<toolmock_simulation::FileProblem>),
    /// The command failed otherwise: the code of the library error, when
    /// there is one (`storage_failed`, `unknown_case`, …), and what the
    /// command prints after `toolmock: `.
    #[error("{message}")]
    Failed {
        /// The library error's code.
        code: Option<&'static str>,
        /// The message.
        message: String,
    },
}

impl From<Failure> for Refusal {
    fn from(failure: Failure) -> Self {
        Refusal::Failed {
            code: None,
            message: failure.message,
        }
    }
}

/// One subcommand's flags (`P`, a parser without a program name) read from
/// `args`, as the command reads them; clap's message, plain, when they are
/// not the subcommand's.
fn parse_args<P, I, T>(command: &str, args: I) -> Result<P, Refusal>
where
    P: clap::Parser,
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    P::try_parse_from(args).map_err(|e| {
        Refusal::Options(format!(
            "the options are not those of `toolmock {command}`: {}",
            e.render()
        ))
    })
}

impl Failure {
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            exit: 2,
        }
    }
}

/// The version `toolmock --version` prints: the package's version and the
/// commit it was built from (`build.rs`: `TOOLMOCK_COMMIT`, else `git
/// rev-parse HEAD`, else `unknown`), e.g. `0.1.0 (commit 546125f3a2b1)`.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("TOOLMOCK_COMMIT"),
    ")"
);

/// Runs the command `args` names (`args[0]` is the program, as in
/// `std::env::args_os`) and returns its exit status: everything
/// `toolmock` does, printed on this process's stdout and stderr.
///
/// The usage lines always name the program `toolmock`, whatever `args[0]`
/// is (a wheel's console script starts as `python`).
pub fn main<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let mut args = args.into_iter().map(Into::into);
    let _program = args.next();
    let argv = std::iter::once(OsString::from("toolmock")).chain(args);
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        // What clap's own `exit` does, returned instead of exiting: help
        // and version on stdout with 0, a usage error on stderr with 2.
        Err(e) => {
            let _ = e.print();
            return u8::try_from(e.exit_code()).unwrap_or(2);
        }
    };
    let outcome = match cli.command {
        Command::Hash(args) => hash::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Eval(args) => eval::run(&args),
        Command::Normalize(args) => normalize::run(&args),
        Command::Discover(args) => discover::run(&args),
        Command::Generate(args) => generate::run(&args),
        Command::Diff(args) => diff::run(&args),
        Command::Run(args) => run::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::Submit(args) => submit::run(&args),
        Command::Record(args) => record::run(&args),
        Command::Verify(args) => verify::run(&args),
        Command::CheckCassette(args) => check_cassette::run(&args),
        Command::Import(args) => import::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::Evidence(args) => evidence::run(&args),
    };
    let code = match outcome {
        Ok(code) => code,
        Err(failure) => {
            let _ = writeln!(std::io::stderr(), "toolmock: {}", failure.message);
            failure.exit
        }
    };
    // A binary's runtime flushes stdout when `main` returns; a caller that
    // is not a binary's `main` (the Python package) would lose the tail.
    let _ = std::io::stdout().flush();
    code
}

#[cfg(test)]
mod error_codes {
    #[test]
    fn every_code_is_documented_and_every_documented_code_exists() {
        let doc = include_str!("../../../docs/error-codes.md");
        let codes = toolmock_contract::code_strings::<crate::CliCode>();
        toolmock_contract::check_documented_codes(doc, "toolmock", &codes)
            .unwrap_or_else(|e| panic!("{e}"));
    }
}
