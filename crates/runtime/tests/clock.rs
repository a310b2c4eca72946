//! The runtime reads the time of day only through its injected `Clock`
//! (ARCHITECTURE.md, "Determinism and time"): this scans its sources for
//! every read of a clock. The system clock is read in one place, the
//! `SystemClock` the `Clock` trait's default implementation is; a call's own
//! duration (`duration_us`, what the evaluation took) is measured with the
//! monotonic `Instant` where the call and an effect begin — never a time of
//! day, never stored as one, and never what a lease, a record's time or an
//! outcome depends on. The testkit's `ManualClock` starts at the system
//! clock's now. Any other read fails here.

use std::path::{Path, PathBuf};

/// (file, the read, why).
const READS: &[(&str, &str, &str)] = &[
    (
        "backend/mod.rs",
        "Utc::now()",
        "SystemClock, the default Clock",
    ),
    (
        "testkit/fakes.rs",
        "Utc::now()",
        "ManualClock's starting time",
    ),
    (
        "dispatcher/call.rs",
        "Instant::now()",
        "a call's duration_us: what its evaluation took",
    ),
    (
        "dispatcher/effect.rs",
        "Instant::now()",
        "an effect's duration_us: what its execution took",
    ),
];

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

#[test]
fn the_runtime_reads_the_time_only_through_its_clock() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 20, "the scan found the sources");
    let reads = [
        "Utc::now()",
        "Local::now()",
        "SystemTime::now()",
        "Instant::now()",
        "OffsetDateTime::now",
    ];
    let mut found = Vec::new();
    for file in files {
        let relative = file
            .strip_prefix(&src)
            .unwrap_or(&file)
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for (number, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            for read in reads.iter().filter(|r| code.contains(*r)) {
                found.push((relative.clone(), *read, number + 1));
            }
        }
    }
    let unlisted: Vec<String> = found
        .iter()
        .filter(|(file, read, _)| !READS.iter().any(|(f, r, _)| f == file && r == read))
        .map(|(file, read, line)| format!("{file}:{line}: {read}"))
        .collect();
    assert!(
        unlisted.is_empty(),
        "clock reads outside the injected Clock: {unlisted:#?}"
    );
    for (file, read, why) in READS {
        assert!(
            found.iter().any(|(f, r, _)| f == file && r == read),
            "{file} no longer reads {read} ({why}): drop it from READS"
        );
    }
}
