//! The worker's command line (clap).
//!
//! Two modes:
//!
//! * **spawned** (no subcommand): the server starts the worker with
//!   `--socket PATH --conda-exe PATH [--python PATH]`. The *server* listens on
//!   `PATH` (a socket of mode 0600 in a fresh private 0700 directory); the
//!   worker connects to it, checks that the listener belongs to its own uid,
//!   serves that one connection and exits when it closes.
//! * **serve**: a hardened deployment starts the worker on its own (for
//!   example as a systemd service under a dedicated user). The *worker*
//!   listens on `--socket` and accepts servers whose uid is in `--allow-uid`.
//!
//! The doc comments of the clap fields are the `--help` text: plain
//! prose without markup (clap prints them as written), plus [`EXAMPLES`].

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use conda_mcp_shared::LogFormat;
use conda_mcp_shared::limits::Limits;

/// The examples section of `--help` (plain text).
pub const EXAMPLES: &str = "\
Examples:
  conda-mcp-worker serve --socket /run/conda-mcp/worker.sock --allow-uid 1000 \\
      --conda-exe /opt/conda/bin/conda --python /opt/conda/bin/python
      Listen for conda-mcp servers run by uid 1000 (then: conda-mcp --worker-socket PATH).
  conda-mcp-worker serve --socket /run/conda-mcp/worker.sock --allow-uid 1000 \\
      --conda-exe /opt/conda/bin/conda --max-timeout 900 --log-format json
      The same with a 15-minute ceiling on every call and JSON log lines.

Without a subcommand the worker is in spawned mode: conda-mcp starts it itself
(--socket is the server's socket). See docs/operating.md, \"Operators\".";

/// conda-mcp-worker: runs the target conda for a conda-mcp server, one job
/// at a time, in its own process group, under time, byte and process-tree
/// limits.
#[derive(Debug, Parser)]
#[command(
    name = "conda-mcp-worker",
    version,
    subcommand_negates_reqs = true,
    after_help = EXAMPLES
)]
pub struct Cli {
    /// Listening mode for hardened deployments.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Spawned mode: the socket the server listens on (the worker connects).
    #[arg(long, required = true, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Spawned mode: drop to this user (and its primary group) after
    /// connecting; only possible when started as root.
    #[arg(long, value_name = "NAME")]
    pub user: Option<String>,
    /// What the worker may run and the limits it enforces.
    #[command(flatten)]
    pub common: Common,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Listen on a socket and serve conda-mcp servers whose uid is allowed,
    /// one server process at a time (another is refused while one is
    /// connected; the connected server may open one connection per lane).
    Serve(ServeArgs),
}

/// Arguments of `conda-mcp-worker serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Socket path to listen on (created; an existing socket file is
    /// replaced).
    #[arg(long, value_name = "PATH")]
    pub socket: PathBuf,
    /// uids of the servers allowed to connect (SO_PEERCRED); comma-separated
    /// or repeated. The worker's own uid is not implied.
    #[arg(
        long = "allow-uid",
        value_name = "UID",
        value_delimiter = ',',
        required = true
    )]
    pub allow_uid: Vec<u32>,
    /// Permission bits of the socket file, in octal. Connecting needs write
    /// permission, so 0660 admits the socket's group.
    #[arg(long, value_name = "OCTAL", default_value = "660", value_parser = parse_mode)]
    pub socket_mode: u32,
    /// What the worker may run and the limits it enforces.
    #[command(flatten)]
    pub common: Common,
}

/// Options of both modes.
#[derive(Debug, Args, Clone)]
pub struct Common {
    /// The target conda executable: the only program conda jobs can run.
    #[arg(long, value_name = "PATH", required = true)]
    pub conda_exe: Option<PathBuf>,
    /// The target installation's Python: the only program discovery-helper
    /// jobs can run. Without it such jobs are refused.
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// Log line format on stderr (text or json); the level comes from
    /// RUST_LOG (default info).
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    pub log_format: LogFormat,
    /// Longest time limit a job may have, in seconds; longer requests are
    /// clamped (and the clamp is logged).
    #[arg(long, value_name = "SECONDS", default_value_t = Limits::WORKER_CEILINGS.timeout.as_secs())]
    pub max_timeout: u64,
    /// Most bytes kept per output stream; larger requests are clamped.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::WORKER_CEILINGS.output_limit_bytes)]
    pub max_output_bytes: u64,
    /// Most stdin bytes a job may supply; larger limits are clamped.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::WORKER_CEILINGS.stdin_limit_bytes)]
    pub max_stdin_bytes: u64,
    /// Run every conda job as a fresh process: no warm conda (a
    /// pre-imported interpreter that conda jobs are forked from; docs/operating.md
    /// "Warm conda").
    #[arg(long)]
    pub no_warm_conda: bool,
    /// Also pass this environment variable to conda (repeatable; `*`
    /// matches any run of characters, e.g. `ANACONDA_*`). conda otherwise
    /// gets only an allowlist of the worker's environment (PATH, HOME,
    /// locale, proxies and certificates, CONDA_*, PIP_*, ...).
    #[arg(long = "pass-env", value_name = "NAME", value_parser = parse_pass_env)]
    pub pass_env: Vec<String>,
    /// conda's HOME: created with mode 0700 for the user conda runs as when
    /// missing. Without it, that user's home must exist and be writable, or
    /// the worker refuses to start.
    #[arg(long, value_name = "DIR")]
    pub home: Option<PathBuf>,
}

impl Common {
    /// The limits the worker enforces whatever a server asks: every
    /// request's limits are clamped to these ([`crate::job::clamp`]).
    pub fn ceilings(&self) -> Limits {
        Limits {
            timeout: Duration::from_secs(self.max_timeout),
            output_limit_bytes: self.max_output_bytes,
            stdin_limit_bytes: self.max_stdin_bytes,
        }
    }
}

fn parse_pass_env(s: &str) -> Result<String, conda_mcp_shared::env::PatternError> {
    conda_mcp_shared::env::check_pattern(s)?;
    Ok(s.to_owned())
}

/// Why `--socket-mode` was refused.
#[derive(Debug, thiserror::Error)]
enum ModeError {
    /// Not an octal number.
    #[error("not an octal mode: {0}")]
    NotOctal(#[from] std::num::ParseIntError),
    /// More than the permission bits (`0o777`).
    #[error("mode must be at most 777")]
    TooLarge,
}

fn parse_mode(s: &str) -> Result<u32, ModeError> {
    let s = s.trim_start_matches("0o");
    let mode = u32::from_str_radix(s, 8)?;
    if mode > 0o777 {
        return Err(ModeError::TooLarge);
    }
    Ok(mode)
}
