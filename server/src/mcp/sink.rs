//! The MCP side's subscriber to a call's events
//! ([`crate::call::events::Sink`]): the job's progress goes to the call's
//! [`Tracker`] (the progress notifications of a plain call, the message
//! `tasks/get` reports for a task); the plan's [`Summary`] goes to the
//! request, which decides from it whether to answer with a task handle;
//! and at the end of a call that went on, with `--live-tools`, the tools
//! of a change the call caused are served before its answer is sent
//! ([`super::live`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleServer;
use rmcp::service::Peer;
use tokio::sync::oneshot;

use super::progress::Tracker;
use super::state::State;
use crate::call::events::{Event, Finishing, Sink, Summary};
use crate::call::{NotRun, Outcome};

/// What the request follows of its call.
#[derive(Debug)]
pub struct RequestSink {
    /// The call's phase.
    tracker: Tracker,
    /// Where the plan's summary goes once (the request may have stopped
    /// listening: the call goes on regardless).
    planned: Mutex<Option<oneshot::Sender<Summary>>>,
    /// The call was planned and went on (it was not refused early).
    went_on: AtomicBool,
    /// The served surface and `--live-tools`.
    state: Arc<State>,
    /// The client (for the notifications of `--live-tools`).
    peer: Peer<RoleServer>,
}

impl RequestSink {
    /// The sink of a call followed by `tracker`; its summary goes to
    /// `planned`.
    pub fn new(
        tracker: Tracker,
        planned: oneshot::Sender<Summary>,
        state: Arc<State>,
        peer: Peer<RoleServer>,
    ) -> Self {
        Self {
            tracker,
            planned: Mutex::new(Some(planned)),
            went_on: AtomicBool::new(false),
            state,
            peer,
        }
    }

    fn take_planned(&self) -> Option<oneshot::Sender<Summary>> {
        self.planned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

impl Sink for RequestSink {
    fn event(&self, event: &Event<'_>) {
        match event {
            Event::Progress(update) => self.tracker.update(update.clone()),
            Event::Planned(p) => {
                self.went_on.store(true, Ordering::Relaxed);
                if let Some(tx) = self.take_planned() {
                    let _ = tx.send(Summary::of(p.plan));
                }
            }
            Event::Refused(_) | Event::Asked { .. } | Event::Answered(_) => {}
        }
    }

    /// With `--live-tools`, after a call that went on (not an approval
    /// card, which changed nothing): serves the tools of a change the
    /// restart watch saw before the answer is sent.
    fn finished<'a>(&'a self, outcome: &'a Outcome) -> Finishing<'a> {
        // An early outcome: the request learns no plan.
        drop(self.take_planned());
        Box::pin(async move {
            let card = matches!(
                outcome,
                Outcome::NotRun {
                    reason: NotRun::AwaitingApproval(_),
                    ..
                }
            );
            if let Some(live) = &self.state.live
                && self.went_on.load(Ordering::Relaxed)
                && !card
            {
                live.apply(
                    &self.state.surface,
                    &self.state.pipeline.runner.restart,
                    &self.peer,
                )
                .await;
            }
        })
    }
}
