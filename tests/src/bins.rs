//! Locating the built `conda-mcp` and `conda-mcp-worker` binaries for the
//! black-box tests.
//!
//! Cargo builds another package's binaries for this crate's tests only by
//! accident, so the first call in a test process runs
//! `cargo build --bins -p conda-mcp-server` (both binaries are targets of
//! that package) once, into
//! the target directory of the running test (a no-op when they are fresh).
//! Cargo releases its build lock before it runs test binaries, so this does
//! not deadlock under `cargo test --workspace`.
//!
//! `CONDA_MCP_BIN_DIR` names a folder holding both binaries instead (no
//! build). If neither works the test panics with the command to run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The folder holding the freshly built binaries.
pub fn bin_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Some(dir) = std::env::var_os("CONDA_MCP_BIN_DIR") {
            return PathBuf::from(dir);
        }
        let dir = profile_dir();
        build_into(&dir);
        dir
    })
}

/// The `conda-mcp` server binary.
pub fn server() -> PathBuf {
    existing(bin_dir().join("conda-mcp"))
}

/// The `conda-mcp-worker` binary.
pub fn worker() -> PathBuf {
    existing(bin_dir().join("conda-mcp-worker"))
}

const BUILD_HINT: &str = "cargo build --bins -p conda-mcp-server";

fn existing(p: PathBuf) -> PathBuf {
    assert!(
        p.is_file(),
        "{} is missing: run `{BUILD_HINT}` (or set CONDA_MCP_BIN_DIR)",
        p.display()
    );
    p
}

/// `target/<profile>` of the running test binary (`target/<profile>/deps/x`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("deps folder");
    let dir = if deps.file_name().is_some_and(|n| n == "deps") {
        deps.parent().expect("profile folder")
    } else {
        deps
    };
    dir.to_path_buf()
}

fn build_into(profile_dir: &Path) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let profile = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("debug");
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "--bins", "-p", "conda-mcp-server"]);
    match profile {
        "debug" => {}
        "release" => {
            cmd.arg("--release");
        }
        other => {
            cmd.args(["--profile", other]);
        }
    }
    if let Some(target) = profile_dir.parent() {
        cmd.arg("--target-dir").arg(target);
    }
    cmd.current_dir(crate::paths::workspace_root())
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    let status = cmd.status();
    assert!(
        matches!(status, Ok(s) if s.success()),
        "building the binaries failed ({status:?}): run `{BUILD_HINT}` and look at its errors"
    );
}
