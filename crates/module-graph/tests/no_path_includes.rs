//! No source file of the workspace includes another with `#[path]`: a module
//! that grows too long is split where its concepts part, and code two test
//! targets share lives in a crate (`toolmock-real-tools-fixture`) or behind a
//! crate's `testkit` feature, never in a file included from across a folder.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed expectation must panic

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy();
        if path.is_dir() {
            // Build output and installed tools are not the workspace's sources.
            if !matches!(name.as_ref(), "target" | ".cache" | "node_modules" | ".git") {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_source_file_includes_another_by_path() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for top in ["crates", "bins", "bindings", "fuzz"] {
        let dir = root.join(top);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        }
    }
    assert!(files.len() > 100, "{} source files found", files.len());
    let including: Vec<String> = files
        .iter()
        .filter(|file| {
            std::fs::read_to_string(file)
                .unwrap()
                .lines()
                .any(|line| line.trim_start().starts_with("#[path"))
        })
        .map(|file| file.strip_prefix(&root).unwrap().display().to_string())
        .collect();
    assert!(including.is_empty(), "#[path] includes in {including:#?}");
}
