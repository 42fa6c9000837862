//! One zygote process and the worker's side of its control socket.
//!
//! The worker starts `<interpreter> -c <zygote.py> <conda>` in its own
//! process group, with the child environment and the worker's working
//! directory (as a fresh conda without `cwd` gets), a `SOCK_SEQPACKET`
//! socket as stdin (one datagram per message, descriptors passed with
//! `SCM_RIGHTS` as multiprocessing's forkserver does) and pipes as stdout and
//! stderr. `zygote.py` documents the messages.
//!
//! macOS has no `SOCK_SEQPACKET` for `AF_UNIX` (`socketpair` fails with
//! `EPROTONOSUPPORT`): there the socket is `SOCK_DGRAM`, which keeps the
//! message boundaries and passes descriptors the same way but reports no
//! end of file when the other side exits. So on macOS the worker's reads
//! also watch the zygote's liveness ([`next_message`]) and the zygote
//! watches its parent (`zygote.py`).

use std::ffi::OsString;
use std::io::IoSlice;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::socket::{
    AddressFamily, ControlMessage, MsgFlags, SockFlag, SockType, sendmsg, socketpair,
};
use serde_json::Value;
use tokio::io::Interest;
use tokio::net::UnixDatagram;

use super::proc_handle::{ProcHandle, parent_of};
use super::stamp::Stamp;

/// The zygote's Python source, run with `python -c`.
pub const SOURCE: &str = include_str!("zygote.py");

/// Largest datagram accepted from a zygote (its messages are a few hundred
/// bytes; `hello` lists `sys.path`).
const MAX_MESSAGE: usize = 64 * 1024;

/// Largest job request sent to a zygote: well below the default socket
/// send buffer (about 200 KiB on Linux) and the zygote's receive buffer
/// (1 MiB, `zygote.py`).
pub const MAX_REQUEST: usize = 128 * 1024;

/// How long a zygote may take to import conda and load its plugins.
pub const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// How long a zygote may take to fork a job's child and report its pid.
pub const FORK_TIMEOUT: Duration = Duration::from_secs(5);

/// Flags of a job's `sendmsg`: no SIGPIPE when the zygote is gone (macOS
/// has no MSG_NOSIGNAL; Rust programs ignore SIGPIPE, so EPIPE comes back
/// there as well).
#[cfg(target_os = "linux")]
const SEND_FLAGS: MsgFlags = MsgFlags::MSG_NOSIGNAL;
#[cfg(target_os = "macos")]
const SEND_FLAGS: MsgFlags = MsgFlags::empty();

/// How often a read on macOS's datagram socket checks that the zygote is
/// still there (module docs).
#[cfg(target_os = "macos")]
pub const LIVENESS_INTERVAL: Duration = Duration::from_millis(100);

/// A ready zygote.
#[derive(Debug)]
pub struct Zygote {
    /// Its pid (spared by the post-job sweep while it lives).
    pub pid: i32,
    handle: ProcHandle,
    ctl: UnixDatagram,
    /// Its stdout and stderr: nothing may appear there after warming.
    output: [OwnedFd; 2],
    /// Its import locations, stamped when it reported them.
    pub stamp: Stamp,
    /// The environment it was started with.
    pub env: Vec<(OsString, OsString)>,
}

/// What starting a zygote needs.
#[derive(Debug, Clone)]
pub struct Recipe {
    /// The conda entry-point script.
    pub conda: PathBuf,
    /// The interpreter of its `#!` line.
    pub python: PathBuf,
    /// The child environment.
    pub env: Vec<(OsString, OsString)>,
}

/// A started zygote, before it is ready.
#[derive(Debug)]
pub struct Starting {
    /// Its pid.
    pub pid: i32,
    handle: ProcHandle,
    ctl: UnixDatagram,
    output: [OwnedFd; 2],
}

/// The control socket pair: `SOCK_SEQPACKET` where `AF_UNIX` has it,
/// `SOCK_DGRAM` on macOS (module docs); close-on-exec, the worker's end
/// non-blocking.
fn control_pair() -> Result<(OwnedFd, OwnedFd), String> {
    #[cfg(target_os = "linux")]
    let (mine, theirs) = socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
    )
    .map_err(|e| format!("socketpair: {e}"))?;
    #[cfg(target_os = "macos")]
    let (mine, theirs) = {
        let (a, b) = socketpair(
            AddressFamily::Unix,
            SockType::Datagram,
            None,
            SockFlag::empty(),
        )
        .map_err(|e| format!("socketpair: {e}"))?;
        for fd in [&a, &b] {
            use nix::fcntl::{FcntlArg, FdFlag, fcntl};
            use nix::sys::socket::{setsockopt, sockopt};
            fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).map_err(|e| format!("fcntl: {e}"))?;
            // An AF_UNIX datagram on macOS is at most the socket's buffer
            // size (net.local.dgram.maxdgram, 2 KiB by default): make room
            // for the largest request and for `hello`'s sys.path.
            let room = 2 * MAX_REQUEST.max(MAX_MESSAGE);
            setsockopt(fd, sockopt::SndBuf, &room).map_err(|e| format!("SO_SNDBUF: {e}"))?;
            setsockopt(fd, sockopt::RcvBuf, &room).map_err(|e| format!("SO_RCVBUF: {e}"))?;
        }
        set_nonblocking(a.as_fd())?;
        (a, b)
    };
    Ok((mine, theirs))
}

/// Starts a zygote (returns at once; [`Starting::ready`] waits for it).
pub fn start(recipe: &Recipe) -> Result<Starting, String> {
    let (mine, theirs) = control_pair()?;
    // The zygote's end must block.
    let theirs = set_blocking(theirs)?;
    let mut cmd = std::process::Command::new(&recipe.python);
    cmd.arg("-c").arg(SOURCE).arg(&recipe.conda);
    cmd.env_clear().envs(recipe.env.iter().map(|(k, v)| (k, v)));
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd.stdin(Stdio::from(theirs))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", recipe.python.display()))?;
    let pid = child.id() as i32;
    let handle = ProcHandle::of_child(pid)?;
    let out: OwnedFd = child
        .stdout
        .take()
        .map(Into::into)
        .ok_or("no stdout pipe")?;
    let err: OwnedFd = child
        .stderr
        .take()
        .map(Into::into)
        .ok_or("no stderr pipe")?;
    for fd in [&out, &err] {
        set_nonblocking(fd.as_fd())?;
    }
    // Reaped through its handle ([`ProcHandle::kill`]) or by the post-job
    // sweep; the std handle is not needed.
    drop(child);
    // SOCK_SEQPACKET keeps message boundaries as a datagram socket does;
    // tokio's UnixDatagram only issues send/recv/sendmsg on it.
    let ctl = UnixDatagram::from_std(std::os::unix::net::UnixDatagram::from(mine))
        .map_err(|e| format!("registering the socket: {e}"))?;
    Ok(Starting {
        pid,
        handle,
        ctl,
        output: [out, err],
    })
}

impl Starting {
    /// Waits until the zygote reports ready (or fails, or times out); on any
    /// failure the zygote is killed and reaped.
    pub async fn ready(self, recipe: &Recipe) -> Result<Zygote, String> {
        let stamp = match tokio::time::timeout(READY_TIMEOUT, self.handshake(recipe)).await {
            Ok(Ok(stamp)) => stamp,
            Ok(Err(e)) => {
                let detail = drain_text(&self.output);
                self.handle.kill().await;
                return Err(if detail.is_empty() {
                    e
                } else {
                    format!("{e}; it printed: {detail}")
                });
            }
            Err(_) => {
                self.handle.kill().await;
                return Err(format!("not ready within {READY_TIMEOUT:?}"));
            }
        };
        // conda printed something while importing: a fresh process prints
        // it on every call, a fork would not.
        let printed = drain_text(&self.output);
        if !printed.is_empty() {
            self.handle.kill().await;
            return Err(format!(
                "conda writes output when imported ({printed}); every call must see it"
            ));
        }
        Ok(Zygote {
            pid: self.pid,
            handle: self.handle,
            ctl: self.ctl,
            output: self.output,
            stamp,
            env: recipe.env.clone(),
        })
    }

    async fn handshake(&self, recipe: &Recipe) -> Result<Stamp, String> {
        let hello = next_message(&self.ctl, &self.handle).await?;
        let Some(Value::Array(path)) = hello.get("hello") else {
            return Err(failure_or(&hello, "the first message was not hello"));
        };
        let mut paths: Vec<PathBuf> = path
            .iter()
            .filter_map(Value::as_str)
            .map(PathBuf::from)
            .collect();
        paths.push(recipe.conda.clone());
        paths.push(recipe.python.clone());
        let stamp = Stamp::take(paths);
        let ready = next_message(&self.ctl, &self.handle).await?;
        if ready.get("ready") != Some(&Value::Bool(true)) {
            return Err(failure_or(&ready, "it did not report ready"));
        }
        Ok(stamp)
    }
}

/// The `failed` text of a message, else `otherwise`.
fn failure_or(msg: &Value, otherwise: &str) -> String {
    msg.get("failed")
        .and_then(Value::as_str)
        .map_or_else(|| otherwise.to_string(), str::to_string)
}

/// What the zygote printed on stdout and stderr so far (at most 300
/// characters, one line).
fn drain_text(output: &[OwnedFd; 2]) -> String {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    for fd in output {
        while let Ok(n) = nix::unistd::read(fd.as_fd(), &mut buf) {
            if n == 0 {
                break;
            }
            bytes.extend_from_slice(&buf[..n]);
        }
    }
    let text = String::from_utf8_lossy(&bytes);
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    line.chars().take(300).collect()
}

/// Receives one datagram from the zygote of `handle` and parses it as a
/// JSON object. End of file, the zygote's exit (macOS: checked every
/// [`LIVENESS_INTERVAL`]) or anything else is an error.
async fn next_message(ctl: &UnixDatagram, handle: &ProcHandle) -> Result<Value, String> {
    let mut buf = vec![0u8; MAX_MESSAGE];
    #[cfg(target_os = "linux")]
    let n = {
        let _ = handle;
        ctl.recv(&mut buf)
            .await
            .map_err(|e| format!("socket: {e}"))?
    };
    #[cfg(target_os = "macos")]
    let n = loop {
        tokio::select! {
            r = ctl.recv(&mut buf) => break r.map_err(|e| format!("socket: {e}"))?,
            _ = tokio::time::sleep(LIVENESS_INTERVAL) => {
                if !handle.alive() {
                    // A last message may have been sent just before the exit.
                    match ctl.try_recv(&mut buf) {
                        Ok(n) => break n,
                        Err(_) => return Err("the zygote exited".into()),
                    }
                }
            }
        }
    };
    if n == 0 {
        return Err("the zygote closed its socket (it exited)".into());
    }
    match serde_json::from_slice::<Value>(&buf[..n]) {
        Ok(v @ Value::Object(_)) => Ok(v),
        _ => Err("the zygote sent a message that is not a JSON object".into()),
    }
}

/// The request datagram of a job.
fn request(argv: &[String], cwd: Option<&Path>) -> Vec<u8> {
    let request = serde_json::json!({
        "argv": argv,
        "cwd": cwd.map(|c| c.to_string_lossy().into_owned()),
    });
    serde_json::to_vec(&request).unwrap_or_default()
}

/// Whether a job's request fits in one datagram the zygote accepts (the
/// socket's buffer bounds it too; a larger job runs fresh).
pub fn fits(argv: &[String], cwd: Option<&Path>) -> bool {
    let n = request(argv, cwd).len();
    n > 0 && n <= MAX_REQUEST
}

/// The descriptors a job's child receives. The worker keeps the other ends.
#[derive(Debug)]
pub struct ChildFds {
    /// stdin: `/dev/null` or a pipe's read end.
    pub stdin: OwnedFd,
    /// stdout: a pipe's write end.
    pub stdout: OwnedFd,
    /// stderr: a pipe's write end.
    pub stderr: OwnedFd,
    /// The read end of the go pipe.
    pub go: OwnedFd,
}

impl Zygote {
    /// Whether the process is still there.
    pub fn alive(&self) -> bool {
        self.handle.alive()
    }

    /// Sends one job and waits (up to [`FORK_TIMEOUT`]) for the pid of its
    /// child, which the zygote has put in its own process group. The child
    /// waits for the go byte before running conda.
    pub async fn fork(
        &self,
        argv: &[String],
        cwd: Option<&Path>,
        fds: ChildFds,
    ) -> Result<i32, String> {
        let bytes = request(argv, cwd);
        let raw = [
            fds.stdin.as_raw_fd(),
            fds.stdout.as_raw_fd(),
            fds.stderr.as_raw_fd(),
            fds.go.as_raw_fd(),
        ];
        let ctl = &self.ctl;
        ctl.async_io(Interest::WRITABLE, || {
            sendmsg::<()>(
                ctl.as_raw_fd(),
                &[IoSlice::new(&bytes)],
                &[ControlMessage::ScmRights(&raw)],
                SEND_FLAGS,
                None,
            )
            .map_err(std::io::Error::from)
        })
        .await
        .map_err(|e| format!("sending the job: {e}"))?;
        drop(fds);
        let msg = tokio::time::timeout(FORK_TIMEOUT, next_message(&self.ctl, &self.handle))
            .await
            .map_err(|_| format!("no pid within {FORK_TIMEOUT:?}"))??;
        let pid = msg
            .get("pid")
            .and_then(Value::as_i64)
            .and_then(|p| i32::try_from(p).ok())
            .filter(|p| *p > 1)
            .ok_or_else(|| failure_or(&msg, "the answer to a job was not a pid"))?;
        if parent_of(pid) != Some(self.pid) {
            return Err(format!("the reported pid {pid} is not the zygote's child"));
        }
        Ok(pid)
    }

    /// Waits for the status of the job's child. `Err` when the zygote died
    /// or answered something else; the zygote must not be used again then.
    pub async fn status(&self) -> Result<ExitStatus, String> {
        use std::os::unix::process::ExitStatusExt;
        let msg = next_message(&self.ctl, &self.handle).await?;
        msg.get("status")
            .and_then(Value::as_i64)
            .and_then(|s| i32::try_from(s).ok())
            .map(ExitStatus::from_raw)
            .ok_or_else(|| failure_or(&msg, "the answer was not an exit status"))
    }

    /// Kills the zygote and reaps it.
    pub async fn kill(self) {
        drop(self.ctl);
        drop(self.output);
        self.handle.kill().await;
    }
}

fn set_nonblocking(fd: std::os::fd::BorrowedFd<'_>) -> Result<(), String> {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    let flags = fcntl(fd, FcntlArg::F_GETFL).map_err(|e| format!("fcntl: {e}"))?;
    fcntl(
        fd,
        FcntlArg::F_SETFL(OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK),
    )
    .map_err(|e| format!("fcntl: {e}"))?;
    Ok(())
}

fn set_blocking(fd: OwnedFd) -> Result<OwnedFd, String> {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    let flags = fcntl(&fd, FcntlArg::F_GETFL).map_err(|e| format!("fcntl: {e}"))?;
    fcntl(
        &fd,
        FcntlArg::F_SETFL(OFlag::from_bits_truncate(flags) - OFlag::O_NONBLOCK),
    )
    .map_err(|e| format!("fcntl: {e}"))?;
    Ok(fd)
}
