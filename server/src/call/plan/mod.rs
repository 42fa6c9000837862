//! Planning: a routed tool's arguments to one [`Plan`] (the program and
//! argv, the lane, the limits, the policy classification, a label), or an
//! early [`Outcome`] (invalid arguments, refused, not available), decided
//! before anything runs.
//!
//! The arguments hosts add to every tool on their own are dropped first
//! ([`host_args`]). One module per tool kind: [`generated`] (one tool per
//! conda command, through [`typed`]), [`raw`] (`conda_execute`),
//! [`completion`] (`conda_cli_command`), [`inventory`] (`conda_inventory`),
//! [`compact_call`] (`--tool-mode compact`). A kind that works on a conda argv amends it (if it must)
//! *before* [`authorize`] classifies it, so the policy always decides on
//! the argv that will run. The server's prediction of a create into an
//! existing environment ([`existing_env`]: refused, or turned into a
//! replacement) and the checks conda's own process enforces ([`checks`])
//! are planned here; the restrictions of an operator (protected
//! environments, allowed channels: [`restrict`]) are checked on the plan
//! and carried into those checks, and so are the files the call makes
//! conda read ([`reads`]).

pub mod checks;
pub mod compact_call;
pub mod completion;
pub mod existing_env;
pub mod generated;
pub mod host_args;
pub mod inventory;
pub mod raw;
pub mod reads;
pub mod restrict;
pub mod typed;

use std::path::PathBuf;

use crate::catalog::Catalog;
use crate::policy::{self, Classification, Policy};
use crate::worker_client::{Job, Program};
use conda_mcp_shared::limits::Limits;

use crate::call::shape::outcome::Outcome;

/// Which executor a plan runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaneKind {
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
    /// The inventory helper: its stdout is read as the answer document of
    /// `conda_inventory`, cut to the result budget.
    InventoryAnswer,
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
    pub lane: LaneKind,
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
    /// (see `crate::call::plan::typed`): the output says nothing was changed.
    pub confirmation_required: bool,
    /// `--approve-writes`: the call runs only after the person approved it
    /// (asked through `crate::call::approve::flow`); the preview shown first.
    pub approval: Option<crate::call::approve::question::Approval>,
    /// With `confirmation_required`: the startup options needed to apply
    /// the change (empty when this server can apply it).
    pub apply_requires: Vec<&'static str>,
    /// The call previews or applies the replacement of an existing
    /// environment ([`crate::call::plan::existing_env`]).
    pub replacement: Option<existing_env::Replacement>,
    /// What must hold after the call exits 0 ([`crate::call::run::postcondition`]).
    pub postcondition: Option<crate::call::run::postcondition::Postcondition>,
    /// What conda's own process checks before the command acts
    /// ([`crate::call::plan::checks`]); `None` for helpers.
    pub checks: Option<conda_mcp_shared::guard::InProcessChecks>,
}

impl Plan {
    /// A conda call on the exec lane under `limits`, with progress.
    pub fn conda(
        what: String,
        argv: Vec<String>,
        limits: Limits,
        classification: Classification,
    ) -> Self {
        let mut plan = Plan::bare(
            what.clone(),
            what,
            Program::Conda,
            argv,
            LaneKind::Exec,
            limits,
            Reader::Execution,
        );
        plan.classification = Some(classification);
        plan.reports_progress = true;
        plan
    }

    /// A helper program's call (`Program::Python`, `argv` after the
    /// interpreter) on the discovery lane's kind (never behind a running
    /// conda: `crate::call::run::Runner`), within `cap` and the server's
    /// own `limits.timeout`, its result read by `reader`; no policy
    /// classification (helpers only read), no progress.
    pub fn helper(
        what: String,
        label: String,
        argv: Vec<String>,
        limits: Limits,
        cap: std::time::Duration,
        reader: Reader,
    ) -> Self {
        let mut limits = limits;
        limits.timeout = limits.timeout.min(cap);
        Plan::bare(
            what,
            label,
            Program::Python,
            argv,
            LaneKind::Discovery,
            limits,
            reader,
        )
    }

    /// A plan with these parts and nothing else: no directory, stdin,
    /// classification, progress, confirmation, approval, replacement,
    /// postcondition or checks.
    fn bare(
        what: String,
        label: String,
        program: Program,
        argv: Vec<String>,
        lane: LaneKind,
        limits: Limits,
        reader: Reader,
    ) -> Self {
        Plan {
            what,
            label,
            program,
            argv,
            cwd: None,
            stdin: None,
            lane,
            limits,
            classification: None,
            reader,
            reports_progress: false,
            confirmation_required: false,
            approval: None,
            apply_requires: Vec::new(),
            replacement: None,
            postcondition: None,
            checks: None,
        }
    }

    /// Whether the call changes nothing (helpers, and conda calls the
    /// policy classified read-only).
    pub fn read_only(&self) -> bool {
        self.classification.as_ref().is_none_or(|c| c.read_only)
    }

    /// Whether the call can outlast a host's request timeout whatever the
    /// queue holds: any mutation; conda run (the program runs as long as it
    /// runs); a command that solves an environment (`create`, `install`,
    /// `update`, `remove`, `env create`, `env update`), a dry run included,
    /// since the solve and the channel index download are the slow part;
    /// and `search`, which downloads the channel indexes too (the first
    /// call on a cold cache takes as long as a solve's own download).
    /// Decided on the policy's classification of the argv that runs, so
    /// `conda_execute` and the typed tools agree. docs/long-calls.md
    /// "Which calls become tasks".
    pub fn may_run_long(&self) -> bool {
        let Some(c) = &self.classification else {
            return false;
        };
        if !c.read_only {
            return true;
        }
        let path = c.command.get(1..).unwrap_or(&[]);
        crate::policy::commands::holds(path, |row| row.solves || row.long)
    }

    /// The worker job of this plan.
    pub fn job(&self) -> Job {
        let mut job = Job::new(self.program, self.argv.clone());
        job.cwd = self.cwd.clone();
        job.stdin = self.stdin.clone();
        job.limits = self.limits;
        job.label = self.label.clone();
        job.checks = self.checks.clone();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan of `argv` on the recorded conda 26 parser.
    fn plan(catalog: &Catalog, argv: &[&str]) -> Plan {
        let argv: Vec<String> = argv.iter().map(|s| (*s).to_owned()).collect();
        let c = policy::classify(catalog, &argv);
        Plan::conda("test".into(), argv, Limits::DEFAULT, c)
    }

    #[test]
    fn mutations_solves_dry_runs_included_run_and_search_may_run_long() {
        let catalog = crate::catalog::build(&crate::dump::recorded_conda()).expect("catalog");
        for argv in [
            &["install", "-n", "x", "numpy", "--dry-run"][..],
            &["create", "-n", "x", "python", "--dry-run", "--json"],
            &["update", "-n", "x", "--all", "--dry-run"],
            &["upgrade", "-n", "x", "--all", "--dry-run"],
            &["remove", "-n", "x", "numpy", "--dry-run"],
            &["uninstall", "-n", "x", "numpy", "--dry-run"],
            &["env", "create", "-n", "x", "--file", "/e.yml", "--dry-run"],
            &["search", "numpy"],
            &["run", "-n", "x", "python"],
            &["install", "-n", "x", "numpy", "--yes"],
            &["config", "--set", "channel_priority", "strict"],
            &["clean", "--all", "--yes"],
        ] {
            assert!(plan(&catalog, argv).may_run_long(), "{argv:?}");
        }
        // Dry runs and search are read-only: long by their command alone.
        for argv in [
            &["install", "-n", "x", "numpy", "--dry-run"][..],
            &["env", "create", "-n", "x", "--file", "/e.yml", "--dry-run"],
            &["search", "numpy"],
        ] {
            assert!(plan(&catalog, argv).read_only(), "{argv:?}");
        }
        for argv in [
            &["info", "--json"][..],
            &["env", "list"],
            &["list", "-n", "x"],
            &["config", "--show"],
        ] {
            assert!(!plan(&catalog, argv).may_run_long(), "{argv:?}");
        }
    }
}
