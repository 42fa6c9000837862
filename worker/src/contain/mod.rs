//! Containing a job's process tree: how a fresh process is started so that
//! everything it starts can be ended with it, and how that tree is asked to
//! stop or killed. One module per platform, with one API:
//!
//! * [`spawn`] starts a `tokio::process::Command` contained: on Unix in a
//!   new process group (command-group), on Windows in a new job object
//!   (process-wrap's `JobObject`) that kills every process in it when its
//!   last handle closes (so also when the worker exits) and lets none break
//!   away;
//! * [`Child`]: its pid, its pipes, the wait for the leader, and
//!   [`Child::signal_tree`].
//!
//! What is left once the leader is gone is swept by [`crate::reap`] on Unix
//! (a descendant can leave the process group: `setsid`, a double fork); on
//! Windows the job object holds every descendant whatever it does, and
//! [`Child::signal_tree`] with [`Signal::Kill`] ends them all.

#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;

#[cfg(unix)]
pub use self::unix::{Child, signal_group, spawn};
#[cfg(windows)]
pub use self::windows::{Child, spawn};

/// How a job's tree is asked to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// A polite request (SIGTERM on Unix). Windows has no such request for
    /// a process without a console, so there it kills, as [`Signal::Kill`].
    Term,
    /// Ends every process of the tree at once (SIGKILL to the group on
    /// Unix, `TerminateJobObject` on Windows).
    Kill,
}

/// Whether a polite stop exists on this platform: when it does not, a
/// timeout or cancel kills at once instead of waiting the kill grace.
pub const HAS_TERM: bool = cfg!(unix);

/// A process's exit status as the result's `exit_code`: the exit code, or
/// on Unix minus the number of the signal that ended it.
pub fn exit_code(status: std::process::ExitStatus) -> Option<i32> {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        status.code().or_else(|| status.signal().map(|n| -n))
    }
    #[cfg(not(unix))]
    {
        status.code()
    }
}
