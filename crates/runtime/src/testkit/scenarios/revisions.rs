//! Revisions: dense numbering under concurrency, contract checks.

use super::super::fixtures::*;
use super::super::prelude::*;

/// Saves are numbered 1, 2, 3… with no gap or duplicate under concurrency (16
/// concurrent saves); a
/// changed contract is `ContractChanged { current }`; a failing definition is
/// refused with its diagnostics.
pub async fn revisions_are_dense<B: Backend + Clone + 'static>(backend: B) {
    let concurrent: usize = 16;
    let tenant = tenant(&backend, "acme").await;
    let (_, operation) = library_ledger(&backend, tenant).await;
    let mut handles = Vec::new();
    for _ in 0..concurrent {
        let backend = backend.clone();
        handles.push(tokio::spawn(async move {
            save(
                &backend,
                tenant,
                operation,
                &ledger_operation(),
                ledger_definition(),
            )
            .await
            .expect("a concurrent save succeeds")
            .revision
        }));
    }
    let mut numbers = Vec::new();
    for handle in handles {
        numbers.push(handle.await.unwrap());
    }
    numbers.sort_unstable();
    let expected: Vec<u32> = (2..=u32::try_from(concurrent).unwrap() + 1).collect();
    assert_eq!(numbers, expected, "N and N+1, never a duplicate or a gap");

    let stale_hash = contract_of(&ledger_operation()).hash().unwrap();
    let mut changed = ledger_operation();
    changed.description = "Append an entry to the ledger".into();
    let tool = backend.revision(tenant, operation, 1).await.unwrap().tool;
    let view = backend
        .upsert_operation(tenant, tool, &changed)
        .await
        .unwrap();
    let current = view.contract_hash.clone().unwrap();
    assert_ne!(current, stale_hash);
    let error = backend
        .save_revision(
            tenant,
            operation,
            &SaveRevision {
                contract_hash: stale_hash.clone(),
                definition: ledger_definition(),
                author: "a".into(),
                provenance: Provenance::Authored,
            },
        )
        .await
        .expect_err("the contract changed");
    assert!(
        matches!(&error, SaveRevisionError::ContractChanged { current: c } if *c == current),
        "{error:?}"
    );
    let mut broken = ledger_definition();
    broken["variants"]["success"]["delay_ms"] = json!(99_999);
    broken["extra"] = json!(1);
    let error = backend
        .save_revision(
            tenant,
            operation,
            &SaveRevision {
                contract_hash: current.clone(),
                definition: broken,
                author: "a".into(),
                provenance: Provenance::Generated {
                    instructions: Some("be brief".into()),
                },
            },
        )
        .await
        .expect_err("the definition fails its check");
    let SaveRevisionError::InvalidDefinition(diagnostics) = &error else {
        panic!("expected InvalidDefinition, got {error:?}");
    };
    assert!(diagnostics.len() >= 2, "every problem at once");
    let saved = backend
        .save_revision(
            tenant,
            operation,
            &SaveRevision {
                contract_hash: current.clone(),
                definition: ledger_definition(),
                author: "gen".into(),
                provenance: Provenance::Generated {
                    instructions: Some("be brief".into()),
                },
            },
        )
        .await
        .unwrap();
    let next = u32::try_from(concurrent).unwrap() + 2;
    assert_eq!(saved.revision, next);
    let read = backend.revision(tenant, operation, next).await.unwrap();
    assert_eq!(read, saved);
    assert_eq!(read.provenance.instructions(), Some("be brief"));
    // The old revisions keep the hash they were saved against.
    assert_eq!(
        backend
            .revision(tenant, operation, 1)
            .await
            .unwrap()
            .contract_hash,
        stale_hash
    );
    let listing = backend.tool(tenant, tool).await.unwrap();
    assert_eq!(listing.operations[0].status(), TestingStatus::Current);
    assert_eq!(
        listing.operations[0].latest.as_ref().map(|r| r.revision),
        Some(next)
    );
}
