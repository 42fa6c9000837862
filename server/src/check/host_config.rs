//! Ready-to-paste host configuration for `conda-mcp check`: how to start
//! this very server (absolute paths) in Claude Desktop, Claude Code, VS Code,
//! Cursor, Gemini CLI, Codex CLI and GitHub Copilot CLI, one configuration
//! per host as docs/using.md recommends it (the `hosts` test tier runs the
//! first, Gemini's and Codex's shapes in the real hosts).
//!
//! * Command: the running `conda-mcp` executable (symlinks resolved), or
//!   `uvx` with `conda-mcp` as its first argument when the executable lives
//!   in uv's cache (a `uvx conda-mcp` run: that folder is not stable).
//! * Arguments: `--conda-exe` with the conda that was checked (absolute,
//!   as given or found: a symlink is kept, so an upgrade that moves it
//!   keeps the configuration working),
//!   then the flags `check` was given, with every path made absolute (hosts
//!   start servers from a folder of their choosing): `--python`,
//!   `--worker-exe` and `--worker-socket` as resolved, the files and
//!   folders of [`FILE_FLAGS`], a key-set FILE of `--oauth-jwks` (a URL
//!   stays) and a prefix of `--protect-env` (a name stays). `--no-cache`
//!   is `check`'s own: a server started with it would rerun discovery at
//!   every start, so it is not repeated.
//!
//! * Per host: Claude Desktop and Claude Code get `--result-mode lean`
//!   (their tool-output limits are small: Claude Code refuses a result
//!   over 25,000 tokens) unless `check` was given a `--result-mode`.
//!
//! * Gemini CLI gets `"trust": true`: headless (`gemini -p`) it lists no
//!   tool of a server it does not trust, and it cannot ask before a call.
//! * Codex CLI gets `required = true` (without it the model's first turn
//!   starts before the server has listed its tools, and gets none), and,
//!   when the flags allow writes (`--allow-write`, `--approve-writes`),
//!   `default_tools_approval_mode = "approve"`: Codex itself blocks every
//!   tool without `readOnlyHint` in `codex exec` otherwise, so conda-mcp's
//!   policy (or the person's approval) never gets to decide.
//!
//! Formats: Claude Desktop's `claude_desktop_config.json`, Cursor's
//! `mcp.json` and Gemini CLI's `settings.json` use `{"mcpServers": {NAME:
//! {"command", "args"}}}`; VS Code's `mcp.json` uses `{"servers": {NAME:
//! {"type": "stdio", "command", "args"}}}`; Copilot CLI's
//! `mcp-config.json` uses `{"mcpServers": {NAME: {"type": "local",
//! "command", "args", "tools": ["*"]}}}`; Codex's `config.toml` a table
//! `[mcp_servers.NAME]` (TOML basic strings, which JSON's string escapes
//! are); Claude Code takes a shell command line, `claude mcp add NAME --
//! COMMAND ARGS...` (quoted for a POSIX shell, or for PowerShell on
//! Windows).
//!
//! Each title names where that host keeps the file on the platform the
//! check runs on ([`Platform`]: `%APPDATA%\Claude\` on Windows,
//! `~/Library/Application Support/Claude/` on macOS, ...).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::places::Platform;
use crate::settings::Settings;

/// Name of the server entry in the snippets.
pub const SERVER_NAME: &str = "conda";

/// Flags whose value is a path, resolved by the server's settings and
/// written (absolute) from them, so dropped from the raw flags.
const PATH_FLAGS: [&str; 4] = ["--conda-exe", "--python", "--worker-exe", "--worker-socket"];

/// Flags whose value is a file or folder the server opens, made absolute in
/// place (`--oauth-jwks` too, when its value is a FILE, not a URL, and
/// `--protect-env` when its value is a prefix, not a name).
pub const FILE_FLAGS: [&str; 8] = [
    "--allow-read-path",
    "--audit-log",
    "--config",
    "--auth-tokens",
    "--user-map",
    "--tls-cert",
    "--tls-key",
    "--worker-home",
];

/// Flags of the check's own run, not repeated in a host's configuration.
const CHECK_ONLY_FLAGS: [&str; 1] = ["--no-cache"];

/// How a host should start the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The program (absolute).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
}

impl Launch {
    /// The launch line for the running executable serving `conda_exe` with
    /// the flags `raw` (as given after `check`; `settings` is their
    /// resolution).
    pub fn for_this_process(conda_exe: &Path, settings: &Settings, raw: &[OsString]) -> Launch {
        let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("conda-mcp"));
        let (command, mut args) = match uvx_for(&exe) {
            Some(uvx) => (uvx, vec!["conda-mcp".to_owned()]),
            None => (exe.display().to_string(), Vec::new()),
        };
        args.push("--conda-exe".into());
        args.push(conda_exe.display().to_string());
        for (flag, value) in [
            ("--python", &settings.discovery.python),
            ("--worker-exe", &settings.worker.exe),
            ("--worker-socket", &settings.worker.socket),
        ] {
            if let Some(v) = value {
                args.push(flag.into());
                args.push(absolute(v));
            }
        }
        args.extend(repeated_flags(raw));
        Launch { command, args }
    }
}

/// `p` made absolute against the current folder (as written when that
/// fails), as text.
fn absolute(p: &Path) -> String {
    std::path::absolute(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

/// The flags `raw` (as given after `check`, lossily converted to strings)
/// as a host should repeat them: without the [`PATH_FLAGS`] and their
/// values and the [`CHECK_ONLY_FLAGS`], the values of [`FILE_FLAGS`], a
/// `--oauth-jwks` FILE and a `--protect-env` prefix made absolute against
/// the current folder; both
/// spellings, `--flag V` and `--flag=V`, are understood and kept.
pub fn repeated_flags(raw: &[OsString]) -> Vec<String> {
    let rewrite = |flag: &str, v: &str| -> String {
        // As the server reads them: a URL's scheme in any case
        // (`parse_jwks`), a protected environment's path by its separator
        // (`ProtectedEnv::parse`; a name stays).
        let lower = v.to_ascii_lowercase();
        let is_url = lower.starts_with("https://") || lower.starts_with("http://");
        let is_a_file = match flag {
            "--oauth-jwks" => !is_url,
            "--protect-env" => matches!(
                crate::call::plan::restrict::ProtectedEnv::parse(v),
                crate::call::plan::restrict::ProtectedEnv::Prefix(_)
            ),
            _ => FILE_FLAGS.contains(&flag),
        };
        if is_a_file {
            absolute(Path::new(v))
        } else {
            v.to_owned()
        }
    };
    let takes_a_path = |flag: &str| {
        PATH_FLAGS.contains(&flag)
            || FILE_FLAGS.contains(&flag)
            || flag == "--oauth-jwks"
            || flag == "--protect-env"
    };
    let mut out = Vec::new();
    let mut it = raw.iter().map(|a| a.to_string_lossy().into_owned());
    while let Some(a) = it.next() {
        if CHECK_ONLY_FLAGS.contains(&a.as_str()) {
            continue;
        }
        if let Some((flag, value)) = a.split_once('=')
            && flag.starts_with("--")
            && takes_a_path(flag)
        {
            if !PATH_FLAGS.contains(&flag) {
                out.push(format!("{flag}={}", rewrite(flag, value)));
            }
            continue;
        }
        if takes_a_path(&a) {
            let value = it.next();
            if !PATH_FLAGS.contains(&a.as_str())
                && let Some(v) = value
            {
                out.push(a.clone());
                out.push(rewrite(&a, &v));
            }
            continue;
        }
        out.push(a);
    }
    out
}

/// `uvx` on `PATH` (absolute) when `exe` lies in uv's cache of tool
/// environments (`…/archive-v0/…`), the place `uvx conda-mcp` runs from.
fn uvx_for(exe: &Path) -> Option<String> {
    let in_uv_cache = exe.components().any(|c| {
        c.as_os_str()
            .to_str()
            .is_some_and(|s| s.starts_with("archive-v"))
    });
    if !in_uv_cache {
        return None;
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join("uvx"))
        .find(|p| crate::worker_client::config::is_executable(p))
        .map(|p| p.display().to_string())
}

/// A host conda-mcp knows: the one `conda-mcp check --host NAME` prints
/// the configuration of and `conda-mcp setup NAME` writes into (clap's
/// value names: `claude-desktop`, `claude-code`, `vs-code`, `cursor`,
/// `gemini-cli`, `codex`, `copilot-cli`, `goose`). Where each keeps its
/// configuration is `setup`'s (`setup/hosts.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Host {
    /// Claude Desktop (stdio only).
    ClaudeDesktop,
    /// Claude Code (stdio, or HTTP with `--listen`).
    ClaudeCode,
    /// VS Code (stdio, or HTTP with `--listen`).
    VsCode,
    /// Cursor (stdio, or HTTP with `--listen`).
    Cursor,
    /// Gemini CLI (stdio only).
    GeminiCli,
    /// Codex CLI (stdio only).
    Codex,
    /// GitHub Copilot CLI (stdio only).
    CopilotCli,
    /// Block's Goose (stdio only).
    Goose,
}

impl Host {
    /// Every host, in `--help`'s order.
    pub const ALL: [Host; 8] = [
        Host::ClaudeDesktop,
        Host::ClaudeCode,
        Host::VsCode,
        Host::Cursor,
        Host::GeminiCli,
        Host::Codex,
        Host::CopilotCli,
        Host::Goose,
    ];

    /// The host's name for a person (`VS Code`).
    pub fn title(self) -> &'static str {
        match self {
            Host::ClaudeDesktop => "Claude Desktop",
            Host::ClaudeCode => "Claude Code",
            Host::VsCode => "VS Code",
            Host::Cursor => "Cursor",
            Host::GeminiCli => "Gemini CLI",
            Host::Codex => "Codex CLI",
            Host::CopilotCli => "GitHub Copilot CLI",
            Host::Goose => "Goose",
        }
    }

    /// The name `--host` takes.
    pub fn name(self) -> &'static str {
        match self {
            Host::ClaudeDesktop => "claude-desktop",
            Host::ClaudeCode => "claude-code",
            Host::VsCode => "vs-code",
            Host::Cursor => "cursor",
            Host::GeminiCli => "gemini-cli",
            Host::Codex => "codex",
            Host::CopilotCli => "copilot-cli",
            Host::Goose => "goose",
        }
    }
}

/// One host's configuration: what to do with it, and the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snippet {
    /// The host.
    pub host: Host,
    /// The host, where the text goes on the platform and why it differs
    /// from the others.
    pub title: String,
    /// Pretty JSON, or a shell command line.
    pub text: String,
}

/// `args` plus `--result-mode lean`, unless they choose a result mode.
fn lean(args: &[String]) -> Vec<String> {
    let chosen = args
        .iter()
        .any(|a| a == "--result-mode" || a.starts_with("--result-mode="));
    let mut out = args.to_vec();
    if !chosen {
        out.extend(["--result-mode".to_owned(), "lean".to_owned()]);
    }
    out
}

/// A TOML basic string: JSON's string syntax is a subset of it.
fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// Codex CLI's `[mcp_servers.conda]` table for `l`; `writes`: the flags
/// allow changes (`--allow-write` or `--approve-writes`).
pub fn codex_table(l: &Launch, writes: bool) -> String {
    let args: Vec<String> = l.args.iter().map(|a| toml_string(a)).collect();
    let mut t = format!(
        "[mcp_servers.{SERVER_NAME}]\ncommand = {}\nargs = [{}]\nrequired = true\n",
        toml_string(&l.command),
        args.join(", ")
    );
    if writes {
        t.push_str("default_tools_approval_mode = \"approve\"\n");
    }
    t
}

/// The configuration for each host, in [`Host::ALL`]'s order; `writes`: the
/// flags allow changes (`--allow-write` or `--approve-writes`, for Codex);
/// `platform`: whose places the titles name and whose shell Claude Code's
/// line is quoted for.
pub fn snippets(l: &Launch, writes: bool, platform: Platform) -> Vec<Snippet> {
    let pretty = |v: serde_json::Value| serde_json::to_string_pretty(&v).unwrap_or_default();
    let lean_args = lean(&l.args);
    // Said only where lean was added: a --result-mode given to check is
    // the person's choice and stays.
    let lean_added = lean_args.len() != l.args.len();
    let plain = json!({ "command": l.command, "args": l.args });
    let vscode = json!({ "type": "stdio", "command": l.command, "args": l.args });
    let desktop = json!({ "command": l.command, "args": lean_args });
    let words = [
        "claude",
        "mcp",
        "add",
        SERVER_NAME,
        "--",
        l.command.as_str(),
    ]
    .into_iter()
    .chain(lean_args.iter().map(String::as_str));
    // Only a NUL makes quoting fail, and no argument or path holds one.
    let claude_code = platform.command_line(words).unwrap_or_default();
    let home = |rel: &str| platform.in_home(rel);
    vec![
        Snippet {
            host: Host::ClaudeDesktop,
            title: format!(
                "Claude Desktop ({}{}):",
                platform.claude_desktop_config(),
                if lean_added {
                    "; lean results for its small tool-output limit"
                } else {
                    ""
                }
            ),
            text: pretty(json!({ "mcpServers": { SERVER_NAME: desktop } })),
        },
        Snippet {
            host: Host::ClaudeCode,
            title: format!(
                "Claude Code (run in {}{}):",
                platform.shell(),
                if lean_added {
                    "; lean results: it refuses tool results over 25,000 tokens"
                } else {
                    ""
                }
            ),
            text: claude_code,
        },
        Snippet {
            host: Host::VsCode,
            title: format!(
                "VS Code ({}, or the user's {}):",
                platform.in_project(".vscode/mcp.json"),
                platform.vscode_user_config()
            ),
            text: pretty(json!({ "servers": { SERVER_NAME: vscode } })),
        },
        Snippet {
            host: Host::Cursor,
            title: format!(
                "Cursor ({} or {}):",
                home(".cursor/mcp.json"),
                platform.in_project(".cursor/mcp.json")
            ),
            text: pretty(json!({ "mcpServers": { SERVER_NAME: plain } })),
        },
        Snippet {
            host: Host::GeminiCli,
            title: format!(
                "Gemini CLI ({} or {}; \"trust\": true, or headless gemini -p lists none of its tools; with folder trust on, also trust the project folder in {}: {{{}: \"TRUST_FOLDER\"}}):",
                home(".gemini/settings.json"),
                platform.in_project(".gemini/settings.json"),
                home(".gemini/trustedFolders.json"),
                platform.project_folder_json()
            ),
            text: pretty(json!({ "mcpServers": { SERVER_NAME: {
                "command": l.command, "args": l.args, "trust": true } } })),
        },
        Snippet {
            host: Host::Codex,
            title: format!(
                "Codex CLI ({}; required: the first turn waits for the tools{}):",
                home(".codex/config.toml"),
                if writes {
                    "; approve: else Codex blocks every tool that may write, before conda-mcp's policy"
                } else {
                    ""
                }
            ),
            text: codex_table(l, writes).trim_end().to_owned(),
        },
        Snippet {
            host: Host::CopilotCli,
            title: format!("GitHub Copilot CLI ({}):", home(".copilot/mcp-config.json")),
            text: pretty(json!({ "mcpServers": { SERVER_NAME: {
                "type": "local", "command": l.command, "args": l.args, "tools": ["*"] } } })),
        },
        Snippet {
            host: Host::Goose,
            title: format!(
                "Goose ({}, under extensions):",
                match platform {
                    Platform::Windows => "%APPDATA%\\Block\\goose\\config\\config.yaml".to_owned(),
                    _ => home(".config/goose/config.yaml"),
                }
            ),
            text: goose_yaml(l),
        },
    ]
}

/// Goose's extension entry (the keys `goose configure` writes: a stdio
/// extension with a 300 s call timeout) as a YAML block. Strings and the
/// argument list are written as JSON, which YAML 1.2 reads as double-quoted
/// scalars and a flow sequence, so no path or argument needs YAML's own
/// quoting rules.
fn goose_yaml(l: &Launch) -> String {
    let command = serde_json::to_string(&l.command).unwrap_or_default();
    let args = serde_json::to_string(&l.args).unwrap_or_default();
    format!(
        "extensions:\n  {SERVER_NAME}:\n    name: {SERVER_NAME}\n    type: stdio\n    cmd: {}\n    args: {}\n    enabled: true\n    envs: {{}}\n    timeout: 300",
        command, args,
    )
}

/// The MCP URL of a `--listen` server at `listen`, `https` with TLS; an
/// unspecified address (`0.0.0.0`, `::`) becomes `HOST`, the name clients
/// reach the machine by.
pub fn http_url(listen: std::net::SocketAddr, tls: bool) -> String {
    let scheme = if tls { "https" } else { "http" };
    let path = crate::transport::http::serve::MCP_PATH;
    if listen.ip().is_unspecified() {
        format!("{scheme}://HOST:{}{path}", listen.port())
    } else {
        format!("{scheme}://{listen}{path}")
    }
}

/// The configuration for each host of a `--listen` server at `url`, as
/// docs/remote.md ("Host configuration") gives them: Claude Code, VS Code
/// (the token from an input), Cursor (the token from an environment
/// variable). `TOKEN` is the person's token (`conda-mcp token new`) or
/// OAuth access token. `authenticated`: the server takes tokens
/// (`--auth-tokens` or `--oauth-issuer`); without, no snippet sends one.
/// `platform` as for [`snippets`].
pub fn http_snippets(url: &str, authenticated: bool, platform: Platform) -> Vec<Snippet> {
    let pretty = |v: serde_json::Value| serde_json::to_string_pretty(&v).unwrap_or_default();
    let mut words = vec![
        "claude",
        "mcp",
        "add",
        "--transport",
        "http",
        SERVER_NAME,
        url,
    ];
    if authenticated {
        words.extend(["--header", "Authorization: Bearer TOKEN"]);
    }
    let claude_code = platform.command_line(words).unwrap_or_default();
    let (claude_note, vscode_note, cursor_note) = if authenticated {
        (
            "; TOKEN is the person's token",
            "; the token is asked for",
            "; the token from CONDA_MCP_TOKEN",
        )
    } else {
        ("; no token: the server takes none", "", "")
    };
    let vscode = if authenticated {
        json!({
            "inputs": [{"type": "promptString", "id": "conda-token",
                        "description": "conda-mcp token", "password": true}],
            "servers": { SERVER_NAME: {
                "type": "http", "url": url,
                "headers": {"Authorization": "Bearer ${input:conda-token}"}}}
        })
    } else {
        json!({ "servers": { SERVER_NAME: { "type": "http", "url": url } } })
    };
    let cursor = if authenticated {
        json!({ "mcpServers": { SERVER_NAME: {
            "url": url,
            "headers": {"Authorization": "Bearer ${env:CONDA_MCP_TOKEN}"}}}})
    } else {
        json!({ "mcpServers": { SERVER_NAME: { "url": url } } })
    };
    vec![
        Snippet {
            host: Host::ClaudeCode,
            title: format!("Claude Code (run in {}{claude_note}):", platform.shell()),
            text: claude_code,
        },
        Snippet {
            host: Host::VsCode,
            title: format!(
                "VS Code ({}, or the user's {}{vscode_note}):",
                platform.in_project(".vscode/mcp.json"),
                platform.vscode_user_config()
            ),
            text: pretty(vscode),
        },
        Snippet {
            host: Host::Cursor,
            title: format!(
                "Cursor ({} or {}{cursor_note}):",
                platform.in_home(".cursor/mcp.json"),
                platform.in_project(".cursor/mcp.json")
            ),
            text: pretty(cursor),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_urls_name_the_scheme_and_a_placeholder_for_any_address() {
        let at = |s: &str| s.parse::<std::net::SocketAddr>().expect("address");
        assert_eq!(
            http_url(at("127.0.0.1:8765"), false),
            "http://127.0.0.1:8765/mcp"
        );
        assert_eq!(http_url(at("[::1]:8443"), true), "https://[::1]:8443/mcp");
        assert_eq!(http_url(at("0.0.0.0:8443"), true), "https://HOST:8443/mcp");
        let claude = &http_snippets("http://127.0.0.1:1/mcp", true, Platform::Linux)[0].text;
        assert_eq!(
            claude,
            "claude mcp add --transport http conda http://127.0.0.1:1/mcp --header \
             'Authorization: Bearer TOKEN'"
        );
        // A server that takes no token: no snippet sends one.
        let open = http_snippets("http://127.0.0.1:1/mcp", false, Platform::Linux);
        assert_eq!(
            open[0].text,
            "claude mcp add --transport http conda http://127.0.0.1:1/mcp"
        );
        for s in &open {
            assert!(
                !s.text.contains("Authorization") && !s.title.contains("TOKEN"),
                "{s:?}"
            );
        }
    }

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn files_become_absolute_urls_stay_and_no_cache_is_not_repeated() {
        let here = std::env::current_dir().expect("cwd");
        let abs = |p: &str| here.join(p).display().to_string();
        let raw = os(&[
            "--audit-log",
            "rel.log",
            "--auth-tokens=tokens.txt",
            "--no-cache",
            "--oauth-jwks",
            "https://idp.example/jwks.json",
            "--tls-key",
            "/etc/conda-mcp/key.pem",
            "--oauth-jwks=keys.json",
            "--user-map",
            "users.toml",
            "--oauth-jwks",
            "HTTPS://idp.example/jwks.json",
            "--protect-env",
            "envs/prod",
            "--protect-env=base",
            "--protect-env=/opt/envs/ci",
        ]);
        assert_eq!(
            repeated_flags(&raw),
            vec![
                "--audit-log".to_owned(),
                abs("rel.log"),
                format!("--auth-tokens={}", abs("tokens.txt")),
                "--oauth-jwks".to_owned(),
                "https://idp.example/jwks.json".to_owned(),
                "--tls-key".to_owned(),
                "/etc/conda-mcp/key.pem".to_owned(),
                format!("--oauth-jwks={}", abs("keys.json")),
                "--user-map".to_owned(),
                abs("users.toml"),
                "--oauth-jwks".to_owned(),
                "HTTPS://idp.example/jwks.json".to_owned(),
                "--protect-env".to_owned(),
                abs("envs/prod"),
                "--protect-env=base".to_owned(),
                "--protect-env=/opt/envs/ci".to_owned(),
            ]
        );
    }

    #[test]
    fn path_flags_are_dropped_in_both_spellings() {
        let raw = os(&[
            "--conda-exe",
            "rel/conda",
            "--allow-write",
            "--python=py",
            "--timeout",
            "60",
            "--worker-exe",
            "w",
        ]);
        assert_eq!(
            repeated_flags(&raw),
            vec!["--allow-write", "--timeout", "60"]
        );
    }

    #[test]
    fn snippets_have_each_hosts_shape_and_lean_where_recommended() {
        let l = Launch {
            command: "/opt/my tools/conda-mcp".into(),
            args: vec!["--conda-exe".into(), "/opt/conda/bin/conda".into()],
        };
        let s = snippets(&l, false, Platform::Linux);
        assert_eq!(
            s.iter().map(|s| s.host).collect::<Vec<_>>(),
            Host::ALL,
            "one snippet per host, in Host::ALL's order"
        );
        let desktop: serde_json::Value = serde_json::from_str(&s[0].text).expect("json");
        let server = &desktop["mcpServers"]["conda"];
        assert_eq!(server["command"], "/opt/my tools/conda-mcp");
        assert_eq!(
            server["args"],
            json!([
                "--conda-exe",
                "/opt/conda/bin/conda",
                "--result-mode",
                "lean"
            ])
        );
        assert_eq!(
            s[1].text,
            "claude mcp add conda -- '/opt/my tools/conda-mcp' --conda-exe \
             /opt/conda/bin/conda --result-mode lean"
        );
        assert_eq!(
            shlex::split(&s[1].text).expect("a shell line")[5..],
            [
                "/opt/my tools/conda-mcp",
                "--conda-exe",
                "/opt/conda/bin/conda",
                "--result-mode",
                "lean"
            ]
        );
        let vscode: serde_json::Value = serde_json::from_str(&s[2].text).expect("json");
        assert_eq!(vscode["servers"]["conda"]["type"], "stdio");
        assert_eq!(
            vscode["servers"]["conda"]["args"],
            json!(["--conda-exe", "/opt/conda/bin/conda"])
        );
        let cursor: serde_json::Value = serde_json::from_str(&s[3].text).expect("json");
        assert_eq!(
            cursor["mcpServers"]["conda"]["args"],
            vscode["servers"]["conda"]["args"]
        );
    }

    #[test]
    fn titles_name_each_platforms_place_and_windows_gets_powershell() {
        let l = Launch {
            command: r"C:\Users\Zoë\miniforge3\Scripts\conda-mcp.exe".into(),
            args: vec![
                "--conda-exe".into(),
                r"C:\Users\Zoë\miniforge3\Scripts\conda.exe".into(),
            ],
        };
        let titles = |p: Platform| -> Vec<String> {
            snippets(&l, true, p).into_iter().map(|s| s.title).collect()
        };
        let windows = titles(Platform::Windows);
        for (i, place) in [
            (0, r"%APPDATA%\Claude\claude_desktop_config.json"),
            (1, "PowerShell"),
            (2, r"%APPDATA%\Code\User\mcp.json"),
            (2, r".vscode\mcp.json"),
            (3, r"%USERPROFILE%\.cursor\mcp.json or .cursor\mcp.json"),
            (4, r"%USERPROFILE%\.gemini\settings.json"),
            (4, r#"{"C:\\path\\to\\project": "TRUST_FOLDER"}"#),
            (5, r"%USERPROFILE%\.codex\config.toml"),
            (6, r"%USERPROFILE%\.copilot\mcp-config.json"),
        ] {
            assert!(windows[i].contains(place), "{:?} lacks {place}", windows[i]);
        }
        let mac = titles(Platform::MacOs);
        assert!(mac[0].contains("~/Library/Application Support/Claude/claude_desktop_config.json"));
        assert!(mac[2].contains("~/Library/Application Support/Code/User/mcp.json"));
        assert!(mac[3].contains("~/.cursor/mcp.json"));
        let linux = titles(Platform::Linux);
        assert!(linux[0].contains("~/.config/Claude/claude_desktop_config.json"));
        assert!(linux[2].contains("~/.config/Code/User/mcp.json"));
        assert!(linux[4].contains(r#"{"/path/to/project": "TRUST_FOLDER"}"#));
        assert_eq!(
            snippets(&l, false, Platform::Windows)[1].text,
            r"claude mcp add conda '--' 'C:\Users\Zoë\miniforge3\Scripts\conda-mcp.exe' '--conda-exe' 'C:\Users\Zoë\miniforge3\Scripts\conda.exe' '--result-mode' lean"
        );
        // The JSON a Windows host reads holds the backslashes as written.
        let desktop: serde_json::Value =
            serde_json::from_str(&snippets(&l, false, Platform::Windows)[0].text).expect("json");
        assert_eq!(
            desktop["mcpServers"]["conda"]["command"],
            l.command.as_str()
        );
        assert_eq!(
            http_snippets("https://HOST:8443/mcp", true, Platform::Windows)[0].text,
            "claude mcp add '--transport' http conda 'https://HOST:8443/mcp' '--header' \
             'Authorization: Bearer TOKEN'"
        );
    }

    #[test]
    fn codex_waits_for_the_server_and_approves_only_where_writes_are_allowed() {
        let l = Launch {
            command: "/opt/my \"tools\"/conda-mcp".into(),
            args: vec!["--conda-exe".into(), "/c".into()],
        };
        assert_eq!(
            codex_table(&l, false),
            "[mcp_servers.conda]\ncommand = \"/opt/my \\\"tools\\\"/conda-mcp\"\nargs = [\"--conda-exe\", \"/c\"]\nrequired = true\n"
        );
        assert!(codex_table(&l, true).ends_with("default_tools_approval_mode = \"approve\"\n"));
        let gemini: serde_json::Value =
            serde_json::from_str(&snippets(&l, false, Platform::Linux)[4].text).expect("json");
        assert_eq!(gemini["mcpServers"]["conda"]["trust"], json!(true));
        let copilot: serde_json::Value =
            serde_json::from_str(&snippets(&l, false, Platform::Linux)[6].text).expect("json");
        assert_eq!(copilot["mcpServers"]["conda"]["tools"], json!(["*"]));
    }

    #[test]
    fn a_chosen_result_mode_is_kept() {
        for given in [
            vec!["--result-mode", "default"],
            vec!["--result-mode=default"],
        ] {
            let l = Launch {
                command: "/c".into(),
                args: given.iter().map(|a| a.to_string()).collect(),
            };
            let s = snippets(&l, false, Platform::Linux);
            let desktop: serde_json::Value = serde_json::from_str(&s[0].text).expect("json");
            assert_eq!(desktop["mcpServers"]["conda"]["args"], json!(given));
            // Nor do the titles say lean was chosen for them.
            for t in [&s[0].title, &s[1].title] {
                assert!(!t.contains("lean"), "{t}");
            }
        }
        let l = Launch {
            command: "/c".into(),
            args: Vec::new(),
        };
        let s = snippets(&l, false, Platform::Linux);
        assert!(s[0].title.contains("lean results"), "{}", s[0].title);
        assert!(s[1].title.contains("lean results"), "{}", s[1].title);
    }
}
