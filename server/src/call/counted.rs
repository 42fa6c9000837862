//! The metrics' subscriber to a call's events ([`super::events`]), and the
//! outcome word of a call's end in the tool-call counters
//! ([`crate::metrics::Metrics::tool_call`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::call::events::{Event, Finishing, Sink};
use crate::call::{NotRun, Outcome, Ran};
use crate::metrics::Metrics;

/// The metrics' subscriber to one call's events
/// ([`crate::call::events`]): the call's end ([`Metrics::tool_call`], its
/// outcome word and seconds since the call arrived) and the person's first
/// answer to an approval question ([`Metrics::approval`]). A question sent
/// back to the client is not an end (its retry is).
#[derive(Debug)]
pub struct Counted {
    metrics: Arc<Metrics>,
    tool: String,
    principal: String,
    arrived: Instant,
    answered: AtomicBool,
}

impl Counted {
    /// The counter of a call of `tool` by `principal` that arrived now.
    pub fn new(metrics: Arc<Metrics>, tool: &str, principal: &str) -> Self {
        Counted {
            metrics,
            tool: tool.to_owned(),
            principal: principal.to_owned(),
            arrived: Instant::now(),
            answered: AtomicBool::new(false),
        }
    }
}

impl Sink for Counted {
    fn event(&self, event: &Event<'_>) {
        if let Event::Answered(answer) = event
            && !self.answered.swap(true, Ordering::Relaxed)
        {
            self.metrics.approval(answer.word());
        }
    }

    fn finished<'a>(&'a self, outcome: &'a Outcome) -> Finishing<'a> {
        self.metrics.tool_call(
            &self.tool,
            outcome_label(outcome),
            self.arrived.elapsed().as_secs_f64(),
            &self.principal,
        );
        Box::pin(async {})
    }
}

/// The outcome word of a tool call's [`Outcome`]: `ok` (ran, exit 0, no
/// error), `tool_error` (ran and failed, or a typed error), `invalid`
/// (arguments), `refused` (policy, restrictions, a check inside conda),
/// `declined` (the person said no),
/// `cancelled`, `not_run` (anything else that kept it from running).
pub fn outcome_label(outcome: &Outcome) -> &'static str {
    if outcome.cancelled() {
        return "cancelled";
    }
    match outcome {
        Outcome::InvalidArguments { .. } => "invalid",
        Outcome::Refused(_)
        | Outcome::Restricted(_)
        | Outcome::EnvironmentExists(_)
        | Outcome::DryRunNotHonoured { .. }
        | Outcome::Stopped { .. } => "refused",
        Outcome::NotRun {
            reason: NotRun::Declined { .. },
            ..
        } => "declined",
        Outcome::NotRun { .. } => "not_run",
        Outcome::Answered { .. } => "ok",
        Outcome::Ran {
            ran: Ran::Execution(out),
            ..
        } => {
            if out.is_error() {
                "tool_error"
            } else {
                "ok"
            }
        }
        Outcome::Ran {
            ran: Ran::Answer(_) | Ran::Inventory(_),
            ..
        } => "ok",
    }
}
