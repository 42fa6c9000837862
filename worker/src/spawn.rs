//! Building and spawning a job's process.
//!
//! The program comes from the worker's own command line ([`Programs`]); the
//! request only picks which of the two. No shell: argv items are passed as
//! they are. The child gets its own process group (command-group), all three
//! stdio streams piped or `/dev/null` (never inherited: the server's stdout is
//! the MCP stream), and the worker's environment minus conda's activation
//! state.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;

use command_group::{AsyncCommandGroup, AsyncGroupChild};
use conda_mcp_shared::protocol::{Program, RunRequest};

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

    /// Spawns `req` in a new process group with stdout and stderr piped and
    /// stdin piped (when the request has bytes) or `/dev/null`.
    pub fn spawn(&self, req: &RunRequest) -> Result<AsyncGroupChild, SpawnRefusal> {
        let program = self.path_of(req.program)?;
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(&req.argv);
        if let Some(cwd) = &req.cwd {
            if !std::path::Path::new(cwd).is_dir() {
                return Err(SpawnRefusal::BadCwd);
            }
            cmd.current_dir(cwd);
        }
        for (name, _) in std::env::vars_os() {
            if name.to_str().is_some_and(is_activation_variable) {
                cmd.env_remove(&name);
            }
        }
        for (k, v) in &self.env_overrides {
            cmd.env(k, v);
        }
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
