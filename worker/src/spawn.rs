//! Building and spawning a job's process.
//!
//! The program comes from the worker's own command line ([`Programs`]); the
//! request only picks which of the two. No shell: argv items are passed as
//! they are. The child gets its own process group (command-group), all three
//! stdio streams piped or `/dev/null` (never inherited: the server's stdout is
//! the MCP stream), and the environment and working directory of
//! [`Programs::child_setup`]: the allowlist of [`conda_mcp_shared::env`]
//! (nothing else of the worker's environment) and
//! [`conda_mcp_shared::env::FIXED_CWD`] unless the request names a directory.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;

use command_group::{AsyncCommandGroup, AsyncGroupChild};
use conda_mcp_shared::env::{EnvRules, FIXED_CWD, child_environment};
use conda_mcp_shared::protocol::{Program, RunRequest};

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

    /// The environment and working directory of `req`'s process, from the
    /// worker's own environment now (see the module docs).
    ///
    /// Errors: [`SpawnRefusal::BadCwd`] when the request names a directory
    /// that does not exist.
    pub fn child_setup(&self, req: &RunRequest) -> Result<ChildSetup, SpawnRefusal> {
        let cwd = match &req.cwd {
            Some(cwd) => {
                if !std::path::Path::new(cwd).is_dir() {
                    return Err(SpawnRefusal::BadCwd);
                }
                PathBuf::from(cwd)
            }
            None => PathBuf::from(FIXED_CWD),
        };
        Ok(ChildSetup {
            env: child_environment(std::env::vars_os(), &self.env_rules),
            cwd,
        })
    }

    /// Spawns `req` in a new process group with stdout and stderr piped and
    /// stdin piped (when the request has bytes) or `/dev/null`.
    pub fn spawn(&self, req: &RunRequest) -> Result<AsyncGroupChild, SpawnRefusal> {
        let program = self.path_of(req.program)?;
        let setup = self.child_setup(req)?;
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(&req.argv)
            .current_dir(&setup.cwd)
            .env_clear()
            .envs(setup.env);
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
