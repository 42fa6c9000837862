//! The `conda-mcp` command line (clap) and startup sequence.
//!
//! Every value is checked before any MCP traffic: an invalid one prints a
//! clear message on stderr and exits with status 2 (clap's usage-error
//! status). `--help` and `--version` print on stdout and exit 0 — they are
//! the only things ever printed there that are not MCP frames, and they run
//! before the protocol starts.
//!
//! Startup: logs (stderr) → discovery (target, dump, catalog) → tools and
//! their schemas (each checked as a JSON Schema 2020-12 document) → the
//! capabilities resource (serialized once) → MCP on stdio until stdin
//! closes → shutdown of the workers (nothing started survives).
//!
//! The doc comments of the clap fields are the `--help` text: plain
//! prose without markup (clap prints them as written), plus [`EXAMPLES`].

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use conda_mcp_shared::limits::{DEFAULT_OUTPUT_LIMIT_BYTES, DEFAULT_STDIN_LIMIT_BYTES};

use crate::mcp::tools::ToolMode;
use crate::schema::Profile;

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

Logs go to stderr (RUST_LOG sets the level, default info). See README.md for host configuration.";

/// Most seconds `--timeout` accepts (one week): larger values would only
/// hide hung calls.
pub const MAX_TIMEOUT_SECONDS: f64 = 7.0 * 24.0 * 3600.0;

/// conda-mcp: an MCP server (stdio) that exposes an installed conda as typed
/// tools, read-only unless told otherwise.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "conda-mcp",
    version,
    about = "An MCP server (stdio) that exposes an installed conda as typed tools, \
             read-only unless told otherwise.",
    long_about = None,
    after_help = EXAMPLES
)]
pub struct Cli {
    /// The conda executable to serve. Default: $CONDA_EXE, else conda on
    /// PATH.
    #[arg(long, value_name = "PATH")]
    pub conda_exe: Option<PathBuf>,

    /// The Python interpreter of that conda installation (only needed when
    /// it cannot be found from the conda executable itself).
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,

    /// Time limit per call and for discovery, in seconds (> 0). A
    /// conda_execute call may ask for less, never more.
    #[arg(long, value_name = "SECONDS", default_value = "900", allow_negative_numbers = true,
          value_parser = parse_timeout)]
    pub timeout: Duration,

    /// Bytes of stdout and of stderr kept per call (the rest is read and
    /// discarded; cut at a UTF-8 boundary).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_OUTPUT_LIMIT_BYTES,
          allow_negative_numbers = true,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub output_limit_bytes: u64,

    /// Most bytes of stdin a conda_execute call may supply.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_STDIN_LIMIT_BYTES,
          allow_negative_numbers = true)]
    pub stdin_limit_bytes: u64,

    /// Allow calls that modify environments, packages, configuration, caches
    /// or files (install, create, remove, config --set, ...).
    #[arg(long)]
    pub allow_write: bool,

    /// Allow calls that run arbitrary programs (conda run, plugin
    /// passthrough) and list the raw conda_execute tool.
    #[arg(long)]
    pub allow_exec: bool,

    /// Input-schema profile of the generated tools: portable (accepted by
    /// every major host) or full (adds exact JSON Schema 2020-12
    /// constraints for exclusive and required option groups).
    #[arg(long, value_name = "PROFILE", value_enum, default_value_t = Profile::Portable)]
    pub schema_profile: Profile,

    /// Do not read or write the discovery cache; always rerun discovery.
    #[arg(long)]
    pub no_cache: bool,

    /// The conda-mcp-worker binary. Default: next to this executable, else
    /// on PATH.
    #[arg(long, value_name = "PATH")]
    pub worker_exe: Option<PathBuf>,

    /// Connect to a worker already listening on this socket (started with
    /// conda-mcp-worker serve, for hardened deployments where the worker
    /// runs under its own user) instead of spawning one. A worker that is
    /// not there or refuses this server is a startup error. --worker-exe,
    /// --python and --worker-user belong to that worker's own command line
    /// then and are not used.
    #[arg(long, value_name = "PATH")]
    pub worker_socket: Option<PathBuf>,

    /// Run the spawned worker, and so conda, as this user and its primary
    /// group (supplementary groups cleared; HOME, USER, LOGNAME set for
    /// conda). Needs the server to run as root.
    #[arg(long, value_name = "NAME")]
    pub worker_user: Option<String>,

    /// Serve only these tools: comma-separated tool names
    /// (conda_env_create) or command paths ("env create"), * as a wildcard.
    /// An entry that matches nothing is an error (exit status 2).
    #[arg(long, value_name = "LIST", value_parser = crate::mcp::filter::parse_flag)]
    pub tools: Option<crate::mcp::filter::PatternList>,

    /// Never serve these tools (same entries as --tools); applied after
    /// --tools.
    #[arg(long, value_name = "LIST", value_parser = crate::mcp::filter::parse_flag)]
    pub exclude_tools: Option<crate::mcp::filter::PatternList>,

    /// How commands are offered: `typed` (one tool per conda command) or
    /// `compact` (conda_commands, conda_describe and conda_call over the
    /// same catalog and policy).
    #[arg(long, value_name = "MODE", value_enum, default_value_t = ToolMode::Typed)]
    pub tool_mode: ToolMode,

    /// Rebuild the tools when conda or its plugins change (after a call
    /// that installed, removed or upgraded them) and tell the client with
    /// notifications/tools/list_changed. Default: tools are fixed for the
    /// life of the process and results say restart_required.
    #[arg(long)]
    pub live_tools: bool,

    /// Format of the log lines on stderr (server and worker).
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormatArg::Text)]
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

/// `--timeout`: seconds as a finite number > 0, at most
/// [`MAX_TIMEOUT_SECONDS`].
fn parse_timeout(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| "expected a number of seconds, e.g. 900 or 2.5".to_owned())?;
    if !secs.is_finite() || secs <= 0.0 {
        return Err("must be a finite number of seconds greater than 0".into());
    }
    if secs > MAX_TIMEOUT_SECONDS {
        return Err(format!(
            "must be at most {MAX_TIMEOUT_SECONDS} seconds (one week)"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

impl Cli {
    /// `--tools` and `--exclude-tools` as one filter.
    pub fn tool_filter(&self) -> crate::mcp::filter::ToolFilter {
        crate::mcp::filter::ToolFilter {
            include: self.tools.as_ref().map(|l| l.0.clone()),
            exclude: self
                .exclude_tools
                .as_ref()
                .map(|l| l.0.clone())
                .unwrap_or_default(),
        }
    }

    /// The limits every call runs under.
    pub fn limits(&self) -> crate::mcp::Limits {
        crate::mcp::Limits {
            timeout: self.timeout,
            output_limit_bytes: self.output_limit_bytes,
            stdin_limit_bytes: self.stdin_limit_bytes,
        }
    }
}

/// Entry point of the `conda-mcp` binary.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help/--version print on stdout and exit 0; errors print on
            // stderr and exit 2.
            let _ = e.print();
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    init_logging(cli.log_format);
    // One thread: the server only routes I/O (conda runs in the worker), and
    // a current-thread runtime runs tasks in the order they were spawned, so
    // calls reach the exec lane in the order they arrived. (The
    // multi-thread scheduler's LIFO slot runs the newest task first and
    // reorders calls that arrive together.)
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(crate::mcp::run(cli));
    // Nothing may keep the process alive once stdin closed: give background
    // tasks a moment, then go.
    runtime.shutdown_timeout(Duration::from_millis(200));
    code
}

/// Logs go to stderr only (stdout carries MCP frames); `RUST_LOG` filters
/// (default `info`).
fn init_logging(format: LogFormatArg) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(filter);
    let _ = match format {
        LogFormatArg::Text => builder.try_init(),
        LogFormatArg::Json => builder.json().try_init(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("conda-mcp").chain(args.iter().copied()))
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
