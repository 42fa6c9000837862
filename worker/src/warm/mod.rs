//! Warm conda: conda jobs forked from a long-lived, pre-imported
//! interpreter (a "zygote") instead of a fresh process.
//!
//! A fresh conda spends most of a short call starting Python and importing
//! conda. The zygote is one process of the target's own interpreter (the one
//! on conda's `#!` line), started by the worker with the child environment
//! ([`crate::spawn::Programs::child_env`]), that imports conda's entry point
//! and loads conda's plugins and then never runs a command. For each job it
//! forks a child that puts itself in its own process group, takes the job's
//! stdin/stdout/stderr (pipes the worker created, passed over the socket with
//! `SCM_RIGHTS`), changes to the job's directory, and runs conda's own
//! script as `__main__` with the job's argv; the child then ends with what a
//! fresh interpreter's exit does that anyone can observe (non-daemon threads
//! joined, atexit handlers, streams flushed, conda's status) and skips the
//! teardown of the zygote's heap, which would cost a short call about half
//! its time. The zygote freezes its objects out of the collector's reach
//! (`gc.freeze`) before serving, so a child's collections do not copy the
//! pages it shares with the zygote. Each call
//! is a fresh fork of a zygote that never ran a command, so nothing one call
//! does (conda's context, its caches, `os.environ`, the working directory,
//! loggers, threads) reaches the next. See docs/operating.md "Warm conda".
//!
//! The child does not run conda until the worker has checked the pid the
//! zygote reported (a child of the zygote) and written the go byte, so a job
//! is never run twice: when anything fails before that, the child exits
//! without running conda and the job runs fresh.
//!
//! A call that finds the zygote starting waits for it when the rest of the
//! start and then a warm run are expected to end sooner than a fresh run
//! would ([`wait_for_start`], from the measured durations of the last start,
//! the last fresh conda job and the last warm one), and goes on the moment
//! the zygote reports ready; so does a call that finds none when the last
//! start was quicker than a fresh run (it starts one, as after a
//! replacement). The start's work is conda's own start (the interpreter,
//! conda's imports, its plugins), which every fresh run does first, plus
//! what only the zygote does (compiling its source, the CUDA probe, which
//! takes tens of milliseconds with the `fork` start method, `gc.freeze`),
//! so a start under way with nothing measured yet is awaited.
//!
//! Fallback, never a failure: when conda is not a Python entry-point script,
//! the zygote is not ready yet (not started, or still starting when waiting
//! is not worth it or took too long), is busy
//! (another connection's job), failed to start, died, or answered wrongly,
//! the job runs as a fresh process and the reason is logged once. A zygote
//! whose import locations changed ([`stamp`]) — conda or a plugin was
//! installed, upgraded or removed, by a call or by anyone — is replaced
//! before the next call; that call runs fresh while the new one starts.

mod driver;
mod proc_handle;
mod stamp;
mod zygote;

use std::collections::HashSet;
use std::ffi::OsString;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use std::process::ExitStatus;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use tokio::net::unix::pipe;
use tokio::sync::OwnedMutexGuard;
use tokio::task::JoinError;

use conda_mcp_shared::guard::InProcessChecks;

use self::zygote::{ChildFds, JobKind, Recipe, Zygote, ZygoteError};

/// What [`wait_for_start`] takes for a duration not measured yet: a fresh
/// conda run's, and a start's.
pub const STARTING_WAIT: Duration = Duration::from_secs(2);

/// How long a conda job that finds the warm conda starting waits for it, or
/// `None` when it should run fresh at once: it waits when the rest of the
/// start (expected to take `start_took` from its beginning, `elapsed` ago)
/// and then a warm run (`warm_took`) are expected to end no later than a
/// fresh run would (`fresh_took`), and then at most `fresh_took` less
/// `warm_took`, past which a fresh run would have finished sooner. A start
/// or fresh duration not measured yet is the other one, else
/// [`STARTING_WAIT`] (a start is conda's own start, the prefix of every
/// fresh run, so with nothing measured a start under way is awaited); a
/// warm run not measured yet counts as nothing.
pub fn wait_for_start(
    elapsed: Duration,
    start_took: Option<Duration>,
    fresh_took: Option<Duration>,
    warm_took: Option<Duration>,
) -> Option<Duration> {
    let fresh = fresh_took.or(start_took).unwrap_or(STARTING_WAIT);
    let start = start_took.or(fresh_took).unwrap_or(STARTING_WAIT);
    let budget = fresh.checked_sub(warm_took.unwrap_or_default())?;
    (start.saturating_sub(elapsed) <= budget).then_some(budget)
}

/// Consecutive failed starts after which the warm conda stays off.
pub const MAX_START_FAILURES: u32 = 3;

/// The warm conda of one worker.
#[derive(Debug)]
pub struct Warm {
    recipe: Mutex<Recipe>,
    slot: Arc<tokio::sync::Mutex<Slot>>,
    /// Pids the post-job sweep must leave alone (the zygote and its
    /// subtree): see [`Warm::spared`].
    spared: Arc<Mutex<HashSet<i32>>>,
    logged: Mutex<HashSet<String>>,
    /// How long the last successful start took (spawn to ready).
    start_took: Arc<Mutex<Option<Duration>>>,
    /// How long the last fresh conda job took (spawn to exit).
    fresh_took: Mutex<Option<Duration>>,
    /// How long the last warm conda job's own run took (fork to exit).
    warm_took: Mutex<Option<Duration>>,
}

#[derive(Debug, Default)]
struct Slot {
    zygote: Option<Zygote>,
    starting: Option<tokio::task::JoinHandle<Result<Zygote, ZygoteError>>>,
    /// When the start under way began.
    since: Option<Instant>,
    failures: u32,
}

/// A conda job running in a child of the zygote.
#[derive(Debug)]
pub struct Launched {
    /// The child's pid, also its process group id.
    pub pid: u32,
    /// The write end of the child's stdin pipe (when the job has stdin).
    pub stdin: Option<pipe::Sender>,
    /// The read end of the child's stdout.
    pub stdout: pipe::Receiver,
    /// The read end of the child's stderr.
    pub stderr: pipe::Receiver,
    /// The read end of the guard's report pipe (when the job has checks).
    pub report: Option<pipe::Receiver>,
    /// Waits for the child's status.
    pub job: WarmJob,
}

/// The zygote, lent to one job until its status arrives.
#[derive(Debug)]
pub struct WarmJob {
    slot: OwnedMutexGuard<Slot>,
    pid: i32,
    /// Linux: a pidfd on the job's child, for [`WarmJob::orphan_status`].
    #[cfg(target_os = "linux")]
    child: OwnedFd,
    done: Option<Option<ExitStatus>>,
    spared: Arc<Mutex<HashSet<i32>>>,
}

impl Warm {
    /// The warm conda for `conda`, or `None` (logged) when `conda` is not a
    /// Python entry-point script. Nothing starts until [`Warm::prepare`].
    pub fn new(conda: &Path, env: Vec<(OsString, OsString)>) -> Option<Arc<Warm>> {
        match crate::shebang::python_of(conda) {
            Ok(python) => Some(Arc::new(Warm {
                recipe: Mutex::new(Recipe {
                    conda: conda.to_path_buf(),
                    python,
                    env,
                }),
                slot: Default::default(),
                spared: Default::default(),
                logged: Default::default(),
                start_took: Default::default(),
                fresh_took: Default::default(),
                warm_took: Default::default(),
            })),
            Err(reason) => {
                tracing::info!(reason = %reason, "warm conda off: conda calls run as fresh processes");
                None
            }
        }
    }

    /// Pids whose subtrees the post-job sweep must spare: the zygote (ready
    /// or starting). Its job children are reaped by the zygote before a job
    /// ends, so nothing of a job is ever under it at sweep time.
    pub fn spared(&self) -> Vec<i32> {
        lock(&self.spared).iter().copied().collect()
    }

    /// Notes how long a conda job that ran fresh took, for
    /// [`wait_for_start`] (a job that timed out or was cancelled tells
    /// nothing and is not noted).
    pub fn ran_fresh(&self, took: Duration) {
        *lock(&self.fresh_took) = Some(took);
    }

    /// Notes how long a conda job forked from the warm conda took from its
    /// fork to its exit, for [`wait_for_start`] (as [`Warm::ran_fresh`]).
    pub fn ran_warm(&self, took: Duration) {
        *lock(&self.warm_took) = Some(took);
    }

    fn log_once(&self, reason: &str) {
        if lock(&self.logged).insert(reason.to_string()) {
            tracing::warn!(reason = %reason, "warm conda unavailable: this call runs as a fresh process (logged once per reason)");
        }
    }

    /// Starts a zygote in the background unless one is ready or starting,
    /// and replaces a ready one whose import locations changed or that
    /// died. Never waits.
    pub fn prepare(&self) {
        if let Ok(mut slot) = self.slot.clone().try_lock_owned() {
            self.tend(&mut slot, true);
        }
    }

    /// Collects a finished start, drops a dead or stale zygote, and (when
    /// `start`) starts a new one when none is ready or starting. A call
    /// about to run fresh passes `false`: the new zygote starts after it
    /// ([`Warm::prepare`]) instead of competing with it for the CPU.
    fn tend(&self, slot: &mut Slot, start: bool) {
        if slot.starting.as_ref().is_some_and(|h| h.is_finished())
            && let Some(handle) = slot.starting.take()
        {
            match futures::FutureExt::now_or_never(handle) {
                Some(started) => self.collect(slot, started),
                None => slot.failures += 1,
            }
        }
        if let Some(z) = &slot.zygote {
            let why = if !z.alive() {
                Some("the warm conda exited; starting a new one")
            } else if z.stamp.changed() {
                Some(
                    "conda's import locations changed (conda or a plugin was installed, upgraded or removed); replacing the warm conda",
                )
            } else if z.driver.changed() {
                Some(
                    "the CUDA driver may have changed (a libcuda.so* file, the loader's cache or the kernel module); replacing the warm conda so that it probes again",
                )
            } else if z.env != lock(&self.recipe).env {
                Some("the child environment changed; replacing the warm conda")
            } else {
                None
            };
            if let Some(why) = why {
                tracing::info!(pid = z.pid, "{why}");
                if let Some(z) = slot.zygote.take() {
                    self.retire(z);
                }
            }
        }
        if start && slot.zygote.is_none() && slot.starting.is_none() {
            if slot.failures >= MAX_START_FAILURES {
                self.log_once(&format!(
                    "the warm conda failed to start {MAX_START_FAILURES} times in a row; it stays off"
                ));
                return;
            }
            let recipe = lock(&self.recipe).clone();
            let since = Instant::now();
            match zygote::start(&recipe) {
                Ok(starting) => {
                    let pid = starting.pid;
                    lock(&self.spared).insert(pid);
                    let spared = self.spared.clone();
                    let took = self.start_took.clone();
                    slot.since = Some(since);
                    slot.starting = Some(tokio::spawn(async move {
                        let r = starting.ready(&recipe).await;
                        match &r {
                            Ok(z) => {
                                *lock(&took) = Some(since.elapsed());
                                let phases: Vec<String> = z
                                    .phases
                                    .iter()
                                    .map(|(name, took)| format!("{name}={}", took.as_millis()))
                                    .collect();
                                tracing::info!(
                                    pid = z.pid,
                                    python = %recipe.python.display(),
                                    phases_ms = %phases.join(" "),
                                    "warm conda ready"
                                );
                            }
                            Err(_) => {
                                lock(&spared).remove(&pid);
                            }
                        }
                        r
                    }));
                    tracing::info!(pid, "warm conda starting");
                }
                Err(reason) => {
                    slot.failures += 1;
                    self.log_once(&format!("the warm conda did not start: {reason}"));
                }
            }
        }
    }

    /// Takes the outcome of a finished start: a ready zygote goes in the
    /// slot (its plugin warnings logged; its start's phases were logged when
    /// it became ready), a failure
    /// counts towards [`MAX_START_FAILURES`] (logged once per reason).
    fn collect(&self, slot: &mut Slot, started: Result<Result<Zygote, ZygoteError>, JoinError>) {
        slot.since = None;
        match started {
            Ok(Ok(z)) => {
                for w in &z.plugin_warnings {
                    // Masked: an entry point's error may quote a URL.
                    let (w, _) = conda_mcp_shared::mask::mask_text(w);
                    tracing::warn!(
                        "conda warned while loading its plugins (each call prints it, as a fresh conda does): {w}"
                    );
                }
                slot.failures = 0;
                slot.zygote = Some(z);
            }
            Ok(Err(reason)) => {
                slot.failures += 1;
                self.log_once(&format!("the warm conda did not start: {reason}"));
            }
            Err(_) => slot.failures += 1,
        }
    }

    /// Kills and reaps a zygote in the background.
    fn retire(&self, z: Zygote) {
        let spared = self.spared.clone();
        tokio::spawn(async move {
            let pid = z.pid;
            z.kill().await;
            lock(&spared).remove(&pid);
        });
    }

    /// Runs a conda job in a child of the zygote, with environment `env`
    /// (a zygote started with another environment is replaced first), under
    /// the guard when it has `checks` (crate::guard).
    /// `Err` means it did not run (nothing of conda started) and must run
    /// fresh; the reason was logged when it is worth logging.
    pub async fn launch(
        &self,
        argv: &[String],
        cwd: Option<&Path>,
        has_stdin: bool,
        env: &[(OsString, OsString)],
        checks: Option<&InProcessChecks>,
    ) -> Result<Launched, ()> {
        let Ok(mut slot) = self.slot.clone().try_lock_owned() else {
            return Err(()); // another connection's job holds the zygote
        };
        {
            let mut recipe = lock(&self.recipe);
            if recipe.env != env {
                recipe.env = env.to_vec();
            }
        }
        // A warm conda already starting (the server's warm-up after
        // discovery, or a replacement) is awaited when it is expected to be
        // ready sooner than a fresh conda would finish; the two then do not
        // compete for the CPU. With none ready or starting, one is started
        // and awaited when the last start was quicker than a fresh run.
        self.tend(&mut slot, false);
        let start_took = *lock(&self.start_took);
        let fresh_took = *lock(&self.fresh_took);
        let warm_took = *lock(&self.warm_took);
        if slot.zygote.is_none()
            && slot.starting.is_none()
            && start_took.is_some()
            && wait_for_start(Duration::ZERO, start_took, fresh_took, warm_took).is_some()
        {
            self.tend(&mut slot, true);
        }
        if slot.starting.is_some() {
            let elapsed = slot.since.map_or(Duration::ZERO, |t| t.elapsed());
            if let Some(wait) = wait_for_start(elapsed, start_took, fresh_took, warm_took) {
                // Awaited in place (a `&mut JoinHandle`), so the call goes
                // on the moment the zygote reports ready, and the handle
                // stays in the slot when the wait ends first or this
                // future is dropped.
                let began = Instant::now();
                let started = tokio::time::timeout(wait, async {
                    match slot.starting.as_mut() {
                        Some(handle) => Some(handle.await),
                        None => None,
                    }
                })
                .await;
                let waited = began.elapsed();
                match started {
                    Ok(Some(started)) => {
                        slot.starting = None;
                        self.collect(&mut slot, started);
                        tracing::info!(
                            waited_ms = waited.as_millis() as u64,
                            started_ms = (elapsed + waited).as_millis() as u64,
                            "a call waited for the warm conda's start"
                        );
                    }
                    Ok(None) => {}
                    Err(_) => tracing::info!(
                        waited_ms = waited.as_millis() as u64,
                        "the warm conda's start took longer than a fresh run would; this call runs fresh"
                    ),
                }
            } else {
                tracing::info!(
                    started_ms = elapsed.as_millis() as u64,
                    "the warm conda's start would end later than a fresh run; this call runs fresh"
                );
            }
        }
        self.tend(&mut slot, false);
        self.fork_job(slot, argv, cwd, has_stdin, JobKind::Conda(checks))
            .await
    }

    /// Runs one of the server's helper programs (`argv` after the
    /// interpreter: `-I -c SOURCE ARGS...`, no stdin, no checks) in a child
    /// of the zygote, with conda's modules already imported, when a zygote
    /// of this very interpreter (`python`, the path the job would run) and
    /// environment is ready and idle now. It never starts, waits for or
    /// replaces a zygote: `Err` (nothing started) means the helper runs
    /// fresh, as it would without the warm conda.
    pub async fn launch_helper(
        &self,
        python: &Path,
        argv: &[String],
        cwd: Option<&Path>,
        env: &[(OsString, OsString)],
    ) -> Result<Launched, ()> {
        let Ok(mut slot) = self.slot.clone().try_lock_owned() else {
            return Err(()); // a conda job holds the zygote
        };
        {
            let recipe = lock(&self.recipe);
            if recipe.python != python || recipe.env != env {
                return Err(());
            }
        }
        if argv.len() < 3 || argv[0] != "-I" || argv[1] != "-c" {
            return Err(());
        }
        self.tend(&mut slot, false);
        self.fork_job(slot, argv, cwd, false, JobKind::Helper).await
    }

    /// Forks `argv` of `kind` from the ready zygote in `slot`, which the
    /// job then holds until it ends. `Err`: nothing ran (logged when worth
    /// it); a zygote that answered wrongly is retired.
    async fn fork_job(
        &self,
        mut slot: OwnedMutexGuard<Slot>,
        argv: &[String],
        cwd: Option<&Path>,
        has_stdin: bool,
        kind: JobKind<'_>,
    ) -> Result<Launched, ()> {
        let Some(z) = slot.zygote.as_ref() else {
            return Err(()); // starting (the first call) or off (logged)
        };
        let checks = match kind {
            JobKind::Conda(checks) => checks,
            JobKind::Helper => None,
        };
        if !zygote::fits(argv, cwd, kind) {
            self.log_once(&format!(
                "a call's arguments exceed {} bytes",
                zygote::MAX_REQUEST
            ));
            return Err(());
        }
        let (fds, mine) = match job_pipes(has_stdin, checks.is_some()) {
            Ok(p) => p,
            Err(e) => {
                self.log_once(&format!("creating the job's pipes failed: {e}"));
                return Err(());
            }
        };
        let pid = match z.fork(argv, cwd, kind, fds).await {
            Ok(pid) => pid,
            Err(reason) => {
                // The go pipe closes with `mine`: a child, if any, exits
                // without running conda.
                drop(mine);
                self.log_once(&format!("the warm conda answered wrongly: {reason}"));
                if let Some(z) = slot.zygote.take() {
                    self.retire(z);
                }
                return Err(());
            }
        };
        #[cfg(target_os = "linux")]
        let child = rustix::process::Pid::from_raw(pid).and_then(|p| {
            rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok()
        });
        // macOS: the pid was checked to be the zygote's child just now.
        #[cfg(target_os = "macos")]
        let child = (pid > 1).then_some(());
        let Some(child) = child else {
            drop(mine);
            self.log_once("the warm conda's child vanished before it ran");
            if let Some(z) = slot.zygote.take() {
                self.retire(z);
            }
            return Err(());
        };
        #[cfg(target_os = "macos")]
        let () = child;
        let JobPipes {
            stdin,
            stdout,
            stderr,
            go,
            report,
        } = mine;
        if nix::unistd::write(go.as_fd(), b"1") != Ok(1) {
            // The child exits without running conda; its status would be
            // taken for the next job's answer, so this zygote is done.
            self.log_once("the warm conda's child did not take the go byte");
            if let Some(z) = slot.zygote.take() {
                self.retire(z);
            }
            return Err(());
        }
        drop(go);
        Ok(Launched {
            pid: pid as u32,
            stdin,
            stdout,
            stderr,
            report,
            job: WarmJob {
                slot,
                pid,
                #[cfg(target_os = "linux")]
                child,
                done: None,
                spared: self.spared.clone(),
            },
        })
    }
}

impl WarmJob {
    /// The child's status, once it exited (cancel-safe: call it again after
    /// a `select!` dropped it). From the zygote; if the zygote died
    /// meanwhile, from the child itself (which was reparented to the worker,
    /// the subreaper), and `None` when neither is possible.
    pub async fn wait(&mut self) -> Option<ExitStatus> {
        if let Some(done) = self.done {
            return done;
        }
        let answer = match self.slot.zygote.as_ref() {
            Some(z) => z.status().await,
            None => Err(ZygoteError::Missing("gone")),
        };
        let status = match answer {
            Ok(s) => Some(s),
            Err(reason) => {
                tracing::warn!(pid = self.pid, reason = %reason, "the warm conda failed during a job; its child is waited for directly");
                if let Some(z) = self.slot.zygote.take() {
                    let spared = self.spared.clone();
                    let pid = z.pid;
                    tokio::spawn(async move {
                        z.kill().await;
                        lock(&spared).remove(&pid);
                    });
                }
                self.orphan_status().await
            }
        };
        self.done = Some(status);
        status
    }

    /// macOS: the child of a dead zygote went to launchd, which reaps it;
    /// its group is killed and its status is unknown.
    #[cfg(target_os = "macos")]
    async fn orphan_status(&self) -> Option<ExitStatus> {
        crate::contain::signal_group(self.pid as u32, crate::contain::Signal::Kill);
        None
    }

    /// Waits for the child through its pidfd and reaps it once it is the
    /// worker's (reparenting follows the zygote's exit).
    #[cfg(target_os = "linux")]
    async fn orphan_status(&self) -> Option<ExitStatus> {
        use std::os::unix::process::ExitStatusExt;
        let dup = self.child.try_clone().ok()?;
        tokio::task::spawn_blocking(move || {
            for _ in 0..1000 {
                match rustix::process::waitid(
                    rustix::process::WaitId::PidFd(dup.as_fd()),
                    rustix::process::WaitIdOptions::EXITED,
                ) {
                    Ok(Some(s)) => {
                        return s
                            .exit_status()
                            .map(|c| ExitStatus::from_raw((c & 0xff) << 8))
                            .or_else(|| s.terminating_signal().map(ExitStatus::from_raw));
                    }
                    // Not (yet) our child: the zygote's exit reparents it.
                    Err(rustix::io::Errno::CHILD) => {
                        std::thread::sleep(std::time::Duration::from_millis(1))
                    }
                    _ => return None,
                }
            }
            None
        })
        .await
        .ok()
        .flatten()
    }
}

/// The worker's ends of a job's pipes.
struct JobPipes {
    stdin: Option<pipe::Sender>,
    stdout: pipe::Receiver,
    stderr: pipe::Receiver,
    go: OwnedFd,
    report: Option<pipe::Receiver>,
}

/// Creates the job's pipes (close-on-exec on both ends: the child's copies
/// are `dup2`ed onto 0, 1 and 2, which clears the flag there; the guard
/// keeps its report descriptor non-inheritable), with a report pipe when
/// the job has checks.
fn job_pipes(has_stdin: bool, checks: bool) -> std::io::Result<(ChildFds, JobPipes)> {
    let pipe = crate::guard::cloexec_pipe;
    let (stdin, stdin_tx) = if has_stdin {
        let (r, w) = pipe()?;
        (r, Some(pipe::Sender::from_owned_fd(w)?))
    } else {
        let null = std::fs::File::open("/dev/null")?;
        (OwnedFd::from(null), None)
    };
    let (out_r, out_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    let (go_r, go_w) = pipe()?;
    let report = checks.then(crate::guard::report_pipe).transpose()?;
    let (report_w, report_r) = match report {
        Some(p) => (Some(p.writer), Some(p.reader)),
        None => (None, None),
    };
    Ok((
        ChildFds {
            stdin,
            stdout: out_w,
            stderr: err_w,
            go: go_r,
            report: report_w,
        },
        JobPipes {
            stdin: stdin_tx,
            stdout: pipe::Receiver::from_owned_fd(out_r)?,
            stderr: pipe::Receiver::from_owned_fd(err_r)?,
            go: go_w,
            report: report_r,
        },
    ))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_start_sooner_than_a_fresh_run_is_awaited() {
        // Measured: a start takes 2.8 s, a fresh run 4.2 s.
        assert_eq!(
            wait_for_start(ms(0), Some(ms(2800)), Some(ms(4200)), None),
            Some(ms(4200))
        );
        // A start of 3 s, 1 s under way, against a fresh run of 2.5 s.
        assert_eq!(
            wait_for_start(ms(1000), Some(ms(3000)), Some(ms(2500)), None),
            Some(ms(2500))
        );
        // Overdue: at most a fresh run's time.
        assert_eq!(
            wait_for_start(ms(9000), Some(ms(3000)), Some(ms(500)), None),
            Some(ms(500))
        );
    }

    #[test]
    fn a_start_later_than_a_fresh_run_is_not_awaited() {
        assert_eq!(
            wait_for_start(ms(0), Some(ms(2800)), Some(ms(300)), None),
            None
        );
        assert_eq!(
            wait_for_start(ms(100), Some(ms(3000)), Some(ms(2000)), None),
            None
        );
    }

    #[test]
    fn the_warm_run_after_the_wait_counts() {
        // Measured on conda 26.9 under load: a start of 1.37 s, just begun,
        // a fresh `env list` of 1.39 s, a warm one of 0.2 s: waiting would
        // end at 1.57 s, so the call runs fresh.
        assert_eq!(
            wait_for_start(ms(20), Some(ms(1370)), Some(ms(1390)), Some(ms(200))),
            None
        );
        // Under way for 0.5 s: the rest (0.87 s) and a warm run (0.2 s)
        // end before a fresh run would; waited for at most 1.19 s.
        assert_eq!(
            wait_for_start(ms(500), Some(ms(1370)), Some(ms(1390)), Some(ms(200))),
            Some(ms(1190))
        );
        // A warm run as long as a fresh one: never waited for.
        assert_eq!(
            wait_for_start(ms(5000), Some(ms(100)), Some(ms(300)), Some(ms(400))),
            None
        );
    }

    #[test]
    fn what_is_not_measured_yet_is_the_other_figure_or_the_default() {
        // Nothing measured: the start under way is awaited up to 2 s.
        assert_eq!(wait_for_start(ms(1), None, None, None), Some(STARTING_WAIT));
        // Only a fresh run measured: the start is taken to last as long.
        assert_eq!(
            wait_for_start(ms(50), None, Some(ms(4000)), None),
            Some(ms(4000))
        );
        // Only a start measured: a fresh run is taken to last as long.
        assert_eq!(
            wait_for_start(ms(10), Some(ms(700)), None, None),
            Some(ms(700))
        );
    }
}
