//! The approval's one state machine, for every way the person's answer
//! arrives ([`Consent`]):
//!
//! ```text
//! Ask (elicitation, a task's input):
//!     lock ─▶ preview ─▶ ask (bounded by the time limit) ─▶ approve ─▶ re-plan ─▶ same digest? ─▶ apply
//!                                                         └▶ decline, cancel, no answer: declined
//! Answered (the stateless retry, the card's decision):
//!     approve ─▶ lock ─▶ re-plan ─▶ same digest as shown? ─▶ (spend the card's id) ─▶ apply
//!     decline, cancel: declined
//! Defer (stateless, first request):  preview ─▶ the question goes back to the client
//! Card (MCP Apps without elicitation): preview ─▶ the card goes back (its decision is a later Answered)
//! Unavailable:                       preview ─▶ approval_unavailable, with the plan it would have shown
//! ```
//!
//! The lock is the installation's writer lock: held from the preview to
//! the apply when the person answers while the call waits, and from the
//! re-plan to the apply otherwise (the digest check proves the plan is
//! still the one shown). A preview that shows no plan (conda's own error, a
//! timeout, a cancel) is the answer, and nothing is asked. A re-planned
//! digest that differs from the one shown ends with `plan_changed`, nothing
//! applied. Waiting for the answer does not count against the call's time
//! limit but is bounded by it: no answer by then counts as cancel
//! (`declined`). Answers that applied nothing report the milliseconds the
//! call spent (the dry runs, the wait) as `duration_ms`.
//!
//! The card's id is spent when the change starts, not when the decision
//! arrives ([`super::ids`]): a decision that ends at the lock, the re-plan
//! or `plan_changed` changed nothing and leaves the id open (its last
//! answer says why), and only the step that applies makes it
//! [`super::ids::Stage::Applying`]. The card's decision runs apart from
//! the request that brought it (the decide tool answers at once and the
//! card follows the id's stage), so a host's own request limit
//! cuts neither the re-plan nor the apply.
//!
//! What the steps do with conda is behind [`Steps`] (the runner's, in
//! [`super::on_conda`]), so the decisions here are tested without conda.

use std::future::Future;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::ids::{Claim, IdRefusal};
use super::{AskError, Asker, Consent, Question, question::Answer};
use crate::call::events::Answered;
use crate::call::shape::outcome::Unasked;
use crate::call::{NotRun, Outcome};
use crate::worker_client::ExecError;

/// What the state machine does with conda and tells the call's events.
pub trait Steps: Send + Sync {
    /// The installation's writer lock while it is held.
    type Held: Send;

    /// What runs (`conda install`), for messages.
    fn what(&self) -> &str;

    /// The call's time limit: the longest wait for the person's answer.
    fn bound(&self) -> Duration;

    /// The call's own cancellation.
    fn cancel(&self) -> &CancellationToken;

    /// Takes the installation's writer lock (waiting at most the time
    /// limit). Errors: the outcome that ends the call (nothing ran).
    fn hold(&self) -> impl Future<Output = Result<Self::Held, Outcome>> + Send;

    /// The question: runs the preview (conda's dry run), when the command
    /// has one, and describes it; tells the events [`crate::call::events::Event::Asked`].
    /// Errors: the preview's outcome when it showed no plan, or the
    /// refusal its checks would give the apply; nothing is asked.
    fn question(&self) -> impl Future<Output = Result<Question, Outcome>> + Send;

    /// Tells the call's events the person's answer.
    fn answered(&self, answer: Answered);

    /// Applies the change under `held`.
    fn apply(self, held: Self::Held) -> impl Future<Output = Outcome> + Send;
}

/// How the state machine ends.
#[derive(Debug)]
pub enum Ended {
    /// An outcome, as for any call.
    Done(Outcome),
    /// Stateless lifecycle: the question goes back to the client.
    Ask(Question),
    /// The approval card: the question goes back to the client's view;
    /// nothing changed.
    Card {
        /// The question (its plan, text and digest).
        question: Question,
        /// How long its dry run took, in milliseconds.
        duration_ms: u64,
    },
}

/// Runs the approval of a change with `consent` through `steps` (module
/// docs). An answer that applied nothing reports the time the call spent
/// ([`NotRun::took`]).
pub async fn approve<S: Steps>(steps: S, consent: Consent) -> Ended {
    let started = Instant::now();
    let ms = || started.elapsed().as_millis() as u64;
    match decide(steps, consent).await {
        Ended::Done(Outcome::NotRun { what, reason }) => Ended::Done(Outcome::NotRun {
            what,
            reason: reason.took(ms()),
        }),
        Ended::Card { question, .. } => Ended::Card {
            question,
            duration_ms: ms(),
        },
        other => other,
    }
}

/// [`approve`]'s decisions, by the way the answer arrives.
async fn decide<S: Steps>(steps: S, consent: Consent) -> Ended {
    let (held, shown, claim) = match consent {
        // The dry run still runs, so the answer shows what would have
        // changed; nothing is applied.
        Consent::Unavailable(why) => {
            return match steps.question().await {
                Ok(q) => {
                    steps.answered(Answered::Unavailable);
                    Ended::Done(not_run(&steps, unavailable(why, Some(q.message))))
                }
                Err(outcome) => Ended::Done(outcome),
            };
        }
        Consent::Answered {
            answer: answer @ (Answer::Decline | Answer::Cancel),
            ..
        } => {
            steps.answered(Answered::Answer(answer));
            return Ended::Done(not_run(&steps, DECLINED));
        }
        Consent::Defer => {
            return match steps.question().await {
                Ok(q) => Ended::Ask(q),
                Err(outcome) => Ended::Done(outcome),
            };
        }
        // The card is the answer; the decision is a later call, which
        // re-plans under the lock (as the stateless retry).
        Consent::Card => {
            return match steps.question().await {
                Ok(question) => Ended::Card {
                    question,
                    duration_ms: 0,
                },
                Err(outcome) => Ended::Done(outcome),
            };
        }
        Consent::Ask(asker) => match asked(&steps, asker.as_ref()).await {
            Ok((held, shown)) => (Some(held), shown, None),
            Err(end) => return Ended::Done(end),
        },
        Consent::Answered {
            answer: Answer::Approve,
            shown,
            claim,
        } => {
            steps.answered(Answered::Answer(Answer::Approve));
            (None, shown, claim)
        }
    };
    Ended::Done(apply(steps, held, shown, claim).await)
}

/// Asks while the call waits: from the preview to the apply, the
/// installation must not change under the plan shown, so the writer lock is
/// taken first and returned for the apply (no other conda-mcp writes in
/// between; read-only calls still run). Returns the lock and the digest of
/// the question approved.
///
/// Errors: the outcome the call ends with (declined, unavailable,
/// cancelled, the preview's own).
async fn asked<S: Steps>(steps: &S, asker: &dyn Asker) -> Result<(S::Held, String), Outcome> {
    let held = steps.hold().await?;
    let q = steps.question().await?;
    match ask(steps, asker, &q).await {
        Ok(Answer::Approve) => {
            steps.answered(Answered::Answer(Answer::Approve));
            Ok((held, q.digest))
        }
        Ok(answer @ (Answer::Decline | Answer::Cancel)) => {
            steps.answered(Answered::Answer(answer));
            Err(not_run(steps, DECLINED))
        }
        Err(reason) => {
            if matches!(reason, NotRun::ApprovalUnavailable { .. }) {
                steps.answered(Answered::Unavailable);
            }
            Err(not_run(steps, reason))
        }
    }
}

/// Re-plans under the lock (taken now unless `held`) and applies only the
/// plan whose digest is `shown`; the card's `claim` is spent just before
/// the apply (an id no longer deciding applies nothing: `approval_invalid`).
async fn apply<S: Steps>(
    steps: S,
    held: Option<S::Held>,
    shown: String,
    claim: Option<Claim>,
) -> Outcome {
    let held = match held {
        Some(held) => held,
        None => match steps.hold().await {
            Ok(held) => held,
            Err(outcome) => return outcome,
        },
    };
    let again = match steps.question().await {
        Ok(q) => q,
        Err(outcome) => return outcome,
    };
    if again.digest != shown {
        tracing::info!(what = %steps.what(), "approved plan changed before the apply; not applied");
        return not_run(&steps, NotRun::PlanChanged { duration_ms: 0 });
    }
    if let Some(claim) = claim
        && !claim.start()
    {
        tracing::error!(what = %steps.what(), "an approved card's id was no longer deciding; not applied");
        return not_run(&steps, NotRun::ApprovalRefused(IdRefusal::Unknown));
    }
    tracing::info!(what = %steps.what(), "change approved by the person; applying");
    steps.apply(held).await
}

/// Asks the person `q` and waits for the answer, at most the call's time
/// limit (no answer by then is [`Answer::Cancel`]), or until the call is
/// cancelled.
///
/// Errors: [`NotRun::ApprovalUnavailable`] when the client could not ask;
/// a cancelled call (its cancellation, or the question withdrawn).
async fn ask<S: Steps>(steps: &S, asker: &dyn Asker, q: &Question) -> Result<Answer, NotRun> {
    let bound = steps.bound();
    let asked = async {
        asker.ask(q, steps.what()).await.map_err(|e| match e {
            AskError::Failed => unavailable(Unasked::QuestionFailed, Some(q.message.clone())),
            AskError::Withdrawn => NotRun::Exec(ExecError::Cancelled),
            AskError::Internal => NotRun::Internal("an internal error occurred"),
        })
    };
    tokio::select! {
        r = tokio::time::timeout(bound, asked) => r.unwrap_or_else(|_| {
            tracing::info!(
                seconds = bound.as_secs_f64(),
                "the approval question was not answered within the call's time limit; not applied"
            );
            Ok(Answer::Cancel)
        }),
        () = steps.cancel().cancelled() => Err(NotRun::Exec(ExecError::Cancelled)),
    }
}

/// [`NotRun::Declined`] before [`approve`] sets its duration.
const DECLINED: NotRun = NotRun::Declined { duration_ms: 0 };

/// [`NotRun::ApprovalUnavailable`] for `why`, with the question's text
/// when the dry run could be made; its duration is set by [`approve`].
fn unavailable(why: Unasked, plan: Option<String>) -> NotRun {
    NotRun::ApprovalUnavailable {
        why,
        plan,
        duration_ms: 0,
    }
}

fn not_run<S: Steps>(steps: &S, reason: NotRun) -> Outcome {
    Outcome::NotRun {
        what: steps.what().to_owned(),
        reason,
    }
}

#[cfg(test)]
mod tests;
