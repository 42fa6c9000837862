//! What an [`super::Executor`] starts or connects to.

use std::path::PathBuf;

use conda_mcp_shared::LogFormat;

/// How to reach a worker.
///
/// By default ([`WorkerConfig::socket`] `None`) the executor spawns
/// `worker_exe` itself with the target fixed on its command line. With
/// `socket` set it connects to a worker already listening there
/// (`conda-mcp-worker serve`, hardened deployments); `worker_exe`,
/// `conda_exe`, `python`, `log_format` and `user` then belong to that
/// worker's own command line and are not used.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerConfig {
    /// The `conda-mcp-worker` binary (see [`WorkerConfig::default_worker_exe`]).
    pub worker_exe: PathBuf,
    /// The target conda executable, fixed on the worker's command line.
    pub conda_exe: PathBuf,
    /// The target's Python (discovery helpers), fixed on its command line.
    pub python: Option<PathBuf>,
    /// The worker's log format on stderr.
    pub log_format: LogFormat,
    /// Connect to a listening worker at this socket path instead of
    /// spawning one (`--worker-socket`).
    pub socket: Option<PathBuf>,
    /// Run the spawned worker (and so conda) as this user and its primary
    /// group (`--worker-user`); needs the server to run as root.
    pub user: Option<String>,
    /// Whether the spawned worker may fork conda jobs from a warm conda
    /// (`false` passes `--no-warm-conda`; README "Warm conda").
    pub warm_conda: bool,
}

impl WorkerConfig {
    /// Spawn mode with the worker next to the server's own executable, text
    /// logs, no interpreter, no user change.
    pub fn new(conda_exe: impl Into<PathBuf>) -> Self {
        WorkerConfig {
            worker_exe: Self::default_worker_exe(),
            conda_exe: conda_exe.into(),
            python: None,
            log_format: LogFormat::Text,
            socket: None,
            user: None,
            warm_conda: true,
        }
    }

    /// `conda-mcp-worker` in the directory of the running executable (where
    /// cargo and installers put both binaries); just the bare name when the
    /// running executable cannot be determined.
    pub fn default_worker_exe() -> PathBuf {
        std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(|d| d.join("conda-mcp-worker")))
            .unwrap_or_else(|| PathBuf::from("conda-mcp-worker"))
    }
}
