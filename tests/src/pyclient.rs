//! The Python `mcp` client (the official SDK, [`MCP_VERSION`], from PyPI)
//! as a second, independent MCP client for the tests: a throw-away venv
//! under the target directory, made once per test process, and the
//! scripts in `tests/fixtures/` it runs (`approval_client.py`).
//!
//! The venv is `$CONDA_MCP_TEST_MCP_PYTHON` when set (an interpreter that
//! already has the package), else `target/mcp-client-<version>/`, created
//! with [`crate::standin::host_python`] and `pip install mcp==<version>`.
//! Installing needs PyPI: when pip cannot, the tests that need the client
//! belong to the `network` tier ([`crate::tiers::missing`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::standin::host_python;

/// The `mcp` release the tests speak with.
pub const MCP_VERSION: &str = "2.3.0";

/// The interpreter of a venv that has `mcp` [`MCP_VERSION`], or `None`
/// after [`crate::tiers::missing`] (a skip, or a failure when the `network`
/// tier is declared) when it cannot be installed. `test` names the caller
/// in that message.
pub fn mcp_python(test: &str) -> Option<PathBuf> {
    static VENV: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match VENV.get_or_init(make_venv) {
        Ok(p) => Some(p.clone()),
        Err(why) => {
            crate::tiers::missing(crate::tiers::Tier::Network, test, why);
            None
        }
    }
}

fn has_mcp(python: &Path) -> bool {
    Command::new(python)
        .args([
            "-c",
            &format!("import importlib.metadata as m; assert m.version('mcp') == '{MCP_VERSION}'"),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn make_venv() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("CONDA_MCP_TEST_MCP_PYTHON") {
        let p = PathBuf::from(p);
        return if has_mcp(&p) {
            Ok(p)
        } else {
            Err(format!(
                "CONDA_MCP_TEST_MCP_PYTHON={} has no mcp {MCP_VERSION}",
                p.display()
            ))
        };
    }
    let target = crate::bins::bin_dir()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir);
    let venv = target.join(format!("mcp-client-{MCP_VERSION}"));
    let python = venv.join("bin").join("python");
    if has_mcp(&python) {
        return Ok(python);
    }
    // Built aside and renamed, so a half-made venv is never used.
    let _ = std::fs::remove_dir_all(&venv);
    let work = tempfile::Builder::new()
        .prefix("mcp-client-")
        .tempdir_in(&target)
        .map_err(|e| format!("a folder for the venv: {e}"))?;
    let staged = work.path().join("venv");
    let run = |cmd: &mut Command, what: &str| -> Result<(), String> {
        let out = cmd
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{what}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{what} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    };
    run(
        Command::new(host_python())
            .args(["-m", "venv"])
            .arg(&staged),
        "python3 -m venv",
    )?;
    run(
        Command::new(staged.join("bin").join("pip")).args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            &format!("mcp=={MCP_VERSION}"),
        ]),
        "pip install mcp from PyPI",
    )?;
    std::fs::rename(&staged, &venv).map_err(|e| format!("moving the venv in place: {e}"))?;
    // The venv's scripts name their interpreter by path: check it moved whole.
    if has_mcp(&python) {
        Ok(python)
    } else {
        Err(format!(
            "the venv at {} does not import mcp",
            venv.display()
        ))
    }
}

/// Runs `tests/fixtures/<script>` with `python` and one JSON argument;
/// returns its stdout parsed as JSON.
///
/// Panics when the script fails or prints no JSON (its stderr is shown).
pub fn run_script(python: &Path, script: &str, config: &serde_json::Value) -> serde_json::Value {
    let out = Command::new(python)
        .arg(crate::paths::fixtures().join(script))
        .arg(config.to_string())
        .stdin(Stdio::null())
        .output()
        .expect("run the Python client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{script} failed ({}):\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "{script} printed no JSON ({e}):\n{stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}
