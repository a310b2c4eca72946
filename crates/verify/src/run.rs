//! A whole verification: per real tool, its drift and its replay at once,
//! every tool concurrently, each tool's real calls bounded by
//! `concurrency`; then the report.

use crate::drift::drift;
use crate::replay::{Replayer, plan};
use crate::report::{
    CheckReport, CheckStatus, Drift, DriftStatus, OperationReport, Report, ToolReport, Verdict,
};
use crate::subject::Subject;
use futures_util::future::join_all;
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::sync::Semaphore;
use toolmock_discovery::{Endpoint, Options, RealExecutor};
use toolmock_runtime::model::RealHandler;

/// How a verification runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyOptions {
    /// Real calls in flight at once, per real tool (at least 1).
    pub concurrency: usize,
    /// How long one real call (connecting included), one discovery and
    /// one OpenAPI fetch may take.
    pub timeout: Duration,
    /// The longest answer read from a real tool (an HTTP handler, an MCP
    /// server over streamable HTTP, the OpenAPI document); a longer one
    /// fails its check `response_too_large`.
    pub max_response_bytes: u64,
}

impl Default for VerifyOptions {
    /// 4 calls at once per tool, 30 s each, answers up to 16 MiB.
    fn default() -> Self {
        VerifyOptions {
            concurrency: 4,
            timeout: Duration::from_secs(30),
            max_response_bytes: toolmock_discovery::DEFAULT_MAX_RESPONSE_BYTES,
        }
    }
}

/// The executor of `subject`'s calls: a handler for each operation marked
/// safe and nothing else, so an operation the block does not mark safe has
/// no way to be called. With the key its MCP handlers name the server by.
fn executor(subject: &Subject, options: &VerifyOptions) -> (RealExecutor, Option<String>) {
    // A stdio server is named by a key the executor opens it under.
    let key = match &subject.server {
        Some(Endpoint::Http { url }) => Some((url.clone(), None)),
        Some(endpoint @ Endpoint::Stdio { .. }) => {
            Some((format!("stdio:{}", subject.tool), Some(endpoint.clone())))
        }
        None => None,
    };
    let mut handlers = BTreeMap::new();
    for op in &subject.operations {
        if !subject.settings.safe.allows(&op.name) {
            continue;
        }
        let handler = match (&op.endpoint, &key) {
            (Some(url), _) => RealHandler::Http { url: url.clone() },
            (None, Some((url, _))) => RealHandler::Mcp { url: url.clone() },
            (None, None) => continue,
        };
        handlers.insert((subject.tool.clone(), op.name.clone()), handler);
    }
    let executor = RealExecutor::new(handlers, options.timeout)
        .with_max_response_bytes(options.max_response_bytes);
    match key {
        Some((name, Some(endpoint))) => (executor.with_server(name.clone(), endpoint), Some(name)),
        Some((name, None)) => (executor, Some(name)),
        None => (executor, None),
    }
}

/// Verifies every subject and reports.
pub async fn verify(subjects: &[Subject], options: &VerifyOptions) -> Report {
    let tools = join_all(subjects.iter().map(|s| verify_tool(s, options))).await;
    Report::new(tools)
}

async fn verify_tool(subject: &Subject, options: &VerifyOptions) -> ToolReport {
    let (mut executor, key) = executor(subject, options);
    // One connection to the MCP server: its tools listed for the drift,
    // then its calls (a stdio server is started once).
    let listed = match &subject.server {
        Some(server) => Some(
            match toolmock_discovery::open_bounded(
                server,
                options.timeout,
                options.max_response_bytes,
            )
            .await
            {
                Ok(mut session) => {
                    let listed = session
                        .discover(&Options {
                            fallback_output_schema: subject.fallback_output_schema.clone(),
                            timeout: options.timeout,
                        })
                        .await;
                    match (&listed, key) {
                        (Ok(_), Some(key)) => executor = executor.with_session(key, session),
                        _ => session.close().await,
                    }
                    listed
                }
                Err(e) => Err(e),
            },
        ),
        None => None,
    };
    let permits = Semaphore::new(options.concurrency.max(1));
    let replayer = Replayer {
        subject,
        executor: &executor,
        permits: &permits,
    };
    let units = plan(subject);
    let (drifts, checks) = tokio::join!(
        drift(subject, listed, options),
        join_all(units.into_iter().map(|u| replayer.run(u)))
    );
    executor.close().await;
    let mut by_operation: BTreeMap<String, Vec<CheckReport>> = BTreeMap::new();
    for check in checks.into_iter().flatten() {
        by_operation
            .entry(check.operation.clone())
            .or_default()
            .push(check);
    }
    let mut operations = Vec::new();
    for op in &subject.operations {
        let checks = by_operation.remove(&op.name).unwrap_or_default();
        let drift = drifts
            .get(&op.name)
            .cloned()
            .unwrap_or_else(|| Drift::of(DriftStatus::Unchecked));
        operations.push(OperationReport {
            operation: op.name.clone(),
            safe: subject.settings.safe.allows(&op.name),
            contract_hash: op
                .contract
                .hash()
                .map(|h| h.to_string())
                .unwrap_or_default(),
            definition_hash: op.mock.as_ref().map(|m| m.hash.clone()),
            revision: op.revision,
            verdict: verdict(&drift, &checks),
            drift,
            checks,
        });
    }
    ToolReport {
        tool: subject.tool.clone(),
        real: describe(subject),
        operations,
        unmatched: by_operation.into_values().flatten().collect(),
    }
}

fn verdict(drift: &Drift, checks: &[CheckReport]) -> Verdict {
    let any = |status| checks.iter().any(|c| c.status == status);
    if any(CheckStatus::Diverged) {
        Verdict::Diverged
    } else if matches!(drift.status, DriftStatus::Changed | DriftStatus::Gone) {
        Verdict::Drifted
    } else if any(CheckStatus::Failed) || drift.status == DriftStatus::Failed {
        Verdict::Failed
    } else if any(CheckStatus::Agreed) {
        Verdict::Agreed
    } else {
        Verdict::Unverified
    }
}

fn describe(subject: &Subject) -> String {
    let endpoints = subject.operations.iter().any(|o| o.endpoint.is_some());
    let server = match &subject.server {
        Some(Endpoint::Http { url }) => Some(format!("mcp {url}")),
        Some(Endpoint::Stdio { program, args, .. }) => Some(format!(
            "mcp stdio: {program}{}",
            if args.is_empty() { "" } else { " …" }
        )),
        None => None,
    };
    match (server, endpoints) {
        (Some(server), true) => format!("{server}, http endpoints"),
        (Some(server), false) => server,
        (None, true) => "http endpoints".into(),
        (None, false) if subject.openapi.is_some() => "openapi only".into(),
        (None, false) => "none".into(),
    }
}
