//! `toolmock run`: a whole simulation on the embedded in-memory runtime.

pub(crate) mod evidence;
pub(crate) mod junit;
pub(crate) mod table;

use crate::Failure;
use clap::Args;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;
use toolmock_discovery::RealExecutor;
use toolmock_runtime::backend::Catalog;
use toolmock_runtime::model::SimulationMode;
use toolmock_runtime::{Dispatcher, MemoryStore};
use toolmock_simulation::{
    self as simulation, FileProblem, RunError, RunOptions, RunResults, SequenceClock,
    VirtualSleeper,
};

/// Run a simulation file: every case's attempts against pinned mocks, on the
/// embedded in-memory runtime (no database).
///
/// Prints a table of cases and attempts (or, with --json, the results
/// document) and the coverage of every pinned definition. Exit status: 0 when
/// every attempt ended as its case expects (or, with --min-pass-rate, when
/// every case's pass rate reaches it), 1 otherwise, 2 when the file is
/// unusable (its problems are printed as FILE: /json/pointer: code: message),
/// 3 when --max-tokens or --max-cost ran out (attempts that needed another
/// model request ended harness_error, budget_exhausted).
///
/// delay_ms runs on a virtual clock: it is summed per attempt and reported,
/// not slept, unless --real-delays (or the simulation's "real_delays": true).
///
/// A simulation with "mode": "real_tools" executes its calls through their
/// real handlers (an MCP tool's server, a custom operation's HTTP endpoint,
/// http_request effect nodes); it is refused when any has none
/// (docs/simulations.md, "Real-tools runs").
///
/// A case whose driver is {"type": "model"} is played by the model at
/// --model-url (an OpenAI-compatible endpoint); a judge rubric is graded by
/// --judge-model (docs/agents.md).
///
/// Example:
///   toolmock run fixtures/healthplus/simulation.json
///   toolmock run sim.json --jobs 8 --json > results.json --junit junit.xml
///   toolmock run agent.json --model-url http://127.0.0.1:11434/v1 --model qwen2.5:7b
///   toolmock run agent.json --cassette cassettes --cassette-mode replay
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct RunArgs {
    /// The simulation file.
    simulation: PathBuf,
    /// Attempts run at once (default: the number of cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    jobs: Option<u32>,
    /// Print the results document (JSON) instead of the table.
    #[arg(long)]
    json: bool,
    /// Also write JUnit XML (one testcase per attempt) to FILE.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Also write each attempt's evidence, tool input errors and harness
    /// errors as JSON Lines under DIR.
    #[arg(long, value_name = "DIR")]
    evidence: Option<PathBuf>,
    /// Validate everything (schema, definitions, the start) without running.
    #[arg(long)]
    check: bool,
    /// Pass when every case's pass rate (attempts as expected / attempts) is
    /// at least RATE (0 to 1), instead of requiring every attempt.
    #[arg(long, value_name = "RATE")]
    min_pass_rate: Option<f64>,
    /// Sleep each call's delay_ms for real instead of on the virtual clock.
    #[arg(long)]
    real_delays: bool,
    /// The model endpoints (docs/agents.md), never from the simulation file
    /// and never written to a report or the evidence.
    #[command(flatten)]
    models: toolmock_agent::ModelFlags,
    /// The model cassette: record the model's and the judge's exchanges, or
    /// replay them offline (docs/cassettes.md).
    #[command(flatten)]
    cassette: toolmock_agent::CassetteFlags,
    /// A model's price per million tokens, MODEL=IN,OUT (repeatable, e.g.
    /// --price gpt-4.1-mini=0.4,1.6): the usage of the requests of the
    /// model (--model, --judge-model, or the cassette's) gets a cost.
    #[arg(long, value_name = "MODEL=IN,OUT", value_parser = toolmock_agent::parse_price)]
    price: Vec<(String, simulation::Price)>,
    /// The most model tokens (prompt plus completion, as the endpoint
    /// reports them) the run may spend; then no new request is sent and the
    /// attempts that need one end harness_error (budget_exhausted). Replayed
    /// answers cost nothing.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_tokens: Option<u64>,
    /// The most the run's model requests may cost, priced by --price (which
    /// it needs); then as --max-tokens.
    #[arg(long, value_name = "X")]
    max_cost: Option<f64>,
    /// How much of a real tool's answer is read (real-tools mode).
    #[command(flatten)]
    real: toolmock_discovery::RealToolFlags,
}

/// How long one real call of a real-tools run may take.
const REAL_CALL_TIMEOUT: Duration = Duration::from_secs(30);

pub(crate) fn print_problems(file: &str, problems: &[FileProblem]) {
    let stderr = std::io::stderr();
    let mut err = stderr.lock();
    for p in problems {
        let _ = writeln!(err, "{p}");
    }
    let n = problems.len();
    let _ = writeln!(err, "{file}: {n} problem{}", if n == 1 { "" } else { "s" });
}

pub(crate) fn run(args: &RunArgs) -> Result<u8, Failure> {
    Report {
        json: args.json,
        junit: None,
        min_pass_rate: args.min_pass_rate,
    }
    .validate()?;
    let file = args.simulation.display().to_string();
    let (results, jobs, elapsed, refused) = match execute(args, true)? {
        Executed::Ran {
            results,
            jobs,
            elapsed,
            refused,
        } => (results, jobs, elapsed, refused),
        Executed::Checked { cases, pinned } => {
            crate::output::written(
                writeln!(
                    std::io::stdout(),
                    "{file}: ok: {cases} case{}, {pinned} operation{} pinned",
                    if cases == 1 { "" } else { "s" },
                    if pinned == 1 { "" } else { "s" }
                ),
                "cannot write the output",
            )?;
            return Ok(0);
        }
        Executed::Refused(problems) => {
            print_problems(&file, &problems);
            return Ok(2);
        }
        Executed::Failed(error) => {
            return Err(Failure {
                message: format!("{file}: {}: {error}", error.code()),
                exit: 1,
            });
        }
    };
    let report = Report {
        json: args.json,
        junit: args.junit.as_deref(),
        min_pass_rate: args.min_pass_rate,
    };
    report.print(&results)?;
    let _ = writeln!(
        std::io::stderr(),
        "toolmock: ran {} attempt{} in {:.3} s with {jobs} job{}",
        results.summary.attempts,
        if results.summary.attempts == 1 {
            ""
        } else {
            "s"
        },
        elapsed.as_secs_f64(),
        if jobs == 1 { "" } else { "s" },
    );
    report.write_junit(&results)?;
    if let Some(dir) = &args.evidence {
        evidence::write(dir, &results)?;
    }
    if refused > 0 {
        let _ = writeln!(
            std::io::stderr(),
            "toolmock: the budget ran out: {refused} model request(s) were not sent (budget_exhausted); exit 3"
        );
        return Ok(3);
    }
    Ok(report.exit_code(&results))
}

/// `toolmock run`'s results document for a caller that is not the command
/// (the Python package's `toolmock.run`): `args` are the command's
/// arguments after `run` (the file, then flags), parsed by the same clap
/// definition; the same load, runtime, dispatcher and runner; `--junit`
/// and `--evidence` written as the command writes them. Nothing is printed.
/// `--json`, `--check` and `--min-pass-rate` are refused: they choose what
/// the command prints and how it exits.
pub fn run_results<I, T>(args: I) -> Result<RunResults, crate::Refusal>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args = crate::parse_args::<RunOnly, _, _>("run", args)?.args;
    if args.json || args.check || args.min_pass_rate.is_some() {
        return Err(crate::Refusal::Options(
            "--json, --check and --min-pass-rate choose what `toolmock run` prints and how it exits; the results document is returned whole".into(),
        ));
    }
    let results = match execute(&args, false)? {
        Executed::Ran { results, .. } => *results,
        Executed::Refused(problems) => return Err(crate::Refusal::Problems(problems)),
        Executed::Failed(error) => {
            return Err(crate::Refusal::Failed {
                code: Some(error.code()),
                message: format!("{}: {}: {error}", args.simulation.display(), error.code()),
            });
        }
        // Only `--check` checks without running, and it was refused above.
        Executed::Checked { .. } => {
            return Err(crate::Refusal::Options("--check does not run".into()));
        }
    };
    let report = Report {
        json: true,
        junit: args.junit.as_deref(),
        min_pass_rate: None,
    };
    report.write_junit(&results)?;
    if let Some(dir) = &args.evidence {
        evidence::write(dir, &results)?;
    }
    Ok(results)
}

/// `toolmock run`'s flags alone, for [`run_results`].
#[derive(Debug, clap::Parser)]
#[command(name = "toolmock run", no_binary_name = true)]
struct RunOnly {
    #[command(flatten)]
    args: RunArgs,
}

/// What a run came to, before anything is reported.
enum Executed {
    /// The attempts ran, with so many jobs, in so much wall time; so many
    /// model requests were refused by the budget.
    Ran {
        results: Box<RunResults>,
        jobs: usize,
        elapsed: Duration,
        refused: u64,
    },
    /// `--check` passed: so many cases, so many operations pinned.
    Checked { cases: usize, pinned: usize },
    /// The file cannot run: every problem (exit 2).
    Refused(Vec<FileProblem>),
    /// The run failed otherwise (exit 1).
    Failed(RunError),
}

/// Loads the file, sets up the embedded runtime and runs it (or, for
/// `--check` or a file with problems, checks it whole, so that every
/// problem — the loader's, the definitions', the start's — is listed at
/// once). `progress`: a progress bar when on terminals.
fn execute(args: &RunArgs, progress: bool) -> Result<Executed, Failure> {
    let mut models = args
        .models
        .models()
        .map_err(|e| Failure::usage(e.to_string()))?;
    let budget = budgeted(args, &mut models)?;
    let (
        toolmock_agent::Models {
            model,
            judge,
            user,
            attempt_timeout,
        },
        cassette,
    ) = args
        .cassette
        .apply(models)
        .map_err(|e| Failure::usage(e.to_string()))?;
    let loaded = match simulation::read_file(&args.simulation) {
        Ok(loaded) => loaded,
        Err(problems) => return Ok(Executed::Refused(problems)),
    };
    let jobs = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j as usize,
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(jobs)
        .enable_all()
        .build()
        .map_err(|e| Failure::usage(format!("cannot start the runtime: {e}")))?;
    let real_delays = args.real_delays || loaded.simulation.document.real_delays;
    let dispatcher = embedded_dispatcher(&loaded.simulation, real_delays, args.real);
    if args.check || !loaded.problems.is_empty() {
        let checked = runtime.block_on(async {
            let tenant = dispatcher.backend().create_tenant("toolmock-run").await?;
            simulation::check(&dispatcher, tenant, &loaded).await
        });
        return match checked {
            Ok(pinned) => Ok(Executed::Checked {
                cases: loaded.simulation.document.cases.len(),
                pinned,
            }),
            Err(error) => Ok(ended(error)),
        };
    }
    let loaded = Arc::new(loaded.simulation);
    let began = Instant::now();
    let outcome: Result<RunResults, RunError> = runtime.block_on(async {
        let tenant = dispatcher.backend().create_tenant("toolmock-run").await?;
        let total: u64 = loaded
            .document
            .cases
            .iter()
            .map(|c| u64::from(c.attempts.unwrap_or(loaded.document.attempts)))
            .sum();
        let bar = if progress { progress_bar(total) } else { None };
        let tick = bar.clone();
        let results = simulation::run(
            dispatcher.clone(),
            tenant,
            loaded.clone(),
            &RunOptions {
                jobs,
                keep_raw: args.evidence.is_some(),
                // Nothing is read back from the embedded store after the run.
                release_finished: true,
                model,
                judge,
                user,
                attempt_timeout: Some(attempt_timeout),
            },
            Arc::new(move || {
                if let Some(bar) = &tick {
                    bar.inc(1);
                }
            }),
        )
        .await;
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        results
    });
    if let Some(cassette) = &cassette {
        save_cassette(cassette)?;
    }
    match outcome {
        Ok(mut results) => {
            price(args, cassette.as_deref(), &mut results);
            Ok(Executed::Ran {
                results: Box::new(results),
                jobs,
                elapsed: began.elapsed(),
                refused: budget.map_or(0, |b| b.refused()),
            })
        }
        Err(error) => Ok(ended(error)),
    }
}

/// The price `--price` gives `model`, if any (the last one given wins, as
/// with any repeated flag).
fn price_of(args: &RunArgs, model: Option<&str>) -> Option<simulation::Price> {
    toolmock_agent::price_of(&args.price, model)
}

/// The run's budget (`--max-tokens`, `--max-cost`), with the live models
/// put under it (a cassette then wraps them: replays cost nothing).
fn budgeted(
    args: &RunArgs,
    models: &mut toolmock_agent::Models,
) -> Result<Option<Arc<toolmock_agent::Budget>>, Failure> {
    if let Some(max) = args.max_cost
        && !(max.is_finite() && max > 0.0)
    {
        return Err(Failure::usage("--max-cost must be a positive number"));
    }
    if args.max_cost.is_some() && args.price.is_empty() {
        return Err(Failure::usage(
            "--max-cost needs --price for the models it counts",
        ));
    }
    let Some(budget) = toolmock_agent::Budget::new(args.max_tokens, args.max_cost) else {
        return Ok(None);
    };
    if let Some(model) = models.model.take() {
        let price = price_of(args, args.models.model.as_deref());
        models.model = Some(budget.wrap(model, price));
    }
    if let Some(judge) = models.judge.take() {
        let price = price_of(args, args.models.judge_model.as_deref());
        models.judge = Some(budget.wrap(judge, price));
    }
    if let Some(user) = models.user.take() {
        let price = price_of(args, user_model_name(args).as_deref());
        models.user = Some(budget.wrap(user, price));
    }
    Ok(Some(budget))
}

/// Prices the run's model requests by `--price`: each role's model is the
/// one the flags name, else the one the cassette recorded.
fn price(args: &RunArgs, cassette: Option<&toolmock_agent::Cassette>, results: &mut RunResults) {
    if args.price.is_empty() {
        return;
    }
    use simulation::ModelRole;
    let name = |role: ModelRole| -> Option<String> {
        let flag = match role {
            ModelRole::Agent => args.models.model.clone(),
            ModelRole::Judge => args.models.judge_model.clone(),
            ModelRole::User => user_model_name(args),
        };
        flag.or_else(|| cassette.and_then(|c| c.model_name(role)))
    };
    let names = [
        name(ModelRole::Agent),
        name(ModelRole::Judge),
        name(ModelRole::User),
    ];
    results.price(&|role| {
        let index = match role {
            ModelRole::Agent => 0,
            ModelRole::Judge => 1,
            ModelRole::User => 2,
        };
        price_of(args, names[index].as_deref())
    });
}

/// The simulated user's model name: `--user-model`, else the agent's.
fn user_model_name(args: &RunArgs) -> Option<String> {
    args.models
        .user
        .user_model
        .clone()
        .or_else(|| args.models.model.clone())
}

/// Writes what a run recorded into its cassette and says on stderr what it
/// replayed and recorded (stdout stays what the run printed).
pub(crate) fn save_cassette(cassette: &toolmock_agent::Cassette) -> Result<(), Failure> {
    let saved = cassette.save().map_err(|e| Failure {
        message: format!("{}: {e}", e.code()),
        exit: 1,
    })?;
    let _ = writeln!(
        std::io::stderr(),
        "toolmock: cassette ({}): {} exchange(s) replayed, {} recorded",
        cassette.mode().as_str(),
        saved.replayed,
        saved.recorded
    );
    Ok(())
}

/// The embedded runtime's dispatcher for a loaded simulation, as `run` and
/// `serve` set it up: in memory, the sequence clock, delays on the virtual
/// clock unless `real_delays`, and — only for an explicit `real_tools`
/// simulation — the real handlers.
pub(crate) fn embedded_dispatcher(
    loaded: &simulation::LoadedSimulation,
    real_delays: bool,
    real: toolmock_discovery::RealToolFlags,
) -> Arc<Dispatcher<MemoryStore>> {
    let mut dispatcher =
        Dispatcher::new(MemoryStore::new()).with_clock(Arc::new(SequenceClock::default()));
    // The dispatcher sleeps for real unless told otherwise.
    if !real_delays {
        dispatcher = dispatcher.with_sleeper(Arc::new(VirtualSleeper));
    }
    Arc::new(with_real_tools(dispatcher, loaded, real))
}

/// `dispatcher` calling a real-tools simulation's real handlers (each call
/// within 30 s, each answer read up to `real`'s limit); any other
/// simulation's dispatcher unchanged. `toolmock run`'s and `serve`'s.
pub(crate) fn with_real_tools(
    dispatcher: Dispatcher<MemoryStore>,
    loaded: &simulation::LoadedSimulation,
    real: toolmock_discovery::RealToolFlags,
) -> Dispatcher<MemoryStore> {
    if loaded.document.mode != SimulationMode::RealTools {
        return dispatcher;
    }
    dispatcher.with_executor(Arc::new(
        RealExecutor::new(
            simulation::real_handlers(loaded).operations,
            REAL_CALL_TIMEOUT,
        )
        .with_max_response_bytes(real.real_max_response_bytes),
    ))
}

/// How a results document is reported: by `toolmock run` and, for a run on
/// the API, by `toolmock submit` — the same table, JSON, JUnit and exit code.
pub(crate) struct Report<'a> {
    /// The results document instead of the table.
    pub(crate) json: bool,
    /// Where to write JUnit XML too.
    pub(crate) junit: Option<&'a std::path::Path>,
    /// Pass on every case's pass rate instead of every attempt.
    pub(crate) min_pass_rate: Option<f64>,
}

impl Report<'_> {
    /// Refuses a `--min-pass-rate` outside 0 to 1.
    pub(crate) fn validate(&self) -> Result<(), Failure> {
        if let Some(rate) = self.min_pass_rate
            && !(0.0..=1.0).contains(&rate)
        {
            return Err(Failure::usage("--min-pass-rate must lie between 0 and 1"));
        }
        Ok(())
    }

    /// Prints the table, or the results document with `--json`, on stdout.
    pub(crate) fn print(&self, results: &RunResults) -> Result<(), Failure> {
        let stdout = std::io::stdout();
        // Stdout is line-buffered: the results document has a line per value.
        let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
        let result = if self.json {
            serde_json::to_writer_pretty(&mut out, results)
                .map_err(std::io::Error::from)
                .and_then(|()| writeln!(out))
        } else {
            out.write_all(table::render(results).as_bytes())
        }
        .and_then(|()| out.flush());
        crate::output::written(result, "cannot write the output")
    }

    /// Writes the JUnit XML, when asked for.
    pub(crate) fn write_junit(&self, results: &RunResults) -> Result<(), Failure> {
        if let Some(path) = self.junit {
            std::fs::write(path, junit::render(results))
                .map_err(|e| Failure::usage(format!("{}: cannot write: {e}", path.display())))?;
        }
        Ok(())
    }

    /// 0 when every attempt ended as its case expects (or every case met
    /// `--min-pass-rate`), else 1.
    pub(crate) fn exit_code(&self, results: &RunResults) -> u8 {
        let ok = match self.min_pass_rate {
            Some(rate) => results.cases.iter().all(|c| c.pass_rate >= rate),
            None => results.ok,
        };
        if ok { 0 } else { 1 }
    }
}

/// A run that produced no results: its problems, or why it failed.
fn ended(error: RunError) -> Executed {
    match error {
        RunError::Problems(problems) => Executed::Refused(problems),
        other => Executed::Failed(other),
    }
}

/// A progress bar on stderr when both stdout and stderr are terminals; none
/// when output is piped or redirected.
pub(crate) fn progress_bar(total: u64) -> Option<indicatif::ProgressBar> {
    if !(std::io::stderr().is_terminal() && std::io::stdout().is_terminal()) {
        return None;
    }
    let bar = indicatif::ProgressBar::new(total);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} attempts {elapsed}")
    {
        bar.set_style(style);
    }
    Some(bar)
}
