//! Building and starting a job's process.
//!
//! The program comes from the worker's own command line ([`Programs`]); the
//! request only picks which of the two. No shell: argv items are passed as
//! they are. The child gets its own process group, all three stdio streams
//! piped or `/dev/null` (never inherited: the server's stdout is the MCP
//! stream), and the environment and working directory of
//! [`Programs::child_setup`]: the allowlist of [`conda_mcp_shared::env`]
//! (nothing else of the worker's environment) and
//! [`conda_mcp_shared::env::FIXED_CWD`] unless the request names a directory.
//!
//! A conda job runs in a child forked from the warm conda ([`crate::warm`];
//! on Windows a spare interpreter that already imported conda) when one is
//! ready, else as a fresh process, contained by [`crate::contain`] (a
//! process group on Unix, a job object on Windows). Both paths take their
//! environment and directory from [`Programs::child_setup`], so they cannot
//! differ. A job with in-process checks runs under the guard on either
//! path (`crate::guard`): fresh, conda is started through its own
//! interpreter with the guard in front of its script (Unix) or of its entry
//! module (Windows: `python.exe -c <guard> <checks> -m <argv...>`); warm,
//! the zygote's child (Unix) or the spare interpreter (Windows) installs it.

use std::ffi::OsString;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;

use conda_mcp_shared::env::{EnvRules, FIXED_CWD, child_environment};
#[cfg(doc)]
use conda_mcp_shared::guard::InProcessChecks;
use conda_mcp_shared::protocol::{JobRefusal, Program, RunRequest};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::contain::{self, Signal};
use crate::warm::Warm;
#[cfg(unix)]
use crate::warm::WarmJob;

/// The worker's end of the guard's report pipe: a Unix pipe.
#[cfg(unix)]
pub type ReportReader = tokio::net::unix::pipe::Receiver;
/// The worker's end of the guard's report pipe: a private named pipe and
/// the task reading it (`crate::guard::windows`).
#[cfg(windows)]
pub type ReportReader = crate::guard::windows::ReportPipe;

/// The programs this worker can run, fixed at startup.
#[derive(Debug, Clone)]
pub struct Programs {
    /// The target conda executable.
    pub conda: PathBuf,
    /// The target installation's Python, if configured.
    pub python: Option<PathBuf>,
    /// What decides a child's environment: `--pass-env`, whether the worker
    /// changed user, and that user's `HOME`, `USER`, `LOGNAME`.
    pub env_rules: EnvRules,
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
    /// The read end of the guard's report pipe (jobs with checks).
    pub report: Option<ReportReader>,
    /// The process.
    pub process: Process,
}

/// A job's process, fresh or forked from the warm conda.
#[derive(Debug)]
pub enum Process {
    /// Spawned by the worker, contained by [`crate::contain`] (tokio reaps
    /// it). On Windows also a job run by the spare interpreter, which was
    /// spawned the same way.
    Fresh(contain::Child),
    /// A child of the zygote (the zygote reaps it and reports the status).
    #[cfg(unix)]
    Warm(WarmJob),
}

impl Process {
    /// Waits for the process to exit; cancel-safe. `None` when its status
    /// cannot be known.
    pub async fn wait(&mut self) -> Option<ExitStatus> {
        match self {
            Process::Fresh(child) => child.wait().await,
            #[cfg(unix)]
            Process::Warm(job) => job.wait().await,
        }
    }

    /// Sends `sig` to the job's whole tree; `pid` is the job's pid (its
    /// process group id on Unix).
    pub fn signal_tree(&mut self, pid: u32, sig: Signal) {
        match self {
            Process::Fresh(child) => child.signal_tree(pid, sig),
            #[cfg(unix)]
            Process::Warm(_) => contain::signal_group(pid, sig),
        }
    }
}

/// The environment and working directory of one child process: the only
/// place they are decided, for every way a job's process is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildSetup {
    /// The complete environment (nothing else is inherited).
    pub env: Vec<(OsString, OsString)>,
    /// The working directory.
    pub cwd: PathBuf,
}

impl Programs {
    /// The path a request's [`Program`] maps to.
    pub fn path_of(&self, program: Program) -> Result<&PathBuf, JobRefusal> {
        match program {
            Program::Conda => Ok(&self.conda),
            Program::Python => self.python.as_ref().ok_or(JobRefusal::NoInterpreter),
        }
    }

    /// The complete environment of every process this worker starts (the
    /// warm conda itself, and every job's process, fresh or warm): the
    /// allowlist of [`conda_mcp_shared::env`] applied to the worker's own
    /// environment now.
    pub fn child_env(&self) -> Vec<(OsString, OsString)> {
        child_environment(std::env::vars_os(), &self.env_rules)
    }

    /// The environment and working directory of `req`'s process (see the
    /// module docs).
    ///
    /// Errors: [`JobRefusal::BadCwd`] when the request names a directory
    /// that does not exist.
    pub fn child_setup(&self, req: &RunRequest) -> Result<ChildSetup, JobRefusal> {
        let cwd = match &req.cwd {
            Some(cwd) => {
                if !std::path::Path::new(cwd).is_dir() {
                    return Err(JobRefusal::BadCwd);
                }
                PathBuf::from(cwd)
            }
            None => PathBuf::from(FIXED_CWD),
        };
        Ok(ChildSetup {
            env: self.child_env(),
            cwd,
        })
    }

    /// Starts `req`: forked from the warm conda for a conda job when it is
    /// ready, and for a helper program (`Program::Python`, `-I -c SOURCE
    /// ARGS...`, no stdin) when a warm conda of that interpreter is ready
    /// and idle (it is never started or awaited for one); else spawned
    /// fresh ([`Programs::spawn_fresh`]), unless the request is
    /// `warm_only`.
    ///
    /// Errors: [`JobRefusal::NotWarm`] for a `warm_only` job that was not
    /// forked from the warm conda (nothing started);
    /// [`JobRefusal::ChecksUnsupported`] for a job with checks that
    /// is not a conda job, or with checks that enforce something
    /// ([`InProcessChecks::enforces`]) whose conda is not a Python
    /// entry-point script (nothing is started); checks that only report
    /// run such a conda unguarded (the result has no report).
    pub async fn launch(&self, req: &RunRequest) -> Result<Launched, JobRefusal> {
        self.path_of(req.program)?;
        let setup = self.child_setup(req)?;
        if req.checks.is_some() && req.program != Program::Conda {
            return Err(JobRefusal::ChecksUnsupported {
                reason: "only conda jobs run under the guard".into(),
            });
        }
        #[cfg(unix)]
        if req.program == Program::Conda
            && let Some(warm) = &self.warm
            && let Ok(l) = warm
                .launch(
                    &req.argv,
                    Some(setup.cwd.as_path()),
                    req.stdin.is_some(),
                    &setup.env,
                    req.checks.as_ref(),
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
                report: l.report,
                process: Process::Warm(l.job),
            });
        }
        #[cfg(unix)]
        if req.program == Program::Python
            && req.stdin.is_none()
            && let (Some(warm), Some(python)) = (&self.warm, &self.python)
            && let Ok(l) = warm
                .launch_helper(python, &req.argv, Some(setup.cwd.as_path()), &setup.env)
                .await
        {
            return Ok(Launched {
                pid: l.pid,
                warm: true,
                stdin: None,
                stdout: Box::pin(l.stdout),
                stderr: Box::pin(l.stderr),
                report: None,
                process: Process::Warm(l.job),
            });
        }
        if req.warm_only {
            return Err(JobRefusal::NotWarm);
        }
        #[cfg(windows)]
        let ((child, report), warm) = match (req.program, &self.warm) {
            (Program::Conda, Some(spare)) => {
                match spare
                    .take(&req.argv, &setup, req.stdin.is_some(), req.checks.as_ref())
                    .await
                {
                    Some(taken) => (taken, true),
                    None => (self.spawn_fresh(req, setup)?, false),
                }
            }
            _ => (self.spawn_fresh(req, setup)?, false),
        };
        #[cfg(unix)]
        let ((child, report), warm) = (self.spawn_fresh(req, setup)?, false);
        let mut child = child;
        let pid = child.id();
        let stdin = child
            .take_stdin()
            .map(|s| Box::pin(s) as Pin<Box<dyn AsyncWrite + Send>>);
        let Some((stdout, stderr)) = child.take_output() else {
            return Err(JobRefusal::spawn(&std::io::Error::other("no output pipes")));
        };
        Ok(Launched {
            pid,
            warm,
            stdin,
            stdout: Box::pin(stdout),
            stderr: Box::pin(stderr),
            report,
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

    /// After a conda job that ran fresh and ended by itself: notes how long
    /// it took, so a call that finds the warm conda starting can tell
    /// whether waiting for it is sooner (`crate::warm::wait_for_start`).
    pub fn ran_fresh(&self, program: Program, took: std::time::Duration) {
        #[cfg(unix)]
        if program == Program::Conda
            && let Some(warm) = &self.warm
        {
            warm.ran_fresh(took);
        }
        #[cfg(windows)]
        let _ = (program, took);
    }

    /// After a conda job forked from the warm conda that ended by itself:
    /// notes how long its own run took (from the fork, not counting a wait
    /// for the warm conda's start), for `crate::warm::wait_for_start`.
    pub fn ran_warm(&self, program: Program, took: std::time::Duration) {
        #[cfg(unix)]
        if program == Program::Conda
            && let Some(warm) = &self.warm
        {
            warm.ran_warm(took);
        }
        #[cfg(windows)]
        let _ = (program, took);
    }

    /// Pids the post-job sweep must spare (the warm conda).
    pub fn spared(&self) -> Vec<i32> {
        self.warm.as_ref().map(|w| w.spared()).unwrap_or_default()
    }

    /// Spawns `req` as a fresh, contained process ([`crate::contain`]) with
    /// stdout and stderr piped and stdin piped (when the request has bytes)
    /// or the null device, in the environment and directory of `setup`; on
    /// Unix a job with checks through conda's interpreter under the guard,
    /// with the read end of its report pipe.
    fn spawn_fresh(
        &self,
        req: &RunRequest,
        setup: ChildSetup,
    ) -> Result<(contain::Child, Option<ReportReader>), JobRefusal> {
        let (mut cmd, report) = self.job_command(req)?;
        cmd.current_dir(&setup.cwd).env_clear().envs(setup.env);
        cmd.stdin(if req.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let child = contain::spawn(cmd).map_err(|e| JobRefusal::spawn(&e))?;
        // The child has its copy of the report writer; ours closes with the
        // command, so the reader sees end of file once the guard (or the
        // process) is done.
        Ok((child, report))
    }

    /// The command of `req` with its arguments, and the read end of the
    /// guard's report pipe when it runs under the guard. Checks that enforce
    /// nothing (they only report) run without the guard where it cannot
    /// run; enforcing ones are refused there.
    #[cfg(unix)]
    fn job_command(
        &self,
        req: &RunRequest,
    ) -> Result<(tokio::process::Command, Option<ReportReader>), JobRefusal> {
        let program = self.path_of(req.program)?;
        let guarded = match &req.checks {
            Some(checks) => match crate::guard::interpreter(program) {
                Ok(python) => Some((checks, python)),
                Err(refusal) if checks.enforces() => return Err(refusal),
                Err(_) => None,
            },
            None => None,
        };
        Ok(match guarded {
            Some((checks, python)) => {
                let pipe = crate::guard::report_pipe().map_err(|e| JobRefusal::spawn(&e))?;
                let cmd =
                    crate::guard::fresh_command(&python, program, checks, &req.argv, pipe.writer)?;
                (cmd, Some(pipe.reader))
            }
            None => {
                let mut cmd = self.command_of(req.program)?;
                cmd.args(&req.argv);
                (cmd, None)
            }
        })
    }

    /// The command of `req` with its arguments, and the guard's report pipe
    /// when it runs under the guard: a conda run through its installation's
    /// `python.exe` (`conda_mcp_shared::conda_cmd`) as `python.exe -c
    /// <guard> <checks> -m <argv...>`. A conda run as a plain `.exe` cannot
    /// be guarded: checks that enforce something are refused there, checks
    /// that only report run it unguarded.
    #[cfg(windows)]
    fn job_command(
        &self,
        req: &RunRequest,
    ) -> Result<(tokio::process::Command, Option<ReportReader>), JobRefusal> {
        let path = self.path_of(req.program)?;
        if let (Program::Conda, Some(checks)) = (req.program, &req.checks) {
            let how = conda_mcp_shared::conda_cmd::resolve(path)
                .map_err(|e| JobRefusal::spawn(&std::io::Error::from(e)))?;
            if how.root.is_some() {
                let pipe =
                    crate::guard::windows::ReportPipe::new().map_err(|e| JobRefusal::spawn(&e))?;
                let mut cmd = tokio::process::Command::new(&how.program);
                cmd.arg("-c")
                    .arg(crate::guard::FRESH_SOURCE)
                    .arg(pipe.checks_json(checks))
                    .arg("-m")
                    .args(&req.argv);
                return Ok((cmd, Some(pipe)));
            }
            if checks.enforces() {
                return Err(JobRefusal::ChecksUnsupported {
                    reason: format!(
                        "{} is not run through a conda installation's python.exe, which the guard needs",
                        path.display()
                    ),
                });
            }
        }
        let mut cmd = self.command_of(req.program)?;
        cmd.args(&req.argv);
        Ok((cmd, None))
    }

    /// The command that runs `program`, before the request's arguments:
    /// the configured path itself, except for conda on Windows, which runs
    /// through its own interpreter (`conda_mcp_shared::conda_cmd`).
    fn command_of(&self, program: Program) -> Result<tokio::process::Command, JobRefusal> {
        let path = self.path_of(program)?;
        #[cfg(windows)]
        if program == Program::Conda {
            let how = conda_mcp_shared::conda_cmd::resolve(path)
                .map_err(|e| JobRefusal::spawn(&std::io::Error::from(e)))?;
            let mut cmd = tokio::process::Command::new(&how.program);
            cmd.args(&how.prefix_args);
            return Ok(cmd);
        }
        Ok(tokio::process::Command::new(path))
    }
}
