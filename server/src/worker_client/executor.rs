//! [`Executor`]: runs [`Job`]s one at a time through a worker.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use conda_mcp_shared::ExecutionResult;
use conda_mcp_shared::limits::KILL_GRACE;
use conda_mcp_shared::protocol::{ClientMessage, JobEvent, JobRefusal, RunRequest, WorkerMessage};
use tokio_util::sync::CancellationToken;

use super::connection::Connection;
use super::lane::Lane;
use super::{ExecError, Job, JobUpdate, WorkerConfig};

/// Extra time, beyond a job's own limit and the kill grace, that the
/// executor waits for the worker's result before declaring the worker
/// unresponsive (it is then killed and the call fails).
pub const WATCHDOG_SLACK: Duration = Duration::from_secs(15);

/// One lane: a FIFO queue in front of one worker (see the module docs of
/// [`super`]). Cheap to clone; clones share the lane and the worker.
///
/// The worker is started lazily by the first call that needs it (or by
/// [`Executor::connect`]).
#[derive(Debug, Clone)]
pub struct Executor {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    cfg: WorkerConfig,
    lane: Lane,
    conn: tokio::sync::Mutex<Option<Connection>>,
    jobs_started: AtomicU64,
    worker_pid: AtomicU32,
    next_job: AtomicU64,
    shutdown: CancellationToken,
}

impl Executor {
    /// A new lane for `cfg`. Nothing is started yet.
    pub fn new(cfg: WorkerConfig) -> Self {
        Executor {
            inner: Arc::new(Inner {
                cfg,
                lane: Lane::default(),
                conn: tokio::sync::Mutex::new(None),
                jobs_started: AtomicU64::new(0),
                worker_pid: AtomicU32::new(0),
                next_job: AtomicU64::new(1),
                shutdown: CancellationToken::new(),
            }),
        }
    }

    /// The configuration this executor uses.
    pub fn config(&self) -> &WorkerConfig {
        &self.inner.cfg
    }

    /// Starts (or connects to) the worker now unless one is live, so that a
    /// missing binary, an absent socket or a refusing worker is reported at
    /// startup. Errors: [`ExecError::WorkerUnavailable`],
    /// [`ExecError::HandshakeRefused`], [`ExecError::ShutDown`].
    pub async fn connect(&self) -> Result<(), ExecError> {
        if self.inner.shutdown.is_cancelled() {
            return Err(ExecError::ShutDown);
        }
        let mut conn = self.inner.conn.lock().await;
        self.ensure(&mut conn).await.map(|_| ())
    }

    /// Whether a worker answers now (the readiness probe, `crate::health`):
    /// a worker busy with a job answers by definition; otherwise the live
    /// connection is kept, or a dead one replaced by a fresh worker.
    /// Errors: as [`Executor::connect`] (no worker can be had).
    pub async fn probe(&self) -> Result<(), ExecError> {
        if self.inner.shutdown.is_cancelled() {
            return Err(ExecError::ShutDown);
        }
        let mut conn = match self.inner.conn.try_lock() {
            Ok(conn) => conn,
            // A job holds the worker (it is in the lane): it answers.
            Err(_) if !self.inner.lane.is_empty() => return Ok(()),
            // Another probe, a warm-up or a connect is starting one.
            Err(_) => self.inner.conn.lock().await,
        };
        self.ensure(&mut conn).await.map(|_| ())
    }

    /// Asks the worker (started now unless one is live) to start its warm
    /// conda in the background, so that a later call forks from it instead
    /// of paying a fresh start. Does nothing while a call holds the worker
    /// (that call's end starts the warm conda anyway), after shutdown, or
    /// when the worker cannot be reached (the next call reports that).
    pub async fn warm_up(&self) {
        if self.inner.shutdown.is_cancelled() {
            return;
        }
        let Ok(mut conn) = self.inner.conn.try_lock() else {
            return;
        };
        match self.ensure(&mut conn).await {
            Ok(c) => {
                if let Err(e) = c.send(&ClientMessage::WarmUp).await {
                    tracing::debug!("warm-up not sent: {e}");
                }
            }
            Err(e) => tracing::debug!("warm-up: no worker: {e}"),
        }
    }

    /// The pid of the worker last connected (spawned or listening), if any;
    /// `None` before the first connection and after a worker was found dead
    /// or shut down. Does not wait for a running job.
    pub fn worker_pid(&self) -> Option<u32> {
        match self.inner.worker_pid.load(Ordering::SeqCst) {
            0 => None,
            pid => Some(pid),
        }
    }

    /// Number of jobs handed to a worker so far (Run requests sent). A call
    /// refused before that point (policy, validation, stdin too large,
    /// cancelled or timed out in the queue) does not count.
    pub fn jobs_started(&self) -> u64 {
        self.inner.jobs_started.load(Ordering::SeqCst)
    }

    /// Number of calls waiting or running in this lane.
    pub fn queue_len(&self) -> usize {
        self.inner.lane.len()
    }

    /// Runs `job` after the jobs ahead of it, reporting [`JobUpdate`]s.
    ///
    /// * `Ok(result)`: the process ran (including timeout and cancellation
    ///   while running: `timed_out` / `cancelled`), or the time limit ran out
    ///   while the job was still queued (`timed_out`, `exit_code` null,
    ///   `duration_ms` 0, nothing ran).
    /// * `Err`: see [`ExecError`]; nothing ran, or the worker died.
    pub async fn run(
        &self,
        job: Job,
        mut on_update: impl FnMut(JobUpdate) + Send,
    ) -> Result<ExecutionResult, ExecError> {
        let inner = &self.inner;
        if inner.shutdown.is_cancelled() {
            return Err(ExecError::ShutDown);
        }
        if let Some(stdin) = &job.stdin
            && stdin.len() as u64 > job.limits.stdin_limit_bytes
        {
            return Err(ExecError::StdinTooLarge {
                len: stdin.len() as u64,
                limit: job.limits.stdin_limit_bytes,
            });
        }
        let start_by = job
            .start_by
            .unwrap_or_else(|| tokio::time::Instant::now() + job.limits.timeout);
        let mut ticket = inner.lane.join();
        let mut last_position = None;
        loop {
            match ticket.try_start() {
                Ok(()) => break,
                Err(ahead) => {
                    if last_position != Some(ahead) {
                        on_update(JobUpdate::Queued { position: ahead });
                        last_position = Some(ahead);
                    }
                }
            }
            tokio::select! {
                _ = ticket.changed() => {}
                _ = job.cancel.cancelled() => return Err(ExecError::Cancelled),
                _ = inner.shutdown.cancelled() => return Err(ExecError::ShutDown),
                _ = tokio::time::sleep_until(start_by) => {
                    return Ok(queue_timeout(job.limits.timeout));
                }
            }
        }
        if job.cancel.is_cancelled() {
            return Err(ExecError::Cancelled);
        }
        let mut guard = inner.conn.lock().await;
        let result = self
            .run_on_worker(&mut guard, job, &mut on_update, false)
            .await;
        drop(guard);
        drop(ticket);
        result
    }

    /// Runs `job`, a helper program, on this lane when it holds no conda
    /// job (only helpers wait or run: `Lane::join_light`, so it never
    /// queues behind conda) and the worker can fork it from its warm conda
    /// when its turn comes (`RunRequest::warm_only`); gives `job` back
    /// untouched (`Err`) otherwise (a conda job runs or waits, the worker
    /// refused it with `JobRefusal::NotWarm`, or it was cancelled or its
    /// start time passed while it waited: nothing ran), so that the caller
    /// can run it elsewhere. The server's helper programs use it to reach
    /// the warm conda of the call lane's worker (docs/operating.md "Warm
    /// conda"); a call that arrives meanwhile waits for the helpers' warm
    /// runs, never for a fresh interpreter.
    pub async fn run_helper_warm(
        &self,
        job: Job,
        on_update: impl FnMut(JobUpdate) + Send,
    ) -> Result<Result<ExecutionResult, ExecError>, Job> {
        let inner = &self.inner;
        if inner.shutdown.is_cancelled() || job.stdin.is_some() {
            return Err(job);
        }
        let Some(mut ticket) = inner.lane.join_light() else {
            return Err(job);
        };
        let start_by = job
            .start_by
            .unwrap_or_else(|| tokio::time::Instant::now() + job.limits.timeout);
        while ticket.try_start().is_err() {
            tokio::select! {
                _ = ticket.changed() => {}
                _ = job.cancel.cancelled() => return Err(job),
                _ = inner.shutdown.cancelled() => return Err(job),
                _ = tokio::time::sleep_until(start_by) => return Err(job),
            }
        }
        let mut guard = inner.conn.lock().await;
        let mut on_update = on_update;
        let result = self
            .run_on_worker(&mut guard, job.clone(), &mut on_update, true)
            .await;
        drop(guard);
        drop(ticket);
        match result {
            Err(ExecError::Rejected(JobRefusal::NotWarm)) => {
                inner.jobs_started.fetch_sub(1, Ordering::SeqCst);
                Err(job)
            }
            other => Ok(other),
        }
    }

    /// Makes sure `slot` holds a live connection, replacing a dead one.
    async fn ensure<'a>(
        &self,
        slot: &'a mut Option<Connection>,
    ) -> Result<&'a mut Connection, ExecError> {
        if let Some(c) = slot.as_mut()
            && !c.is_alive()
        {
            let reason = c.death_reason().await;
            tracing::warn!(reason = %reason, "worker found dead; starting a fresh one");
            self.close(slot).await;
        }
        if slot.is_none() {
            let c = Connection::open(&self.inner.cfg).await?;
            tracing::debug!(worker_pid = c.worker_pid, "worker connected");
            self.inner.worker_pid.store(c.worker_pid, Ordering::SeqCst);
            *slot = Some(c);
        }
        slot.as_mut().ok_or(ExecError::ShutDown)
    }

    async fn run_on_worker(
        &self,
        slot: &mut Option<Connection>,
        job: Job,
        on_update: &mut (impl FnMut(JobUpdate) + Send),
        warm_only: bool,
    ) -> Result<ExecutionResult, ExecError> {
        let inner = &self.inner;
        if inner.shutdown.is_cancelled() {
            return Err(ExecError::ShutDown);
        }
        let conn = self.ensure(slot).await?;
        let id = inner.next_job.fetch_add(1, Ordering::SeqCst);
        let req = RunRequest {
            job: id,
            program: job.program,
            argv: job.argv,
            cwd: job.cwd.map(|p| p.to_string_lossy().into_owned()),
            stdin: job.stdin,
            limits: job.limits,
            label: job.label,
            checks: job.checks,
            warm_only,
        };
        if let Err(e) = conn.send(&ClientMessage::Run(Box::new(req))).await {
            let reason = format!("{e}; {}", conn.death_reason().await);
            self.close(slot).await;
            return Err(ExecError::WorkerDied(reason));
        }
        inner.jobs_started.fetch_add(1, Ordering::SeqCst);
        let watchdog = tokio::time::sleep(
            job.limits
                .timeout
                .saturating_add(KILL_GRACE)
                .saturating_add(WATCHDOG_SLACK),
        );
        tokio::pin!(watchdog);
        let mut cancel_sent = false;
        let mut pgid = None;
        let failure = loop {
            tokio::select! {
                msg = conn.events.recv() => match msg {
                    Some(WorkerMessage::Event { job: j, event }) if j == id => match event {
                        JobEvent::Started { pid } => {
                            pgid = Some(pid);
                            on_update(JobUpdate::Started { pid });
                        }
                        JobEvent::Output { stdout_bytes, stderr_bytes, elapsed_ms, progress_fraction } => {
                            on_update(JobUpdate::Output {
                                stdout_bytes,
                                stderr_bytes,
                                elapsed: Duration::from_millis(elapsed_ms),
                                progress_fraction,
                            });
                        }
                        JobEvent::Finished(result) => return Ok(result),
                        JobEvent::Failed(refusal) => return Err(ExecError::Rejected(refusal)),
                    },
                    Some(other) => {
                        tracing::warn!(message = ?other, "unexpected message from the worker ignored");
                    }
                    None => break conn.death_reason().await,
                },
                _ = job.cancel.cancelled(), if !cancel_sent => {
                    cancel_sent = true;
                    if let Err(e) = conn.send(&ClientMessage::Cancel { job: id }).await {
                        break format!("sending the cancel failed: {e}");
                    }
                }
                _ = inner.shutdown.cancelled() => {
                    self.close(slot).await;
                    kill_group(pgid);
                    return Err(ExecError::ShutDown);
                }
                _ = &mut watchdog => break "the worker did not finish the job in time and was killed".to_string(),
            }
        };
        // The worker is gone or unresponsive: make sure it and the job's
        // process group are dead; the next call starts a fresh worker.
        self.close(slot).await;
        kill_group(pgid);
        tracing::warn!(job = id, reason = %failure, "worker lost during a job");
        Err(ExecError::WorkerDied(failure))
    }

    /// Kills the running job (if any) and the worker, and refuses further
    /// calls with [`ExecError::ShutDown`]. Returns within about one second:
    /// closing the socket makes the worker SIGKILL its job's process tree and
    /// exit; a worker still alive after [`super::connection::EXIT_WAIT`] is
    /// SIGKILLed.
    pub async fn shutdown(&self) {
        self.inner.shutdown.cancel();
        let mut conn = self.inner.conn.lock().await;
        self.close(&mut conn).await;
    }

    /// Closes the connection in `slot`, if any (see [`Connection::close`]).
    async fn close(&self, slot: &mut Option<Connection>) {
        if let Some(c) = slot.take() {
            self.inner.worker_pid.store(0, Ordering::SeqCst);
            c.close().await;
        }
    }
}

/// SIGKILL to the process group of a job whose worker vanished (the worker
/// can no longer do it). Descendants that left the group are out of reach
/// here; the worker kills those itself whenever it is alive to.
///
/// Windows: nothing to do here; the job's job object belonged to the
/// vanished worker, and Windows killed the tree when its handle closed.
fn kill_group(pgid: Option<u32>) {
    #[cfg(unix)]
    if let Some(raw) = pgid.and_then(|p| i32::try_from(p).ok())
        && raw > 1
    {
        use nix::sys::signal::{Signal, killpg};
        let _ = killpg(nix::unistd::Pid::from_raw(raw), Signal::SIGKILL);
    }
    #[cfg(not(unix))]
    let _ = pgid;
}

/// The result of a job whose time limit ran out while it waited in the
/// queue: nothing ran.
fn queue_timeout(timeout: Duration) -> ExecutionResult {
    ExecutionResult {
        stderr: format!(
            "conda-mcp: the call waited for earlier calls to finish until its time limit of {} s ran out (the wait is bounded by the limit from when the call arrived); nothing ran",
            timeout.as_secs()
        ),
        timed_out: true,
        ..ExecutionResult::nothing_ran()
    }
}
