//! `conda-mcp check`: a human-readable setup report for whoever configures
//! an MCP host, taking exactly the server's flags.
//!
//! It takes the same [`Settings`] the server would start with and goes
//! through what the server would do at startup, one step at a time, and
//! stops at the first step that fails:
//!
//! 1. **conda**: the target and how it was found (`--conda-exe`,
//!    `CONDA_EXE`, `PATH`), as the server resolves it;
//! 2. **worker**: the `conda-mcp-worker` binary and where it was found
//!    (`--worker-exe`, next to `conda-mcp`, next to the path it was started
//!    by, `PATH`), or the listening worker of `--worker-socket`; then the
//!    server's own host checks (`startup::check_host`: a
//!    `--worker-user` home it cannot use fails, a `CONDARC` conda will not
//!    load is a warning); with `--listen`, the HTTP settings loaded as the
//!    server loads them (`crate::transport::http::serve::load`: token file, OAuth,
//!    TLS; the address is not bound) and the URL;
//! 3. **discovery**: the startup cache (its file, hit or miss and why), then
//!    discovery itself (conda version, interpreter and where it came from,
//!    plugins, commands), exactly as the server runs it (a miss writes the
//!    cache as the server would, unless `--no-cache`); the `.condarc`
//!    files conda loaded and each key the server relies on that one of
//!    them forces (`#!final`), with what it defeats as a warning;
//! 4. **interpreter**: the interpreter is run through the worker and must
//!    import `conda` (also on a cache hit, where discovery runs nothing);
//! 5. **conda info**: a real `conda info --json` through the worker, timed;
//! 6. **tools**: the tools the server would list, by policy class, and what
//!    the given `--allow-write` / `--allow-exec` let them do, built by the
//!    server's own step (`startup::build_tools`: a `--tools` or
//!    `--exclude-tools` entry that matches nothing fails);
//!    The last line of the section says which policy flag a task needs
//!    ([`policy_line`]);
//! 7. **log**: how stderr is written (the bounded queue of
//!    [`conda_mcp_shared::log_writer`]) and the lines this check dropped;
//! 8. **warnings**, then a ready-to-paste host configuration per host
//!    (Claude Desktop, Claude Code, VS Code, Cursor, Gemini CLI, Codex CLI,
//!    Copilot CLI, Goose: [`Host::ALL`]) with absolute paths ([`host_config`]), each titled with
//!    where that host keeps it on this platform ([`places`]); with
//!    `--listen`, the HTTP ones (URL and bearer header) for Claude Code,
//!    VS Code and Cursor.
//!
//! The report goes to stdout (check mode never speaks MCP); logs stay on
//! stderr at `warn` unless `RUST_LOG` says otherwise. The last line is
//! `result: OK ...` (exit status 0) or `result: FAILED: <one-line reason>`
//! (exit status 1). The report never contains environment variable values
//! other than the paths it resolves, conda's output or stderr (which can
//! hold channel credentials): failures name the step, the exit status and
//! at most conda's exception class.

pub mod host_config;
pub mod links;
pub mod places;

use places::Platform;

use std::ffi::OsString;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use crate::discovery::{self, InterpreterSource, TargetSource, cache};
use crate::settings::Settings;
use crate::startup::{build_tools, check_host};
use crate::tools::effects;
use crate::worker_client::config::{WorkerExeSource, locate_worker_exe};
use crate::worker_client::{Executor, Job, Program, WorkerConfig};

pub use host_config::Host;

/// The finished report.
#[derive(Debug, Clone)]
pub struct Report {
    /// What goes to stdout: the report's lines (the verdict first and
    /// last, each line ending in `\n`), the one host's configuration of
    /// `--host`, or the JSON document of `--format json`.
    pub text: String,
    /// What goes to stderr: with `--host`, the verdict and the warnings
    /// (stdout holds only what to paste).
    pub notes: String,
    /// `None` when everything works; else the one-line reason (also in the
    /// verdict line).
    pub failure: Option<String>,
}

/// What `conda-mcp check` was asked for beyond the server's settings.
#[derive(Debug, Clone, Default)]
pub struct CheckRequest {
    /// `--host NAME`: only that host's configuration.
    pub host: Option<host_config::Host>,
    /// `--format json`.
    pub json: bool,
    /// `--verbose`: the internals too (the cache key, conda's
    /// configuration files, the log queue).
    pub verbose: bool,
    /// The settings that are not their defaults and where they came from.
    pub origins: Vec<crate::settings::SettingOrigin>,
    /// The flags a host starts the server with (as given after `check`,
    /// and the environment's as flags).
    pub repeat: Vec<OsString>,
}

/// Why the check failed: the step that failed and why, in one line.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// No conda found (the sources tried and how to point at one).
    #[error(transparent)]
    Target(#[from] discovery::TargetError),
    /// The worker binary is not there.
    #[error(
        "the worker binary {} is missing or not executable (install conda-mcp-worker next to \
         conda-mcp, or pass --worker-exe PATH)",
        .0.display()
    )]
    WorkerMissing(std::path::PathBuf),
    /// One of the server's own startup checks (boxed: it is large).
    #[error(transparent)]
    Startup(Box<crate::startup::StartupError>),
    /// `--audit-log` cannot be opened.
    #[error(transparent)]
    AuditLog(#[from] crate::call::audit::AuditError),
    /// The HTTP settings' files (`--auth-tokens`, OAuth, TLS; boxed).
    #[error(transparent)]
    Http(Box<crate::transport::http::StartError>),
    /// Discovery failed (its first line: conda's stderr is the log's).
    #[error("discovery failed: {first_line}")]
    Discovery {
        /// The error's first line, without the stderr tail.
        first_line: String,
    },
    /// A tool's schema is not valid (a bug).
    #[error("building the tools failed: {0}")]
    Schema(crate::schema::SchemaError),
    /// The worker could not run a program.
    #[error("the worker could not run {program}: {source}")]
    WorkerRun {
        /// `the interpreter`, `conda`.
        program: &'static str,
        /// Why.
        source: crate::worker_client::ExecError,
    },
    /// A program ran and failed.
    #[error("{what} {ended}{}", exception.as_ref().map(|n| format!(" ({n})")).unwrap_or_default())]
    Exited {
        /// What was run, in words.
        what: &'static str,
        /// How it ended (`exited with status 1`).
        ended: String,
        /// Its exception class, never the message.
        exception: Option<String>,
    },
    /// `--host` of a host with no configuration for this mode.
    #[error("{host} has no {mode} configuration; the hosts that have one: {available}")]
    NoSuchHost {
        /// The host asked for.
        host: &'static str,
        /// `HTTP` or `stdio`.
        mode: &'static str,
        /// The names `--host` takes here.
        available: String,
    },
}

impl From<crate::startup::StartupError> for CheckError {
    fn from(e: crate::startup::StartupError) -> Self {
        CheckError::Startup(Box::new(e))
    }
}

impl From<crate::transport::http::StartError> for CheckError {
    fn from(e: crate::transport::http::StartError) -> Self {
        CheckError::Http(Box::new(e))
    }
}

/// Log filter of the server and the worker in check mode when `RUST_LOG`
/// is not set.
pub const CHECK_LOG_FILTER: &str = "warn";

/// Python run through the worker to prove the interpreter works
/// (`python -c PROBE`): prints its version and conda's, nothing else. One
/// line with no newline at its end, in a file of its own so that the
/// Windows stand-in conda (tests/replay) can recognise it byte for byte.
const INTERPRETER_PROBE: &str = include_str!("interpreter_probe.py");

/// Runs the check for the resolved flags `settings` (the same value the
/// server would start with) as `request` asks.
///
/// Text: the verdict, the settings that are not their defaults, the
/// warnings and the host configurations first; then what was checked,
/// step by step; the verdict again as the last line (`result: OK ...` or
/// `result: FAILED: ...`).
pub async fn check(settings: &Settings, request: &CheckRequest) -> Report {
    let mut r = Builder {
        verbose: request.verbose,
        ..Builder::default()
    };
    let started = Instant::now();
    let outcome = steps(settings, &request.repeat, &mut r).await;
    let elapsed = started.elapsed();
    let (verdict, failure) = match &outcome {
        Ok(summary) => (
            format!("OK: {summary} (checked in {} ms)", elapsed.as_millis()),
            None,
        ),
        Err(reason) => {
            let reason = one_line(&reason.to_string());
            (format!("FAILED: {reason}"), Some(reason))
        }
    };
    let version = env!("CARGO_PKG_VERSION");
    if request.json {
        let doc = serde_json::json!({
            "conda_mcp": version,
            "commit": env!("CONDA_MCP_COMMIT"),
            "ok": failure.is_none(),
            "verdict": verdict,
            "failure": failure,
            "settings": request.origins,
            "warnings": r.warnings,
            "configurations": r.snippets.iter().map(|s| serde_json::json!({
                "host": s.host, "title": s.title.trim_end_matches(':'), "text": s.text,
                "install_link": links::for_snippet(s),
            })).collect::<Vec<_>>(),
            "steps": r.sections.iter().map(|(title, items)| serde_json::json!({
                "title": title,
                "items": items.iter().map(|(k, v)| serde_json::json!({"key": k, "value": v})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        });
        let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        text.push('\n');
        return Report {
            text,
            notes: String::new(),
            failure,
        };
    }
    if let Some(host) = request.host {
        let mut notes = format!("conda-mcp check: {verdict}\n");
        for w in &r.warnings {
            let _ = writeln!(notes, "warning: {w}");
        }
        let (text, failure) = match (&failure, r.snippets.iter().find(|s| s.host == host)) {
            (Some(_), _) => (String::new(), failure),
            (None, Some(snippet)) => {
                let _ = writeln!(notes, "{}", snippet.title);
                if let Some(link) = links::for_snippet(snippet) {
                    let _ = writeln!(notes, "{}", link_line(&link));
                }
                (format!("{}\n", snippet.text), None)
            }
            (None, None) => {
                let e = CheckError::NoSuchHost {
                    host: host.name(),
                    mode: if settings.http.is_some() {
                        "HTTP"
                    } else {
                        "stdio"
                    },
                    available: r
                        .snippets
                        .iter()
                        .map(|s| s.host.name())
                        .collect::<Vec<_>>()
                        .join(", "),
                };
                let _ = writeln!(notes, "conda-mcp check: FAILED: {e}");
                (String::new(), Some(e.to_string()))
            }
        };
        return Report {
            text,
            notes,
            failure,
        };
    }
    let mut text = format!(
        "conda-mcp check (conda-mcp {version}, commit {}): {verdict}\n",
        env!("CONDA_MCP_COMMIT")
    );
    if !request.origins.is_empty() {
        text.push_str("\nsettings (those that are not the defaults, and where each came from):\n");
        let width = request
            .origins
            .iter()
            .map(|o| o.flag.len())
            .max()
            .unwrap_or(0);
        for o in &request.origins {
            let _ = writeln!(text, "  {:<width$}  {}  ({})", o.flag, o.value, o.origin);
        }
    }
    if outcome.is_ok() {
        text.push_str("\nwarnings:\n");
        if r.warnings.is_empty() {
            text.push_str("  none\n");
        }
        for w in &r.warnings {
            let _ = writeln!(text, "  - {w}");
        }
        let _ = writeln!(text, "\n{}:", r.config_title);
        for snippet in &r.snippets {
            let _ = writeln!(text, "  {}", snippet.title);
            for l in snippet.text.lines() {
                let _ = writeln!(text, "    {l}");
            }
        }
        let links: Vec<(&str, String)> = r
            .snippets
            .iter()
            .filter_map(|s| Some((s.host.title(), links::for_snippet(s)?)))
            .collect();
        if !links.is_empty() {
            text.push_str(
                "\ninstall links (one click instead of pasting; the host asks before it adds the server):\n",
            );
            for (host, link) in links {
                let _ = writeln!(text, "    {host}: {link}");
            }
        }
        text.push_str(
            "\nwhat was checked (--verbose adds the cache key, conda's configuration files and the log):\n",
        );
    }
    text.push_str(&r.text);
    let _ = write!(text, "\nresult: {verdict}\n");
    Report {
        text,
        notes: String::new(),
        failure,
    }
}

/// The report as the steps write it: the sections of what was checked
/// (text, and as data for JSON), the warnings, and the host
/// configurations.
#[derive(Default)]
struct Builder {
    /// The sections of what was checked, as text.
    text: String,
    /// The same, as (title, items) for `--format json`.
    sections: Vec<(String, Vec<(String, String)>)>,
    warnings: Vec<String>,
    /// The host configurations' heading.
    config_title: String,
    snippets: Vec<host_config::Snippet>,
    /// `--verbose`: the items [`Builder::detail`] adds are printed.
    verbose: bool,
}

impl Builder {
    fn section(&mut self, title: &str) {
        let _ = write!(self.text, "\n{title}:\n");
        self.sections.push((title.to_owned(), Vec::new()));
    }
    fn item(&mut self, key: &str, value: impl std::fmt::Display) {
        let value = value.to_string();
        let _ = writeln!(self.text, "  {key:<13} {value}");
        if let Some((_, items)) = self.sections.last_mut() {
            items.push((key.to_owned(), value));
        }
    }
    /// An item only `--verbose` prints (always in JSON).
    fn detail(&mut self, key: &str, value: impl std::fmt::Display) {
        if self.verbose {
            self.item(key, value);
        } else if let Some((_, items)) = self.sections.last_mut() {
            items.push((key.to_owned(), value.to_string()));
        }
    }
}

/// The names the cache key covers (set here, and the fixed ones), for
/// `check`: names only, never values.
fn covered_variables() -> String {
    let mut names: Vec<String> = crate::discovery::stamp::config_environment()
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    for fixed in crate::discovery::stamp::CONFIG_VARIABLES {
        if !names.iter().any(|n| n == fixed) {
            names.push(format!("{fixed} (unset)"));
        }
    }
    names.push("any CONDA_* set later".into());
    names.join(", ")
}

/// conda's configuration: the files it loaded and each key the server
/// relies on that a source forces (never a value), with what it defeats
/// as a warning.
fn configuration(r: &mut Builder, dump: &crate::dump::Dump) {
    use crate::discovery::config::ForcedConfig;
    let Some(facts) = &dump.config else {
        r.item(
            "condarc",
            "not reported by this conda (forced keys unknown)",
        );
        return;
    };
    if facts.files.is_empty() {
        r.detail("condarc", "none loaded");
    }
    for (i, f) in facts.files.iter().enumerate() {
        r.detail(if i == 0 { "condarc" } else { "" }, f);
    }
    let forced = ForcedConfig::from_dump(dump);
    if forced.keys.is_empty() {
        r.item("forced keys", "none");
    }
    for (i, k) in forced.keys.iter().enumerate() {
        r.item(
            if i == 0 { "forced keys" } else { "" },
            format!("{} (marked final in {})", k.key, k.place()),
        );
    }
    if let Some(k) = forced.dry_run_defeated() {
        r.warnings.push(format!(
            "conda would not honour --dry-run (`{}` is marked final in {}): previews and dry runs are refused with dry_run_not_honoured until the marker is removed",
            k.key,
            k.place()
        ));
    }
    if let Some(k) = forced.json_off() {
        r.warnings.push(format!(
            "conda would not honour --json (`{}` is marked final in {}): results carry no parsed_json and say why in parsed_json_error",
            k.key,
            k.place()
        ));
    }
}

/// The steps in order (module docs), one function each; `Ok` carries the
/// verdict's summary.
async fn steps(s: &Settings, args: &[OsString], r: &mut Builder) -> Result<String, CheckError> {
    let target = conda_step(s, r)?;
    let spawn = worker_step(s, r)?;
    // 2b. the HTTP settings, loaded as the server loads them (not bound:
    // the server may be running)
    let (http_url, users) = match &s.http {
        None => (None, Vec::new()),
        Some(h) => {
            let (url, users) = http_section(h, &s.policy, r).await?;
            (Some(url), users)
        }
    };
    let found = discovery_step(s, &target, r).await?;
    worker_runs_step(s, &found, spawn, r).await?;
    users_step(s, &found, &users, r).await;
    let tools = tools_step(s, &found.catalog, r)?;
    log_step(r);
    host_step(s, args, &found, http_url.as_deref(), r);
    Ok(format!(
        "conda-mcp can serve conda {} with {} tools",
        found.catalog.conda_version,
        tools.listed.len()
    ))
}

/// Step 1: the target conda and how it was found.
fn conda_step(s: &Settings, r: &mut Builder) -> Result<discovery::Target, CheckError> {
    r.section("conda");
    let target = match discovery::resolve_target(s.discovery.conda_exe.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            // The section says so itself; the verdict line carries the
            // sources tried and how to point at a conda.
            r.item("executable", "not found (the reason is the verdict)");
            return Err(e.into());
        }
    };
    r.item("executable", target.path.display());
    r.item(
        "found by",
        match target.source {
            TargetSource::Flag => "--conda-exe",
            TargetSource::Env => "the CONDA_EXE environment variable",
            TargetSource::Path => "searching PATH for `conda`",
            TargetSource::UserInstall => "the user's Miniforge install (%USERPROFILE%\\miniforge3)",
            TargetSource::Registry => {
                "the Windows registry (an installer's uninstall entry, the last place looked)"
            }
        },
    );
    Ok(target)
}

/// Step 2: the worker binary (or the listening worker) and the server's
/// own host checks; whether the worker is spawned.
fn worker_step(s: &Settings, r: &mut Builder) -> Result<bool, CheckError> {
    r.section("worker");
    let spawn = s.worker.socket.is_none();
    if let Some(sock) = &s.worker.socket {
        r.item("mode", "connect to a listening worker (--worker-socket)");
        r.item("socket", sock.display());
    } else {
        let (exe, source) = match &s.worker.exe {
            Some(p) => (p.clone(), WorkerExeSource::Flag),
            None => locate_worker_exe(),
        };
        r.item("binary", exe.display());
        r.item("found", source.describe());
        if !crate::worker_client::config::is_executable(&exe) {
            return Err(CheckError::WorkerMissing(exe));
        }
    }
    if let Some(user) = &s.worker.user {
        r.item("runs as", format!("user {user} (--worker-user)"));
    }
    // The server's own host checks: a --worker-user home it cannot use
    // fails here as it fails the server's startup; a CONDARC conda will
    // not load is a warning in both.
    let host = check_host(s)?;
    r.warnings.extend(host.warnings);
    if let Some(path) = &s.audit_log {
        audit_log_item(path, r)?;
    }
    Ok(spawn)
}

/// `--audit-log`: the server opens it (creating it, mode 0600) before
/// discovery; the check asks [`crate::call::audit::probe`] whether it could,
/// without creating it.
fn audit_log_item(path: &std::path::Path, r: &mut Builder) -> Result<(), CheckError> {
    use crate::call::audit::Probe;
    let probe = crate::call::audit::probe(path)?;
    let shown = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    r.item(
        "audit log",
        match probe {
            Probe::Exists => format!("{} (exists; opens for appending)", shown.display()),
            Probe::WouldCreate => format!(
                "{} (missing: the server creates it, mode 0600, at its start)",
                shown.display()
            ),
        },
    );
    Ok(())
}

/// Step 3: the startup cache, then discovery as the server runs it, and
/// conda's configuration.
async fn discovery_step(
    s: &Settings,
    target: &discovery::Target,
    r: &mut Builder,
) -> Result<discovery::Discovery, CheckError> {
    r.section("discovery");
    let mut opts = s.discovery_options();
    opts.worker = quiet(opts.worker);
    match (!s.discovery.use_cache, cache::default_cache_dir()) {
        (true, _) => r.item("cache", "not used (--no-cache)"),
        (false, None) => r.item("cache", "no cache folder (neither XDG_CACHE_HOME nor HOME)"),
        (false, Some(dir)) => {
            r.item(
                "cache file",
                cache::entry_path(&dir, &target.path).display(),
            );
            let python_flag = s
                .discovery
                .python
                .as_deref()
                .map(|p| std::path::absolute(p).unwrap_or(p.to_path_buf()));
            r.detail(
                "cache key",
                format!(
                    "the target, its interpreter, its package folders, every place of conda's .condarc search path, and the variables {} (sha256 of each value)",
                    covered_variables()
                ),
            );
            match cache::load(&dir, &target.path, python_flag.as_deref()) {
                Ok(_) => r.item("cache", "hit (startup runs no Python)"),
                Err(miss) => r.item("cache", format!("miss: {miss} (discovery runs now)")),
            }
        }
    }
    let t = Instant::now();
    let found = discovery::discover(&opts)
        .await
        .map_err(|e| CheckError::Discovery {
            first_line: first_line(&e.to_string()),
        })?;
    let discovery_ms = t.elapsed().as_millis();
    if let Some(lane) = &found.helper_lane {
        lane.shutdown().await;
    }
    r.item("conda", &found.catalog.conda_version);
    r.item(
        "took",
        format!(
            "{discovery_ms} ms ({})",
            if found.from_cache {
                "from the cache".to_owned()
            } else {
                match found.processes_started {
                    1 => "1 process through the worker".to_owned(),
                    n => format!("{n} processes through the worker"),
                }
            }
        ),
    );
    if s.discovery.use_cache && !found.from_cache {
        match &found.cache_file {
            Some(p) => r.item("cache", format!("written: {}", p.display())),
            None => r
                .warnings
                .push("the startup cache could not be written (see the log)".into()),
        }
    }
    r.item("interpreter", found.python.display());
    r.item(
        "from",
        match found.python_source {
            InterpreterSource::Flag => "--python",
            InterpreterSource::Shebang => "the conda script's shebang",
            InterpreterSource::CondaPythonExe => "CONDA_PYTHON_EXE (same installation)",
            InterpreterSource::CondaInfo => "`conda info --json` (sys.executable)",
            InterpreterSource::Cache => "the startup cache",
        },
    );
    let catalog = &found.catalog;
    if catalog.plugins.is_empty() {
        r.item("plugins", "none");
    } else {
        let mut first = true;
        for p in &catalog.plugins {
            r.item(
                if first { "plugins" } else { "" },
                format!("{} {} ({})", p.distribution, p.version, p.name),
            );
            first = false;
        }
    }
    r.item(
        "commands",
        format!(
            "{} in conda's parser (the tools below are those a model may call)",
            catalog.commands.len()
        ),
    );
    configuration(r, &found.dump);
    for w in &found.dump.warnings {
        r.warnings
            .push(format!("discovery helper: {}", first_line(w)));
    }
    for f in &found.dump.plugin_failures {
        r.warnings.push(first_line(&f.warning()));
    }
    if !catalog.diagnostics.is_empty() {
        r.warnings.push(format!(
            "{} command(s) or option(s) could not be represented as typed tools (conda://capabilities \
             lists them; they stay reachable through conda_execute with --allow-exec)",
            catalog.diagnostics.len()
        ));
    }
    Ok(found)
}

/// Steps 4 and 5 through the worker of the discovered interpreter.
async fn worker_runs_step(
    s: &Settings,
    found: &discovery::Discovery,
    spawn: bool,
    r: &mut Builder,
) -> Result<(), CheckError> {
    let mut cfg = quiet(s.worker_config(found.target.path.clone()));
    cfg.python = Some(found.python.clone());
    let exec = Executor::new(cfg);
    let through_worker = run_through_worker(&exec, s.limits.timeout, r).await;
    exec.shutdown().await;
    through_worker?;
    if !spawn {
        r.item(
            "note",
            "the listening worker runs its own conda (its --conda-exe)",
        );
    }
    Ok(())
}

/// Step 6: the tools by policy class, built by the server's own step.
fn tools_step(
    s: &Settings,
    catalog: &crate::catalog::Catalog,
    r: &mut Builder,
) -> Result<crate::tools::ToolSet, CheckError> {
    let writes = if s.policy.approve_writes {
        "--approve-writes on".to_owned()
    } else {
        format!("--allow-write {}", on_off(s.policy.allow_write))
    };
    r.section(&format!(
        "tools ({writes}, --allow-exec {}, --schema-profile {})",
        on_off(s.policy.allow_exec),
        profile_name(s)
    ));
    r.item("writes", s.policy.writes_mode().describe());
    // The server's own step: a --tools entry that matches nothing fails
    // here as it would refuse to start the server.
    let tools = build_tools(catalog, &s.tool_options()).map_err(|e| match e {
        crate::startup::StartupError::Schema(e) => CheckError::Schema(e),
        other => CheckError::from(other),
    })?;
    listing(s, catalog, &tools, r);
    Ok(tools)
}

/// Step 6, the listing: the tools by policy class and what the policy
/// lets each class do, `conda_execute` and `conda_cli_command`, and the
/// policy line.
fn listing(
    s: &Settings,
    catalog: &crate::catalog::Catalog,
    tools: &crate::tools::ToolSet,
    r: &mut Builder,
) {
    // In compact mode the commands are not tools: they are named by the
    // command path conda_call takes.
    let compact = s.mode == crate::tools::ToolMode::Compact;
    let names: Vec<String> = tools
        .generated
        .iter()
        .map(|t| {
            if compact {
                catalog.commands[t.cmd].subpath().join(" ")
            } else {
                t.name.clone()
            }
        })
        .collect();
    let (mut read_only, mut writes, mut runs) = (Vec::new(), Vec::new(), Vec::new());
    for (t, name) in tools.generated.iter().zip(&names) {
        let e = effects(catalog, t.cmd);
        if e.runs_subprocess {
            runs.push(name.as_str());
        } else if e.read_only {
            read_only.push(name.as_str());
        } else {
            writes.push(name.as_str());
        }
    }
    // The server's own tools belong to a group too, so the groups add up
    // to every listed tool.
    if tools.cli_command.is_some() {
        read_only.push(crate::tools::CLI_COMMAND_TOOL);
    }
    if tools.route(crate::tools::INVENTORY_TOOL).is_some() {
        read_only.push(crate::tools::INVENTORY_TOOL);
    }
    if tools.route(crate::tools::EXECUTE_TOOL).is_some() {
        runs.push(crate::tools::EXECUTE_TOOL);
    }
    r.item("listed", format!("{} tools", tools.listed.len()));
    if compact {
        let listed: Vec<String> = tools.listed.iter().map(|t| t.name.to_string()).collect();
        r.item(
            "tool mode",
            format!(
                "compact: {}; the commands below are called through conda_call by their command path",
                listed.join(", ")
            ),
        );
    }
    list(r, "read-only", "always callable", &read_only);
    list(
        r,
        "may write",
        if s.policy.allow_write {
            "read-only calls and writes allowed"
        } else if s.policy.approve_writes {
            "read-only calls; each write only after the person approves it through the host"
        } else {
            "read-only calls only; writes refused without --allow-write"
        },
        &writes,
    );
    list(
        r,
        "runs programs",
        if s.policy.allow_exec {
            if s.policy.approve_writes {
                "allowed, each run only after the person approves it"
            } else {
                "allowed; writes also need --allow-write"
            }
        } else {
            "refused without --allow-exec"
        },
        &runs,
    );
    r.item(
        "conda_execute",
        if tools.route(crate::tools::EXECUTE_TOOL).is_some() {
            "listed (raw argv; classified like the typed tools)"
        } else if s.policy.allow_exec {
            "not listed (left out by --tools)"
        } else {
            "not listed (needs --allow-exec)"
        },
    );
    if tools.cli_command.is_some() {
        r.item(
            "conda_cli_command",
            "listed (conda-completion plugin found)",
        );
    }
    r.item("policy", policy_line(&s.policy));
}

/// The log: how stderr is written, and what this check lost of it.
fn log_step(r: &mut Builder) {
    r.section("log");
    r.detail(
        "stderr",
        format!(
            "written by a thread of its own behind a {} KiB queue; lines that do not fit are \
             dropped and counted, never waited for",
            conda_mcp_shared::log_writer::QUEUE_BYTES / 1024
        ),
    );
    let dropped = conda_mcp_shared::log_writer::dropped_lines();
    r.item("dropped", format!("{dropped} lines so far"));
    if dropped > 0 {
        r.warnings.push(format!(
            "{dropped} log lines were dropped during this check: stderr was not read fast enough"
        ));
    }
}

/// The line that offers a host's one-click install link.
fn link_line(link: &str) -> String {
    format!("or open this install link (the host asks before it adds the server): {link}")
}

/// Step 7: the warnings, then the host configuration (stdio, or HTTP with
/// `--listen`).
fn host_step(
    s: &Settings,
    args: &[OsString],
    found: &discovery::Discovery,
    http_url: Option<&str>,
    r: &mut Builder,
) {
    if s.policy.allow_exec {
        r.warnings.push(
            "--allow-exec lets the model run any program as this user (conda run, conda_execute)"
                .into(),
        );
    }
    if s.policy.approve_writes {
        r.warnings.push(
            "--approve-writes needs a host that asks the person (MCP elicitation, or the \
             approval card of an MCP Apps host such as Claude Desktop): Gemini CLI cannot ask \
             (every change ends approval_unavailable), Codex CLI declines every question, and \
             Claude Code's -p mode answers them itself unless an Elicitation hook does (both end \
             declined); use --allow-write there (docs/approval.md \"Hosts\")"
                .into(),
        );
    }
    let snippets = match http_url {
        Some(url) => {
            r.config_title = "host configuration (the server runs on its own with these flags, \
                 e.g. under systemd, docs/remote.md; hosts connect to it; a host that only \
                 starts servers itself gets its configuration from check without the HTTP flags)"
                .to_owned();
            let authenticated = s
                .http
                .as_ref()
                .is_some_and(|h| h.auth_tokens.is_some() || h.oauth.is_some());
            host_config::http_snippets(url, authenticated, Platform::current())
        }
        None => {
            r.config_title =
                "host configuration (one per host; paste into the host's MCP settings)".to_owned();
            // The path as given or found, made absolute, not its canonical
            // form: a symlink that an upgrade moves (`/opt/conda` to a
            // versioned folder) keeps working; the server resolves it again
            // at each start.
            let conda = std::path::absolute(&found.target.given)
                .unwrap_or_else(|_| found.target.path.clone());
            let launch = host_config::Launch::for_this_process(&conda, s, args);
            host_config::snippets(
                &launch,
                s.policy.allow_write || s.policy.approve_writes,
                Platform::current(),
            )
        }
    };
    r.snippets = snippets;
}

/// Step 2b (`--listen`): the HTTP settings checked and their files loaded
/// as the server does it (token file, OAuth key set and user map, TLS
/// certificate and key), without binding. The MCP URL, or why the server
/// would not start.
async fn http_section(
    h: &crate::transport::http::HttpSettings,
    policy: &crate::policy::Policy,
    r: &mut Builder,
) -> Result<(String, Vec<String>), CheckError> {
    r.section("http (--listen)");
    let loaded = crate::transport::http::serve::load(h).await?;
    let url = host_config::http_url(h.listen, loaded.tls());
    r.item("serves", &url);
    if let Some((cert, _)) = &h.tls {
        r.item("tls", format!("certificate {}", cert.display()));
    } else {
        r.item("tls", "off (plain HTTP)");
    }
    match loaded.token_principals() {
        Some(n) => r.item("tokens", format!("{n} principal(s) (--auth-tokens)")),
        None => r.item("tokens", "none"),
    }
    // Each principal's effective policy: the startup policy narrowed by
    // its line's policy column.
    for (name, scopes) in loaded.principals() {
        r.item(
            &format!("principal {name}:"),
            crate::policy::scopes::effective(policy, scopes),
        );
    }
    if policy.approve_writes {
        // docs/approval.md "Over HTTP": an `initialize` that declares
        // elicitation or MCP Apps opens a session (`Mcp-Session-Id`), in
        // which the host is asked; a sessionless request is not.
        r.item(
            "approval",
            format!(
                "over HTTP a host can approve when it keeps the session its initialize opens \
                 (Mcp-Session-Id, 2025-11-25 transport; opened when it declares elicitation: \
                 the form, or MCP Apps: the approval card; Claude Code, VS Code, Cursor, goose, \
                 the MCP SDKs' clients with an elicitation handler), or speaks the 2026-07-28 \
                 lifecycle (the form as an input-required result, a task, or the card); a \
                 host that declares neither, or sends no Mcp-Session-Id, gets \
                 approval_unavailable (Gemini CLI; Codex CLI declines); sessions: at most {} \
                 open, closed after {} s idle (--max-sessions, --session-idle-timeout; \
                 docs/approval.md \"Over HTTP\")",
                h.sessions.max,
                h.sessions.idle_timeout.as_secs()
            ),
        );
    }
    match &h.oauth {
        Some(o) => r.item(
            "oauth",
            format!("issuer {}, audience {}", o.issuer, o.audience),
        ),
        None => r.item("oauth", "off"),
    }
    if h.listen.port() == 0 {
        r.warnings.push(
            "--listen with port 0: the server takes a free port when it starts (its log's \
             `listening` line names it), so the URL in the host configuration below is not one \
             a host can reach; give a fixed port"
                .into(),
        );
    }
    // Not bound for the server (it may be running), but a port taken now
    // is worth saying: the server cannot start there while it is.
    if h.listen.port() != 0
        && let Err(e) = std::net::TcpListener::bind(h.listen)
        && e.kind() == std::io::ErrorKind::AddrInUse
    {
        r.warnings.push(format!(
            "{} is in use now (a running conda-mcp, or another program): the server cannot \
             start with this --listen while it is",
            h.listen
        ));
    }
    if h.auth_tokens.is_none() && h.oauth.is_none() {
        r.warnings.push(
            "--listen without --auth-tokens or --oauth-issuer: anyone who can reach the \
             loopback address can use conda as this user"
                .into(),
        );
    }
    let users = loaded.os_users();
    // The server's own check: root, and a usable home for each user.
    crate::startup::check_users(&users)?;
    if users.is_empty() {
        r.item("os users", "none (every call runs in the default worker)");
    } else {
        r.item("os users", format!("{} (a worker each)", users.join(", ")));
    }
    Ok((url, users))
}

/// Step 5b (`--listen` with principals mapped to OS users): conda's
/// forced keys as each of those users reads its configuration (the
/// discovery helper run in a worker of that user), with what a forced
/// `dry_run` defeats as a warning.
async fn users_step(s: &Settings, found: &discovery::Discovery, users: &[String], r: &mut Builder) {
    if users.is_empty() {
        return;
    }
    r.section("conda's configuration per OS user");
    let mut base = quiet(s.worker_config(found.target.path.clone()));
    base.python = Some(found.python.clone());
    for user in users {
        match crate::discovery::config::forced_for_user(&base, user, s.limits.timeout).await {
            Ok(forced) => {
                r.item(user, format!("forced keys {}", forced.describe()));
                if let Some(k) = forced.dry_run_defeated() {
                    r.warnings.push(format!(
                        "for OS user {user}, conda would not honour --dry-run (`{}` is marked final in {}): that user's previews and dry runs are refused with dry_run_not_honoured",
                        k.key,
                        k.place()
                    ));
                }
            }
            Err(e) => {
                r.item(user, "forced keys unknown (see the warning)");
                r.warnings.push(format!(
                    "conda's configuration of OS user {user} could not be read: {e}"
                ));
            }
        }
    }
}

/// Steps 4 and 5: the interpreter imports conda, and `conda info --json`
/// runs, both through the worker.
async fn run_through_worker(
    exec: &Executor,
    timeout: Duration,
    r: &mut Builder,
) -> Result<(), CheckError> {
    r.section("through the worker");
    let (res, ms) = timed_run(
        exec,
        Job::new(Program::Python, vec!["-c".into(), INTERPRETER_PROBE.into()]),
        timeout,
        "python interpreter probe (check)",
        "the interpreter",
        "the interpreter does not work: `python -c 'import conda'`",
    )
    .await?;
    let mut words = res.stdout.split_whitespace();
    let (py, conda) = (words.next().unwrap_or("?"), words.next().unwrap_or("?"));
    r.item(
        "interpreter",
        format!("Python {py}, imports conda {conda} ({ms} ms)"),
    );
    if let Some(pid) = exec.worker_pid() {
        r.item("worker pid", pid);
    }

    let (res, ms) = timed_run(
        exec,
        Job::new(Program::Conda, vec!["info".into(), "--json".into()]),
        timeout,
        "conda info --json (check)",
        "conda",
        "`conda info --json` through the worker",
    )
    .await?;
    let document = res.stdout_document();
    let version = document
        .as_ref()
        .and_then(|j| j.get("conda_version"))
        .and_then(|v| v.as_str())
        .unwrap_or("?");
    r.item(
        "conda info",
        format!("exit 0 in {ms} ms, reports conda {version}"),
    );
    Ok(())
}

/// A worker config whose worker logs at [`CHECK_LOG_FILTER`] unless
/// `RUST_LOG` is set.
fn quiet(mut cfg: WorkerConfig) -> WorkerConfig {
    if std::env::var_os("RUST_LOG").is_none() {
        cfg.log_filter = Some(CHECK_LOG_FILTER.into());
    }
    cfg
}

fn list(r: &mut Builder, class: &str, what: &str, names: &[&str]) {
    if names.is_empty() {
        return;
    }
    r.item(class, format!("{} ({what}):", names.len()));
    for chunk in names.chunks(4) {
        r.item("", chunk.join(", "));
    }
}

/// One line on the policy flags a task needs, given the ones in force
/// (docs/safety.md): `--allow-write` (or `--approve-writes`, which asks the
/// person before each change) for changes, `--allow-exec` for programs.
pub fn policy_line(p: &crate::policy::Policy) -> String {
    const WRITE: &str = "--allow-write to let it install, update, remove, create \
         environments and configure (or --approve-writes to approve each change yourself)";
    const EXEC: &str = "--allow-exec to let it run programs (conda run, conda_execute)";
    let changes = if p.allow_write {
        Some("changes allowed (--allow-write)")
    } else if p.approve_writes {
        Some("changes allowed, each after the person approves it (--approve-writes)")
    } else {
        None
    };
    match (changes, p.allow_exec) {
        (None, false) => format!("read-only (dry runs show plans); add {WRITE}; add {EXEC}"),
        (Some(c), false) => format!("{c}; add {EXEC}"),
        (None, true) => format!("programs allowed (--allow-exec), changes refused; add {WRITE}"),
        (Some(_), true) if p.allow_write => {
            "changes and programs allowed (--allow-write --allow-exec)".to_owned()
        }
        (Some(_), true) => "changes and programs allowed, each after the person approves it \
             (--approve-writes --allow-exec)"
            .to_owned(),
    }
}

fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

fn profile_name(s: &Settings) -> &'static str {
    match s.profile {
        crate::schema::Profile::Portable => "portable",
        crate::schema::Profile::Full => "full",
    }
}

/// How a process ended, in words: `exited with status 1`, `timed out`, ...
/// Runs `job` through the worker under `timeout` and times it (ms).
///
/// Errors: "the worker could not run {program}: ..." when it did not run;
/// "{failure} {how it ended} ({exception class})" when it exited non-zero.
async fn timed_run(
    exec: &Executor,
    mut job: Job,
    timeout: Duration,
    label: &str,
    program: &'static str,
    failure: &'static str,
) -> Result<(conda_mcp_shared::ExecutionResult, u128), CheckError> {
    job.limits.timeout = timeout;
    job.label = label.into();
    let t = Instant::now();
    let res = exec
        .run(job, |_| {})
        .await
        .map_err(|source| CheckError::WorkerRun { program, source })?;
    let ms = t.elapsed().as_millis();
    if res.exit_code != Some(0) {
        return Err(CheckError::Exited {
            what: failure,
            ended: ended(&res),
            exception: exception_name(&res.stderr).map(str::to_owned),
        });
    }
    Ok((res, ms))
}

fn ended(res: &conda_mcp_shared::ExecutionResult) -> String {
    if res.timed_out {
        "timed out".into()
    } else if res.cancelled {
        "was cancelled".into()
    } else {
        match res.exit_code {
            Some(c) if c < 0 => format!("was killed by signal {}", -c),
            Some(c) => format!("exited with status {c}"),
            None => "ended without a status".into(),
        }
    }
}

/// The exception class of the last `SomethingError:`-style line of a
/// Python/conda stderr (`ModuleNotFoundError`), never the message after it
/// (which can quote paths, URLs or credentials).
pub fn exception_name(stderr: &str) -> Option<&str> {
    stderr.lines().rev().find_map(|l| {
        let (head, _) = l.trim().split_once(':')?;
        let name = head.rsplit('.').next()?;
        let ok = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && (name.ends_with("Error") || name.ends_with("Exception") || name.ends_with("Exit"));
        ok.then_some(name)
    })
}

/// The first line of a message, without the announcement of a stderr tail
/// that discovery errors carry after it (conda's stderr can hold
/// credentials; the server's log has it).
fn first_line(s: &str) -> String {
    let l = s.lines().next().unwrap_or("").trim();
    l.strip_suffix("; its last stderr lines:")
        .unwrap_or(l)
        .to_owned()
}

/// A message on one line: line breaks become `; `.
fn one_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exception_names_without_messages() {
        assert_eq!(
            exception_name(
                "Traceback...\n  File x\nModuleNotFoundError: No module named 'conda'\n"
            ),
            Some("ModuleNotFoundError")
        );
        assert_eq!(
            exception_name("conda.exceptions.PackagesNotFoundError: The following https://u:p@h\n"),
            Some("PackagesNotFoundError")
        );
        assert_eq!(exception_name("plain text: no class here\n"), None);
        assert_eq!(exception_name(""), None);
    }

    #[test]
    fn the_policy_line_names_the_flags_in_force() {
        use crate::policy::Policy;
        let line = |allow_write, approve_writes, allow_exec| {
            policy_line(&Policy {
                allow_write,
                approve_writes,
                allow_exec,
                ..Policy::default()
            })
        };
        assert!(line(false, false, false).starts_with("read-only"));
        let approve = line(false, true, false);
        assert!(
            approve.starts_with("changes allowed, each after the person approves it (--approve-writes); add --allow-exec"),
            "{approve}"
        );
        assert!(!approve.contains("add --allow-write"), "{approve}");
        assert!(line(false, true, true).contains("(--approve-writes --allow-exec)"));
        assert!(line(true, false, true).contains("(--allow-write --allow-exec)"));
    }

    #[test]
    fn one_line_joins() {
        assert_eq!(one_line("a\n\n  b \nc"), "a; b; c");
        assert_eq!(first_line("x failed\nstderr tail"), "x failed");
    }
}
