//! `GET /api/tools/{id}/testing` without re-reading what cannot have
//! changed.
//!
//! The view of a tool is assembled from its testing index (one small query
//! per request) and two kinds of pieces, each named exactly by fields of the
//! index and kept, already rendered as JSON, between requests:
//!
//! - an operation's current contract, named by (operation id, contract hash,
//!   when the row was written): the row's contract is written only together
//!   with a new `updated_at`;
//! - a revision's summary, named by (operation id, revision number):
//!   revisions are append-only.
//!
//! Only the pieces not kept yet are read, each kind in one query for all
//! operations; a contract whose row changed between the index and that read
//! makes the whole view start again from a fresh index. The pieces are
//! rendered exactly as the view used to render them from the catalog, so
//! the answer is the same byte for byte.
//!
//! The whole answer, serialized, is kept too, under the fingerprint of the
//! index it was built from (the ids of the transactions that wrote the
//! tool's rows, read in the statement that read the index:
//! `PgStore::testing_fingerprint`). A request first reads only the tool's
//! current fingerprint — one small row, however many operations — and sends
//! the kept answer when the fingerprints are equal: no row the view is built
//! from has been written since, by any process.

use crate::error::ApiError;
use crate::views::testing::{OperationTesting, Rendered, RevisionSummary, ToolTesting};
use crate::views::tools::{contract_diff, source_name};
use axum::body::Bytes;
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use toolmock_contract::{ContractHash, OperationContract};
use toolmock_runtime::model::{OperationId, TenantId, TestingStatus, ToolId};
use toolmock_store::{PgStore, StoredContract};

/// How many pieces of each kind are kept; past it the kept ones are dropped
/// and the cache fills again from the requests that follow.
const CAPACITY: usize = 20_000;

/// How many bytes of whole answers are kept; past it the kept ones are
/// dropped and the cache fills again from the requests that follow.
const ANSWER_BYTES: usize = 64 << 20;

/// How many times a view starts again when operations keep changing under it.
const ROUNDS: usize = 4;

/// An operation's contract row as written at one time (its hash is kept
/// with the piece and compared: the key stays small to hash).
type ContractKey = (OperationId, DateTime<Utc>);
type RevisionKey = (OperationId, u32);

/// A revision summary as rendered, with the hash its status depends on.
#[derive(Debug)]
struct KeptRevision {
    contract_hash: ContractHash,
    rendered: Rendered,
}

/// The rendered pieces kept between requests (see the module's notes).
#[derive(Debug, Default)]
pub(crate) struct TestingCache {
    contracts: Mutex<HashMap<ContractKey, (ContractHash, Rendered)>>,
    revisions: Mutex<HashMap<RevisionKey, Arc<KeptRevision>>>,
    answers: Mutex<KeptAnswers>,
}

/// Whole answers by tool, each with the fingerprint of its index.
#[derive(Debug, Default)]
struct KeptAnswers {
    by_tool: HashMap<(TenantId, ToolId), (String, Bytes)>,
    bytes: usize,
}

impl TestingCache {
    fn answer(&self, key: (TenantId, ToolId), fingerprint: &str) -> Option<Bytes> {
        let answers = self.answers.lock().unwrap_or_else(PoisonError::into_inner);
        let (kept, body) = answers.by_tool.get(&key)?;
        (kept == fingerprint).then(|| body.clone())
    }

    fn keep_answer(&self, key: (TenantId, ToolId), fingerprint: String, body: Bytes) {
        let mut answers = self.answers.lock().unwrap_or_else(PoisonError::into_inner);
        if answers.bytes + body.len() > ANSWER_BYTES {
            answers.by_tool.clear();
            answers.bytes = 0;
        }
        answers.bytes += body.len();
        if let Some((_, replaced)) = answers.by_tool.insert(key, (fingerprint, body)) {
            answers.bytes -= replaced.len();
        }
    }
}

fn internal(e: impl ToString) -> ApiError {
    ApiError::Internal(e.to_string())
}

fn keep<K: std::hash::Hash + Eq, V>(map: &Mutex<HashMap<K, V>>, pieces: Vec<(K, V)>) {
    let mut map = map.lock().unwrap_or_else(PoisonError::into_inner);
    if map.len() + pieces.len() > CAPACITY {
        map.clear();
    }
    map.extend(pieces);
}

/// The testing view of a tool of `tenant`, serialized: the kept answer when
/// the tool's index has not changed since it was built, else built now.
pub(crate) async fn testing_answer(
    cache: &TestingCache,
    store: &PgStore,
    tenant: TenantId,
    tool: ToolId,
) -> Result<Bytes, ApiError> {
    let fingerprint = store.testing_fingerprint(tenant, tool).await?;
    if let Some(body) = cache.answer((tenant, tool), &fingerprint) {
        return Ok(body);
    }
    let (view, fingerprint) = tool_testing(cache, store, tenant, tool).await?;
    let body = Bytes::from(serde_json::to_vec(&view).map_err(internal)?);
    cache.keep_answer((tenant, tool), fingerprint, body.clone());
    Ok(body)
}

/// The testing view of a tool of `tenant`, with the fingerprint of the index
/// it was built from.
async fn tool_testing(
    cache: &TestingCache,
    store: &PgStore,
    tenant: TenantId,
    tool: ToolId,
) -> Result<(ToolTesting, String), ApiError> {
    for _ in 0..ROUNDS {
        if let Some(view) = attempt(cache, store, tenant, tool).await? {
            return Ok(view);
        }
    }
    Err(ApiError::Internal(
        "the tool's operations kept changing while its testing view was read".into(),
    ))
}

/// One try: `None` when an operation changed between the index and the
/// read of its contract.
async fn attempt(
    cache: &TestingCache,
    store: &PgStore,
    tenant: TenantId,
    tool: ToolId,
) -> Result<Option<(ToolTesting, String)>, ApiError> {
    let index = store.testing_index(tenant, tool).await?;
    let ops = &index.operations;

    // The pieces this request needs, by position in the index: from the
    // cache, then what it lacks read now.
    let (mut contracts, mut revisions): (Vec<Option<Rendered>>, Vec<Option<Arc<KeptRevision>>>) = {
        let kept_contracts = cache
            .contracts
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let kept_revisions = cache
            .revisions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        ops.iter()
            .map(|op| {
                let contract = op.contract_hash.as_ref().and_then(|hash| {
                    kept_contracts
                        .get(&(op.id, op.updated_at))
                        .filter(|(kept_hash, _)| kept_hash == hash)
                        .map(|(_, rendered)| rendered.clone())
                });
                let revision = kept_revisions.get(&(op.id, op.latest_revision)).cloned();
                (contract, revision)
            })
            .unzip()
    };
    let missing: Vec<OperationId> = ops
        .iter()
        .zip(&contracts)
        .filter(|(op, kept)| op.contract_hash.is_some() && kept.is_none())
        .map(|(op, _)| op.id)
        .collect();
    if !missing.is_empty() {
        let position: HashMap<OperationId, usize> =
            ops.iter().enumerate().map(|(i, op)| (op.id, i)).collect();
        let mut read = Vec::with_capacity(missing.len());
        for stored in store.current_contracts(tenant, &missing).await? {
            let StoredContract {
                operation,
                contract_hash: Some(hash),
                updated_at,
                contract: Some(contract),
            } = stored
            else {
                continue;
            };
            // As the catalog's view rendered it: a `Value`, keys in order.
            let rendered = Rendered::new(&serde_json::to_value(&contract).map_err(internal)?)?;
            if let Some(&at) = position.get(&operation) {
                let op = &ops[at];
                if op.updated_at == updated_at && op.contract_hash.as_ref() == Some(&hash) {
                    contracts[at] = Some(rendered.clone());
                }
            }
            read.push(((operation, updated_at), (hash, rendered)));
        }
        keep(&cache.contracts, read);
    }
    let missing: Vec<RevisionKey> = ops
        .iter()
        .zip(&revisions)
        .filter(|(op, kept)| op.latest_revision > 0 && kept.is_none())
        .map(|(op, _)| (op.id, op.latest_revision))
        .collect();
    if !missing.is_empty() {
        let position: HashMap<RevisionKey, usize> = ops
            .iter()
            .enumerate()
            .map(|(i, op)| ((op.id, op.latest_revision), i))
            .collect();
        let mut read = Vec::with_capacity(missing.len());
        for summary in store.revision_summaries(tenant, &missing).await? {
            let rendered = Rendered::new(&RevisionSummary {
                revision: summary.revision,
                contract_hash: summary.contract_hash.to_string(),
                definition_hash: summary.definition_hash.to_string(),
                author: summary.author,
                provenance: summary.provenance.as_str().to_owned(),
                instructions: summary.provenance.instructions().map(str::to_owned),
                created_at: summary.created_at,
            })?;
            let key = (summary.operation, summary.revision);
            let revision = Arc::new(KeptRevision {
                contract_hash: summary.contract_hash,
                rendered,
            });
            if let Some(&at) = position.get(&key) {
                revisions[at] = Some(revision.clone());
            }
            read.push((key, revision));
        }
        keep(&cache.revisions, read);
    }

    let mut operations = Vec::with_capacity(index.operations.len());
    let mut stale = Vec::new();
    for ((op, contract), latest) in index.operations.into_iter().zip(contracts).zip(revisions) {
        if op.contract_hash.is_some() && contract.is_none() {
            // The row changed after the index was read: start again.
            return Ok(None);
        }
        // As `OperationView::status`.
        let status = match (&op.contract_hash, &latest) {
            (None, _) => TestingStatus::NeedsOutputSchema,
            (Some(_), None) => TestingStatus::Missing,
            (Some(current), Some(latest)) if &latest.contract_hash == current => {
                TestingStatus::Current
            }
            (Some(_), Some(_)) => TestingStatus::Stale,
        };
        if let (TestingStatus::Stale, Some(latest)) = (status, &latest) {
            stale.push((operations.len(), op.id, latest.contract_hash.clone()));
        }
        operations.push(OperationTesting {
            id: op.id.as_uuid(),
            name: op.operation.name,
            source: source_name(op.operation.source).to_owned(),
            status: status.as_str().to_owned(),
            contract,
            contract_hash: op.contract_hash.as_ref().map(ToString::to_string),
            latest_revision: latest.map(|r| r.rendered.clone()),
            stale_diff: None,
        });
    }

    // Why each stale operation is stale: the diff from the contract its
    // revision was saved against to the current one.
    if !stale.is_empty() {
        let pairs: Vec<_> = stale
            .iter()
            .map(|(_, id, hash)| (*id, hash.clone()))
            .collect();
        let saved: HashMap<(OperationId, ContractHash), OperationContract> = store
            .contracts_at(tenant, &pairs)
            .await?
            .into_iter()
            .map(|(id, hash, contract)| ((id, hash), contract))
            .collect();
        for (at, id, hash) in stale {
            let view = &mut operations[at];
            let current = view
                .contract
                .as_ref()
                .map(|rendered| serde_json::from_str::<OperationContract>(rendered.text()))
                .transpose()
                .map_err(internal)?;
            view.stale_diff = Some(contract_diff(saved.get(&(id, hash)), current.as_ref())?);
        }
    }

    Ok(Some((
        ToolTesting {
            tool_id: tool.as_uuid(),
            tool_name: index.name,
            operations,
        },
        index.fingerprint,
    )))
}
