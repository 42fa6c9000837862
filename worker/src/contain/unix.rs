//! Unix: a job's fresh process leads a new process group (command-group);
//! its tree is signalled through the group (`killpg`).

use std::process::ExitStatus;

use command_group::{AsyncCommandGroup, AsyncGroupChild};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

use super::Signal;

/// A contained fresh process: the leader of its own process group.
#[derive(Debug)]
pub struct Child(AsyncGroupChild);

/// Starts `cmd` as the leader of a new process group.
///
/// Errors: the spawn's own error (program missing, not executable).
pub fn spawn(mut cmd: tokio::process::Command) -> std::io::Result<Child> {
    cmd.group_spawn().map(Child)
}

impl Child {
    /// Its pid, which is also its process group id (0 once reaped).
    pub fn id(&self) -> u32 {
        self.0.id().unwrap_or(0)
    }

    /// Takes its stdin pipe (there is one when stdin was piped).
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.0.inner().stdin.take()
    }

    /// Takes its stdout and stderr pipes.
    pub fn take_output(&mut self) -> Option<(ChildStdout, ChildStderr)> {
        let inner = self.0.inner();
        Some((inner.stdout.take()?, inner.stderr.take()?))
    }

    /// Waits for the leader (not the group) to exit; cancel-safe.
    pub async fn wait(&mut self) -> Option<ExitStatus> {
        self.0.inner().wait().await.ok()
    }

    /// Sends `sig` to the whole process group.
    pub fn signal_tree(&mut self, pgid: u32, sig: Signal) {
        signal_group(pgid, sig);
    }
}

/// Sends `sig` to process group `pgid`, ignoring a group that is gone
/// (also for jobs forked from the warm conda, which lead their own group).
pub fn signal_group(pgid: u32, sig: Signal) {
    use nix::sys::signal::{Signal as S, killpg};
    let sig = match sig {
        Signal::Term => S::SIGTERM,
        Signal::Kill => S::SIGKILL,
    };
    if let Ok(raw) = i32::try_from(pgid)
        && raw > 1
    {
        let _ = killpg(nix::unistd::Pid::from_raw(raw), sig);
    }
}
