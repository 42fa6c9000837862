//! Reading Linux `/proc` for the process checks of the soak test
//! ([`crate::soak`]): process table entries, descendants, and the resource
//! figures of one process (open descriptors, threads, resident memory).

use std::collections::HashMap;
use std::path::Path;

/// One `/proc/<pid>/stat` entry (proc(5)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proc {
    /// Process id.
    pub pid: i32,
    /// Parent process id.
    pub ppid: i32,
    /// Process group id.
    pub pgid: i32,
    /// State letter (`R`, `S`, `Z` zombie, ...).
    pub state: char,
    /// Start time in clock ticks after boot: with `pid`, names one process
    /// even when the pid is reused.
    pub starttime: u64,
    /// `comm` (the executable's name, at most 15 bytes).
    pub comm: String,
}

impl Proc {
    /// Whether it is a zombie (exited, not yet reaped) or dead.
    pub fn is_zombie(&self) -> bool {
        matches!(self.state, 'Z' | 'X')
    }
}

/// Parses `/proc/<pid>/stat`: `pid (comm) state ppid pgrp ...`, where
/// `comm` may hold spaces and parentheses (so split at the last `)`);
/// `starttime` is field 22.
pub fn parse_stat(stat: &str) -> Option<Proc> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let pid = stat[..open].trim().parse().ok()?;
    let comm = stat.get(open + 1..close)?.to_owned();
    let fields: Vec<&str> = stat[close + 1..].split_ascii_whitespace().collect();
    Some(Proc {
        pid,
        ppid: fields.get(1)?.parse().ok()?,
        pgid: fields.get(2)?.parse().ok()?,
        state: fields.first()?.chars().next()?,
        starttime: fields.get(19)?.parse().ok()?,
        comm,
    })
}

/// The entry of one process, `None` when it is gone.
pub fn proc(pid: i32) -> Option<Proc> {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| parse_stat(&s))
}

/// Every process visible in `/proc`.
pub fn all() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(proc)
        .collect()
}

/// Every process whose parent chain leads to `root` (not `root` itself),
/// from one snapshot of `table`.
pub fn descendants(root: i32, table: &[Proc]) -> Vec<Proc> {
    let mut children: HashMap<i32, Vec<&Proc>> = HashMap::new();
    for p in table {
        children.entry(p.ppid).or_default().push(p);
    }
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(pid) = stack.pop() {
        for c in children.get(&pid).into_iter().flatten() {
            if c.pid != root {
                out.push((*c).clone());
                stack.push(c.pid);
            }
        }
    }
    out
}

/// Resource figures of one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Figures {
    /// Open file descriptors (entries of `/proc/<pid>/fd`).
    pub fds: usize,
    /// Threads (`Threads:` of `/proc/<pid>/status`).
    pub threads: u64,
    /// Resident set size in KiB (`VmRSS:`).
    pub rss_kib: u64,
}

/// The figures of `pid`; `None` when it is gone or unreadable.
pub fn figures(pid: i32) -> Option<Figures> {
    let base = Path::new("/proc").join(pid.to_string());
    let fds = std::fs::read_dir(base.join("fd")).ok()?.count();
    let status = std::fs::read_to_string(base.join("status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))?
            .split_ascii_whitespace()
            .next()?
            .parse()
            .ok()
    };
    Some(Figures {
        fds,
        threads: field("Threads:")?,
        rss_kib: field("VmRSS:")?,
    })
}

/// The command line of `pid`, one item per argument (empty when gone).
pub fn cmdline(pid: i32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|c| *c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Where each open descriptor of `pid` points (`fd -> target`, sorted by
/// descriptor); empty when unreadable.
pub fn fd_targets(pid: i32) -> Vec<String> {
    let dir = Path::new("/proc").join(pid.to_string()).join("fd");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<(u32, String)> = entries
        .flatten()
        .filter_map(|e| {
            let fd: u32 = e.file_name().to_str()?.parse().ok()?;
            let target = std::fs::read_link(e.path()).ok()?;
            Some((fd, format!("{fd}->{}", target.display())))
        })
        .collect();
    out.sort();
    out.into_iter().map(|(_, t)| t).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_parentheses_in_comm() {
        let p = parse_stat(
            "4242 (a (b) c) S 17 4242 17 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200",
        )
        .expect("parses");
        assert_eq!(
            (p.pid, p.ppid, p.pgid, p.state, p.starttime, p.comm.as_str()),
            (4242, 17, 4242, 'S', 987654, "a (b) c")
        );
        let me = proc(std::process::id() as i32).expect("this process");
        assert_eq!(me.pid, std::process::id() as i32);
        assert!(figures(me.pid).expect("figures").fds >= 3);
    }
}
