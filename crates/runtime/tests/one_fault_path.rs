//! One fault path: every harness-error record toolmock writes is made by
//! `HarnessErrorRecord::new` (U+0000 cleaned, the time of an injected
//! clock) and recorded through `Dispatcher::record_harness_fault` (with its
//! `storage_failed` fallback) or, inside a finish's own locked step, by the
//! backend. This scans the workspace's sources for any other code that
//! builds the record by hand.

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

#[test]
fn no_code_builds_a_harness_error_record_by_hand() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for top in ["crates", "bins"] {
        rust_files(&root.join(top), &mut files);
    }
    assert!(
        files.len() > 50,
        "the scan found the sources ({})",
        files.len()
    );
    let needle = ["HarnessErrorRecord", " {"].concat();
    let own_impl = ["impl ", "HarnessErrorRecord"].concat();
    let returns = ["-> ", &needle].concat();
    let mut offenders = Vec::new();
    let mut seen_allowed = Vec::new();
    for file in files {
        let relative = file
            .strip_prefix(&root)
            .unwrap_or(&file)
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(&file).unwrap_or_default();
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
         Dispatcher::record_harness_fault):\n{}",
        offenders.join("\n")
    );
    for (path, why) in ALLOWED {
        assert!(
            seen_allowed.iter().any(|seen| seen.ends_with(path)),
            "{path} ({why}) no longer builds the record: drop it from ALLOWED"
        );
    }
}
