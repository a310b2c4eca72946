//! `toolmock-api seed`: HealthPlus saved as a tenant's library, and seeding
//! again writes only what changed.

use crate::common::*;
use serde_json::Value;
use sqlx::PgPool;
use std::path::{Path, PathBuf};
use toolmock_api::seed::{SeedAction, SeedReport, seed};

/// A copy of the HealthPlus folder to change, removed at the end.
struct Folder(PathBuf);

impl Folder {
    fn healthplus() -> Folder {
        let to = std::env::temp_dir().join(format!(
            "seed-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        copy(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/healthplus"),
            &to,
        );
        Folder(to)
    }

    /// Changes the JSON file at `relative` in place.
    fn edit(&self, relative: &str, change: impl FnOnce(&mut Value)) {
        let path = self.0.join(relative);
        let mut value: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        change(&mut value);
        std::fs::write(&path, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn lines(report: &SeedReport, action: SeedAction) -> Vec<&str> {
    report
        .lines
        .iter()
        .filter(|(a, _)| *a == action)
        .map(|(_, what)| what.as_str())
        .collect()
}

async fn revisions(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM tool_mock_revisions")
        .fetch_one(pool)
        .await
        .unwrap()
}

async fn agent_spec(pool: &PgPool) -> Value {
    sqlx::query_scalar::<_, sqlx::types::Json<Value>>("SELECT spec FROM agents")
        .fetch_one(pool)
        .await
        .unwrap()
        .0
}

#[sqlx::test(migrator = "toolmock_store::MIGRATOR")]
async fn seeding_twice_writes_nothing_new_and_a_change_writes_exactly_it(pool: PgPool) {
    let folder = Folder::healthplus();
    let first = seed(pool.clone(), "acme", &folder.0).await.unwrap();
    assert_eq!(
        lines(&first, SeedAction::Created)
            .iter()
            .filter(|l| l.starts_with("tool "))
            .count(),
        4,
        "{first:?}"
    );
    assert!(lines(&first, SeedAction::Created).contains(&"agent healthplus-member-services"));
    let mocks = lines(&first, SeedAction::Created)
        .iter()
        .filter(|l| l.starts_with("mock "))
        .count();
    assert_eq!(revisions(&pool).await, mocks as i64);
    let spec = agent_spec(&pool).await;

    // Again: everything left alone, no revision, the agent as it was.
    let second = seed(pool.clone(), "acme", &folder.0).await.unwrap();
    assert_eq!(second.count(SeedAction::Created), 0, "{second:?}");
    assert_eq!(second.count(SeedAction::Appended), 0, "{second:?}");
    assert_eq!(revisions(&pool).await, mocks as i64);
    assert_eq!(agent_spec(&pool).await, spec);

    // One fixture changed: exactly its revision.
    folder.edit("capabilities/claims/get_claim.json", |d| {
        d["description"] = "A claim by id (reworded)".into();
    });
    let third = seed(pool.clone(), "acme", &folder.0).await.unwrap();
    assert_eq!(
        lines(&third, SeedAction::Appended),
        vec!["mock claims/get_claim: revision 2"],
        "{third:?}"
    );
    assert_eq!(revisions(&pool).await, mocks as i64 + 1);

    // A Salesforce operation's schema corrected: its contract changes, its
    // mock is saved again against the new hash and is current; the prompt
    // and guards are untouched throughout.
    folder.edit("tools/salesforce.manifest.json", |m| {
        let ops = m["operations"].as_array_mut().unwrap();
        let get = ops.iter_mut().find(|o| o["name"] == "get_record").unwrap();
        get["description"] = "Read one record by its id".into();
    });
    let fourth = seed(pool.clone(), "acme", &folder.0).await.unwrap();
    assert_eq!(
        lines(&fourth, SeedAction::Appended),
        vec![
            "tool salesforce: new contract for salesforce__get_record",
            "mock salesforce/salesforce__get_record: revision 2",
        ],
        "{fourth:?}"
    );
    assert_eq!(revisions(&pool).await, mocks as i64 + 2);
    assert_eq!(agent_spec(&pool).await, spec);
    let app = app(&pool);
    let bearer = token("acme", &[MANAGE]);
    let tools = send(
        &app,
        axum::http::Method::GET,
        "/api/tools",
        Some(&bearer),
        None,
    )
    .await;
    let salesforce = tools.json["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "salesforce")
        .unwrap();
    assert_eq!(
        (salesforce["stale"].as_u64(), salesforce["current"].as_u64()),
        (Some(0), Some(4)),
        "{salesforce}"
    );
    // And seeding once more is quiet again.
    let fifth = seed(pool.clone(), "acme", &folder.0).await.unwrap();
    assert_eq!(
        fifth.count(SeedAction::Created) + fifth.count(SeedAction::Appended),
        0,
        "{fifth:?}"
    );
}
