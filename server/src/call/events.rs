//! One stream of events per call: what happens to a call is told once, to
//! one [`Sink`], and each observer subscribes to it — the MCP side
//! (progress notifications and the phase a task reports, how the request
//! is answered, the served tools after a change), the audit log
//! (`crate::call::audit::Recorder`) and the metrics (`crate::call::counted::Counted`).
//! [`Fanout`] composes subscribers.
//!
//! The order of one call: [`Event::Planned`] (or [`Event::Refused`] with
//! the plan the restrictions refused), then, for a change that needs the
//! person's approval, [`Event::Asked`] (each time the plan is shown or
//! re-planned) and [`Event::Answered`]; [`Event::Progress`] while a plan
//! waits and runs (its first `Started` update is the start); last
//! [`Sink::finished`] with the outcome, awaited before the answer is sent.
//! A question sent back to the client (the stateless lifecycle's
//! input-required result) is not an end: the retry that answers it is,
//! so `finished` is not called for it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::call::approve::Answer;
use crate::call::plan::restrict::Facts;
use crate::call::{Outcome, Plan};
use crate::catalog::EnvironmentDirs;
use crate::worker_client::JobUpdate;

/// A boxed future of [`Sink::finished`] (sinks are used as `dyn`).
pub type Finishing<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// One event of a call (see the module docs for their order).
#[derive(Debug)]
pub enum Event<'a> {
    /// The call is planned and goes on: it passed the policy and the
    /// restrictions.
    Planned(Planned<'a>),
    /// The restrictions refused the plan: nothing runs; the outcome follows
    /// with [`Sink::finished`].
    Refused(Planned<'a>),
    /// The person is shown the plan (conda's dry-run document, when the
    /// command has one, and the environment a create replaces).
    Asked {
        /// conda's dry-run document.
        document: Option<&'a Value>,
        /// The prefix of the environment replaced.
        replaced: Option<&'a str>,
    },
    /// The person's answer, or that none could be had.
    Answered(Answered),
    /// A plan of the call waits or runs: waiting for another conda-mcp's
    /// write, its queue position, its start, its output counters.
    Progress(JobUpdate),
}

/// A planned conda call, as its events carry it.
#[derive(Debug, Clone, Copy)]
pub struct Planned<'a> {
    /// The plan.
    pub plan: &'a Plan,
    /// What its argv names (the target, the channels), for conda calls.
    pub facts: Option<&'a Facts>,
    /// Where the catalog's environments live (to locate a named target).
    pub dirs: &'a EnvironmentDirs,
    /// The raw tool (`conda_execute`) planned it.
    pub raw: bool,
}

/// The person's answer to an approval question, as the audit log and the
/// metrics record it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answered {
    /// They answered (approve, decline, cancel; no answer within the
    /// call's time limit counts as cancel).
    Answer(Answer),
    /// They could not be asked (no elicitation, the question failed).
    Unavailable,
}

impl Answered {
    /// The word of the audit line and of the metrics' label: `approve`,
    /// `decline`, `cancel`, `unavailable`.
    pub fn word(self) -> &'static str {
        match self {
            Answered::Answer(Answer::Approve) => "approve",
            Answered::Answer(Answer::Decline) => "decline",
            Answered::Answer(Answer::Cancel) => "cancel",
            Answered::Unavailable => "unavailable",
        }
    }
}

/// Where a call's events go. Events are told synchronously and must not
/// block (a progress update arrives for every few KiB of output).
pub trait Sink: Send + Sync {
    /// One event.
    fn event(&self, event: &Event<'_>);

    /// The call ended with `outcome`: awaited before the answer is sent
    /// (the audit line is synced by then). The default does nothing.
    fn finished<'a>(&'a self, outcome: &'a Outcome) -> Finishing<'a> {
        let _ = outcome;
        Box::pin(async {})
    }
}

/// Subscribers in order: each event goes to each of them, and
/// [`Sink::finished`] awaits them one after the other.
#[derive(Clone, Default)]
pub struct Fanout(Vec<Arc<dyn Sink>>);

impl std::fmt::Debug for Fanout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Fanout({} subscribers)", self.0.len())
    }
}

impl Fanout {
    /// No subscribers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `sink` after the others.
    pub fn with(mut self, sink: Arc<dyn Sink>) -> Self {
        self.0.push(sink);
        self
    }

    /// A closure for the worker client's `on_update` (the job's updates as
    /// [`Event::Progress`]).
    pub fn progress(&self) -> impl FnMut(JobUpdate) + Send + 'static {
        let this = self.clone();
        move |update| this.event(&Event::Progress(update))
    }
}

impl Sink for Fanout {
    fn event(&self, event: &Event<'_>) {
        for sink in &self.0 {
            sink.event(event);
        }
    }

    fn finished<'a>(&'a self, outcome: &'a Outcome) -> Finishing<'a> {
        Box::pin(async move {
            for sink in &self.0 {
                sink.finished(outcome).await;
            }
        })
    }
}

/// What the request needs to know of a planned call to decide how it is
/// answered (inline, or with a task handle) and how long a task may live.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// What runs (`conda install`).
    pub what: String,
    /// Whether the plan reports progress.
    pub reports_progress: bool,
    /// Whether it answers with a task at once for a client that declared
    /// tasks ([`Plan::may_run_long`]).
    pub long: bool,
    /// Longest the call can take: waiting in the queue and running are each
    /// bounded by its time limit, plus the worker's kill grace (with
    /// `--approve-writes`, plus the wait for the person's answer, bounded by
    /// the time limit too, and the two dry runs).
    pub longest: Duration,
    /// `--approve-writes` asks the person first.
    pub approval: bool,
}

impl Summary {
    /// The summary of `plan`.
    pub fn of(plan: &Plan) -> Self {
        let approval = plan.approval.is_some();
        // Queue and run; for an approved change also the wait for the
        // installation's lock, the two dry runs (each queued and run) and
        // the question.
        let steps = if approval { 8 } else { 2 };
        Self {
            what: plan.what.clone(),
            reports_progress: plan.reports_progress,
            long: plan.may_run_long(),
            longest: plan.limits.timeout * steps + conda_mcp_shared::limits::KILL_GRACE,
            approval,
        }
    }
}
