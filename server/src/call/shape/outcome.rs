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
    /// ([`crate::call::plan::restrict`]); nothing ran.
    Restricted(crate::call::plan::restrict::Restriction),
    /// A create whose target already holds an environment, without
    /// `replace_existing: true`; nothing ran ([`crate::call::plan::existing_env`]).
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
    /// The checks inside conda's process stopped conda before its command
    /// acted ([`crate::call::plan::checks`]), or could not run: nothing was changed.
    Stopped {
        /// What was to run.
        what: String,
        /// Why, typed (boxed: the other variants are small).
        error: Box<super::error::ToolError>,
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
    /// [`Outcome::InvalidArguments`] of `tool` with one error: the JSON
    /// `path` and the `rule` it breaks (never the value).
    pub fn invalid_argument(tool: &str, path: &str, rule: &str) -> Self {
        Outcome::InvalidArguments {
            tool: tool.to_owned(),
            errors: vec![ArgumentError {
                path: path.to_owned(),
                rule: rule.to_owned(),
            }],
        }
    }

    /// Whether the call was stopped by its cancellation: taken out of the
    /// queue before it ran (the worker's lane, or the wait for the
    /// installation's writer lock, where a queued change waits first), or
    /// killed while it ran.
    pub fn cancelled(&self) -> bool {
        match self {
            Outcome::NotRun {
                reason:
                    NotRun::Exec(ExecError::Cancelled)
                    | NotRun::InstallLock(crate::call::run::install_lock::LockError::Cancelled),
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
    /// `conda_inventory`'s answer.
    Inventory(Box<crate::inventory::InventoryAnswer>),
}

/// Why an approval question of `--approve-writes` could not be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unasked {
    /// The client's capabilities declare no (form) elicitation.
    NoElicitation,
    /// The request carries no client capabilities: over HTTP, a request
    /// of the `initialize` era outside a session (without `Mcp-Session-Id`
    /// the capabilities a client declared in its `initialize` are not
    /// known).
    NoCapabilities,
    /// The client answered the question with an error (or not at all).
    QuestionFailed,
}

impl Unasked {
    /// The cause, as the rest of a sentence.
    pub fn describe(self) -> &'static str {
        match self {
            Unasked::NoElicitation => "the host declared no elicitation support",
            Unasked::NoCapabilities => {
                "over HTTP this request carries no client capabilities and no session (a \
                 client that started with `initialize` is asked in the session its \
                 `initialize` opens when it declares elicitation or MCP Apps, on the requests \
                 that carry its Mcp-Session-Id; otherwise only the 2026-07-28 lifecycle can \
                 be asked there)"
            }
            Unasked::QuestionFailed => "the host failed to ask the question",
        }
    }
}

/// The text of [`NotRun::ApprovalUnavailable`].
fn unavailable_text(why: Unasked, plan: Option<&str>) -> String {
    let mut s = format!(
        "this change needs the person's approval, but the host cannot ask the person: {}; \
         nothing changed. An operator can start the server with --allow-write instead of \
         --approve-writes, or use a host that supports elicitation",
        why.describe()
    );
    if let Some(plan) = plan {
        s.push_str(". What the person would have been asked, with conda's plan:\n");
        s.push_str(plan);
    }
    s
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
    /// The inventory helper produced no answer.
    #[error(transparent)]
    Inventory(crate::inventory::InventoryError),
    /// The installation's writer lock was not obtained (another conda-mcp
    /// held it until the time limit, the call was cancelled while it
    /// waited, or the lock file could not be used).
    #[error(transparent)]
    InstallLock(#[from] crate::call::run::install_lock::LockError),
    /// `--approve-writes`: the person declined the change, or dismissed
    /// the question; nothing was changed.
    #[error(
        "the person did not approve this change; nothing was changed. Do not repeat the call \
         unless the person asks for it"
    )]
    Declined {
        /// How long the call took until the answer, in milliseconds
        /// (the dry run shown and the wait for the person).
        duration_ms: u64,
    },
    /// `--approve-writes`: the plan made just before applying differs from
    /// the one the person approved; nothing was applied.
    #[error(
        "conda's plan changed after the person approved it (the environment or the channels \
         changed in between); nothing was applied. Call again to show the person the new plan"
    )]
    PlanChanged {
        /// How long the call took (both dry runs and the wait), in
        /// milliseconds.
        duration_ms: u64,
    },
    /// `--approve-writes`, but the host cannot ask the person (`why`);
    /// nothing changed. `plan`: the question the person would have seen,
    /// with conda's dry-run plan, when the dry run could be made.
    #[error("{}", unavailable_text(*why, plan.as_deref()))]
    ApprovalUnavailable {
        /// Why the question could not be asked.
        why: Unasked,
        /// The question's text (the command and conda's plan; masked).
        plan: Option<String>,
        /// How long the call took (the dry run), in milliseconds.
        duration_ms: u64,
    },
    /// `--approve-writes` through the approval card: the card is shown to
    /// the person with this result; nothing changed yet.
    #[error(
        "a person must approve or decline this change in the approval card the host shows \
         with this result; nothing has changed yet. Do not repeat the call: the person's \
         decision applies it or not"
    )]
    AwaitingApproval(Box<Card>),
    /// The card's decision carried an approval id that cannot be
    /// redeemed; nothing changed.
    #[error(transparent)]
    ApprovalRefused(crate::call::approve::ids::IdRefusal),
    /// A bug inside the server (a panicked call task); logged.
    #[error("{0}")]
    Internal(&'static str),
}

/// What the approval card shows and how its decision comes back.
#[derive(Debug, Clone, PartialEq)]
pub struct Card {
    /// The single-use approval id ([`crate::call::approve::ids`]).
    pub id: String,
    /// Seconds until the id expires (the server's `--timeout`).
    pub expires_in_seconds: u64,
    /// The plan ([`crate::call::approve::card`]).
    pub plan: serde_json::Value,
    /// The question's plain-words text (the form's message).
    pub message: String,
    /// How long the dry run took, in milliseconds.
    pub duration_ms: u64,
}

impl NotRun {
    /// The milliseconds the call spent before it ended without applying
    /// anything: the dry run and the wait of an approval that was not
    /// given ([`NotRun::Declined`], [`NotRun::PlanChanged`],
    /// [`NotRun::ApprovalUnavailable`]); 0 for every other reason, which
    /// ends before anything runs.
    pub fn duration_ms(&self) -> u64 {
        match self {
            NotRun::Declined { duration_ms }
            | NotRun::PlanChanged { duration_ms }
            | NotRun::ApprovalUnavailable { duration_ms, .. } => *duration_ms,
            NotRun::AwaitingApproval(card) => card.duration_ms,
            _ => 0,
        }
    }

    /// `self` with [`NotRun::duration_ms`] set to `ms` (for the reasons
    /// that carry it; any other is returned unchanged).
    pub fn took(mut self, ms: u64) -> NotRun {
        if let NotRun::Declined { duration_ms }
        | NotRun::PlanChanged { duration_ms }
        | NotRun::ApprovalUnavailable { duration_ms, .. } = &mut self
        {
            *duration_ms = ms;
        }
        if let NotRun::AwaitingApproval(card) = &mut self {
            card.duration_ms = ms;
        }
        self
    }
}
