//! Support for the worker tests: an [`Executor`] whose "conda" is `/bin/sh`
//! and whose interpreter is `python3` (the worker only knows it runs the
//! program fixed on its command line), plus process-liveness checks.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use conda_mcp_server::worker_client::{
    ExecError, ExecutionResult, Executor, Job, JobUpdate, Program, WorkerConfig,
};

/// `python3` from `PATH` (absolute), or a panic naming what is missing.
pub fn python3() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("python3"))
        .find(|p| p.is_file())
        .expect("python3 on PATH is needed by the worker tests")
}

/// The worker configuration of these tests: conda = `/bin/sh`,
/// python = `python3`.
pub fn sh_config() -> WorkerConfig {
    let mut cfg = WorkerConfig::new("/bin/sh");
    cfg.worker_exe = crate::bins::worker();
    cfg.python = Some(python3());
    cfg
}

/// An executor over [`sh_config`].
pub fn sh_executor() -> Executor {
    Executor::new(sh_config())
}

/// A job running `sh -c script` with `timeout`.
pub fn sh(script: &str, timeout: Duration) -> Job {
    let mut job = Job::new(Program::Conda, vec!["-c".into(), script.into()]);
    job.limits.timeout = timeout;
    job
}

/// A job running `python3 -c code` with `timeout`.
pub fn py(code: &str, timeout: Duration) -> Job {
    let mut job = Job::new(Program::Python, vec!["-c".into(), code.into()]);
    job.limits.timeout = timeout;
    job
}

/// Runs `job`, collecting its updates.
pub async fn run_collect(
    ex: &Executor,
    job: Job,
) -> (Result<ExecutionResult, ExecError>, Vec<JobUpdate>) {
    let updates = Arc::new(Mutex::new(Vec::new()));
    let u = updates.clone();
    let res = ex
        .run(job, move |up| u.lock().expect("updates").push(up))
        .await;
    let ups = updates.lock().expect("updates").clone();
    (res, ups)
}

/// Whether `pid` is a live process (a zombie counts as gone).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// Waits up to `within` for `pid` to be gone; returns whether it is.
pub async fn gone_within(pid: u32, within: Duration) -> bool {
    let end = tokio::time::Instant::now() + within;
    while alive(pid) {
        if tokio::time::Instant::now() >= end {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

/// Parses every whitespace-separated number in `text` as a pid.
pub fn pids_in(text: &str) -> Vec<u32> {
    text.split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}
