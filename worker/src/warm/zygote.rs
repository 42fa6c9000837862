//! One zygote process and the worker's side of its control socket.
//!
//! The worker starts `<interpreter> -c <zygote.py> <conda>` in its own
//! process group, with the child environment and the worker's working
//! directory (as a fresh conda without `cwd` gets), a `SOCK_SEQPACKET`
//! socket as stdin (one datagram per message, descriptors passed with
//! `SCM_RIGHTS` as multiprocessing's forkserver does) and pipes as stdout and
//! stderr. `zygote.py` documents the messages.

use std::ffi::OsString;
use std::io::IoSlice;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use conda_mcp_shared::guard::InProcessChecks;
use nix::sys::socket::{
    AddressFamily, ControlMessage, MsgFlags, SockFlag, SockType, sendmsg, socketpair,
};
use serde_json::Value;
use tokio::io::Interest;
use tokio::net::UnixDatagram;

use super::driver::DriverStamp;
use super::proc_handle::{ProcHandle, parent_of};
use super::stamp::Stamp;

/// The zygote's Python source, run with `python -c`: the guard
/// (`crate::guard`, whose functions a job's child calls) and then
/// `zygote.py`.
pub const SOURCE: &str = concat!(include_str!("../guard/guard.py"), include_str!("zygote.py"));

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
    /// The CUDA driver it probed, stamped at the same moment.
    pub driver: DriverStamp,
    /// The environment it was started with.
    pub env: Vec<(OsString, OsString)>,
    /// What conda's plugin manager logged while the zygote loaded the
    /// plugins (`Error while loading conda entry point: NAME (ERROR)` for
    /// a plugin that failed to load): kept by the zygote instead of
    /// printed, and printed by each job's child where a fresh conda prints
    /// it (`zygote.py`, `_load_plugins`).
    pub plugin_warnings: Vec<String>,
    /// How long the steps of its start took, in the order they ran: from
    /// the spawn to its hello (`"spawn"`: the interpreter's own start),
    /// then what the zygote reported (`"imports"`, `"plugins"`, `"probe"`,
    /// `"freeze"`; `zygote.py`); for the worker's log and
    /// docs/benchmarks.md "First call and memory at rest".
    pub phases: Vec<(String, Duration)>,
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
    /// When it was spawned.
    spawned: std::time::Instant,
    handle: ProcHandle,
    ctl: UnixDatagram,
    output: [OwnedFd; 2],
}

/// Why a zygote could not start, or answered wrongly (after which it is
/// not used again). The text is one sentence for the worker's log.
#[derive(Debug, thiserror::Error)]
pub enum ZygoteError {
    /// A system call failed: which one, and the OS error as it reported it.
    #[error("{call}: {source}")]
    Os {
        /// The call (`socketpair`, `fcntl`, `sending the job`).
        call: &'static str,
        /// The OS error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The interpreter could not be started.
    #[error("cannot start {}: {source}", python.display())]
    Spawn {
        /// The interpreter.
        python: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Something the started process must have was not there (its pid,
    /// a pipe).
    #[error("{0}")]
    Missing(&'static str),
    /// No handle could be had on the started process.
    #[error(transparent)]
    Handle(#[from] super::proc_handle::HandleError),
    /// The zygote reported a failure (its `failed` text), or its message
    /// was not the one expected there.
    #[error("{0}")]
    Reported(String),
    /// A failure while starting, with what the zygote printed (one line,
    /// at most 300 characters).
    #[error("{error}; it printed: {printed}")]
    Printed {
        /// The failure.
        error: Box<ZygoteError>,
        /// What it printed on stdout and stderr.
        printed: String,
    },
    /// No ready message within the time allowed.
    #[error("not ready within {0:?}")]
    NotReady(Duration),
    /// conda printed something when imported: a fork would hide it from
    /// every call, so conda runs fresh.
    #[error("conda writes output when imported ({0}); every call must see it")]
    ImportOutput(String),
    /// The zygote's end of the socket closed (it exited).
    #[error("the zygote closed its socket (it exited)")]
    Closed,
    /// A message that is not a JSON object.
    #[error("the zygote sent a message that is not a JSON object")]
    NotAnObject,
    /// No pid for a job within the time allowed.
    #[error("no pid within {0:?}")]
    NoPid(Duration),
    /// The pid reported for a job is not the zygote's child.
    #[error("the reported pid {0} is not the zygote's child")]
    NotChild(i32),
}

/// The [`ZygoteError::Os`] of `call`, keeping the error's own text.
fn os<E: std::error::Error + Send + Sync + 'static>(
    call: &'static str,
) -> impl FnOnce(E) -> ZygoteError {
    move |e| ZygoteError::Os {
        call,
        source: Box::new(e),
    }
}

/// The control socket pair: `SOCK_SEQPACKET` where `AF_UNIX` has it,
/// `SOCK_DGRAM` on macOS (no `SOCK_SEQPACKET` for `AF_UNIX` there), with
/// buffers that fit a request in one datagram; close-on-exec, the worker's
/// end non-blocking.
fn control_pair() -> Result<(OwnedFd, OwnedFd), ZygoteError> {
    #[cfg(target_os = "linux")]
    let pair = socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
    )
    .map_err(os("socketpair"))?;
    #[cfg(target_os = "macos")]
    let pair = {
        let (a, b) = socketpair(
            AddressFamily::Unix,
            SockType::Datagram,
            None,
            SockFlag::empty(),
        )
        .map_err(os("socketpair"))?;
        for fd in [&a, &b] {
            use nix::fcntl::{FcntlArg, FdFlag, fcntl};
            use nix::sys::socket::{setsockopt, sockopt};
            fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).map_err(os("fcntl"))?;
            // An AF_UNIX datagram on macOS is at most the socket's buffer.
            let room = 2 * MAX_REQUEST.max(MAX_MESSAGE);
            setsockopt(fd, sockopt::SndBuf, &room).map_err(os("SO_SNDBUF"))?;
            setsockopt(fd, sockopt::RcvBuf, &room).map_err(os("SO_RCVBUF"))?;
        }
        set_nonblocking(a.as_fd())?;
        (a, b)
    };
    Ok(pair)
}

/// Flags of a job's `sendmsg` (macOS has no MSG_NOSIGNAL; Rust ignores
/// SIGPIPE, so EPIPE comes back there as well).
#[cfg(target_os = "linux")]
const SEND_FLAGS: MsgFlags = MsgFlags::MSG_NOSIGNAL;
#[cfg(target_os = "macos")]
const SEND_FLAGS: MsgFlags = MsgFlags::empty();

/// How often a read on macOS's datagram socket checks the zygote lives.
#[cfg(target_os = "macos")]
pub const LIVENESS_INTERVAL: Duration = Duration::from_millis(100);

/// Starts a zygote (returns at once; [`Starting::ready`] waits for it).
pub fn start(recipe: &Recipe) -> Result<Starting, ZygoteError> {
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
    let spawned = std::time::Instant::now();
    let mut child = cmd.spawn().map_err(|source| ZygoteError::Spawn {
        python: recipe.python.clone(),
        source,
    })?;
    let pid = child.id() as i32;
    let handle = ProcHandle::of_child(pid)?;
    let out: OwnedFd = child
        .stdout
        .take()
        .map(Into::into)
        .ok_or(ZygoteError::Missing("no stdout pipe"))?;
    let err: OwnedFd = child
        .stderr
        .take()
        .map(Into::into)
        .ok_or(ZygoteError::Missing("no stderr pipe"))?;
    for fd in [&out, &err] {
        set_nonblocking(fd.as_fd())?;
    }
    // Reaped through its handle ([`ProcHandle::kill`]) or by the post-job sweep; the
    // std handle is not needed.
    drop(child);
    // SOCK_SEQPACKET keeps message boundaries as a datagram socket does;
    // tokio's UnixDatagram only issues send/recv/sendmsg on it.
    let ctl = UnixDatagram::from_std(std::os::unix::net::UnixDatagram::from(mine))
        .map_err(os("registering the socket"))?;
    Ok(Starting {
        pid,
        spawned,
        handle,
        ctl,
        output: [out, err],
    })
}

impl Starting {
    /// Waits until the zygote reports ready (or fails, or times out); on any
    /// failure the zygote is killed and reaped.
    pub async fn ready(self, recipe: &Recipe) -> Result<Zygote, ZygoteError> {
        let (stamp, driver, plugin_warnings, phases) =
            match tokio::time::timeout(READY_TIMEOUT, self.handshake(recipe)).await {
                Ok(Ok(stamps)) => stamps,
                Ok(Err(e)) => {
                    let detail = drain_text(&self.output);
                    self.handle.kill().await;
                    return Err(if detail.is_empty() {
                        e
                    } else {
                        ZygoteError::Printed {
                            error: Box::new(e),
                            printed: detail,
                        }
                    });
                }
                Err(_) => {
                    self.handle.kill().await;
                    return Err(ZygoteError::NotReady(READY_TIMEOUT));
                }
            };
        // conda printed something while importing: a fresh process prints
        // it on every call, a fork would not.
        let printed = drain_text(&self.output);
        if !printed.is_empty() {
            self.handle.kill().await;
            return Err(ZygoteError::ImportOutput(printed));
        }
        Ok(Zygote {
            pid: self.pid,
            handle: self.handle,
            ctl: self.ctl,
            output: self.output,
            stamp,
            driver,
            env: recipe.env.clone(),
            plugin_warnings,
            phases,
        })
    }

    /// The hello (stamped: import locations and the CUDA driver, before the
    /// zygote imports conda and probes), then the ready message, its
    /// plugin warnings and the phases of the start.
    async fn handshake(&self, recipe: &Recipe) -> Result<Handshake, ZygoteError> {
        let hello = next_message(&self.ctl, &self.handle).await?;
        let mut phases = vec![("spawn".to_string(), self.spawned.elapsed())];
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
        let driver = DriverStamp::take(&recipe.env);
        let ready = next_message(&self.ctl, &self.handle).await?;
        if ready.get("ready") != Some(&Value::Bool(true)) {
            return Err(failure_or(&ready, "it did not report ready"));
        }
        let warnings = ready
            .get("warnings")
            .and_then(Value::as_array)
            .map(|w| {
                w.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        phases.extend(reported_phases(&ready));
        Ok((stamp, driver, warnings, phases))
    }
}

/// What a finished handshake gives: the stamps, the plugin warnings and the
/// phases of the start.
type Handshake = (Stamp, DriverStamp, Vec<String>, Vec<(String, Duration)>);

/// The `phases` of a ready message (`[[NAME, MS], ...]`); anything else in
/// it is left out (the list is for the log only).
fn reported_phases(ready: &Value) -> Vec<(String, Duration)> {
    ready
        .get("phases")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|p| {
                    let name = p.get(0)?.as_str()?;
                    let ms = p
                        .get(1)?
                        .as_f64()
                        .filter(|ms| ms.is_finite() && *ms >= 0.0)?;
                    Some((name.to_string(), Duration::from_secs_f64(ms / 1000.0)))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The `failed` text of a message, else `otherwise`.
fn failure_or(msg: &Value, otherwise: &str) -> ZygoteError {
    ZygoteError::Reported(
        msg.get("failed")
            .and_then(Value::as_str)
            .map_or_else(|| otherwise.to_string(), str::to_string),
    )
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

/// Receives one datagram and parses it as a JSON object. End of file or
/// anything else is an error.
async fn next_message(ctl: &UnixDatagram, handle: &ProcHandle) -> Result<Value, ZygoteError> {
    let mut buf = vec![0u8; MAX_MESSAGE];
    #[cfg(target_os = "linux")]
    let n = {
        let _ = handle;
        ctl.recv(&mut buf).await.map_err(os("socket"))?
    };
    #[cfg(target_os = "macos")]
    let n = loop {
        tokio::select! {
            r = ctl.recv(&mut buf) => break r.map_err(os("socket"))?,
            _ = tokio::time::sleep(LIVENESS_INTERVAL) => {
                if !handle.alive() {
                    match ctl.try_recv(&mut buf) {
                        Ok(n) => break n,
                        Err(_) => return Err(ZygoteError::Closed),
                    }
                }
            }
        }
    };
    if n == 0 {
        return Err(ZygoteError::Closed);
    }
    match serde_json::from_slice::<Value>(&buf[..n]) {
        Ok(v @ Value::Object(_)) => Ok(v),
        _ => Err(ZygoteError::NotAnObject),
    }
}

/// What a job's child runs.
#[derive(Debug, Clone, Copy)]
pub enum JobKind<'a> {
    /// conda's script with the job's argv, under the guard when there are
    /// checks.
    Conda(Option<&'a InProcessChecks>),
    /// One of the server's helper programs: the argv after the interpreter,
    /// `-I -c SOURCE ARGS...` (zygote.py `_run_helper`).
    Helper,
}

/// The request datagram of a job.
fn request(argv: &[String], cwd: Option<&Path>, kind: JobKind<'_>) -> Vec<u8> {
    let cwd = cwd.map(|c| c.to_string_lossy().into_owned());
    let request = match kind {
        JobKind::Conda(checks) => serde_json::json!({
            "argv": argv,
            "cwd": cwd,
            "checks": checks,
        }),
        JobKind::Helper => serde_json::json!({
            "argv": argv,
            "cwd": cwd,
            "checks": null,
            "helper": true,
        }),
    };
    serde_json::to_vec(&request).unwrap_or_default()
}

/// Whether a job's request fits in one datagram the zygote accepts (the
/// socket's buffer bounds it too; a larger job runs fresh).
pub fn fits(argv: &[String], cwd: Option<&Path>, kind: JobKind<'_>) -> bool {
    let n = request(argv, cwd, kind).len();
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
    /// The write end of the guard's report pipe (exactly when the job has
    /// checks).
    pub report: Option<OwnedFd>,
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
        kind: JobKind<'_>,
        fds: ChildFds,
    ) -> Result<i32, ZygoteError> {
        let bytes = request(argv, cwd, kind);
        let mut raw = vec![
            fds.stdin.as_raw_fd(),
            fds.stdout.as_raw_fd(),
            fds.stderr.as_raw_fd(),
            fds.go.as_raw_fd(),
        ];
        raw.extend(fds.report.as_ref().map(AsRawFd::as_raw_fd));
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
        .map_err(os("sending the job"))?;
        drop(fds);
        let msg = tokio::time::timeout(FORK_TIMEOUT, next_message(&self.ctl, &self.handle))
            .await
            .map_err(|_| ZygoteError::NoPid(FORK_TIMEOUT))??;
        let pid = msg
            .get("pid")
            .and_then(Value::as_i64)
            .and_then(|p| i32::try_from(p).ok())
            .filter(|p| *p > 1)
            .ok_or_else(|| failure_or(&msg, "the answer to a job was not a pid"))?;
        if parent_of(pid) != Some(self.pid) {
            return Err(ZygoteError::NotChild(pid));
        }
        Ok(pid)
    }

    /// Waits for the status of the job's child. `Err` when the zygote died
    /// or answered something else; the zygote must not be used again then.
    pub async fn status(&self) -> Result<ExitStatus, ZygoteError> {
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

fn set_nonblocking(fd: std::os::fd::BorrowedFd<'_>) -> Result<(), ZygoteError> {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    let flags = fcntl(fd, FcntlArg::F_GETFL).map_err(os("fcntl"))?;
    fcntl(
        fd,
        FcntlArg::F_SETFL(OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK),
    )
    .map_err(os("fcntl"))?;
    Ok(())
}

fn set_blocking(fd: OwnedFd) -> Result<OwnedFd, ZygoteError> {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    let flags = fcntl(&fd, FcntlArg::F_GETFL).map_err(os("fcntl"))?;
    fcntl(
        &fd,
        FcntlArg::F_SETFL(OFlag::from_bits_truncate(flags) - OFlag::O_NONBLOCK),
    )
    .map_err(os("fcntl"))?;
    Ok(fd)
}
