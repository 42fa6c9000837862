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
