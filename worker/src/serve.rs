//! Listening mode (`conda-mcp-worker serve`, issue 7): the worker runs on its
//! own, for example under a dedicated user, and servers connect to it.
//!
//! Policy: one server connection at a time. While one is connected, another
//! is **refused** at once with a `Refused` message ("another server is
//! connected"), so a second server fails fast with a clear error instead of
//! hanging. A peer whose uid (SO_PEERCRED) is not in `--allow-uid` is refused
//! and logged. A server that disconnects mid-job has its job killed; the
//! worker keeps listening.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use conda_mcp_shared::framing::write_frame;
use conda_mcp_shared::protocol::WorkerMessage;
use interprocess::local_socket::tokio::prelude::*;
use interprocess::local_socket::{GenericFilePath, ListenerOptions};
use interprocess::os::unix::local_socket::ListenerOptionsExt;
use tokio_util::sync::CancellationToken;

use crate::connection::{self, WorkerCtx};

/// Listens on `socket` until `shutdown`; see the module docs for the policy.
pub async fn serve(
    socket: &Path,
    mode: u32,
    allow: Vec<u32>,
    ctx: Arc<WorkerCtx>,
    shutdown: CancellationToken,
) -> Result<(), String> {
    let name = socket
        .to_fs_name::<GenericFilePath>()
        .map_err(|e| format!("socket path: {e}"))?;
    let listener = ListenerOptions::new()
        .name(name)
        .mode(mode)
        .try_overwrite(true)
        .create_tokio()
        .map_err(|e| format!("cannot listen on {}: {e}", socket.display()))?;
    // bind() applies the umask to the mode interprocess set; set it exactly
    // (the umask only removes bits, so the socket was never more open).
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(socket, std::fs::Permissions::from_mode(mode))
            .map_err(|e| format!("chmod {:o} {}: {e}", mode, socket.display()))?;
    }
    tracing::info!(socket = %socket.display(), mode = format!("{mode:o}"), allow_uid = ?allow, "listening");
    let busy = Arc::new(AtomicBool::new(false));
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
        let refusal = match uid {
            Some(u) if allow.contains(&u) => None,
            Some(u) => Some(format!("peer uid {u} is not allowed by this worker")),
            None => Some("peer credentials unavailable".to_string()),
        };
        if let Some(reason) = refusal {
            tracing::warn!(peer_uid = ?uid, peer_pid = ?pid, "connection refused: uid not allowed");
            connections.spawn(async move {
                let _ = write_frame(&mut writer, &WorkerMessage::Refused { reason }).await;
            });
            continue;
        }
        if busy.swap(true, Ordering::SeqCst) {
            tracing::warn!(peer_uid = ?uid, peer_pid = ?pid, "connection refused: another server is connected");
            connections.spawn(async move {
                let reason =
                    "another server is connected to this worker (one at a time)".to_string();
                let _ = write_frame(&mut writer, &WorkerMessage::Refused { reason }).await;
            });
            continue;
        }
        tracing::info!(peer_uid = ?uid, peer_pid = ?pid, "connection accepted");
        let (ctx, busy, shutdown) = (ctx.clone(), busy.clone(), shutdown.clone());
        connections.spawn(async move {
            connection::serve(reader, writer, ctx, shutdown).await;
            busy.store(false, Ordering::SeqCst);
        });
    }
    // Shutdown: connections see the token, kill their jobs and end.
    while connections.join_next().await.is_some() {}
    let _ = std::fs::remove_file(socket);
    Ok(())
}
