//! Settings stated once: the declaration of every flag
//! (`conda_mcp_server::cli::Cli`, with its variable, heading and default)
//! against what is derived from it by hand (docs/reference.md's tables,
//! server.json's arguments, the bundle's user configuration), and the
//! built binary reading flags, `CONDA_MCP_*` variables and the
//! configuration file: the precedence, the errors of a bad file (nothing
//! starts), secrets never printed, and `check --host` printing exactly the
//! configuration the full report gives that host.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use clap::CommandFactory;
use conda_mcp_server::cli::{Cli, heading};
use conda_mcp_tests::bins;
use conda_mcp_tests::standin::StandinPrefix;
use serde_json::Value;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits in the workspace")
        .to_path_buf()
}

/// One setting as declared.
#[derive(Debug)]
struct Declared {
    heading: String,
    long: String,
    env: String,
    /// Repeatable (`ArgAction::Append`).
    repeated: bool,
    /// `true`/`false` (`--allow-write[=BOOL]`) or a bare switch.
    boolean: bool,
    /// The choices of an enumerated value (not of a boolean).
    choices: Vec<String>,
    /// The default as clap writes it, for a value that has one.
    default: Option<String>,
}

fn declared() -> Vec<Declared> {
    let cmd = Cli::command();
    cmd.get_arguments()
        .filter(|a| {
            !matches!(
                a.get_action(),
                clap::ArgAction::Help | clap::ArgAction::Version
            )
        })
        .map(|a| {
            let switch = matches!(a.get_action(), clap::ArgAction::SetTrue);
            let boolean = switch
                || a.get_value_names()
                    .is_some_and(|n| n.iter().any(|n| n == "BOOL"));
            Declared {
                heading: a.get_help_heading().unwrap_or_default().to_owned(),
                long: format!("--{}", a.get_long().expect("a long flag")),
                env: a
                    .get_env()
                    .and_then(|e| e.to_str())
                    .expect("a variable")
                    .to_owned(),
                repeated: matches!(a.get_action(), clap::ArgAction::Append),
                boolean,
                choices: if boolean {
                    Vec::new()
                } else {
                    a.get_possible_values()
                        .iter()
                        .map(|v| v.get_name().to_owned())
                        .collect()
                },
                default: a
                    .get_default_values()
                    .first()
                    .filter(|_| !switch)
                    .map(|v| v.to_string_lossy().into_owned()),
            }
        })
        .collect()
}

#[test]
fn the_reference_tables_are_the_declaration() {
    let text = std::fs::read_to_string(repo_root().join("docs/reference.md")).expect("reference");
    let start = text.find("\n## Flags\n").expect("a Flags section");
    let section = &text[start + 1..];
    let section = &section[..section[1..].find("\n## ").map_or(section.len(), |i| i + 1)];
    let mut rows = Vec::new();
    let mut current = String::new();
    for line in section.lines() {
        if let Some(h) = line.strip_prefix("### ") {
            current = h.trim().to_owned();
        } else if line.starts_with("| `--") {
            let cells: Vec<&str> = line.split(" | ").collect();
            let flag = cells[0]
                .trim_start_matches("| `")
                .split(['`', ' ', '[', '='])
                .next()
                .expect("a flag")
                .to_owned();
            rows.push((current.clone(), flag, cells[1].trim_matches('`').to_owned()));
        }
    }
    let want: Vec<(String, String, String)> = declared()
        .into_iter()
        .map(|d| (d.heading, d.long, d.env))
        .collect();
    assert_eq!(
        rows, want,
        "docs/reference.md \"Flags\": one table per heading, in --help's order, each flag with \
         its variable"
    );
    let headings: Vec<&str> = section
        .lines()
        .filter_map(|l| l.strip_prefix("### "))
        .collect();
    assert_eq!(headings, heading::ALL);
}

#[test]
fn server_json_arguments_are_the_declaration() {
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("server.json")).expect("server.json"),
    )
    .expect("JSON");
    let args: BTreeMap<String, &Value> = doc["packages"][0]["packageArguments"]
        .as_array()
        .expect("packageArguments")
        .iter()
        .map(|a| (a["name"].as_str().expect("name").to_owned(), a))
        .collect();
    let declared = declared();
    let names: Vec<&String> = declared.iter().map(|d| &d.long).collect();
    let mut listed: Vec<&String> = args.keys().collect();
    let mut want = names.clone();
    listed.sort();
    want.sort();
    assert_eq!(listed, want, "server.json names every flag, and no other");
    for d in &declared {
        let a = args[&d.long];
        assert_eq!(
            a["isRepeated"].as_bool().unwrap_or(false),
            d.repeated,
            "{}: isRepeated",
            d.long
        );
        let choices: Vec<String> = a["choices"]
            .as_array()
            .map(|c| {
                c.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(choices, d.choices, "{}: choices", d.long);
        if let Some(default) = a.get("default") {
            assert_eq!(
                default.as_str(),
                d.default.as_deref(),
                "{}: default",
                d.long
            );
        }
        if a["format"] == "boolean" {
            assert!(d.boolean, "{} is declared a boolean", d.long);
        }
    }
}

#[test]
fn the_bundle_user_configuration_is_the_declaration() {
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("bundle/manifest.json")).expect("manifest"),
    )
    .expect("JSON");
    let declared = declared();
    let args: Vec<&str> = manifest["server"]["mcp_config"]["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string"))
        .collect();
    let config = manifest["user_config"].as_object().expect("user_config");
    assert!(!config.is_empty());
    for (key, setting) in config {
        let long = format!("--{}", key.replace('_', "-"));
        let d = declared
            .iter()
            .find(|d| d.long == long)
            .unwrap_or_else(|| panic!("user_config {key} is no flag ({long})"));
        let placeholder = format!("${{user_config.{key}}}");
        let passed = args.windows(2).any(|w| w[0] == long && w[1] == placeholder)
            || args.contains(&format!("{long}={placeholder}").as_str());
        assert!(passed, "{key} is passed as {long}: {args:?}");
        assert_eq!(
            setting["type"] == "boolean",
            d.boolean,
            "{key}: a boolean setting is a boolean flag"
        );
        if d.boolean {
            assert_eq!(setting["default"], Value::Bool(false), "{key}: default");
        }
    }
}

/// Runs the binary with `args`, the variables `env` (every other
/// `CONDA_MCP_*` setting variable removed), `XDG_CONFIG_HOME` and
/// `XDG_CACHE_HOME` in `home`, no conda on `PATH`, stdin closed.
fn run(args: &[&str], env: &[(&str, &str)], home: &Path) -> Output {
    let mut cmd = Command::new(bins::server());
    for d in declared() {
        cmd.env_remove(&d.env);
    }
    cmd.args(args)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env_remove("CONDA_EXE")
        .env_remove("RUST_LOG")
        .env("PATH", "/usr/bin:/bin")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("run conda-mcp")
}

/// `check --format json`'s settings: flag → (value, where from).
fn settings(
    args: &[&str],
    env: &[(&str, &str)],
    home: &Path,
) -> BTreeMap<String, (String, String)> {
    let mut all = vec!["check", "--format", "json"];
    all.extend_from_slice(args);
    let o = run(&all, env, home);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    doc["settings"]
        .as_array()
        .expect("settings")
        .iter()
        .map(|s| {
            let origin = &s["origin"];
            let from = match origin["kind"].as_str().expect("kind") {
                "flag" => "flag".to_owned(),
                "env" => format!("env {}", origin["name"].as_str().expect("name")),
                "file" => format!(
                    "file {}:{}",
                    origin["path"].as_str().expect("path"),
                    origin["line"]
                ),
                other => panic!("{other}"),
            };
            (
                s["flag"].as_str().expect("flag").to_owned(),
                (s["value"].as_str().expect("value").to_owned(), from),
            )
        })
        .collect()
}

#[test]
fn a_flag_beats_its_variable_which_beats_the_file_which_beats_the_default() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    let file = home.join("config/conda-mcp/config.toml");
    std::fs::create_dir_all(file.parent().expect("folder")).expect("mkdir");
    std::fs::write(
        &file,
        "# conda-mcp\nallow-exec = true\ntimeout = 30\nprotect-env = [\"file-a\", \"file-b\"]\n\
         audit-log = \"/var/log/file.log\"\n",
    )
    .expect("config");
    let shown = file.display().to_string();
    let env = [
        ("CONDA_MCP_ALLOW_EXEC", "false"),
        ("CONDA_MCP_TIMEOUT", "40"),
        ("CONDA_MCP_PROTECT_ENV", "env-a"),
        ("CONDA_MCP_AUDIT_LOG", "/var/log/env.log"),
    ];
    let flags = [
        "--allow-exec=true",
        "--timeout=50",
        "--protect-env=flag-a",
        "--protect-env=flag-b",
        "--audit-log=/var/log/flag.log",
    ];
    let keys = ["--allow-exec", "--timeout", "--protect-env", "--audit-log"];
    let pick = |s: &BTreeMap<String, (String, String)>| -> Vec<(String, String)> {
        keys.iter()
            .map(|k| {
                s.get(*k)
                    .cloned()
                    .unwrap_or_else(|| ("default".into(), String::new()))
            })
            .collect()
    };
    // All three: the command line.
    let s = settings(&flags, &env, home);
    assert_eq!(
        pick(&s),
        [
            ("true".into(), "flag".into()),
            ("50".into(), "flag".into()),
            ("flag-a, flag-b".into(), "flag".into()),
            ("/var/log/flag.log".into(), "flag".into()),
        ],
        "{s:?}"
    );
    // The variables and the file: the variables.
    let s = settings(&[], &env, home);
    assert_eq!(
        pick(&s),
        [
            ("false".into(), "env CONDA_MCP_ALLOW_EXEC".into()),
            ("40".into(), "env CONDA_MCP_TIMEOUT".into()),
            ("env-a".into(), "env CONDA_MCP_PROTECT_ENV".into()),
            ("/var/log/env.log".into(), "env CONDA_MCP_AUDIT_LOG".into()),
        ],
        "{s:?}"
    );
    // The file alone (the platform's default file): its values and lines.
    let s = settings(&[], &[], home);
    assert_eq!(
        pick(&s),
        [
            ("true".into(), format!("file {shown}:2")),
            ("30".into(), format!("file {shown}:3")),
            ("file-a, file-b".into(), format!("file {shown}:4")),
            ("/var/log/file.log".into(), format!("file {shown}:5")),
        ],
        "{s:?}"
    );
    // Mixed: each setting from its own highest source; --config names
    // another file, which replaces the default one.
    let other = home.join("other.toml");
    std::fs::write(&other, "timeout = 60\n").expect("other");
    let s = settings(
        &["--allow-exec", "--config", other.to_str().expect("utf-8")],
        &[("CONDA_MCP_PROTECT_ENV", "env-a")],
        home,
    );
    assert_eq!(
        pick(&s),
        [
            ("true".into(), "flag".into()),
            ("60".into(), format!("file {}:1", other.display())),
            ("env-a".into(), "env CONDA_MCP_PROTECT_ENV".into()),
            ("default".into(), String::new()),
        ],
        "{s:?}"
    );
    // No file, no variable, no flag: the defaults, none listed.
    std::fs::remove_file(&file).expect("rm");
    let s = settings(&[], &[], home);
    assert!(s.is_empty(), "{s:?}");
}

/// A configuration file that is refused: exit status, and stderr naming
/// the file, the line and the key; nothing on stdout, nothing started
/// (no cache folder: discovery never ran).
fn assert_refused(home: &Path, config: &Path, status: i32, has: &[&str]) {
    for mode in [&[][..], &["check"]] {
        let mut args = mode.to_vec();
        args.extend(["--config", config.to_str().expect("utf-8")]);
        let o = run(&args, &[], home);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(status), "{args:?}: {stderr}");
        assert!(
            o.stdout.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stdout)
        );
        for needle in has {
            assert!(stderr.contains(needle), "{needle:?} in {stderr}");
        }
        assert!(!home.join("cache").exists(), "nothing started: {stderr}");
    }
}

#[test]
fn a_bad_configuration_file_names_file_line_and_key_and_starts_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    let file = home.join("c.toml");
    let path = file.display().to_string();
    std::fs::write(&file, "timeout = 5\n\nallow-writes = true\n").expect("write");
    assert_refused(
        home,
        &file,
        2,
        &[
            &format!("{path}:3:"),
            "unknown key `allow-writes`",
            "did you mean `allow-write`?",
        ],
    );
    std::fs::write(&file, "# limits\ntimeout = \"soon\"\n").expect("write");
    assert_refused(
        home,
        &file,
        2,
        &[&format!("{path}:2:"), "`timeout`", "seconds"],
    );
    std::fs::write(&file, "allow-exec = \"yes\"\n").expect("write");
    assert_refused(home, &file, 2, &[&format!("{path}:1:"), "`allow-exec`"]);
    std::fs::write(&file, "protect-env = [\"a\",\n  {x = 1}]\n").expect("write");
    assert_refused(
        home,
        &file,
        2,
        &[
            &format!("{path}:1:"),
            "`protect-env` takes a string or a list",
        ],
    );
    std::fs::write(&file, "timeout = 5\nlisten = \n").expect("write");
    assert_refused(home, &file, 2, &[&format!("{path}:2:"), "not valid TOML"]);
    // Unreadable: a folder, and a file that is not there.
    assert_refused(
        home,
        home,
        1,
        &["cannot be read", &home.display().to_string()],
    );
    assert_refused(
        home,
        &home.join("missing.toml"),
        1,
        &["cannot be read", "missing.toml"],
    );
}

#[test]
fn a_secret_in_the_file_or_a_variable_is_never_printed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    let file = home.join("c.toml");
    // Key material pasted where its path belongs: a wrong type.
    std::fs::write(
        &file,
        "listen = \"127.0.0.1:1\"\ntls-cert = \"/c.pem\"\n\
         tls-key = [\"-----BEGIN PRIVATE KEY-----\", \"MIIEvQIBADANSECRETKEYMATERIAL\"]\n",
    )
    .expect("write");
    assert_refused(home, &file, 2, &["`tls-key` takes a single value"]);
    for mode in [&[][..], &["check"]] {
        let mut args = mode.to_vec();
        args.extend(["--config", file.to_str().expect("utf-8")]);
        let o = run(&args, &[], home);
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            !all.contains("SECRETKEYMATERIAL") && !all.contains("BEGIN PRIVATE"),
            "{all}"
        );
    }
    // A credential in a URL, from the file and from a variable: masked in
    // the report's settings, as text and as JSON.
    std::fs::write(
        &file,
        "listen = \"127.0.0.1:1\"\noauth-issuer = \"https://issuer.example\"\n\
         oauth-audience = \"https://conda.example/mcp\"\n\
         oauth-jwks = \"https://svc:HUNTER2PASSWORD@issuer.example/jwks\"\n",
    )
    .expect("write");
    let env = [(
        "CONDA_MCP_ALLOWED_CHANNEL",
        "https://u:CHANNELPASSWORD@repo.example/c",
    )];
    for format in ["text", "json"] {
        let o = run(
            &[
                "check",
                "--format",
                format,
                "--config",
                file.to_str().expect("utf-8"),
            ],
            &env,
            home,
        );
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains("--oauth-jwks") && out.contains("svc:***@"),
            "{out}"
        );
        assert!(
            out.contains("--allowed-channel") && out.contains("u:***@"),
            "{out}"
        );
        assert!(
            !out.contains("HUNTER2PASSWORD") && !out.contains("CHANNELPASSWORD"),
            "{out}"
        );
        assert!(
            !String::from_utf8_lossy(&o.stderr).contains("PASSWORD"),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// The configuration under host title `title` in a text report (its
/// indented lines, unindented), as tests/tests/mcp/check.rs reads it.
fn host_body(report: &str, title: &str) -> String {
    let section = &report[report.find("\nhost configuration").expect("the section")..];
    let start = section.find(&format!("\n  {title}")).expect("host") + 1;
    let rest = &section[start..];
    let rest = &rest[rest.find('\n').expect("title line") + 1..];
    rest.lines()
        .take_while(|l| l.starts_with("    "))
        .map(|l| &l[4..])
        .collect::<Vec<_>>()
        .join("\n")
}

const HOSTS: [(&str, &str); 8] = [
    ("claude-desktop", "Claude Desktop"),
    ("claude-code", "Claude Code"),
    ("vs-code", "VS Code"),
    ("cursor", "Cursor"),
    ("gemini-cli", "Gemini CLI"),
    ("codex", "Codex CLI"),
    ("copilot-cli", "GitHub Copilot CLI"),
    ("goose", "Goose"),
];

#[test]
fn check_host_prints_exactly_that_hosts_configuration() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    let file = home.join("conda-mcp.toml");
    std::fs::write(&file, "allow-write = true\ntimeout = 120\n").expect("write");
    let conda = standin.conda_exe.to_str().expect("utf-8");
    let config = file.to_str().expect("utf-8");
    let env = [("CONDA_MCP_ALLOW_EXEC", "true")];
    let base = ["check", "--conda-exe", conda, "--config", config];
    let full = run(&base, &env, home);
    let report = String::from_utf8_lossy(&full.stdout).into_owned();
    assert_eq!(full.status.code(), Some(0), "{report}");
    // The file's and the variable's settings reach the server's settings.
    assert!(
        report.contains("tools (--allow-write on, --allow-exec on"),
        "{report}"
    );
    // The verdict and the configurations come before what was checked.
    let first = report.lines().next().expect("a first line");
    assert!(first.contains(": OK: conda-mcp can serve conda"), "{first}");
    let configurations = report.find("\nhost configuration").expect("configurations");
    assert!(
        configurations < report.find("\nconda:\n").expect("the conda step"),
        "{report}"
    );
    assert!(
        report.contains("true  (environment CONDA_MCP_ALLOW_EXEC)"),
        "{report}"
    );
    assert!(report.contains(&format!("(file {config}:1)")), "{report}");
    for (name, title) in HOSTS {
        let mut args = base.to_vec();
        args.extend(["--host", name]);
        let o = run(&args, &env, home);
        assert_eq!(o.status.code(), Some(0), "{name}: {:?}", o);
        let alone = String::from_utf8_lossy(&o.stdout);
        assert_eq!(alone, format!("{}\n", host_body(&report, title)), "{name}");
        // What was given through the file and the variable is in the
        // configuration: the file by its path, the variable as a flag.
        assert!(
            alone.contains(config) && alone.contains("--allow-exec=true"),
            "{name}: {alone}"
        );
        let notes = String::from_utf8_lossy(&o.stderr);
        assert!(notes.contains("conda-mcp check: OK"), "{name}: {notes}");
    }
    // The HTTP forms: the hosts that connect to a running server.
    let listen = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").to_string()
    };
    let mut http = base.to_vec();
    http.extend(["--listen", listen.as_str()]);
    let full = run(&http, &env, home);
    let report = String::from_utf8_lossy(&full.stdout).into_owned();
    assert_eq!(full.status.code(), Some(0), "{report}");
    for (name, title) in &HOSTS[1..4] {
        let mut args = http.clone();
        args.extend(["--host", name]);
        let o = run(&args, &env, home);
        assert_eq!(o.status.code(), Some(0), "{name}");
        let alone = String::from_utf8_lossy(&o.stdout);
        assert_eq!(alone, format!("{}\n", host_body(&report, title)), "{name}");
        assert!(alone.contains(&format!("http://{listen}/mcp")), "{alone}");
    }
    let mut args = http.clone();
    args.extend(["--host", "claude-desktop"]);
    let o = run(&args, &env, home);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("claude-desktop has no HTTP configuration; the hosts that have one: claude-code, vs-code, cursor"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `conda-mcp setup HOST` writes the entry `conda-mcp check --host HOST`
/// prints for the same flags, variables and configuration file: one
/// declaration parses both, and both repeat the settings the same way
/// (the file by its path, the variable as a flag); VS Code's and Cursor's
/// install links are the same in both.
#[test]
fn setup_writes_what_check_host_prints() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    let file = home.join("conda-mcp.toml");
    std::fs::write(&file, "allow-write = true\ntimeout = 120\n").expect("write");
    let conda = standin.conda_exe.to_str().expect("utf-8");
    let config = file.to_str().expect("utf-8");
    let home_text = home.to_str().expect("utf-8");
    let env = [("CONDA_MCP_ALLOW_EXEC", "true"), ("HOME", home_text)];
    let flags = [
        "--conda-exe",
        conda,
        "--config",
        config,
        "--protect-env",
        "prod",
    ];
    for (name, _) in HOSTS {
        let mut check = vec!["check", "--host", name];
        check.extend(flags);
        let printed = run(&check, &env, home);
        assert_eq!(printed.status.code(), Some(0), "{name}: {printed:?}");
        let notes = String::from_utf8_lossy(&printed.stderr).into_owned();
        let printed = String::from_utf8_lossy(&printed.stdout).into_owned();
        // VS Code and Cursor: check offers the one-click install link that
        // `setup --link` prints, holding the same entry.
        let scheme = match name {
            "vs-code" => Some("vscode:mcp/install?"),
            "cursor" => Some("cursor://anysphere.cursor-deeplink/mcp/install?"),
            _ => None,
        };
        if let Some(scheme) = scheme {
            let mut link = vec!["setup", name, "--link"];
            link.extend(flags);
            let o = run(&link, &env, home);
            assert_eq!(o.status.code(), Some(0), "{name}: {o:?}");
            let link = String::from_utf8_lossy(&o.stdout).trim().to_owned();
            assert!(link.starts_with(scheme), "{name}: {link}");
            assert!(
                notes.lines().any(|l| l.ends_with(&format!(": {link}"))),
                "{name}: {link} in\n{notes}"
            );
        } else {
            assert!(!notes.contains("install link"), "{name}: {notes}");
        }
        let mut setup = vec!["setup", name];
        setup.extend(flags);
        let o = run(&setup, &env, home);
        assert_eq!(o.status.code(), Some(0), "{name}: {o:?}");
        let written_to = |rel: &str| std::fs::read_to_string(home.join(rel)).expect(rel);
        let entry = |text: &str, key: &str| -> Value {
            serde_json::from_str::<Value>(text).expect("JSON")[key]["conda"].clone()
        };
        match name {
            "claude-code" => {
                // check prints `claude mcp add conda -- COMMAND ARGS...`.
                let words = shlex::split(printed.trim()).expect("a command line");
                assert_eq!(
                    words[..5],
                    ["claude", "mcp", "add", "conda", "--"],
                    "{printed}"
                );
                let written = entry(&written_to(".claude.json"), "mcpServers");
                assert_eq!(written["command"], words[5], "{name}");
                assert_eq!(written["args"], serde_json::json!(words[6..]), "{name}");
            }
            "goose" => {
                // check prints the extension as YAML; setup writes the
                // same entry into Goose's config.yaml.
                let yaml = |text: &str| -> yaml_rust2::Yaml {
                    yaml_rust2::YamlLoader::load_from_str(text).expect("YAML")[0]["extensions"]
                        ["conda"]
                        .clone()
                };
                let written = yaml(&written_to(".config/goose/config.yaml"));
                let printed = yaml(&printed);
                assert!(printed["cmd"].as_str().is_some(), "{printed:?}");
                assert_eq!(written, printed, "{name}");
            }
            "codex" => assert_eq!(
                written_to(".codex/config.toml").trim(),
                printed.trim(),
                "{name}"
            ),
            _ => {
                let (rel, key) = match name {
                    "claude-desktop" => ("config/Claude/claude_desktop_config.json", "mcpServers"),
                    "vs-code" => ("config/Code/User/mcp.json", "servers"),
                    "cursor" => (".cursor/mcp.json", "mcpServers"),
                    "gemini-cli" => (".gemini/settings.json", "mcpServers"),
                    _ => (".copilot/mcp-config.json", "mcpServers"),
                };
                let written = entry(&written_to(rel), key);
                assert_eq!(written, entry(&printed, key), "{name}");
            }
        }
        // Both carry the file by its path and the variable as a flag.
        assert!(
            printed.contains(config) && printed.contains("--allow-exec=true"),
            "{name}: {printed}"
        );
    }
}
