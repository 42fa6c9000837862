//! Windows: a job's fresh process starts in a new job object
//! (process-wrap's `JobObject`, with `KillOnDrop` so that the job object
//! is created with `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`). Every process it
//! starts is in the same job object: `JOB_OBJECT_LIMIT_BREAKAWAY_OK` is not
//! set, so `CREATE_BREAKAWAY_FROM_JOB` fails for them. The worker holds the
//! only handle to the job object: when the worker exits, however it exits,
//! Windows closes the handle and kills the whole tree.

use std::process::ExitStatus;

use process_wrap::tokio::{ChildWrapper, CommandWrap, JobObject, KillOnDrop};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

use super::Signal;

/// A contained fresh process and its job object.
#[derive(Debug)]
pub struct Child(Box<dyn ChildWrapper>);

/// Starts `cmd` in a new job object (see the module docs). The process is
/// created suspended, assigned, then resumed, so not even its first
/// instruction runs outside the job object.
///
/// Errors: the spawn's own error, or the job object's.
pub fn spawn(cmd: tokio::process::Command) -> std::io::Result<Child> {
    let mut wrap = CommandWrap::from(cmd);
    wrap.wrap(JobObject).wrap(KillOnDrop);
    wrap.spawn().map(Child)
}

impl Child {
    /// Its pid (0 once it is gone).
    pub fn id(&self) -> u32 {
        self.0.id().unwrap_or(0)
    }

    /// Takes its stdin pipe (there is one when stdin was piped).
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.0.stdin().take()
    }

    /// Its stdin pipe, left in place (the spare conda's job header).
    pub fn stdin_mut(&mut self) -> Option<&mut ChildStdin> {
        self.0.stdin().as_mut()
    }

    /// Its exit status if it has exited, without waiting.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.0.inner_mut().try_wait().ok().flatten()
    }

    /// Takes its stdout and stderr pipes.
    pub fn take_output(&mut self) -> Option<(ChildStdout, ChildStderr)> {
        Some((self.0.stdout().take()?, self.0.stderr().take()?))
    }

    /// Waits for the leader to exit (not for the rest of the job object,
    /// which [`Child::signal_tree`] ends); cancel-safe.
    pub async fn wait(&mut self) -> Option<ExitStatus> {
        // The job object's own wait also waits for every other process in
        // it; the leader is the innermost child.
        self.0.inner_mut().wait().await.ok()
    }

    /// Ends every process in the job object (`TerminateJobObject`): both
    /// signals kill, Windows has no polite stop for a console-less tree.
    pub fn signal_tree(&mut self, _pid: u32, _sig: Signal) {
        let _ = self.0.start_kill();
    }
}
