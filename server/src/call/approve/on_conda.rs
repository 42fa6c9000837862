//! The approval's [`Steps`] on the runner: the preview is conda's dry run
//! of the call ([`Approval::preview`]), the lock is the installation's
//! writer lock, the apply is the call's own plan (with `--yes`).

use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::flow::Steps;
use super::{Approval, Question, question};
use crate::call::events::{Answered, Event, Fanout, Sink};
use crate::call::run::install_lock::WriterGuard;
use crate::call::shape::error::ErrorCode;
use crate::call::{CallOutput, NotRun, Outcome, Plan, Ran, Runner};
use crate::principal::Principal;
use conda_mcp_shared::guard::UnmanagedRule;

/// One change that needs approval, on the runner.
#[derive(Debug)]
pub struct OnConda<'a> {
    /// Runs the plans.
    pub runner: &'a Runner,
    /// The change (its argv with `--yes`).
    pub plan: Plan,
    /// Its preview.
    pub approval: Approval,
    /// The tool called and its arguments, bound into the question's digest.
    pub call: (&'a str, &'a Value),
    /// Who is calling (picks the worker).
    pub principal: &'a Principal,
    /// The call's own cancellation.
    pub cancel: &'a CancellationToken,
    /// The call's events.
    pub events: &'a Fanout,
}

impl OnConda<'_> {
    /// Runs one plan of the call (on its cancellation and events, in the
    /// principal's worker).
    async fn run(&self, plan: Plan) -> Outcome {
        self.runner
            .run(
                plan,
                self.principal,
                self.events.progress(),
                self.cancel.clone(),
            )
            .await
    }
}

impl Steps for OnConda<'_> {
    type Held = Option<WriterGuard>;

    fn what(&self) -> &str {
        &self.plan.what
    }

    fn bound(&self) -> Duration {
        self.plan.limits.timeout
    }

    fn cancel(&self) -> &CancellationToken {
        self.cancel
    }

    /// Waits (with the "waiting for another conda-mcp" progress) at most
    /// the plan's time limit; `None` when the server has no lock.
    ///
    /// Errors: the outcome [`NotRun::InstallLock`] (timed out, cancelled,
    /// lock file unusable): nothing ran.
    async fn hold(&self) -> Result<Self::Held, Outcome> {
        let events = self.events;
        self.runner
            .take_writer(self.plan.limits.timeout, self.cancel, move |update| {
                events.event(&Event::Progress(update))
            })
            .await
            .map_err(|e| Outcome::NotRun {
                what: self.plan.what.clone(),
                reason: NotRun::InstallLock(e),
            })
    }

    async fn question(&self) -> Result<Question, Outcome> {
        let plan = &self.plan;
        let mut unmanaged = None;
        let document = match self.approval.preview_plan(plan) {
            None => None,
            Some(dry) => match self.run(dry).await {
                Outcome::Ran {
                    ran: Ran::Execution(out),
                    ..
                } if previewed(&out) => {
                    unmanaged = out.unmanaged_files.clone();
                    out.parsed_json
                }
                other => return Err(other),
            },
        };
        self.events.event(&Event::Asked {
            document: document.as_ref(),
            replaced: plan.replacement.as_ref().map(|r| r.prefix.as_str()),
        });
        // An apply that its own checks would refuse is not put to the
        // person: the answer is the refusal, at once.
        if let Some(u) = &unmanaged
            && plan.checks.as_ref().map(|c| c.unmanaged) == Some(UnmanagedRule::Refuse)
        {
            return Err(crate::call::run::verdict::unmanaged_refusal(
                plan.what.clone(),
                u,
            ));
        }
        let (tool, args) = self.call;
        Ok(question::question_with(
            tool,
            args,
            &plan.argv,
            document.as_ref(),
            plan.replacement.as_ref(),
            unmanaged.as_ref(),
        ))
    }

    fn answered(&self, answer: Answered) {
        self.events.event(&Event::Answered(answer));
    }

    async fn apply(self, held: Self::Held) -> Outcome {
        let OnConda {
            runner,
            plan,
            principal,
            cancel,
            events,
            ..
        } = self;
        match &held {
            Some(guard) => {
                runner
                    .run_holding(plan, principal, guard, events.progress(), cancel.clone())
                    .await
            }
            None => {
                runner
                    .run(plan, principal, events.progress(), cancel.clone())
                    .await
            }
        }
    }
}

/// Whether a dry run showed its plan: it exited 0, or printed its success
/// document and then died at exit (`crashed_after_success`, conda 26 with
/// the rattler solver; the plan printed is complete).
fn previewed(out: &CallOutput) -> bool {
    match &out.error {
        None => out.execution.exit_code == Some(0),
        Some(e) => e.code == ErrorCode::CrashedAfterSuccess,
    }
}
