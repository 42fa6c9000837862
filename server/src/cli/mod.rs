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

pub mod http;

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use conda_mcp_shared::limits::Limits;

use crate::call::document::ResultMode;
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

Logs go to stderr (RUST_LOG sets the level, default info). See README.md for host configuration.";

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

/// conda-mcp: an MCP server (stdio, or Streamable HTTP with `--listen`)
/// that exposes an installed conda as typed tools, read-only unless told
/// otherwise.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "conda-mcp",
    version = VERSION_LINE,
    about = "An MCP server (stdio, or Streamable HTTP with --listen) that exposes an installed \
             conda as typed tools, read-only unless told otherwise.",
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

    /// Time limit per call and for discovery, in seconds: greater than 0,
    /// at most 604800 (one week); fractions allowed. A conda_execute or
    /// conda_run call may ask for less, never more.
    #[arg(long, value_name = "SECONDS", default_value = "900", allow_negative_numbers = true,
          value_parser = parse_timeout)]
    pub timeout: Duration,

    /// Bytes of stdout and of stderr kept per call, at least 1 (the rest is
    /// read and discarded; cut at a UTF-8 boundary).
    #[arg(long, value_name = "BYTES", default_value_t = Limits::DEFAULT.output_limit_bytes,
          allow_negative_numbers = true,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub output_limit_bytes: u64,

    /// Most bytes of stdin a conda_execute or conda_run call may supply
    /// (0 or more).
    #[arg(long, value_name = "BYTES", default_value_t = Limits::DEFAULT.stdin_limit_bytes,
          allow_negative_numbers = true)]
    pub stdin_limit_bytes: u64,

    /// Allow calls that modify environments, packages, configuration, caches
    /// or files (install, create, remove, config --set, ...). An explicit
    /// value (--allow-write=true or =false) is accepted for launchers that
    /// map a setting onto the flag.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true",
          default_value_t = false, action = clap::ArgAction::Set)]
    pub allow_write: bool,

    /// Allow calls that run arbitrary programs (conda run, plugin
    /// passthrough) and list the raw conda_execute tool. Takes an explicit
    /// value like --allow-write.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true",
          default_value_t = false, action = clap::ArgAction::Set)]
    pub allow_exec: bool,

    /// Let mutations run, each one only after the person approves it: the
    /// server shows conda's plan through the host (MCP elicitation) and
    /// applies exactly that plan, or nothing. A model's yes: true does not
    /// skip the question. Needs a host that supports elicitation; cannot
    /// be combined with --allow-write (both true is a usage error). Takes
    /// an explicit value like --allow-write.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true",
          default_value_t = false, action = clap::ArgAction::Set)]
    pub approve_writes: bool,

    /// Pass mutations of commands that have conda's `yes` option through as
    /// given. By default such a call without `yes: true` runs as a dry run
    /// (conda shows its plan, nothing changes) and its result says so
    /// (`confirmation_required`).
    #[arg(long)]
    pub no_confirm: bool,

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

    /// Run every conda call as a fresh process instead of forking it from
    /// the spawned worker's warm conda (a pre-imported interpreter; docs/operating.md
    /// "Warm conda"). A listening worker (`--worker-socket`) takes the same
    /// flag on its own command line.
    #[arg(long)]
    pub no_warm_conda: bool,

    /// The spawned worker's user gets this directory as HOME (created with
    /// mode 0700 for that user when missing) instead of its own home, which
    /// must otherwise exist and be writable. With `--worker-user` only.
    #[arg(long, value_name = "DIR", requires = "worker_user")]
    pub worker_home: Option<PathBuf>,

    /// Also pass this environment variable to conda (repeatable; `*`
    /// matches any run of characters, e.g. `ANACONDA_*`). conda otherwise
    /// gets only an allowlist of the environment (PATH without an activated
    /// environment, HOME, USER, locale, TZ, TMPDIR, XDG_*, proxies and
    /// certificates, CONDA_*, CONDARC, MAMBA_*, PIP_*). Applies to the
    /// spawned worker; a listening worker has its own `--pass-env`.
    #[arg(long = "pass-env", value_name = "NAME", value_parser = parse_pass_env)]
    pub pass_env: Vec<String>,

    /// Serve only these tools: comma-separated tool names
    /// (conda_env_create) or command paths ("env create"), * as a wildcard.
    /// An entry that matches nothing is an error (exit status 2).
    #[arg(long, value_name = "LIST", value_parser = crate::tools::filter::parse_flag)]
    pub tools: Option<crate::tools::filter::PatternList>,

    /// Never serve these tools (same entries as --tools); applied after
    /// --tools.
    #[arg(long, value_name = "LIST", value_parser = crate::tools::filter::parse_flag)]
    pub exclude_tools: Option<crate::tools::filter::PatternList>,

    /// How commands are offered: `typed` (one tool per conda command) or
    /// `compact` (conda_commands, conda_describe and conda_call over the
    /// same catalog and policy).
    #[arg(long, value_name = "MODE", value_enum, default_value_t = ToolMode::Typed)]
    pub tool_mode: ToolMode,

    /// Rebuild the tools when conda or its plugins change (after a call
    /// that installed, removed or upgraded them) and tell the client with
    /// notifications/tools/list_changed. Default: the tools are fixed for
    /// the life of the process and results say restart_required.
    #[arg(long)]
    pub live_tools: bool,

    /// Format of the log lines on stderr (server and worker).
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormatArg::Text)]
    pub log_format: LogFormatArg,

    /// Return conda's output with credentials as they are. By default every
    /// `scheme://user:password@` in stdout, stderr and parsed JSON becomes
    /// `scheme://user:***@` (and a conda `/t/<token>/` becomes
    /// `/t/<TOKEN>/`), and the result counts them in `credentials_masked`.
    /// Logs stay masked whatever this says.
    #[arg(long)]
    pub no_mask_credentials: bool,
    /// How results are shaped: default (stdout and parsed_json both
    /// present, as the reference contract fixes it) or lean (one copy of
    /// the output, parsed_json from the last complete JSON document, and a
    /// result budget), for hosts with small tool-output limits.
    #[arg(long, value_name = "MODE", value_enum, default_value_t = ResultMode::Default)]
    pub result_mode: ResultMode,

    /// Most bytes of a serialized structured result; over it, parsed_json
    /// is cut structurally (it stays valid JSON and says what was kept),
    /// text keeps its head and tail, stderr its tail. At least 4096.
    /// Default: 40000 in lean mode, unbounded in default mode.
    #[arg(long, value_name = "BYTES", allow_negative_numbers = true,
          value_parser = clap::value_parser!(u64).range(4096..))]
    pub max_result_bytes: Option<u64>,

    /// `--listen` and the flags of the HTTP mode.
    #[command(flatten)]
    pub http: http::HttpFlags,
    /// Seconds a finished MCP task (a long call answered with a task
    /// handle, for clients that declare the tasks extension) is kept for
    /// tasks/get; then it is dropped and its id is unknown.
    #[arg(long, value_name = "SECONDS", default_value = "600", allow_negative_numbers = true,
          value_parser = parse_seconds)]
    pub task_retention: Duration,

    /// Most finished MCP tasks kept; past it the oldest finished are
    /// dropped first.
    #[arg(long, value_name = "COUNT", default_value_t = TaskSettings::DEFAULT_MAX_FINISHED,
          allow_negative_numbers = true,
          value_parser = parse_count)]
    pub max_finished_tasks: usize,

    /// Append one JSON line per attempted change (every call classified as
    /// a mutation or as exec, applied, failed, declined or refused) to
    /// this file, synced before the answer is sent: who, what, the plan,
    /// the outcome and the conda revision to undo it. Reopened on SIGHUP
    /// (log rotation). Never holds a token or header.
    #[arg(long, value_name = "FILE")]
    pub audit_log: Option<PathBuf>,

    /// Allow mutations of conda's base (root) environment, which are
    /// refused by default (protected_environment).
    #[arg(long)]
    pub allow_base_writes: bool,

    /// Refuse mutations of this environment too (protected_environment):
    /// a name, or a prefix (a path). Repeatable.
    #[arg(long, value_name = "NAME|PREFIX")]
    pub protect_env: Vec<String>,

    /// Allow only these channels (repeatable): a solve (create, install,
    /// update, remove, env create, env update) whose channels, given in
    /// the call or from conda's configuration, go beyond them is refused
    /// (channel_not_allowed). A name (conda-forge) or a URL. Default:
    /// every channel.
    #[arg(long, value_name = "NAME|URL")]
    pub allowed_channel: Vec<String>,
}

/// `--log-format`: how log lines on stderr are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormatArg {
    /// One human-readable line per event.
    Text,
    /// One JSON object per line.
    Json,
}

/// `--pass-env`: a variable name, `*` as a wildcard.
fn parse_pass_env(s: &str) -> Result<String, String> {
    conda_mcp_shared::env::check_pattern(s)?;
    Ok(s.to_owned())
}

/// `--max-finished-tasks`: a whole number ≥ 1.
fn parse_count(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("expected a whole number of at least 1".into()),
    }
}

/// `--task-retention`: the same seconds as `--timeout`.
fn parse_seconds(s: &str) -> Result<Duration, String> {
    parse_timeout(s)
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

/// What the command line asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Serve MCP on stdio (no command).
    Serve,
    /// `conda-mcp check [FLAGS]`: print the setup report and exit.
    Check,
}

/// The one command: `check` as the first argument, followed by exactly the
/// server's flags.
pub const CHECK_COMMAND: &str = "check";

/// `about` of `conda-mcp check`.
const CHECK_ABOUT: &str = "Check the setup and print a report for configuring an MCP host: \
which conda is served and how it was found, its interpreter and plugins, the startup cache, \
the worker and a real conda info through it, the tools by policy class, warnings, and a \
ready-to-paste host configuration. Exit status 0 when everything works, 1 otherwise. Takes \
the same flags as the server.";

/// Parses a command line (program name first): `conda-mcp [FLAGS]` or
/// `conda-mcp check [FLAGS]`, both with [`Cli`]'s flags (the server has no
/// positional arguments, so a leading `check` is unambiguous).
///
/// Errors: clap's (usage errors exit with status 2; `--help` and
/// `--version` are "errors" that print and exit 0).
pub fn parse_from<I, T>(args: I) -> Result<(Mode, Cli), clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString>,
{
    use clap::{CommandFactory, FromArgMatches};
    let mut args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    // `check` after flags (`conda-mcp --allow-write check`) is the same
    // command: it is moved first, unless it is the value of the flag before
    // it (`--conda-exe check`).
    if let Some(i) = check_position(&args) {
        let check = args.remove(i);
        args.insert(1, check);
    }
    if args.get(1).is_some_and(|a| a == CHECK_COMMAND) {
        args.remove(1);
        let cmd = Cli::command()
            .name("conda-mcp check")
            .bin_name("conda-mcp check")
            .about(CHECK_ABOUT);
        let matches = cmd.try_get_matches_from(args)?;
        let cli = Cli::from_arg_matches(&matches)?;
        cli.exclusive()?;
        return Ok((Mode::Check, cli));
    }
    // Listed in `conda-mcp --help`; never matched here (`check` is handled
    // above, `token` by `crate::app::main` before any parsing).
    let cmd = Cli::command()
        .subcommand(clap::Command::new(CHECK_COMMAND).about(
            "Check the setup and print a report for configuring a host (same flags as the server)",
        ))
        .subcommand(
            clap::Command::new(crate::transport::http::token_command::TOKEN_COMMAND)
                .about("Make a bearer token for the HTTP mode (--listen with --auth-tokens): conda-mcp token new NAME"),
        );
    let matches = cmd.try_get_matches_from(args)?;
    // `conda-mcp --flags check` (flags first) is a check as well.
    let mode = match matches.subcommand_name() {
        Some(CHECK_COMMAND) => Mode::Check,
        _ => Mode::Serve,
    };
    let cli = Cli::from_arg_matches(&matches)?;
    cli.exclusive()?;
    Ok((mode, cli))
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
/// not as a flag's value: the first `check` whose previous item is not a
/// long or short flag (without `=`) that requires a value.
fn check_position(args: &[std::ffi::OsString]) -> Option<usize> {
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
        args[i] == CHECK_COMMAND
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

    fn parse_mode(args: &[&str]) -> Result<(Mode, Cli), clap::Error> {
        parse_from(std::iter::once("conda-mcp").chain(args.iter().copied()))
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
