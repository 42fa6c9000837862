//! Typed errors: `error: {code, message, retryable, details}` on every
//! result with `isError`, so a model can act on a reason instead of prose.
//!
//! Codes from the server: `invalid_arguments`, `refused` (details: the
//! missing startup options), `unavailable` (the tool is not served under
//! the startup options), `timeout` and `queue_timeout` (retryable),
//! `cancelled`, `worker_unavailable` (retryable), `helper_failed`,
//! `dry_run_not_honoured`, `internal`, `environment_exists` (the prediction of existing environments,
//! `crate::call::plan::existing_env`), `postcondition_failed` (`crate::call::run::postcondition`),
//! `unmanaged_files_present` and `check_failed` (the checks inside conda's
//! process, `crate::call::plan::checks`); with
//! `--approve-writes` `declined`, `plan_changed` and `approval_unavailable`
//! (docs/approval.md). Codes from conda: see [`super::conda_error`];
//! `killed_by_signal` and `crashed_after_success` for a conda that died of
//! a signal.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

/// What kind of failure a result reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The arguments break the input schema or a rule it cannot state;
    /// nothing ran (details: `errors`, each a JSON path and its rule).
    InvalidArguments,
    /// The startup policy does not allow the call; nothing ran (details:
    /// `missing`, the startup options it needs; `missing_scopes`, the scopes
    /// the caller's access token lacks; `command`).
    Refused,
    /// The tool is not served under the startup options; nothing ran.
    Unavailable,
    /// The time limit ended the process (retryable with a longer limit or a
    /// narrower call; details: `signal`, how it ended).
    Timeout,
    /// The time limit ran out while the call waited behind other conda
    /// calls; nothing ran (retryable).
    QueueTimeout,
    /// The client cancelled the call (details: `signal`, how the process
    /// ended, when one was running).
    Cancelled,
    /// The worker could not be started or reached, or went away during the
    /// call (retryable: the next call starts a fresh worker).
    WorkerUnavailable,
    /// `conda_cli_command`'s helper produced no answer.
    HelperFailed,
    /// A bug inside the server.
    Internal,
    /// conda's configuration forces `dry_run` (marked `#!final`), so conda
    /// would not honour `--dry-run` and the call, read-only only as a dry
    /// run, would change things; nothing ran (details: `key`, and `file`
    /// or `variable` that forces it; never its value).
    DryRunNotHonoured,
    /// `--approve-writes`: the person declined the change or dismissed the
    /// question; nothing was changed (not retryable).
    Declined,
    /// `--approve-writes`: conda's plan changed between the person's
    /// approval and the apply; nothing was applied (a new call asks again).
    PlanChanged,
    /// `--approve-writes`: the host declared no elicitation capability, so
    /// the person cannot be asked; nothing ran.
    ApprovalUnavailable,
    /// `--approve-writes` through the approval card (an MCP Apps host
    /// without elicitation): nothing changed yet; the person approves or
    /// declines in the card shown with this result (details: `approval`,
    /// the card's id and plan; docs/approval.md "The approval card").
    ApprovalPending,
    /// The card's decision came with an approval id that is unknown, used
    /// already, another session's, or expired; nothing changed.
    ApprovalInvalid,
    /// conda: a requested package does not exist in the channels or the
    /// environment.
    PackagesNotFound,
    /// conda: the request cannot be solved.
    Unsatisfiable,
    /// conda: the named environment or prefix does not exist.
    EnvironmentNotFound,
    /// The environment already exists: refused by the server before conda
    /// ran, unless the call sets `replace_existing: true` (details: `prefix`,
    /// `packages`, the `conda-meta/*.json` count); or conda's own refusal.
    EnvironmentExists,
    /// conda: a package specification cannot be parsed.
    InvalidSpec,
    /// conda: a network failure (HTTP, proxy, TLS) (retryable).
    Network,
    /// conda: a lock is held by another process (retryable).
    Lock,
    /// conda: a file or directory cannot be written.
    Permission,
    /// conda: its configuration is invalid, or a key or channel is missing.
    Config,
    /// conda failed for another reason (`details.exception_name` names it
    /// when conda did).
    CondaError,
    /// conda died of a signal (details: `signal`).
    KilledBySignal,
    /// conda printed its success document and then died of a signal at
    /// exit: the change was very probably applied.
    CrashedAfterSuccess,
    /// The call would change a protected environment (conda's `base`
    /// unless `--allow-base-writes`, or one `--protect-env` names);
    /// nothing ran (details: `prefix`, `allowed_by`: the flag that allows
    /// it, when one does).
    ProtectedEnvironment,
    /// The call's channels go beyond the server's `--allowed-channel`
    /// list; nothing ran (details: `channel`, `source`: `call` or
    /// `configuration`).
    ChannelNotAllowed,
    /// A file option names a file outside the places the caller may read
    /// (its home, the client's roots, `--allow-read-path`; never `/etc`,
    /// `/proc`, `/sys`, `/dev` or another user's home); nothing ran
    /// (details: `option`, `rule`, `allowed_by`). Never the path.
    ReadPathNotAllowed,
    /// Removing the whole environment would delete files no package
    /// installed; conda was stopped before it acted (details: `prefix`,
    /// `count`, `bytes`, `first`, the first paths), unless the call sets
    /// `remove_unmanaged_files: true`.
    UnmanagedFilesPresent,
    /// The checks this call rests on could not run inside conda's process
    /// (this conda has no point to run them, resolving the target failed,
    /// or conda ended without reaching its command); nothing was verified,
    /// so the call is treated as not run (details: `reason`).
    CheckFailed,
    /// conda exited 0, but what it was to do is not there (details:
    /// `check`: `created`, `removed` or `success`, and `prefix`); see
    /// `call::postcondition`.
    PostconditionFailed,
}

impl ErrorCode {
    /// Whether repeating the same call may succeed.
    pub fn retryable(self) -> bool {
        matches!(
            self,
            ErrorCode::Timeout
                | ErrorCode::QueueTimeout
                | ErrorCode::WorkerUnavailable
                | ErrorCode::Network
                | ErrorCode::Lock
        )
    }
}

/// A typed error.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolError {
    /// What kind of failure (a stable code).
    pub code: ErrorCode,
    /// One or a few sentences for the model: what happened and what to do.
    pub message: String,
    /// Whether repeating the same call may succeed.
    pub retryable: bool,
    /// Facts by code (`exception_name`, `exit_code`, `signal`, `missing`,
    /// `errors`, ...; in lean mode `left_out`, the keys of conda's error
    /// document dropped from `parsed_json` because `message` holds them or
    /// because they are a traceback).
    pub details: Map<String, Value>,
}

impl ToolError {
    /// An error of `code` with the code's retryability and no details.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ToolError {
            code,
            message: message.into(),
            retryable: code.retryable(),
            details: Map::new(),
        }
    }

    /// Adds one detail.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_owned(), value.into());
        self
    }
}
