//! The composition root: the only place that reads the command line.
//!
//! `main` parses the flags ([`crate::cli`], clap: a usage error prints and
//! exits with status 2 before anything else), resolves them once into the
//! [`Settings`] value ([`resolve()`]), installs logging (stderr only), builds
//! the runtime and runs the mode asked for: serving MCP on stdio
//! ([`serve`]) or `conda-mcp check` ([`crate::check`]). Everything below
//! takes the [`Settings`] (or the part of it it needs) and never imports
//! `cli`.
//!
//! * [`resolve`](mod@resolve): flags → [`Settings`];
//! * [`serve`]: the serving process's life around the stdio session;
//! * [`serve_http`]: the same around the HTTP listener (`--listen`).
//!
//! Startup itself ([`Settings`] → the server's state, and why it failed:
//! [`StartupError`]) is [`crate::startup`], which `conda-mcp check` runs
//! step by step too.

pub mod resolve;
pub mod serve;
pub mod serve_http;

use std::process::ExitCode;
use std::time::Duration;

pub use crate::startup::StartupError;
pub use resolve::resolve;

use crate::cli::{self, Mode};
use crate::settings::Settings;

/// Entry point of the `conda-mcp` binary; returns the exit status (0; 2 for
/// a usage error; 1 for another failure to start, see [`crate::startup::error`]; for
/// `check`, 0 or 1 as its verdict).
pub fn main() -> ExitCode {
    // `conda-mcp token ...` has its own command line and never serves.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == crate::transport::http::token_command::TOKEN_COMMAND)
    {
        return crate::transport::http::token_command::main(std::env::args_os().collect());
    }
    let invocation = match cli::parse_from(std::env::args_os()) {
        Ok(parsed) => parsed,
        Err(e) => {
            // --help/--version print on stdout and exit 0; errors print on
            // stderr and exit 2 (1 for a configuration file that cannot be
            // read).
            e.print();
            return ExitCode::from(e.exit_code());
        }
    };
    let mode = invocation.mode;
    let settings = resolve(&invocation.cli);
    let default_filter = match mode {
        Mode::Serve => "info",
        Mode::Check | Mode::Setup => crate::check::CHECK_LOG_FILTER,
    };
    // Logs go to stderr only (stdout carries MCP frames), masked and
    // without the MCP library's own lines; RUST_LOG filters. Held to the
    // end: dropping it writes the last queued lines (a startup error).
    let _log = crate::logging::init(settings.log_format, default_filter);
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
        Err(e) => return failed(&StartupError::Runtime(e)),
    };
    let code = match mode {
        Mode::Serve => match runtime.block_on(serve::serve(&settings)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => failed(&e),
        },
        // `conda-mcp setup HOST [FLAGS]` writes a host's file (synchronous;
        // never serves).
        Mode::Setup => match &invocation.setup {
            Some(setup) => crate::setup::main(setup, &settings, &invocation.repeat),
            None => ExitCode::from(2),
        },
        Mode::Check => {
            let request = crate::check::CheckRequest {
                host: invocation.check.host,
                json: invocation.check.format == cli::CheckFormat::Json,
                verbose: invocation.check.verbose,
                origins: invocation.origins,
                repeat: invocation.repeat,
            };
            runtime.block_on(run_check(&settings, &request))
        }
    };
    // Nothing may keep the process alive once stdin closed: give background
    // tasks a moment, then go.
    runtime.shutdown_timeout(Duration::from_millis(200));
    code
}

/// The `initialize` answer both transports give before startup has
/// finished (no tool set yet, so no shared help in the instructions; the
/// one after startup is `startup`'s).
fn early_info(settings: &Settings, host: &crate::startup::HostCheck) -> rmcp::model::ServerConfig {
    crate::mcp::server_config(
        None,
        settings.mode,
        settings.results.mode,
        &host.warnings,
        settings.live_tools,
        settings.policy.approve_writes,
    )
}

/// Logs `e` and returns its exit status.
fn failed(e: &StartupError) -> ExitCode {
    tracing::error!("{e}");
    ExitCode::from(e.exit_code())
}

/// `conda-mcp check`: the report on stdout (check mode never speaks MCP, so
/// stdout is free for it), exit status 0 or 1.
async fn run_check(settings: &Settings, request: &crate::check::CheckRequest) -> ExitCode {
    use std::io::Write as _;
    let report = crate::check::check(settings, request).await;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(report.text.as_bytes());
    let _ = out.flush();
    if !report.notes.is_empty() {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(report.notes.as_bytes());
        let _ = err.flush();
    }
    match report.failure {
        None => ExitCode::SUCCESS,
        Some(_) => ExitCode::FAILURE,
    }
}
