//! macOS: libproc's process listing (`proc_listchildpids`,
//! `proc_pidinfo`), the only way to see a process's children and parent
//! there (no `/proc`). The two calls are declared by the `libc` crate; this
//! module is their only caller and the only unsafe code of the worker on
//! macOS: each call gets a buffer it may fill and the buffer's size, and
//! reads nothing past what the call reports as written.

#![allow(unsafe_code)]

/// What the sweep needs to know about one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Info {
    /// Its parent's pid.
    pub ppid: i32,
    /// Whether it is a zombie (exited, not yet reaped).
    pub zombie: bool,
    /// Its start time (seconds, microseconds): with the pid, it names one
    /// process even after the pid is reused.
    pub start: (u64, u64),
}

/// Most children listed per process (a conda call has a handful).
const MAX_CHILDREN: usize = 4096;

/// The pids of `pid`'s children (empty when it has none or is gone).
pub fn children(pid: i32) -> Vec<i32> {
    let mut buf = vec![0 as libc::pid_t; MAX_CHILDREN];
    let bytes = libc::c_int::try_from(buf.len() * std::mem::size_of::<libc::pid_t>())
        .unwrap_or(libc::c_int::MAX);
    // SAFETY: the buffer holds `bytes` bytes of pid_t; the call writes at
    // most that many and returns how many pids it wrote.
    let n = unsafe { libc::proc_listchildpids(pid, buf.as_mut_ptr().cast(), bytes) };
    let n = usize::try_from(n).unwrap_or(0).min(buf.len());
    buf.truncate(n);
    buf.retain(|p| *p > 0);
    buf
}

/// Parent, state and start time of `pid`; `None` when it is gone (or not
/// visible to this user).
pub fn info(pid: i32) -> Option<Info> {
    // SAFETY: proc_bsdinfo is plain data (integers and byte arrays), for
    // which all zeroes is a valid value.
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    let size = libc::c_int::try_from(std::mem::size_of::<libc::proc_bsdinfo>()).ok()?;
    // SAFETY: the buffer is one proc_bsdinfo of `size` bytes; the call
    // fills at most that and returns the bytes written.
    let n = unsafe {
        libc::proc_pidinfo(
            pid,
            libc::PROC_PIDTBSDINFO,
            0,
            std::ptr::from_mut(&mut info).cast(),
            size,
        )
    };
    if n != size {
        return None;
    }
    Some(Info {
        ppid: i32::try_from(info.pbi_ppid).ok()?,
        zombie: info.pbi_status == libc::SZOMB,
        start: (info.pbi_start_tvsec, info.pbi_start_tvusec),
    })
}
