//! Where the fixtures are.

use std::path::PathBuf;

/// The workspace root (the folder holding the top-level `Cargo.toml`).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// `tests/fixtures`.
pub fn fixtures() -> PathBuf {
    workspace_root().join("tests").join("fixtures")
}

/// The recorded real conda 26 parser: the project's own recording
/// `tests/fixtures/dumps/conda-26.json` (made with
/// `tests/fixtures/dumps/record_conda.py`), or the file named by
/// `CONDA_MCP_REAL_DUMP` to run the same tests on another recording.
/// Always present, so the tests that read it never skip.
pub fn real_dump() -> PathBuf {
    match std::env::var_os("CONDA_MCP_REAL_DUMP") {
        Some(p) => PathBuf::from(p),
        None => fixtures().join("dumps").join("conda-26.json"),
    }
}

/// What `conda-mcp --version` of a binary built from this checkout prints:
/// `conda-mcp <workspace version> (commit <git rev-parse --short HEAD>)`,
/// `unknown` for the commit when this is not a git checkout (server/build.rs).
pub fn expected_server_version() -> String {
    let commit = std::process::Command::new("git")
        .arg("-C")
        .arg(workspace_root())
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "unknown".to_owned());
    format!("conda-mcp {} (commit {commit})", env!("CARGO_PKG_VERSION"))
}
