//! One job from spawn to result: stdin, output capture, progress events,
//! timeout/cancel/abort, drain grace, process-tree cleanup.
//!
//! Order of events (ARCHITECTURE.md "Limits"):
//! 1. spawn in a new process group; `Started`;
//! 2. stdin written and both outputs drained concurrently; `Output` about once
//!    a second;
//! 3. the child exits, or the time limit / a cancel ends it: SIGTERM to the
//!    group, [`KILL_GRACE`] later SIGKILL (an abort after a connection drop
//!    skips the grace: nobody is waiting for a tidy exit; so does Windows,
//!    which has no SIGTERM: its job object is terminated at once);
//! 4. the readers get [`DRAIN_GRACE`] to reach EOF; a grandchild still
//!    holding a pipe is not waited for;
//! 5. the group and every remaining descendant are killed and reaped
//!    ([`crate::reap`]; on Windows the job object ends them all);
//! 6. `Finished` with the result.

use std::time::{Duration, Instant};

use conda_mcp_shared::guard::GuardOutcome;
use conda_mcp_shared::limits::{KILL_GRACE, Limits};
use conda_mcp_shared::protocol::{JobEvent, JobRefusal, RunRequest};
use conda_mcp_shared::{ExecutionResult, StopSignal};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::capture::{self, SharedCapture};
use crate::contain::{self, Signal};
use crate::limit;
use crate::reap;
use crate::spawn::Programs;

/// How long the readers may take to reach EOF after the child exited. A
/// background grandchild that inherited the pipes is not waited for longer.
pub const DRAIN_GRACE: Duration = Duration::from_millis(200);
/// Interval of `Output` events.
pub const OUTPUT_INTERVAL: Duration = Duration::from_secs(1);

/// A request's limits clamped to the worker's own `ceilings` (its
/// `--max-timeout`, `--max-output-bytes`, `--max-stdin-bytes`, so a
/// listening worker bounds every server); logs one line naming each
/// clamped limit (the numbers only).
pub fn clamp(req: &RunRequest, ceilings: &Limits) -> Limits {
    let asked = req.limits;
    let eff = asked.clamped_to(*ceilings);
    if eff.timeout < asked.timeout {
        tracing::warn!(
            job = req.job,
            requested_ms = asked.timeout_ms(),
            clamped_ms = eff.timeout_ms(),
            "request clamped: timeout"
        );
    }
    if eff.output_limit_bytes < asked.output_limit_bytes {
        tracing::warn!(
            job = req.job,
            requested = asked.output_limit_bytes,
            clamped = eff.output_limit_bytes,
            "request clamped: output_limit_bytes"
        );
    }
    if eff.stdin_limit_bytes < asked.stdin_limit_bytes {
        tracing::warn!(
            job = req.job,
            requested = asked.stdin_limit_bytes,
            clamped = eff.stdin_limit_bytes,
            "request clamped: stdin_limit_bytes"
        );
    }
    eff
}

/// How a running job is asked to stop.
#[derive(Debug, Clone, Default)]
pub struct Stop {
    /// Client cancel: SIGTERM, grace, SIGKILL; the result has `cancelled`.
    pub cancel: CancellationToken,
    /// Connection lost or worker shutting down: SIGKILL at once.
    pub abort: CancellationToken,
}

/// Why the process ended early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    Exited,
    TimedOut,
    Cancelled,
    Aborted,
}

/// Runs one job to its end, sending its events on `events`.
///
/// Returns the final event (`Finished` or `Failed`), which the caller sends
/// after this returns: every process of the job is gone by then.
pub async fn run(
    req: RunRequest,
    programs: &Programs,
    ceilings: &Limits,
    stop: Stop,
    events: mpsc::Sender<JobEvent>,
) -> JobEvent {
    let eff = clamp(&req, ceilings);
    let program = programs
        .path_of(req.program)
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    if let Some(stdin) = &req.stdin
        && stdin.len() as u64 > eff.stdin_limit_bytes
    {
        return refuse(
            &req,
            JobRefusal::StdinTooLarge {
                len_bytes: stdin.len() as u64,
                limit_bytes: eff.stdin_limit_bytes,
            },
        );
    }
    let start = Instant::now();
    let launched = match programs.launch(&req).await {
        Ok(l) => l,
        Err(e) => return refuse(&req, e),
    };
    // A warm job's own run starts here (its launch may have waited for the
    // warm conda's start).
    let running = Instant::now();
    let crate::spawn::Launched {
        pid,
        warm,
        stdin,
        stdout,
        stderr,
        report,
        process: mut child,
    } = launched;
    #[cfg(unix)]
    let report = report.map(|r| tokio::spawn(crate::guard::read_report(r)));
    #[cfg(windows)]
    let has_checks = req.checks.is_some();
    // The argv is the caller's submitted values (specs, paths, channel URLs
    // that may carry credentials): the log shows only how many there are.
    // The label is the command path, chosen by the server.
    tracing::info!(job = req.job, label = %req.label, program = %program, argc = req.argv.len(), pid, warm, "job started");
    let _ = events.send(JobEvent::Started { pid }).await;

    let stdin_task = match (stdin, req.stdin) {
        (Some(mut pipe), Some(bytes)) => Some(tokio::spawn(async move {
            // A child that never reads gets EPIPE once it exits; either way
            // the write ends with the job, it never blocks the worker.
            let _ = pipe.write_all(&bytes).await;
            let _ = pipe.shutdown().await;
        })),
        _ => None,
    };
    let limit = usize::try_from(eff.output_limit_bytes).unwrap_or(usize::MAX);
    let out: SharedCapture = Default::default();
    let err: SharedCapture = Default::default();
    let mut readers = vec![
        tokio::spawn(capture::drain(stdout, out.clone(), limit, true)),
        tokio::spawn(capture::drain(stderr, err.clone(), limit, false)),
    ];

    let deadline = tokio::time::Instant::from_std(start) + eff.timeout;
    let mut ticker = tokio::time::interval_at(
        tokio::time::Instant::now() + OUTPUT_INTERVAL,
        OUTPUT_INTERVAL,
    );
    let mut status = None;
    let mut stopped_by = None;
    let ended = loop {
        tokio::select! {
            s = child.wait() => { status = s; break Ended::Exited; }
            _ = tokio::time::sleep_until(deadline) => break Ended::TimedOut,
            _ = stop.cancel.cancelled() => break Ended::Cancelled,
            _ = stop.abort.cancelled() => break Ended::Aborted,
            _ = ticker.tick() => {
                reap::observe(&programs.spared());
                let (o, e) = (capture::lock(&out), capture::lock(&err));
                let ev = JobEvent::Output {
                    stdout_bytes: o.total,
                    stderr_bytes: e.total,
                    elapsed_ms: start.elapsed().as_millis() as u64,
                    progress_fraction: o.progress,
                };
                drop((o, e));
                let _ = events.try_send(ev);
            }
        }
    };
    if ended != Ended::Exited {
        let grace = if ended == Ended::Aborted || !contain::HAS_TERM {
            Duration::ZERO
        } else {
            KILL_GRACE
        };
        let (s, signal) = terminate(&mut child, pid, grace, &stop.abort).await;
        status = s;
        stopped_by = Some(signal);
    }
    let duration_ms = start.elapsed().as_millis() as u64;

    // Drain grace, then make sure nothing of the job is left (this also
    // closes pipes a grandchild was holding, so the readers reach EOF).
    let drained = tokio::time::timeout(DRAIN_GRACE, futures::future::join_all(&mut readers))
        .await
        .is_ok();
    child.signal_tree(pid, Signal::Kill);
    let descendants_killed = reap::kill_all_descendants(&programs.spared()).await;
    if !drained {
        // Only the readers still running: a finished one already gave its
        // output to the first wait, and polling it again panics.
        let _ = tokio::time::timeout(
            Duration::from_secs(1),
            futures::future::join_all(readers.iter_mut().filter(|r| !r.is_finished())),
        )
        .await;
    }
    for r in &readers {
        r.abort();
    }
    // Every process of the job is gone, so the report pipe is at end of
    // file (the bound only guards against a descriptor leaked elsewhere).
    #[cfg(unix)]
    let guard = match report {
        Some(task) => Some(
            tokio::time::timeout(DRAIN_GRACE, task)
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or(GuardOutcome::NoReport),
        ),
        None => None,
    };
    // Windows: the named pipe's outcome (a report, or none when the guard
    // never connected); a conda that cannot be guarded (a plain `.exe`,
    // report-only checks) ran without it.
    #[cfg(windows)]
    let guard = match report {
        Some(pipe) => Some(pipe.outcome().await),
        None if has_checks => Some(GuardOutcome::Unavailable),
        None => None,
    };
    if let Some(t) = stdin_task {
        t.abort();
    }
    // The zygote goes back to its slot before it may be replaced.
    drop(child);
    programs.after_job(req.program);

    let (o, e) = (
        std::mem::take(&mut *capture::lock(&out)),
        std::mem::take(&mut *capture::lock(&err)),
    );
    let (stdout, stdout_truncated, stdout_lossy) =
        limit::to_text(&o.kept, limit, o.total > o.kept.len() as u64);
    let (stderr, stderr_truncated, stderr_lossy) =
        limit::to_text(&e.kept, limit, e.total > e.kept.len() as u64);
    let exit_code = match ended {
        Ended::Exited => status.and_then(contain::exit_code),
        _ => None,
    };
    let result = ExecutionResult {
        exit_code,
        stdout,
        stderr,
        duration_ms,
        timed_out: ended == Ended::TimedOut,
        cancelled: matches!(ended, Ended::Cancelled | Ended::Aborted),
        stdout_truncated,
        stderr_truncated,
        stdout_lossy,
        stderr_lossy,
        stopped_by,
        guard,
    };
    tracing::info!(
        job = req.job,
        label = %req.label,
        pid,
        exit_code = %result.exit_code.map_or("none".to_string(), |c| c.to_string()),
        duration_ms,
        stdout_kept = o.kept.len(),
        stdout_dropped = o.total - o.kept.len() as u64,
        stderr_kept = e.kept.len(),
        stderr_dropped = e.total - e.kept.len() as u64,
        timed_out = result.timed_out,
        cancelled = result.cancelled,
        aborted = ended == Ended::Aborted,
        descendants_killed,
        warm,
        "job finished"
    );
    if ended == Ended::Exited {
        if warm {
            programs.ran_warm(req.program, running.elapsed());
        } else {
            programs.ran_fresh(req.program, Duration::from_millis(duration_ms));
        }
    }
    JobEvent::Finished(result)
}

/// SIGTERM to the group, up to `grace` for the leader to exit, then SIGKILL
/// (at once when `grace` is zero or `abort` fires meanwhile). Returns the
/// leader's status once reaped, and the signal that ended it.
async fn terminate(
    child: &mut crate::spawn::Process,
    pgid: u32,
    grace: Duration,
    abort: &CancellationToken,
) -> (Option<std::process::ExitStatus>, StopSignal) {
    if !grace.is_zero() {
        child.signal_tree(pgid, Signal::Term);
        tokio::select! {
            s = child.wait() => return (s, StopSignal::Term),
            _ = tokio::time::sleep(grace) => {}
            _ = abort.cancelled() => {}
        }
    }
    child.signal_tree(pgid, Signal::Kill);
    // SIGKILL cannot be ignored; the cap only guards against a process
    // stuck in uninterruptible sleep.
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .ok()
        .flatten();
    (status, StopSignal::Kill)
}

fn refuse(req: &RunRequest, why: JobRefusal) -> JobEvent {
    tracing::warn!(job = req.job, label = %req.label, reason = %why, "job refused, nothing spawned");
    JobEvent::Failed(why)
}
