//! Approval (`--approve-writes`, docs/approval.md): a change is shown to the
//! person and applied exactly as shown, or not at all. One state machine
//! ([`flow`]) for the three ways a person answers: an elicitation while the
//! call waits, a task's input (both through an [`Asker`]), and the approval
//! card or the stateless lifecycle's retry (a later request carries the
//! answer: [`Consent::Answered`]). What the question says and its digest
//! are [`question`]'s; the card's data [`card`]'s, and its single-use ids
//! [`ids`]'s. How a question reaches the person is the protocol's (the MCP
//! side implements [`Asker`]); nothing here knows the protocol.

pub mod card;
pub mod flow;
pub mod ids;
pub mod on_conda;
pub mod question;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

pub use ids::Stage;
pub use question::{APPROVE_FIELD, Answer, Approval, Question, read_answer};

use crate::call::shape::outcome::Unasked;

/// A boxed future of an [`Asker`] (the trait is used as `dyn`).
pub type Asking<'a> = Pin<Box<dyn Future<Output = Result<Answer, AskError>> + Send + 'a>>;

/// How a question reaches the person while the call waits for the answer:
/// an `elicitation/create` request, or a task's `input_required` status
/// answered by `tasks/update` (implemented by the MCP side).
pub trait Asker: Send + Sync + std::fmt::Debug {
    /// Asks `question` about the call named `what` (`conda install`) and
    /// waits for the answer; the caller bounds the wait by the call's time
    /// limit and its cancellation ([`flow`]).
    ///
    /// Errors: [`AskError`].
    fn ask<'a>(&'a self, question: &'a Question, what: &'a str) -> Asking<'a>;
}

/// Why an [`Asker`] has no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    /// The client could not ask (an error answer, another result, a closed
    /// connection): `approval_unavailable`, nothing applied.
    #[error("the approval question failed")]
    Failed,
    /// The question was withdrawn (`tasks/cancel` of the task that asks):
    /// the call is cancelled.
    #[error("the approval question was withdrawn")]
    Withdrawn,
    /// The asker broke its own rule (a second question of one call): an
    /// internal error, nothing applied.
    #[error("the approval question could not be asked: an internal error occurred")]
    Internal,
}

/// How the person's answer to a call's question can arrive (decided by the
/// MCP side from the request's protocol version and the client's
/// capabilities).
#[derive(Debug, Clone)]
pub enum Consent {
    /// The client cannot be asked (why).
    Unavailable(Unasked),
    /// Ask now, while the call waits for the answer.
    Ask(Arc<dyn Asker>),
    /// Stateless lifecycle, first request: answer with the question.
    Defer,
    /// An MCP Apps host without elicitation: answer with the approval
    /// card. The person's decision comes back through the card's tool as
    /// [`Consent::Answered`].
    Card,
    /// A later request carries the person's answer (the stateless
    /// lifecycle's retry, the card's decision) to the question whose digest
    /// it names.
    Answered {
        /// What they chose.
        answer: Answer,
        /// The digest of the question shown (an echoed `requestState`, or
        /// the one bound to the card's id).
        shown: String,
        /// The card's id, approved: spent when the change starts
        /// ([`ids::Claim::start`]); `None` for the stateless retry.
        claim: Option<ids::Claim>,
    },
}

/// What a call that needs approval ends with.
#[derive(Debug)]
pub enum Reply {
    /// An outcome, as for any call.
    Done(crate::call::Outcome),
    /// Stateless lifecycle: the question goes back to the client.
    Ask(Question),
}
