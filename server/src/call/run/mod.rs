//! Running a plan: the one place a call meets the worker ([`Runner`]).
//! Every worker result enters the server here ([`received`]); what the
//! checks inside conda's process reported is read in [`verdict`] (a refusal
//! is an outcome, never a success); a write that exited 0 is checked
//! against its [`postcondition`]; a call that is not read-only holds the
//! installation's writer lock ([`install_lock`]) while it waits and runs.

pub mod install_lock;
pub mod postcondition;
#[cfg(unix)]
pub mod ticket_queue;
pub mod verdict;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use conda_mcp_shared::ExecutionResult;

use crate::discovery::config::{ConfigWatch, ForcedKey};
use crate::discovery::restart::RestartWatch;
use crate::policy::Reason;
use crate::principal::Principal;
use crate::worker_client::pool::Lease;
use crate::worker_client::{ExecError, Executor, JobUpdate, Workers};

use install_lock::{InstallLock, LockError, WriterGuard};

use crate::call::plan::{LaneKind, Plan, Reader};
use crate::call::shape::outcome::{NotRun, Outcome, Ran};
use crate::call::shape::{self, CallFacts, ResultSettings};

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
    /// conda's forced configuration keys, re-read when its files change
    /// (`None`: not watched, as in tests of the runner alone).
    pub config: Option<ConfigWatch>,
    /// The installation's writer lock, held by every call on the exec lane
    /// that is not read-only while it waits and runs (`None`: no lock, as
    /// in tests of the runner alone).
    pub install_lock: Option<InstallLock>,
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
    /// Runs `plan` to its outcome.
    ///
    /// `cancel` is the request's cancellation: it cancels the job, which
    /// kills its process tree (or takes it out of the queue, or ends its
    /// wait for the writer lock). `on_update` receives the job's updates
    /// (waiting for another server's write, queue position, start, output
    /// counters). A call that is not read-only first takes the
    /// installation's writer lock ([`InstallLock`]) and holds it until its
    /// result. The time limit counts running time only: the wait before the
    /// call runs (for the lock, then in the queue) is bounded separately by
    /// the same limit, counted from now (docs/long-calls.md "Queueing").
    ///
    /// Before a conda call, conda's forced configuration is looked at
    /// ([`ConfigWatch::current`]): a call that is read-only only because of
    /// `--dry-run` ends as [`Outcome::DryRunNotHonoured`] when conda would
    /// ignore that flag, and when `--json` is forced off, a result without
    /// `parsed_json` says so in `parsed_json_error`.
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
    ///
    /// `principal`'s OS user, when it has one and [`Runner::workers`] is
    /// set, picks the worker the call runs in.
    pub async fn run(
        &self,
        plan: Plan,
        principal: &Principal,
        on_update: impl FnMut(JobUpdate) + Send + 'static,
        cancel: CancellationToken,
    ) -> Outcome {
        self.run_as(plan, principal, false, on_update, cancel).await
    }

    /// [`Runner::run`] for a caller that holds the installation's writer
    /// lock across several calls (taken with [`Runner::take_writer`], e.g.
    /// from a plan to its apply): the call runs under that guard instead of
    /// taking the lock again; the caller releases it by dropping it.
    pub async fn run_holding(
        &self,
        plan: Plan,
        principal: &Principal,
        _writer: &WriterGuard,
        on_update: impl FnMut(JobUpdate) + Send + 'static,
        cancel: CancellationToken,
    ) -> Outcome {
        self.run_as(plan, principal, true, on_update, cancel).await
    }

    /// Takes the installation's writer lock to hold across several calls
    /// (see [`InstallLock::acquire`]); `Ok(None)` when this runner has no
    /// lock.
    ///
    /// Errors: [`LockError`] (timed out, cancelled, lock file unusable).
    pub async fn take_writer(
        &self,
        timeout: std::time::Duration,
        cancel: &CancellationToken,
        on_update: impl FnMut(JobUpdate),
    ) -> Result<Option<WriterGuard>, LockError> {
        match &self.install_lock {
            Some(lock) => {
                let deadline = tokio::time::Instant::now() + timeout;
                lock.acquire(deadline, cancel, on_update).await.map(Some)
            }
            None => Ok(None),
        }
    }

    /// [`Runner::run`] (`holding`: under a writer guard the caller holds):
    /// conda's forced configuration, the writer lock, the principal's
    /// worker, the job, and what its result becomes, each a step below.
    async fn run_as(
        &self,
        plan: Plan,
        principal: &Principal,
        holding: bool,
        on_update: impl FnMut(JobUpdate) + Send + 'static,
        cancel: CancellationToken,
    ) -> Outcome {
        let json_off = match self.forced_configuration(&plan).await {
            Ok(json_off) => json_off,
            Err(early) => return early,
        };
        let mut on_update = on_update;
        let arrived = tokio::time::Instant::now();
        let mut job = plan.job();
        job.start_by = Some(arrived + plan.limits.timeout);
        let _writer = match self
            .writer(&plan, holding, &cancel, &mut on_update, job.start_by)
            .await
        {
            Ok(writer) => writer,
            Err(early) => return early,
        };
        // A principal mapped to an OS user runs conda in its own worker;
        // the lease keeps that worker from being stopped as idle.
        let lease = match self.lease(&plan, principal) {
            Ok(lease) => lease,
            Err(reason) => {
                return Outcome::NotRun {
                    what: plan.what,
                    reason,
                };
            }
        };
        let job_cancel = job.cancel.clone();
        let lane = plan.lane;
        let run = async {
            match (&lease, lane) {
                (Some(lease), _) => lease.executor().run(job, on_update).await,
                (None, LaneKind::Exec) => self.exec.run(job, on_update).await,
                (None, LaneKind::Discovery) => self.run_helper(job, on_update).await,
            }
        };
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
        let ran = std::time::Duration::from_millis(result.0.duration_ms);
        let waited = arrived.elapsed().saturating_sub(ran);
        match plan.reader {
            Reader::CompletionAnswer => crate::call::plan::completion::read(&result.0),
            Reader::InventoryAnswer => crate::call::plan::inventory::read(
                &result.0,
                self.settings
                    .max_result_bytes
                    .unwrap_or(crate::inventory::DEFAULT_BUDGET_BYTES),
            ),
            Reader::Execution => self.execution(plan, result, json_off, waited).await,
        }
    }

    /// The environment watch's `stamps` request
    /// ([`crate::inventory::stamps`]) in `principal`'s worker, as any
    /// helper runs (a principal mapped to an OS user: its own worker; else
    /// `Runner::run_helper`):
    /// the environments its conda lists and the stat of what changes with
    /// them. Not a tool call: no events, no audit record; the result is
    /// masked like any other.
    ///
    /// Errors: [`NotRun::Exec`] when the job could not run (a full pool,
    /// an unusable worker), [`NotRun::Inventory`] when the helper gave no
    /// answer.
    pub async fn stamps(
        &self,
        limits: conda_mcp_shared::limits::Limits,
        principal: &Principal,
        cancel: CancellationToken,
    ) -> Result<crate::inventory::stamps::Stamps, NotRun> {
        let plan = crate::call::plan::inventory::stamps_plan(limits);
        let lease = self.lease(&plan, principal)?;
        let job = plan.job();
        let job_cancel = job.cancel.clone();
        let run = async {
            match &lease {
                Some(lease) => lease.executor().run(job, |_| {}).await,
                None => self.run_helper(job, |_| {}).await,
            }
        };
        tokio::pin!(run);
        let result = tokio::select! {
            r = &mut run => r,
            () = cancel.cancelled() => {
                job_cancel.cancel();
                run.await
            }
        };
        let (result, _) = received(
            result.map_err(NotRun::Exec)?,
            self.settings.mask_credentials,
        );
        crate::inventory::stamps::read(&result).map_err(NotRun::Inventory)
    }

    /// A helper program's job (the discovery lane's kind) of the server's
    /// own principal: on the call lane when it holds no conda job (behind
    /// other helpers at most), where the worker forks it from its warm
    /// conda once that is ready (conda's modules already imported: tens of
    /// milliseconds instead of a fresh interpreter's import of conda),
    /// else on the discovery lane; never behind a conda call.
    async fn run_helper(
        &self,
        job: crate::worker_client::Job,
        on_update: impl FnMut(JobUpdate) + Send,
    ) -> Result<ExecutionResult, crate::worker_client::ExecError> {
        let mut on_update = on_update;
        match self.exec.run_helper_warm(job, &mut on_update).await {
            Ok(result) => result,
            Err(job) => self.discovery.run(job, on_update).await,
        }
    }

    /// conda's forced configuration before a conda call (re-read when a
    /// `.condarc` changed): the `--json` key it turns off, if any.
    ///
    /// Errors: the early [`Outcome::DryRunNotHonoured`] of a call that is
    /// read-only only by its dry run, when conda would not honour it.
    async fn forced_configuration(&self, plan: &Plan) -> Result<Option<ForcedKey>, Outcome> {
        let (LaneKind::Exec, Some(watch)) = (plan.lane, self.config.as_ref()) else {
            return Ok(None);
        };
        let forced = watch.current().await;
        let by_dry_run = plan
            .classification
            .as_ref()
            .is_some_and(|c| c.reason == Reason::DryRun);
        if by_dry_run && let Some(key) = forced.dry_run_defeated() {
            tracing::info!(key = %key.key, "{}: refused: conda would not honour --dry-run", plan.what);
            return Err(Outcome::DryRunNotHonoured {
                what: plan.what.clone(),
                forced: key.clone(),
            });
        }
        Ok(forced.json_off().cloned())
    }

    /// The installation's writer lock for a conda call that is not
    /// read-only (unless the caller holds it), waited for until `start_by`
    /// (the call's wait bound; the wait leaves its time limit whole).
    ///
    /// Errors: the early [`NotRun::InstallLock`] (timed out, cancelled,
    /// lock file unusable).
    async fn writer(
        &self,
        plan: &Plan,
        holding: bool,
        cancel: &CancellationToken,
        on_update: &mut (impl FnMut(JobUpdate) + Send),
        start_by: Option<tokio::time::Instant>,
    ) -> Result<Option<WriterGuard>, Outcome> {
        let (LaneKind::Exec, false, false, Some(lock)) = (
            plan.lane,
            plan.read_only(),
            holding,
            self.install_lock.as_ref(),
        ) else {
            return Ok(None);
        };
        let deadline =
            start_by.unwrap_or_else(|| tokio::time::Instant::now() + plan.limits.timeout);
        match lock.acquire(deadline, cancel, &mut *on_update).await {
            Ok(guard) => Ok(Some(guard)),
            Err(e) => {
                tracing::info!("{}: not run: {e}", plan.what);
                Err(Outcome::NotRun {
                    what: plan.what.clone(),
                    reason: NotRun::InstallLock(e),
                })
            }
        }
    }

    /// The lease of `principal`'s own worker, for a conda call of a
    /// principal mapped to an OS user (`None` for everyone else).
    ///
    /// Errors: the early [`NotRun::Exec`] when the pool is full.
    fn lease(&self, plan: &Plan, principal: &Principal) -> Result<Option<Lease>, NotRun> {
        // Both lanes: a helper (inventory, completion, the environment
        // watch) reads what the principal's own conda reads, so it runs in
        // that user's worker (behind its calls, which share one lane).
        match (&self.workers, &principal.os_user) {
            (Some(workers), Some(user)) => match workers.lease(user) {
                Ok(lease) => Ok(Some(lease)),
                Err(full) => {
                    tracing::warn!("{}: not run: {full}", plan.what);
                    Err(NotRun::Exec(ExecError::WorkerUnavailable(full.to_string())))
                }
            },
            _ => Ok(None),
        }
    }

    /// What an execution becomes: the tool output shaped from the result
    /// (`masked` credentials counted), with what the plan knows (dry run
    /// for confirmation, a replacement, the postcondition of a write) and,
    /// after a write that succeeded, the restart watch's verdict. `waited`
    /// is how long the call waited before it ran (for the message of a
    /// time limit).
    async fn execution(
        &self,
        plan: Plan,
        (result, masked): (ExecutionResult, u32),
        json_off: Option<ForcedKey>,
        waited: std::time::Duration,
    ) -> Outcome {
        if let Some(stopped) = verdict::stopped(&plan, &result) {
            tracing::info!(
                "{}: conda was stopped before it acted, or its checks could not run",
                plan.what
            );
            return stopped;
        }
        let report = verdict::report(&result);
        let succeeded = result.exit_code == Some(0);
        let command = plan
            .classification
            .as_ref()
            .map(|c| c.command.clone())
            .unwrap_or_default();
        let facts = CallFacts {
            command: &command,
            timeout_ms: u64::try_from(plan.limits.timeout.as_millis()).unwrap_or(u64::MAX),
            waited_ms: u64::try_from(waited.as_millis()).unwrap_or(u64::MAX),
            argv: &plan.argv,
            verbose: shape::asks_for_detail(&plan.argv),
        };
        let mut output = shape::shape(result, self.settings, facts);
        output.confirmation_required = plan.confirmation_required;
        output.apply_requires = plan
            .apply_requires
            .iter()
            .map(|o| (*o).to_owned())
            .collect();
        if let Some(off) = report.as_ref().and_then(|r| r.json_forced_off.as_ref())
            && output.parsed_json.is_none()
        {
            let how = if off.final_ {
                "is marked final"
            } else {
                "is false"
            };
            output.parsed_json_error = Some(format!(
                "conda's configuration turns --json off (`{}` {how} in {}), so conda printed text, not JSON",
                off.key,
                verdict::place(off)
            ));
        } else if let Some(key) = json_off
            && output.parsed_json.is_none()
            && plan.argv.iter().any(|a| a == "--json")
        {
            output.parsed_json_error = Some(format!(
                "conda's configuration turns --json off (`{}` is marked final in {}), so conda printed text, not JSON",
                key.key,
                key.place()
            ));
        }
        if succeeded
            && output.error.is_none()
            && let Some(pc) = &plan.postcondition
        {
            let resolved = report
                .as_ref()
                .and_then(|r| r.prefix.as_deref())
                .map(std::path::Path::new);
            output.error = pc.failure(&output, resolved);
        }
        output.unmanaged_files = report.as_ref().and_then(|r| {
            let files = r.unmanaged.as_ref().filter(|f| f.count > 0)?;
            let mut u = crate::call::shape::output::UnmanagedFiles::of(r.prefix.as_deref()?, files);
            u.removed = !r.dry_run && succeeded;
            Some(u)
        });
        output.replaced_environment = plan.replacement.clone().map(|mut r| {
            r.read_plan(output.parsed_json.as_ref());
            r
        });
        // A failed dry run has no plan to confirm.
        output.dry_run_for_confirmation = plan.confirmation_required;
        if output.is_error() {
            output.confirmation_required = false;
            output.apply_requires.clear();
        }
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
