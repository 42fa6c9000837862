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

/// The recorded real conda 26 parser, read from `../shared/fixtures` beside
/// the checkout (never copied into the project), or from
/// `CONDA_MCP_REAL_DUMP`. `None` when absent: tests that need it then skip
/// with a message (see [`real_dump_or_skip`]).
pub fn real_dump() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CONDA_MCP_REAL_DUMP") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let p = workspace_root()
        .join("..")
        .join("shared")
        .join("fixtures")
        .join("conda-26-parser.json");
    p.is_file().then_some(p)
}

/// [`real_dump`], printing a skip message on stderr when it is absent.
pub fn real_dump_or_skip(test: &str) -> Option<PathBuf> {
    let p = real_dump();
    if p.is_none() {
        eprintln!(
            "SKIPPED {test}: ../shared/fixtures/conda-26-parser.json is absent (set CONDA_MCP_REAL_DUMP to run it)"
        );
    }
    p
}
