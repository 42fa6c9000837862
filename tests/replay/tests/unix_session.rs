//! A server session on Unix against the replay conda: `conda-mcp` starts
//! its worker, which runs the discovery helper and the calls through the
//! fake installation's `bin/python` (the replay, src/main.rs). Runs
//! natively in the workspace's tests, and for Linux arm64 under qemu
//! (tests/tools/cross/setup.sh `arm64-test`, which sets
//! `CONDA_MCP_TEST_RUNNER`): there no arm64 Python runs, which is why the
//! replay stands in, and every arm64 program (server, worker, replay) goes
//! through the emulator ([`conda_mcp_replay::install_unix`]).
#![cfg(unix)]

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use conda_mcp_replay::{
    DUMP, INFO, Session, build_workspace_bins, built, command, install_unix, runner,
    terminal_commands, wrap,
};
use serde_json::{Value, json};

/// conda's shell-only commands and the stand-in dump's unrepresentable
/// one: never tools (as in wine_session.rs).
const NOT_TOOLS: &[&str] = &["activate", "deactivate", "legacy"];

/// The built `name`. Natively the workspace's binaries are built first
/// (once per test process); under an emulator setup.sh `arm64-test` has
/// built them for the target.
fn exe(name: &str) -> PathBuf {
    static BUILT: std::sync::Once = std::sync::Once::new();
    let me = std::env::current_exe().expect("this test's path");
    if runner().is_none() {
        BUILT.call_once(|| build_workspace_bins(&me).expect("build the workspace's binaries"));
    }
    built(&me, name).unwrap_or_else(|| {
        panic!(
            "{name} is not built next to {}: `cargo build -p conda-mcp-server -p conda-mcp-replay --bins` first",
            me.display()
        )
    })
}

#[test]
fn initialize_tools_list_a_call_and_a_refusal_through_the_replay() {
    let scratch = tempfile_dir();
    // A non-ASCII name in the installation's path (no space: a `#!` line
    // ends its interpreter at the first one, and conda's launcher is one).
    let root = scratch.join("miniforgé");
    let runner = runner();
    let inst = install_unix(&root, &exe("conda-replay"), runner.as_deref())
        .expect("the replay installation");
    let worker = match &runner {
        Some(r) => wrap(&scratch.join("worker"), &exe("conda-mcp-worker"), r).expect("wrap"),
        None => exe("conda-mcp-worker"),
    };

    let mut cmd = command(&exe("conda-mcp"));
    cmd.arg("--conda-exe")
        .arg(&inst.conda_exe)
        .arg("--worker-exe")
        .arg(&worker)
        .arg("--no-cache")
        // The warm conda runs the worker's own Python program, which the
        // replay does not play; fresh conda processes it does.
        .arg("--no-warm-conda")
        .env("RUST_LOG", "warn");
    let mut s = Session::start(cmd).expect("start conda-mcp");

    let init = s.initialize().expect("initialize");
    assert_eq!(init["serverInfo"]["name"], "conda-mcp", "{init}");
    assert!(init["capabilities"]["tools"].is_object(), "{init}");

    let mut names = BTreeSet::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = s.request("tools/list", params).expect("tools/list");
        for t in page["tools"].as_array().expect("a tools array") {
            names.insert(t["name"].as_str().expect("a name").to_owned());
        }
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    let dump: Value = serde_json::from_str(DUMP).expect("the recorded dump");
    let mut want: BTreeSet<String> = terminal_commands(&dump)
        .into_iter()
        .filter(|p| !(p.len() == 1 && NOT_TOOLS.contains(&p[0].as_str())))
        .map(|p| format!("conda_{}", p.join("_")))
        .collect();
    // The server's own read-only tool, listed in every mode.
    want.insert("conda_inventory".to_owned());
    assert_eq!(names, want);
    assert_eq!(names.len(), 18, "{names:?}");

    // A recorded read-only call: conda's output, parsed.
    let r = s
        .call("conda_info", json!({"json": true}))
        .expect("tools/call");
    assert_ne!(r["isError"], json!(true), "{r}");
    let st = &r["structuredContent"];
    assert_eq!(st["exit_code"], json!(0), "{st}");
    let info: Value = serde_json::from_str(INFO).expect("the recorded info");
    assert_eq!(st["parsed_json"], info, "{st}");

    // A call the replay has no answer for fails as conda would.
    let r = s
        .call("conda_env_list", json!({"json": true}))
        .expect("tools/call");
    assert_eq!(r["structuredContent"]["exit_code"], json!(2), "{r}");

    // A refusal decided inside conda's process: the guard (played by the
    // replay) reports on descriptor 3 that conda's dry_run is false, forced
    // by a `#!final` .condarc the server never saw; the preview is refused,
    // typed, naming that file.
    let condarc = "/home/josé/.condarc";
    std::fs::write(
        inst.python.with_file_name("guard-report.json"),
        json!({"dry_run": false, "refusal": {"dry_run_not_honoured": {
            "setting": {"key": "dry_run", "source": {"file": condarc}, "final": true}}}})
        .to_string(),
    )
    .expect("write guard-report.json");
    let r = s
        .call(
            "conda_install",
            json!({"packages": ["numpy"], "json": true}),
        )
        .expect("tools/call");
    let st = &r["structuredContent"];
    assert_eq!(st["error"]["code"], json!("dry_run_not_honoured"), "{r}");
    assert_eq!(st["error"]["details"]["file"], json!(condarc), "{r}");

    let status = s
        .close(Duration::from_secs(60))
        .expect("exit on a closed stdin");
    assert!(status.success(), "{status}");
    let _ = std::fs::remove_dir_all(&scratch);
}

fn tempfile_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("conda-mcp-replay-unix-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch folder");
    d
}
