//! What the tests that run the real `toolmock` binary share: the
//! repository's root, the binary run in a folder, and a scratch folder of
//! the test's own.

#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The repository's root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `toolmock ARGS` in `dir`.
pub(crate) fn toolmock(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolmock"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("toolmock runs")
}

/// A new empty folder, `PREFIX-PID-N` under the tests' temporary folder.
pub(crate) fn scratch(prefix: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "{prefix}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}
