//! Running a plan: the one place a call meets the worker.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use conda_mcp_shared::ExecutionResult;

use crate::discovery::restart::RestartWatch;
use crate::worker_client::{Executor, JobUpdate};

use super::outcome::{NotRun, Outcome, Ran};
use super::output::CallOutput;
use super::plan::{Lane, Plan, Reader};

/// The executors and the restart watch every plan runs with.
#[derive(Debug)]
pub struct Runner {
    /// The exec lane: conda calls, one at a time, in order.
    pub exec: Arc<Executor>,
    /// The discovery lane: helper scripts, never behind a running conda.
    pub discovery: Arc<Executor>,
    /// Restart detection after mutations.
    pub restart: RestartWatch,
    /// Mask credentials in results (off with `--no-mask-credentials`).
    pub mask_credentials: bool,
}

/// Every worker result enters the server here, before anything reads it.
/// Whatever must hold for all results the server hands on belongs in this
/// function: credentials in `stdout`, `stderr` and `parsed_json` are masked
/// here (when `mask` is set, the default), so nothing later can send them.
/// Returns the result and how many credentials were masked.
pub fn received(mut result: ExecutionResult, mask: bool) -> (ExecutionResult, u32) {
    let masked = if mask { result.mask_credentials() } else { 0 };
    (result, masked)
}

impl Runner {
    /// Runs `plan` to its outcome.
    ///
    /// `cancel` is the request's cancellation: it cancels the job, which
    /// kills its process tree (or takes it out of the queue). `on_update`
    /// receives the job's updates (queue position, start, output counters).
    /// After a successful execution that was not read-only, the restart
    /// watch checks whether conda or its plugins changed; every execution
    /// output carries the (sticky) `restart_required`.
    pub async fn run(
        &self,
        plan: Plan,
        on_update: impl FnMut(JobUpdate) + Send + 'static,
        cancel: CancellationToken,
    ) -> Outcome {
        let job = plan.job();
        let job_cancel = job.cancel.clone();
        let lane = match plan.lane {
            Lane::Exec => &self.exec,
            Lane::Discovery => &self.discovery,
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
            Ok(r) => received(r, self.mask_credentials),
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
                let mut output = CallOutput::new(result);
                output.confirmation_required = plan.confirmation_required;
                output.credentials_masked = masked;
                output.restart_required =
                    if !plan.read_only() && output.execution.exit_code == Some(0) {
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
