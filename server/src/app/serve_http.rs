//! The serving process's life in the HTTP mode (`--listen`): the listener
//! is bound (and the token file read) before startup, so a wrong command
//! line fails before discovery; it serves from then on (`/readyz` says
//! `starting`) while startup runs ([`super::startup::start_checked`]);
//! HTTP until SIGTERM or SIGINT and the drain ([`crate::http::serve`]),
//! and the workers' shutdown, which kills whatever still runs.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::error::StartupError;
use super::startup;
use crate::health::Health;
use crate::http::HttpSettings;
use crate::http::ops::Ops;
use crate::metrics::Metrics;
use crate::mcp::{CondaMcp, live};
use crate::settings::Settings;
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
    let listening = crate::http::bind(http).await?;
    let stop = crate::http::serve::termination().map_err(StartupError::Runtime)?;
    let users = listening.os_users();
    check_users(&users)?;
    let environment = startup::check_host(settings)?;
    let early_info = crate::mcp::server_config(
        None,
        settings.mode,
        settings.results.mode,
        &environment.warnings,
        settings.live_tools,
        settings.policy.approve_writes,
    );
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
    let mut serving = tokio::spawn(listening.serve(server.clone(), stop, ops, workers_slot.clone()));
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
    let exec = started.state.runner.exec.clone();
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
    started.state.runner.workers = workers.clone();
    started.state.metrics = metrics;
    readiness.ready(Arc::new(started.state));
    health.ready((*exec).clone());
    let live = server
        .state()
        .and_then(|s| s.live.as_ref().map(live::LiveTools::closing));
    let _ = serving.await;
    if let Some(live) = live {
        live.cancel();
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

/// Principals mapped to OS users need the server to run as root (their
/// workers change user like `--worker-user`) and each user's home to be
/// usable by conda (the `--worker-user` rules, `host_env::check_worker_home`).
///
/// Errors: [`StartupError::WorkerHome`] naming the user and why.
pub(crate) fn check_users(users: &[String]) -> Result<(), StartupError> {
    if users.is_empty() {
        return Ok(());
    }
    if !nix::unistd::Uid::effective().is_root() {
        return Err(StartupError::WorkerHome(
            "the --auth-tokens file or the --user-map maps principals to OS users, which needs \
             the server to run as root (each user's worker changes to that user, as with \
             --worker-user)"
                .into(),
        ));
    }
    for user in users {
        crate::host_env::check_worker_home(user, None).map_err(|e| {
            StartupError::WorkerHome(format!(
                "the --auth-tokens file or the --user-map maps a principal to OS user {user}, \
                 which cannot run conda: {e}"
            ))
        })?;
    }
    Ok(())
}
