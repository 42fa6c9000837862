//! The `conda-mcp` command line (clap): the flags as given, the low-level
//! arguments that the composition root ([`crate::app`]) resolves once into
//! [`crate::settings::Settings`]. Only `app` reads [`Cli`].
//!
//! Every value is checked before any MCP traffic: an invalid one prints a
//! clear message on stderr and exits with status 2 (clap's usage-error
//! status). `--help` and `--version` print on stdout and exit 0 — they are
//! the only things ever printed there that are not MCP frames, and they run
//! before the protocol starts.
//!
//! The doc comments of the clap fields are the `--help` text: plain
//! prose without markup (clap prints them as written), plus [`EXAMPLES`].

pub mod config_file;
pub mod http;

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use conda_mcp_shared::limits::Limits;

use crate::call::shape::document::ResultMode;
use crate::mcp::tasks::TaskSettings;
use crate::schema::Profile;
use crate::tools::ToolMode;

/// The examples section of `--help` (plain text).
pub const EXAMPLES: &str = "\
Examples:
  conda-mcp
      Serve the conda on PATH, read-only (a host starts this; MCP on stdin/stdout).
  conda-mcp --conda-exe /opt/conda/bin/conda --allow-write
      Serve that conda and allow installs, creates, removes and config changes.
  conda-mcp --allow-write --allow-exec
      Also allow conda run and list the raw conda_execute tool.
  conda-mcp --worker-socket /run/conda-mcp/worker.sock
      Use a worker started separately with conda-mcp-worker serve.
  conda-mcp check --conda-exe /opt/conda/bin/conda --allow-write
      Check that setup and print the host configuration to paste (exit status 0 or 1).

Every flag is also an environment variable (--allow-write: CONDA_MCP_ALLOW_WRITE) and a key
of the configuration file (allow-write = true); a flag wins over its variable, which wins over
the file. Logs go to stderr (RUST_LOG sets the level, default info).";

/// The footer of `-h` (plain text).
pub const SHORT_FOOTER: &str = "\
Flags for limits, the HTTP mode, OAuth and operations: --help. Every flag is also an environment
variable (CONDA_MCP_ALLOW_WRITE) and a key of the configuration file (allow-write = true).
Start here: conda-mcp check --host claude-desktop (or claude-code, vs-code, cursor, gemini-cli,
codex, copilot-cli) prints the configuration to paste.";

/// Most seconds `--timeout` accepts (one week): larger values would only
/// hide hung calls.
pub const MAX_TIMEOUT_SECONDS: f64 = 7.0 * 24.0 * 3600.0;

/// What `conda-mcp --version` prints after the program's name: the
/// workspace version and the commit the binary was built from
/// (`server/build.rs`: `git rev-parse --short HEAD`, `unknown` outside a
/// git checkout), e.g. `0.1.0 (commit 1a2b3c4)`.
pub const VERSION_LINE: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("CONDA_MCP_COMMIT"),
    ")"
);

/// The help headings of the flags, in the order `--help` shows them (the
/// groups a person needs first come first; `-h` shows only those and the
/// few other flags most setups use).
pub mod heading {
    /// What the model may do: writes, programs, which environments and channels.
    pub const POLICY: &str = "Policy";
    /// Which tools are served and how results are shaped.
    pub const TOOLS: &str = "Tools and results";
    /// Which conda is served and how the worker that runs it starts.
    pub const CONDA: &str = "conda and the worker";
    /// Time, output and task limits.
    pub const LIMITS: &str = "Limits";
    /// `--listen` and what only applies with it.
    pub const HTTP: &str = "HTTP";
    /// The OAuth resource server of the HTTP mode.
    pub const OAUTH: &str = "OAuth";
    /// The configuration file, logs and the audit trail.
    pub const OPERATIONS: &str = "Operations";
    /// Every heading, in `--help`'s order.
    pub const ALL: [&str; 7] = [POLICY, TOOLS, CONDA, LIMITS, HTTP, OAUTH, OPERATIONS];
}

/// The one declaration of every setting: each field is a flag (`--name`),
/// an environment variable (`CONDA_MCP_NAME`) and a key of the
/// configuration file (`name = ...`, [`config_file`]), with its help text
/// (the first paragraph is `-h`'s, the whole comment `--help`'s), its help
/// heading ([`heading`]) and its default. docs/reference.md's flag tables,
/// server.json's arguments and the bundle's user configuration are checked
/// against it (tests/tests/mcp/settings.rs).
#[derive(Debug, Clone, Parser)]
#[command(
    name = "conda-mcp",
    version = VERSION_LINE,
    about = "An MCP server (stdio, or Streamable HTTP with --listen) that exposes an installed \
             conda as typed tools, read-only unless told otherwise.",
    long_about = None,
    after_help = SHORT_FOOTER,
    after_long_help = EXAMPLES
)]
pub struct Cli {
    /// Allow changes: installs, creates, removes, config changes.
    ///
    /// Allow calls that modify environments, packages, configuration,
    /// caches or files (install, create, remove, config --set, ...). An
    /// explicit value (--allow-write=true or =false) is accepted for
    /// launchers that map a setting onto the flag.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true",
          default_value_t = false, action = clap::ArgAction::Set,
          env = "CONDA_MCP_ALLOW_WRITE", help_heading = heading::POLICY)]
    pub allow_write: bool,

    /// Allow changes, each only after the person approves conda's plan.
    ///
    /// The server shows conda's plan through the host (MCP elicitation) and
    /// applies exactly that plan, or nothing. A model's yes: true does not
    /// skip the question. Needs a host that supports elicitation; cannot
    /// be combined with --allow-write (both true is a usage error). Takes
    /// an explicit value like --allow-write.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true",
          default_value_t = false, action = clap::ArgAction::Set,
          env = "CONDA_MCP_APPROVE_WRITES", help_heading = heading::POLICY)]
    pub approve_writes: bool,

    /// Allow running programs (conda run) and list the raw conda_execute tool.
    ///
    /// Allow calls that run arbitrary programs (conda run, plugin
    /// passthrough) and list the raw conda_execute tool. Takes an explicit
    /// value like --allow-write.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true",
          default_value_t = false, action = clap::ArgAction::Set,
          env = "CONDA_MCP_ALLOW_EXEC", help_heading = heading::POLICY)]
    pub allow_exec: bool,

    /// Run typed changes without yes: true as given, not as dry runs.
    ///
    /// Pass mutations of commands that have conda's `yes` option through as
    /// given. By default such a call without `yes: true` runs as a dry run
    /// (conda shows its plan, nothing changes) and its result says so
    /// (`confirmation_required`).
    #[arg(long, env = "CONDA_MCP_NO_CONFIRM", help_heading = heading::POLICY,
          hide_short_help = true)]
    pub no_confirm: bool,

    /// Allow changes to conda's base (root) environment.
    ///
    /// Allow mutations of conda's base (root) environment, which are
    /// refused by default (protected_environment).
    #[arg(long, env = "CONDA_MCP_ALLOW_BASE_WRITES", help_heading = heading::POLICY)]
    pub allow_base_writes: bool,

    /// Refuse changes to this environment too (a name or a prefix; repeatable).
    ///
    /// Refuse mutations of this environment too (protected_environment): a
    /// name, or a prefix (a path). Repeatable.
    #[arg(long, value_name = "NAME|PREFIX", env = "CONDA_MCP_PROTECT_ENV",
          help_heading = heading::POLICY)]
    pub protect_env: Vec<String>,

    /// Allow only these channels (a name or a URL; repeatable).
    ///
    /// A solve (create, install, update, remove, env create, env update)
    /// whose channels, given in the call or from conda's configuration, go
    /// beyond them is refused (channel_not_allowed). A name (conda-forge)
    /// or a URL. Default: every channel.
    #[arg(long, value_name = "NAME|URL", env = "CONDA_MCP_ALLOWED_CHANNEL",
          help_heading = heading::POLICY)]
    pub allowed_channel: Vec<String>,

    /// Let file options read this directory too (repeatable).
    ///
    /// A file a call makes conda read (create --file, env create --file,
    /// compare's file, config --file, ...) must lie in the caller's home,
    /// a root its client declared, or one of these directories; /etc,
    /// /proc, /sys, /dev and other users' homes only when a directory
    /// given here lies inside them (read_path_not_allowed). Default: none.
    #[arg(long, value_name = "DIR", env = "CONDA_MCP_ALLOW_READ_PATH",
          help_heading = heading::POLICY)]
    pub allow_read_path: Vec<std::path::PathBuf>,

    /// Serve only these tools (comma-separated names or command paths).
    ///
    /// Comma-separated tool names (conda_env_create) or command paths
    /// ("env create"), * as a wildcard. An entry that matches nothing is an
    /// error (exit status 2).
    #[arg(long, value_name = "LIST", value_parser = crate::tools::filter::parse_flag,
          env = "CONDA_MCP_TOOLS", help_heading = heading::TOOLS)]
    pub tools: Option<crate::tools::filter::PatternList>,

    /// Never serve these tools (same entries as --tools).
    ///
    /// Applied after --tools.
    #[arg(long, value_name = "LIST", value_parser = crate::tools::filter::parse_flag,
          env = "CONDA_MCP_EXCLUDE_TOOLS", help_heading = heading::TOOLS)]
    pub exclude_tools: Option<crate::tools::filter::PatternList>,

    /// typed: one tool per conda command; compact: three tools over them.
    ///
    /// How commands are offered: `typed` (one tool per conda command) or
    /// `compact` (conda_commands, conda_describe and conda_call over the
    /// same catalog and policy).
    #[arg(long, value_name = "MODE", value_enum, default_value_t = ToolMode::Typed,
          env = "CONDA_MCP_TOOL_MODE", help_heading = heading::TOOLS)]
    pub tool_mode: ToolMode,

    /// How results are shaped: default, or lean for small tool-output limits.
    ///
    /// default (stdout and parsed_json both present, as the reference
    /// contract fixes it) or lean (one copy of the output, parsed_json from
    /// the last complete JSON document, and a result budget), for hosts
    /// with small tool-output limits.
    #[arg(long, value_name = "MODE", value_enum, default_value_t = ResultMode::Default,
          env = "CONDA_MCP_RESULT_MODE", help_heading = heading::TOOLS)]
    pub result_mode: ResultMode,

    /// Most bytes of a serialized structured result (at least 4096).
    ///
    /// Over it, parsed_json is cut structurally (it stays valid JSON and
    /// says what was kept), text keeps its head and tail, stderr its tail.
    /// At least 4096. Default: 40000 in lean mode, unbounded in default
    /// mode.
    #[arg(long, value_name = "BYTES", allow_negative_numbers = true,
          value_parser = clap::value_parser!(u64).range(4096..),
          env = "CONDA_MCP_MAX_RESULT_BYTES", help_heading = heading::TOOLS,
          hide_short_help = true)]
    pub max_result_bytes: Option<u64>,

    /// Input-schema profile of the generated tools: portable or full.
    ///
    /// portable (accepted by every major host) or full (adds exact JSON
    /// Schema 2020-12 constraints for exclusive and required option
    /// groups).
    #[arg(long, value_name = "PROFILE", value_enum, default_value_t = Profile::Portable,
          env = "CONDA_MCP_SCHEMA_PROFILE", help_heading = heading::TOOLS,
          hide_short_help = true)]
    pub schema_profile: Profile,

    /// Return conda's output with credentials as they are (not masked).
    ///
    /// By default every `scheme://user:password@` in stdout, stderr and
    /// parsed JSON becomes `scheme://user:***@` (and a conda `/t/<token>/`
    /// becomes `/t/<TOKEN>/`), and the result counts them in
    /// `credentials_masked`. Logs stay masked whatever this says.
    #[arg(long, env = "CONDA_MCP_NO_MASK_CREDENTIALS", help_heading = heading::TOOLS,
          hide_short_help = true)]
    pub no_mask_credentials: bool,

    /// Rebuild the tools when conda or its plugins change.
    ///
    /// After a call that installed, removed or upgraded them, and tell the
    /// client with notifications/tools/list_changed. Default: the tools are
    /// fixed for the life of the process and results say
    /// restart_required.
    #[arg(long, env = "CONDA_MCP_LIVE_TOOLS", help_heading = heading::TOOLS,
          hide_short_help = true)]
    pub live_tools: bool,

    /// Give every tool the server's icon in tools/list.
    ///
    /// The server's icon (an SVG as a data: URI, 378 bytes) is always in
    /// serverInfo; with this flag each tool carries it too, for hosts that
    /// show an icon per tool, at 442 bytes per tool in every
    /// tools/list.
    #[arg(long, env = "CONDA_MCP_TOOL_ICONS", help_heading = heading::TOOLS,
          hide_short_help = true)]
    pub tool_icons: bool,

    /// Seconds between two looks for changed conda environments.
    ///
    /// While a client listens for resource changes (it listed or
    /// subscribed to the environment resources, or opened
    /// subscriptions/listen), the server stats the files that change with
    /// an environment this often and sends
    /// notifications/resources/list_changed and .../updated.
    #[arg(long, value_name = "SECONDS", default_value = "2", allow_negative_numbers = true,
          value_parser = parse_seconds, env = "CONDA_MCP_WATCH_INTERVAL",
          help_heading = heading::TOOLS, hide_short_help = true)]
    pub watch_interval: Duration,

    /// The conda executable to serve (default: $CONDA_EXE, else conda on PATH).
    ///
    /// Give the full path: hosts often start servers with a minimal PATH.
    #[arg(long, value_name = "PATH", env = "CONDA_MCP_CONDA_EXE",
          help_heading = heading::CONDA)]
    pub conda_exe: Option<PathBuf>,

    /// The Python interpreter of that conda installation.
    ///
    /// Only needed when it cannot be found from the conda executable
    /// itself.
    #[arg(long, value_name = "PATH", env = "CONDA_MCP_PYTHON", help_heading = heading::CONDA,
          hide_short_help = true)]
    pub python: Option<PathBuf>,

    /// Do not read or write the discovery cache; always rerun discovery.
    #[arg(long, env = "CONDA_MCP_NO_CACHE", help_heading = heading::CONDA,
          hide_short_help = true)]
    pub no_cache: bool,

    /// The conda-mcp-worker binary (default: next to this executable, else on PATH).
    #[arg(long, value_name = "PATH", env = "CONDA_MCP_WORKER_EXE",
          help_heading = heading::CONDA, hide_short_help = true)]
    pub worker_exe: Option<PathBuf>,

    /// Connect to a worker already listening on this socket.
    ///
    /// A worker started with conda-mcp-worker serve, for hardened
    /// deployments where the worker runs under its own user, instead of
    /// spawning one. A worker that is not there or refuses this server is a
    /// startup error. --worker-exe, --python and --worker-user belong to
    /// that worker's own command line then and are not used.
    #[arg(long, value_name = "PATH", env = "CONDA_MCP_WORKER_SOCKET",
          help_heading = heading::CONDA, hide_short_help = true)]
    pub worker_socket: Option<PathBuf>,

    /// Run the spawned worker, and so conda, as this user (the server runs as root).
    ///
    /// The user and its primary group (supplementary groups cleared; HOME,
    /// USER, LOGNAME set for conda). Needs the server to run as root.
    #[arg(long, value_name = "NAME", env = "CONDA_MCP_WORKER_USER",
          help_heading = heading::CONDA, hide_short_help = true)]
    pub worker_user: Option<String>,

    /// With --worker-user: that user's HOME for conda.
    ///
    /// The spawned worker's user gets this directory as HOME (created with
    /// mode 0700 for that user when missing) instead of its own home, which
    /// must otherwise exist and be writable. With `--worker-user` only.
    #[arg(long, value_name = "DIR", requires = "worker_user", env = "CONDA_MCP_WORKER_HOME",
          help_heading = heading::CONDA, hide_short_help = true)]
    pub worker_home: Option<PathBuf>,

    /// Run every conda call as a fresh process, without the warm conda.
    ///
    /// Instead of forking it from the spawned worker's warm conda (a
    /// pre-imported interpreter; docs/operating.md "Warm conda"). A
    /// listening worker (`--worker-socket`) takes the same flag on its own
    /// command line.
    #[arg(long, env = "CONDA_MCP_NO_WARM_CONDA", help_heading = heading::CONDA,
          hide_short_help = true)]
    pub no_warm_conda: bool,

    /// Also pass this environment variable to conda (repeatable; * as a wildcard).
    ///
    /// `*` matches any run of characters, e.g. `ANACONDA_*`. conda otherwise
    /// gets only an allowlist of the environment (PATH without an activated
    /// environment, HOME, USER, locale, TZ, TMPDIR, XDG_*, proxies and
    /// certificates, CONDA_*, CONDARC, MAMBA_*, PIP_*). Applies to the
    /// spawned worker; a listening worker has its own `--pass-env`.
    #[arg(long = "pass-env", value_name = "NAME", value_parser = parse_pass_env,
          env = "CONDA_MCP_PASS_ENV", help_heading = heading::CONDA, hide_short_help = true)]
    pub pass_env: Vec<String>,

    /// Time limit per call and for discovery, in seconds.
    ///
    /// Greater than 0, at most 604800 (one week); fractions allowed. A
    /// conda_execute or conda_run call may ask for less, never more.
    #[arg(long, value_name = "SECONDS", default_value = "900", allow_negative_numbers = true,
          value_parser = parse_timeout, env = "CONDA_MCP_TIMEOUT",
          help_heading = heading::LIMITS)]
    pub timeout: Duration,

    /// Bytes of stdout and of stderr kept per call, at least 1.
    ///
    /// The rest is read and discarded; cut at a UTF-8 boundary.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::DEFAULT.output_limit_bytes,
          allow_negative_numbers = true,
          value_parser = clap::value_parser!(u64).range(1..),
          env = "CONDA_MCP_OUTPUT_LIMIT_BYTES", help_heading = heading::LIMITS,
          hide_short_help = true)]
    pub output_limit_bytes: u64,

    /// Most bytes of stdin a conda_execute or conda_run call may supply (0 or more).
    #[arg(long, value_name = "BYTES", default_value_t = Limits::DEFAULT.stdin_limit_bytes,
          allow_negative_numbers = true, env = "CONDA_MCP_STDIN_LIMIT_BYTES",
          help_heading = heading::LIMITS, hide_short_help = true)]
    pub stdin_limit_bytes: u64,

    /// Seconds a finished MCP task is kept for tasks/get.
    ///
    /// A long call answered with a task handle, for clients that declare
    /// the tasks extension; then it is dropped and its id is unknown.
    #[arg(long, value_name = "SECONDS", default_value = "600", allow_negative_numbers = true,
          value_parser = parse_seconds, env = "CONDA_MCP_TASK_RETENTION",
          help_heading = heading::LIMITS, hide_short_help = true)]
    pub task_retention: Duration,

    /// Most finished MCP tasks kept; past it the oldest finished are dropped first.
    #[arg(long, value_name = "COUNT", default_value_t = TaskSettings::DEFAULT_MAX_FINISHED,
          allow_negative_numbers = true,
          value_parser = parse_count, env = "CONDA_MCP_MAX_FINISHED_TASKS",
          help_heading = heading::LIMITS, hide_short_help = true)]
    pub max_finished_tasks: usize,

    /// `--listen` and the flags of the HTTP mode and its OAuth.
    #[command(flatten)]
    pub http: http::HttpFlags,

    /// Read settings from this TOML file (keys are the long flag names).
    ///
    /// Default: config.toml in the platform's configuration folder
    /// ($XDG_CONFIG_HOME/conda-mcp or ~/.config/conda-mcp; ~/Library/Application
    /// Support/conda-mcp on macOS; %APPDATA%\conda-mcp on Windows), read when
    /// present. A flag on the command line wins over its environment
    /// variable, which wins over the file.
    #[arg(long, value_name = "FILE", env = "CONDA_MCP_CONFIG",
          help_heading = heading::OPERATIONS)]
    pub config: Option<PathBuf>,

    /// Append one JSON line per attempted change to this file.
    ///
    /// Every call classified as a mutation or as exec, applied, failed,
    /// declined or refused, synced before the answer is sent: who, what,
    /// the plan, the outcome and the conda revision to undo it. Reopened on
    /// SIGHUP (log rotation). Never holds a token or header.
    #[arg(long, value_name = "FILE", env = "CONDA_MCP_AUDIT_LOG",
          help_heading = heading::OPERATIONS, hide_short_help = true)]
    pub audit_log: Option<PathBuf>,

    /// Format of the log lines on stderr (server and worker).
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormatArg::Text,
          env = "CONDA_MCP_LOG_FORMAT", help_heading = heading::OPERATIONS,
          hide_short_help = true)]
    pub log_format: LogFormatArg,
}

/// `--log-format`: how log lines on stderr are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormatArg {
    /// One human-readable line per event.
    Text,
    /// One JSON object per line.
    Json,
}

/// Why a flag's value was refused (clap prints it after the flag's name;
/// the value itself is clap's to quote, never this message's).
#[derive(Debug, thiserror::Error)]
pub enum FlagValueError {
    /// Not a number of seconds.
    #[error("expected a number of seconds, e.g. 900 or 2.5")]
    NotSeconds,
    /// Seconds out of `--timeout`'s range.
    #[error("must be a finite number of seconds greater than 0")]
    NotPositive,
    /// More than a week.
    #[error("must be at most {MAX_TIMEOUT_SECONDS} seconds (one week)")]
    OverAWeek,
    /// Seconds out of the HTTP mode's range (0 allowed).
    #[error("must be a number of seconds from 0 to one week")]
    SecondsOutOfRange,
    /// Not a whole number ≥ 1.
    #[error("expected a whole number of at least 1")]
    NotACount,
    /// Not a variable name pattern (`--pass-env`).
    #[error(transparent)]
    Pattern(#[from] conda_mcp_shared::env::PatternError),
    /// An `http(s)://` value that is no URL (`--oauth-jwks`).
    #[error("not a valid URL")]
    NotAUrl,
    /// An empty `--oauth-jwks`.
    #[error("expected a URL or a file")]
    Empty,
}

/// `--pass-env`: a variable name, `*` as a wildcard.
fn parse_pass_env(s: &str) -> Result<String, FlagValueError> {
    conda_mcp_shared::env::check_pattern(s).map_err(FlagValueError::Pattern)?;
    Ok(s.to_owned())
}

/// `--max-finished-tasks`: a whole number ≥ 1.
fn parse_count(s: &str) -> Result<usize, FlagValueError> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(FlagValueError::NotACount),
    }
}

/// `--task-retention`, `--watch-interval`: the same seconds as `--timeout`.
fn parse_seconds(s: &str) -> Result<Duration, FlagValueError> {
    parse_timeout(s)
}

/// `--timeout`: seconds as a finite number > 0, at most
/// [`MAX_TIMEOUT_SECONDS`].
fn parse_timeout(s: &str) -> Result<Duration, FlagValueError> {
    let secs: f64 = s.trim().parse().map_err(|_| FlagValueError::NotSeconds)?;
    if !secs.is_finite() || secs <= 0.0 {
        return Err(FlagValueError::NotPositive);
    }
    if secs > MAX_TIMEOUT_SECONDS {
        return Err(FlagValueError::OverAWeek);
    }
    Ok(Duration::from_secs_f64(secs))
}

/// What the command line asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Serve MCP on stdio (no command).
    Serve,
    /// `conda-mcp check [FLAGS]`: print the setup report and exit.
    Check,
    /// `conda-mcp setup HOST [FLAGS]`: write the server, with these
    /// flags, into a host's configuration file ([`crate::setup`]).
    Setup,
}

/// The command that writes a host's file: `setup` as the first argument,
/// then a host, `setup`'s own flags and the server's.
pub const SETUP_COMMAND: &str = crate::setup::SETUP_COMMAND;

/// The one command: `check` as the first argument, followed by exactly the
/// server's flags.
pub const CHECK_COMMAND: &str = "check";

/// `about` of `conda-mcp check`.
const CHECK_ABOUT: &str = "Check the setup and print the configuration to paste into an MCP host: \
the verdict, the settings that are not their defaults and where they came from, one \
configuration per host, then what was checked (which conda, its interpreter and plugins, the \
worker and a real conda info through it, the tools by policy class). Exit status 0 when \
everything works, 1 otherwise.";

/// The footer of `conda-mcp check --help`.
const CHECK_FOOTER: &str = "\
check also takes every flag of the server (conda-mcp --help), its environment variables and its
configuration file, and checks the server they describe.

Examples:
  conda-mcp check --host claude-desktop
      Check, and print only Claude Desktop's configuration (ready to paste).
  conda-mcp check --conda-exe /opt/conda/bin/conda --approve-writes
      Check that setup: the verdict, then every host's configuration, then the details.
  conda-mcp check --format json
      The whole report as one JSON document.";

/// `conda-mcp check --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum CheckFormat {
    /// Lines for a person.
    #[default]
    Text,
    /// One JSON document.
    Json,
}

/// The flags of `conda-mcp check` beyond the server's.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CheckArgs {
    /// `--host NAME`: print only that host's configuration.
    pub host: Option<crate::check::host_config::Host>,
    /// `--format`.
    pub format: CheckFormat,
    /// `--verbose`: the cache key and the conda configuration files too.
    pub verbose: bool,
}

/// A command line parsed: the mode, the flags resolved with the
/// environment and the configuration file, and where each setting that
/// is not its default came from.
#[derive(Debug, Clone)]
pub struct CommandLine {
    /// Serve or check.
    pub mode: Mode,
    /// The flags, the environment's and the file's included.
    pub cli: Cli,
    /// `check`'s own flags (defaults when serving).
    pub check: CheckArgs,
    /// `setup`'s host and own flags (`Some` exactly in [`Mode::Setup`]).
    pub setup: Option<crate::setup::SetupCli>,
    /// Each setting that is not its default, in `--help`'s order.
    pub origins: Vec<crate::settings::SettingOrigin>,
    /// The flags a host should start the server with to get these
    /// settings: the command line's (without `check` or `setup` and their
    /// own flags and host)
    /// and the environment's as flags; the configuration file's are not
    /// repeated (an explicit `--config` is, and the default file is read
    /// by every start).
    pub repeat: Vec<std::ffi::OsString>,
}

/// Why a command line was refused.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// clap's usage error, or `--help`/`--version` (which print and exit
    /// 0).
    #[error(transparent)]
    Usage(#[from] clap::Error),
    /// A bad configuration file.
    #[error(transparent)]
    ConfigFile(#[from] config_file::ConfigFileError),
}

impl ParseError {
    /// The exit status: clap's (2 for a usage error, 0 for `--help`); 2
    /// for a configuration file that is not valid (like a bad flag), 1 for
    /// one that cannot be read (ARCHITECTURE.md "Entry points").
    pub fn exit_code(&self) -> u8 {
        match self {
            ParseError::Usage(e) => e.exit_code().clamp(0, 255) as u8,
            ParseError::ConfigFile(config_file::ConfigFileError::Unreadable { .. }) => 1,
            ParseError::ConfigFile(_) => 2,
        }
    }

    /// Prints the error: clap's own way (help on stdout), else on stderr.
    pub fn print(&self) {
        match self {
            ParseError::Usage(e) => {
                let _ = e.print();
            }
            ParseError::ConfigFile(e) => eprintln!("error: {e}"),
        }
    }
}

/// The clap command of `mode`: the server's flags, with `check` and
/// `token` listed when serving; for `check`, its own flags and help, the
/// server's flags accepted but not repeated in its help.
pub fn command(mode: Mode) -> clap::Command {
    use clap::{Arg, ArgAction, CommandFactory};
    // The variables follow one rule, said once in the footer, instead of
    // a line per flag; a switch's `true, false` goes without saying.
    let cli = Cli::command().mut_args(|a| {
        let switch = a
            .get_value_names()
            .is_some_and(|n| n.iter().any(|n| n == "BOOL"));
        a.hide_env(true).hide_possible_values(switch)
    });
    match mode {
        Mode::Serve => cli
            .subcommand(clap::Command::new(CHECK_COMMAND).about(
                "Check the setup and print the configuration to paste into a host (conda-mcp check --help)",
            ))
            .subcommand(
                clap::Command::new(crate::transport::http::token_command::TOKEN_COMMAND)
                    .about("Make a bearer token for the HTTP mode (conda-mcp token --help)"),
            )
            .subcommand(
                clap::Command::new(SETUP_COMMAND)
                    .about(
                        "Write the server into a host's configuration file (conda-mcp setup --help)",
                    )
                    // Taken only to say that setup comes first.
                    .arg(
                        Arg::new("after")
                            .num_args(0..)
                            .trailing_var_arg(true)
                            .allow_hyphen_values(true)
                            .hide(true),
                    ),
            ),
        Mode::Setup => {
            use clap::Args as _;
            // `about` after the arguments (their derive sets one).
            crate::setup::SetupCli::augment_args(hidden_server_flags(cli))
                .name("conda-mcp setup")
                .bin_name("conda-mcp setup")
                .about(crate::setup::SETUP_ABOUT)
                .long_about(None)
                .after_help(crate::setup::SETUP_EXAMPLES)
                .after_long_help(crate::setup::SETUP_EXAMPLES)
        }
        Mode::Check => hidden_server_flags(
            cli.name("conda-mcp check")
                .bin_name("conda-mcp check")
                .about(CHECK_ABOUT)
                .after_help(CHECK_FOOTER)
                .after_long_help(CHECK_FOOTER),
        )
        .arg(
                Arg::new("host")
                    .long("host")
                    .value_name("NAME")
                    .value_parser(clap::value_parser!(crate::check::host_config::Host))
                    .help("Print only this host's configuration, ready to paste (with --listen, its HTTP form)"),
            )
            .arg(
                Arg::new("format")
                    .long("format")
                    .value_name("FORMAT")
                    .value_parser(clap::value_parser!(CheckFormat))
                    .default_value("text")
                    .help("text, or json: the whole report as one JSON document"),
            )
            .arg(
                Arg::new("verbose")
                    .long("verbose")
                    .action(ArgAction::SetTrue)
                    .help("Also print the discovery cache's key and conda's configuration files"),
            ),
    }
}

/// `cmd` with the server's flags accepted but hidden from its help (that
/// of `check` and `setup`, which list only their own).
fn hidden_server_flags(cmd: clap::Command) -> clap::Command {
    use clap::ArgAction;
    cmd.mut_args(|a| {
        if matches!(
            a.get_action(),
            ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version
        ) {
            a
        } else {
            a.hide(true)
        }
    })
}

/// The names of `check`'s own flags, which a host's configuration does
/// not repeat.
const CHECK_FLAGS: [(&str, bool); 3] = [("--host", true), ("--format", true), ("--verbose", false)];

/// Parses a command line (program name first): `conda-mcp [FLAGS]` or
/// `conda-mcp check [FLAGS]`, both with [`Cli`]'s flags (the server has no
/// positional arguments, so a leading `check` is unambiguous), each flag
/// also read from its environment variable and from the configuration
/// file ([`config_file`]): command line, then environment, then file,
/// then default.
///
/// Errors: [`ParseError`]: clap's (usage errors exit with status 2;
/// `--help` and `--version` are "errors" that print and exit 0), or a bad
/// configuration file.
pub fn parse_from<I, T>(args: I) -> Result<CommandLine, ParseError>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString>,
{
    use clap::FromArgMatches;
    use clap::parser::ValueSource;
    let mut args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    // `check` after flags (`conda-mcp --allow-write check`) is the same
    // command: it is moved first, unless it is the value of the flag before
    // it (`--conda-exe check`).
    // `setup` comes first (its host follows it).
    let setup_first = args.get(1).is_some_and(|a| a == SETUP_COMMAND);
    if !setup_first && let Some(i) = check_position(&args) {
        let check = args.remove(i);
        args.insert(1, check);
    }
    let mode = if setup_first {
        args.remove(1);
        Mode::Setup
    } else if args.get(1).is_some_and(|a| a == CHECK_COMMAND) {
        args.remove(1);
        Mode::Check
    } else {
        Mode::Serve
    };
    let cmd = command(mode);
    // First the command line and the environment alone, without the
    // flags' companions (the file may hold the other half of a pair), to
    // learn which settings they leave to the file.
    let first = config_file::lenient(cmd.clone()).try_get_matches_from(&args)?;
    // `conda-mcp --flags check` (flags first, as a subcommand) is a check
    // as well.
    let mode = match first.subcommand_name() {
        Some(CHECK_COMMAND) => Mode::Check,
        Some(SETUP_COMMAND) => {
            return Err(ParseError::Usage(cmd.clone().error(
                clap::error::ErrorKind::UnknownArgument,
                "setup comes first, its host next: conda-mcp setup HOST [FLAGS]",
            )));
        }
        _ => mode,
    };
    // The file holds the server's settings only (not `setup`'s own flags).
    let file_keys = match mode {
        Mode::Setup => command(Mode::Serve),
        _ => cmd.clone(),
    };
    let file = match first.get_one::<PathBuf>("config") {
        Some(path) => Some(config_file::ConfigFile::read(path, &file_keys)?),
        None => match config_file::default_path() {
            Some(path) if path.is_file() => Some(config_file::ConfigFile::read(&path, &file_keys)?),
            _ => None,
        },
    };
    let mut full = args.clone();
    let mut from_file = std::collections::HashMap::new();
    for entry in file.iter().flat_map(|f| &f.entries) {
        let unset = matches!(
            first.value_source(&entry.id),
            None | Some(ValueSource::DefaultValue)
        );
        if unset {
            full.extend(entry.args.iter().cloned());
            from_file.insert(entry.id.clone(), entry.line);
        }
    }
    let matches = cmd.try_get_matches_from(&full)?;
    let cli = Cli::from_arg_matches(&matches)?;
    cli.exclusive()?;
    let check = match mode {
        Mode::Check => CheckArgs {
            host: matches.get_one("host").copied(),
            format: matches.get_one("format").copied().unwrap_or_default(),
            verbose: matches.get_flag("verbose"),
        },
        Mode::Serve | Mode::Setup => CheckArgs::default(),
    };
    let setup = match mode {
        Mode::Setup => Some(crate::setup::SetupCli::from_arg_matches(&matches)?),
        _ => None,
    };
    let mut origins = Vec::new();
    let mut repeat = match &setup {
        Some(_) => without_setup_args(&args[1..], matches.get_raw("host")),
        None => without_check_flags(&args[1..]),
    };
    for arg in <Cli as clap::CommandFactory>::command().get_arguments() {
        let (id, Some(long)) = (arg.get_id().as_str(), arg.get_long()) else {
            continue;
        };
        let origin = match matches.value_source(id) {
            Some(ValueSource::CommandLine) => match (from_file.get(id), &file) {
                (Some(&line), Some(f)) => crate::settings::Origin::File {
                    path: f.path.clone(),
                    line,
                },
                _ => crate::settings::Origin::Flag,
            },
            Some(ValueSource::EnvVariable) => crate::settings::Origin::Env {
                name: arg
                    .get_env()
                    .map(|e| e.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            },
            _ => continue,
        };
        let values: Vec<String> = matches
            .get_raw(id)
            .into_iter()
            .flatten()
            .map(|v| conda_mcp_shared::mask::mask(&v.to_string_lossy()).into_owned())
            .collect();
        if matches!(origin, crate::settings::Origin::Env { .. }) {
            for v in matches.get_raw(id).into_iter().flatten() {
                let mut flag = std::ffi::OsString::from(format!("--{long}="));
                flag.push(v);
                repeat.push(flag);
            }
        }
        origins.push(crate::settings::SettingOrigin {
            flag: format!("--{long}"),
            value: values.join(", "),
            origin,
        });
    }
    Ok(CommandLine {
        mode,
        cli,
        check,
        setup,
        origins,
        repeat,
    })
}

/// `args` (the arguments after the program and `setup`) without `setup`'s
/// own flags and their values and without its host (`host`, the raw
/// value clap took: the first argument that is no flag and no flag's
/// value).
fn without_setup_args(
    args: &[std::ffi::OsString],
    host: Option<clap::parser::RawValues<'_>>,
) -> Vec<std::ffi::OsString> {
    let host: Option<std::ffi::OsString> = host.and_then(|mut h| h.next()).map(Into::into);
    let mut all = vec![std::ffi::OsString::from(SETUP_COMMAND)];
    all.extend(args.iter().cloned());
    let at = host.and_then(|h| word_position(&all, &h));
    let rest: Vec<std::ffi::OsString> = all
        .into_iter()
        .enumerate()
        .filter(|&(i, _)| i > 0 && Some(i) != at)
        .map(|(_, a)| a)
        .collect();
    without_flags(&rest, &crate::setup::SETUP_FLAGS)
}

/// `args` (the flags after the program and `check`) without `check`'s own
/// flags and their values.
fn without_check_flags(args: &[std::ffi::OsString]) -> Vec<std::ffi::OsString> {
    without_flags(args, &CHECK_FLAGS)
}

/// `args` without the flags `own` (name, whether it takes a value) and
/// their values, in both spellings (`--flag V`, `--flag=V`).
fn without_flags(args: &[std::ffi::OsString], own: &[(&str, bool)]) -> Vec<std::ffi::OsString> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let text = a.to_string_lossy();
        if let Some(&(_, takes_value)) = own.iter().find(|(f, _)| text == *f) {
            if takes_value {
                it.next();
            }
            continue;
        }
        if own
            .iter()
            .any(|(f, takes_value)| *takes_value && text.starts_with(&format!("{f}=")))
        {
            continue;
        }
        out.push(a.clone());
    }
    out
}

impl Cli {
    /// `--approve-writes` and `--allow-write` both true: a usage error
    /// (exit status 2). Compared by value, not by presence, so a launcher
    /// may pass both with explicit values (`--allow-write=false
    /// --approve-writes=true`, as the bundle's manifest does).
    ///
    /// Errors: clap's argument conflict naming both flags.
    fn exclusive(&self) -> Result<(), clap::Error> {
        use clap::CommandFactory;
        if self.approve_writes && self.allow_write {
            return Err(Cli::command().error(
                clap::error::ErrorKind::ArgumentConflict,
                "--approve-writes cannot be used with --allow-write: choose one way to allow \
                 changes",
            ));
        }
        Ok(())
    }
}

/// Where `check` stands in `args` (program name first) as the command,
/// not as a flag's value: see [`word_position`].
fn check_position(args: &[std::ffi::OsString]) -> Option<usize> {
    word_position(args, std::ffi::OsStr::new(CHECK_COMMAND))
}

/// Where `word` stands in `args` (program name first) as a word of its
/// own, not as a flag's value: the first `word` whose previous item is not
/// a long or short flag (without `=`) of the server that requires a value.
fn word_position(args: &[std::ffi::OsString], word: &std::ffi::OsStr) -> Option<usize> {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let requires_value = |flag: &str| {
        cmd.get_arguments().any(|a| {
            let named = flag.strip_prefix("--").map_or_else(
                || {
                    flag.strip_prefix('-')
                        .and_then(|s| s.chars().next())
                        .is_some_and(|c| a.get_short() == Some(c) && flag.len() == 2)
                },
                |long| a.get_long() == Some(long),
            );
            named
                && a.get_action().takes_values()
                && a.get_num_args().is_none_or(|n| n.min_values() > 0)
        })
    };
    (1..args.len()).find(|&i| {
        args[i] == word
            && (i == 1 || {
                let prev = args[i - 1].to_string_lossy();
                !(prev.starts_with('-') && !prev.contains('=') && requires_value(&prev))
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_states_each_limits_range() {
        use clap::CommandFactory;
        let help = Cli::command().render_long_help().to_string();
        for needle in [
            "at most 604800 (one week)",
            "At least 4096",
            "at least 1",
            "(0 or more)",
        ] {
            assert!(help.contains(needle), "{needle} in:\n{help}");
        }
    }

    #[test]
    fn check_may_follow_the_flags() {
        for args in [
            &["--allow-write", "check"][..],
            &["--allow-write", "check", "--timeout", "5"],
            &["--timeout", "5", "check", "--allow-exec"],
            &["check", "--allow-write"],
        ] {
            let (mode, cli) = parse_mode(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            assert_eq!(mode, Mode::Check, "{args:?}");
            assert!(cli.allow_write || cli.allow_exec, "{args:?}");
        }
        // The value of a flag that takes one is not the command.
        let (mode, cli) = parse_mode(&["--conda-exe", "check"]).expect("parses");
        assert_eq!(mode, Mode::Serve);
        assert_eq!(
            cli.conda_exe.as_deref(),
            Some(std::path::Path::new("check"))
        );
    }

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("conda-mcp").chain(args.iter().copied()))
    }

    fn parse_mode(args: &[&str]) -> Result<(Mode, Cli), ParseError> {
        parse_from(std::iter::once("conda-mcp").chain(args.iter().copied()))
            .map(|i| (i.mode, i.cli))
    }

    #[test]
    fn every_flag_has_a_variable_a_heading_and_a_short_help() {
        use clap::CommandFactory;
        let cmd = Cli::command();
        let mut n = 0;
        for a in cmd.get_arguments() {
            let Some(long) = a.get_long() else { continue };
            if matches!(
                a.get_action(),
                clap::ArgAction::Help | clap::ArgAction::Version
            ) {
                continue;
            }
            n += 1;
            let want = format!("CONDA_MCP_{}", long.to_ascii_uppercase().replace('-', "_"));
            assert_eq!(
                a.get_env().and_then(|e| e.to_str()),
                Some(want.as_str()),
                "--{long}"
            );
            let heading = a.get_help_heading().unwrap_or_default();
            assert!(heading::ALL.contains(&heading), "--{long}: {heading:?}");
            let help = a.get_help().map(ToString::to_string).unwrap_or_default();
            assert!(!help.is_empty() && help.len() <= 90, "--{long}: {help:?}");
        }
        assert!(n > 45, "{n}");
    }

    #[test]
    fn check_help_says_it_takes_the_server_flags_without_listing_them() {
        let help = command(Mode::Check).render_long_help().to_string();
        assert!(
            help.contains("check also takes every flag of the server"),
            "{help}"
        );
        assert!(
            help.contains("--host") && help.contains("--format"),
            "{help}"
        );
        assert!(
            !help.contains("--allow-write") && !help.contains("--oauth-issuer"),
            "{help}"
        );
    }

    #[test]
    fn short_help_shows_the_groups_a_person_needs_first() {
        let short = command(Mode::Serve).render_help().to_string();
        for shown in [
            "Policy:",
            "--allow-write",
            "--approve-writes",
            "--conda-exe",
            "--config",
        ] {
            assert!(short.contains(shown), "{shown} in\n{short}");
        }
        for hidden in [
            "--oauth-jwks",
            "--worker-idle-timeout",
            "--python ",
            "OAuth:",
        ] {
            assert!(!short.contains(hidden), "{hidden} in\n{short}");
        }
        let long = command(Mode::Serve).render_long_help().to_string();
        let order: Vec<usize> = heading::ALL
            .iter()
            .map(|h| {
                long.find(&format!("\n{h}:\n"))
                    .unwrap_or_else(|| panic!("{h} in\n{long}"))
            })
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    }

    #[test]
    fn policy_flags_take_an_optional_value() {
        for (args, write, exec) in [
            (&[][..], false, false),
            (&["--allow-write"], true, false),
            (&["--allow-write=true", "--allow-exec=false"], true, false),
            (
                &["--allow-write", "false", "--allow-exec", "--timeout", "5"],
                false,
                true,
            ),
            (&["--allow-exec=true"], false, true),
        ] {
            let cli = parse(args).expect("parses");
            assert_eq!((cli.allow_write, cli.allow_exec), (write, exec), "{args:?}");
        }
        for args in [&["--allow-write=yes"][..], &["--allow-exec="]] {
            assert_eq!(parse(args).expect_err("invalid").exit_code(), 2, "{args:?}");
        }
    }

    #[test]
    fn approve_writes_excludes_allow_write() {
        let (_, cli) = parse_mode(&["--approve-writes", "--allow-exec"]).expect("parses");
        assert!(cli.approve_writes && !cli.allow_write && cli.allow_exec);
        // Exclusive by value: explicit false values combine.
        for (args, approve, write) in [
            (
                &["--allow-write=false", "--approve-writes=true"][..],
                true,
                false,
            ),
            (
                &["--allow-write=true", "--approve-writes=false"],
                false,
                true,
            ),
            (
                &["--allow-write=false", "--approve-writes=false"],
                false,
                false,
            ),
        ] {
            let (_, cli) = parse_mode(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            assert_eq!((cli.approve_writes, cli.allow_write), (approve, write));
        }
        for args in [
            &["--approve-writes", "--allow-write"][..],
            &["--allow-write=true", "--approve-writes"],
            &["check", "--allow-write", "--approve-writes=true"],
        ] {
            let e = parse_mode(args).expect_err("exclusive");
            assert_eq!(e.exit_code(), 2, "{args:?}");
            let text = e.to_string();
            assert!(
                text.contains("--approve-writes") && text.contains("--allow-write"),
                "{text}"
            );
        }
    }

    #[test]
    fn check_takes_the_server_flags() {
        let (mode, cli) =
            parse_mode(&["check", "--allow-write", "--timeout", "5"]).expect("parses");
        assert_eq!(mode, Mode::Check);
        assert!(cli.allow_write);
        assert_eq!(cli.timeout, Duration::from_secs(5));
        let (mode, cli) = parse_mode(&["--allow-exec"]).expect("parses");
        assert_eq!(mode, Mode::Serve);
        assert!(cli.allow_exec);
        // Flags before `check` work too; invalid values stay usage errors
        // in both modes.
        let (mode, cli) = parse_mode(&["--no-cache", "check"]).expect("parses");
        assert!(mode == Mode::Check && cli.no_cache);
        for args in [&["check", "--timeout", "0"][..], &["check", "--nope"]] {
            assert_eq!(
                parse_mode(args).expect_err("invalid").exit_code(),
                2,
                "{args:?}"
            );
        }
    }

    #[test]
    fn defaults() {
        let cli = parse(&[]).expect("parses");
        assert_eq!(cli.timeout, Duration::from_secs(900));
        assert_eq!(cli.output_limit_bytes, 1_048_576);
        assert_eq!(cli.stdin_limit_bytes, 1_048_576);
        assert_eq!(cli.schema_profile, Profile::Portable);
        assert!(!cli.allow_write && !cli.allow_exec && !cli.no_cache);
        assert_eq!(cli.log_format, LogFormatArg::Text);
        assert_eq!(cli.task_retention, Duration::from_secs(600));
        assert_eq!(cli.max_finished_tasks, 32);
    }

    #[test]
    fn invalid_values_are_usage_errors() {
        for args in [
            &["--timeout", "0"][..],
            &["--timeout", "-1"],
            &["--timeout", "nan"],
            &["--timeout", "inf"],
            &["--timeout", "abc"],
            &["--output-limit-bytes", "0"],
            &["--stdin-limit-bytes", "-5"],
            &["--schema-profile", "strict"],
            &["--log-format", "xml"],
            &["--allow-writes"],
            &["--pass-env", "A=B"],
            &["--pass-env", ""],
            &["--worker-home", "/tmp/h"],
            &["--task-retention", "0"],
            &["--task-retention", "-1"],
            &["--max-finished-tasks", "0"],
            &["--max-finished-tasks", "-3"],
        ] {
            let e = parse(args).expect_err("invalid");
            assert_eq!(e.exit_code(), 2, "{args:?}");
        }
        let cli = parse(&[
            "--timeout",
            "2.5",
            "--schema-profile",
            "full",
            "--log-format",
            "json",
        ])
        .expect("valid");
        assert_eq!(cli.timeout, Duration::from_millis(2500));
        assert_eq!(cli.schema_profile, Profile::Full);
    }
}
