//! MCP tool annotation hints from the policy table.
//!
//! Annotations describe a tool's *broadest* behaviour (any argument
//! combination): a tool is `readOnlyHint` only when no call of it can
//! mutate or run a program. They are hints for hosts; enforcement is
//! [`super::Policy::check`] on every call and never relies on them.

use super::table::{self, OpenWorld, Verdict};
use crate::catalog::{Catalog, CommandIdx, Passthrough};

/// The four MCP `ToolAnnotations` hints (MCP spec, `tools/list`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolAnnotationsHint {
    /// `readOnlyHint`: no call changes anything.
    pub read_only: bool,
    /// `destructiveHint`: a call may remove or overwrite (meaningful only
    /// when not read-only).
    pub destructive: bool,
    /// `idempotentHint`: repeating a call with the same arguments has no
    /// further effect.
    pub idempotent: bool,
    /// `openWorldHint`: a call may reach beyond the machine (network, or
    /// arbitrary programs).
    pub open_world: bool,
}

/// The hints for the tool of command `cmd`. A command the table does not
/// know gets the most cautious hints.
pub fn annotations(catalog: &Catalog, cmd: CommandIdx) -> ToolAnnotationsHint {
    let unknown = ToolAnnotationsHint {
        read_only: false,
        destructive: true,
        idempotent: false,
        open_world: true,
    };
    let Some(command) = catalog.commands.get(cmd) else {
        return unknown;
    };
    let Some(entry) = table::lookup(command.subpath()) else {
        return unknown;
    };
    let passthrough = command.passthrough != Passthrough::None;
    let read_only = !passthrough && entry.possible_verdicts().all(|v| v == Verdict::ReadOnly);
    let exec = passthrough || entry.possible_verdicts().any(|v| v == Verdict::Exec);
    ToolAnnotationsHint {
        read_only,
        destructive: !read_only && (entry.destructive || exec),
        idempotent: read_only,
        open_world: exec || entry.open_world != OpenWorld::Never,
    }
}

/// What the startup policy lets the calls of one tool do, decided from the
/// same table as [`annotations`] (and, like them, never used for
/// enforcement: every call is still classified and checked).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "runs", rename_all = "snake_case")]
pub enum Runnable {
    /// Every call the table can classify is allowed.
    Always,
    /// Only the calls that read (`config --show`, `export` to stdout); the
    /// others need the listed startup options.
    ReadOnlyCalls {
        /// Startup options the other calls need.
        needs: Vec<&'static str>,
    },
    /// Only dry runs (`dry_run: true`): every other call is a mutation.
    DryRunOnly {
        /// Startup options the other calls need.
        needs: Vec<&'static str>,
    },
    /// No call can run under this policy.
    Never {
        /// Startup options a call needs at the least.
        needs: Vec<&'static str>,
    },
}

/// The policy class of a tool, for listings (`conda_commands`,
/// `conda://capabilities`): its broadest behaviour.
pub fn policy_class(catalog: &Catalog, cmd: CommandIdx) -> &'static str {
    let hint = annotations(catalog, cmd);
    let reqs = requirement_sets(catalog, cmd);
    if reqs.iter().any(|r| r.exec) {
        "exec"
    } else if hint.read_only {
        "read_only"
    } else {
        "mutation"
    }
}

/// What one kind of call of a tool needs: `--allow-write`, `--allow-exec`,
/// and whether it is read-only only because of `dry_run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Needs {
    write: bool,
    exec: bool,
    dry_run: bool,
}

impl Needs {
    fn missing(&self, policy: &super::Policy) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.write && !policy.writes() {
            out.push("--allow-write");
        }
        if self.exec && !policy.allow_exec {
            out.push("--allow-exec");
        }
        out
    }
}

/// The kinds of calls of a tool: one per clause of its table entry plus the
/// default. A command the table does not know is a mutation (and exec when
/// it passes argv on), as [`super::classify()`] decides.
fn requirement_sets(catalog: &Catalog, cmd: CommandIdx) -> Vec<Needs> {
    let Some(command) = catalog.commands.get(cmd) else {
        return vec![Needs {
            write: true,
            exec: true,
            dry_run: false,
        }];
    };
    let passthrough = command.passthrough != Passthrough::None;
    let Some(entry) = table::lookup(command.subpath()) else {
        return vec![Needs {
            write: true,
            exec: passthrough,
            dry_run: false,
        }];
    };
    let of = |v: Verdict, dry_run: bool| Needs {
        write: v == Verdict::Mutation,
        exec: v == Verdict::Exec,
        dry_run: dry_run && v == Verdict::ReadOnly,
    };
    entry
        .clauses
        .iter()
        .map(|&(w, v)| of(v, w.dest() == "dry_run"))
        .chain(std::iter::once(of(entry.default, false)))
        .collect()
}

/// What `policy` lets the calls of command `cmd`'s tool do.
pub fn runnable(catalog: &Catalog, cmd: CommandIdx, policy: &super::Policy) -> Runnable {
    let sets = requirement_sets(catalog, cmd);
    let allowed: Vec<&Needs> = sets
        .iter()
        .filter(|n| n.missing(policy).is_empty())
        .collect();
    let mut needs: Vec<&'static str> = Vec::new();
    for n in &sets {
        for m in n.missing(policy) {
            if !needs.contains(&m) {
                needs.push(m);
            }
        }
    }
    needs.sort_by_key(|m| *m != "--allow-write");
    if allowed.len() == sets.len() {
        Runnable::Always
    } else if allowed.is_empty() {
        // The least a call needs: the requirement set with the fewest
        // missing options.
        let least = sets
            .iter()
            .map(|n| n.missing(policy))
            .min_by_key(Vec::len)
            .unwrap_or(needs);
        Runnable::Never { needs: least }
    } else if allowed.iter().all(|n| n.dry_run) {
        Runnable::DryRunOnly { needs }
    } else {
        Runnable::ReadOnlyCalls { needs }
    }
}

impl Runnable {
    /// The sentence a tool description begins with, or `None` when every
    /// call can run: a model learns what the server allows before it is
    /// refused.
    pub fn sentence(&self) -> Option<String> {
        match self {
            Runnable::Always => None,
            Runnable::Never { needs } => Some(format!(
                "Cannot run on this server (needs {}).",
                needs.join(" and ")
            )),
            Runnable::DryRunOnly { needs } => Some(format!(
                "On this server only dry runs (dry_run: true) run; applying needs {}.",
                needs.join(" and ")
            )),
            Runnable::ReadOnlyCalls { needs } => Some(format!(
                "On this server only its read-only calls run; the others need {}.",
                needs.join(" and ")
            )),
        }
    }
}
