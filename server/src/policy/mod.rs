//! The safety policy: what a call may do, fixed at startup by
//! `--allow-write` and `--allow-exec` (docs/safety.md).
//!
//! What a call may do is decided on the *resolved* command: the argv is
//! parsed with the catalog by the same rules conda's argparse parser uses
//! ([`crate::argparse`]), and the resolved command and options are looked up in one
//! data table ([`table`]). Nothing here looks at loose tokens, so `--dry`,
//! `-dy`, `--se`, `upgrade`, `-nfoo` and friends mean exactly what they mean
//! to conda, and what cannot be resolved the way argparse would fails
//! closed.
//!
//! * [`classify`]: argv → [`Classification`] (the same classifier for the
//!   generated tools' compiled argv and for the raw tool);
//! * [`Policy::check`]: the startup options (`--allow-write`,
//!   `--allow-exec`) against a classification → `Ok` or a [`Refusal`] whose
//!   text names the command and the missing startup option(s), never a
//!   submitted value;
//! * [`required`]: options conda needs at run time (one of several), as
//!   data next to the table, checked before a typed tool's call runs;
//! * [`annotations`]: each tool's broadest behaviour as MCP annotation hints
//!   (informative only: enforcement never relies on them).

mod annotations;
mod classify;
pub mod required;
pub mod table;

/// Why argparse rejects an argv: part of [`Outcome::Rejected`].
pub use crate::argparse::Rejection;
pub use annotations::{Runnable, ToolAnnotationsHint, annotations, policy_class, runnable};
pub use classify::{Classification, Outcome, Reason, classify, classify_resolved, evaluate};

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
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.command)?;
        for t in &self.triggers {
            write!(f, " {t}")?;
        }
        write!(f, " requires {}", self.missing.join(" and "))?;
        if let Some(note) = &self.note {
            write!(f, " ({note})")?;
        }
        Ok(())
    }
}

impl Policy {
    /// Checks a classification against the startup options.
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

    fn check_with(&self, c: &Classification, raw: bool) -> Result<(), Refusal> {
        let mut missing = Vec::new();
        if c.requires_write && !self.allow_write {
            missing.push("--allow-write");
        }
        if (c.requires_exec || raw) && !self.allow_exec {
            missing.push("--allow-exec");
        }
        if missing.is_empty() {
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
        })
    }
}

#[cfg(test)]
mod tests;
