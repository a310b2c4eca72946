//! `toolmock submit FILE --api URL`: a simulation file run by the service
//! instead of the embedded runtime. The file is inlined (every manifest,
//! contract list and definition it names read in place), started with
//! `POST /api/simulations`, followed over its events stream until every
//! attempt has finished, and its results document — built by the API from
//! what PostgreSQL recorded — is reported exactly as `toolmock run` reports
//! its own: the same table, `--json`, `--junit` and exit code.

use crate::Failure;
use crate::run::{Report, print_problems, progress_bar};
use clap::Args;
use serde_json::Value;
use std::collections::HashSet;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use toolmock_simulation::RunResults;

/// Run a simulation file on a toolmock API (and its workers).
///
/// Reports as `toolmock run` does, with its exit status: 3 when the
/// simulation's budget (--max-tokens, --max-cost) ran out.
#[derive(Debug, Args)]
pub(crate) struct SubmitArgs {
    /// The simulation file (files it names are sent inline).
    simulation: PathBuf,
    /// The API's base URL, e.g. `http://127.0.0.1:8080`.
    #[arg(long, env = "TOOLMOCK_API", value_name = "URL")]
    api: String,
    /// A bearer token with `AIManager:RunSimulations` (`toolmock-api token`).
    #[arg(
        long,
        env = "TOOLMOCK_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    token: String,
    /// Print the results document (JSON) instead of the table.
    #[arg(long)]
    json: bool,
    /// Also write JUnit XML (one testcase per attempt) to FILE.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Pass when every case's pass rate is at least RATE (0 to 1).
    #[arg(long, value_name = "RATE")]
    min_pass_rate: Option<f64>,
    /// Give up waiting for the attempts to finish after SECS seconds, at
    /// most a week (the simulation goes on running on the service).
    #[arg(long, value_name = "SECS", default_value_t = 3600,
          value_parser = clap::value_parser!(u64).range(1..=604_800))]
    timeout: u64,
    /// The model cassette the workers replay from and record into; what
    /// they record is written back into DIR (docs/cassettes.md).
    #[command(flatten)]
    cassette: toolmock_agent::CassetteFlags,
    /// The most model tokens (prompt plus completion) the simulation may
    /// spend, over all its workers; then no new request is sent and the
    /// attempts that need one end harness_error (budget_exhausted), exit 3.
    /// Without it, the tenant's default (if any). Replayed answers cost
    /// nothing.
    #[arg(long, env = "TOOLMOCK_MAX_TOKENS", value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=i64::MAX as u64))]
    max_tokens: Option<u64>,
    /// The most the simulation's model requests may cost, in the unit of
    /// the workers' --price; then as --max-tokens.
    #[arg(long, env = "TOOLMOCK_MAX_COST", value_name = "X")]
    max_cost: Option<f64>,
}

pub(crate) fn run(args: &SubmitArgs) -> Result<u8, Failure> {
    let report = Report {
        json: args.json,
        junit: args.junit.as_deref(),
        min_pass_rate: args.min_pass_rate,
    };
    report.validate()?;
    if let Some(max) = args.max_cost
        && !(max.is_finite() && max > 0.0)
    {
        return Err(Failure::usage("--max-cost must be a positive number"));
    }
    let file = args.simulation.display().to_string();
    let mut document = match toolmock_simulation::inline_file(&args.simulation) {
        Ok(document) => document,
        Err(problems) => {
            print_problems(&file, &problems);
            return Ok(2);
        }
    };
    let cassette = cassette_member(&args.cassette)?;
    if let (Some(member), Some(object)) = (&cassette, document.as_object_mut()) {
        object.insert("cassette".into(), member.clone());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::usage(format!("cannot start the runtime: {e}")))?;
    let began = Instant::now();
    let api = Api {
        base: args.api.trim_end_matches('/').to_owned(),
        token: args.token.clone(),
        client: reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| Failure::usage(format!("cannot build an HTTP client: {e}")))?,
    };
    let deadline = began + Duration::from_secs(args.timeout);
    let results = runtime.block_on(async {
        let budget = (args.max_tokens, args.max_cost);
        let started = match api.start(&document, budget).await? {
            Started::Yes(started) => started,
            Started::Refused(problems) => {
                print_refusal(&file, &problems);
                return Ok(None);
            }
        };
        api.follow(&started, deadline).await?;
        let results = api.results(&started.id, deadline).await?;
        if let (Some(dir), Some(member)) = (&args.cassette.cassette, &cassette)
            && member["mode"] != "replay"
        {
            api.save_cassette(&started.id, dir).await?;
        }
        Ok::<_, Failure>(Some(results))
    })?;
    let Some(results) = results else {
        return Ok(2);
    };
    report.print(&results)?;
    let _ = writeln!(
        std::io::stderr(),
        "toolmock: the API ran {} attempt{} in {:.3} s",
        results.summary.attempts,
        if results.summary.attempts == 1 {
            ""
        } else {
            "s"
        },
        began.elapsed().as_secs_f64(),
    );
    report.write_junit(&results)?;
    let exhausted = results
        .cases
        .iter()
        .flat_map(|c| &c.attempts)
        .filter(|a| {
            a.harness_errors
                .iter()
                .any(|e| e.code == "budget_exhausted")
        })
        .count();
    if exhausted > 0 {
        let _ = writeln!(
            std::io::stderr(),
            "toolmock: the simulation's budget ran out: {exhausted} attempt(s) ended budget_exhausted; exit 3"
        );
        return Ok(3);
    }
    Ok(report.exit_code(&results))
}

/// The start's `cassette` member from `--cassette DIR` and
/// `--cassette-mode` (default `replay`): the mode and every exchange DIR
/// holds (none when it does not exist yet).
fn cassette_member(flags: &toolmock_agent::CassetteFlags) -> Result<Option<Value>, Failure> {
    let Some(dir) = &flags.cassette else {
        return match flags.cassette_mode {
            Some(_) => Err(Failure::usage("--cassette-mode needs --cassette")),
            None => Ok(None),
        };
    };
    let mode = flags
        .cassette_mode
        .unwrap_or(toolmock_agent::CassetteMode::Replay);
    let exchanges = toolmock_agent::cassette::read_dir(dir)
        .map_err(|e| Failure::usage(format!("{}: {e}", e.code())))?;
    let exchanges: Vec<Value> = exchanges
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()
        .map_err(|e| Failure::usage(format!("cannot send the cassette: {e}")))?;
    Ok(Some(
        serde_json::json!({"mode": mode.as_str(), "exchanges": exchanges}),
    ))
}

struct Api {
    base: String,
    token: String,
    client: reqwest::Client,
}

struct StartedSimulation {
    id: String,
    attempts: usize,
}

enum Started {
    Yes(StartedSimulation),
    /// 422: the document's problems, each `{code, path, message}`.
    Refused(Value),
}

/// A failure talking to the API: exit 1, as a run that could not finish.
fn unreachable(what: &str, error: impl std::fmt::Display) -> Failure {
    Failure {
        message: format!("{what}: {error}"),
        exit: 1,
    }
}

/// An error answer of the API, as `CODE: MESSAGE (HTTP STATUS)`.
fn refused(what: &str, status: reqwest::StatusCode, body: &Value) -> Failure {
    let code = body["error"]["code"].as_str().unwrap_or("unknown");
    let message = body["error"]["message"].as_str().unwrap_or("no message");
    Failure {
        message: format!("{what}: {code}: {message} (HTTP {})", status.as_u16()),
        exit: 1,
    }
}

impl Api {
    /// `GET {base}{path}` with the token; an unreachable API is a failure
    /// that names the URL.
    async fn get(&self, path: &str) -> Result<(String, reqwest::Response), Failure> {
        let url = format!("{}{path}", self.base);
        let response = self
            .client
            .get(&url)
            .bearer_auth(&self.token)
            .send()
            .await
            .map_err(|e| unreachable(&format!("cannot reach {url}"), e))?;
        Ok((url, response))
    }

    /// Starts `document` under the budget (`max_tokens`, `max_cost`) given.
    async fn start(
        &self,
        document: &Value,
        (max_tokens, max_cost): (Option<u64>, Option<f64>),
    ) -> Result<Started, Failure> {
        // (Numbers only: nothing in the query needs escaping; a float's
        // text never has an exponent.)
        let query: Vec<String> = [
            max_tokens.map(|max| format!("max_tokens={max}")),
            max_cost.map(|max| format!("max_cost={max}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        let url = match query.is_empty() {
            true => format!("{}/api/simulations", self.base),
            false => format!("{}/api/simulations?{}", self.base, query.join("&")),
        };
        let response = self
            .client
            .post(&url)
            .bearer_auth(&self.token)
            .json(document)
            .send()
            .await
            .map_err(|e| unreachable(&format!("cannot reach the API at {url}"), e))?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        if status == reqwest::StatusCode::UNPROCESSABLE_ENTITY {
            return Ok(Started::Refused(body));
        }
        if !status.is_success() {
            return Err(refused("the API refused the start", status, &body));
        }
        let id = body["id"]
            .as_str()
            .ok_or_else(|| unreachable("the start's answer", "it has no simulation id"))?
            .to_owned();
        let attempts = body["attempts"].as_array().map_or(0, Vec::len);
        Ok(Started::Yes(StartedSimulation { id, attempts }))
    }

    /// Reads the events stream until `finished` (or the stream ends, or the
    /// deadline passes), with a progress bar on a terminal.
    async fn follow(&self, started: &StartedSimulation, deadline: Instant) -> Result<(), Failure> {
        let (url, response) = self
            .get(&format!("/api/simulations/{}/events", started.id))
            .await?;
        let bar = progress_bar(started.attempts as u64);
        let mut finished: HashSet<String> = HashSet::new();
        let status = response.status();
        if !status.is_success() {
            let body: Value = response.json().await.unwrap_or(Value::Null);
            return Err(refused("the API refused the events stream", status, &body));
        }
        let mut events = EventStream::new(response);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let next = tokio::time::timeout(left, events.next())
                .await
                .map_err(|_| timed_out(&started.id))?
                .map_err(|e| unreachable(&format!("the events stream of {url} broke"), e))?;
            let Some((name, data)) = next else {
                break;
            };
            match name.as_str() {
                "finished" => break,
                "attempt" | "snapshot" => {
                    let data: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
                    let attempts = if name == "attempt" {
                        vec![data]
                    } else {
                        data["attempts"].as_array().cloned().unwrap_or_default()
                    };
                    for a in attempts {
                        if !a["outcome"].is_null()
                            && let Some(id) = a["id"].as_str()
                            && finished.insert(id.to_owned())
                            && let Some(bar) = &bar
                        {
                            bar.set_position(finished.len() as u64);
                        }
                    }
                }
                _ => {}
            }
        }
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        Ok(())
    }

    /// Downloads the simulation's cassette and writes it into `dir`, and
    /// says on stderr what the workers recorded.
    async fn save_cassette(&self, id: &str, dir: &std::path::Path) -> Result<(), Failure> {
        let (url, response) = self.get(&format!("/api/simulations/{id}/cassette")).await?;
        let status = response.status();
        let body: Value = response
            .json()
            .await
            .map_err(|e| unreachable(&format!("cannot read {url}"), e))?;
        if !status.is_success() {
            return Err(refused("the API refused the cassette", status, &body));
        }
        let exchanges = body["exchanges"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|e| toolmock_agent::cassette::parse_exchange(&e.to_string()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| unreachable(&format!("{url} holds an exchange that"), e))?;
        toolmock_agent::cassette::write_cassette(dir, &exchanges).map_err(|e| Failure {
            message: format!("{}: {e}", e.code()),
            exit: 1,
        })?;
        let _ = writeln!(
            std::io::stderr(),
            "toolmock: cassette ({}): {} exchange(s) recorded by the workers, {} in {}",
            body["mode"].as_str().unwrap_or_default(),
            body["recorded"],
            exchanges.len(),
            dir.display()
        );
        Ok(())
    }

    /// The results document; while attempts still run (a stream that ended
    /// early), asks again every half second until the deadline.
    async fn results(&self, id: &str, deadline: Instant) -> Result<RunResults, Failure> {
        loop {
            let (url, response) = self.get(&format!("/api/simulations/{id}/results")).await?;
            let status = response.status();
            let bytes = response
                .bytes()
                .await
                .map_err(|e| unreachable(&format!("cannot read {url}"), e))?;
            if status.is_success() {
                return serde_json::from_slice(&bytes)
                    .map_err(|e| unreachable(&format!("{url} is not a results document"), e));
            }
            let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            if status != reqwest::StatusCode::CONFLICT
                || body["error"]["code"] != "simulation_running"
            {
                return Err(refused("the API refused the results", status, &body));
            }
            if Instant::now() >= deadline {
                return Err(timed_out(id));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

fn timed_out(id: &str) -> Failure {
    Failure {
        message: format!(
            "simulation {id} has not finished within --timeout; it goes on running on the service"
        ),
        exit: 1,
    }
}

/// The API's refusal of a document, each problem as `toolmock run` prints
/// its own: `FILE: CODE at PATH: MESSAGE` (paths point into the inlined
/// document, which has the file's own layout).
fn print_refusal(file: &str, body: &Value) {
    let stderr = std::io::stderr();
    let mut err = stderr.lock();
    let problems = body["error"]["details"]["problems"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for p in &problems {
        let path = p["path"].as_str().unwrap_or("");
        let _ = writeln!(
            err,
            "{file}: {} at {}: {}",
            p["code"].as_str().unwrap_or("unknown"),
            if path.is_empty() { "/" } else { path },
            p["message"].as_str().unwrap_or("")
        );
    }
    let _ = writeln!(
        err,
        "{file}: {}: {}",
        body["error"]["code"].as_str().unwrap_or("refused"),
        body["error"]["message"].as_str().unwrap_or("")
    );
}

/// Server-sent events read off a response body: `(event name, data)`.
struct EventStream {
    response: reqwest::Response,
    buffer: Vec<u8>,
}

impl EventStream {
    fn new(response: reqwest::Response) -> Self {
        EventStream {
            response,
            buffer: Vec::new(),
        }
    }

    /// The next event; `None` when the stream ended.
    async fn next(&mut self) -> Result<Option<(String, String)>, reqwest::Error> {
        loop {
            if let Some(event) = self.take_event() {
                if event.1.is_empty() && event.0.is_empty() {
                    // A keep-alive comment.
                    continue;
                }
                return Ok(Some(event));
            }
            match self.response.chunk().await? {
                Some(chunk) => self.buffer.extend_from_slice(&chunk),
                None => return Ok(None),
            }
        }
    }

    /// One whole event (up to a blank line) out of the buffer. Split on
    /// bytes, so a character cut between two chunks is never mangled.
    fn take_event(&mut self) -> Option<(String, String)> {
        let (end, gap) = [&b"\r\n\r\n"[..], &b"\n\n"[..]]
            .iter()
            .filter_map(|sep| {
                self.buffer
                    .windows(sep.len())
                    .position(|w| w == *sep)
                    .map(|at| (at, sep.len()))
            })
            .min()?;
        let block = String::from_utf8_lossy(&self.buffer[..end]).replace("\r\n", "\n");
        self.buffer.drain(..end + gap);
        Some(parse_event(&block))
    }
}

/// An event's `event:` name and its `data:` lines joined by newlines;
/// comments (`:`) and other fields ignored.
fn parse_event(block: &str) -> (String, String) {
    let mut name = String::new();
    let mut data: Vec<&str> = Vec::new();
    for line in block.lines() {
        if let Some(v) = line.strip_prefix("event:") {
            name = v.trim_start().to_owned();
        } else if let Some(v) = line.strip_prefix("data:") {
            data.push(v.strip_prefix(' ').unwrap_or(v));
        }
    }
    (name, data.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::parse_event;

    #[test]
    fn events_are_read_as_the_server_sent_events_format_says() {
        assert_eq!(
            parse_event("event: attempt\ndata: {\"a\":1}"),
            ("attempt".into(), "{\"a\":1}".into())
        );
        assert_eq!(
            parse_event("event:finished\ndata:one\ndata: two\nid: 7"),
            ("finished".into(), "one\ntwo".into())
        );
        assert_eq!(parse_event(": keep-alive"), (String::new(), String::new()));
    }
}
