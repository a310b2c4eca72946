//! Starting an installed simulation: the start request of a document and
//! the dispatcher's start, with its refusals reported in the document's
//! words.

use crate::document::SimulationDocument;
use crate::load::LoadedSimulation;
use crate::problem::{FileProblem, LoadCode};
use crate::starting::start_problems;
use std::time::Duration;
use toolmock_contract::pointer;
use toolmock_runtime::backend::Backend;
use toolmock_runtime::dispatcher::{Dispatcher, StartRequest, StartedSimulation};
use toolmock_runtime::error::{StartError, StartProblem};
use toolmock_runtime::model::AgentId;
use toolmock_runtime::model::TestCaseSpec;

use super::error::*;
use super::install::*;

/// The start request of a loaded document; a fixture that still names
/// its file is `FixtureNotLoaded`.
pub fn start_request(
    document: &SimulationDocument,
    agent: AgentId,
) -> Result<StartRequest, RunError> {
    start_request_reported(document, agent, &[])
}

/// The start request of a document whose fixture files the loader may have
/// failed to read. The loader reports every file it could not read, so
/// with problems `reported` an unloaded fixture is left out (`toolmock run
/// --check` goes on to list every other problem); without, it is
/// `FixtureNotLoaded`.
fn start_request_reported(
    document: &SimulationDocument,
    agent: AgentId,
    reported: &[FileProblem],
) -> Result<StartRequest, RunError> {
    Ok(StartRequest {
        agent,
        mode: document.mode,
        allow_incomplete: document.allow_incomplete,
        test_cases: document
            .cases
            .iter()
            .map(|c| TestCaseSpec {
                name: c.name.clone(),
                variants: c.variants.clone(),
                attempts: c.attempts,
            })
            .collect(),
        attempts_per_case: document.attempts,
        lease_owner: "toolmock run".into(),
        lease: Duration::from_secs(24 * 3600),
        fixtures: fixture_inputs(document, reported)?,
    })
}

/// The document's shared fixtures as a start takes them.
fn fixture_inputs(
    document: &SimulationDocument,
    reported: &[FileProblem],
) -> Result<Vec<toolmock_runtime::FixtureInput>, RunError> {
    let mut inputs = Vec::with_capacity(document.fixtures.len());
    for (index, fixture) in document.fixtures.iter().enumerate() {
        let label = pointer::index("/fixtures", index);
        match fixture {
            crate::document::FixtureDoc::Value { value } => {
                inputs.push(toolmock_runtime::FixtureInput {
                    label,
                    members: value.clone(),
                });
            }
            crate::document::FixtureDoc::File { .. } if !reported.is_empty() => {}
            crate::document::FixtureDoc::File { .. } => {
                return Err(RunError::FixtureNotLoaded { index });
            }
        }
    }
    Ok(inputs)
}

/// Starts an installed simulation.
pub async fn start<B: Backend>(
    dispatcher: &Dispatcher<B>,
    loaded: &LoadedSimulation,
    installed: &Installed,
) -> Result<StartedSimulation, RunError> {
    start_keeping(dispatcher, loaded, installed, &[], |_| true).await
}

/// Starts an installed simulation; of the start's refusals, lists those
/// `keep` keeps (`reported`: the problems already listed).
pub(super) async fn start_keeping<B: Backend>(
    dispatcher: &Dispatcher<B>,
    loaded: &LoadedSimulation,
    installed: &Installed,
    reported: &[FileProblem],
    keep: impl Fn(&StartProblem) -> bool,
) -> Result<StartedSimulation, RunError> {
    let request = start_request_reported(&loaded.document, installed.agent, reported)?;
    let whole_file = |message: String| {
        RunError::Problems(vec![FileProblem::load(
            loaded.file.clone(),
            "",
            LoadCode::InvalidValue,
            message,
        )])
    };
    match dispatcher.start(installed.tenant, &request).await {
        Ok(started) => Ok(started),
        Err(StartError::Refused { mut problems }) => {
            problems.retain(keep);
            Err(RunError::Problems(start_problems(loaded, &problems)))
        }
        Err(StartError::InvalidRequest(message)) => Err(whole_file(message)),
        Err(too_large @ StartError::TooLarge { .. }) => Err(whole_file(too_large.to_string())),
        Err(StartError::Store(e)) => Err(e.into()),
    }
}
