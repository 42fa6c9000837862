//! Running a plan: the one place a call meets the worker.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use conda_mcp_shared::ExecutionResult;

use crate::discovery::restart::RestartWatch;
use crate::principal::Principal;
use crate::worker_client::{ExecError, Executor, JobUpdate, Workers};

use super::outcome::{NotRun, Outcome, Ran};
use super::plan::{Lane, Plan, Reader};
use super::shape::{self, CallFacts, ResultSettings};

/// The executors, the restart watch and the result settings every plan
/// runs with.
#[derive(Debug)]
pub struct Runner {
    /// The exec lane: conda calls, one at a time, in order (every call of
    /// a principal without an OS user).
    pub exec: Arc<Executor>,
    /// The workers of principals mapped to an OS user (HTTP mode with such
    /// principals): their conda calls run there instead of on `exec`.
    pub workers: Option<Arc<Workers>>,
    /// The discovery lane: helper scripts, never behind a running conda.
    pub discovery: Arc<Executor>,
    /// Restart detection after mutations.
    pub restart: RestartWatch,
    /// How execution results are shaped (`--result-mode`,
    /// `--max-result-bytes`, `--no-mask-credentials`).
    pub settings: ResultSettings,
}

/// Every worker result enters the server here, before anything reads it.
/// Whatever must hold for all results the server hands on belongs in this
/// function: credentials in `stdout` and `stderr` are masked here (when
/// `mask` is set, the default), so nothing later can send them; the JSON
/// the server parses from the masked stdout is masked again as a value by
/// [`shape::shape`] (a URL written with JSON escapes, `https:\/\/…`, is
/// only recognisable once parsed). Returns the result and how many
/// credentials were masked.
pub fn received(mut result: ExecutionResult, mask: bool) -> (ExecutionResult, u32) {
    let masked = if mask { result.mask_credentials() } else { 0 };
    (result, masked)
}

impl Runner {
    /// Runs `plan` to its outcome for `principal` (whose OS user, when it
    /// has one and [`Runner::workers`] is set, picks the worker).
    ///
    /// `cancel` is the request's cancellation: it cancels the job, which
    /// kills its process tree (or takes it out of the queue). `on_update`
    /// receives the job's updates (queue position, start, output counters).
    /// An execution's result is shaped into the tool output
    /// ([`shape::shape`]: `parsed_json`, the typed error, lean mode, the
    /// budget). A call that exited 0 is checked against the plan's
    /// postcondition (a failed check is the typed error
    /// `postcondition_failed`), and a replacement of an existing
    /// environment is reported (`replaced_environment`, with what the
    /// preview's plan links). After a successful execution that was not
    /// read-only, the restart watch checks whether conda or its plugins
    /// changed; every execution output carries the (sticky)
    /// `restart_required`.
    pub async fn run(
        &self,
        plan: Plan,
        principal: &Principal,
        on_update: impl FnMut(JobUpdate) + Send + 'static,
        cancel: CancellationToken,
    ) -> Outcome {
        let job = plan.job();
        let job_cancel = job.cancel.clone();
        // A principal mapped to an OS user runs conda in its own worker;
        // the lease keeps that worker from being stopped as idle.
        let lease = match (&self.workers, &principal.os_user, plan.lane) {
            (Some(workers), Some(user), Lane::Exec) => match workers.lease(user) {
                Ok(lease) => Some(lease),
                Err(full) => {
                    tracing::warn!("{}: not run: {full}", plan.what);
                    return Outcome::NotRun {
                        what: plan.what,
                        reason: NotRun::Exec(ExecError::WorkerUnavailable(full.to_string())),
                    };
                }
            },
            _ => None,
        };
        let lane = match (&lease, plan.lane) {
            (Some(lease), _) => lease.executor(),
            (None, Lane::Exec) => &self.exec,
            (None, Lane::Discovery) => &self.discovery,
        };
        let run = lane.run(job, on_update);
        tokio::pin!(run);
        let result = tokio::select! {
            r = &mut run => r,
            () = cancel.cancelled() => {
                job_cancel.cancel();
                run.await
            }
        };
        let result = match result {
            Ok(r) => received(r, self.settings.mask_credentials),
            Err(e) => {
                tracing::warn!("{}: not run: {e}", plan.what);
                return Outcome::NotRun {
                    what: plan.what,
                    reason: NotRun::Exec(e),
                };
            }
        };
        match plan.reader {
            Reader::CompletionAnswer => super::completion::read(&result.0),
            Reader::Execution => {
                let (result, masked) = result;
                let succeeded = result.exit_code == Some(0);
                let command = plan
                    .classification
                    .as_ref()
                    .map(|c| c.command.clone())
                    .unwrap_or_default();
                let facts = CallFacts {
                    command: &command,
                    timeout_ms: u64::try_from(plan.limits.timeout.as_millis()).unwrap_or(u64::MAX),
                };
                let mut output = shape::shape(result, self.settings, facts);
                output.confirmation_required = plan.confirmation_required;
                if succeeded
                    && output.error.is_none()
                    && let Some(pc) = &plan.postcondition
                {
                    output.error = pc.failure(&output);
                }
                output.replaced_environment = plan.replacement.clone().map(|mut r| {
                    r.read_plan(output.parsed_json.as_ref());
                    r
                });
                output.credentials_masked = output.credentials_masked.saturating_add(masked);
                output.restart_required = if !plan.read_only() && succeeded {
                    self.restart.after_mutation().await
                } else {
                    self.restart.required()
                };
                Outcome::Ran {
                    what: plan.what,
                    ran: Ran::Execution(Box::new(output)),
                }
            }
        }
    }
}
