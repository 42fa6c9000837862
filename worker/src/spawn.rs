//! Building and starting a job's process.
//!
//! The program comes from the worker's own command line ([`Programs`]); the
//! request only picks which of the two. No shell: argv items are passed as
//! they are. The child gets its own process group, all three stdio streams
//! piped or `/dev/null` (never inherited: the server's stdout is the MCP
//! stream), the environment of [`Programs::child_env`] and the directory of
//! [`child_cwd`].
//!
//! A conda job runs in a child forked from the warm conda ([`crate::warm`])
//! when one is ready, else as a fresh process (command-group). Both paths
//! take their environment and directory from the same two functions, so
//! they cannot differ.

use std::ffi::OsString;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;

use command_group::{AsyncCommandGroup, AsyncGroupChild};
use conda_mcp_shared::protocol::{Program, RunRequest};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::warm::{Warm, WarmJob};

/// The programs this worker can run, fixed at startup.
#[derive(Debug, Clone)]
pub struct Programs {
    /// The target conda executable.
    pub conda: PathBuf,
    /// The target installation's Python, if configured.
    pub python: Option<PathBuf>,
    /// Variables set on every child after the worker dropped to another user
    /// (`HOME`, `USER`, `LOGNAME` of that user).
    pub env_overrides: Vec<(OsString, OsString)>,
    /// The warm conda, unless it is off (`--no-warm-conda`, or conda is not
    /// a Python entry-point script).
    pub warm: Option<Arc<Warm>>,
}

/// A started job: its pid (also its process group id), its pipes, and how
/// to wait for it.
pub struct Launched {
    /// Pid and process group id of the job's process.
    pub pid: u32,
    /// Whether it was forked from the warm conda.
    pub warm: bool,
    /// Its stdin when the job has stdin bytes (else it reads `/dev/null`).
    pub stdin: Option<Pin<Box<dyn AsyncWrite + Send>>>,
    /// Its stdout.
    pub stdout: Pin<Box<dyn AsyncRead + Send>>,
    /// Its stderr.
    pub stderr: Pin<Box<dyn AsyncRead + Send>>,
    /// The process.
    pub process: Process,
}

/// A job's process, fresh or forked from the warm conda.
#[derive(Debug)]
pub enum Process {
    /// Spawned by the worker (tokio reaps it).
    Fresh(AsyncGroupChild),
    /// A child of the zygote (the zygote reaps it and reports the status).
    Warm(WarmJob),
}

impl Process {
    /// Waits for the process to exit; cancel-safe. `None` when its status
    /// cannot be known.
    pub async fn wait(&mut self) -> Option<ExitStatus> {
        match self {
            Process::Fresh(child) => child.inner().wait().await.ok(),
            Process::Warm(job) => job.wait().await,
        }
    }
}

/// The working directory of a job's process: the request's (which must be a
/// directory), else `None` (the worker's own).
pub fn child_cwd(req: &RunRequest) -> Result<Option<PathBuf>, SpawnRefusal> {
    match &req.cwd {
        Some(cwd) if std::path::Path::new(cwd).is_dir() => Ok(Some(PathBuf::from(cwd))),
        Some(_) => Err(SpawnRefusal::BadCwd),
        None => Ok(None),
    }
}

/// Variables that carry a shell's conda activation state. They describe the
/// server's shell, not the job, and would make conda act on the wrong
/// environment, so they never reach the child. `CONDA_PREFIX_<N>`
/// (stacked activations) is matched by pattern.
pub const ACTIVATION_VARIABLES: &[&str] = &[
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "CONDA_SHLVL",
    "CONDA_PROMPT_MODIFIER",
    "_CE_M",
    "_CE_CONDA",
];

/// Whether `name` is conda activation state (see [`ACTIVATION_VARIABLES`]).
pub fn is_activation_variable(name: &str) -> bool {
    ACTIVATION_VARIABLES.contains(&name)
        || name
            .strip_prefix("CONDA_PREFIX_")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Why a job was not started; nothing was spawned. The text never contains
/// argument or stdin values.
#[derive(Debug, thiserror::Error)]
pub enum SpawnRefusal {
    /// A `Python` job on a worker started without `--python`.
    #[error("this worker has no interpreter configured (--python); Python jobs cannot run")]
    NoInterpreter,
    /// The working directory is missing or not a directory.
    #[error("the working directory does not exist or is not a directory")]
    BadCwd,
    /// More stdin than the (clamped) limit allows.
    #[error("stdin of {len} bytes exceeds the limit of {limit} bytes")]
    StdinTooLarge {
        /// Bytes supplied.
        len: usize,
        /// Limit in force.
        limit: u64,
    },
    /// The operating system refused to start the program.
    #[error("could not start the program: {0}")]
    Spawn(std::io::Error),
}

impl Programs {
    /// The path a request's [`Program`] maps to.
    pub fn path_of(&self, program: Program) -> Result<&PathBuf, SpawnRefusal> {
        match program {
            Program::Conda => Ok(&self.conda),
            Program::Python => self.python.as_ref().ok_or(SpawnRefusal::NoInterpreter),
        }
    }

    /// The complete environment of every job's process (fresh or warm): the
    /// worker's own minus conda's activation state
    /// ([`ACTIVATION_VARIABLES`]), with [`Programs::env_overrides`] applied.
    pub fn child_env(&self) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(name, _)| !name.to_str().is_some_and(is_activation_variable))
            .filter(|(name, _)| !self.env_overrides.iter().any(|(k, _)| k == name))
            .collect();
        env.extend(self.env_overrides.iter().cloned());
        env.sort();
        env
    }

    /// Starts `req`: forked from the warm conda for a conda job when it is
    /// ready, else spawned fresh ([`Programs::spawn`]).
    pub async fn launch(&self, req: &RunRequest) -> Result<Launched, SpawnRefusal> {
        self.path_of(req.program)?;
        let cwd = child_cwd(req)?;
        if req.program == Program::Conda
            && let Some(warm) = &self.warm
            && let Ok(l) = warm
                .launch(
                    &req.argv,
                    cwd.as_deref(),
                    req.stdin.is_some(),
                    &self.child_env(),
                )
                .await
        {
            return Ok(Launched {
                pid: l.pid,
                warm: true,
                stdin: l
                    .stdin
                    .map(|s| Box::pin(s) as Pin<Box<dyn AsyncWrite + Send>>),
                stdout: Box::pin(l.stdout),
                stderr: Box::pin(l.stderr),
                process: Process::Warm(l.job),
            });
        }
        let mut child = self.spawn(req)?;
        let inner = child.inner();
        let pid = inner.id().unwrap_or(0);
        let stdin = inner
            .stdin
            .take()
            .map(|s| Box::pin(s) as Pin<Box<dyn AsyncWrite + Send>>);
        let (Some(stdout), Some(stderr)) = (inner.stdout.take(), inner.stderr.take()) else {
            return Err(SpawnRefusal::Spawn(std::io::Error::other(
                "no output pipes",
            )));
        };
        Ok(Launched {
            pid,
            warm: false,
            stdin,
            stdout: Box::pin(stdout),
            stderr: Box::pin(stderr),
            process: Process::Fresh(child),
        })
    }

    /// After a job: lets the warm conda start, or replace itself when its
    /// import locations changed (a call installed or removed a package).
    pub fn after_job(&self, program: Program) {
        if program == Program::Conda
            && let Some(warm) = &self.warm
        {
            warm.prepare();
        }
    }

    /// Pids the post-job sweep must spare (the warm conda).
    pub fn spared(&self) -> Vec<i32> {
        self.warm.as_ref().map(|w| w.spared()).unwrap_or_default()
    }

    /// Spawns `req` as a fresh process in a new process group with stdout
    /// and stderr piped and stdin piped (when the request has bytes) or
    /// `/dev/null`.
    pub fn spawn(&self, req: &RunRequest) -> Result<AsyncGroupChild, SpawnRefusal> {
        let program = self.path_of(req.program)?;
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(&req.argv);
        if let Some(cwd) = child_cwd(req)? {
            cmd.current_dir(cwd);
        }
        cmd.env_clear().envs(self.child_env());
        cmd.stdin(if req.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        cmd.group_spawn().map_err(SpawnRefusal::Spawn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activation_variables() {
        for v in [
            "CONDA_PREFIX",
            "CONDA_PREFIX_1",
            "CONDA_PREFIX_12",
            "_CE_M",
            "CONDA_SHLVL",
        ] {
            assert!(is_activation_variable(v), "{v}");
        }
        for v in [
            "CONDA_PREFIX_",
            "CONDA_PREFIX_X",
            "CONDA_EXE",
            "CONDA_PKGS_DIRS",
            "PATH",
        ] {
            assert!(!is_activation_variable(v), "{v}");
        }
    }
}
