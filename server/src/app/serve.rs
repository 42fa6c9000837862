//! The serving process's life: startup ([`super::startup::start`]), MCP on
//! stdio until stdin closes ([`crate::mcp::serve_stdio`]), shutdown of the
//! workers (nothing started survives: a running call is killed as soon as
//! stdin closes, and the workers are reaped within 1 s).

use std::time::Duration;

use super::error::StartupError;
use super::startup;
use crate::mcp::{self, CondaMcp, live};
use crate::settings::Settings;

/// How long the workers get to stop after the session ended before the
/// process exits anyway.
const SHUTDOWN_WAIT: Duration = Duration::from_millis(700);

/// Runs the server under `settings` until stdin closes.
///
/// Errors: [`StartupError`] when startup fails (nothing was answered); a
/// session that ends for any reason after startup is `Ok`.
pub async fn serve(settings: &Settings) -> Result<(), StartupError> {
    if let Some(http) = &settings.http {
        return super::serve_http::serve(settings, http).await;
    }
    let started = startup::start(settings).await?;
    let discovery_lane = started.discovery_lane.clone();
    let exec = started.state.runner.exec.clone();
    let server = CondaMcp::new(started.state);
    // When the host closes stdin, kill what runs right away: rmcp waits for
    // in-flight calls before it returns, and a call must not outlive the
    // host.
    let eof = tokio_util::sync::CancellationToken::new();
    {
        let (eof, exec, lane) = (eof.clone(), exec.clone(), discovery_lane.clone());
        let live = server.state().live.as_ref().map(live::LiveTools::closing);
        tokio::spawn(async move {
            eof.cancelled().await;
            tracing::info!("stdin closed: stopping running calls");
            if let Some(live) = live {
                live.cancel();
            }
            tokio::join!(exec.shutdown(), lane.shutdown());
        });
    }
    let max_line = mcp::stdio::line_limit(settings.limits.stdin_limit_bytes);
    if let Err(e) = mcp::serve_stdio(server, eof, max_line).await {
        tracing::info!("MCP session ended: {e}");
    }
    // stdin closed: kill whatever runs, reap the workers, go (within 1 s).
    let shutdown = async {
        tokio::join!(exec.shutdown(), discovery_lane.shutdown());
    };
    if tokio::time::timeout(SHUTDOWN_WAIT, shutdown).await.is_err() {
        tracing::warn!("worker shutdown took too long; exiting anyway");
    }
    tracing::info!("conda-mcp exits");
    Ok(())
}
