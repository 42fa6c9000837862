//! A server session on Windows (under wine here) against the replay conda:
//! the Windows `conda-mcp.exe` starts its Windows worker, which runs the
//! discovery helper and a tool call through the fake installation's
//! `python.exe` (the replay, src/main.rs). tests/tools/cross/setup.sh
//! `test` builds the server, the worker and the replay first; this test
//! finds them next to itself.
#![cfg(windows)]

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use conda_mcp_replay::{DUMP, INFO, Session, built, install, terminal_commands};
use serde_json::{Value, json};

/// conda's shell-only commands, never tools (server/src/catalog/build.rs
/// `SHELL_ONLY`, docs/reference.md "Generated tools").
const SHELL_ONLY: &[&str] = &["activate", "deactivate"];
/// The stand-in dump's command whose action no tool can represent, on
/// purpose (tests/fixtures/dumps/make_standin.py): listed in the catalog's
/// diagnostics, never a tool.
const UNREPRESENTABLE: &[&str] = &["legacy"];

fn exe(name: &str) -> PathBuf {
    let me = std::env::current_exe().expect("this test's path");
    built(&me, name).unwrap_or_else(|| {
        panic!(
            "{name}.exe is not built next to {}: run tests/tools/cross/setup.sh test, which builds it first",
            me.display()
        )
    })
}

/// Runs `cmd` (a `conda-mcp.exe check`) and returns its report, which
/// must end in success.
fn passing_check(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run conda-mcp.exe check");
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{report}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    report
}

#[test]
fn initialize_tools_list_and_a_call_through_the_replay() {
    let scratch = std::env::temp_dir().join(format!("conda-mcp-wine-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    // A space and a non-ASCII name in the installation's path, as in
    // `C:\Users\José Díaz\miniforge3`.
    let root = scratch.join("mini forge é");
    let inst = install(&root, &exe("conda-replay")).expect("the replay installation");

    let mut cmd = Command::new(exe("conda-mcp"));
    cmd.arg("--conda-exe")
        .arg(&inst.conda_exe)
        .arg("--no-cache")
        // What an activated conda sets: discovery takes the interpreter
        // from it (same installation) instead of `conda info`'s
        // sys.executable, which the recording took on Linux.
        .env("CONDA_PYTHON_EXE", &inst.python)
        .env("RUST_LOG", "warn");
    let mut s = Session::start(cmd).expect("start conda-mcp.exe");

    let init = s.initialize().expect("initialize");
    assert_eq!(init["protocolVersion"], "2025-06-18", "{init}");
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
    // One tool per terminal command of the dump, shell-only and
    // unrepresentable ones aside;
    // no fixed tool without --allow-exec or conda-completion.
    let dump: Value = serde_json::from_str(DUMP).expect("the recorded dump");
    let mut want: BTreeSet<String> = terminal_commands(&dump)
        .into_iter()
        .filter(|p| {
            !(p.len() == 1
                && (SHELL_ONLY.contains(&p[0].as_str())
                    || UNREPRESENTABLE.contains(&p[0].as_str())))
        })
        .map(|p| format!("conda_{}", p.join("_")))
        .collect();
    // The server's own read-only tool, listed in every mode.
    want.insert("conda_inventory".to_owned());
    assert_eq!(names, want);
    assert_eq!(names.len(), 18, "{names:?}");

    // A read-only call: conda runs as python.exe -m conda info --json in
    // the worker's job object; the result carries conda's recorded
    // output, parsed.
    let r = s
        .call("conda_info", json!({"json": true}))
        .expect("tools/call");
    assert_ne!(r["isError"], json!(true), "{r}");
    let st = &r["structuredContent"];
    assert_eq!(st["exit_code"], json!(0), "{st}");
    let info: Value = serde_json::from_str(INFO).expect("the recorded info");
    assert_eq!(st["parsed_json"], info, "{st}");

    // A call the replay has no answer for fails as conda would (its
    // status and stderr), as a tool result, not a protocol error.
    let r = s
        .call("conda_env_list", json!({"json": true}))
        .expect("tools/call");
    let st = &r["structuredContent"];
    assert_eq!(st["exit_code"], json!(2), "{r}");
    assert!(
        st["stderr"]
            .as_str()
            .unwrap_or("")
            .contains("conda-replay: refused"),
        "{r}"
    );

    // The checks inside conda's process decide on Windows too: the worker
    // runs conda as `python.exe -c <guard> CHECKS -m ARGV` (or hands the
    // job and its checks to the spare), and the guard reports on the
    // worker's private named pipe. Here the replay plays the guard and
    // reports what `guard-report.json` says conda decided: its `dry_run`
    // is false, forced by a `.condarc` with `#!final` that the server's own
    // reading (its prediction) never saw. The read-only preview (a change
    // without `yes: true` runs as a dry run) is refused, typed, naming that
    // file, and conda is stopped before it acts.
    let condarc = r"C:\Users\José\.condarc";
    std::fs::write(
        inst.python.with_file_name("guard-report.json"),
        json!({"dry_run": false, "refusal": {"dry_run_not_honoured": {
            "setting": {"key": "dry_run", "source": {"file": condarc}, "final": true}}}})
        .to_string(),
    )
    .expect("write guard-report.json");
    for round in ["first", "second"] {
        let r = s
            .call(
                "conda_install",
                json!({"packages": ["numpy"], "json": true}),
            )
            .expect("tools/call");
        let st = &r["structuredContent"];
        assert_eq!(
            st["error"]["code"],
            json!("dry_run_not_honoured"),
            "{round}: {r}"
        );
        assert_eq!(
            st["error"]["details"]["file"],
            json!(condarc),
            "{round}: {r}"
        );
    }
    // Without that decision the guard lets conda run: the replay has no
    // recorded install, so it fails as conda would (the guard did not stop
    // it).
    std::fs::remove_file(inst.python.with_file_name("guard-report.json")).expect("rm");
    let r = s
        .call(
            "conda_install",
            json!({"packages": ["numpy"], "json": true}),
        )
        .expect("tools/call");
    let st = &r["structuredContent"];
    assert_ne!(st["error"]["code"], json!("dry_run_not_honoured"), "{r}");
    assert!(
        st["stderr"]
            .as_str()
            .unwrap_or("")
            .contains("conda-replay: refused"),
        "{r}"
    );

    let status = s
        .close(Duration::from_secs(30))
        .expect("exit on a closed stdin");
    assert!(status.success(), "{status}");
    let _ = std::fs::remove_dir_all(&scratch);
}

/// `conda-mcp.exe check` on Windows: every step passes against the replay
/// (its interpreter probe included), and each host's configuration is
/// titled with its Windows place; Claude Code's line is quoted for
/// PowerShell.
#[test]
fn check_names_each_hosts_windows_place() {
    let scratch = std::env::temp_dir().join(format!("conda-mcp-wine-check-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let inst = install(&scratch.join("miniforge3"), &exe("conda-replay")).expect("installation");
    let server = exe("conda-mcp");
    let report = passing_check(
        Command::new(&server)
            .arg("check")
            .arg("--conda-exe")
            .arg(&inst.conda_exe)
            .arg("--no-cache")
            .env("CONDA_PYTHON_EXE", &inst.python),
    );
    assert!(report.contains("imports conda 26.7.1"), "{report}");
    // The section: its header, then the indented host entries, up to the
    // next line that is not indented (install links, what was checked).
    let from = &report[report.find("host configuration").expect("the section")..];
    let section = from
        .match_indices('\n')
        .map(|(i, _)| i + 1)
        .find(|&i| from[i..].chars().next().is_some_and(|c| !c.is_whitespace()))
        .map_or(from, |end| &from[..end]);
    let titles: Vec<&str> = section
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("    "))
        .map(str::trim)
        .collect();
    let places = [
        (
            "Claude Desktop",
            r"%APPDATA%\Claude\claude_desktop_config.json",
        ),
        ("Claude Code", "run in PowerShell"),
        ("VS Code", r"%APPDATA%\Code\User\mcp.json"),
        ("Cursor", r"%USERPROFILE%\.cursor\mcp.json"),
        ("Gemini CLI", r"%USERPROFILE%\.gemini\settings.json"),
        ("Codex CLI", r"%USERPROFILE%\.codex\config.toml"),
        (
            "GitHub Copilot CLI",
            r"%USERPROFILE%\.copilot\mcp-config.json",
        ),
        ("Goose", r"%APPDATA%\Block\goose\config\config.yaml"),
    ];
    assert_eq!(titles.len(), places.len(), "{section}");
    for (title, (host, place)) in titles.iter().zip(places) {
        assert!(
            title.starts_with(host) && title.contains(place),
            "{title:?} should be {host} at {place}"
        );
    }
    // The first body is Claude Desktop's JSON: the command is this very
    // conda-mcp.exe, the conda the one checked.
    let body: String = section
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("Claude Desktop"))
        .skip(1)
        .take_while(|l| l.starts_with("    "))
        .collect::<Vec<_>>()
        .join("\n");
    let desktop: Value = serde_json::from_str(&body).expect("Claude Desktop's JSON");
    let entry = &desktop["mcpServers"]["conda"];
    let command = PathBuf::from(entry["command"].as_str().expect("a command"));
    assert_eq!(
        std::fs::canonicalize(&command).expect("the command exists"),
        std::fs::canonicalize(&server).expect("the server exists"),
        "{entry}"
    );
    assert_eq!(entry["args"][0], "--conda-exe", "{entry}");
    let claude_code = section
        .lines()
        .find(|l| l.trim_start().starts_with("claude mcp add"))
        .expect("Claude Code's line");
    assert!(
        claude_code.contains(" '--' ") && claude_code.contains("'--conda-exe'"),
        "{claude_code}"
    );
    let _ = std::fs::remove_dir_all(&scratch);
}

/// An uninstall entry of the current user that is removed when dropped.
struct UninstallEntry(String);

impl Drop for UninstallEntry {
    fn drop(&mut self) {
        let _ = windows_registry::CURRENT_USER.remove_tree(&self.0);
    }
}

/// With no `--conda-exe`, no `CONDA_EXE`, no conda on `PATH` and no
/// `%USERPROFILE%\miniforge3`, `conda-mcp.exe check` finds the
/// installation an installer registered: an uninstall entry as
/// constructor's installer writes it for a "Just Me" install
/// (`"<root>\Uninstall-Miniforge3.exe"`, no `InstallLocation`).
#[test]
fn check_finds_an_installation_the_registry_names() {
    let pid = std::process::id();
    let scratch = std::env::temp_dir().join(format!("conda-mcp-wine-registry-{pid}"));
    let _ = std::fs::remove_dir_all(&scratch);
    let inst = install(&scratch.join("Mini forge é"), &exe("conda-replay")).expect("installation");
    let profile = scratch.join("profile");
    std::fs::create_dir_all(&profile).expect("a profile without miniforge3");

    let key = format!(
        r"Software\Microsoft\Windows\CurrentVersion\Uninstall\conda-mcp test {pid} (Python 3.12.0 64-bit)"
    );
    let entry = windows_registry::CURRENT_USER
        .create(&key)
        .expect("create the uninstall entry");
    let _removed = UninstallEntry(key);
    let uninstaller = inst.root.join("Uninstall-Miniforge3.exe");
    entry
        .set_string("DisplayName", "Miniforge3 (test)")
        .expect("DisplayName");
    entry
        .set_string("UninstallString", format!("\"{}\"", uninstaller.display()))
        .expect("UninstallString");
    entry
        .set_string(
            "QuietUninstallString",
            format!("\"{}\" /S", uninstaller.display()),
        )
        .expect("QuietUninstallString");

    let system_root = std::env::var_os("SystemRoot").expect("SystemRoot");
    let path = std::env::join_paths([
        PathBuf::from(&system_root).join("system32"),
        PathBuf::from(&system_root),
    ])
    .expect("a PATH");
    let report = passing_check(
        Command::new(exe("conda-mcp"))
            .arg("check")
            .arg("--no-cache")
            .env_remove("CONDA_EXE")
            .env("PATH", path)
            .env("USERPROFILE", &profile)
            .env("CONDA_PYTHON_EXE", &inst.python),
    );
    let conda = &report[report.find("conda:").expect("the conda section")..];
    assert!(
        conda.contains(&format!("executable    {}", inst.conda_exe.display())),
        "{conda}"
    );
    assert!(
        conda.contains("found by      the Windows registry"),
        "{conda}"
    );
    assert!(report.contains("imports conda 26.7.1"), "{report}");
    let _ = std::fs::remove_dir_all(&scratch);
}
