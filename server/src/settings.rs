//! The server's settings: one value, resolved once from the command line
//! by the composition root ([`crate::app`]), that every part below it takes
//! (startup, the MCP handler, the call pipeline, discovery, the worker
//! client, `conda-mcp check`). Nothing below the composition root reads
//! flags: a serving server and `conda-mcp check` given the same flags get
//! the same [`Settings`], and so cannot disagree.
//!
//! Each field names the flag it comes from (docs/reference.md "Flags"); units are
//! in the names or the types (`Limits`).
//!
//! To add an option: a flag in `cli/mod.rs` (its `--help` text, heading and
//! `CONDA_MCP_` variable; the configuration file's key follows from its
//! name), a field here (with its doc), one line in `app::resolve`, and the
//! part that uses it reads the field; a row in docs/reference.md "Flags"
//! (tests/tests/mcp/settings.rs fails until the row is there).
//!
//! Where each setting that is not its default came from (the command line,
//! an environment variable, the configuration file) is [`SettingOrigin`],
//! which `conda-mcp check` prints.

use std::path::PathBuf;

use conda_mcp_shared::LogFormat;
use conda_mcp_shared::limits::Limits;

use crate::discovery::DiscoveryOptions;
use crate::mcp::tasks::TaskSettings;
use crate::policy::Policy;
use crate::schema::Profile;
use crate::tools::filter::ToolFilter;
use crate::tools::{ToolMode, ToolOptions};
use crate::worker_client::WorkerConfig;

/// One setting that is not its default, and where it came from (for
/// `conda-mcp check`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SettingOrigin {
    /// The flag (`--allow-write`).
    pub flag: String,
    /// Its value as given, values of a repeated flag joined by `, `. Never
    /// a secret: no setting holds one (token files and keys are paths),
    /// and credentials in a URL are masked.
    pub value: String,
    /// Where it came from.
    pub origin: Origin,
}

/// Where a setting came from, in precedence order.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Origin {
    /// The command line.
    Flag,
    /// The environment variable named.
    Env {
        /// `CONDA_MCP_ALLOW_WRITE`.
        name: String,
    },
    /// The configuration file, at this line.
    File {
        /// The file.
        path: PathBuf,
        /// The key's line, 1-based.
        line: usize,
    },
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Flag => f.write_str("command line"),
            Origin::Env { name } => write!(f, "environment {name}"),
            Origin::File { path, line } => write!(f, "file {}:{line}", path.display()),
        }
    }
}

/// Everything the command line decides, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `--allow-write`, `--allow-exec`: what calls may do.
    pub policy: Policy,
    /// `--timeout`, `--output-limit-bytes`, `--stdin-limit-bytes`: the
    /// limits of every call (and `--timeout` of every discovery process).
    pub limits: Limits,
    /// `--schema-profile`: the generated tools' input-schema profile.
    pub profile: Profile,
    /// `--tools`, `--exclude-tools`: which tools are served (every entry
    /// must match a tool of the conda found: a startup check).
    pub filter: ToolFilter,
    /// `--tool-mode`: typed tools or the three compact tools.
    pub mode: ToolMode,
    /// Not `--no-confirm`: a typed mutation without `yes: true` runs as a
    /// dry run.
    pub confirm: bool,
    /// `--live-tools`: rebuild the tools when conda or its plugins change.
    pub live_tools: bool,
    /// `--tool-icons`: every tool carries the server's icon.
    pub tool_icons: bool,
    /// `--watch-interval`: between two looks for changed environments
    /// (`crate::mcp::watch`).
    pub watch_interval: std::time::Duration,
    /// `--result-mode`, `--max-result-bytes`, and not
    /// `--no-mask-credentials` (`results.mask_credentials`: credentials in
    /// conda's output are masked in results): how an execution becomes the
    /// tool output.
    pub results: crate::call::ResultSettings,
    /// `--log-format`: the log lines of the server and its spawned worker.
    pub log_format: LogFormat,
    /// Which conda to serve and how discovery finds it.
    pub discovery: DiscoverySettings,
    /// Which worker runs conda and how it is started.
    pub worker: WorkerSettings,
    /// `--listen` and its companions: serve MCP over HTTP instead of
    /// stdio; `None` = stdio.
    pub http: Option<crate::transport::http::HttpSettings>,
    /// `--task-retention`, `--max-finished-tasks`: how long and how many
    /// finished MCP tasks are kept.
    pub tasks: TaskSettings,
    /// `--audit-log`: where every attempted change is recorded
    /// (`crate::call::audit`); `None`: not recorded.
    pub audit_log: Option<PathBuf>,
    /// `--allow-base-writes`, `--protect-env`, `--allowed-channel`: what
    /// changes may not touch and solves may not use
    /// (`crate::call::plan::restrict`).
    pub restrictions: crate::call::plan::restrict::Restrictions,
    /// `--metrics-principals`: the principal's name as a metrics label.
    pub metrics_principals: bool,
}

/// The target conda and discovery (`--conda-exe`, `--python`,
/// `--no-cache`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiscoverySettings {
    /// `--conda-exe`; `None` = `CONDA_EXE`, else `conda` on `PATH`.
    pub conda_exe: Option<PathBuf>,
    /// `--python`: the target's interpreter; `None` = found from conda.
    pub python: Option<PathBuf>,
    /// Not `--no-cache`: read and write the startup cache.
    pub use_cache: bool,
}

/// The worker (`--worker-exe`, `--worker-socket`, `--worker-user`,
/// `--worker-home`, `--no-warm-conda`, `--pass-env`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerSettings {
    /// `--worker-exe`; `None` = looked up next to `conda-mcp`, then on
    /// `PATH` (`worker_client::config::locate_worker_exe`).
    pub exe: Option<PathBuf>,
    /// `--worker-socket`: connect to a listening worker instead of
    /// spawning one (its own command line then decides `exe`, `user`,
    /// `home`, `warm_conda`, `pass_env`).
    pub socket: Option<PathBuf>,
    /// `--worker-user`: the spawned worker (and conda) runs as this user.
    pub user: Option<String>,
    /// `--worker-home`: that user's HOME for conda.
    pub home: Option<PathBuf>,
    /// Not `--no-warm-conda`: conda jobs may fork from a warm conda.
    pub warm_conda: bool,
    /// `--pass-env`: variable-name patterns passed to conda besides the
    /// allowlist.
    pub pass_env: Vec<String>,
}

impl Default for WorkerSettings {
    fn default() -> Self {
        WorkerSettings {
            exe: None,
            socket: None,
            user: None,
            home: None,
            warm_conda: true,
            pass_env: Vec::new(),
        }
    }
}

impl Default for Settings {
    /// The settings of `conda-mcp` without flags.
    fn default() -> Self {
        Settings {
            policy: Policy::default(),
            limits: Limits::DEFAULT,
            profile: Profile::Portable,
            filter: ToolFilter::default(),
            mode: ToolMode::Typed,
            confirm: true,
            live_tools: false,
            tool_icons: false,
            watch_interval: crate::mcp::watch::DEFAULT_INTERVAL,
            results: crate::call::ResultSettings::default(),
            log_format: LogFormat::Text,
            discovery: DiscoverySettings {
                use_cache: true,
                ..DiscoverySettings::default()
            },
            worker: WorkerSettings::default(),
            http: None,
            tasks: TaskSettings::default(),
            audit_log: None,
            restrictions: crate::call::plan::restrict::Restrictions::default(),
            metrics_principals: false,
        }
    }
}

impl Settings {
    /// The worker configuration for target `conda_exe` (the interpreter is
    /// `--python`'s until discovery knows the real one).
    pub fn worker_config(&self, conda_exe: PathBuf) -> WorkerConfig {
        let mut cfg = WorkerConfig::new(conda_exe);
        if let Some(w) = &self.worker.exe {
            cfg.worker_exe = w.clone();
        }
        cfg.python = self.discovery.python.clone();
        cfg.socket = self.worker.socket.clone();
        cfg.user = self.worker.user.clone();
        cfg.warm_conda = self.worker.warm_conda;
        cfg.home = self.worker.home.clone();
        cfg.pass_env = self.worker.pass_env.clone();
        cfg.log_format = self.log_format;
        cfg
    }

    /// What discovery runs with: the target flags, the cache, `--timeout`
    /// per process, and the worker of [`Settings::worker_config`].
    pub fn discovery_options(&self) -> DiscoveryOptions {
        let mut opts = DiscoveryOptions::new();
        opts.conda_exe = self.discovery.conda_exe.clone();
        opts.python = self.discovery.python.clone();
        opts.no_cache = !self.discovery.use_cache;
        opts.timeout = self.limits.timeout;
        opts.worker = self.worker_config(PathBuf::new());
        opts
    }

    /// What the tool set is built with.
    pub fn tool_options(&self) -> ToolOptions {
        ToolOptions {
            profile: self.profile,
            policy: self.policy,
            filter: self.filter.clone(),
            mode: self.mode,
            confirm: self.confirm,
            icons: self.tool_icons,
        }
    }

    /// What typed calls are prepared with.
    pub fn typed(&self) -> crate::call::plan::typed::TypedSettings {
        crate::call::plan::typed::TypedSettings {
            confirm: self.confirm,
            limits: self.limits,
        }
    }
}
