//! The plan of one call: everything the runner needs, decided before
//! anything runs.

use std::path::PathBuf;

use crate::catalog::Catalog;
use crate::policy::{self, Classification, Policy};
use crate::worker_client::{Job, Program};
use conda_mcp_shared::limits::Limits;

use super::outcome::Outcome;

/// Which executor a plan runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// conda calls: one at a time, in arrival order.
    Exec,
    /// Helper scripts of the target's Python (`conda_cli_command`): never
    /// queued behind a running conda.
    Discovery,
}

/// What the run's execution result becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// A conda execution: the result is the tool's output as it is.
    Execution,
    /// The completion helper: its stdout is read as the answer document of
    /// `conda_cli_command`.
    CompletionAnswer,
}

/// One call, ready to run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// What ran, for the summary line, progress messages and not-run
    /// messages (`conda env list`, `conda_execute (conda env list)`); never
    /// argument values.
    pub what: String,
    /// The label of the worker's log line; never argument values.
    pub label: String,
    /// Which of the worker's two programs runs.
    pub program: Program,
    /// Arguments after the program (one item per argument, no shell).
    pub argv: Vec<String>,
    /// Working directory; `None` = the worker's.
    pub cwd: Option<PathBuf>,
    /// Bytes for stdin; `None` = `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    /// The executor it runs on.
    pub lane: Lane,
    /// Time limit, bytes kept per output stream, stdin limit.
    pub limits: Limits,
    /// The policy's classification of `argv` (conda calls only); the
    /// restart watch runs after a successful call that is not read-only.
    pub classification: Option<Classification>,
    /// How the execution result is read.
    pub reader: Reader,
    /// Whether progress notifications are sent while it runs.
    pub reports_progress: bool,
    /// The server turned a mutation without `yes: true` into a dry run
    /// (see `crate::typed`): the output says nothing was changed.
    pub confirmation_required: bool,
    /// With `confirmation_required`: the startup options needed to apply
    /// the change (empty when this server can apply it).
    pub apply_requires: Vec<&'static str>,
}

impl Plan {
    /// A conda call on the exec lane under `limits`, with progress.
    pub fn conda(
        what: String,
        argv: Vec<String>,
        limits: Limits,
        classification: Classification,
    ) -> Self {
        Plan {
            label: what.clone(),
            what,
            program: Program::Conda,
            argv,
            cwd: None,
            stdin: None,
            lane: Lane::Exec,
            limits,
            classification: Some(classification),
            reader: Reader::Execution,
            reports_progress: true,
            confirmation_required: false,
            apply_requires: Vec::new(),
        }
    }

    /// Whether the call changes nothing (helpers, and conda calls the
    /// policy classified read-only).
    pub fn read_only(&self) -> bool {
        self.classification.as_ref().is_none_or(|c| c.read_only)
    }

    /// The worker job of this plan.
    pub fn job(&self) -> Job {
        let mut job = Job::new(self.program, self.argv.clone());
        job.cwd = self.cwd.clone();
        job.stdin = self.stdin.clone();
        job.limits = self.limits;
        job.label = self.label.clone();
        job
    }
}

/// Which policy check applies to an argv.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// A typed tool's compiled argv ([`Policy::check`]).
    Typed,
    /// The raw tool's argv, which itself needs `--allow-exec`
    /// ([`Policy::check_raw`]).
    Raw,
}

/// Classifies the final `argv` (after any amendment by the tool kind) and
/// checks it against the startup policy. `tool` names the tool in the log
/// line of a refusal.
///
/// Errors: [`Outcome::Refused`] naming the missing startup options.
pub fn authorize(
    catalog: &Catalog,
    policy: &Policy,
    tool: &str,
    argv: &[String],
    check: Check,
) -> Result<Classification, Outcome> {
    let classification = policy::classify(catalog, argv);
    let checked = match check {
        Check::Typed => policy.check(&classification),
        Check::Raw => policy.check_raw(&classification),
    };
    match checked {
        Ok(()) => Ok(classification),
        Err(refusal) => {
            tracing::info!(tool = %tool, "refused: {refusal}");
            Err(Outcome::Refused(refusal))
        }
    }
}
