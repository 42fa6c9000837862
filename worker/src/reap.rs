//! The worker as child subreaper: no process started for a job survives it.
//!
//! `PR_SET_CHILD_SUBREAPER` makes orphaned descendants (a grandchild whose
//! parent exited, one that called `setsid()`, a double fork) reparent to the
//! worker instead of init. After every job the worker scans `/proc` once for
//! every process whose parent chain leads to the worker (sparing the warm
//! conda's zygote), and when there is one, SIGKILLs each through a pidfd and
//! waits for the pidfds to report the exits (no polling, no sleeping), reaps
//! the zombies that are the worker's children by pid (never `waitpid(-1)`,
//! which could take a status tokio or another job waits for), and scans
//! again for anything forked in between, until none is left. A call that
//! leaves nothing behind costs one scan.

use std::collections::{HashMap, HashSet};
use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;

use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;

/// Makes the current process a child subreaper (Linux `prctl`).
///
/// Errors: the `prctl` error.
pub fn become_subreaper() -> std::io::Result<()> {
    Ok(nix::sys::prctl::set_child_subreaper(true)?)
}

/// Nothing to record while a job runs: orphans come to the worker.
pub fn observe(_spare: &[i32]) {}

/// One `/proc` entry: pid, parent pid, and whether it is a zombie.
#[derive(Debug, Clone, Copy)]
struct ProcEntry {
    ppid: i32,
    zombie: bool,
}

/// Parses `/proc/<pid>/stat`: `pid (comm) state ppid ...` where `comm` may
/// contain spaces and parentheses (so split after the last `)`).
fn parse_stat(stat: &str) -> Option<ProcEntry> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some(ProcEntry {
        ppid,
        zombie: state == "Z" || state == "X",
    })
}

/// Every process whose parent chain leads to `root` without passing through
/// a pid in `spare` (excluding `root` and the spared pids themselves).
fn descendants_of(root: i32, spare: &[i32]) -> HashMap<i32, ProcEntry> {
    let mut table = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return table;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        if let Some(e) = std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .as_deref()
            .and_then(parse_stat)
        {
            table.insert(pid, e);
        }
    }
    let mut out = HashMap::new();
    for (&pid, &e) in &table {
        if spare.contains(&pid) {
            continue;
        }
        let mut cur = e.ppid;
        let mut seen = HashSet::new();
        while cur > 1 && seen.insert(cur) && !spare.contains(&cur) {
            if cur == root {
                out.insert(pid, e);
                break;
            }
            cur = table.get(&cur).map_or(0, |p| p.ppid);
        }
    }
    out.remove(&root);
    out
}

/// Reaps, without blocking, those of `pids` that are exited children of the
/// worker.
fn reap_children(pids: impl IntoIterator<Item = i32>, me: i32, table: &HashMap<i32, ProcEntry>) {
    for pid in pids {
        if table.get(&pid).is_some_and(|e| e.ppid == me) {
            let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
        }
    }
}

/// SIGKILL through a pidfd; returns the pidfd to wait on (`None` when the
/// process is already gone).
fn kill_by_pidfd(pid: i32) -> Option<OwnedFd> {
    use rustix::process::{PidfdFlags, Signal as RSignal, pidfd_open, pidfd_send_signal};
    let fd = pidfd_open(rustix::process::Pid::from_raw(pid)?, PidfdFlags::NONBLOCK).ok()?;
    pidfd_send_signal(fd.as_fd(), RSignal::KILL).ok()?;
    Some(fd)
}

/// Waits until every pidfd reports its process's exit (a pidfd becomes
/// readable once the process has exited and its children were reparented),
/// or until `deadline`; returns whether all did. One blocking `poll(2)` per
/// wake-up, off the async threads.
async fn wait_exited(mut fds: Vec<OwnedFd>, deadline: tokio::time::Instant) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    tokio::task::spawn_blocking(move || {
        while !fds.is_empty() {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
            let mut set: Vec<PollFd<'_>> = fds
                .iter()
                .map(|fd| PollFd::new(fd.as_fd(), PollFlags::POLLIN))
                .collect();
            if poll(&mut set, timeout).is_err() {
                return false;
            }
            let done: Vec<bool> = set
                .iter()
                .map(|p| p.revents().is_some_and(|r| !r.is_empty()))
                .collect();
            drop(set);
            let mut i = 0;
            fds.retain(|_| {
                i += 1;
                !done[i - 1]
            });
        }
        true
    })
    .await
    .unwrap_or(false)
}

/// Kills (SIGKILL) and reaps every descendant of the worker still alive,
/// except the subtrees of `spare`; returns the number of distinct processes
/// killed. Gives up after about two seconds (a process in uninterruptible
/// sleep cannot be hurried).
///
/// Call only while the worker has no child that tokio is waiting for.
pub async fn kill_all_descendants(spare: &[i32]) -> usize {
    let me = std::process::id() as i32;
    let mut killed = HashSet::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    loop {
        let desc = descendants_of(me, spare);
        let live: Vec<i32> = desc
            .iter()
            .filter(|(_, e)| !e.zombie)
            .map(|(&pid, _)| pid)
            .collect();
        let mut waits = Vec::new();
        for pid in live {
            if let Some(fd) = kill_by_pidfd(pid) {
                killed.insert(pid);
                waits.push(fd);
            }
        }
        let had_waits = !waits.is_empty();
        let timed_out = had_waits && !wait_exited(waits, deadline).await;
        reap_children(desc.keys().copied(), me, &desc);
        if desc.is_empty() || timed_out {
            break;
        }
        if !had_waits {
            // Only zombies that are not ours: their parents are exiting.
            if tokio::time::Instant::now() >= deadline {
                break;
            }
            tokio::task::yield_now().await;
        }
    }
    killed.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_odd_command_names() {
        let e = parse_stat("42 (a) b (c) S 7 42 42 0 -1").expect("parsed");
        assert_eq!(e.ppid, 7);
        assert!(!e.zombie);
        assert!(parse_stat("1 (x) Z 3 ").expect("z").zombie);
        assert!(parse_stat("garbage").is_none());
    }
}
