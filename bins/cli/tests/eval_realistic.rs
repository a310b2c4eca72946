//! `toolmock eval` on the eval yardstick (`fixtures/bench/eval-realistic/`, a
//! copy of the shared `eval-realistic` anchor with a contract) writes exactly
//! the bytes the build at 2ebde9d wrote, with and without `--contract`: the
//! faster stream (calls parsed and prepared on other threads, the output
//! written by another, results rendered into the last call's, `$dateAdd`
//! formatted by hand) changes nothing a user can see.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// SHA-256 of the output of 2ebde9d's `toolmock eval definition.json --calls
/// <(calls.py 20000)` (the same with `--contract contract.json`: every call
/// passes its schemas, so the lines are the same).
const OUTPUT_SHA256_AT_2EBDE9D: &str =
    "c0ce0c523d7f182f2f7cd575256ff414c597dfd38f55d4927bca81b5f69483cd";

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/bench/eval-realistic")
}

#[test]
fn eval_output_is_byte_identical_to_the_old_build() {
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("eval-realistic-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("scratch folder");
    let calls = scratch.join("calls.jsonl");
    let generated = Command::new("python3")
        .arg(dir().join("calls.py"))
        .arg("20000")
        .output()
        .expect("python3 runs calls.py");
    assert!(generated.status.success(), "calls.py failed");
    std::fs::write(&calls, &generated.stdout).expect("write the calls");
    for contract in [false, true] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolmock"));
        command
            .arg("eval")
            .arg(dir().join("definition.json"))
            .arg("--calls")
            .arg(&calls);
        if contract {
            command.arg("--contract").arg(dir().join("contract.json"));
        }
        let out = command.output().expect("run toolmock");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.stdout.split(|b| *b == b'\n').count(), 20_001);
        assert_eq!(
            hex::encode(Sha256::digest(&out.stdout)),
            OUTPUT_SHA256_AT_2EBDE9D,
            "with --contract: {contract}"
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
}
