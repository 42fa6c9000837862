//! A call's way from the routed tool to its [`Outcome`]: the scope a token
//! needs to call at all, planning under the principal's policy, the
//! operator's restrictions on the plan, the approval of a change, the run;
//! and the subscribers of the call's [`events`](crate::call::events): the
//! caller's sink (the MCP side), the metrics and, with `--audit-log`, the
//! audit log.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::call::approve::flow::{self, Ended};
use crate::call::approve::ids::{Claim, IdDecision, Ledger, Pending, Stage};
use crate::call::approve::on_conda::OnConda;
use crate::call::approve::{Answer, Consent, Question, Reply};
use crate::call::audit::{AuditLog, Recorder};
use crate::call::counted::Counted;
use crate::call::events::{Event, Fanout, Planned, Sink};
use crate::call::plan::{
    compact_call, completion, generated, host_args, inventory, raw, reads, restrict,
};
use crate::call::shape::outcome::Card;
use crate::call::{CallSettings, NotRun, Outcome, Plan, Runner};
use crate::catalog::Catalog;
use crate::metrics::Metrics;
use crate::policy::{Refusal, scopes};
use crate::principal::Principal;
use crate::tools::{Route, ToolSet};

/// What every call runs with, built once by startup.
#[derive(Debug)]
pub struct Pipeline {
    /// What calls read of the startup settings.
    pub settings: CallSettings,
    /// The executors (exec and discovery lanes) and the restart watch.
    pub runner: Runner,
    /// The approval card's pending ids (`--approve-writes` for MCP Apps
    /// hosts without elicitation).
    pub approvals: Ledger,
    /// What `/metrics` serves (`--listen`; counted on stdio too).
    pub metrics: Arc<Metrics>,
    /// `--audit-log`: every attempted change is recorded there.
    pub audit: Option<Arc<AuditLog>>,
}

/// One call as routed.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// Its route on `tools`.
    pub route: Route,
    /// The catalog the call was routed with.
    pub catalog: &'a Catalog,
    /// The tools the call was routed with.
    pub tools: &'a ToolSet,
    /// Who is calling (over HTTP, whom the token names; else the local
    /// principal): picks the worker.
    pub principal: &'a Principal,
    /// The call's own cancellation (cancels its job, which kills its
    /// process tree or takes it out of the queue).
    pub cancel: &'a CancellationToken,
    /// The roots of a client that declared them (MCP `roots/list`):
    /// places the call's file options may name ([`reads`]).
    pub roots: Option<&'a dyn reads::ClientRoots>,
}

/// A decision of the approval card, looked up ([`Pipeline::decided`]).
// One value per card decision, moved once: the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Decided {
    /// Run the call the id was bound to with the person's answer (approve:
    /// re-plan under the installation's lock, apply only the plan shown,
    /// spending the id as the change starts; decline: nothing runs).
    Run {
        /// The call shown (its tool, arguments and what it runs).
        pending: Pending,
        /// The answer, for that call's run.
        consent: Consent,
        /// The approved id, for the runner to record the decision's end
        /// ([`Claim::finish`]); `None` for a decline.
        claim: Option<Claim>,
    },
    /// A decision about the id is in progress already: nothing more runs.
    InProgress(Stage),
}

impl Pipeline {
    /// Plans and runs one call with `args`; `consent` is how the person's
    /// answer arrives, should the plan need it; the call's events go to
    /// `sink` and to the metrics and audit log. A change that needs the
    /// person's approval goes through [`flow::approve`].
    pub async fn call(
        &self,
        call: &Call<'_>,
        args: Value,
        consent: Consent,
        sink: Arc<dyn Sink>,
    ) -> Reply {
        let events = self.subscribers(call, sink);
        let reply = self.steps(call, args, consent, &events).await;
        if let Reply::Done(outcome) = &reply {
            events.finished(outcome).await;
        }
        reply
    }

    /// The call's subscribers: `sink`, the metrics, the audit log.
    fn subscribers(&self, call: &Call<'_>, sink: Arc<dyn Sink>) -> Fanout {
        let counted = Counted::new(self.metrics.clone(), call.tool, &call.principal.name);
        let events = Fanout::new().with(sink).with(Arc::new(counted));
        match &self.audit {
            Some(log) => events.with(Arc::new(Recorder::new(
                log.clone(),
                call.principal,
                self.settings.worker_user.as_deref(),
                call.tool,
            ))),
            None => events,
        }
    }

    /// [`Pipeline::call`]'s steps, up to the outcome.
    async fn steps(
        &self,
        call: &Call<'_>,
        args: Value,
        consent: Consent,
        events: &Fanout,
    ) -> Reply {
        if let Some(refused) = lacks_read(call.tool, call.principal) {
            return Reply::Done(refused);
        }
        // What hosts add to every tool on their own goes before anything
        // reads the arguments (the schema would refuse it, and the
        // approval's digest binds the arguments).
        let args = host_args::without_host_added(call.tool, args, |name| {
            call.tools.accepts(call.route, name)
        });
        let mut plan = match self.plan(call, &args) {
            Ok(plan) => plan,
            Err(early) => return Reply::Done(early),
        };
        if let Err(restricted) = self.oversee(call, &mut plan, events).await {
            return Reply::Done(restricted);
        }
        let Some(approval) = plan.approval.take() else {
            let outcome = self
                .runner
                .run(plan, call.principal, events.progress(), call.cancel.clone())
                .await;
            return Reply::Done(outcome);
        };
        let what = plan.what.clone();
        let steps = OnConda {
            runner: &self.runner,
            plan,
            approval,
            call: (call.tool, &args),
            principal: call.principal,
            cancel: call.cancel,
            events,
        };
        match flow::approve(steps, consent).await {
            Ended::Done(outcome) => Reply::Done(outcome),
            Ended::Ask(question) => Reply::Ask(question),
            Ended::Card {
                question,
                duration_ms,
            } => Reply::Done(self.card(call, args, what, question, duration_ms)),
        }
    }

    /// The plan of the call, or its early outcome, under the startup
    /// policy narrowed by the scopes of the principal's access token (if
    /// it has any).
    fn plan(&self, call: &Call<'_>, args: &Value) -> Result<Plan, Outcome> {
        let st = &self.settings;
        let policy = st.policy.narrowed(call.principal.scopes);
        let (catalog, tools) = (call.catalog, call.tools);
        match call.route {
            Route::Generated(i) => {
                generated::plan(catalog, &policy, st.typed, &tools.generated[i], args)
            }
            Route::Execute => raw::plan(
                catalog,
                &policy,
                st.limits,
                tools.execute_validator.as_ref(),
                args,
            ),
            Route::CliCommand => {
                completion::plan(catalog, tools.cli_command.is_some(), st.limits, args)
            }
            Route::Inventory => inventory::plan(st.limits, args),
            Route::Compact(tool) => compact_call::plan(
                compact_call::CompactSurface {
                    catalog,
                    tools,
                    profile: st.profile,
                },
                &policy,
                st.typed,
                tool,
                args,
            ),
        }
    }

    /// Checks a planned conda call against the restrictions (the server's
    /// prediction, an early answer), carries them into the checks conda's
    /// process enforces ([`restrict::Restrictions::arm`]: the plan's and
    /// its preview's), and tells the events [`Event::Planned`] (or
    /// [`Event::Refused`]).
    ///
    /// Errors: [`Outcome::Restricted`] (nothing runs).
    async fn oversee(
        &self,
        call: &Call<'_>,
        plan: &mut Plan,
        events: &Fanout,
    ) -> Result<(), Outcome> {
        let dirs = &call.catalog.environments;
        let raw = matches!(call.route, Route::Execute);
        let Some(c) = plan.classification.clone() else {
            events.event(&Event::Planned(Planned {
                plan,
                facts: None,
                dirs,
                raw,
            }));
            return Ok(());
        };
        let cwd = plan
            .cwd
            .clone()
            .unwrap_or_else(|| PathBuf::from(conda_mcp_shared::env::FIXED_CWD));
        let restrictions = &self.settings.restrictions;
        let roots = match call.roots {
            Some(client) if reads::reads_files(call.catalog, &plan.argv, &cwd) => {
                tokio::select! {
                    r = tokio::time::timeout(plan.limits.timeout, client.roots()) => r.unwrap_or_default(),
                    () = call.cancel.cancelled() => Vec::new(),
                }
            }
            _ => Vec::new(),
        };
        if let Err(refused) = self.reads_allowed(call, plan, &cwd, &roots) {
            tracing::info!(tool = %call.tool, "refused: {refused}");
            events.event(&Event::Refused(Planned {
                plan,
                facts: None,
                dirs,
                raw,
            }));
            return Err(Outcome::Restricted(refused.into()));
        }
        let facts = restrict::facts(call.catalog, &plan.argv, &cwd);
        if restrictions.any() {
            let configured = match (&self.runner.config, facts.solves) {
                (Some(watch), true) => watch.current().await.channels.clone().unwrap_or_default(),
                _ => Vec::new(),
            };
            if let Err(r) =
                restrictions.check(&plan.what, &facts, c.requires_write, &configured, dirs)
            {
                tracing::info!(tool = %call.tool, "refused: {r}");
                events.event(&Event::Refused(Planned {
                    plan,
                    facts: Some(&facts),
                    dirs,
                    raw,
                }));
                return Err(Outcome::Restricted(r));
            }
            // The guard holds them where conda resolved what the call uses.
            if let Some(checks) = plan.checks.as_mut() {
                restrictions.arm(checks, &facts, c.requires_write);
            }
            if let Some(preview) = plan.approval.as_mut().and_then(|a| a.preview.as_mut()) {
                let facts = restrict::facts(call.catalog, &preview.argv, &cwd);
                restrictions.arm(
                    &mut preview.checks,
                    &facts,
                    preview.classification.requires_write,
                );
            }
        }
        events.event(&Event::Planned(Planned {
            plan,
            facts: Some(&facts),
            dirs,
            raw,
        }));
        Ok(())
    }

    /// Checks the files the plan makes conda read against the places the
    /// caller may read ([`reads`]): the home of the OS user the call runs
    /// as (the principal's own, else the server worker's), the client's
    /// `roots`, `--allow-read-path`.
    ///
    /// Errors: the first [`reads::ReadRefused`].
    fn reads_allowed(
        &self,
        call: &Call<'_>,
        plan: &Plan,
        cwd: &std::path::Path,
        roots: &[PathBuf],
    ) -> Result<(), reads::ReadRefused> {
        let mapped;
        let caller = match &call.principal.os_user {
            Some(user) => {
                mapped = reads::Caller::of_user(user);
                &mapped
            }
            None => &self.settings.caller,
        };
        let places = reads::ReadPlaces {
            caller,
            roots,
            allowed: &self.settings.restrictions.read_paths,
        };
        reads::check(call.catalog, &plan.argv, cwd, places, &plan.what)
    }

    /// The approval card's answer for `question` (the dry run took
    /// `duration_ms`): a single-use id bound to the principal, the tool,
    /// `args` and the question's digest, valid for the call's time limit.
    fn card(
        &self,
        call: &Call<'_>,
        args: Value,
        what: String,
        question: Question,
        duration_ms: u64,
    ) -> Outcome {
        let ttl = self.settings.limits.timeout;
        let pending = Pending {
            principal: call.principal.clone(),
            tool: call.tool.to_owned(),
            args,
            digest: question.digest,
            what: what.clone(),
        };
        let id = self.approvals.issue(pending, ttl, Instant::now());
        tracing::info!(tool = %call.tool, "approval card shown; nothing changed yet");
        Outcome::NotRun {
            what,
            reason: NotRun::AwaitingApproval(Box::new(Card {
                id,
                expires_in_seconds: ttl.as_secs(),
                plan: question.card,
                message: question.message,
                duration_ms,
            })),
        }
    }

    /// The card's decision, the arguments of the card's tool `tool`, for
    /// `principal` ([`Decided`]; the id's stages are
    /// [`crate::call::approve::ids`]'s).
    ///
    /// Errors: the outcome of arguments that are not a decision, or of an
    /// id that cannot be redeemed (`approval_invalid`); nothing runs.
    pub fn decided(
        &self,
        tool: &str,
        args: &Value,
        principal: &Principal,
    ) -> Result<Decided, Outcome> {
        let (id, approve) = crate::tools::approval_card::read_decision(args).map_err(|errors| {
            Outcome::InvalidArguments {
                tool: tool.to_owned(),
                errors,
            }
        })?;
        let decision = self
            .approvals
            .decide(&id, principal, approve, Instant::now())
            .map_err(|refusal| refused(tool, refusal))?;
        Ok(match decision {
            IdDecision::Approve(pending, claim) => Decided::Run {
                consent: Consent::Answered {
                    answer: Answer::Approve,
                    shown: pending.digest.clone(),
                    claim: Some(claim.clone()),
                },
                pending,
                claim: Some(claim),
            },
            IdDecision::Decline(pending) => Decided::Run {
                consent: Consent::Answered {
                    answer: Answer::Decline,
                    shown: pending.digest.clone(),
                    claim: None,
                },
                pending,
                claim: None,
            },
            IdDecision::InProgress(stage) => Decided::InProgress(stage),
        })
    }

    /// Where the card's decision is, the arguments of the card's status
    /// tool `tool` (`{id}`), for `principal`.
    ///
    /// Errors: the outcome of arguments that are not `{id}`, or of an id
    /// that is unknown, another principal's, expired, or whose result is
    /// no longer kept (`approval_invalid`).
    pub fn approval_stage(
        &self,
        tool: &str,
        args: &Value,
        principal: &Principal,
    ) -> Result<(String, Stage), Outcome> {
        let id = crate::tools::approval_card::read_status(args).map_err(|errors| {
            Outcome::InvalidArguments {
                tool: tool.to_owned(),
                errors,
            }
        })?;
        let stage = self
            .approvals
            .status(&id, principal, Instant::now())
            .map_err(|refusal| refused(tool, refusal))?;
        Ok((id, stage))
    }
}

/// The outcome of a card's id that cannot be used; nothing changed.
fn refused(tool: &str, refusal: crate::call::approve::ids::IdRefusal) -> Outcome {
    tracing::info!(tool = %tool, "an approval id that cannot be used; nothing changed");
    Outcome::NotRun {
        what: tool.to_owned(),
        reason: NotRun::ApprovalRefused(refusal),
    }
}

/// The refusal of any tool call by a principal whose token lacks
/// [`scopes::READ`] (a token-file line with `-`); `None` when it may call.
fn lacks_read(tool: &str, principal: &Principal) -> Option<Outcome> {
    match principal.scopes {
        Some(s) if !s.read => {
            tracing::info!(tool = %tool, "refused: the token may call no tool");
            Some(Outcome::Refused(Refusal {
                command: tool.to_owned(),
                triggers: Vec::new(),
                note: None,
                missing: Vec::new(),
                missing_scopes: vec![scopes::READ],
            }))
        }
        _ => None,
    }
}
