//! The installed binaries, used the way an MCP host uses them: nothing but
//! the folder they were installed into (no `--worker-exe`, a `PATH` without
//! them), against the stand-in conda.
//!
//! `CONDA_MCP_INSTALLED_BIN_DIR` names that folder: `.ci/run` builds the
//! wheel with maturin, installs it into a fresh venv (and with `uv tool
//! install`) and runs this module once per install
//! (`cargo test -p conda-mcp-tests --test mcp installed::`). Without the variable the
//! folder is cargo's build folder, which is laid out the same way
//! (`cargo install --path server` puts both binaries side by side too).
//!
//! Each test: `--version` of both binaries, `conda-mcp check` (exit 0, the
//! worker found next to `conda-mcp`), and an MCP session (initialize,
//! tools/list, a `conda_info` call) through the installed `conda-mcp`.

use std::path::PathBuf;
use std::process::Command;

use conda_mcp_tests::bins;
use conda_mcp_tests::mcp::{Era, Server};
use conda_mcp_tests::standin::StandinPrefix;
use serde_json::json;

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `PATH` for the installed binaries: system folders only, so nothing is
/// found there by accident.
const SYSTEM_PATH: &str = "/usr/bin:/bin";

fn installed_dir() -> PathBuf {
    match std::env::var_os("CONDA_MCP_INSTALLED_BIN_DIR") {
        Some(d) => {
            let d = PathBuf::from(d);
            eprintln!("testing the binaries installed in {}", d.display());
            d
        }
        None => {
            eprintln!(
                "CONDA_MCP_INSTALLED_BIN_DIR not set: testing cargo's build folder {}",
                bins::bin_dir().display()
            );
            bins::bin_dir().to_path_buf()
        }
    }
}

#[test]
fn installed_binaries_report_the_workspace_version() {
    let dir = installed_dir();
    for exe in ["conda-mcp", "conda-mcp-worker"] {
        let out = Command::new(dir.join(exe))
            .arg("--version")
            .env("PATH", SYSTEM_PATH)
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}", dir.join(exe).display()));
        assert!(out.status.success(), "{exe} --version");
        // The server also names the commit it was built from.
        let expected = if exe == "conda-mcp" {
            conda_mcp_tests::paths::expected_server_version()
        } else {
            format!("{exe} {VERSION}")
        };
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), expected);
    }
}

#[test]
fn installed_check_finds_the_installed_worker() {
    let dir = installed_dir();
    let standin = StandinPrefix::standard();
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = Command::new(dir.join("conda-mcp"))
        .arg("check")
        .arg("--conda-exe")
        .arg(&standin.conda_exe)
        .env("XDG_CACHE_HOME", tmp.path().join("cache"))
        .env_remove("CONDA_EXE")
        .env("PATH", SYSTEM_PATH)
        .output()
        .expect("run conda-mcp check");
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The worker next to the installed conda-mcp (symlinks resolved, as
    // for uv's and pipx's linked bin folders).
    let worker = std::fs::canonicalize(dir.join("conda-mcp"))
        .expect("canonical conda-mcp")
        .with_file_name("conda-mcp-worker");
    assert!(
        report.contains(&format!("binary        {}", worker.display())),
        "expected the worker {} in:\n{report}",
        worker.display()
    );
    assert!(report.contains("conda info    exit 0"), "{report}");
    assert!(
        report
            .lines()
            .last()
            .unwrap_or("")
            .starts_with("result: OK: "),
        "{report}"
    );
}

#[tokio::test]
async fn installed_server_serves_a_session() {
    let dir = installed_dir();
    let standin = StandinPrefix::standard();
    let exe = dir.join("conda-mcp");
    let server = Server::start_command(
        |private| {
            let mut cmd = tokio::process::Command::new(&exe);
            cmd.arg("--conda-exe")
                .arg(&standin.conda_exe)
                .env("XDG_CACHE_HOME", private.join("cache"))
                .env_remove("CONDA_EXE")
                .env("PATH", SYSTEM_PATH)
                .kill_on_drop(true);
            cmd
        },
        Era::Initialize,
    )
    .await;
    let tools = server.tools().await;
    assert!(
        tools.iter().any(|t| t.name == "conda_info"),
        "tools/list has no conda_info"
    );
    let r = server.call_ok("conda_info", json!({"json": true})).await;
    let s = r.structured_content.clone().expect("structuredContent");
    assert_eq!(
        s["exit_code"],
        0,
        "conda_info failed: {s}\nstderr:\n{}",
        server.stderr_text()
    );
    assert!(s["parsed_json"].is_object(), "{s}");
    server.close().await;
}
