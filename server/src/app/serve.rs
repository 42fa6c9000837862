//! The serving process's life: startup ([`crate::startup::start`]), MCP on
//! stdio until stdin closes ([`crate::transport::stdio::serve_stdio`]), shutdown of the
//! workers (nothing started survives: a running call is killed as soon as
//! stdin closes, and the workers are reaped within 1 s).

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use crate::mcp::CondaMcp;
use crate::settings::Settings;
use crate::startup;
use crate::startup::StartupError;
use crate::worker_client::Executor;

/// How long the workers get to stop after the session ended before the
/// process exits anyway.
const SHUTDOWN_WAIT: Duration = Duration::from_millis(700);

/// How long startup may take before MCP is served without waiting for it:
/// a cached startup (milliseconds) and one whose conda starts in time are
/// served as before (a failure exits before anything is answered); a conda
/// slower than this (a cold network file system, an antivirus scan) no
/// longer holds up `initialize`, which hosts bound to 30-60 s.
pub const SERVE_WITHOUT_STARTUP_AFTER: Duration = Duration::from_secs(2);

/// The lanes to shut down, once startup has made them.
type Lanes = Arc<std::sync::Mutex<Option<(Arc<Executor>, Arc<Executor>)>>>;

/// Runs the server under `settings` until stdin closes.
///
/// Errors: [`StartupError`] when startup fails: before anything was
/// answered when it fails within [`SERVE_WITHOUT_STARTUP_AFTER`], else
/// after the session (requests meanwhile fail with its reason).
pub async fn serve(settings: &Settings) -> Result<(), StartupError> {
    if let Some(http) = &settings.http {
        return super::serve_http::serve(settings, http).await;
    }
    let environment = startup::check_host(settings)?;
    let early_info = super::early_info(settings, &environment);
    let mut start = {
        let settings = settings.clone();
        tokio::spawn(async move { startup::start_checked(&settings, environment).await })
    };
    let lanes: Lanes = Arc::default();
    let joined = |r: Result<Result<startup::Started, StartupError>, tokio::task::JoinError>| {
        r.unwrap_or_else(|e| Err(StartupError::Internal(e)))
    };
    let (server, pending) = tokio::select! {
        r = &mut start => {
            let started = joined(r)?;
            *lanes.lock().unwrap_or_else(PoisonError::into_inner) =
                Some((started.state.pipeline.runner.exec.clone(), started.discovery_lane.clone()));
            (CondaMcp::new(started.state), None)
        }
        () = tokio::time::sleep(SERVE_WITHOUT_STARTUP_AFTER) => {
            tracing::info!("startup is slow: serving MCP while discovery runs");
            let (server, readiness) =
                CondaMcp::pending(early_info, settings.limits.timeout, settings.live_tools);
            let lanes = lanes.clone();
            let finish = tokio::spawn(async move {
                match joined(start.await) {
                    Ok(started) => {
                        *lanes.lock().unwrap_or_else(PoisonError::into_inner) =
                            Some((started.state.pipeline.runner.exec.clone(), started.discovery_lane.clone()));
                        readiness.ready(Arc::new(started.state));
                        Ok(())
                    }
                    Err(e) => {
                        tracing::error!("startup failed: {e}");
                        readiness.failed(e.to_string());
                        Err(e)
                    }
                }
            });
            (server, Some(finish))
        }
    };
    // When the host closes stdin, kill what runs right away: rmcp waits for
    // in-flight calls before it returns, and a call must not outlive the
    // host.
    let eof = tokio_util::sync::CancellationToken::new();
    {
        let (eof, lanes, server) = (eof.clone(), lanes.clone(), server.clone());
        tokio::spawn(async move {
            eof.cancelled().await;
            tracing::info!("stdin closed: stopping running calls");
            if let Some(state) = server.state() {
                if let Some(live) = &state.live {
                    live.closing().cancel();
                }
                state.watch.closing().cancel();
            }
            stop(&lanes).await;
        });
    }
    let max_line = crate::transport::stdio::line_limit(settings.limits.stdin_limit_bytes);
    if let Err(e) = crate::transport::stdio::serve_stdio(server, eof, max_line).await {
        tracing::info!("MCP session ended: {e}");
    }
    // stdin closed: kill whatever runs, reap the workers, go (within 1 s).
    let failed = match pending {
        Some(finish) if finish.is_finished() => finish.await.ok().and_then(Result::err),
        Some(finish) => {
            finish.abort();
            None
        }
        None => None,
    };
    if tokio::time::timeout(SHUTDOWN_WAIT, stop(&lanes))
        .await
        .is_err()
    {
        tracing::warn!("worker shutdown took too long; exiting anyway");
    }
    tracing::info!("conda-mcp exits");
    failed.map_or(Ok(()), Err)
}

/// Shuts down both lanes, when startup made them.
async fn stop(lanes: &Lanes) {
    let lanes = lanes.lock().unwrap_or_else(PoisonError::into_inner).clone();
    if let Some((exec, discovery)) = lanes {
        tokio::join!(exec.shutdown(), discovery.shutdown());
    }
}
