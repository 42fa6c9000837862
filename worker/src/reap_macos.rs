//! macOS: no process started for a job outlives it, without a subreaper.
//!
//! macOS has no `PR_SET_CHILD_SUBREAPER`: an orphan goes to launchd, where
//! the worker cannot list it as a descendant. So a job's tree is held three
//! ways: its process group (signalled as on Linux, which reaches orphans
//! that stayed in the group), the worker's descendants listed through
//! libproc ([`crate::libproc`]) after the job, and the descendants seen
//! while the job ran ([`observe`], once a second with the job's progress
//! events), each remembered with its start time so that a reused pid is
//! never killed. What only a Mac shows is left to docs/testing.md: a
//! process that leaves the group (`setsid`) and loses its parent within a
//! second of starting is not seen.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;

use crate::libproc::{self, Info};

/// Descendants seen while jobs ran: pid and start time.
static SEEN: Mutex<Vec<(i32, (u64, u64))>> = Mutex::new(Vec::new());

/// Nothing to set up on macOS (Linux makes the worker a subreaper here).
pub fn become_subreaper() -> std::io::Result<()> {
    Ok(())
}

/// Every live descendant of `root`, by walking libproc's child lists,
/// without entering the subtrees of `spare`.
fn descendants_of(root: i32, spare: &[i32]) -> HashMap<i32, Info> {
    let mut out = HashMap::new();
    let mut todo = vec![root];
    let mut visited = HashSet::new();
    while let Some(p) = todo.pop() {
        if !visited.insert(p) {
            continue;
        }
        for c in libproc::children(p) {
            if spare.contains(&c) {
                continue;
            }
            if let Some(i) = libproc::info(c) {
                out.insert(c, i);
                todo.push(c);
            }
        }
    }
    out
}

/// Remembers the worker's descendants now (called once a second while a
/// job runs), so that one reparented to launchd later is still killed.
pub fn observe(spare: &[i32]) {
    let me = std::process::id() as i32;
    let now = descendants_of(me, spare);
    let mut seen = SEEN.lock().unwrap_or_else(PoisonError::into_inner);
    for (pid, i) in now {
        if !seen.contains(&(pid, i.start)) {
            seen.push((pid, i.start));
        }
    }
}

/// Kills (SIGKILL) every descendant of the worker still alive except the
/// subtrees of `spare`, and every process seen by [`observe`] that is
/// still the same process; reaps those that are the worker's children.
/// Returns the number of distinct processes killed; gives up after about
/// two seconds.
///
/// Call only while the worker has no child that tokio is waiting for.
pub async fn kill_all_descendants(spare: &[i32]) -> usize {
    let me = std::process::id() as i32;
    let remembered: Vec<(i32, (u64, u64))> =
        std::mem::take(&mut *SEEN.lock().unwrap_or_else(PoisonError::into_inner));
    let mut killed = HashSet::new();
    for (pid, start) in remembered {
        if spare.contains(&pid) {
            continue;
        }
        if libproc::info(pid).is_some_and(|i| i.start == start && !i.zombie)
            && kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok()
        {
            killed.insert(pid);
        }
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    loop {
        let desc = descendants_of(me, spare);
        for (&pid, i) in &desc {
            if !i.zombie && kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok() {
                killed.insert(pid);
            }
        }
        for (&pid, i) in &desc {
            if i.ppid == me {
                let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
            }
        }
        if desc.is_empty() || tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    killed.len()
}
