//! The serving process's life in the HTTP mode (`--listen`): the listener
//! is bound (and the token file read) before startup, so a wrong command
//! line fails before discovery; it serves from then on (`/readyz` says
//! `starting`) while startup runs ([`crate::startup::start_checked`]);
//! HTTP until SIGTERM or SIGINT and the drain ([`crate::transport::http::serve`]),
//! and the workers' shutdown, which kills whatever still runs.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::health::Health;
use crate::mcp::{CondaMcp, live};
use crate::metrics::Metrics;
use crate::settings::Settings;
use crate::startup;
use crate::startup::StartupError;
use crate::transport::http::HttpSettings;
use crate::transport::http::ops::Ops;
use crate::worker_client::Workers;

/// How long the workers get to stop after the drain before the process
/// exits anyway.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(2);

/// Runs the server under `settings` over HTTP until SIGTERM or SIGINT.
/// The listener serves from the start (`/healthz`, `/readyz` saying
/// `starting`, `initialize`; other MCP requests wait for startup, as on
/// stdio); a startup that fails ends the process with its error.
///
/// Errors: [`StartupError`] when startup fails.
pub async fn serve(settings: &Settings, http: &HttpSettings) -> Result<(), StartupError> {
    let listening = crate::transport::http::bind(http).await?;
    let stop = crate::transport::http::serve::termination().map_err(StartupError::Runtime)?;
    let users = listening.os_users();
    startup::check_users(&users)?;
    let environment = startup::check_host(settings)?;
    let early_info = super::early_info(settings, &environment);
    let (server, readiness) =
        CondaMcp::pending(early_info, settings.limits.timeout, settings.live_tools);
    let health = Health::new();
    let metrics = Arc::new(Metrics::new(settings.metrics_principals));
    let ops = Arc::new(Ops {
        health: health.clone(),
        metrics: metrics.clone(),
        server: server.clone(),
    });
    let workers_slot: Arc<OnceLock<Arc<Workers>>> = Arc::default();
    let mut serving =
        tokio::spawn(listening.serve(server.clone(), stop, ops, workers_slot.clone()));
    let started = tokio::select! {
        r = startup::start_checked(settings, environment) => r,
        _ = &mut serving => {
            // Stopped (SIGTERM) before startup finished.
            tracing::info!("conda-mcp exits");
            return Ok(());
        }
    };
    let mut started = match started {
        Ok(s) => s,
        Err(e) => {
            health.failed();
            readiness.failed(e.to_string());
            serving.abort();
            return Err(e);
        }
    };
    let discovery_lane = started.discovery_lane.clone();
    let exec = started.state.pipeline.runner.exec.clone();
    let workers = (!users.is_empty()).then(|| {
        let pool = Workers::new(
            exec.config().clone(),
            http.worker_idle_timeout,
            http.max_workers,
        );
        pool.spawn_reaper();
        pool
    });
    if let Some(w) = &workers {
        let _ = workers_slot.set(w.clone());
    }
    started.state.pipeline.runner.workers = workers.clone();
    // Each mapped OS user's own forced keys, for the operator (in the
    // background: a helper run per user must not hold up serving).
    if !users.is_empty() {
        let base = exec.config().clone();
        let timeout = settings.limits.timeout;
        let users = users.clone();
        tokio::spawn(async move {
            for user in users {
                match crate::discovery::config::forced_for_user(&base, &user, timeout).await {
                    Ok(forced) => {
                        tracing::info!(os_user = %user, forced = %forced.describe(), "conda's forced keys for this OS user");
                        if let Some(k) = forced.dry_run_defeated() {
                            tracing::warn!(os_user = %user, "conda would not honour --dry-run for this OS user (`{}` is marked final in {}): that user's previews and dry runs are refused with dry_run_not_honoured", k.key, k.place());
                        }
                    }
                    Err(e) => {
                        tracing::warn!(os_user = %user, "could not read conda's forced keys for this OS user: {e}")
                    }
                }
            }
        });
    }
    started.state.pipeline.metrics = metrics;
    readiness.ready(Arc::new(started.state));
    health.ready((*exec).clone());
    let live = server
        .state()
        .and_then(|s| s.live.as_ref().map(live::LiveTools::closing));
    let watch = server.state().map(|s| s.watch.closing());
    let _ = serving.await;
    if let Some(live) = live {
        live.cancel();
    }
    if let Some(watch) = watch {
        watch.cancel();
    }
    let shutdown = async {
        let users = async {
            if let Some(w) = &workers {
                w.shutdown().await;
            }
        };
        tokio::join!(exec.shutdown(), discovery_lane.shutdown(), users);
    };
    if tokio::time::timeout(SHUTDOWN_WAIT, shutdown).await.is_err() {
        tracing::warn!("worker shutdown took too long; exiting anyway");
    }
    tracing::info!("conda-mcp exits");
    Ok(())
}
