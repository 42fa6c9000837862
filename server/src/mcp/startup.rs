//! Startup: target, workers, discovery, catalog, tools, capabilities.

use std::path::PathBuf;
use std::sync::Arc;

use super::capabilities::{self, PolicySummary};
use super::results::ResultChecker;
use super::tools::{ToolOptions, ToolSet};
use super::{Started, State, policy_of, server_config};
use crate::cli::{Cli, LogFormatArg};
use crate::worker_client::{Executor, LogFormat, WorkerConfig};

/// Errors of startup, each a sentence for the log.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// No conda to serve.
    #[error("{0}")]
    Target(String),
    /// Discovery failed.
    #[error("discovery failed: {0}")]
    Discovery(String),
    /// A generated schema is broken.
    #[error(transparent)]
    Schema(#[from] crate::schema::SchemaError),
    /// Anything else.
    #[error("{0}")]
    Other(String),
}

/// The worker configuration for target `conda_exe`.
pub fn worker_config(cli: &Cli, conda_exe: PathBuf) -> WorkerConfig {
    let mut cfg = WorkerConfig::new(conda_exe);
    if let Some(w) = &cli.worker_exe {
        cfg.worker_exe = w.clone();
    }
    cfg.python = cli.python.clone();
    cfg.socket = cli.worker_socket.clone();
    cfg.user = cli.worker_user.clone();
    cfg.log_format = match cli.log_format {
        LogFormatArg::Text => LogFormat::Text,
        LogFormatArg::Json => LogFormat::Json,
    };
    cfg
}

/// Runs the whole startup sequence.
///
/// Errors: [`StartupError`] (the server then exits with status 1 before
/// answering anything).
pub async fn start(cli: &Cli) -> Result<Started, StartupError> {
    let discovered = discover(cli).await?;
    let catalog = Arc::new(discovered.catalog);
    let policy = policy_of(cli);
    let tools = ToolSet::build(
        &catalog,
        ToolOptions {
            profile: cli.schema_profile,
            allow_exec: cli.allow_exec,
        },
    )?;
    let capabilities: Arc<str> = capabilities::render(
        &catalog,
        &discovered.target,
        &tools,
        PolicySummary {
            allow_write: policy.allow_write,
            allow_exec: policy.allow_exec,
        },
        cli.schema_profile,
    )
    .into();
    tracing::info!(
        target = %discovered.target.display(),
        conda_version = %catalog.conda_version,
        tools = tools.listed.len(),
        "conda-mcp ready"
    );
    let results = ResultChecker::new().map_err(StartupError::Other)?;
    Ok(Started {
        state: State {
            catalog,
            tools,
            policy,
            limits: cli.limits(),
            exec: discovered.exec,
            capabilities,
            results,
            info: server_config(),
        },
        discovery_lane: discovered.discovery_lane,
    })
}

/// What discovery produced.
struct Discovered {
    target: PathBuf,
    catalog: crate::catalog::Catalog,
    exec: Arc<Executor>,
    discovery_lane: Arc<Executor>,
}

async fn discover(cli: &Cli) -> Result<Discovered, StartupError> {
    let target = resolve_target(cli)?;
    let cfg = worker_config(cli, target.clone());
    let exec = Arc::new(Executor::new(cfg.clone()));
    let discovery_lane = Arc::new(Executor::new(cfg));
    if cli.worker_socket.is_some() {
        // A listening worker that is absent or refuses is a startup error,
        // not a failure of the first call.
        exec.connect()
            .await
            .map_err(|e| StartupError::Other(e.to_string()))?;
    }
    let Some(path) = &cli.dump_file else {
        return Err(StartupError::Discovery(
            "discovery is not wired yet: pass --dump-file".into(),
        ));
    };
    let bytes = std::fs::read(path)
        .map_err(|e| StartupError::Discovery(format!("{}: {e}", path.display())))?;
    let dump =
        crate::dump::Dump::from_json(&bytes).map_err(|e| StartupError::Discovery(e.to_string()))?;
    let catalog =
        crate::catalog::build(&dump).map_err(|e| StartupError::Discovery(e.to_string()))?;
    Ok(Discovered {
        target,
        catalog,
        exec,
        discovery_lane,
    })
}

fn resolve_target(cli: &Cli) -> Result<PathBuf, StartupError> {
    let candidate = cli
        .conda_exe
        .clone()
        .or_else(|| std::env::var_os("CONDA_EXE").map(PathBuf::from))
        .or_else(|| {
            std::env::var_os("PATH").and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join("conda"))
                    .find(|c| c.is_file())
            })
        });
    let Some(c) = candidate else {
        return Err(StartupError::Target(
            "no conda found: pass --conda-exe, set CONDA_EXE, or put conda on PATH".into(),
        ));
    };
    c.canonicalize()
        .map_err(|e| StartupError::Target(format!("conda executable {}: {e}", c.display())))
}
