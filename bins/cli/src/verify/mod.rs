//! `toolmock verify`: a simulation's mocks checked against the real tools
//! they stand for (docs/verify.md), through `toolmock_verify`.

mod junit;
mod table;

use crate::Failure;
use crate::run::print_problems;
use clap::{Args, ValueEnum};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use toolmock_contract::{Problem, pointer};
use toolmock_simulation::{FileProblem, Files};
use toolmock_verify::{Subject, VerifyCode, VerifyOptions};

/// Check a simulation's mocks against the real tools they stand for.
///
/// For every tool with a real tool (an MCP `server`, a custom operation's
/// `endpoint`, or its `verify` block's `server` — a URL or a stdio command —
/// and `openapi` document): compares each pinned contract with the real
/// tool's current one (unchanged, changed with the diff, gone), and, for the
/// operations its `verify` block marks safe (`"safe": true` or a list),
/// replays each example of the default variant (and of `verify.variants`),
/// each call of the block's `recordings` and each chain against the real
/// tool, comparing the answers by the block's matchers and validating each
/// real answer against the output schema. An operation not marked safe is
/// never called. See docs/verify.md.
///
/// PATH is a simulation file, or a folder holding simulation.json (such as
/// the folder `toolmock record emit` writes).
///
/// Prints a table (or, with --json, the report) and exits 0 when nothing
/// named by --fail-on was found, 1 when it was (default: a changed or gone
/// contract, or a divergence), 2 when the file or a flag is unusable (its
/// problems printed as FILE: /json/pointer: code: message) or a real tool
/// could not be reached.
///
/// Example:
///   toolmock verify rooms.json
///   toolmock verify rooms.json --sandbox-url rooms=http://staging:8765/mcp --json
///   toolmock verify rooms.json --fail-on divergence --junit verify.xml --propose drafts/
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct VerifyArgs {
    /// The simulation file, or a folder holding simulation.json.
    path: PathBuf,
    /// Print the report (JSON) instead of the table.
    #[arg(long)]
    json: bool,
    /// Also write JUnit XML (a testsuite per tool; a testcase per contract
    /// and per replayed call) to FILE.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// What makes the exit status 1: drift (a contract changed or gone),
    /// divergence (a replayed call's answer differs), both (the default) or
    /// none.
    #[arg(
        long,
        value_name = "WHAT",
        value_delimiter = ',',
        default_value = "drift,divergence"
    )]
    fail_on: Vec<FailOn>,
    /// Real calls in flight at once per real tool.
    #[arg(long, value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    concurrency: u32,
    /// How long one real call, one discovery or one OpenAPI fetch may take.
    #[arg(long, value_name = "SECS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    timeout: u64,
    /// Point TOOL at a staging copy: its MCP server becomes URL, or its
    /// operations' endpoints take URL's scheme, host and port (repeatable).
    #[arg(long, value_name = "TOOL=URL")]
    sandbox_url: Vec<String>,
    /// Write a checked draft revision for each diverged mock into DIR, its
    /// replayed examples the real answers, for a person to review.
    #[arg(long, value_name = "DIR")]
    propose: Option<PathBuf>,
    /// How much of a real tool's answer (and of an OpenAPI document) is read.
    #[command(flatten)]
    real: toolmock_discovery::RealToolFlags,
}

/// What makes the exit status 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FailOn {
    /// A contract changed or is gone.
    Drift,
    /// A replayed call's answer differs from the mock's.
    Divergence,
    /// Nothing (only an unusable input or an unreachable tool fails).
    None,
}

pub(crate) fn run(args: &VerifyArgs) -> Result<u8, Failure> {
    let file = if args.path.is_dir() {
        args.path.join("simulation.json")
    } else {
        args.path.clone()
    };
    if args.path.is_dir() && !file.is_file() {
        return Err(Failure::usage(format!(
            "{}: the folder holds no simulation.json (give a simulation file, or the folder `toolmock record emit` wrote)",
            args.path.display()
        )));
    }
    let name = file.display().to_string();
    let bytes =
        std::fs::read(&file).map_err(|e| Failure::usage(format!("cannot read {name}: {e}")))?;
    let base = file.parent().map(Path::to_path_buf).unwrap_or_default();
    // Read as for the service: what only an agent or the API plays (an
    // external driver, library tools) is not verify's concern.
    let loaded =
        match toolmock_simulation::read_slice(&bytes, &name, &Files::ForService(base.clone()))
            .and_then(toolmock_simulation::Loaded::into_result)
        {
            Ok(loaded) => loaded,
            Err(problems) => {
                print_problems(&name, &problems);
                return Ok(2);
            }
        };
    let mut subjects = match toolmock_verify::subjects(&loaded, &base) {
        Ok(subjects) => subjects,
        Err(problems) => {
            print_problems(&name, &problems);
            return Ok(2);
        }
    };
    let problems = sandbox(&mut subjects, &args.sandbox_url, &name);
    if !problems.is_empty() {
        print_problems(&name, &problems);
        return Ok(2);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::usage(format!("cannot start the runtime: {e}")))?;
    let options = VerifyOptions {
        concurrency: args.concurrency as usize,
        timeout: Duration::from_secs(args.timeout),
        max_response_bytes: args.real.real_max_response_bytes,
    };
    let began = Instant::now();
    let report = runtime.block_on(toolmock_verify::verify(&subjects, &options));
    let took = began.elapsed();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let written = if args.json {
        serde_json::to_writer(&mut out, &report)
            .map_err(std::io::Error::other)
            .and_then(|()| writeln!(out))
    } else {
        table::write(&mut out, &name, &report)
    };
    crate::output::written(written, "cannot write the report")?;
    if let Some(path) = &args.junit {
        std::fs::write(path, junit::render(&name, &report))
            .map_err(|e| Failure::usage(format!("cannot write {}: {e}", path.display())))?;
    }
    let stderr = std::io::stderr();
    let mut err = stderr.lock();
    let _ = writeln!(err, "verified in {:.3} s", took.as_secs_f64());
    if let Some(dir) = &args.propose {
        let proposals = toolmock_verify::propose(&report, &subjects, dir)
            .map_err(|e| Failure::usage(e.to_string()))?;
        for p in &proposals {
            let written = p
                .definition
                .as_deref()
                .map_or(String::new(), |d| format!(" {}", dir.join(d).display()));
            let _ = writeln!(
                err,
                "proposed {}/{}: {}{written}: {}",
                p.tool, p.operation, p.outcome, p.message
            );
        }
    }
    Ok(exit(&report, &args.fail_on))
}

/// 2 when something could not be checked; 1 when what `fail_on` names was found.
fn exit(report: &toolmock_verify::Report, fail_on: &[FailOn]) -> u8 {
    if report.failed() {
        return 2;
    }
    let drift = fail_on.contains(&FailOn::Drift) && report.drifted();
    let divergence = fail_on.contains(&FailOn::Divergence) && report.diverged();
    u8::from(drift || divergence)
}

/// Applies each `--sandbox-url TOOL=URL`; every problem listed.
fn sandbox(subjects: &mut [Subject], flags: &[String], file: &str) -> Vec<FileProblem> {
    let mut problems = Vec::new();
    for (i, flag) in flags.iter().enumerate() {
        let at = pointer::index("/sandbox-url", i);
        let Some((tool, url)) = flag.split_once('=') else {
            problems.push(FileProblem::new(
                file,
                Problem::new(
                    VerifyCode::InvalidSandboxUrl,
                    at,
                    format!("{flag:?} is not TOOL=URL"),
                ),
            ));
            continue;
        };
        let Some(subject) = subjects.iter_mut().find(|s| s.tool == tool) else {
            problems.push(FileProblem::new(
                file,
                Problem::new(
                    VerifyCode::UnknownTool,
                    at,
                    format!("no tool {tool:?} with a real tool to check"),
                ),
            ));
            continue;
        };
        if let Err(why) = subject.point_at(url) {
            problems.push(FileProblem::new(
                file,
                Problem::new(VerifyCode::InvalidSandboxUrl, at, why),
            ));
        }
    }
    problems
}
