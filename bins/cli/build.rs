//! Names the commit `toolmock --version` prints (`TOOLMOCK_COMMIT` in the
//! crate's environment): the variable `TOOLMOCK_COMMIT` when the build is
//! given one (a build from a source archive, without git), else the checked-out
//! commit (`git rev-parse HEAD`, 12 hex digits), else `unknown`.

use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

fn main() {
    println!("cargo:rerun-if-env-changed=TOOLMOCK_COMMIT");
    let dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| std::path::PathBuf::from("."), std::path::PathBuf::from);
    if let Some(given) = std::env::var("TOOLMOCK_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
    {
        println!("cargo:rustc-env=TOOLMOCK_COMMIT={}", given.trim());
        return;
    }
    let commit = git(&dir, &["rev-parse", "--short=12", "HEAD"]);
    // Built again when the checkout moves: HEAD itself, the branch it
    // names, and the packed refs (a branch's ref may live only there).
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    if let Some(branch) = git(&dir, &["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(
            &dir,
            &["rev-parse", "--path-format=absolute", "--git-path", &name],
        ) && Path::new(&path).exists()
        {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    println!(
        "cargo:rustc-env=TOOLMOCK_COMMIT={}",
        commit.as_deref().unwrap_or("unknown")
    );
}
