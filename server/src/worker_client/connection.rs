//! One live worker: the spawned process (if we spawned it), the socket, the
//! handshake and a reader task turning frames into messages.
//!
//! Spawn mode: the server creates a fresh private directory (mode 0700),
//! listens on `worker.sock` inside it (mode 0600), starts the worker with
//! `--socket` pointing there and stdin `/dev/null`, stdout `/dev/null` (the
//! server's stdout is the MCP stream) and stderr inherited (the worker's log
//! lines join the server's), and accepts exactly one connection whose peer
//! (SO_PEERCRED) is that very child process. Socket mode: connect to the
//! listening worker's path.
//!
//! Windows: the socket is a named pipe `\\.\pipe\conda-mcp-<pid>-<uuid>`
//! that only the server's user may open (`conda_mcp_shared::private_pipe`);
//! the accepted client must be the spawned worker's pid
//! (`GetNamedPipeClientProcessId`), and the listener is closed after it,
//! so no second client can open the pipe.

use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use conda_mcp_shared::framing::{FrameError, SharedStream, read_frame, share, write_frame};
use conda_mcp_shared::protocol::{ClientMessage, PROTOCOL_VERSION, WorkerMessage, build_id};
use interprocess::local_socket::GenericFilePath;
use interprocess::local_socket::tokio::Stream;
use interprocess::local_socket::tokio::prelude::*;
use tokio::sync::{mpsc, oneshot, watch};

use super::{ExecError, WorkerConfig};

/// How long a spawned worker may take to connect, and a worker to answer
/// the handshake.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long [`Connection::close`] waits for a spawned worker to exit after
/// its socket closed before SIGKILLing it (the server must be gone within
/// 1 s of its stdin closing).
pub const EXIT_WAIT: Duration = Duration::from_millis(500);

/// A handshaken connection to a worker.
#[derive(Debug)]
pub struct Connection {
    writer: SharedStream<Stream>,
    /// Messages from the worker; closed when the connection ends.
    pub events: mpsc::Receiver<WorkerMessage>,
    reader: tokio::task::JoinHandle<()>,
    /// Why the reader stopped, once it has.
    end_reason: Arc<Mutex<Option<String>>>,
    /// The spawned worker (spawn mode), reaped as soon as it exits.
    child: Option<Reaped>,
    /// The worker's pid (from its Welcome).
    pub worker_pid: u32,
    _dir: Option<tempfile::TempDir>,
}

impl Connection {
    /// Spawns or connects according to `cfg`, then handshakes.
    pub async fn open(cfg: &WorkerConfig) -> Result<Connection, ExecError> {
        match &cfg.socket {
            Some(path) => Self::connect(path).await,
            None => Self::spawn(cfg).await,
        }
    }

    async fn connect(path: &std::path::Path) -> Result<Connection, ExecError> {
        let unavailable = |e: &dyn std::fmt::Display| {
            ExecError::WorkerUnavailable(format!("worker socket {}: {e}", path.display()))
        };
        let name = path
            .to_fs_name::<GenericFilePath>()
            .map_err(|e| unavailable(&e))?;
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, Stream::connect(name))
            .await
            .map_err(|_| unavailable(&"no answer"))?
            .map_err(|e| unavailable(&e))?;
        Self::handshake(stream, None, None).await
    }

    async fn spawn(cfg: &WorkerConfig) -> Result<Connection, ExecError> {
        let io =
            |what: &str, e: std::io::Error| ExecError::WorkerUnavailable(format!("{what}: {e}"));
        let (listener, path, dir) = listen_private()?;
        let mut cmd = tokio::process::Command::new(&cfg.worker_exe);
        cmd.arg("--socket")
            .arg(&path)
            .arg("--conda-exe")
            .arg(&cfg.conda_exe)
            .arg("--log-format")
            .arg(cfg.log_format.as_str());
        if let Some(py) = &cfg.python {
            cmd.arg("--python").arg(py);
        }
        if let Some(user) = &cfg.user {
            cmd.arg("--user").arg(user);
        }
        if !cfg.warm_conda {
            cmd.arg("--no-warm-conda");
        }
        if let Some(home) = &cfg.home {
            cmd.arg("--home").arg(home);
        }
        for pattern in &cfg.pass_env {
            cmd.arg("--pass-env").arg(pattern);
        }
        if let Some(filter) = &cfg.log_filter {
            cmd.env("RUST_LOG", filter);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(false);
        let mut child = cmd
            .spawn()
            .map_err(|e| io(&format!("starting {}", cfg.worker_exe.display()), e))?;
        let child_pid = child.id();
        let accepted = tokio::select! {
            s = listener.accept() => s.map_err(|e| io("accepting the worker's connection", e)),
            status = child.wait() => Err(ExecError::WorkerUnavailable(format!(
                "the worker exited before connecting ({})",
                status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string())
            ))),
            _ = tokio::time::sleep(CONNECT_TIMEOUT) => Err(ExecError::WorkerUnavailable(
                format!("the worker did not connect within {CONNECT_TIMEOUT:?}")
            )),
        };
        let stream = match accepted {
            Ok(s) => s,
            Err(e) => {
                kill_and_reap(&mut child).await;
                return Err(e);
            }
        };
        drop(listener);
        // The peer must be the process we just started, running as us.
        if !is_spawned_worker(&stream, child_pid) {
            kill_and_reap(&mut child).await;
            return Err(ExecError::WorkerUnavailable(
                "a process other than the spawned worker connected to the private socket".into(),
            ));
        }
        Self::handshake(stream, Some(child), dir).await
    }

    async fn handshake(
        stream: Stream,
        mut child: Option<tokio::process::Child>,
        dir: Option<tempfile::TempDir>,
    ) -> Result<Connection, ExecError> {
        let (mut reader, mut writer) = share(stream);
        let hello = ClientMessage::Hello {
            protocol_version: PROTOCOL_VERSION,
            build_id: build_id(),
        };
        let answer = async {
            write_frame(&mut writer, &hello).await?;
            read_frame::<_, WorkerMessage>(&mut reader).await
        };
        let answer = tokio::time::timeout(CONNECT_TIMEOUT, answer).await;
        let result = match answer {
            Err(_) => Err(ExecError::WorkerUnavailable(format!(
                "no handshake answer within {CONNECT_TIMEOUT:?}"
            ))),
            Ok(Err(e)) => Err(ExecError::WorkerUnavailable(format!("handshake: {e}"))),
            Ok(Ok(WorkerMessage::Refused { reason })) => Err(ExecError::HandshakeRefused(reason)),
            Ok(Ok(WorkerMessage::Welcome {
                protocol_version,
                build_id: theirs,
                pid,
            })) => {
                if protocol_version == PROTOCOL_VERSION && theirs == build_id() {
                    Ok(pid)
                } else {
                    Err(ExecError::HandshakeRefused(format!(
                        "the worker speaks protocol {protocol_version} ({theirs}), this server {PROTOCOL_VERSION} ({}); use binaries from the same build",
                        build_id()
                    )))
                }
            }
            Ok(Ok(other)) => Err(ExecError::WorkerUnavailable(format!(
                "unexpected handshake answer: {other:?}"
            ))),
        };
        let worker_pid = match result {
            Ok(pid) => pid,
            Err(e) => {
                drop((reader, writer));
                if let Some(c) = &mut child {
                    kill_and_reap(c).await;
                }
                return Err(e);
            }
        };
        let (tx, events) = mpsc::channel(64);
        let end_reason = Arc::new(Mutex::new(None));
        let end = end_reason.clone();
        let reader_task = tokio::spawn(async move {
            loop {
                match read_frame::<_, WorkerMessage>(&mut reader).await {
                    Ok(m) => {
                        if tx.send(m).await.is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        *end.lock().unwrap_or_else(PoisonError::into_inner) = Some(e.to_string());
                        break;
                    }
                }
            }
        });
        Ok(Connection {
            writer,
            events,
            reader: reader_task,
            end_reason,
            child: child.map(Reaped::watch),
            worker_pid,
            _dir: dir,
        })
    }

    /// Sends one message to the worker.
    ///
    /// Errors: the frame could not be written (the connection is broken).
    pub async fn send(&mut self, msg: &ClientMessage) -> Result<(), FrameError> {
        write_frame(&mut self.writer, msg).await
    }

    /// Whether the connection (and a spawned worker) still looks alive.
    pub fn is_alive(&mut self) -> bool {
        if self.reader.is_finished() {
            return false;
        }
        self.child.as_ref().is_none_or(Reaped::is_running)
    }

    /// Describes why the connection ended: the worker's exit status (spawn
    /// mode) or the read error.
    pub async fn death_reason(&mut self) -> String {
        if let Some(c) = &mut self.child
            && let Some(status) = c.exited_within(Duration::from_millis(500)).await
        {
            return format!("worker exited: {status}");
        }
        self.end_reason
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .unwrap_or_else(|| "connection closed".into())
    }

    /// Closes the socket (a spawned worker then kills its running job and
    /// exits), waits up to [`EXIT_WAIT`] for a spawned worker, then SIGKILLs
    /// and reaps it.
    pub async fn close(mut self) {
        self.reader.abort();
        let _ = (&mut self.reader).await;
        let child = self.child.take();
        drop(self);
        if let Some(mut c) = child
            && c.exited_within(EXIT_WAIT).await.is_none()
        {
            c.kill();
            let _ = c.exited_within(Duration::from_secs(2)).await;
        }
    }
}

impl Drop for Connection {
    /// A connection dropped without [`Connection::close`] (its executor
    /// went away) still ends: the reader task, which holds the socket's
    /// read half, is stopped, so the socket closes and the worker exits
    /// (and is reaped) instead of running detached until the server exits.
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// A spawned worker owned by a task that waits for it, so that it is
/// reaped the moment it exits: a worker that dies (is killed, crashes)
/// while no call runs must not stay a zombie until the next call notices.
/// The task also kills it on request; dropping this without [`Reaped::kill`]
/// leaves the worker running (it exits by itself when its socket closes)
/// and still reaps it.
#[derive(Debug)]
struct Reaped {
    /// The exit status once reaped (`None` while it runs).
    status: watch::Receiver<Option<String>>,
    /// Asks the task to SIGKILL the worker.
    kill: Option<oneshot::Sender<()>>,
}

impl Reaped {
    fn watch(mut child: tokio::process::Child) -> Reaped {
        let (kill, mut kill_rx) = oneshot::channel::<()>();
        let (status_tx, status) = watch::channel(None);
        tokio::spawn(async move {
            let status = tokio::select! {
                s = child.wait() => s,
                // A dropped sender (the connection went away without a
                // kill) disables this branch; the wait goes on.
                Ok(()) = &mut kill_rx => {
                    let _ = child.start_kill();
                    child.wait().await
                }
            };
            let text = status.map_or_else(|e| e.to_string(), |s| s.to_string());
            let _ = status_tx.send(Some(text));
        });
        Reaped {
            status,
            kill: Some(kill),
        }
    }

    /// Whether the worker has not been reaped yet.
    fn is_running(&self) -> bool {
        self.status.borrow().is_none()
    }

    /// The exit status, waiting up to `within` for it.
    async fn exited_within(&mut self, within: Duration) -> Option<String> {
        tokio::time::timeout(within, self.status.wait_for(Option::is_some))
            .await
            .ok()?
            .ok()
            .and_then(|s| s.clone())
    }

    /// SIGKILLs the worker (through its task, which then reaps it).
    fn kill(&mut self) {
        if let Some(k) = self.kill.take() {
            let _ = k.send(());
        }
    }
}

async fn kill_and_reap(child: &mut tokio::process::Child) {
    let _ = child.start_kill();
    let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
}

/// Unix: a socket of mode 0600 in a fresh private 0700 directory (module
/// docs); returns the listener, the path the worker gets as `--socket`,
/// and the directory (removed when dropped).
#[cfg(unix)]
fn listen_private() -> Result<
    (
        interprocess::local_socket::tokio::Listener,
        std::path::PathBuf,
        Option<tempfile::TempDir>,
    ),
    ExecError,
> {
    use interprocess::local_socket::ListenerOptions;
    use interprocess::os::unix::local_socket::ListenerOptionsExt;
    use std::os::unix::fs::PermissionsExt;
    let io = |what: &str, e: std::io::Error| ExecError::WorkerUnavailable(format!("{what}: {e}"));
    let dir = tempfile::Builder::new()
        .prefix("conda-mcp-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .map_err(|e| io("creating the private socket directory", e))?;
    let path = dir.path().join("worker.sock");
    let name = path
        .as_path()
        .to_fs_name::<GenericFilePath>()
        .map_err(|e| io("socket path", e))?;
    let listener = ListenerOptions::new()
        .name(name)
        .mode(0o600)
        .create_tokio()
        .map_err(|e| io("listening on the worker socket", e))?;
    Ok((listener, path, Some(dir)))
}

/// Windows: a named pipe only this user may open, with a name nobody can
/// guess ahead (module docs); returns the listener and the pipe's path,
/// the worker's `--socket`.
#[cfg(windows)]
fn listen_private() -> Result<
    (
        interprocess::local_socket::tokio::Listener,
        std::path::PathBuf,
        Option<tempfile::TempDir>,
    ),
    ExecError,
> {
    let name = format!(
        "conda-mcp-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    );
    let listener = conda_mcp_shared::private_pipe::listen(&name)
        .map_err(|e| ExecError::WorkerUnavailable(format!("listening on the worker pipe: {e}")))?;
    Ok((listener, format!(r"\\.\pipe\{name}").into(), None))
}

/// Whether the accepted peer is the worker just spawned (`child_pid`),
/// running as the server's own user (Unix: SO_PEERCRED pid and uid).
#[cfg(unix)]
fn is_spawned_worker(stream: &Stream, child_pid: Option<u32>) -> bool {
    let creds = stream.peer_creds().ok();
    let peer_pid = creds
        .and_then(|c| c.pid())
        .and_then(|p| u32::try_from(p).ok());
    let peer_uid = creds.and_then(|c| c.euid());
    peer_pid == child_pid && peer_uid == Some(nix::unistd::Uid::effective().as_raw())
}

/// Whether the accepted peer is the worker just spawned (Windows: the
/// pipe client's pid; only this user can open the pipe at all).
#[cfg(windows)]
fn is_spawned_worker(stream: &Stream, child_pid: Option<u32>) -> bool {
    let peer_pid = stream.peer_creds().ok().and_then(|c| c.pid());
    peer_pid.is_some() && peer_pid == child_pid
}
