//! `toolmock`: hash operation contracts, check mock definitions, evaluate calls.
//!
//! A thin shell over `toolmock-contract`, `toolmock-evaluator`,
//! `toolmock-schema` and `toolmock-discovery`. The forms of docs/spec.md §11 (`hash`,
//! `check`, `eval`) are stable and driven by the conformance vectors.

use clap::{Parser, Subcommand};
use std::io::Write;
use std::process::ExitCode;

// Rendering results is allocation-bound; mimalloc makes a call about a third
// cheaper than the system allocator (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod check;
mod diff;
mod discover;
mod eval;
mod generate;
mod hash;
mod input;
mod normalize;
mod output;
mod record;
mod run;
mod serve;
mod submit;
mod verify;

/// Test AI agents against tool contracts with checked, deterministic mocks.
#[derive(Debug, Parser)]
#[command(name = "toolmock", version, about, long_about = None, propagate_version = true)]
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
}

toolmock_contract::problem_codes! {
    /// The codes the CLI prints itself (beyond those of the libraries).
    pub(crate) enum CliCode {
        /// `generate`: the contract's schemas cannot honestly be satisfied by
        /// a derived draft; the problems that follow say where.
        NeedsAuthoredMock => "needs_authored_mock",
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

impl Failure {
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            exit: 2,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
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
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            let _ = writeln!(std::io::stderr(), "toolmock: {}", failure.message);
            ExitCode::from(failure.exit)
        }
    }
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
