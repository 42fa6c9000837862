//! The in-process checks: the worker's side of the guard that runs inside
//! the conda process (`guard.py`; the types and what each check means are
//! in [`conda_mcp_shared::guard`]).
//!
//! Why inside: the server predicts conda's view from outside, as its own
//! user, from a cache; only conda's own process, after it has parsed its
//! arguments and read its configuration as the user it runs as, knows what
//! the command will do. So a job that carries [`InProcessChecks`] runs
//! conda with the guard installed:
//!
//! * warm: the zygote's child installs it (the checks travel in the job
//!   request, the report pipe as a fifth descriptor; `warm/zygote.py`);
//! * fresh: conda runs through its own interpreter, the one on its `#!`
//!   line, as `<python> -c <guard.py> <checks JSON> <conda> <argv...>` with
//!   the report pipe's write end as descriptor [`REPORT_FD`]; `guard.py`
//!   then runs conda's script as `__main__` exactly as the warm child does.
//!   A conda that is not a Python entry-point script cannot be guarded:
//!   such a job is refused ([`JobRefusal::ChecksUnsupported`]), never run
//!   unchecked.
//!
//! The report comes back on its own pipe (never parsed out of stdout or
//! stderr, which conda and the programs it runs write freely); the guard
//! makes its descriptor non-inheritable at once and closes it before the
//! command acts, so nothing conda starts can write a report.
//!
//! Windows has no descriptor passing and no fork (`windows.rs`): the report
//! pipe is a named pipe only the worker's user can open, taking one
//! client, whose name travels in the checks; a fresh conda runs as
//! `python.exe -c <guard.py> <checks> -m <argv...>`, and the spare
//! interpreter (`crate::warm` there) has the guard prepended.

#[cfg(unix)]
use std::os::fd::OwnedFd;
#[cfg(unix)]
use std::path::Path;

#[cfg(unix)]
use conda_mcp_shared::guard::InProcessChecks;
use conda_mcp_shared::guard::{GuardOutcome, GuardReport, MAX_REPORT_BYTES};
#[cfg(unix)]
use conda_mcp_shared::protocol::JobRefusal;
use tokio::io::{AsyncRead, AsyncReadExt};
#[cfg(unix)]
use tokio::net::unix::pipe;

#[cfg(windows)]
pub mod windows;

/// The program a fresh guarded conda runs with `-c`.
pub const FRESH_SOURCE: &str = concat!(include_str!("guard.py"), "\nsys.exit(fresh_main())\n");

/// The descriptor a fresh guarded conda finds its report pipe on.
#[cfg(unix)]
pub const REPORT_FD: i32 = 3;

/// A report pipe: the worker reads `reader`; `writer` goes to the conda
/// process (both close-on-exec here).
#[cfg(unix)]
#[derive(Debug)]
pub struct ReportPipe {
    /// The worker's end.
    pub reader: pipe::Receiver,
    /// The conda process's end.
    pub writer: OwnedFd,
}

/// A pipe with close-on-exec set on both ends: `pipe2(O_CLOEXEC)` on
/// Linux; macOS has no `pipe2`, so the flag is set right after `pipe()`
/// (another thread's spawn in between could inherit the ends until it
/// execs).
///
/// Errors: the operating system's (no descriptors left).
#[cfg(unix)]
pub fn cloexec_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    #[cfg(target_os = "linux")]
    {
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(std::io::Error::from)
    }
    #[cfg(not(target_os = "linux"))]
    {
        use nix::fcntl::{FcntlArg, FdFlag, fcntl};
        let (r, w) = nix::unistd::pipe()?;
        for fd in [&r, &w] {
            fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
        }
        Ok((r, w))
    }
}

/// Creates a report pipe.
///
/// Errors: the operating system's (no descriptors left).
#[cfg(unix)]
pub fn report_pipe() -> std::io::Result<ReportPipe> {
    let (r, w) = cloexec_pipe()?;
    Ok(ReportPipe {
        reader: pipe::Receiver::from_owned_fd(r)?,
        writer: w,
    })
}

/// Reads the guard's report to end of file (at most
/// [`MAX_REPORT_BYTES`]): a Unix pipe, or the Windows named pipe's stream.
pub async fn read_report<R: AsyncRead + Unpin>(mut reader: R) -> GuardOutcome {
    let mut bytes = Vec::new();
    let mut limited = (&mut reader).take(MAX_REPORT_BYTES as u64 + 1);
    if limited.read_to_end(&mut bytes).await.is_err() {
        return GuardOutcome::Malformed;
    }
    parse_report(&bytes)
}

/// The outcome a report's bytes make: none, a report, or malformed.
pub fn parse_report(bytes: &[u8]) -> GuardOutcome {
    if bytes.is_empty() {
        return GuardOutcome::NoReport;
    }
    if bytes.len() > MAX_REPORT_BYTES {
        return GuardOutcome::Malformed;
    }
    match serde_json::from_slice::<GuardReport>(bytes) {
        Ok(report) => GuardOutcome::Report(Box::new(report)),
        Err(_) => GuardOutcome::Malformed,
    }
}

/// The JSON of `checks` the guard reads (Windows adds the report pipe's
/// path: `windows::ReportPipe::checks_json`).
#[cfg(unix)]
pub fn checks_json(checks: &InProcessChecks) -> String {
    serde_json::to_string(checks).unwrap_or_else(|_| "{}".to_string())
}

/// The interpreter a guarded fresh conda runs with: the one on `conda`'s
/// `#!` line.
///
/// Errors: [`JobRefusal::ChecksUnsupported`] when `conda` is not a Python
/// entry-point script (the guard needs conda's interpreter).
#[cfg(unix)]
pub fn interpreter(conda: &Path) -> Result<std::path::PathBuf, JobRefusal> {
    crate::shebang::python_of(conda).map_err(|e| JobRefusal::ChecksUnsupported {
        reason: e.to_string(),
    })
}

/// The fresh command of a guarded conda job: `<python> -c <guard> <checks>
/// <conda> <argv...>`, with `writer` as descriptor [`REPORT_FD`] of the
/// child (command-fds maps it between fork and exec; the command owns it,
/// so the caller drops the command once the child is spawned). The caller
/// sets stdio, environment, directory and group.
///
/// Errors: [`JobRefusal::Spawn`] when the descriptor cannot be mapped.
#[cfg(unix)]
pub fn fresh_command(
    python: &Path,
    conda: &Path,
    checks: &InProcessChecks,
    argv: &[String],
    writer: OwnedFd,
) -> Result<tokio::process::Command, JobRefusal> {
    use command_fds::{CommandFdExt, FdMapping};
    let mut cmd = tokio::process::Command::new(python);
    cmd.arg("-c")
        .arg(FRESH_SOURCE)
        .arg(checks_json(checks))
        .arg(conda)
        .args(argv);
    cmd.fd_mappings(vec![FdMapping {
        parent_fd: writer,
        child_fd: REPORT_FD,
    }])
    .map_err(|e| JobRefusal::spawn(&std::io::Error::other(e.to_string())))?;
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_bytes() {
        assert_eq!(parse_report(b""), GuardOutcome::NoReport);
        assert_eq!(parse_report(b"not json"), GuardOutcome::Malformed);
        assert_eq!(
            parse_report(&vec![b' '; MAX_REPORT_BYTES + 1]),
            GuardOutcome::Malformed
        );
        let GuardOutcome::Report(r) = parse_report(br#"{"prefix": "/p", "dry_run": true}"#) else {
            panic!("a report")
        };
        assert_eq!(r.prefix.as_deref(), Some("/p"));
        assert!(r.dry_run && r.refusal.is_none());
    }
}
