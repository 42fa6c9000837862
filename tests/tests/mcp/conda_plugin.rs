//! `conda mcp`: the subcommand plugin (python/conda_mcp/plugin.py) loaded
//! by the stand-in conda through conda's plugin mechanism (an entry point
//! of group `conda` whose `conda_subcommands` hook registers `mcp`; the
//! stand-in then calls the plugin's action with every argument after `mcp`,
//! as conda's `do_call` does).
//!
//! The plugin replaces the conda process with the built `conda-mcp` (placed
//! in the prefix's `bin/`, where the wheel and the conda package put it),
//! passing `--conda-exe <the invoking conda>` and the arguments unchanged;
//! it refuses with one line when the invoking conda is unknown. The server
//! serving that conda never offers `conda mcp` as a tool and says why in
//! `conda://capabilities`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use conda_mcp_tests::bins;
use conda_mcp_tests::mcp::{Era, Server};
use conda_mcp_tests::standin::{PluginSpec, StandinPrefix};
use serde_json::Value;

/// The repository's `python/` folder (the plugin's source).
fn plugin_source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .join("python")
}

/// A stand-in prefix with the plugin installed as the wheel installs it:
/// the `conda_mcp` package importable, its entry point in group `conda`,
/// and both binaries in the prefix's `bin/`.
fn prefix_with_plugin() -> StandinPrefix {
    let standin = StandinPrefix::standard();
    std::fs::write(
        standin.site_packages.join("conda_mcp_plugin_source.pth"),
        format!("{}\n", plugin_source().display()),
    )
    .expect("write the .pth");
    standin
        .add_entry_point(&PluginSpec {
            distribution: "conda-mcp".into(),
            version: "0.1.0".into(),
            name: "conda-mcp".into(),
            value: "conda_mcp.plugin".into(),
        })
        .expect("entry point");
    let bin = standin.prefix.join("bin");
    for exe in [bins::server(), bins::worker()] {
        let name = exe.file_name().expect("name").to_owned();
        std::os::unix::fs::symlink(&exe, bin.join(name)).expect("symlink the binary");
    }
    standin
}

/// Runs `conda ARGS` of the prefix with a private cache and a `PATH` that
/// holds no conda and no conda-mcp.
fn conda(standin: &StandinPrefix, exe: &Path, args: &[&str], cache: &Path) -> Output {
    Command::new(exe)
        .args(args)
        .env("XDG_CACHE_HOME", cache)
        .env_remove("CONDA_EXE")
        .env_remove("RUST_LOG")
        .env("PATH", "/usr/bin:/bin")
        .current_dir(&standin.prefix)
        .stdin(Stdio::null())
        .output()
        .expect("run conda")
}

#[test]
fn conda_mcp_execs_the_server_with_the_invoking_conda_and_every_argument() {
    let standin = prefix_with_plugin();
    let dir = tempfile::tempdir().expect("tempdir");
    // An argument with a space and one that looks like an option of conda's
    // own: both must arrive unchanged, in order.
    let o = conda(
        &standin,
        &standin.conda_exe,
        &[
            "mcp",
            "check",
            "--timeout",
            "60",
            "--tools",
            "conda_info,env *",
            "--allow-write",
        ],
        &dir.path().join("cache"),
    );
    let report = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{report}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let canonical = std::fs::canonicalize(&standin.conda_exe).expect("canonical");
    assert!(
        report.contains(&format!("executable    {}", canonical.display()))
            && report.contains("found by      --conda-exe"),
        "the invoking conda, passed as --conda-exe:\n{report}"
    );
    let start = report.find("VS Code").expect("VS Code snippet");
    let json_start = start + report[start..].find('{').expect("json");
    let json_end = json_start + report[json_start..].find("\n  Cursor").expect("next");
    let snippet: Value = serde_json::from_str(&report[json_start..json_end]).expect("JSON");
    assert_eq!(
        snippet["servers"]["conda"]["args"],
        serde_json::json!([
            "--conda-exe",
            canonical.to_str().expect("utf-8"),
            "--timeout",
            "60",
            "--tools",
            "conda_info,env *",
            "--allow-write"
        ]),
        "the arguments after `mcp`, unchanged"
    );
    assert!(
        report.contains("changes allowed (--allow-write)"),
        "{report}"
    );
}

/// `conda mcp` is a host command: the process the host starts becomes the
/// server (exec, not a child of conda) and answers MCP on its stdio.
#[test]
fn conda_mcp_becomes_the_server_process() {
    let standin = prefix_with_plugin();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(&standin.conda_exe)
        .args(["mcp", "--result-mode", "lean"])
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .env_remove("CONDA_EXE")
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn conda mcp");
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    )
    .expect("send initialize");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read the answer");
    let answer: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
    assert_eq!(answer["id"], 1, "{answer}");
    assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
    // Answered, so the exec happened: the very process conda started as is
    // now conda-mcp.
    let exe = std::fs::read_link(format!("/proc/{}/exe", child.id())).expect("exe link");
    assert_eq!(
        std::fs::canonicalize(exe).expect("canonical"),
        std::fs::canonicalize(bins::server()).expect("canonical"),
    );
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(status.success(), "{status:?}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the server did not exit after stdin closed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn conda_mcp_refuses_with_one_line_when_the_invoking_conda_is_unknown() {
    let standin = prefix_with_plugin();
    let dir = tempfile::tempdir().expect("tempdir");
    // Started under another name, in an installation without bin/conda:
    // neither sys.argv[0] nor <sys.prefix>/bin/conda names the conda.
    let renamed = standin.prefix.join("bin").join("conda-renamed");
    std::fs::rename(&standin.conda_exe, &renamed).expect("rename");
    let o = conda(
        &standin,
        &renamed,
        &["mcp", "--version"],
        &dir.path().join("cache"),
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "stderr:\n{stderr}");
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_eq!(stderr.lines().count(), 1, "one line:\n{stderr}");
    assert!(
        stderr.starts_with("conda mcp: cannot tell which conda executable")
            && stderr.contains("--conda-exe"),
        "{stderr}"
    );
}

#[tokio::test]
async fn the_server_never_offers_conda_mcp_and_says_why() {
    let standin = prefix_with_plugin();
    let server = Server::start(&standin.conda_exe, &[], Era::Initialize).await;
    let tools = server.tools().await;
    assert!(tools.iter().any(|t| t.name == "conda_info"), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t.name.contains("mcp")),
        "no conda mcp tool: {:?}",
        tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>()
    );
    let (text, _) = server
        .read_text("conda://capabilities")
        .await
        .expect("capabilities");
    let caps: Value = serde_json::from_str(&text).expect("JSON");
    let catalog = caps["catalog"]["commands"]
        .as_array()
        .expect("catalog commands");
    let mcp = catalog
        .iter()
        .find(|c| c["path"] == serde_json::json!(["conda", "mcp"]))
        .unwrap_or_else(|| panic!("`conda mcp` is in the catalog: {catalog:?}"));
    assert_eq!(mcp["exposure"]["kind"], "nested_server", "{mcp}");
    assert!(
        mcp["exposure"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("never useful")),
        "{mcp}"
    );
    server.close().await;
}

/// Real tier: a real conda (`CONDA_MCP_TEST_CONDA`) loads the plugin through
/// its own plugin mechanism (the entry point found on `PYTHONPATH`, so the
/// conda installation itself is left untouched), lists `mcp` in its help,
/// and `conda mcp --help` / `conda mcp check` become the built `conda-mcp`
/// (found on `PATH`) serving that very conda.
#[test]
fn real_conda_loads_the_plugin_and_conda_mcp_becomes_the_server() {
    let Some(real) = conda_mcp_tests::tiers::real_conda(module_path!()) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let site = dir.path().join("site");
    let dist_info = site.join("conda_mcp-0.1.0.dist-info");
    std::fs::create_dir_all(&dist_info).expect("dist-info");
    std::os::unix::fs::symlink(plugin_source().join("conda_mcp"), site.join("conda_mcp"))
        .expect("plugin package");
    std::fs::write(
        dist_info.join("METADATA"),
        "Metadata-Version: 2.1\nName: conda-mcp\nVersion: 0.1.0\n",
    )
    .expect("METADATA");
    std::fs::write(
        dist_info.join("entry_points.txt"),
        "[conda]\nconda-mcp = conda_mcp.plugin\n",
    )
    .expect("entry_points.txt");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).expect("bin");
    for exe in [bins::server(), bins::worker()] {
        let name = exe.file_name().expect("name").to_owned();
        std::os::unix::fs::symlink(&exe, bin.join(name)).expect("symlink the binary");
    }
    let run = |args: &[&str]| {
        Command::new(&real)
            .args(args)
            .env("PYTHONPATH", &site)
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .env_remove("CONDA_EXE")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .output()
            .expect("run the real conda")
    };
    let text = |o: &Output| {
        format!(
            "status {:?}\nstdout:\n{}\nstderr:\n{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };

    let help = run(&["--help"]);
    assert!(
        String::from_utf8_lossy(&help.stdout).contains("mcp"),
        "conda --help lists mcp:\n{}",
        text(&help)
    );
    let o = run(&["mcp", "--help"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("Usage: conda-mcp"),
        "conda-mcp's own help:\n{}",
        text(&o)
    );
    let o = run(&["mcp", "check", "--timeout", "120"]);
    let report = String::from_utf8_lossy(&o.stdout);
    let canonical = std::fs::canonicalize(&real).expect("canonical");
    assert!(
        report.contains(&format!("executable    {}", canonical.display()))
            && report.contains("found by      --conda-exe"),
        "{}",
        text(&o)
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}
