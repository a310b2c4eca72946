//! `toolmock compare` over two results documents of the HealthPlus suite:
//! the real `--json` document, and the same with one case regressed, one
//! fixed, one removed and one added.

#![allow(clippy::unwrap_used)]

mod common;

use common::{root, toolmock};
use serde_json::{Value, json};
use std::path::Path;

#[test]
fn regressions_come_first_and_fail_on_regression_exits_1() {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("compare-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let simulation = root().join("fixtures/healthplus/simulation.json");
    let out = toolmock(&dir, &["run", simulation.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0));
    std::fs::write(dir.join("base.json"), &out.stdout).unwrap();
    let base: Value = serde_json::from_slice(&out.stdout).unwrap();

    // The same suite: no change, no regression.
    let same = toolmock(
        &dir,
        &[
            "compare",
            "base.json",
            "base.json",
            "--fail-on",
            "regression",
        ],
    );
    assert_eq!(same.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&same.stdout).contains("0 regression(s), 0 fixed"));

    let mut head = base.clone();
    let cases = head["cases"].as_array_mut().unwrap();
    let regressed = cases[3]["name"].as_str().unwrap().to_owned();
    cases[3]["pass_rate"] = json!(0.0);
    cases[3]["pass_k"]["passed"] = json!(false);
    let removed = cases.remove(5)["name"].as_str().unwrap().to_owned();
    let mut added = cases[0].clone();
    added["name"] = json!("a new case");
    cases.push(added);
    let mut base_fixed = base.clone();
    base_fixed["cases"][1]["pass_k"]["passed"] = json!(false);
    base_fixed["cases"][1]["pass_rate"] = json!(0.0);
    std::fs::write(dir.join("base.json"), base_fixed.to_string()).unwrap();
    std::fs::write(dir.join("head.json"), head.to_string()).unwrap();

    let table = toolmock(&dir, &["compare", "base.json", "head.json"]);
    assert_eq!(table.status.code(), Some(0), "no --fail-on: 0");
    let text = String::from_utf8(table.stdout).unwrap();
    let first = text.lines().nth(1).unwrap();
    assert!(
        first.starts_with(&regressed) && first.contains("regression"),
        "{text}"
    );
    assert!(first.contains("100%") && first.contains("0%"), "{text}");
    assert!(text.contains("1 regression(s), 1 fixed"), "{text}");

    let failing = toolmock(
        &dir,
        &[
            "compare",
            "base.json",
            "head.json",
            "--json",
            "--fail-on",
            "regression",
            "--junit",
            "c.xml",
        ],
    );
    assert_eq!(failing.status.code(), Some(1));
    let document: Value = serde_json::from_slice(&failing.stdout).unwrap();
    assert_eq!(document["regressions"], 1);
    let change = |name: &str| {
        document["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .map(|c| c["change"].as_str().unwrap().to_owned())
    };
    assert_eq!(change(&regressed).as_deref(), Some("regression"));
    assert_eq!(change(&removed).as_deref(), Some("removed"));
    assert_eq!(change("a new case").as_deref(), Some("added"));
    assert_eq!(
        change(base["cases"][1]["name"].as_str().unwrap()).as_deref(),
        Some("fixed")
    );
    let junit = std::fs::read_to_string(dir.join("c.xml")).unwrap();
    assert_eq!(junit.matches("type=\"regression\"").count(), 1, "{junit}");

    let unreadable = toolmock(&dir, &["compare", "base.json", "missing.json"]);
    assert_eq!(unreadable.status.code(), Some(2));
}
