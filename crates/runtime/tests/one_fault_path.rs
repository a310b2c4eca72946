//! One fault path: every harness-error record toolmock writes is made by
//! `HarnessErrorRecord::new` (U+0000 cleaned, the time of an injected
//! clock), and every fault — tool input error or harness error — reaches
//! storage through `Dispatcher::record_fault` (with its `storage_failed`
//! fallback) or, inside a finish's own locked step, through the backend.
//! This scans the workspace's sources for any other code that builds the
//! record by hand or writes a fault to a backend or a table.

use std::path::{Path, PathBuf};

/// Where a struct literal of the record is allowed, and why.
const ALLOWED: &[(&str, &str)] = &[
    ("crates/runtime/src/model/fault.rs", "the one constructor"),
    (
        "crates/store/src/rows.rs",
        "reads a stored record back from its row; it records nothing",
    ),
];

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name == "target" || name.to_string_lossy().starts_with('.') {
            continue;
        }
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The workspace's Rust sources, with their paths from its root.
fn sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for top in ["crates", "bins", "bindings"] {
        rust_files(&root.join(top), &mut files);
    }
    assert!(
        files.len() > 50,
        "the scan found the sources ({})",
        files.len()
    );
    files
        .into_iter()
        .map(|file| {
            let relative = file
                .strip_prefix(&root)
                .unwrap_or(&file)
                .to_string_lossy()
                .replace('\\', "/");
            (relative, std::fs::read_to_string(&file).unwrap_or_default())
        })
        .collect()
}

/// Where a fault may be written to storage other than through the funnel,
/// and why: (the file, what it writes, why).
const WRITERS: &[(&str, &str, &str)] = &[
    (
        "crates/runtime/src/dispatcher/faults.rs",
        "",
        "the funnel itself, `Dispatcher::record_fault`",
    ),
    (
        "crates/runtime/src/testkit/fakes.rs",
        ".record_",
        "a test backend that forwards the funnel's writes to the backend it wraps",
    ),
    (
        "crates/runtime/src/testkit/scenarios/access.rs",
        ".record_",
        "tests that a backend itself refuses another tenant's fault records",
    ),
    (
        "crates/store/src/pg/evidence.rs",
        "",
        "the PostgreSQL backend's own writes of the records the funnel hands it",
    ),
    (
        "crates/store/src/pg/attempts.rs",
        "insert_harness_error(",
        "the finish's own locked step (a ledger gap, a finish after the lease)",
    ),
];

/// Every fault reaches storage through `Dispatcher::record_fault`: no other
/// code calls a backend's `record_harness_error` or `record_tool_input_error`,
/// writes a fault row in SQL, or calls the store's row writer.
#[test]
fn every_fault_reaches_storage_through_record_fault() {
    let writes = [
        [".record_harness", "_error("].concat(),
        [".record_tool_input", "_error("].concat(),
        ["insert_harness", "_error("].concat(),
        ["INSERT INTO harness", "_errors"].concat(),
        ["INSERT INTO tool_input", "_errors"].concat(),
    ];
    let mut offenders = Vec::new();
    let mut funnel = false;
    for (relative, text) in sources() {
        if relative.ends_with("crates/runtime/src/dispatcher/faults.rs") {
            funnel = text.contains("pub async fn record_fault(");
        }
        if relative.contains("/tests/") || relative.ends_with("tests/one_fault_path.rs") {
            continue; // tests write faults to set up what they check
        }
        for (number, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            let Some(write) = writes.iter().find(|w| code.contains(w.as_str())) else {
                continue;
            };
            if code.contains("fn ") {
                continue; // a definition, not a write
            }
            let allowed = WRITERS.iter().any(|(path, what, _)| {
                relative.ends_with(path) && (what.is_empty() || write.starts_with(what))
            });
            if !allowed {
                offenders.push(format!("{relative}:{}: {}", number + 1, line.trim()));
            }
        }
    }
    assert!(
        funnel,
        "Dispatcher::record_fault is no longer in dispatcher/faults.rs"
    );
    assert!(
        offenders.is_empty(),
        "faults written past Dispatcher::record_fault:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn no_code_builds_a_harness_error_record_by_hand() {
    let needle = ["HarnessErrorRecord", " {"].concat();
    let own_impl = ["impl ", "HarnessErrorRecord"].concat();
    let returns = ["-> ", &needle].concat();
    let mut offenders = Vec::new();
    let mut seen_allowed = Vec::new();
    for (relative, text) in sources() {
        for (number, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            // A struct literal, or an `impl` block (whose `Self { … }` would
            // be one); not the type's declaration, nor a return type.
            let builds = (code.contains(&needle) || code.contains(&own_impl))
                && !code.contains("struct ")
                && !code.contains(&returns);
            if !builds {
                continue;
            }
            if ALLOWED.iter().any(|(path, _)| relative.ends_with(path)) {
                seen_allowed.push(relative.clone());
                continue;
            }
            offenders.push(format!("{relative}:{}: {}", number + 1, line.trim()));
        }
    }
    assert!(
        offenders.is_empty(),
        "harness-error records built by hand (use HarnessErrorRecord::new and \
         Dispatcher::record_fault):\n{}",
        offenders.join("\n")
    );
    for (path, why) in ALLOWED {
        assert!(
            seen_allowed.iter().any(|seen| seen.ends_with(path)),
            "{path} ({why}) no longer builds the record: drop it from ALLOWED"
        );
    }
}
