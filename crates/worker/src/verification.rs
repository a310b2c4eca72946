//! Verifications of library tools (docs/verify.md, "On the service"): the
//! worker queues what the schedules say is due, claims one verification at
//! a time under a lease as long as its time budget, verifies the tool with
//! `toolmock_verify` against its real tool, and appends what it found per
//! operation — or ends it failed, saying why. A verification cut short (the
//! worker stopped) is claimed again when its lease runs out.

use std::time::Duration;
use toolmock_discovery::{Endpoint, TargetPolicy};
use toolmock_runtime::backend::Catalog;
use toolmock_store::{ClaimedVerification, PgStore, VerificationResult};
use toolmock_verify::{OpenApiSource, Subject, ToolSettings, VerifyOptions};

/// How much longer than its time budget a verification's lease lasts, so
/// that the worker's own finish comes before anyone else's claim.
const LEASE_MARGIN: Duration = Duration::from_secs(30);

/// Runs verifications until the task is aborted: schedules first, then
/// the oldest queued verification, else a `poll`'s sleep.
pub(crate) async fn run(
    store: PgStore,
    owner: String,
    (poll, budget): (Duration, Duration),
    (targets, max_response_bytes): (TargetPolicy, u64),
) {
    loop {
        match store.queue_due_verifications().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(queued = n, "scheduled verifications queued"),
            Err(e) => tracing::warn!(error = %e, "queueing the scheduled verifications failed"),
        }
        match store
            .claim_verification(&owner, budget + LEASE_MARGIN)
            .await
        {
            Ok(Some(claimed)) => {
                metrics::counter!(crate::telemetry::VERIFICATIONS, "how" => "claimed").increment(1);
                verify_one(
                    &store,
                    &owner,
                    claimed,
                    (budget, &targets, max_response_bytes),
                )
                .await;
            }
            Ok(None) => tokio::time::sleep(poll).await,
            Err(e) => {
                tracing::error!(error = %e, "claiming a queued verification failed");
                tokio::time::sleep(poll).await;
            }
        }
    }
}

async fn verify_one(
    store: &PgStore,
    owner: &str,
    claimed: ClaimedVerification,
    (budget, targets, max_response_bytes): (Duration, &TargetPolicy, u64),
) {
    let id = claimed.id;
    let outcome = verified(store, &claimed, (budget, max_response_bytes), targets).await;
    let written = match outcome {
        Ok((ok, summary, results)) => {
            store
                .finish_verification(claimed.tenant, id, owner, ok, &summary, &results)
                .await
        }
        Err(why) => {
            tracing::warn!(verification = %id, why = %why, "the verification could not run");
            store
                .fail_verification(claimed.tenant, id, owner, &why)
                .await
        }
    };
    match written {
        Ok(true) => {
            metrics::counter!(crate::telemetry::VERIFICATIONS, "how" => "ended").increment(1);
            tracing::info!(verification = %id, "verification ended");
        }
        Ok(false) => tracing::warn!(verification = %id,
            "the verification's lease was no longer this worker's: nothing was written"),
        Err(e) => {
            tracing::error!(verification = %id, error = %e, "writing the verification failed")
        }
    }
}

type Found = (bool, serde_json::Value, Vec<VerificationResult>);

/// The verification's report as rows, or why it could not run.
async fn verified(
    store: &PgStore,
    claimed: &ClaimedVerification,
    (budget, max_response_bytes): (Duration, u64),
    targets: &TargetPolicy,
) -> Result<Found, String> {
    let settings: ToolSettings = serde_json::from_value(claimed.settings.clone())
        .map_err(|e| format!("its settings do not parse: {e}"))?;
    let tool = store
        .tool(claimed.tenant, claimed.tool)
        .await
        .map_err(|e| format!("the tool cannot be read: {e}"))?;
    let subject = settings.subject(&tool).map_err(|problems| {
        problems
            .iter()
            .map(|p| format!("{}: {}: {}", p.display_path(), p.code.as_str(), p.message))
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    reachable(&subject, targets).await?;
    let report = tokio::time::timeout(
        budget,
        toolmock_verify::verify(
            std::slice::from_ref(&subject),
            &VerifyOptions {
                max_response_bytes,
                ..VerifyOptions::default()
            },
        ),
    )
    .await
    .map_err(|_| format!("it did not finish within {} s", budget.as_secs()))?;
    let mut results = Vec::new();
    for op in report.tools.iter().flat_map(|t| &t.operations) {
        let Some(view) = tool
            .operations
            .iter()
            .find(|o| o.operation.name == op.operation)
        else {
            continue;
        };
        let divergences: usize = op.checks.iter().map(|c| c.divergences.len()).sum();
        results.push(VerificationResult {
            operation: view.id,
            revision: op.revision.and_then(|r| i32::try_from(r).ok()),
            definition_hash: op.definition_hash.clone(),
            contract_hash: op.contract_hash.clone(),
            verdict: op.verdict.as_str().to_owned(),
            divergences: i32::try_from(divergences).unwrap_or(i32::MAX),
            report: serde_json::to_value(op).map_err(|e| e.to_string())?,
        });
    }
    let summary = serde_json::to_value(report.summary).map_err(|e| e.to_string())?;
    Ok((report.ok, summary, results))
}

/// `Ok` when every URL the verification would reach — the MCP server, the
/// OpenAPI document, each operation's HTTP endpoint — is one `targets`
/// allows (the tenant names them; docs/operations.md).
async fn reachable(subject: &Subject, targets: &TargetPolicy) -> Result<(), String> {
    let server = match &subject.server {
        Some(Endpoint::Http { url }) => Some(url.as_str()),
        _ => None,
    };
    let openapi = match &subject.openapi {
        Some(OpenApiSource::Url(url)) => Some(url.as_str()),
        _ => None,
    };
    let endpoints = subject
        .operations
        .iter()
        .filter_map(|o| o.endpoint.as_deref());
    for url in server.into_iter().chain(openapi).chain(endpoints) {
        targets
            .check(url)
            .await
            .map_err(|e| format!("{url} is not reached ({}): {e}", e.code()))?;
    }
    Ok(())
}
