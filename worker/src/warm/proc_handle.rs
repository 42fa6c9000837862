//! A handle on one of the worker's own child processes (the zygote) that
//! names it even after it exited: on Linux a pidfd; on macOS the pid of a
//! child the worker has not reaped yet, which the kernel cannot give to
//! another process until it is reaped (here, by [`ProcHandle::kill`]).

#[cfg(target_os = "linux")]
use std::os::fd::{AsFd, OwnedFd};

/// Why no handle could be had on a child.
#[derive(Debug, thiserror::Error)]
pub enum HandleError {
    /// The pid is not a process id (zero or negative).
    #[error("bad pid")]
    BadPid(i32),
    /// (Linux) `pidfd_open(2)` failed: the OS error.
    #[cfg(target_os = "linux")]
    #[error("pidfd_open: {0}")]
    PidfdOpen(std::io::Error),
}

/// See the module docs.
#[derive(Debug)]
pub struct ProcHandle {
    #[cfg(target_os = "macos")]
    pid: i32,
    #[cfg(target_os = "linux")]
    fd: OwnedFd,
}

impl ProcHandle {
    /// A handle on `pid`, which must be a child of the worker.
    ///
    /// Errors: the pid is invalid, or (Linux) `pidfd_open` failed.
    pub fn of_child(pid: i32) -> Result<ProcHandle, HandleError> {
        let p = rustix::process::Pid::from_raw(pid).ok_or(HandleError::BadPid(pid))?;
        #[cfg(target_os = "linux")]
        {
            let fd = rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty())
                .map_err(|e| HandleError::PidfdOpen(e.into()))?;
            Ok(ProcHandle { fd })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = p;
            Ok(ProcHandle { pid })
        }
    }

    /// Whether the process has not exited yet.
    pub fn alive(&self) -> bool {
        #[cfg(target_os = "linux")]
        {
            use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
            let mut fds = [PollFd::new(self.fd.as_fd(), PollFlags::POLLIN)];
            matches!(poll(&mut fds, PollTimeout::ZERO), Ok(0))
        }
        #[cfg(target_os = "macos")]
        {
            crate::libproc::info(self.pid).is_some_and(|i| !i.zombie)
        }
    }

    /// SIGKILL, then reap it, off the async threads.
    pub async fn kill(&self) {
        #[cfg(target_os = "linux")]
        {
            use rustix::process::{Signal as RSignal, pidfd_send_signal};
            let _ = pidfd_send_signal(&self.fd, RSignal::KILL);
            if let Ok(dup) = self.fd.try_clone() {
                let _ = tokio::task::spawn_blocking(move || {
                    let _ = rustix::process::waitid(
                        rustix::process::WaitId::PidFd(dup.as_fd()),
                        rustix::process::WaitIdOptions::EXITED,
                    );
                })
                .await;
            }
        }
        #[cfg(target_os = "macos")]
        {
            let pid = nix::unistd::Pid::from_raw(self.pid);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            let _ = tokio::task::spawn_blocking(move || {
                let _ = nix::sys::wait::waitpid(pid, None);
            })
            .await;
        }
    }
}

/// The parent pid of `pid` (Linux: `/proc/<pid>/stat`; macOS: libproc).
pub fn parent_of(pid: i32) -> Option<i32> {
    #[cfg(target_os = "linux")]
    {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let rest = &stat[stat.rfind(')')? + 1..];
        rest.split_ascii_whitespace().nth(1)?.parse().ok()
    }
    #[cfg(target_os = "macos")]
    {
        crate::libproc::info(pid).map(|i| i.ppid)
    }
}
