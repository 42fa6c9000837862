//! What a call needs of its request besides its arguments, and the one
//! way a plan of the call runs: on the call's own cancellation and
//! tracker, as the request's principal. Shared by the handler
//! ([`super::handler`]) and the approval steps ([`super::consent`]), which
//! both run plans of one call.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::Peer;
use tokio_util::sync::CancellationToken;

use super::live::Surface;
use super::principal::Principal;
use super::progress::Tracker;
use crate::call::{Outcome, Plan, Runner};

/// What a call needs of its request besides the arguments.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// The call's own cancellation: cancelled by the request's
    /// `notifications/cancelled` while the request is open, and by
    /// `tasks/cancel` when it became a task (never by rmcp's cancellation
    /// of the request after its response).
    pub cancel: CancellationToken,
    /// Where the job's updates go.
    pub tracker: Tracker,
    /// The client (for the notifications of `--live-tools`).
    pub peer: Peer<RoleServer>,
    /// The surface the call was routed with.
    pub surface: Arc<Surface>,
    /// Who is calling (over HTTP, whom the token names; else the local
    /// principal): picks the worker and owns the task.
    pub principal: Principal,
    /// What the approval steps tell the call's audit line (the plan shown,
    /// the person's answer).
    pub trail: crate::audit::Trail,
}

impl CallContext {
    /// Runs one plan of the call to its outcome on `runner` (on the call's
    /// cancellation and tracker, in the principal's worker).
    pub async fn run(&self, runner: &Runner, plan: Plan) -> Outcome {
        runner
            .run(
                plan,
                &self.principal,
                self.tracker.observer(),
                self.cancel.clone(),
            )
            .await
    }
}
