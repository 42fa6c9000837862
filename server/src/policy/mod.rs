//! The safety policy: what a call may do, fixed at startup by
//! `--allow-write` (or `--approve-writes`) and `--allow-exec`
//! (docs/safety.md, docs/approval.md).
//!
//! What a call may do is decided on the *resolved* command: the argv is
//! parsed with the catalog by the same rules conda's argparse parser uses
//! ([`crate::argparse`]), and the resolved command and options are looked up in one
//! data table ([`table`]). Nothing here looks at loose tokens, so `--dry`,
//! `-dy`, `--se`, `upgrade`, `-nfoo` and friends mean exactly what they mean
//! to conda, and what cannot be resolved the way argparse would fails
//! closed.
//!
//! * [`classify`](mod@classify): argv → [`Classification`] (the same classifier for the
//!   generated tools' compiled argv and for the raw tool);
//! * [`Policy::check`]: the startup options (`--allow-write`,
//!   `--allow-exec`) against a classification → `Ok` or a [`Refusal`] whose
//!   text names the command and the missing startup option(s), never a
//!   submitted value;
//! * [`required`]: options conda needs at run time (one of several), as
//!   data next to the table, checked before a typed tool's call runs;
//! * [`annotations`](mod@annotations): each tool's broadest behaviour as MCP annotation hints
//!   (informative only: enforcement never relies on them).

mod annotations;
mod classify;
pub mod commands;
pub mod required;
pub mod scopes;
pub mod table;

/// Why argparse rejects an argv: part of [`Invocation::Rejected`].
pub use crate::argparse::Rejection;
pub use annotations::{Runnable, ToolAnnotationsHint, annotations, policy_class, runnable};
pub use classify::{Classification, Invocation, Reason, classify, classify_resolved, evaluate};
pub use scopes::Scopes;

use std::fmt;

/// The startup policy: immutable for the server's lifetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Policy {
    /// `--allow-write`: mutations of environments, packages, configuration,
    /// caches and files.
    pub allow_write: bool,
    /// `--allow-exec`: arbitrary processes (`conda run`, passthrough to
    /// plugins, the raw `conda_execute` tool).
    pub allow_exec: bool,
    /// `--approve-writes` (exclusive with `--allow-write`): mutations may
    /// run, each only after the person approves it through the host
    /// (`crate::call::approve::question`). The check lets them pass as
    /// `--allow-write` does; [`Policy::needs_approval`] says which calls ask.
    pub approve_writes: bool,
    /// The scopes of the calling principal's access token ([`scopes`]):
    /// they narrow the options above, never widen them; `None` (stdio, a
    /// static token, the startup policy itself) narrows nothing. Set per
    /// call with [`Policy::narrowed`].
    pub scopes: Option<Scopes>,
}

/// How the startup policy treats mutations: the `writes` of the
/// capabilities resource and of `conda-mcp check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WritesMode {
    /// Neither `--allow-write` nor `--approve-writes`: mutations are refused.
    Refused,
    /// `--allow-write`: mutations run when called (with `yes: true`, or as
    /// a dry run first; `crate::call::plan::typed`).
    AllowWrite,
    /// `--approve-writes`: each mutation runs only after the person
    /// approved conda's plan through the host (docs/approval.md).
    ApproveWrites,
}

impl WritesMode {
    /// One line for `conda-mcp check`.
    pub fn describe(self) -> &'static str {
        match self {
            WritesMode::Refused => "refused (read-only server)",
            WritesMode::AllowWrite => "allowed (--allow-write)",
            WritesMode::ApproveWrites => {
                "each change only after the person approves it through the host (--approve-writes)"
            }
        }
    }
}

/// A refused call. Its `Display` names the command (canonical path from the
/// catalog), the options that make it a mutation (as the catalog spells
/// them) and the missing startup option(s) — never a submitted value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Refusal {
    /// Canonical command path (`conda config`).
    pub command: String,
    /// Options that make the call a mutation (`--set`), possibly empty.
    pub triggers: Vec<String>,
    /// Why the call was classified as it was, when that is not the command
    /// itself (unknown command or option, unresolvable argv).
    pub note: Option<String>,
    /// The missing startup options, `--allow-write` before `--allow-exec`.
    pub missing: Vec<&'static str>,
    /// The scopes the caller's access token lacks ([`scopes::WRITE`] before
    /// [`scopes::EXEC`]) where the startup options would allow the call.
    pub missing_scopes: Vec<&'static str>,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.command)?;
        for t in &self.triggers {
            write!(f, " {t}")?;
        }
        let needs: Vec<String> = self
            .missing
            .iter()
            .map(|m| (*m).to_owned())
            .chain(self.missing_scopes.iter().map(|s| format!("scope {s}")))
            .collect();
        write!(f, " requires {}", needs.join(" and "))?;
        if let Some(note) = &self.note {
            write!(f, " ({note})")?;
        }
        Ok(())
    }
}

impl Policy {
    /// This policy for a caller whose access token grants `scopes` (`None`:
    /// no token scopes, nothing narrowed).
    pub fn narrowed(self, scopes: Option<Scopes>) -> Policy {
        Policy { scopes, ..self }
    }

    /// Checks a classification against the startup options (and the
    /// caller's scopes, [`Policy::scopes`]).
    ///
    /// Errors: a [`Refusal`] naming every missing startup option.
    pub fn check(&self, c: &Classification) -> Result<(), Refusal> {
        self.check_with(c, false)
    }

    /// Like [`Policy::check`] for the raw `conda_execute` tool, which itself
    /// needs `--allow-exec`: a raw mutation needs both startup options.
    ///
    /// Errors: a [`Refusal`] naming every missing startup option.
    pub fn check_raw(&self, c: &Classification) -> Result<(), Refusal> {
        self.check_with(c, true)
    }

    /// How mutations are treated (what capabilities and `check` report).
    pub fn writes_mode(&self) -> WritesMode {
        if self.approve_writes {
            WritesMode::ApproveWrites
        } else if self.allow_write {
            WritesMode::AllowWrite
        } else {
            WritesMode::Refused
        }
    }

    /// Whether mutations may run at all (`--allow-write` or
    /// `--approve-writes`).
    pub fn writes(&self) -> bool {
        self.allow_write || self.approve_writes
    }

    /// Whether a call of this classification runs only after the person
    /// approved it: with `--approve-writes`, every call that is not
    /// read-only (mutations, and arbitrary programs such as `conda run`).
    pub fn needs_approval(&self, c: &Classification) -> bool {
        self.approve_writes && !c.read_only
    }

    fn check_with(&self, c: &Classification, raw: bool) -> Result<(), Refusal> {
        let (mut missing, mut missing_scopes) = (Vec::new(), Vec::new());
        let granted = self.scopes;
        if c.requires_write {
            if !self.writes() {
                missing.push("--allow-write");
            } else if granted.is_some_and(|s| !s.write) {
                missing_scopes.push(scopes::WRITE);
            }
        }
        if c.requires_exec || raw {
            if !self.allow_exec {
                missing.push("--allow-exec");
            } else if granted.is_some_and(|s| !s.exec) {
                missing_scopes.push(scopes::EXEC);
            }
        }
        if missing.is_empty() && missing_scopes.is_empty() {
            return Ok(());
        }
        let note = match &c.reason {
            Reason::UnknownCommand => {
                Some("a command the policy table does not know is treated as a mutation".to_owned())
            }
            Reason::UnknownOption => {
                Some("an option the policy table does not know is treated as a mutation".to_owned())
            }
            Reason::Unresolved(why) => Some(format!(
                "the command line cannot be resolved the way conda's parser would: {}; \
                 it is treated as a mutation",
                why.describe()
            )),
            _ => None,
        };
        Err(Refusal {
            command: c.command.join(" "),
            triggers: c.triggers.clone(),
            note,
            missing,
            missing_scopes,
        })
    }
}

#[cfg(test)]
mod tests;
