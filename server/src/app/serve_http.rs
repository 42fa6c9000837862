//! The serving process's life in the HTTP mode (`--listen`): the listener
//! is bound (and the token file read) before startup, so a wrong command
//! line fails before discovery; then startup ([`super::startup::start`]),
//! HTTP until SIGTERM or SIGINT and the drain ([`crate::http::serve`]),
//! and the workers' shutdown, which kills whatever still runs.

use std::time::Duration;

use super::error::StartupError;
use super::startup;
use crate::http::HttpSettings;
use crate::mcp::{CondaMcp, live};
use crate::settings::Settings;
use crate::worker_client::Workers;

/// How long the workers get to stop after the drain before the process
/// exits anyway.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(2);

/// Runs the server under `settings` over HTTP until SIGTERM or SIGINT.
///
/// Errors: [`StartupError`] when startup fails (nothing was served).
pub async fn serve(settings: &Settings, http: &HttpSettings) -> Result<(), StartupError> {
    let listening = crate::http::bind(http).await?;
    let stop = crate::http::serve::termination().map_err(StartupError::Runtime)?;
    let users = listening.os_users();
    check_users(&users)?;
    let mut started = startup::start(settings).await?;
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
    started.state.runner.workers = workers.clone();
    let server = CondaMcp::new(started.state);
    let live = server
        .state()
        .and_then(|s| s.live.as_ref().map(live::LiveTools::closing));
    listening.serve(server, stop).await;
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
