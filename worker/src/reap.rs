//! The worker as child subreaper: no process started for a job survives it.
//!
//! `PR_SET_CHILD_SUBREAPER` makes orphaned descendants (a grandchild whose
//! parent exited, one that called `setsid()`, a double fork) reparent to the
//! worker instead of init. After every job the worker scans `/proc` for every
//! process whose parent chain leads to the worker, SIGKILLs it and reaps the
//! zombies, until none is left. This runs only when the job's own child has
//! been reaped already, so `waitpid(-1)` cannot steal a status tokio waits
//! for.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

/// Makes the current process a child subreaper (Linux `prctl`).
pub fn become_subreaper() -> nix::Result<()> {
    nix::sys::prctl::set_child_subreaper(true)
}

/// Sends `sig` to process group `pgid`, ignoring a group that is gone.
pub fn signal_group(pgid: u32, sig: Signal) {
    if let Ok(raw) = i32::try_from(pgid) {
        let _ = killpg(Pid::from_raw(raw), sig);
    }
}

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

/// Every process whose parent chain leads to `root` (excluding `root`).
fn descendants_of(root: i32) -> HashMap<i32, ProcEntry> {
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
        let mut cur = e.ppid;
        let mut seen = HashSet::new();
        while cur > 1 && seen.insert(cur) {
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

/// Reaps every exited child without blocking; returns how many.
fn reap_zombies() -> usize {
    let mut n = 0;
    loop {
        match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) | Err(_) => return n,
            Ok(_) => n += 1,
        }
    }
}

/// Kills (SIGKILL) and reaps every descendant of the worker still alive;
/// returns the number of distinct processes killed. Gives up after about
/// two seconds (a process in uninterruptible sleep cannot be hurried).
///
/// Call only while the worker has no child that tokio is waiting for.
pub async fn kill_all_descendants() -> usize {
    let me = std::process::id() as i32;
    let mut killed = HashSet::new();
    for _ in 0..200 {
        let desc = descendants_of(me);
        for (&pid, e) in &desc {
            if !e.zombie && kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok() {
                killed.insert(pid);
            }
        }
        reap_zombies();
        if desc.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
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
