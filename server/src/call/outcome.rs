//! How a call ended: the one type every tool kind produces and the MCP
//! layer converts (in `mcp::results`, and only there).

use crate::completion::{AnswerError, CompletionAnswer};
use crate::policy::Refusal;
use crate::schema::ArgumentError;
use crate::worker_client::ExecError;

use super::output::CallOutput;

/// The end of one call.
#[derive(Debug)]
pub enum Outcome {
    /// The arguments break the tool's input schema or a rule the schema
    /// cannot state; nothing ran. Each error names a JSON path, never the
    /// submitted value.
    InvalidArguments {
        /// The tool name.
        tool: String,
        /// Every error found.
        errors: Vec<ArgumentError>,
    },
    /// The startup policy does not allow the call; nothing ran. The refusal
    /// names the missing startup options.
    Refused(Refusal),
    /// A protected environment or a channel outside the allowed list
    /// ([`super::restrict`]); nothing ran.
    Restricted(super::restrict::Restriction),
    /// A create whose target already holds an environment, without
    /// `replace_existing: true`; nothing ran ([`super::guard`]).
    EnvironmentExists(crate::target::Environment),
    /// The call could not run, or ran without producing a result.
    NotRun {
        /// What was to run (`conda env list`, a tool name).
        what: String,
        /// Why.
        reason: NotRun,
    },
    /// conda's configuration forces `dry_run` (a key marked final), so
    /// conda would not honour the `--dry-run` this call is read-only by;
    /// nothing ran.
    DryRunNotHonoured {
        /// What was to run.
        what: String,
        /// The key and where it is forced (never its value).
        forced: crate::discovery::config::ForcedKey,
    },
    /// The server answered from what it knows, without running anything
    /// (`conda_commands`, `conda_describe`): a JSON document.
    Answered {
        /// The tool name.
        tool: String,
        /// The answer.
        value: serde_json::Value,
    },
    /// The call ran and produced a result.
    Ran {
        /// What ran (`conda env list`).
        what: String,
        /// Its result.
        ran: Ran,
    },
}

impl Outcome {
    /// Whether the call was stopped by its cancellation: taken out of the
    /// queue before it ran, or killed while it ran.
    pub fn cancelled(&self) -> bool {
        match self {
            Outcome::NotRun {
                reason: NotRun::Exec(ExecError::Cancelled),
                ..
            } => true,
            Outcome::Ran {
                ran: Ran::Execution(output),
                ..
            } => output.execution.cancelled,
            _ => false,
        }
    }
}

/// What a call that ran produced.
#[derive(Debug)]
pub enum Ran {
    /// A conda execution (generated tools, `conda_execute`).
    Execution(Box<CallOutput>),
    /// `conda_cli_command`'s answer.
    Answer(Box<CompletionAnswer>),
}

/// Why a call produced no result.
#[derive(Debug, thiserror::Error)]
pub enum NotRun {
    /// The tool is not served under the startup options (the text says
    /// which).
    #[error("{0}")]
    Unavailable(&'static str),
    /// The worker client could not run the job.
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// The completion helper produced no answer.
    #[error(transparent)]
    Helper(AnswerError),
    /// The installation's writer lock was not obtained (another conda-mcp
    /// held it until the time limit, the call was cancelled while it
    /// waited, or the lock file could not be used).
    #[error(transparent)]
    InstallLock(#[from] super::install_lock::LockError),
    /// `--approve-writes`: the person declined the change, or dismissed
    /// the question; nothing was changed.
    #[error(
        "the person did not approve this change; nothing was changed. Do not repeat the call \
         unless the person asks for it"
    )]
    Declined,
    /// `--approve-writes`: the plan made just before applying differs from
    /// the one the person approved; nothing was applied.
    #[error(
        "conda's plan changed after the person approved it (the environment or the channels \
         changed in between); nothing was applied. Call again to show the person the new plan"
    )]
    PlanChanged,
    /// `--approve-writes`, but the client declared no elicitation
    /// capability; nothing ran.
    #[error(
        "this change needs the person's approval, but the host cannot ask the person (it \
         declared no elicitation support, the question failed, or, over HTTP, the client \
         started with `initialize`, whose capabilities are not kept between requests: only \
         the 2026-07-28 lifecycle can be asked there); nothing ran. An operator can start \
         the server with --allow-write instead of --approve-writes, or use a host that \
         supports elicitation"
    )]
    ApprovalUnavailable,
    /// A bug inside the server (a panicked call task); logged.
    #[error("{0}")]
    Internal(&'static str),
}
