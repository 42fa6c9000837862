//! What the handler does around a planned call for an operator: the
//! restrictions (protected environments, allowed channels:
//! [`crate::call::restrict`]), the scope a token needs to call at all
//! (`conda:read`, [`crate::policy::scopes`]), the audit line of an
//! attempted change ([`crate::audit`], written before the answer is
//! sent), and the tool-call metrics ([`crate::metrics`]).

use std::path::PathBuf;
use std::time::Instant;

use crate::audit::{Draft, Kind, Trail};
use crate::call::restrict;
use crate::call::{Outcome, Plan};
use crate::metrics::outcome_label;
use crate::policy::{Refusal, scopes};
use crate::principal::Principal;

use super::consent::Reply;
use super::handler::Handler;
use super::live::Surface;
use crate::tools::Route;

/// What the handler keeps of a call for its audit line.
#[derive(Debug)]
pub(super) struct Watch {
    started: Instant,
    draft: Option<Draft>,
}

impl Watch {
    /// A call that arrived now.
    pub(super) fn start() -> Self {
        Watch {
            started: Instant::now(),
            draft: None,
        }
    }
}

/// The refusal of any tool call by a principal whose token lacks
/// [`scopes::READ`] (a token-file line with `-`); `None` when it may call.
pub(super) fn lacks_read(tool: &str, principal: &Principal) -> Option<Outcome> {
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

impl Handler {
    /// Checks a planned conda call against the restrictions (the server's
    /// prediction, an early answer), carries them into the checks conda's
    /// process enforces ([`restrict::Restrictions::arm`]: the plan's and its
    /// preview's), and starts its audit draft when it is a change
    /// (`watch`).
    ///
    /// Errors: [`Outcome::Restricted`] (nothing runs).
    pub(super) async fn oversee(
        &self,
        sf: &Surface,
        route: Route,
        tool: &str,
        plan: &mut Plan,
        principal: &Principal,
        watch: &mut Watch,
    ) -> Result<(), Outcome> {
        let Some(c) = plan.classification.clone() else {
            return Ok(());
        };
        let state = self.state();
        let cwd = plan
            .cwd
            .clone()
            .unwrap_or_else(|| PathBuf::from(conda_mcp_shared::env::FIXED_CWD));
        let facts = restrict::facts(&sf.catalog, &plan.argv, &cwd);
        let dirs = &sf.catalog.environments;
        if let Some(kind) = Kind::of(&c, matches!(route, Route::Execute))
            && state.audit.is_some()
        {
            let os_user = principal
                .os_user
                .clone()
                .or_else(|| state.settings.worker_user.clone())
                .or_else(own_user);
            watch.draft = Some(Draft::planned(
                (&principal.name, os_user.as_deref()),
                tool,
                kind,
                &c,
                &plan.argv,
                facts.prefix(dirs),
            ));
        }
        let restrictions = &state.settings.restrictions;
        if !restrictions.any() {
            return Ok(());
        }
        let configured = match (&state.runner.config, facts.solves) {
            (Some(watch), true) => watch.current().await.channels.clone().unwrap_or_default(),
            _ => Vec::new(),
        };
        restrictions
            .check(&plan.what, &facts, c.requires_write, &configured, dirs)
            .map_err(|r| {
                tracing::info!(tool = %tool, "refused: {r}");
                Outcome::Restricted(r)
            })?;
        // The guard holds them where conda resolved what the call uses.
        if let Some(checks) = plan.checks.as_mut() {
            restrictions.arm(checks, &facts, c.requires_write);
        }
        if let Some(preview) = plan.approval.as_mut().and_then(|a| a.preview.as_mut()) {
            let facts = restrict::facts(&sf.catalog, &preview.argv, &cwd);
            restrictions.arm(
                &mut preview.checks,
                &facts,
                preview.classification.requires_write,
            );
        }
        Ok(())
    }

    /// Records the end of a call of `tool`: its metrics, and, for a change
    /// with `--audit-log`, its audit line (synced before this returns, so
    /// before the answer is sent). A question sent back to the client
    /// (the stateless lifecycle's input-required result) is not an end:
    /// the retry that answers it is.
    pub(super) async fn record(
        &self,
        tool: &str,
        principal: &Principal,
        reply: &Reply,
        watch: Watch,
        trail: &Trail,
    ) {
        let Reply::Done(outcome) = reply else {
            return;
        };
        let state = self.state();
        state.metrics.tool_call(
            tool,
            outcome_label(outcome),
            watch.started.elapsed().as_secs_f64(),
            &principal.name,
        );
        let (shown, answer) = trail.take();
        if let Some(answer) = answer {
            state.metrics.approval(answer.word());
        }
        let Some(log) = &state.audit else {
            return;
        };
        let record = match (watch.draft, outcome) {
            (Some(draft), outcome) => draft.finish(outcome, shown, answer),
            // Refused while planning: a change the policy does not allow
            // (a read refused for lacking conda:read is not a change).
            (None, Outcome::Refused(r)) if r.missing_scopes != [scopes::READ] => {
                let os_user = principal
                    .os_user
                    .clone()
                    .or_else(|| state.settings.worker_user.clone())
                    .or_else(own_user);
                Draft::refused((&principal.name, os_user.as_deref()), tool, r)
            }
            _ => return,
        };
        log.append(record).await;
    }
}

/// The name of the user this process runs as (conda's user without
/// `--worker-user`).
#[cfg(unix)]
fn own_user() -> Option<String> {
    nix::unistd::User::from_uid(nix::unistd::Uid::effective())
        .ok()
        .flatten()
        .map(|u| u.name)
}

/// The name of the user this process runs as (Windows: `USERNAME`, which
/// the logon sets).
#[cfg(not(unix))]
fn own_user() -> Option<String> {
    std::env::var("USERNAME").ok()
}
