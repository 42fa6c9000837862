//! `conda-mcp-worker`: runs the target conda for the conda-mcp server under
//! limits (ARCHITECTURE.md "Code map", "Limits").
//!
//! Modules, one job each: [`cli`] (flags), [`log`] (stderr log lines),
//! [`connection`] (handshake and the job loop of one server connection),
//! [`serve`] (listening mode), [`spawn`] (process group, stdio, environment),
//! [`capture`] (bounded draining of output), [`limit`] (UTF-8 cut and the
//! lossy flag), [`job`] (one job: timeout, cancel, drain grace),
//! [`contain`] (a job's process tree: process group or job object),
//! [`reap`] (after a job, kill and reap every descendant: the Linux child
//! subreaper, libproc on macOS, nothing left on Windows),
//! [`privdrop`] (`--user`, `--home`; Unix), [`warm`] (the warm conda: conda
//! jobs forked from a pre-imported interpreter on Unix, a spare
//! pre-imported interpreter on Windows); conda runs through its own
//! interpreter on Windows (`conda_mcp_shared::conda_cmd`).
//!
//! Platforms: Linux, macOS and Windows. What differs lives in small
//! modules chosen by `cfg` (README "Platforms", docs/testing.md).
//!
//! Started by the server (spawned mode) the worker *connects* to the socket
//! the server listens on; see [`cli`].
//!
//! This crate is a library with one entry point, [`main`]: the
//! `conda-mcp-worker` executable is built by the server package
//! (`server/src/worker_main.rs`), so that one package, and so one
//! `cargo install` or one Python wheel, carries both binaries side by side.

mod capture;
mod cli;
mod connection;
mod contain;
mod error;
mod guard;
mod job;
#[cfg(target_os = "macos")]
mod libproc;
mod limit;
mod log;
#[cfg(unix)]
mod privdrop;
#[cfg(target_os = "linux")]
mod reap;
#[cfg(target_os = "macos")]
#[path = "reap_macos.rs"]
mod reap;
#[cfg(windows)]
#[path = "reap_windows.rs"]
mod reap;
#[cfg(unix)]
mod serve;
#[cfg(unix)]
mod shebang;
mod spawn;
#[cfg(unix)]
mod warm;
#[cfg(windows)]
#[path = "spare.rs"]
mod warm;
#[cfg(all(test, windows))]
mod windows_tests;

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
#[cfg(unix)]
use interprocess::local_socket::GenericFilePath;
#[cfg(windows)]
use interprocess::local_socket::GenericNamespaced;
use interprocess::local_socket::tokio::prelude::*;
use tokio_util::sync::CancellationToken;

use crate::cli::{Cli, Command, Common};
use crate::connection::WorkerCtx;
use crate::error::WorkerError;
use crate::spawn::Programs;

/// Entry point of the `conda-mcp-worker` executable: parses its command
/// line, runs it, and returns the exit status (0 on a clean end, 1 on a
/// failure, which is logged on stderr; clap's 2 for usage errors).
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let format = match &cli.command {
        Some(Command::Serve(s)) => s.common.log_format,
        None => cli.common.log_format,
    };
    // Held to the end: dropping it writes the last queued lines.
    let _log = log::init(format);
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the runtime");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "worker failed");
            ExitCode::FAILURE
        }
    }
}

/// `foreign_user`: the worker changed user (`--user`), so the environment
/// it inherited belongs to someone else; `overrides`: variables set on every
/// child after the allowlist (`HOME`, `USER`, `LOGNAME`).
fn context(
    common: &Common,
    foreign_user: bool,
    overrides: Vec<(std::ffi::OsString, std::ffi::OsString)>,
) -> Result<Arc<WorkerCtx>, WorkerError> {
    let conda = common
        .conda_exe
        .clone()
        .ok_or(WorkerError::Missing("--conda-exe"))?;
    let mut programs = Programs {
        conda,
        python: common.python.clone(),
        env_rules: conda_mcp_shared::env::EnvRules {
            pass_env: common.pass_env.clone(),
            foreign_user,
            overrides,
        },
        warm: None,
    };
    if common.no_warm_conda {
        // At debug: the server starts its discovery worker this way at
        // every start, whatever the person chose.
        tracing::debug!("warm conda off (--no-warm-conda): conda calls run as fresh processes");
    } else {
        // Runs as the worker's user (after --user took effect); starts at
        // the first conda job.
        programs.warm = warm::Warm::new(&programs.conda, programs.child_env());
    }
    Ok(Arc::new(WorkerCtx {
        programs,
        ceilings: common.ceilings(),
    }))
}

/// The home of a worker that keeps its own user (`serve`, or spawned
/// without `--user`): `--home` (created 0700 when missing) becomes `HOME`;
/// otherwise, when `check` is set, `HOME` (else the user's home from the
/// user database) must exist and be writable.
///
/// Errors: the user, the home and the fix.
fn own_home(
    common: &Common,
    check: bool,
) -> Result<Vec<(std::ffi::OsString, std::ffi::OsString)>, WorkerError> {
    use conda_mcp_shared::home::{HomeUser, check_home, prepare_home};
    if common.home.is_none() && !check {
        return Ok(Vec::new());
    }
    #[cfg(windows)]
    {
        // Windows: conda's `~` is USERPROFILE (Python's expanduser); the
        // directory's ACL decides who may write (shared::home).
        let who = HomeUser {
            name: std::env::var("USERNAME").unwrap_or_else(|_| "this user".into()),
            uid: 0,
            gid: 0,
        };
        match &common.home {
            Some(dir) => {
                let home = prepare_home(&who, dir, "--home")?;
                Ok(vec![
                    ("HOME".into(), home.clone().into_os_string()),
                    ("USERPROFILE".into(), home.into_os_string()),
                ])
            }
            None => {
                let home = std::env::var_os("USERPROFILE")
                    .filter(|h| !h.is_empty())
                    .map(std::path::PathBuf::from)
                    .ok_or_else(|| WorkerError::NoHome {
                        user: who.name.clone(),
                        why: "USERPROFILE is unset",
                    })?;
                check_home(&who, &home, "--home")?;
                Ok(Vec::new())
            }
        }
    }
    #[cfg(unix)]
    {
        let uid = nix::unistd::Uid::effective();
        let entry = nix::unistd::User::from_uid(uid).ok().flatten();
        let who = HomeUser {
            name: entry
                .as_ref()
                .map_or_else(|| uid.to_string(), |u| u.name.clone()),
            uid: uid.as_raw(),
            gid: nix::unistd::Gid::effective().as_raw(),
        };
        match &common.home {
            Some(dir) => {
                let home = prepare_home(&who, dir, "--home")?;
                Ok(vec![("HOME".into(), home.into_os_string())])
            }
            None => {
                let home = std::env::var_os("HOME")
                    .filter(|h| !h.is_empty())
                    .map(std::path::PathBuf::from)
                    .or_else(|| entry.map(|u| u.dir))
                    .ok_or_else(|| WorkerError::NoHome {
                        user: who.name.clone(),
                        why: "HOME is unset and the user database has none",
                    })?;
                check_home(&who, &home, "--home")?;
                Ok(Vec::new())
            }
        }
    }
}

/// SIGTERM/SIGINT → `shutdown`: the running job is killed, then the worker
/// exits.
#[cfg(unix)]
fn shutdown_on_signals() -> Result<CancellationToken, WorkerError> {
    use tokio::signal::unix::{SignalKind, signal};
    let token = CancellationToken::new();
    let mut term = signal(SignalKind::terminate()).map_err(WorkerError::Signals)?;
    let mut int = signal(SignalKind::interrupt()).map_err(WorkerError::Signals)?;
    let t = token.clone();
    tokio::spawn(async move {
        tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
        tracing::info!("signal received: shutting down");
        t.cancel();
    });
    Ok(token)
}

/// Ctrl+C, Ctrl+Break and the console closing → `shutdown` (Windows): the
/// running job is killed, then the worker exits. (A worker that is simply
/// killed takes its jobs along: their job objects close with it.)
#[cfg(windows)]
fn shutdown_on_signals() -> Result<CancellationToken, WorkerError> {
    use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close};
    let token = CancellationToken::new();
    let mut c = ctrl_c().map_err(WorkerError::Signals)?;
    let mut b = ctrl_break().map_err(WorkerError::Signals)?;
    let mut close = ctrl_close().map_err(WorkerError::Signals)?;
    let t = token.clone();
    tokio::spawn(async move {
        tokio::select! { _ = c.recv() => {}, _ = b.recv() => {}, _ = close.recv() => {} }
        tracing::info!("console control event received: shutting down");
        t.cancel();
    });
    Ok(token)
}

/// The refusal of what Windows cannot do: a worker that changes user or
/// listens for servers of other users (both need Unix uids).
#[cfg(windows)]
pub(crate) const NOT_ON_WINDOWS: &str = "is not available on Windows: per-OS-user workers need Unix users and uids (on Windows run conda-mcp as the user conda should run as; docs/operating.md \"Operators\")";

async fn run(cli: Cli) -> Result<(), WorkerError> {
    reap::become_subreaper().map_err(WorkerError::Subreaper)?;
    let shutdown = shutdown_on_signals()?;
    match cli.command {
        #[cfg(windows)]
        Some(Command::Serve(_)) => Err(WorkerError::NotOnWindows("conda-mcp-worker serve")),
        #[cfg(unix)]
        Some(Command::Serve(args)) => {
            let overrides = own_home(&args.common, true)?;
            let ctx = context(&args.common, false, overrides)?;
            serve::serve(
                &args.socket,
                args.socket_mode,
                args.allow_uid,
                ctx,
                shutdown,
            )
            .await
        }
        None => {
            let socket = cli.socket.ok_or(WorkerError::Missing("--socket"))?;
            #[cfg(windows)]
            if cli.user.is_some() {
                return Err(WorkerError::NotOnWindows("--user"));
            }
            let stream = connect(&socket).await?;
            #[cfg(windows)]
            let overrides = own_home(&cli.common, false)?;
            #[cfg(unix)]
            let overrides = match &cli.user {
                Some(user) => {
                    let o = privdrop::drop_to(user, cli.common.home.as_deref())?;
                    tracing::info!(user = %user, "dropped privileges");
                    o
                }
                None => own_home(&cli.common, false)?,
            };
            let ctx = context(&cli.common, cli.user.is_some(), overrides)?;
            tracing::info!(pid = std::process::id(), "connected to the server");
            let (reader, writer) = conda_mcp_shared::framing::share(stream);
            connection::serve(reader, writer, ctx, shutdown).await;
            Ok(())
        }
    }
}

/// Connects to the server's socket (Unix: a socket file in the server's
/// private directory, whose listener must have the worker's own uid).
#[cfg(unix)]
async fn connect(socket: &std::path::Path) -> Result<LocalSocketStream, WorkerError> {
    let name = socket
        .to_fs_name::<GenericFilePath>()
        .map_err(WorkerError::SocketPath)?;
    let stream = LocalSocketStream::connect(name)
        .await
        .map_err(|source| WorkerError::Connect {
            socket: socket.to_path_buf(),
            source,
        })?;
    // The listener must be our own user: the server that started us.
    let me = nix::unistd::Uid::effective().as_raw();
    let peer = stream.peer_creds().ok().and_then(|c| c.euid());
    if peer != Some(me) {
        return Err(WorkerError::ListenerUid { peer, me });
    }
    Ok(stream)
}

/// Connects to the server's named pipe (Windows): `--socket` is the pipe's
/// name (`\\.\pipe\NAME` or `NAME`). The server created it as its first
/// instance with a DACL that admits only its own user
/// (`conda_mcp_shared::private_pipe`), and accepts one client.
#[cfg(windows)]
async fn connect(socket: &std::path::Path) -> Result<LocalSocketStream, WorkerError> {
    let text = socket.to_string_lossy();
    let bare = text.strip_prefix(r"\\.\pipe\").unwrap_or(&text).to_string();
    let name = bare
        .to_ns_name::<GenericNamespaced>()
        .map_err(WorkerError::PipeName)?;
    LocalSocketStream::connect(name)
        .await
        .map_err(|source| WorkerError::ConnectPipe {
            pipe: text.into_owned(),
            source,
        })
}
