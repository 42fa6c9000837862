//! Listening mode (`conda-mcp-worker serve`): the worker runs on its
//! own, for example under a dedicated user, and servers connect to it.
//!
//! Policy: one server at a time. While a server process is connected, a
//! connection from another process is **refused** at once with a `Refused`
//! message ("another server is connected"), so a second server fails fast
//! with a clear error instead of hanging. The connected server itself may
//! open more connections (the peer pid is the same, SO_PEERCRED): conda-mcp
//! keeps two lanes, one for conda calls and one for discovery helpers, just
//! as it would spawn two workers; each connection runs one job at a time. A peer whose uid (SO_PEERCRED) is not in `--allow-uid` is refused
//! and logged. A server that disconnects mid-job has its job killed; the
//! worker keeps listening.

use std::path::Path;
use std::sync::Arc;
use std::sync::{Mutex, PoisonError};

use conda_mcp_shared::framing::write_frame;
use conda_mcp_shared::protocol::WorkerMessage;
use interprocess::local_socket::tokio::prelude::*;
use interprocess::local_socket::{GenericFilePath, ListenerOptions};
use interprocess::os::unix::local_socket::ListenerOptionsExt;
use tokio_util::sync::CancellationToken;

use crate::connection::{self, WorkerCtx};
use crate::error::WorkerError;

/// Listens on `socket` until `shutdown`; see the module docs for the policy.
pub async fn serve(
    socket: &Path,
    mode: u32,
    allow: Vec<u32>,
    ctx: Arc<WorkerCtx>,
    shutdown: CancellationToken,
) -> Result<(), WorkerError> {
    let name = socket
        .to_fs_name::<GenericFilePath>()
        .map_err(WorkerError::SocketPath)?;
    // mode_t is 16 bits on macOS; `mode` is at most 0o777 (cli::parse_mode).
    #[cfg(target_os = "macos")]
    let socket_mode = u16::try_from(mode).unwrap_or(0o600);
    #[cfg(not(target_os = "macos"))]
    let socket_mode = mode;
    let listener = ListenerOptions::new()
        .name(name)
        .mode(socket_mode)
        .try_overwrite(true)
        .create_tokio()
        .map_err(|source| WorkerError::Listen {
            socket: socket.to_path_buf(),
            source,
        })?;
    // bind() applies the umask to the mode interprocess set; set it exactly
    // (the umask only removes bits, so the socket was never more open).
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(socket, std::fs::Permissions::from_mode(mode)).map_err(
            |source| WorkerError::SocketMode {
                mode,
                socket: socket.to_path_buf(),
                source,
            },
        )?;
    }
    tracing::info!(socket = %socket.display(), mode = format!("{mode:o}"), allow_uid = ?allow, "listening");
    // The connected server: its pid and how many connections it holds.
    let active: Arc<Mutex<Option<(i32, usize)>>> = Arc::new(Mutex::new(None));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let stream = tokio::select! {
            s = listener.accept() => s,
            _ = shutdown.cancelled() => break,
            Some(_) = connections.join_next() => continue,
        };
        let stream = match stream {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                continue;
            }
        };
        let creds = stream.peer_creds();
        let uid = creds.as_ref().ok().and_then(|c| c.euid());
        let pid = creds.as_ref().ok().and_then(|c| c.pid());
        let (reader, mut writer) = conda_mcp_shared::framing::share(stream);
        // For the log: the number, or "unknown".
        let (uid_text, pid_text) = (show(uid), show(pid));
        let refusal = match uid {
            Some(u) if allow.contains(&u) => None,
            Some(u) => Some(format!("peer uid {u} is not allowed by this worker")),
            None => Some("peer credentials unavailable".to_string()),
        };
        if let Some(reason) = refusal {
            tracing::warn!(peer_uid = %uid_text, peer_pid = %pid_text, "connection refused: uid not allowed");
            connections.spawn(async move {
                let _ = write_frame(&mut writer, &WorkerMessage::Refused { reason }).await;
            });
            continue;
        }
        let admitted = {
            let mut a = active.lock().unwrap_or_else(PoisonError::into_inner);
            match (*a, pid) {
                (None, Some(p)) => {
                    *a = Some((p, 1));
                    true
                }
                (Some((p, n)), Some(q)) if p == q => {
                    *a = Some((p, n + 1));
                    true
                }
                _ => false,
            }
        };
        if !admitted {
            tracing::warn!(peer_uid = %uid_text, peer_pid = %pid_text, "connection refused: another server is connected");
            connections.spawn(async move {
                let reason =
                    "another server is connected to this worker (one at a time)".to_string();
                let _ = write_frame(&mut writer, &WorkerMessage::Refused { reason }).await;
            });
            continue;
        }
        tracing::info!(peer_uid = %uid_text, peer_pid = %pid_text, "connection accepted");
        let (ctx, active, shutdown) = (ctx.clone(), active.clone(), shutdown.clone());
        connections.spawn(async move {
            connection::serve(reader, writer, ctx, shutdown).await;
            let mut a = active.lock().unwrap_or_else(PoisonError::into_inner);
            *a = match *a {
                Some((p, n)) if n > 1 => Some((p, n - 1)),
                _ => None,
            };
        });
    }
    // Shutdown: connections see the token, kill their jobs and end.
    while connections.join_next().await.is_some() {}
    let _ = std::fs::remove_file(socket);
    Ok(())
}

/// An optional id for a log line: the number or `unknown`.
fn show<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "unknown".to_string(), |v| v.to_string())
}
