//! Records the commit the binaries are built from, for `conda-mcp --version`
//! (`conda-mcp 0.1.0 (commit 1a2b3c4)`), as the compile-time environment
//! variable `CONDA_MCP_COMMIT`.
//!
//! Where it comes from, first found wins:
//! 1. `CONDA_MCP_COMMIT` in the build's environment, for packagers building
//!    from a source archive who know the commit;
//! 2. `git rev-parse --short HEAD`, when this package sits in a git checkout
//!    whose top is this workspace (an unpacked source archive inside some
//!    other repository must not borrow that repository's commit);
//! 3. `unknown` (a source archive, e.g. the wheel's sdist, has no `.git`).
//!
//! The script reruns when HEAD moves (a commit, a checkout), so the commit
//! printed is the one built, not the one of the first build.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (!s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-env-changed=CONDA_MCP_COMMIT");
    println!("cargo:rerun-if-changed=build.rs");
    let manifest_dir =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let commit = std::env::var("CONDA_MCP_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| from_git(&manifest_dir))
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=CONDA_MCP_COMMIT={commit}");
}

/// The short commit of HEAD when the workspace root (this package's parent)
/// is the top of a git checkout; also tells cargo which git files to watch.
fn from_git(manifest_dir: &Path) -> Option<String> {
    let workspace = manifest_dir.parent()?;
    let top = git(workspace, &["rev-parse", "--show-toplevel"])?;
    if std::fs::canonicalize(&top).ok()? != std::fs::canonicalize(workspace).ok()? {
        return None;
    }
    // HEAD (per worktree), the branch it names, and packed-refs (where
    // `git gc` moves a branch's ref).
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    if let Some(branch) = git(workspace, &["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        let path = git(
            workspace,
            &["rev-parse", "--path-format=absolute", "--git-path", &name],
        );
        if let Some(path) = path.filter(|p| Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    git(workspace, &["rev-parse", "--short", "HEAD"])
}
