//! What an [`super::Executor`] starts or connects to.

use std::path::{Path, PathBuf};

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
    /// (`false` passes `--no-warm-conda`; docs/operating.md "Warm conda").
    pub warm_conda: bool,
    /// The spawned worker's `--home`: conda's HOME instead of the user's own
    /// (`--worker-home`).
    pub home: Option<PathBuf>,
    /// The spawned worker's `--pass-env` patterns: variables passed to conda
    /// besides the allowlist.
    pub pass_env: Vec<String>,
    /// `RUST_LOG` for the spawned worker (its log filter); `None` = the
    /// server's environment as it is. `conda-mcp check` sets `warn` so the
    /// worker's per-job lines do not interleave with its report.
    pub log_filter: Option<String>,
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
            home: None,
            pass_env: Vec::new(),
            log_filter: None,
        }
    }

    /// The worker binary to spawn when `--worker-exe` is not given: the
    /// first existing executable of [`worker_exe_candidates`] (where cargo,
    /// pip, pipx and uv put both binaries), else the first candidate (the
    /// spawn error then names it). See [`locate_worker_exe`].
    pub fn default_worker_exe() -> PathBuf {
        locate_worker_exe().0
    }
}

/// File name of the worker executable.
#[cfg(not(windows))]
pub const WORKER_EXE_NAME: &str = "conda-mcp-worker";
/// The worker executable's file name (Windows).
#[cfg(windows)]
pub const WORKER_EXE_NAME: &str = "conda-mcp-worker.exe";

/// Where [`locate_worker_exe`] found the worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerExeSource {
    /// `--worker-exe` (not looked up; reported by callers that have flags).
    Flag,
    /// Next to the running executable, symlinks resolved
    /// (`/proc/self/exe`): a venv's or uv tool environment's `bin/`, cargo's
    /// bin folder, the bundle's `server/` folder.
    NextToExecutable,
    /// Next to the path the server was started by (`argv[0]`) when that is a
    /// different folder: a copy of `conda-mcp` placed beside a linked or
    /// copied worker (pipx's and uv's shared bin folders).
    NextToInvocation,
    /// The first executable `conda-mcp-worker` on `PATH`.
    Path,
    /// Nowhere: the returned path is the first candidate, which does not
    /// exist.
    NotFound,
}

impl WorkerExeSource {
    /// A few words for reports ("next to conda-mcp", "on PATH", ...).
    pub fn describe(self) -> &'static str {
        match self {
            WorkerExeSource::Flag => "--worker-exe",
            WorkerExeSource::NextToExecutable => "next to the conda-mcp executable",
            WorkerExeSource::NextToInvocation => "next to the path conda-mcp was started by",
            WorkerExeSource::Path => "on PATH",
            WorkerExeSource::NotFound => "not found",
        }
    }
}

/// The places the worker is looked for, in order: the folder of the running
/// executable with symlinks resolved, the folder of `argv[0]` when it holds
/// a `/` (started by path, e.g. through a symlink in `~/.local/bin`), then
/// every `PATH` entry (empty and relative entries skipped, as for conda
/// itself). Duplicates are dropped.
pub fn worker_exe_candidates() -> Vec<(PathBuf, WorkerExeSource)> {
    let mut out: Vec<(PathBuf, WorkerExeSource)> = Vec::new();
    let mut push = |p: PathBuf, s: WorkerExeSource| {
        if !out.iter().any(|(q, _)| *q == p) {
            out.push((p, s));
        }
    };
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
    {
        push(dir.join(WORKER_EXE_NAME), WorkerExeSource::NextToExecutable);
    }
    if let Some(arg0) = std::env::args_os().next().map(PathBuf::from)
        && arg0.as_os_str().as_encoded_bytes().contains(&b'/')
        && let Some(dir) = std::path::absolute(&arg0)
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
    {
        push(dir.join(WORKER_EXE_NAME), WorkerExeSource::NextToInvocation);
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if dir.is_absolute() {
                push(dir.join(WORKER_EXE_NAME), WorkerExeSource::Path);
            }
        }
    }
    out
}

/// The worker binary to use without `--worker-exe`: the first of
/// [`worker_exe_candidates`] that is an executable file, with where it was
/// found; else the first candidate (or the bare name) and
/// [`WorkerExeSource::NotFound`].
pub fn locate_worker_exe() -> (PathBuf, WorkerExeSource) {
    let candidates = worker_exe_candidates();
    if let Some((p, s)) = candidates.iter().find(|(p, _)| is_executable(p)) {
        return (p.clone(), *s);
    }
    let first = candidates
        .into_iter()
        .next()
        .map(|(p, _)| p)
        .unwrap_or_else(|| PathBuf::from(WORKER_EXE_NAME));
    (first, WorkerExeSource::NotFound)
}

/// Whether `p` is a file with an execute bit (Unix) — whether `execve` may
/// run it as far as the mode says.
#[cfg(unix)]
pub fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Whether `p` is a file Windows runs as a program: an `.exe` or `.com`
/// (a `.bat`/`.cmd` needs cmd.exe, which conda-mcp never starts with a
/// call's arguments; see `conda_mcp_shared::conda_cmd`).
#[cfg(windows)]
pub fn is_executable(p: &Path) -> bool {
    let ext = p
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    matches!(ext.as_deref(), Some("exe" | "com")) && p.is_file()
}
