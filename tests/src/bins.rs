//! Locating the built `conda-mcp` and `conda-mcp-worker` binaries for the
//! black-box tests.
//!
//! Cargo builds another package's binaries for this crate's tests only by
//! accident, so the first call in a test process runs
//! `cargo build --workspace --bins` once, into the target directory of the
//! running test (a no-op when they are fresh). `--workspace`, not `-p
//! conda-mcp-server -p conda-mcp-worker`: the features of shared
//! dependencies are then the ones `cargo test --workspace` resolved (this
//! crate adds rmcp's client features), so the binaries reuse the libraries
//! the tests were built with instead of building a second copy of rmcp,
//! the server library and everything between them.
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

const BUILD_HINT: &str = "cargo build --workspace --bins";

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
    cmd.args(["build", "--quiet", "--workspace", "--bins"]);
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

/// A command that runs one `#[ignore]`d helper test of the running test
/// binary in a process of its own (`--ignored --exact NAME --nocapture
/// --test-threads=1`), for tests that need a second "server" process to
/// kill. `module_path` is the caller's `module_path!()`: libtest names a
/// test by its path below the crate root (`worker::serve` and `helper` →
/// `serve::helper`), which changes when test files are grouped into one
/// binary, so the name is derived, never spelled out.
pub fn helper_test(module_path: &str, name: &str) -> Command {
    let exact = match module_path.split_once("::") {
        Some((_, below_root)) => format!("{below_root}::{name}"),
        None => name.to_string(),
    };
    let mut cmd = Command::new(std::env::current_exe().expect("the test binary's path"));
    cmd.args([
        "--ignored",
        "--exact",
        &exact,
        "--nocapture",
        "--test-threads=1",
    ]);
    cmd
}
