//! `conda-mcp check` against the stand-in conda, as a person runs it: the
//! built binary, a private cache folder, the report on stdout.
//!
//! Success: every section, exit status 0, a second run hits the cache, the
//! host configuration parses and starts the same server, one configuration
//! per host (lean results for Claude Desktop and Claude Code, whose command
//! line starts a working server) and one line on the policy flags. Failures
//! (no conda, a broken interpreter, a missing worker): exit status 1 and a
//! one-line reason as the last line; a tool filter the server would refuse
//! is a failure too. Without any conda, the server and `check` say how to
//! point at one and where to get one.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use conda_mcp_tests::bins;
use conda_mcp_tests::mcp::{Era, Server};
use conda_mcp_tests::standin::StandinPrefix;
use serde_json::Value;

/// Runs `conda-mcp check ARGS` (the binary `exe`) with the cache in `cache`
/// and `PATH` limited to the system folders (no conda, no worker there).
fn check_with(exe: &Path, args: &[&std::ffi::OsStr], cache: &Path) -> Output {
    Command::new(exe)
        .arg("check")
        .args(args)
        .env("XDG_CACHE_HOME", cache)
        .env_remove("CONDA_EXE")
        .env_remove("RUST_LOG")
        .env("PATH", "/usr/bin:/bin")
        .output()
        .expect("run conda-mcp check")
}

/// A TOML document as JSON, read by Python's `tomllib` (the tests' Python,
/// 3.11 or newer): an independent reader of what `check` prints for Codex.
fn toml_to_json(text: &str) -> Value {
    use std::io::Write as _;
    let mut child = std::process::Command::new(conda_mcp_tests::standin::host_python())
        .args([
            "-c",
            "import json, sys, tomllib; print(json.dumps(tomllib.loads(sys.stdin.read())))",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write the TOML");
    let out = child.wait_with_output().expect("tomllib");
    assert!(out.status.success(), "not TOML:\n{text}");
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The last line of the report: the verdict.
fn verdict(o: &Output) -> String {
    stdout(o).lines().last().unwrap_or("").to_owned()
}

/// The host configuration section of a report: from its heading to the
/// details of what was checked, which follow it.
fn configurations(report: &str) -> &str {
    let section = &report[report.find("\nhost configuration").expect("the section")..];
    &section[..section.find("\nwhat was checked").unwrap_or(section.len())]
}

/// The configuration under host `host`'s title in a report's host
/// configuration section (its indented lines, unindented).
fn host_body(report: &str, host: &str) -> String {
    let section = configurations(report);
    let start = section.find(&format!("  {host}")).expect("host");
    let rest = &section[start..];
    let rest = &rest[rest.find('\n').expect("title line") + 1..];
    rest.lines()
        .take_while(|l| l.starts_with("    "))
        .map(|l| &l[4..])
        .collect::<Vec<_>>()
        .join("\n")
}

fn assert_failed(o: &Output, reason_has: &str) {
    let report = stdout(o);
    assert_eq!(o.status.code(), Some(1), "exit status:\n{report}");
    let last = verdict(o);
    assert!(
        last.starts_with("result: FAILED: ") && last.contains(reason_has),
        "verdict {last:?} should give a reason with {reason_has:?}:\n{report}"
    );
    assert_eq!(
        report.lines().filter(|l| l.starts_with("result:")).count(),
        1,
        "one verdict line"
    );
}

#[test]
fn check_reports_a_working_setup_and_exits_0() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("cache");
    let conda = standin.conda_exe.as_os_str();
    let o = check_with(
        &bins::server(),
        &[
            "--conda-exe".as_ref(),
            conda,
            "--allow-write".as_ref(),
            "--timeout".as_ref(),
            "60".as_ref(),
            "--verbose".as_ref(),
        ],
        &cache,
    );
    let report = stdout(&o);
    assert_eq!(
        o.status.code(),
        Some(0),
        "report:\n{report}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let canonical = std::fs::canonicalize(&standin.conda_exe).expect("canonical");
    for needle in [
        format!("executable    {}", canonical.display()),
        "found by      --conda-exe".to_owned(),
        format!("binary        {}", bins::worker().display()),
        "found         next to the conda-mcp executable".to_owned(),
        "cache         miss: no cache entry".to_owned(),
        "cache         written: ".to_owned(),
        format!("interpreter   {}", standin.python.display()),
        "from          the conda script's shebang".to_owned(),
        "imports conda".to_owned(),
        "conda info    exit 0 in ".to_owned(),
        "tools (--allow-write on, --allow-exec off, --schema-profile portable):".to_owned(),
        "read-only".to_owned(),
        "conda_info".to_owned(),
        "runs programs".to_owned(),
        "conda_execute not listed (needs --allow-exec)".to_owned(),
        "policy        changes allowed (--allow-write); add --allow-exec to let it run programs"
            .to_owned(),
        "Claude Desktop".to_owned(),
        "Claude Code".to_owned(),
        "VS Code".to_owned(),
        "Cursor".to_owned(),
    ] {
        assert!(report.contains(&needle), "missing {needle:?} in:\n{report}");
    }
    assert!(verdict(&o).starts_with("result: OK: "), "{}", verdict(&o));

    // The log section: how stderr is written, and nothing dropped (the
    // test reads stderr), hence no warning about it.
    let log = &report[report.find("\nlog:\n").expect("a log section")..];
    let log = &log[..log[1..].find("\n\n").map_or(log.len(), |n| n + 1)];
    assert!(
        log.contains("  stderr        written by a thread of its own behind a 64 KiB queue"),
        "{log}"
    );
    assert!(log.contains("  dropped       0 lines so far"), "{log}");
    assert!(!report.contains("log lines were dropped"), "{report}");

    // The VS Code snippet: absolute paths, the checked conda, the flags.
    let start = report.find("VS Code").expect("VS Code section");
    let json_start = start + report[start..].find('{').expect("json");
    let json_end = json_start
        + report[json_start..]
            .find("\n  Cursor")
            .expect("next section");
    let snippet: Value = serde_json::from_str(&report[json_start..json_end]).expect("valid JSON");
    let server = &snippet["servers"]["conda"];
    assert_eq!(server["type"], "stdio");
    let command = PathBuf::from(server["command"].as_str().expect("command"));
    assert!(command.is_absolute() && command.is_file(), "{command:?}");
    let args: Vec<&str> = server["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("str"))
        .collect();
    assert_eq!(
        args,
        [
            "--conda-exe",
            canonical.to_str().expect("utf-8"),
            "--allow-write",
            "--timeout",
            "60"
        ]
    );

    // A second run hits the cache written by the first.
    let again = check_with(&bins::server(), &["--conda-exe".as_ref(), conda], &cache);
    assert_eq!(again.status.code(), Some(0), "{}", stdout(&again));
    let report = stdout(&again);
    assert!(report.contains("cache         hit"), "{report}");
    assert!(
        report.contains("interpreter   ") && report.contains("the startup cache"),
        "{report}"
    );
    assert!(report.contains("imports conda"), "{report}");
}

/// What every "no conda" message says: how to point at one, where to get one.
fn assert_says_how_to_get_a_conda(text: &str) {
    for needle in [
        "no conda found",
        "--conda-exe",
        "CONDA_EXE",
        "PATH",
        "Miniforge",
        "https://conda-forge.org/download/",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

/// `--tools` that leaves `conda_execute` out: `check` says so, as the
/// server lists it (not at all), instead of calling it listed.
#[test]
fn check_says_when_the_tool_filter_leaves_conda_execute_out() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    let conda = standin.conda_exe.as_os_str();
    for (tools, line) in [
        ("info", "conda_execute not listed (left out by --tools)"),
        ("info,conda_execute", "conda_execute listed (raw argv"),
    ] {
        let o = check_with(
            &bins::server(),
            &[
                "--conda-exe".as_ref(),
                conda,
                "--allow-exec".as_ref(),
                "--tools".as_ref(),
                tools.as_ref(),
            ],
            &dir.path().join("cache"),
        );
        let report = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{tools}: {report}");
        let found = report
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .any(|l| l.contains(line));
        assert!(found, "{tools}: missing {line:?} in:\n{report}");
    }
}

#[test]
fn check_in_compact_mode_lists_command_paths_not_typed_tools() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    let o = check_with(
        &bins::server(),
        &[
            "--conda-exe".as_ref(),
            standin.conda_exe.as_os_str(),
            "--tool-mode".as_ref(),
            "compact".as_ref(),
        ],
        &dir.path().join("cache"),
    );
    let report = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{report}");
    assert!(
        report.contains("compact: conda_commands, conda_describe, conda_call"),
        "{report}"
    );
    // The commands by the path conda_call takes; no typed tool name.
    let tools = &report[report.find("tools (").expect("tools section")..];
    let tools = &tools[..tools.find("\nlog:").expect("log section")];
    assert!(tools.contains("env list"), "{tools}");
    assert!(
        !tools.contains("conda_info") && !tools.contains("conda_env_list"),
        "{tools}"
    );
    // The three and the server's inventory, listed in every mode.
    assert!(verdict(&o).contains("with 4 tools"), "{}", verdict(&o));
}

#[test]
fn check_without_any_conda_fails_with_one_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = check_with(&bins::server(), &[], &dir.path().join("cache"));
    assert_failed(&o, "no conda found");
    assert_says_how_to_get_a_conda(&verdict(&o));
    // The conda section is not an empty heading.
    assert!(
        stdout(&o).contains("conda:\n  executable    not found"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn the_server_without_any_conda_says_how_to_point_at_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = Command::new(bins::server())
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .env_remove("CONDA_EXE")
        .env_remove("RUST_LOG")
        .env("PATH", "/usr/bin:/bin")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run conda-mcp");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "stderr:\n{stderr}");
    assert!(o.stdout.is_empty(), "stdout carries MCP frames only");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one message:\n{stderr}");
    assert!(!stderr.contains("discovery failed"), "{stderr}");
    assert_says_how_to_get_a_conda(&stderr);
}

/// The host configuration section, one configuration per host: Claude
/// Desktop and Claude Code with lean results, VS Code and Cursor as given;
/// the Claude Code command line, run as a shell would split it, starts a
/// server that answers.
#[tokio::test]
async fn check_prints_one_configuration_per_host_as_recommended() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    let o = check_with(
        &bins::server(),
        &["--conda-exe".as_ref(), standin.conda_exe.as_os_str()],
        &dir.path().join("cache"),
    );
    let report = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{report}");
    assert!(
        report.contains(
            "policy        read-only (dry runs show plans); add --allow-write to let it install"
        ) && report.contains("--approve-writes")
            && report.contains("add --allow-exec to let it run programs"),
        "{report}"
    );
    let section = configurations(&report);
    let titles: Vec<&str> = section
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("    "))
        .map(str::trim)
        .collect();
    let hosts = [
        "Claude Desktop",
        "Claude Code",
        "VS Code",
        "Cursor",
        "Gemini CLI",
        "Codex CLI",
        "GitHub Copilot CLI",
        "Goose",
    ];
    assert_eq!(titles.len(), hosts.len(), "{section}");
    for (title, host) in titles.iter().zip(hosts) {
        assert!(title.starts_with(host), "{title:?} should be {host}");
    }
    let body = |host: &str| host_body(section, host);
    let canonical = std::fs::canonicalize(&standin.conda_exe).expect("canonical");
    let conda = canonical.to_str().expect("utf-8");
    let desktop: Value = serde_json::from_str(&body("Claude Desktop")).expect("JSON");
    let desktop = &desktop["mcpServers"]["conda"];
    assert_eq!(
        desktop["args"],
        serde_json::json!(["--conda-exe", conda, "--result-mode", "lean"])
    );
    for host in ["VS Code", "Cursor"] {
        let v: Value = serde_json::from_str(&body(host)).expect("JSON");
        let server = v.get("servers").unwrap_or(&v["mcpServers"]);
        assert_eq!(
            server["conda"]["args"],
            serde_json::json!(["--conda-exe", conda])
        );
    }
    // Gemini CLI: trusted, or headless gemini -p lists none of the tools.
    let gemini: Value = serde_json::from_str(&body("Gemini CLI")).expect("JSON");
    let gemini = &gemini["mcpServers"]["conda"];
    assert_eq!(gemini["trust"], serde_json::json!(true));
    assert_eq!(gemini["args"], serde_json::json!(["--conda-exe", conda]));
    // Copilot CLI: a local server with all its tools.
    let copilot: Value = serde_json::from_str(&body("GitHub Copilot CLI")).expect("JSON");
    let copilot = &copilot["mcpServers"]["conda"];
    assert_eq!(copilot["type"], "local");
    assert_eq!(copilot["tools"], serde_json::json!(["*"]));
    // Goose: a stdio extension in YAML (the command and arguments in
    // JSON's quoting, which YAML reads the same).
    let goose = body("Goose");
    assert!(goose.starts_with("extensions:\n  conda:\n"), "{goose}");
    let cmd_line = goose
        .lines()
        .find_map(|l| l.trim().strip_prefix("cmd: "))
        .expect("a cmd line");
    assert_eq!(
        serde_json::from_str::<Value>(cmd_line).expect("a JSON string"),
        desktop["command"]
    );
    let args_line = goose
        .lines()
        .find_map(|l| l.trim().strip_prefix("args: "))
        .expect("an args line");
    assert_eq!(
        serde_json::from_str::<Value>(args_line).expect("a JSON array"),
        serde_json::json!(["--conda-exe", conda])
    );
    // Codex CLI: a TOML table that waits for the server; read-only flags
    // leave Codex's own approval alone (it blocks what may write).
    let codex = toml_to_json(&body("Codex CLI"));
    let codex = &codex["mcp_servers"]["conda"];
    assert_eq!(codex["required"], serde_json::json!(true));
    assert_eq!(codex["args"], serde_json::json!(["--conda-exe", conda]));
    assert_eq!(codex["command"], desktop["command"]);
    assert!(
        codex.get("default_tools_approval_mode").is_none(),
        "{codex}"
    );

    let line = body("Claude Code");
    let words = shlex::split(&line).expect("a shell command line");
    assert_eq!(
        words[..5],
        ["claude", "mcp", "add", "conda", "--"],
        "{line}"
    );
    assert_eq!(words[5], desktop["command"].as_str().expect("command"));
    assert_eq!(serde_json::json!(words[6..]), desktop["args"]);

    // What Claude Code would start: that command and those arguments.
    let server = Server::start_command(
        |d| {
            let mut cmd = tokio::process::Command::new(&words[5]);
            cmd.args(&words[6..])
                .env("XDG_CACHE_HOME", d.join("cache"))
                .env_remove("CONDA_EXE")
                .kill_on_drop(true);
            cmd
        },
        Era::Initialize,
    )
    .await;
    let tools = server.tools().await;
    assert!(tools.iter().any(|t| t.name == "conda_info"), "{tools:?}");
    let r = server
        .call_ok("conda_info", serde_json::json!({"json": true}))
        .await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    server.close().await;
}

#[test]
fn check_with_a_broken_interpreter_fails_with_one_line() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("cache");
    let conda = standin.conda_exe.as_os_str();
    // Discovery cannot run: the interpreter exits 1 at once.
    let broken = dir.path().join("python");
    std::fs::write(
        &broken,
        "#!/bin/sh\necho 'SyntaxError: broken' >&2\nexit 1\n",
    )
    .expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&broken, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let o = check_with(
        &bins::server(),
        &[
            "--conda-exe".as_ref(),
            conda,
            "--python".as_ref(),
            broken.as_os_str(),
        ],
        &cache,
    );
    assert_failed(
        &o,
        "discovery failed: the discovery helper exited with status 1",
    );

    // A cache hit runs no Python at startup: check still runs the
    // interpreter, and a prefix whose Python lost its conda fails there.
    let ok = check_with(&bins::server(), &["--conda-exe".as_ref(), conda], &cache);
    assert_eq!(ok.status.code(), Some(0), "{}", stdout(&ok));
    // The stand-in's `conda` is on sys.path through a .pth file: point it
    // elsewhere (same file names, so the cache stamp still matches).
    std::fs::write(
        standin.site_packages.join("conda_mcp_standin.pth"),
        format!("{}\n", dir.path().join("nowhere").display()),
    )
    .expect("rewrite the .pth");
    let o = check_with(&bins::server(), &["--conda-exe".as_ref(), conda], &cache);
    assert_failed(
        &o,
        "the interpreter does not work: `python -c 'import conda'` exited with status 1 (ModuleNotFoundError)",
    );
}

/// A conda that fails with its own JSON error (a `.condarc` it cannot
/// load, say) is said to be conda failing, with the exception's class,
/// not a program that is not conda; conda's message, which can hold a
/// channel's credentials, is not repeated.
#[test]
fn check_names_condas_own_error_class_not_a_wrong_program() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("cache");
    let conda = dir.path().join("conda");
    std::fs::write(
        &conda,
        "#!/bin/sh\n\
         echo '{\"caused_by\": \"None\", \"error\": \"ConfigurationLoadError: Unable to load configuration file. https://u:SECRET@example.org\", \"exception_name\": \"ConfigurationLoadError\", \"message\": \"Unable to load configuration file. https://u:SECRET@example.org\"}'\n\
         exit 1\n",
    )
    .expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&conda, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let o = check_with(
        &bins::server(),
        &["--conda-exe".as_ref(), conda.as_os_str()],
        &cache,
    );
    assert_failed(
        &o,
        "conda failed: `CONDA info --json` exited with status 1 with conda's own error ConfigurationLoadError"
            .replace("CONDA", &conda.display().to_string())
            .as_str(),
    );
    assert!(!stdout(&o).contains("SECRET"), "{}", stdout(&o));
    assert!(
        !stdout(&o).contains("not Python or another program"),
        "{}",
        stdout(&o)
    );
    // The server's startup says the same on stderr, conda's message
    // (with its credentials) left out there too.
    let server = Command::new(bins::server())
        .arg("--conda-exe")
        .arg(&conda)
        .env("XDG_CACHE_HOME", &cache)
        .env_remove("CONDA_EXE")
        .env("PATH", "/usr/bin:/bin")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run conda-mcp");
    let stderr = String::from_utf8_lossy(&server.stderr);
    assert_eq!(server.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("conda failed:") && stderr.contains("ConfigurationLoadError"),
        "{stderr}"
    );
    assert!(!stderr.contains("SECRET"), "{stderr}");
}

#[test]
fn check_with_a_missing_worker_fails_with_one_line() {
    let standin = StandinPrefix::standard();
    let conda = standin.conda_exe.as_os_str();
    // conda-mcp alone in a folder (a hard link keeps the test cheap; a copy
    // where the file system refuses links), nothing on PATH.
    let alone = tempfile::Builder::new()
        .prefix("conda-mcp-alone-")
        .tempdir_in(bins::bin_dir())
        .expect("tempdir");
    let exe = alone.path().join("conda-mcp");
    if std::fs::hard_link(bins::server(), &exe).is_err() {
        std::fs::copy(bins::server(), &exe).expect("copy conda-mcp");
    }
    let o = check_with(
        &exe,
        &["--conda-exe".as_ref(), conda],
        &alone.path().join("cache"),
    );
    assert_failed(
        &o,
        &format!(
            "the worker binary {} is missing or not executable",
            alone.path().join("conda-mcp-worker").display()
        ),
    );
    // An explicit --worker-exe that is not there.
    let o = check_with(
        &bins::server(),
        &[
            "--conda-exe".as_ref(),
            conda,
            "--worker-exe".as_ref(),
            "/nonexistent/conda-mcp-worker".as_ref(),
        ],
        &alone.path().join("cache"),
    );
    assert_failed(
        &o,
        "the worker binary /nonexistent/conda-mcp-worker is missing",
    );
}

#[test]
fn check_never_prints_environment_values() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    let secret = "s3cret-value-that-must-not-appear";
    let o = Command::new(bins::server())
        .arg("check")
        .arg("--conda-exe")
        .arg(&standin.conda_exe)
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .env_remove("CONDA_EXE")
        .env("PATH", "/usr/bin:/bin")
        .env("GITHUB_TOKEN", secret)
        .env(
            "CONDA_CHANNELS",
            format!("https://user:{secret}@example.invalid/ch"),
        )
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let all = format!("{}{}", stdout(&o), String::from_utf8_lossy(&o.stderr));
    assert!(!all.contains(secret), "an environment value leaked:\n{all}");
}

/// `check` takes the settings the server would start with and runs the
/// server's own steps: an entry of `--tools` / `--exclude-tools` that
/// matches no tool fails the check (the server refuses to start with it,
/// exit status 2), naming the entry; entries that all match pass.
#[test]
fn check_refuses_a_tool_filter_entry_the_server_would_refuse() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    let conda = standin.conda_exe.as_os_str();
    for (flag, entry) in [
        ("--tools", "conda_info,conda_instal"),
        ("--exclude-tools", "env crate"),
    ] {
        let o = check_with(
            &bins::server(),
            &["--conda-exe".as_ref(), conda, flag.as_ref(), entry.as_ref()],
            &dir.path().join("cache"),
        );
        let bad = entry.rsplit(',').next().expect("entry");
        assert_failed(&o, &format!("{flag} entry \"{bad}\" matches no tool"));
    }
    let o = check_with(
        &bins::server(),
        &[
            "--conda-exe".as_ref(),
            conda,
            "--tools".as_ref(),
            "conda_info,env *".as_ref(),
        ],
        &dir.path().join("cache"),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

/// Whatever the flags, no line of the report nests parentheses (a policy
/// text in parentheses inside the count's own, `(… (elicitation)):`), and
/// a count of processes is a number with its noun, not `process(es)`.
#[test]
fn check_never_nests_parentheses_whatever_the_flags() {
    let standin = StandinPrefix::create(&conda_mcp_tests::paths::real_dump()).expect("stand-in");
    let dir = tempfile::tempdir().expect("tempdir");
    let conda = standin.conda_exe.as_os_str();
    let flag_sets: [&[&str]; 5] = [
        &[],
        &["--allow-write", "--allow-exec"],
        &["--approve-writes"],
        &["--approve-writes", "--allow-exec"],
        &[
            "--listen",
            "127.0.0.1:0",
            "--approve-writes",
            "--allow-exec",
        ],
    ];
    for (i, flags) in flag_sets.iter().enumerate() {
        let mut args = vec!["--conda-exe".as_ref(), conda];
        args.extend(flags.iter().map(std::ffi::OsStr::new));
        let o = check_with(
            &bins::server(),
            &args,
            &dir.path().join(format!("cache-{i}")),
        );
        let report = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{flags:?}:\n{report}");
        for line in report.lines() {
            let mut depth = 0i32;
            for c in line.chars() {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
                assert!(
                    (0..=1).contains(&depth),
                    "{flags:?}: parentheses nest or do not match in {line:?}"
                );
            }
            assert_eq!(depth, 0, "{flags:?}: unmatched in {line:?}");
        }
        assert!(
            report.contains("(1 process through the worker)"),
            "{flags:?}:\n{report}"
        );
        // Which hosts can approve over HTTP (docs/approval.md "Over HTTP").
        assert_eq!(
            report.contains(
                "over HTTP a host can approve when it keeps the session its initialize opens"
            ),
            flags.contains(&"--listen"),
            "{flags:?}:\n{report}"
        );
    }
}

/// With `--listen`, check loads the HTTP settings as the server does
/// (without binding: the server may already run there): a malformed token
/// file, an unusable TLS key or a principal mapped to an OS user that
/// cannot run conda fails with the server's reason, and a good
/// setup reports the URL, the principals and the HTTP host configurations
/// (URL and bearer header), not stdio ones that would start a second
/// listener. A port in use is a warning (the server may be the one using
/// it), and a server that takes no token gets configurations that send
/// none.
#[test]
fn check_with_listen_loads_the_http_settings_and_prints_http_host_configurations() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("cache");
    let conda = standin.conda_exe.as_os_str();
    let bad = dir.path().join("bad-tokens");
    std::fs::write(&bad, "alice not-a-hash-SECRET\n").expect("token file");
    let good = dir.path().join("tokens");
    std::fs::write(
        &good,
        conda_mcp_server::transport::http::tokens::file_line("alice", "cmcp_test", None) + "\n",
    )
    .expect("token file");
    // A port the server may well be serving: check must not bind it.
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let listen = busy.local_addr().expect("addr").to_string();
    let run = |tokens: &Path, extra: &[&std::ffi::OsStr]| {
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "--conda-exe".as_ref(),
            conda,
            "--listen".as_ref(),
            listen.as_ref(),
            "--auth-tokens".as_ref(),
            tokens.as_os_str(),
        ];
        args.extend_from_slice(extra);
        check_with(&bins::server(), &args, &cache)
    };
    let o = run(&bad, &[]);
    assert_failed(&o, "--auth-tokens file");
    assert!(!stdout(&o).contains("SECRET"), "{}", stdout(&o));
    let o = run(
        &good,
        &[
            "--tls-cert".as_ref(),
            good.as_os_str(),
            "--tls-key".as_ref(),
            good.as_os_str(),
        ],
    );
    assert_failed(&o, "--tls-cert");
    // A principal mapped to an OS user that does not exist fails as the
    // server's startup fails.
    let mapped = dir.path().join("mapped-tokens");
    std::fs::write(
        &mapped,
        conda_mcp_server::transport::http::tokens::file_line(
            "bob",
            "cmcp_test2",
            Some("no-such-user-cmcp"),
        ) + "\n",
    )
    .expect("token file");
    // (as root: the user does not exist; otherwise: not root)
    assert_failed(
        &run(&mapped, &[]),
        "the --auth-tokens file or the --user-map maps",
    );

    let o = run(&good, &[]);
    let report = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{report}");
    let url = format!("http://{listen}/mcp");
    assert!(report.contains(&format!("serves        {url}")), "{report}");
    assert!(report.contains("1 principal(s)"), "{report}");
    let hosts = configurations(&report);
    assert!(
        hosts.contains(&format!(
            "claude mcp add --transport http conda {url} --header 'Authorization: Bearer TOKEN'"
        )),
        "{hosts}"
    );
    assert!(!hosts.contains("--listen"), "{hosts}");
    let vscode = hosts
        .split("VS Code")
        .nth(1)
        .and_then(|s| s.split("Cursor").next())
        .and_then(|s| s.find('{').map(|i| &s[i..]))
        .expect("the VS Code configuration");
    let v: Value = serde_json::from_str(vscode.trim()).unwrap_or_else(|e| panic!("{e}: {vscode}"));
    assert_eq!(v["servers"]["conda"]["type"], "http", "{v}");
    assert_eq!(v["servers"]["conda"]["url"], url.as_str(), "{v}");
    assert!(!report.contains("port 0"), "{report}");
    let warnings = &report[report.find("\nwarnings:").expect("warnings")..];
    assert!(
        warnings.contains(&format!("{listen} is in use now")),
        "{warnings}"
    );
    drop(busy);

    // No --auth-tokens: the snippets send no token; the port, free now,
    // draws no warning.
    let o = check_with(
        &bins::server(),
        &[
            "--conda-exe".as_ref(),
            conda,
            "--listen".as_ref(),
            listen.as_ref(),
        ],
        &cache,
    );
    let report = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{report}");
    assert!(!report.contains("in use now"), "{report}");
    let hosts = configurations(&report);
    assert!(
        hosts.contains(&format!("claude mcp add --transport http conda {url}\n")),
        "{hosts}"
    );
    assert!(
        !hosts.contains("Authorization") && !hosts.contains("TOKEN"),
        "{hosts}"
    );

    // Port 0: the server's start picks the port, so no URL printed here
    // reaches it; check says so.
    let o = check_with(
        &bins::server(),
        &[
            "--conda-exe".as_ref(),
            conda,
            "--listen".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--auth-tokens".as_ref(),
            good.as_os_str(),
        ],
        &cache,
    );
    let report = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{report}");
    let warnings = &report[report.find("\nwarnings:").expect("warnings")..];
    assert!(warnings.contains("--listen with port 0"), "{warnings}");

    // `conda-mcp token new alice > FILE` leaves the token itself in the
    // file: refused, saying what the file holds instead, never echoing it.
    let raw = dir.path().join("raw-token");
    std::fs::write(&raw, "# Token for alice\ncmcp_SECRET0123\n").expect("token file");
    let o = run(&raw, &[]);
    assert_failed(&o, "a token itself, not its line");
    assert!(!stdout(&o).contains("SECRET"), "{}", stdout(&o));
}

/// A conda reached through a symlinked prefix (`/opt/conda` pointing at a
/// versioned folder, swapped on upgrade) is checked at its real path, and
/// the host configuration keeps the symlink, so the upgrade does not break
/// it.
#[test]
fn host_configurations_keep_a_symlinked_conda_path() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("cache");
    let current = dir.path().join("conda-current");
    std::os::unix::fs::symlink(&standin.prefix, &current).expect("symlink");
    let via_link = current.join("bin").join("conda");
    let o = check_with(
        &bins::server(),
        &["--conda-exe".as_ref(), via_link.as_os_str()],
        &cache,
    );
    let report = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{report}");
    let canonical = std::fs::canonicalize(&standin.conda_exe).expect("canonical");
    assert!(
        report.contains(&format!("executable    {}", canonical.display())),
        "{report}"
    );
    let cursor: Value = serde_json::from_str(&host_body(&report, "Cursor")).expect("Cursor's JSON");
    assert_eq!(
        cursor["mcpServers"]["conda"]["args"],
        serde_json::json!(["--conda-exe", via_link.to_str().expect("utf-8")])
    );
}

/// `--audit-log` as the server opens it: a file in a folder that does not
/// exist fails the check, a missing one is not created by it (the server's
/// user creates it), an existing one is opened for appending; a relative
/// one is made absolute in the host configuration, and `--no-cache` (the
/// check's own) is not repeated there.
#[test]
fn check_opens_the_audit_log_and_gives_hosts_its_absolute_path() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("cache");
    let conda = standin.conda_exe.as_os_str();
    let missing = dir.path().join("no-such-dir").join("audit.log");
    let o = check_with(
        &bins::server(),
        &[
            "--conda-exe".as_ref(),
            conda,
            "--audit-log".as_ref(),
            missing.as_os_str(),
        ],
        &cache,
    );
    assert_failed(&o, "cannot open the --audit-log file");
    assert!(verdict(&o).contains("does not exist"), "{}", verdict(&o));

    let o = Command::new(bins::server())
        .current_dir(dir.path())
        .arg("check")
        .args(["--conda-exe".as_ref(), conda])
        .args(["--audit-log", "audit.log", "--no-cache"])
        .env("XDG_CACHE_HOME", &cache)
        .env_remove("CONDA_EXE")
        .env_remove("RUST_LOG")
        .env("PATH", "/usr/bin:/bin")
        .output()
        .expect("run check");
    let report = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{report}");
    // (the current folder as the process sees it: canonical on macOS)
    let absolute = std::fs::canonicalize(dir.path())
        .expect("canonical")
        .join("audit.log");
    assert!(!absolute.exists(), "the check created it");
    assert!(
        report.contains(&format!(
            "audit log     {} (missing: the server creates it",
            absolute.display()
        )),
        "{report}"
    );
    let desktop: Value =
        serde_json::from_str(&host_body(&report, "Claude Desktop")).expect("Claude Desktop's JSON");
    let args: Vec<&str> = desktop["mcpServers"]["conda"]["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let at = args
        .iter()
        .position(|a| *a == "--audit-log")
        .expect("--audit-log");
    assert_eq!(args[at + 1], absolute.display().to_string(), "{args:?}");
    assert!(!args.contains(&"--no-cache"), "{args:?}");

    // An existing file is opened for appending and left as it was.
    std::fs::write(&absolute, "{\"earlier\": 1}\n").expect("an earlier record");
    let o = check_with(
        &bins::server(),
        &[
            "--conda-exe".as_ref(),
            conda,
            "--audit-log".as_ref(),
            absolute.as_os_str(),
        ],
        &cache,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("(exists; opens for appending)"),
        "{}",
        stdout(&o)
    );
    assert_eq!(
        std::fs::read_to_string(&absolute).expect("read"),
        "{\"earlier\": 1}\n"
    );
}

/// `check --approve-writes --allow-exec`: the groups of the tools section
/// add up to every listed tool (the server's own ones included), the hosts
/// that cannot ask are named in a warning, and Codex's table lets
/// conda-mcp's approval decide (`default_tools_approval_mode`).
#[test]
fn check_with_approve_writes_warns_about_hosts_that_cannot_ask() {
    let standin = StandinPrefix::create(&conda_mcp_tests::paths::real_dump()).expect("stand-in");
    let dir = tempfile::tempdir().expect("tempdir");
    let o = check_with(
        &bins::server(),
        &[
            "--conda-exe".as_ref(),
            standin.conda_exe.as_os_str(),
            "--approve-writes".as_ref(),
            "--allow-exec".as_ref(),
        ],
        &dir.path().join("cache"),
    );
    let report = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{report}");
    // "listed        N tools", then "read-only     N (...):" and so on.
    let count = |key: &str| -> usize {
        let line = report
            .lines()
            .find(|l| l.trim_start().starts_with(key))
            .unwrap_or_else(|| panic!("no {key:?} line in:\n{report}"));
        line.trim_start()[key.len()..]
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no count in {line:?}"))
    };
    let listed = count("listed");
    let grouped = count("read-only") + count("may write") + count("runs programs");
    assert_eq!(
        grouped, listed,
        "the groups add up to the listed tools:\n{report}"
    );
    let warnings = &report[report.find("\nwarnings:").expect("warnings")..];
    for needle in [
        "--approve-writes",
        "Claude Desktop",
        "Gemini CLI",
        "Codex CLI",
    ] {
        assert!(
            warnings.contains(needle),
            "missing {needle:?} in:\n{warnings}"
        );
    }
    let codex = &report[report.find("  Codex CLI").expect("Codex")..];
    assert!(
        codex.contains("default_tools_approval_mode = \"approve\""),
        "{codex}"
    );
}

/// A stand-in prefix with a plugin whose module raises on import, with a
/// credential in the error's text.
fn prefix_with_broken_plugin() -> StandinPrefix {
    use conda_mcp_tests::standin::PluginSpec;
    let standin = StandinPrefix::standard();
    let module = standin.site_packages.join("conda_broken_secret");
    std::fs::create_dir_all(&module).expect("package");
    std::fs::write(module.join("__init__.py"), "").expect("init");
    std::fs::write(
        module.join("plugin.py"),
        "raise ImportError('mirror https://alice:s3cr3t@mirror.invalid/t/tok123/ unreachable')\n",
    )
    .expect("module");
    standin
        .add_entry_point(&PluginSpec {
            distribution: "conda-broken-secret".into(),
            version: "2.0".into(),
            name: "broken-secret".into(),
            value: "conda_broken_secret.plugin".into(),
        })
        .expect("entry point");
    standin
}

/// A plugin conda fails to load is a warning in `check`: which plugin
/// (entry point and distribution), the error's class and text, credentials
/// masked; on a cache hit as well.
#[test]
fn check_warns_of_a_plugin_conda_fails_to_load_without_its_secrets() {
    let standin = prefix_with_broken_plugin();
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("cache");
    let args = ["--conda-exe".as_ref(), standin.conda_exe.as_os_str()];
    for run in ["miss", "hit"] {
        let o = check_with(&bins::server(), &args, &cache);
        let report = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{run}: {report}");
        let warnings = &report[report.find("\nwarnings:").expect("warnings")..];
        assert!(
            warnings.contains(
                "conda plugin `broken-secret` (distribution conda-broken-secret) failed to load: \
                 ImportError: mirror https://alice:***@mirror.invalid/t/<TOKEN>/ unreachable"
            ),
            "{run}: {warnings}"
        );
        assert!(
            !report.contains("s3cr3t") && !report.contains("tok123"),
            "{report}"
        );
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            !stderr.contains("s3cr3t") && !stderr.contains("tok123"),
            "{stderr}"
        );
    }
}

/// The server logs a plugin conda fails to load at startup, and its calls
/// still run through the warm conda, each with conda's own warning on its
/// stderr.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_logs_a_plugin_conda_fails_to_load_and_its_calls_stay_warm() {
    use conda_mcp_tests::standin::PluginSpec;
    let standin = StandinPrefix::standard();
    standin
        .add_entry_point(&PluginSpec {
            distribution: "conda-broken".into(),
            version: "1.0".into(),
            name: "conda-broken".into(),
            value: "conda_broken_missing.plugin".into(),
        })
        .expect("entry point");
    let s = Server::start(&standin.conda_exe, &[], Era::Initialize).await;
    let line = "Error while loading conda entry point: conda-broken \
                (No module named 'conda_broken_missing')";
    let end = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let stderr = loop {
        let starts = standin.python_starts();
        let r = s
            .call_ok("conda_info", serde_json::json!({"json": true}))
            .await;
        let out = r.structured_content.clone().expect("structured");
        if standin.python_starts() == starts {
            break out["stderr"].as_str().expect("stderr").to_owned();
        }
        assert!(
            std::time::Instant::now() < end,
            "never warm; server log:\n{}",
            s.stderr_text()
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert!(stderr.starts_with(line), "a warm call's stderr: {stderr:?}");
    let log = s.stderr_text();
    assert!(
        log.contains(
            "conda plugin `conda-broken` (distribution conda-broken) failed to load: \
             ModuleNotFoundError: No module named 'conda_broken_missing'"
        ),
        "{log}"
    );
    s.close().await;
}
