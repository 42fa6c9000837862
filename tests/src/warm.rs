//! Support for the warm-conda tests: running one argv through a worker with
//! and without its warm conda, telling which path a call took, and the
//! normalisation the differential tests apply.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use conda_mcp_server::worker_client::{
    ExecutionResult, Executor, Job, JobUpdate, Program, WorkerConfig,
};

/// An executor spawning the built worker for `conda`, with or without the
/// warm conda (`--no-warm-conda`).
pub fn executor(conda: &Path, warm: bool) -> Executor {
    let mut cfg = WorkerConfig::new(conda);
    cfg.worker_exe = crate::bins::worker();
    cfg.warm_conda = warm;
    Executor::new(cfg)
}

/// [`executor`] whose worker also runs the server's helper programs
/// (`Program::Python`) with the interpreter of `conda`'s `#!` line, as the
/// server configures it.
///
/// Panics when `conda` has no Python `#!` line.
pub fn helper_executor(conda: &Path, warm: bool) -> Executor {
    let python = conda_mcp_server::discovery::interpreter::shebang_interpreter(conda, None)
        .expect("a Python #! line");
    let mut cfg = WorkerConfig::new(conda);
    cfg.worker_exe = crate::bins::worker();
    cfg.warm_conda = warm;
    cfg.python = Some(python);
    Executor::new(cfg)
}

/// One call: argv, optional working directory and stdin.
#[derive(Debug, Clone)]
pub struct Call {
    /// conda's argv (without `conda`).
    pub argv: Vec<String>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// stdin bytes.
    pub stdin: Option<Vec<u8>>,
}

impl Call {
    /// A call with this argv, no cwd, no stdin.
    pub fn new(argv: &[&str]) -> Call {
        Call {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            cwd: None,
            stdin: None,
        }
    }

    /// The same call in `dir`.
    pub fn in_dir(mut self, dir: &Path) -> Call {
        self.cwd = Some(dir.to_path_buf());
        self
    }

    /// The same call with stdin.
    pub fn with_stdin(mut self, bytes: &[u8]) -> Call {
        self.stdin = Some(bytes.to_vec());
        self
    }
}

/// A finished call and the parent of its process while it ran (`None`
/// when it had exited before the test looked).
#[derive(Debug)]
pub struct Ran {
    /// The result.
    pub result: ExecutionResult,
    /// The parent pid of the call's process right after it started: the
    /// worker for a fresh process, the zygote for a warm one.
    pub parent: Option<u32>,
}

/// The parent pid of `pid` (from `/proc/<pid>/stat`).
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// Runs `call` (time limit `timeout`) and notes its process's parent.
pub async fn run(ex: &Executor, call: &Call, timeout: Duration) -> Ran {
    let mut job = Job::new(Program::Conda, call.argv.clone());
    job.cwd = call.cwd.clone();
    job.stdin = call.stdin.clone();
    job.limits.timeout = timeout;
    job.label = "warm test".into();
    let parent = Arc::new(Mutex::new(None));
    let p = parent.clone();
    let result = ex
        .run(job, move |u| {
            if let JobUpdate::Started { pid } = u {
                *p.lock().expect("parent") = parent_of(pid);
            }
        })
        .await
        .expect("the call ran");
    let parent = *parent.lock().expect("parent");
    Ran { result, parent }
}

/// Whether a call ran in a child of the warm conda: its parent was a
/// process other than the worker.
pub fn was_warm(ex: &Executor, ran: &Ran) -> Option<bool> {
    let worker = ex.worker_pid()?;
    ran.parent.map(|p| p != worker)
}

/// Exit status, stdout and stderr of a result: what the differential tests
/// compare.
pub fn observable(r: &ExecutionResult) -> (Option<i32>, String, String) {
    (r.exit_code, r.stdout.clone(), r.stderr.clone())
}
