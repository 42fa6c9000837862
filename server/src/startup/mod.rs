//! Startup: from the [`Settings`] to the server's [`State`]. In order: the
//! host checks (a `--worker-user`'s home, the environment conda gets, a
//! `CONDARC` conda will not load), discovery (target, interpreter,
//! catalog; cached), the worker lanes, the tools (every `--tools` /
//! `--exclude-tools` entry must match; each schema checked as a JSON
//! Schema 2020-12 document), the capabilities resource (serialized once)
//! and the `initialize` answer. `conda-mcp check` runs the same steps
//! ([`check_host`], [`check_users`], [`build_tools`]) so it cannot pass
//! where the server would refuse to start.
//!
//! Called by the composition root ([`crate::app`], for stdio and HTTP) and
//! by [`crate::check`]; it imports neither. Why startup failed, with the
//! exit status, is [`error`] ([`StartupError`]).

pub mod error;

use std::path::PathBuf;
use std::sync::Arc;

use crate::call::Runner;
use crate::call::run::install_lock::{self, InstallLock};
use crate::call::{CallSettings, Pipeline};
use crate::catalog::Catalog;
use crate::discovery::config::ConfigWatch;
use crate::discovery::restart::RestartWatch;
use crate::discovery::{DiscoveryError, DiscoveryOptions};
use crate::host_env;
use crate::mcp::State;
use crate::mcp::capabilities::{self, PolicySummary};
use crate::mcp::live::{LiveTools, Served, Surface};
use crate::mcp::results::Results;
use crate::mcp::server_config;
use crate::mcp::tasks::TaskStore;
use crate::settings::Settings;
use crate::tools::{self, ToolOptions, ToolSet};
use crate::worker_client::ExecError;
use crate::worker_client::Executor;
use conda_mcp_shared::env::FIXED_CWD;
pub use error::StartupError;

/// What [`start`] hands to the serving loop.
#[derive(Debug)]
pub struct Started {
    /// The server state.
    pub state: State,
    /// The discovery lane (helper scripts; never behind a running conda).
    pub discovery_lane: Arc<Executor>,
}

/// Runs the whole startup sequence.
///
/// Errors: [`StartupError`] (the server then exits with its
/// [`StartupError::exit_code`] before answering anything).
pub async fn start(settings: &Settings) -> Result<Started, StartupError> {
    start_checked(settings, check_host(settings)?).await
}

/// [`start`] after the host checks ([`check_host`]) gave `environment`.
///
/// Errors: [`StartupError`], as [`start`].
pub async fn start_checked(
    settings: &Settings,
    environment: HostCheck,
) -> Result<Started, StartupError> {
    let audit = open_audit(settings)?;
    let discovered = discover(settings).await?;
    let catalog = Arc::new(discovered.discovery.catalog.clone());
    let policy = settings.policy;
    let options = settings.tool_options();
    let tools = build_tools(&catalog, &options)?;
    let capabilities: Arc<str> = capabilities::render(
        &catalog,
        &discovered.target,
        &tools,
        capabilities::ServedAs {
            policy: PolicySummary::of(&policy),
            profile: settings.profile,
            mode: settings.mode,
        },
        environment.summary.clone(),
    )
    .into();
    tracing::info!(
        target = %discovered.target.display(),
        conda_version = %catalog.conda_version,
        tools = tools.listed.len(),
        "conda-mcp ready"
    );
    let info = server_config(
        Some(&tools.shared_help),
        settings.mode,
        settings.results.mode,
        &environment.warnings,
        settings.live_tools,
        settings.policy.approve_writes,
    );
    let results = Results::new()?.with_live_tools(settings.live_tools);
    if discovered.exec.config().warm_conda {
        // The warm conda starts now, while the host reads the tool list, so
        // that the first call can run warm (README "Warm conda").
        let exec = discovered.exec.clone();
        tokio::spawn(async move { exec.warm_up().await });
    }
    Ok(Started {
        state: State {
            surface: Served::new(Surface {
                catalog,
                tools,
                capabilities,
            }),
            live: settings
                .live_tools
                .then(|| LiveTools::new(options, discovered.target.clone(), environment.summary)),
            pipeline: Pipeline {
                settings: CallSettings {
                    policy: settings.policy,
                    limits: settings.limits,
                    profile: settings.profile,
                    mode: settings.mode,
                    typed: settings.typed(),
                    restrictions: settings.restrictions.clone(),
                    worker_user: settings.worker.user.clone(),
                    caller: crate::call::plan::reads::Caller::own(
                        settings.worker.user.as_deref(),
                        settings.worker.home.as_deref(),
                    ),
                },
                runner: Runner {
                    exec: discovered.exec,
                    workers: None,
                    discovery: discovered.discovery_lane.clone(),
                    restart: RestartWatch::new(
                        discovered.options.clone(),
                        &discovered.discovery,
                        settings.live_tools,
                    ),
                    settings: settings.results,
                    install_lock: Some(install_lock(&discovered.discovery)),
                    config: Some(ConfigWatch::new(
                        discovered.options.clone(),
                        &discovered.discovery,
                    )),
                },
                approvals: crate::call::approve::ids::Ledger::new(),
                metrics: Arc::new(crate::metrics::Metrics::new(settings.metrics_principals)),
                audit,
            },
            results,
            info,
            tasks: TaskStore::new(settings.tasks),
            watch: Arc::new(crate::mcp::watch::EnvironmentWatch::new(
                settings.watch_interval,
            )),
        },
        discovery_lane: discovered.discovery_lane,
    })
}

/// `--audit-log`: the file opened for appending, reopened on every SIGHUP
/// (before discovery, so an unusable path fails at once).
///
/// Errors: [`StartupError::Audit`].
fn open_audit(
    settings: &Settings,
) -> Result<Option<Arc<crate::call::audit::AuditLog>>, StartupError> {
    let Some(path) = &settings.audit_log else {
        return Ok(None);
    };
    let log = Arc::new(crate::call::audit::AuditLog::open(path)?);
    log.reopen_on_sighup()
        .map_err(|source| crate::call::audit::AuditError::Open {
            path: path.clone(),
            source,
        })?;
    Ok(Some(log))
}

/// The tool set of `catalog` under `options`, after checking that every
/// `--tools` / `--exclude-tools` entry matches a tool or command this conda
/// could have (whatever the policy and mode).
///
/// Errors: [`StartupError::UnmatchedToolEntry`] (a usage error),
/// [`StartupError::Schema`].
pub fn build_tools(catalog: &Catalog, options: &ToolOptions) -> Result<ToolSet, StartupError> {
    options.filter.check(&tools::universe(catalog))?;
    Ok(ToolSet::build(catalog, options)?)
}

/// Principals mapped to OS users need the server to run as root (their
/// workers change user like `--worker-user`) and each user's home to be
/// usable by conda (the `--worker-user` rules, `host_env::check_worker_home`).
///
/// Errors: [`StartupError::MappedUsersNeedRoot`],
/// [`StartupError::MappedUserHome`] naming the user and why.
pub fn check_users(users: &[String]) -> Result<(), StartupError> {
    if users.is_empty() {
        return Ok(());
    }
    #[cfg(windows)]
    return Err(StartupError::MappedUsersNotOnWindows);
    #[cfg(unix)]
    if !nix::unistd::Uid::effective().is_root() {
        return Err(StartupError::MappedUsersNeedRoot);
    }
    #[cfg(unix)]
    for user in users {
        crate::host_env::check_worker_home(user, None).map_err(|source| {
            StartupError::MappedUserHome {
                user: user.clone(),
                source,
            }
        })?;
    }
    #[cfg(unix)]
    Ok(())
}

/// What [`check_host`] found.
#[derive(Debug, Clone)]
pub struct HostCheck {
    /// The environment conda gets (names only), for the capabilities
    /// resource.
    pub summary: capabilities::EnvironmentSummary,
    /// Problems a model and the operator should know of (each one
    /// sentence, already logged).
    pub warnings: Vec<String>,
}

/// Before anything starts: a `--worker-user`'s home (refused when it cannot
/// be used, see [`host_env::check_worker_home`]), the environment conda
/// will get (names for the capabilities resource) and a `CONDARC` conda will
/// not load (a warning on stderr and in the instructions). With a listening
/// worker its own command line decides all three.
///
/// Errors: [`StartupError::WorkerHome`].
pub fn check_host(settings: &Settings) -> Result<HostCheck, StartupError> {
    let worker = &settings.worker;
    if worker.socket.is_some() {
        return Ok(HostCheck {
            summary: capabilities::EnvironmentSummary {
                working_directory: FIXED_CWD,
                pass_env: Vec::new(),
                passed: None,
            },
            warnings: Vec::new(),
        });
    }
    let home = match &worker.user {
        Some(user) => Some(
            host_env::check_worker_home(user, worker.home.as_deref())
                .map_err(StartupError::WorkerHome)?,
        ),
        None => None,
    };
    let rules = host_env::env_rules(&worker.pass_env, worker.user.as_deref(), home.as_deref());
    let vars = host_env::child_vars(&rules);
    let mut warnings = Vec::new();
    if let Some(w) = host_env::condarc_warning(&vars) {
        tracing::warn!("{w}");
        warnings.push(w);
    }
    Ok(HostCheck {
        summary: capabilities::EnvironmentSummary {
            working_directory: FIXED_CWD,
            pass_env: worker.pass_env.clone(),
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
async fn discover(settings: &Settings) -> Result<Discovered, StartupError> {
    let opts = settings.discovery_options();
    // A cold start's head start: the call lane's worker and its warm conda
    // start while the discovery helper runs (both import conda; side by
    // side rather than one after the other), not after it. A listening
    // worker is connected below, after discovery, as before.
    let mut early: Option<Arc<Executor>> = None;
    let discovery = crate::discovery::discover_with(&opts, |target, python| {
        let mut cfg = settings.worker_config(target.to_path_buf());
        cfg.python = Some(python.to_path_buf());
        if cfg.warm_conda && settings.worker.socket.is_none() {
            let exec = Arc::new(Executor::new(cfg));
            let warming = exec.clone();
            tokio::spawn(async move { warming.warm_up().await });
            early = Some(exec);
        }
    })
    .await
    .map_err(|e| match e {
        DiscoveryError::Target(t) => StartupError::NoConda(t),
        other => StartupError::Discovery(other),
    })?;
    let target = discovery.target.path.clone();
    let mut cfg = settings.worker_config(target.clone());
    cfg.python = Some(discovery.python.clone());
    let exec = match early {
        Some(exec)
            if exec.config().conda_exe == cfg.conda_exe && exec.config().python == cfg.python =>
        {
            exec
        }
        _ => Arc::new(Executor::new(cfg.clone())),
    };
    let discovery_lane = Arc::new(Executor::new(cfg));
    if settings.worker.socket.is_some() {
        // A listening worker that is absent or refuses is a startup error,
        // not a failure of the first call.
        exec.connect().await.map_err(StartupError::Worker)?;
    } else {
        // The spawned worker starts with the first call (a cached startup
        // starts no process), but a worker binary that cannot start is a
        // startup error on a cache hit as it is on a miss.
        worker_exe_runnable(&exec.config().worker_exe).map_err(StartupError::Worker)?;
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

/// The writer lock of the discovered installation: keyed by its root
/// prefix (the `sys.prefix` the helper reported, canonical when it can be;
/// the target executable when the dump has none), in
/// [`install_lock::default_dir`].
fn install_lock(discovery: &crate::discovery::Discovery) -> InstallLock {
    let root = discovery
        .dump
        .prefix
        .as_ref()
        .map(PathBuf::from)
        .unwrap_or_else(|| discovery.target.path.clone());
    let root = std::fs::canonicalize(&root).unwrap_or(root);
    let lock = InstallLock::new(&install_lock::default_dir(), &root);
    tracing::debug!(lock = %lock.path().display(), "the installation's writer lock");
    lock
}

/// Whether `path` is an executable file (one `stat`, no process).
/// Errors: [`ExecError::WorkerUnavailable`] with the path and the reason,
/// worded as a failed spawn would be.
fn worker_exe_runnable(path: &std::path::Path) -> Result<(), ExecError> {
    let unavailable =
        |why: String| ExecError::WorkerUnavailable(format!("starting {}: {why}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| unavailable(e.to_string()))?;
    if !meta.is_file() || !crate::worker_client::config::is_executable(path) {
        return Err(unavailable("not an executable file".into()));
    }
    Ok(())
}
