//! Startup: target, workers, discovery, catalog, tools, capabilities.

use std::path::PathBuf;
use std::sync::Arc;

use super::capabilities::{self, PolicySummary};
use super::live::{LiveTools, Served, Surface};
use super::results::Results;
use super::tools::{ToolOptions, ToolSet};
use super::{Started, State, policy_of, server_config};
use crate::call::Runner;
use crate::cli::{Cli, LogFormatArg};
use crate::discovery::DiscoveryOptions;
use crate::discovery::restart::RestartWatch;
use crate::host_env;
use crate::worker_client::{Executor, LogFormat, WorkerConfig};
use conda_mcp_shared::env::FIXED_CWD;

/// Errors of startup, each a sentence for the log.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// Discovery failed.
    #[error("discovery failed: {0}")]
    Discovery(String),
    /// A startup option does not fit the conda found (a `--tools` entry
    /// that matches no tool): a usage error, exit status 2.
    #[error("{0}")]
    Usage(String),
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
    cfg.warm_conda = !cli.no_warm_conda;
    cfg.home = cli.worker_home.clone();
    cfg.pass_env = cli.pass_env.clone();
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
    let environment = check_host(cli)?;
    let discovered = discover(cli).await?;
    let catalog = Arc::new(discovered.discovery.catalog.clone());
    let policy = policy_of(cli);
    let filter = cli.tool_filter();
    filter
        .check(&super::tools::universe(&catalog))
        .map_err(StartupError::Usage)?;
    let options = ToolOptions {
        profile: cli.schema_profile,
        policy,
        filter,
        mode: cli.tool_mode,
        confirm: !cli.no_confirm,
    };
    let tools = ToolSet::build(&catalog, &options)?;
    let capabilities: Arc<str> = capabilities::render(
        &catalog,
        &discovered.target,
        &tools,
        PolicySummary {
            allow_write: policy.allow_write,
            allow_exec: policy.allow_exec,
        },
        cli.schema_profile,
        environment.summary.clone(),
        cli.tool_mode,
    )
    .into();
    tracing::info!(
        target = %discovered.target.display(),
        conda_version = %catalog.conda_version,
        tools = tools.listed.len(),
        "conda-mcp ready"
    );
    let info = server_config(
        &tools.shared_help,
        cli.tool_mode,
        &environment.warnings,
        cli.live_tools,
    );
    let results = Results::new()
        .map_err(StartupError::Other)?
        .with_live_tools(cli.live_tools);
    Ok(Started {
        state: State {
            surface: Served::new(Surface {
                catalog,
                tools,
                capabilities,
            }),
            live: cli
                .live_tools
                .then(|| LiveTools::new(options, discovered.target.clone(), environment.summary)),
            policy,
            profile: cli.schema_profile,
            limits: cli.limits(),
            typed: crate::typed::Settings {
                confirm: !cli.no_confirm,
                limits: cli.limits(),
            },
            runner: Runner {
                exec: discovered.exec,
                discovery: discovered.discovery_lane.clone(),
                restart: RestartWatch::new(
                    discovered.options,
                    &discovered.discovery,
                    cli.live_tools,
                ),
                mask_credentials: !cli.no_mask_credentials,
            },
            results,
            info,
        },
        discovery_lane: discovered.discovery_lane,
    })
}

/// What [`check_host`] found.
struct HostCheck {
    summary: capabilities::EnvironmentSummary,
    warnings: Vec<String>,
}

/// Before anything starts: a `--worker-user`'s home (refused when it cannot
/// be used, see [`host_env::check_worker_home`]), the environment conda
/// will get (names for the capabilities resource) and a `CONDARC` conda will
/// not load (a warning on stderr and in the instructions). With a listening
/// worker its own command line decides all three.
fn check_host(cli: &Cli) -> Result<HostCheck, StartupError> {
    if cli.worker_socket.is_some() {
        return Ok(HostCheck {
            summary: capabilities::EnvironmentSummary {
                working_directory: FIXED_CWD,
                pass_env: Vec::new(),
                passed: None,
            },
            warnings: Vec::new(),
        });
    }
    let home = match &cli.worker_user {
        Some(user) => Some(
            host_env::check_worker_home(user, cli.worker_home.as_deref())
                .map_err(StartupError::Other)?,
        ),
        None => None,
    };
    let rules = host_env::env_rules(&cli.pass_env, cli.worker_user.as_deref(), home.as_deref());
    let vars = host_env::child_vars(&rules);
    let mut warnings = Vec::new();
    if let Some(w) = host_env::condarc_warning(&vars) {
        tracing::warn!("{w}");
        warnings.push(w);
    }
    Ok(HostCheck {
        summary: capabilities::EnvironmentSummary {
            working_directory: FIXED_CWD,
            pass_env: cli.pass_env.clone(),
            passed: Some(
                vars.into_iter()
                    .filter_map(|(k, _)| k.into_string().ok())
                    .collect(),
            ),
        },
        warnings,
    })
}

/// What discovery produced.
struct Discovered {
    target: PathBuf,
    options: DiscoveryOptions,
    discovery: crate::discovery::Discovery,
    exec: Arc<Executor>,
    discovery_lane: Arc<Executor>,
}

/// Target, interpreter and catalog through [`crate::discovery::discover`]
/// (cached unless `--no-cache`), then the two lanes: "exec" for conda calls
/// and "discovery" for helper scripts. Both start their worker lazily.
async fn discover(cli: &Cli) -> Result<Discovered, StartupError> {
    let mut opts = DiscoveryOptions::new();
    opts.conda_exe = cli.conda_exe.clone();
    opts.python = cli.python.clone();
    opts.no_cache = cli.no_cache;
    opts.timeout = cli.timeout;
    opts.worker = worker_config(cli, PathBuf::new());
    let discovery = crate::discovery::discover(&opts)
        .await
        .map_err(|e| StartupError::Discovery(e.to_string()))?;
    let target = discovery.target.path.clone();
    let mut cfg = worker_config(cli, target.clone());
    cfg.python = Some(discovery.python.clone());
    let exec = Arc::new(Executor::new(cfg.clone()));
    let discovery_lane = Arc::new(Executor::new(cfg));
    if cli.worker_socket.is_some() {
        // A listening worker that is absent or refuses is a startup error,
        // not a failure of the first call.
        exec.connect()
            .await
            .map_err(|e| StartupError::Other(e.to_string()))?;
    }
    tracing::info!(
        from_cache = discovery.from_cache,
        processes = discovery.processes_started,
        "discovery done"
    );
    Ok(Discovered {
        target,
        options: opts,
        discovery,
        exec,
        discovery_lane,
    })
}
