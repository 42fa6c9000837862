//! One server connection: handshake, then jobs one at a time.
//!
//! A reader task turns incoming frames into messages (so that reading is
//! never cancelled halfway through a frame); the loop below starts jobs,
//! forwards their events and routes `Cancel`. When the connection drops, an
//! undecodable frame arrives, or the worker is asked to shut down, the
//! running job is aborted (SIGKILL to its tree, reaped) before this returns.

use std::sync::Arc;
use std::time::Duration;

use conda_mcp_shared::framing::{FrameError, read_frame, write_frame};
use conda_mcp_shared::limits::Limits;
use conda_mcp_shared::protocol::{
    ClientMessage, JobEvent, JobId, JobRefusal, PROTOCOL_VERSION, WorkerMessage, build_id,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::job::{self, Stop};
use crate::spawn::Programs;

/// How long a new connection may take to send its `Hello`.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

/// What the worker serves with: its programs and limits.
#[derive(Debug)]
pub struct WorkerCtx {
    /// The programs it may run.
    pub programs: Programs,
    /// The limits it enforces whatever a server asks (its `--max-*`
    /// flags): every request is clamped to them.
    pub ceilings: Limits,
}

/// How a connection ended.
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    /// The handshake was refused (version or build mismatch, or no Hello).
    Refused,
    /// The peer closed the connection.
    Closed,
    /// An I/O or framing error ended it.
    Broken,
    /// The worker is shutting down.
    Shutdown,
}

/// Why a connection's handshake was refused (sent to the server as the
/// `Refused` message's reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// The server is of another build or protocol version.
    #[error(
        "protocol mismatch: the server speaks version {theirs_version} ({theirs_build}), this worker speaks version {PROTOCOL_VERSION} ({ours_build}); use a server and worker from the same build"
    )]
    Mismatch {
        /// The server's protocol version.
        theirs_version: u32,
        /// The server's build id.
        theirs_build: String,
        /// This worker's build id.
        ours_build: String,
    },
    /// The first message was not `Hello`.
    #[error("the first message must be Hello")]
    NoHello,
}

/// Checks a `Hello`: protocol version and build id must both match.
pub fn check_hello(msg: &ClientMessage) -> Result<(), HandshakeError> {
    match msg {
        ClientMessage::Hello {
            protocol_version,
            build_id: theirs,
        } => {
            let ours = build_id();
            if *protocol_version != PROTOCOL_VERSION || *theirs != ours {
                Err(HandshakeError::Mismatch {
                    theirs_version: *protocol_version,
                    theirs_build: theirs.clone(),
                    ours_build: ours,
                })
            } else {
                Ok(())
            }
        }
        _ => Err(HandshakeError::NoHello),
    }
}

/// Serves one connection until it ends; `shutdown` aborts it.
pub async fn serve<R, W>(
    mut reader: R,
    mut writer: W,
    ctx: Arc<WorkerCtx>,
    shutdown: CancellationToken,
) -> End
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin,
{
    let hello = match tokio::time::timeout(
        HELLO_TIMEOUT,
        read_frame::<_, ClientMessage>(&mut reader),
    )
    .await
    {
        Ok(Ok(m)) => m,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "connection refused: no valid Hello");
            return End::Refused;
        }
        Err(_) => {
            tracing::warn!("connection refused: no Hello within {HELLO_TIMEOUT:?}");
            return End::Refused;
        }
    };
    if let Err(reason) = check_hello(&hello) {
        tracing::warn!(reason = %reason, "handshake refused");
        let reason = reason.to_string();
        let _ = write_frame(&mut writer, &WorkerMessage::Refused { reason }).await;
        return End::Refused;
    }
    let welcome = WorkerMessage::Welcome {
        protocol_version: PROTOCOL_VERSION,
        build_id: build_id(),
        pid: std::process::id(),
    };
    if write_frame(&mut writer, &welcome).await.is_err() {
        return End::Broken;
    }
    tracing::info!("handshake accepted");

    let (in_tx, mut in_rx) = mpsc::channel::<Result<ClientMessage, FrameError>>(16);
    let reader_task = tokio::spawn(async move {
        loop {
            let m = read_frame::<_, ClientMessage>(&mut reader).await;
            let stop = m.is_err();
            if in_tx.send(m).await.is_err() || stop {
                break;
            }
        }
    });

    let (ev_tx, mut ev_rx) = mpsc::channel::<JobEvent>(64);
    let mut current: Option<(JobId, Stop, tokio::task::JoinHandle<JobEvent>)> = None;
    let end = loop {
        tokio::select! {
            msg = in_rx.recv() => match msg {
                Some(Ok(ClientMessage::Run(req))) => {
                    if current.is_some() {
                        let ev = JobEvent::Failed(JobRefusal::Busy);
                        if write_frame(&mut writer, &WorkerMessage::Event { job: req.job, event: ev }).await.is_err() {
                            break End::Broken;
                        }
                        continue;
                    }
                    let stop = Stop::default();
                    let id = req.job;
                    let (ctx2, stop2, tx) = (ctx.clone(), stop.clone(), ev_tx.clone());
                    let handle = tokio::spawn(async move {
                        job::run(*req, &ctx2.programs, &ctx2.ceilings, stop2, tx).await
                    });
                    current = Some((id, stop, handle));
                }
                Some(Ok(ClientMessage::Cancel { job })) => {
                    if let Some((id, stop, _)) = &current
                        && *id == job {
                            tracing::info!(job, "cancel requested");
                            stop.cancel.cancel();
                        }
                }
                Some(Ok(ClientMessage::WarmUp)) => {
                    if current.is_none() {
                        ctx.programs.after_job(conda_mcp_shared::protocol::Program::Conda);
                    }
                }
                Some(Ok(ClientMessage::Hello { .. })) => {
                    tracing::warn!("protocol error: a second Hello");
                    break End::Broken;
                }
                Some(Err(FrameError::Closed)) | None => break End::Closed,
                Some(Err(e)) => {
                    tracing::warn!(error = %e, "connection error");
                    break End::Broken;
                }
            },
            Some(ev) = ev_rx.recv() => {
                if let Some((id, _, _)) = &current
                    && write_frame(&mut writer, &WorkerMessage::Event { job: *id, event: ev }).await.is_err() {
                        break End::Broken;
                    }
            }
            done = async { match &mut current { Some((_, _, h)) => h.await, None => std::future::pending().await } } => {
                let Some((id, _, _)) = current.take() else { continue };
                // Events the job queued before its end go first.
                while let Ok(ev) = ev_rx.try_recv() {
                    if write_frame(&mut writer, &WorkerMessage::Event { job: id, event: ev }).await.is_err() {
                        break;
                    }
                }
                let last = done.unwrap_or_else(|e| JobEvent::Failed(JobRefusal::TaskFailed { error: e.to_string() }));
                if write_frame(&mut writer, &WorkerMessage::Event { job: id, event: last }).await.is_err() {
                    break End::Broken;
                }
            }
            _ = shutdown.cancelled() => break End::Shutdown,
        }
    };
    reader_task.abort();
    if let Some((id, stop, handle)) = current.take() {
        tracing::warn!(job = id, reason = ?end, "connection ended during a job: killing it");
        stop.abort.cancel();
        let _ = handle.await;
    }
    tracing::info!(reason = ?end, "connection ended");
    end
}
